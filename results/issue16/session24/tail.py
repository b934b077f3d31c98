# Lab script (session 24, README.md): reads a run directory, private teachers and true labels.
import os, sys; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../model-average'))
from common import *
R = sys.argv[1]
(Xq, yq), (Xv, yv), _ = sets(R)
th = teachers(R)
def rt(sv, r):
    m = np.sort(sv[yv == 1])[::-1]; return m[int(np.ceil(r * len(m))) - 1]
for k in [2.5, 3.0, 3.5, 4.0, 5.0]:
    acc = []; mb = []
    for rep in range(60):
        w, b0 = release(th, 75.0, 0.985, np.random.default_rng(1000 + rep), k)
        sq, sv = Xq @ w + b0, Xv @ w + b0
        l = (sq >= rt(sv, 0.97)).astype(int)
        acc.append((l == yq).mean()); mb.append(((l == 0) & (yq == 1)).sum())
    acc = np.array(acc)
    print(f'k {k}: mean {acc.mean():.4f} p5 {np.quantile(acc, .05):.4f} min {acc.min():.4f} m->b mean {np.mean(mb):.0f} max {np.max(mb)}')
