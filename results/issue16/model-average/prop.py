# 300 GNMax labels (σ 53, share 0.35; the 75 most frequent queries and 225 drawn) spread over a
# kNN graph of every public request (sklearn LabelSpreading), then an sklearn ℓ1 student.
#   python prop.py RUN
from common import *
from sklearn.linear_model import LogisticRegression
from sklearn.semi_supervised import LabelSpreading
from sklearn.metrics import roc_curve
R = sys.argv[1]
(Xq, yq), (Xv, yv), (Xt, yt) = sets(R)
v = np.loadtxt(f'{R}/votes.csv', delimiter=',', dtype=np.int64); n = int(v.sum(1)[0])
shift = round(n * (1 - 2 * 0.35)); counts = np.stack([v[:, 0], v[:, 1] + shift], 1).astype(float)
def student(idx, lab, w=None):
    st = LogisticRegression(C=30.0, l1_ratio=1, solver='liblinear', max_iter=5000, class_weight='balanced').fit(Xq[idx], lab[idx], sample_weight=w)
    return tpr_at(yv, st.decision_function(Xv)), tpr_at(yt, st.decision_function(Xt))
res = {}
for rep in range(4):
    rng = np.random.default_rng(rep)
    lab = np.argmax(counts + rng.normal(0, 53, counts.shape), 1)
    idx = np.r_[np.arange(75), 1228 + rng.choice(len(yq) - 1228, 225, replace=False)]
    res.setdefault('300 labels', []).append(student(idx, lab) + ((lab[idx] == yq[idx]).mean(),))
    for k, alpha in [(7, 0.2), (15, 0.2), (7, 0.5)]:
        y_in = np.full(len(yq), -1); y_in[idx] = lab[idx]
        ls = LabelSpreading(kernel='knn', n_neighbors=k, alpha=alpha, max_iter=200).fit(Xq.toarray(), y_in)
        p = ls.label_distributions_[:, 1]; pl = (p > 0.5).astype(int); pl[idx] = lab[idx]
        conf = np.abs(p - 0.5) * 2
        allidx = np.arange(len(yq))
        res.setdefault(f'spread k{k} a{alpha}', []).append(student(allidx, pl) + ((pl == yq).mean(),))
        keep = np.where((conf > 0.8) | np.isin(allidx, idx))[0]
        res.setdefault(f'spread k{k} a{alpha} conf>0.8', []).append(student(keep, pl) + ((pl[keep] == yq[keep]).mean(),))
    for k_, r in res.items():
        pass
for k_, r in res.items():
    r = np.array(r); print(f'{k_:30s} val {r[:,0].mean():.3f} (min {r[:,0].min():.3f}) test {r[:,1].mean():.3f} (min {r[:,1].min():.3f}) labels right {r[:,2].mean():.3f}', flush=True)
