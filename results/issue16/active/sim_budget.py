# Lab bench: at a fixed published ε (GNMax RDP α/σ² per query, δ 1e-5), how to split it between
# queries and noise for an l1 (sparse) student vs the l2 one (head 125 + uniform order).
import numpy as np, sys, warnings
warnings.filterwarnings('ignore')
exec(open(__file__.replace('sim_budget.py', 'sim_active.py')).read().split('def baseline')[0])
from sklearn.linear_model import LogisticRegression
def eps(nq, s, delta=1e-5):
    a = np.concatenate([np.arange(1.25, 50, 0.25), np.geomspace(50, 1000, 20)])
    return (nq * a / s**2 + np.log(1 / delta) / (a - 1)).min()
def sigma_for(nq, e):
    lo, hi = 1.0, 1000.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if eps(nq, mid) > e else (lo, mid)
    return hi
for e in [2.0, 1.0]:
    for Q in ([200, 300, 500, 800] if e == 2 else [100, 200, 300]):
        s = sigma_for(Q, e)
        for name, kw in [('l2 C10', dict(C=10.0)), ('l1 C30', dict(C=30.0, l1_ratio=1, solver='liblinear')), ('l1 C100', dict(C=100.0, l1_ratio=1, solver='liblinear'))]:
            res = []
            for rep in range(3):
                rng = np.random.default_rng(100 + rep)
                lab = np.argmax(counts[:Q] + rng.normal(0, s, (Q, 2)), 1)
                if lab.min() == lab.max(): continue
                st = LogisticRegression(max_iter=5000, class_weight='balanced', **kw).fit(Xq[:Q], lab)
                res.append(((lab == yq[:Q]).mean(), tpr_at(yv, st.decision_function(Xv)), tpr_at(yt, st.decision_function(Xt))))
            r = np.array(res)
            print(f'ε {e} Q {Q} σ {s:5.1f} {name:7s} right {r[:,0].mean():.3f} val {r[:,1].mean():.3f} test {r[:,2].mean():.3f} (min {r[:,2].min():.3f})', flush=True)
