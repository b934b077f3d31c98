# Lab bench: which student learns most from 500 / 1,500 answered queries (head 125 + uniform)?
# sklearn LR with l2 (C) vs l1 (C) on the noisy labels (GNMax σ, share 0.35) and true labels.
# Usage: python3 sim_student.py RUN_DIR (the allvotes run, as sim_active.py)
import numpy as np, sys, warnings
warnings.filterwarnings('ignore')
exec(open(__file__.replace('sim_student.py', 'sim_active.py')).read().split('def baseline')[0])
from sklearn.linear_model import LogisticRegression
for Q, sigma in [(500, 80), (1500, 40)]:
    for pen, C in [('l2', 10.0), ('l1', 1.0), ('l1', 3.0), ('l1', 10.0), ('l1', 30.0)]:
        for src in ['noisy', 'true']:
            res = []
            for rep in range(3 if src == 'noisy' else 1):
                rng = np.random.default_rng(100 + rep)
                lab = noisy_labels(sigma, rng) if src == 'noisy' else yq
                idx = np.arange(Q)
                st = LogisticRegression(C=C, l1_ratio=(1 if pen == 'l1' else 0), solver='liblinear', max_iter=5000, class_weight='balanced').fit(Xq[idx], lab[idx])
                res.append((tpr_at(yv, st.decision_function(Xv)), tpr_at(yt, st.decision_function(Xt)), (st.coef_ != 0).sum()))
            r = np.array(res)
            print(f'Q {Q} σ {sigma} {pen} C {C:5.1f} {src:5s} val {r[:,0].mean():.3f} (min {r[:,0].min():.3f}) test {r[:,1].mean():.3f} nnz {r[:,2].mean():.0f}', flush=True)
