# The noisy average of the run's teachers (clip C 75), soft-thresholded at k noise standard
# deviations: labels right on every distinct public request, the released model's own TPR at
# FPR ≤ 1 %, and an sklearn ℓ1 student on those labels (three noise draws).
#   python denoise.py RUN        (RUN: pate-trainer run --config lab.config.yaml --out RUN)
from common import *
from sklearn.linear_model import LogisticRegression
R = sys.argv[1]
(Xq, yq), (Xv, yv), (Xt, yt) = sets(R)
th = teachers(R)
m = th[:, :-1]
print('teachers', len(th), 'norms (10/50/90 %)', np.quantile(np.linalg.norm(th, axis=1), [.1, .5, .9]).round(1))
for eps in [None, 2, 1, 0.5]:
    for k in ([0] if eps is None else [0, 2, 3, 4]):
        out = []
        for rep in range(1 if eps is None else 3):
            w, b0 = release(th, 75.0, eps, np.random.default_rng(rep), k)
            sq, sv, st = Xq @ w + b0, Xv @ w + b0, Xt @ w + b0
            lab = (sq > accuracy_threshold(sv, yv)).astype(int)
            stu = LogisticRegression(C=30.0, l1_ratio=1, solver='liblinear', max_iter=5000, class_weight='balanced').fit(Xq, lab)
            out.append([(lab == yq).mean(), ((lab == 1) & (yq == 0)).sum(), ((lab == 0) & (yq == 1)).sum(), tpr_at(yt, st), (w != 0).sum(), tpr_at(yt, stu.decision_function(Xt))])
        o = np.array(out)
        print(f'ε {eps} soft threshold {k}: labels right {o[:,0].mean():.4f} (min {o[:,0].min():.4f}; benign→malicious {o[:,1].mean():.0f}, malicious→benign {o[:,2].mean():.0f}) | released model test TPR@1% {o[:,3].mean():.3f}, {o[:,4].mean():.0f} weights | sklearn student test {o[:,5].mean():.3f}', flush=True)
