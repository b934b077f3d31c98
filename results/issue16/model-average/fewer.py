# Fewer, larger teachers (the run's shards merged 1 / 2 / 5 / 10 at a time: 250 / 125 / 50 / 25
# replica ℓ1 teachers, sklearn, no tamperings), averaged (clip at the median norm) with noise for
# ε 2 / 1 / 0.5 and soft-thresholded at 3 noise standard deviations: labels right on every query.
#   python fewer.py RUN
from common import *
from sklearn.linear_model import LogisticRegression
R = sys.argv[1]
(Xq, yq), (Xv, yv), _ = sets(R)
Xp, yp = mat(R, 'private'), labels(R, 'private')
shards = json.load(open(f'{R}/shards.json'))
for m in [250, 125, 50, 25]:
    g = 250 // m; W, b = [], []
    for i in range(m):
        s = sum(shards[i * g:(i + 1) * g], []); X, y = Xp[s], yp[s]
        lr = LogisticRegression(C=10.0, l1_ratio=1, solver='liblinear', max_iter=3000, class_weight='balanced').fit(X, y)
        W.append(lr.coef_[0]); b.append(lr.intercept_[0])
    W, b = np.array(W), np.array(b); th = np.hstack([W, b[:, None]]); nrm = np.linalg.norm(th, axis=1)
    votes = (Xq @ W.T + b > 0).sum(1)
    va = {s_: ((votes >= s_ * m) == yq).mean() for s_ in [0.35, 0.5]}
    line = f'm {m}: norms {np.quantile(nrm, [.1, .5, .9]).round(1)} vote right {va[0.35]:.4f}/{va[0.5]:.4f}'
    for eps in [None, 2, 1, 0.5]:
        accs = []
        for rep in range(3 if eps else 1):
            w, b0 = release(th, np.median(nrm), eps, np.random.default_rng(rep), 3.0)
            sq, sv = Xq @ w + b0, Xv @ w + b0
            t = accuracy_threshold(sv, yv)
            lab = (sq > t).astype(int); accs.append(((lab == yq).mean(), ((lab == 1) & (yq == 0)).sum(), ((lab == 0) & (yq == 1)).sum()))
        a = np.array(accs)
        line += f' | ε {eps}: {a[:,0].mean():.4f} (min {a[:,0].min():.4f}; b→m {a[:,1].mean():.0f} m→b {a[:,2].mean():.0f})'
    print(line, flush=True)
