# Replica ℓ1 teachers (sklearn, no tamperings) that also learn k public pool requests as benign
# (weight w; the public pool is unlabelled, mostly benign): the vote's labels right on the queries
# and the validation split at vote shares 0.2 / 0.35 / 0.5.
#   python pu.py RUN
from common import *
from sklearn.linear_model import LogisticRegression
import scipy.sparse as sp
R = sys.argv[1]
(Xq, yq), (Xv, yv), _ = sets(R)
Xp, yp = mat(R, 'private'), labels(R, 'private')
shards = json.load(open(f'{R}/shards.json'))
def run(k, w, C=10.0, seed=0):
    rng = np.random.default_rng(seed); Vq = np.zeros(Xq.shape[0]); Vv = np.zeros(Xv.shape[0])
    for s in shards:
        X, y = Xp[s], yp[s]; sw = np.ones(len(y))
        pos = max(y.sum(), 1); neg = max(len(y) - y.sum(), 1)
        sw[y == 1] = neg / pos  # class balance on the shard's own rows
        if k:
            j = rng.choice(Xq.shape[0], k, replace=False)
            X = sp.vstack([X, Xq[j]]); y = np.r_[y, np.zeros(k, int)]; sw = np.r_[sw, np.full(k, w)]
        if y.min() == y.max():
            continue
        lr = LogisticRegression(C=C, l1_ratio=1, solver='liblinear', max_iter=2000).fit(X, y, sample_weight=sw)
        Vq += lr.decision_function(Xq) > 0; Vv += lr.decision_function(Xv) > 0
    m = len(shards)
    res = []
    for share in [0.2, 0.35, 0.5]:
        res.append(f'{share}: q {((Vq >= share*m) == yq).mean():.4f} v {((Vv >= share*m) == yv).mean():.4f}')
    print(f'k {k} w {w} C {C}: ' + ' | '.join(res), flush=True)
run(0, 0)
for k, w in [(50, 0.2), (50, 1.0), (200, 0.2), (200, 0.05)]:
    run(k, w)
