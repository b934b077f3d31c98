# Replica teachers (sklearn logistic regression, ℓ2 at C 1 / 10 / 100 or ℓ1 at C 10, class-balanced;
# no tamperings) on the run's own shards, averaged as in denoise.py but clipped at the median norm
# and without the soft threshold: do dense ℓ2 teachers average better than sparse ones?
#   python replica.py RUN
from common import *
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
R = sys.argv[1]
(Xq, yq), (Xv, yv), (Xt, yt) = sets(R)
Xp, yp = mat(R, 'private'), labels(R, 'private')
shards = json.load(open(f'{R}/shards.json'))
def replica_teachers(kind, C):
    W, b = [], []
    for s in shards:
        X, y = Xp[s], yp[s]
        if y.min() == y.max():
            W.append(np.zeros(Xp.shape[1])); b.append(-1.0 if y[0] == 0 else 1.0); continue
        lr = LogisticRegression(C=C, l1_ratio=(1 if kind == 'l1' else 0), solver='liblinear', max_iter=2000, class_weight='balanced').fit(X, y)
        W.append(lr.coef_[0]); b.append(lr.intercept_[0])
    return np.array(W), np.array(b)
def study(name, W, b, epss=(None, 2, 1), reps=3):
    m = len(b); th = np.hstack([W, b[:, None]]); nrm = np.linalg.norm(th, axis=1)
    votes = (Xq @ W.T + b > 0).sum(1)
    acc = max(((votes >= s * m).astype(int) == yq).mean() for s in [0.2, 0.35, 0.5])
    print(f'== {name}: norms {np.quantile(nrm, [.1, .5, .9]).round(2)} nnz {np.median((W != 0).sum(1))} vote labels right (best share) {acc:.4f}', flush=True)
    for C in [np.quantile(nrm, 0.5)]:
        clip = th * np.minimum(1, C / nrm)[:, None]; S = clip.sum(0)
        for eps in epss:
            sig = sigma_for(eps) if eps else 0; out = []
            for rep in range(reps if eps else 1):
                rng = np.random.default_rng(rep)
                noisy = (S + rng.normal(0, sig * 2 * C, S.shape)) / m
                w, b0 = noisy[:-1], noisy[-1]
                sq, sv, st = Xq @ w + b0, Xv @ w + b0, Xt @ w + b0
                cand = np.quantile(sv, np.linspace(0.5, 0.995, 200))
                t = cand[int(np.argmax([((sv > c) == yv).mean() for c in cand]))]
                lab = (sq > t).astype(int)
                stu = LogisticRegression(C=30.0, l1_ratio=1, solver='liblinear', max_iter=5000, class_weight='balanced').fit(Xq, lab)
                out.append([(lab == yq).mean(), tpr_at(yv, sv), tpr_at(yt, st), roc_auc_score(yt, st), tpr_at(yv, stu.decision_function(Xv)), tpr_at(yt, stu.decision_function(Xt))])
            o = np.array(out)
            print(f'  eps {eps} σ {sig:.2f} noise/coord {2*sig*C/m:.3f}: labels right {o[:,0].mean():.4f} | avg val {o[:,1].mean():.3f} test {o[:,2].mean():.3f} (min {o[:,2].min():.3f}) auc {o[:,3].mean():.4f} | student val {o[:,4].mean():.3f} test {o[:,5].mean():.3f} (min {o[:,5].min():.3f})', flush=True)
for kind, C in [('l2', 1.0), ('l2', 10.0), ('l2', 100.0), ('l1', 10.0)]:
    W, b = replica_teachers(kind, C)
    study(f'{kind} C {C}', W, b)
