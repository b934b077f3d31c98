# Lab: rounds of model averaging (DP-FedAvg with the teachers' shards as clients): each round every
# teacher runs K FISTA steps (class-balanced logistic loss + L1, as the product's teachers) from
# the public global model; the clipped deltas are summed with Gaussian noise; the global model
# moves by the noisy mean delta (soft-thresholded: post-processing). ε split evenly over rounds.
# Labels right on every query after each round.   python fedavg.py RUN
from common import *
R = sys.argv[1]
(Xq, yq), (Xv, yv), _ = sets(R)
Xp, yp = mat(R, 'private'), labels(R, 'private')
shards = json.load(open(f'{R}/shards.json'))
data = []
for s in shards:
    X, y = Xp[s].tocsr(), yp[s].astype(float)
    pw = (y == 0).sum() / max((y == 1).sum(), 1)
    data.append((X, y, np.where(y == 1, pw, 1.0)))
d = Xp.shape[1]
def local(X, y, sw, w0, b0, K, lr=4.0, l1=3e-4):
    # FISTA on mean weighted logistic loss + l1*|w|
    w, b = w0.copy(), b0; zw, zb = w.copy(), b; t = 1.0; n = len(y); den = sw.sum()
    for _ in range(K):
        p = 1 / (1 + np.exp(-(X @ zw + zb)))
        g = sw * (p - y) / den
        gw = X.T @ g; gb = g.sum()
        nw = zw - lr * gw; nw = np.sign(nw) * np.maximum(np.abs(nw) - lr * l1, 0); nb = zb - lr * gb
        t2 = (1 + np.sqrt(1 + 4 * t * t)) / 2
        zw = nw + (t - 1) / t2 * (nw - w); zb = nb + (t - 1) / t2 * (nb - b)
        w, b, t = nw, nb, t2
    return w, b
def labels_acc(w, b0):
    lab = (Xq @ w + b0 > accuracy_threshold(Xv @ w + b0, yv)).astype(int)
    return (lab == yq).mean(), ((lab == 1) & (yq == 0)).sum(), ((lab == 0) & (yq == 1)).sum()
def fedavg(rounds, K, eps, C, k=3.0, rep=0):
    rng = np.random.default_rng(rep); m = len(data)
    sig = sigma_for(eps) * np.sqrt(rounds) if eps else 0
    w, b = np.zeros(d), 0.0; out = []
    for r in range(rounds):
        S = np.zeros(d + 1)
        for X, y, sw in data:
            lw, lb = local(X, y, sw, w, b, K)
            delta = np.r_[lw - w, lb - b]; n_ = np.linalg.norm(delta)
            S += delta * min(1, C / n_) if n_ > 0 else 0
        ns = 2 * sig * C / m
        noisy = S / m + (rng.normal(0, ns, d + 1) if eps else 0)
        dw = noisy[:-1]
        if eps: dw = np.sign(dw) * np.maximum(np.abs(dw) - k * ns, 0)
        w = w + dw; b = b + noisy[-1]
        out.append(labels_acc(w, b))
    return out
for rounds, K, C in [(1, 300, 75.0), (3, 100, 50.0), (5, 60, 40.0)]:
    for eps in [None, 1.0]:
        o = fedavg(rounds, K, eps, C)
        print(f'rounds {rounds} K {K} C {C} eps {eps}: ' + ' | '.join(f'{a:.4f} ({bm} b→m, {mb} m→b)' for a, bm, mb in o), flush=True)
