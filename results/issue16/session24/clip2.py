# Lab script (session 24, README.md): reads a run directory, private teachers and true labels.
import os, sys; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../model-average'))
from common import *
R = sys.argv[1]
(Xq, yq), (Xv, yv), _ = sets(R)
th = teachers(R)
def rt(sv, r):
    m = np.sort(sv[yv == 1])[::-1]; return m[int(np.ceil(r * len(m))) - 1]
for C in [25, 30, 35, 45]:
    acc = []
    for rep in range(4):
        w, b0 = release(th, C, 0.985, np.random.default_rng(rep), 3.0)
        sq, sv = Xq @ w + b0, Xv @ w + b0
        acc.append(((sq >= rt(sv, 0.97)).astype(int) == yq).mean())
    print(C, np.round(acc, 4))
