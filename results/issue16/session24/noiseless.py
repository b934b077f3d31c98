# Lab script (session 24, README.md): reads a run directory, private teachers and true labels.
import os, sys; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../model-average'))
from common import *
R = sys.argv[1]
(Xq, yq), (Xv, yv), _ = sets(R)
th = teachers(R)
print('norms', np.quantile(np.linalg.norm(th, axis=1), [0, .5, 1]).round(1))
def rt(sv, r):
    m = np.sort(sv[yv == 1])[::-1]; return m[int(np.ceil(r * len(m))) - 1]
for eps in [None, 0.985]:
    w, b0 = release(th, 75.0, eps, np.random.default_rng(0), 3.0) if eps else release(th, 75.0, None, None)
    sq, sv = Xq @ w + b0, Xv @ w + b0
    l = (sq >= rt(sv, 0.97)).astype(int)
    print(eps, 'right', (l == yq).mean().round(4), 'votes (share .35) right', end=' ')
    votes = ((Xq @ th[:, :-1].T + th[:, -1]) > 0).mean(1)
    print(((votes >= 0.35) == yq).mean().round(4))
