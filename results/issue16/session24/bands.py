# Lab script (session 24, README.md): reads a run directory, private teachers and true labels.
import os, sys; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../model-average'))
from common import *
R = sys.argv[1]
(Xq, yq), (Xv, yv), (Xt, yt) = sets(R)
th = teachers(R)
print('queries', Xq.shape, 'malicious', yq.mean(), 'validation', Xv.shape, yv.mean())
for rep in range(3):
    w, b0 = release(th, 75.0, 0.985, np.random.default_rng(rep), 3.0)
    sq, sv = Xq @ w + b0, Xv @ w + b0
    t = recall_t = np.sort(sv[yv == 1])[::-1][int(np.ceil(0.97 * (yv == 1).sum())) - 1]
    l = (sq >= t).astype(int)
    print(f'rep {rep}: kept {np.count_nonzero(w)}, right {(l == yq).mean():.4f}, b->m {((l==1)&(yq==0)).sum()}, m->b {((l==0)&(yq==1)).sum()}')
    # bands by validation-attack recall quantiles
    qs = [0.80, 0.90, 0.95, 0.97, 0.98, 0.99, 0.995]
    cuts = {q: np.sort(sv[yv == 1])[::-1][int(np.ceil(q * (yv == 1).sum())) - 1] for q in qs}
    # and benign quantiles
    bq = {p: np.quantile(sv[yv == 0], p) for p in [0.9, 0.95, 0.98, 0.99, 0.995]}
    print('  attack-recall cuts', {q: round(c, 3) for q, c in cuts.items()}, 'benign quantiles', {p: round(c, 3) for p, c in bq.items()})
    edges = [-np.inf] + sorted(set(list(cuts.values()) + list(bq.values()))) + [np.inf]
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (sq >= lo) & (sq < hi)
        if m.sum():
            print(f'   [{lo:8.3f},{hi:8.3f}) n {m.sum():5d} malicious {yq[m].mean():.3f}')
