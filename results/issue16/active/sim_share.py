# Lab bench: the calibrated vote share for an l1 (sparse) vs l2 student at 500 queries σ 80 and
# 1,500 σ 40 (the teachers' systematic misses are the attacks the student must learn).
import numpy as np, sys, warnings
warnings.filterwarnings('ignore')
src = open(__file__.replace('sim_share.py', 'sim_active.py')).read().split('def baseline')[0]
exec(src)
from sklearn.linear_model import LogisticRegression
for Q, sigma in [(500, 80), (1500, 40)]:
    for share in [0.2, 0.25, 0.3, 0.35, 0.45]:
        c = np.stack([v[:, 0], v[:, 1] + round(n * (1 - 2 * share))], 1).astype(float)
        for name, kw in [('l2 C10', dict(C=10.0)), ('l1 C30', dict(C=30.0, l1_ratio=1, solver='liblinear'))]:
            res = []
            for rep in range(3):
                rng = np.random.default_rng(100 + rep)
                lab = np.argmax(c[:Q] + rng.normal(0, sigma, (Q, 2)), 1)
                st = LogisticRegression(max_iter=5000, class_weight='balanced', **kw).fit(Xq[:Q], lab)
                res.append(((lab == yq[:Q]).mean(), ((lab == 0) & (yq[:Q] == 1)).sum(), ((lab == 1) & (yq[:Q] == 0)).sum(), tpr_at(yv, st.decision_function(Xv)), tpr_at(yt, st.decision_function(Xt))))
            r = np.array(res)
            print(f'Q {Q} σ {sigma} share {share:.2f} {name} right {r[:,0].mean():.3f} missed-attacks {r[:,1].mean():4.0f} false-attacks {r[:,2].mean():4.0f} val {r[:,3].mean():.3f} test {r[:,4].mean():.3f} (min {r[:,4].min():.3f})', flush=True)
