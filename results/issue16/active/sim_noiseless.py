# Lab bench: an l1 (sparse) student on the teachers' NOISELESS vote (not private: what the
# teachers' own errors cost, without GNMax's noise). Usage: python3 sim_noiseless.py RUN_DIR
import numpy as np, sys, warnings
warnings.filterwarnings('ignore')
exec(open(__file__.replace('sim_noiseless.py', 'sim_active.py')).read().split('def baseline')[0])
from sklearn.linear_model import LogisticRegression
for Q in [500, 1500]:
    for share in [0.25, 0.35]:
        c = np.stack([v[:, 0], v[:, 1] + round(n * (1 - 2 * share))], 1).astype(float)
        lab = np.argmax(c[:Q] + 1e-6 * np.arange(2), 1)
        for C in [10.0, 30.0, 100.0]:
            st = LogisticRegression(C=C, l1_ratio=1, solver='liblinear', max_iter=5000, class_weight='balanced').fit(Xq[:Q], lab)
            print(f'Q {Q} share {share} noiseless teachers l1 C{C}: right {(lab==yq[:Q]).mean():.3f} miss {((lab==0)&(yq[:Q]==1)).sum()} false {((lab==1)&(yq[:Q]==0)).sum()} val {tpr_at(yv, st.decision_function(Xv)):.3f} test {tpr_at(yt, st.decision_function(Xt)):.3f}', flush=True)
