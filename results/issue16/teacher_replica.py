#!/usr/bin/env python3
"""Issue 16's diagnosis of the teachers (EVALUATION.md): a numpy replica of the trainer's batched
Adam logistic-regression teachers (batch 16, pos_weight, L2 on the weights, best epoch on a
hold-out or none), trained on a run's own shards (shards.json, features/private.f32) and voting on
its queries (features/queries.f32), printing the share of right labels at vote shares 0.2 / 0.35 /
0.5 and the vote share's AUC, for a few (learning rate, weight decay, epochs, hold-out) settings.
Not private (it reads the private features): a diagnostic of a simulation only. Needs numpy and
scikit-learn.   python3 results/issue16/teacher_replica.py runs/final1
"""
import sys
import numpy as np, json
R = sys.argv[1] if len(sys.argv) > 1 else '/tmp/detect/runs/committed'
def f32(name):
    a = np.memmap(f'{R}/features/{name}.f32', dtype=np.float32, mode='r', offset=24)
    hdr = np.fromfile(f'{R}/features/{name}.f32', dtype=np.uint64, count=3)
    return np.asarray(a).reshape(int(hdr[1]), int(hdr[2]))
def labels(name):
    return np.array([int(l) for l in open(f'{R}/features/{name}.labels').read().split()])
Xp, yp = f32('private'), labels('private')
Xq, yq = f32('queries'), labels('queries')
shards = json.load(open(f'{R}/shards.json'))

from sklearn.metrics import roc_auc_score
rng = np.random.default_rng(0)
def sig(z): return 1/(1+np.exp(-z))
def train(X, y, lr, wd, epochs, batch, holdout_frac, balance=True):
    n = len(y); idx = rng.permutation(n)
    nh = int(round(n*holdout_frac)) if holdout_frac>0 else 0
    # at least one of each class in training
    h, t = idx[:nh], idx[nh:]
    Xt, yt = X[t], y[t]
    pw = ((yt==0).sum()/max((yt==1).sum(),1)) if balance else 1.0
    w = np.zeros(X.shape[1]); b = 0.0
    m = np.zeros_like(w); v = np.zeros_like(w); mb = vb = 0.0; step=0
    best=(np.inf, w.copy(), b)
    for ep in range(epochs):
        perm = rng.permutation(len(yt))
        for s in range(0, len(yt), batch):
            j = perm[s:s+batch]; xb, yb = Xt[j], yt[j]
            p = sig(xb@w + b)
            # d/dz of -(pw*y*log p + (1-y) log(1-p)) = pw*y*(p-1) + (1-y)*p
            g = (pw*yb*(p-1) + (1-yb)*p) / len(j)
            gw = xb.T@g + wd*w; gb = g.sum()
            step += 1
            m = .9*m + .1*gw; v = .999*v + .001*gw*gw
            mb = .9*mb + .1*gb; vb = .999*vb + .001*gb*gb
            c1 = 1-.9**step; c2 = 1-.999**step
            w -= lr*(m/c1)/(np.sqrt(v/c2)+1e-8); b -= lr*(mb/c1)/(np.sqrt(vb/c2)+1e-8)
        if nh:
            p = np.clip(sig(X[h]@w+b),1e-7,1-1e-7); yh=y[h]
            loss = -(pw*yh*np.log(p)+(1-yh)*np.log(1-p)).mean()
            if loss < best[0]: best=(loss, w.copy(), b)
    if nh: return best[1], best[2]
    return w, b
def evaluate(tag, **kw):
    t=time.time(); votes=np.zeros(len(yq))
    for s in shards:
        w,b = train(Xp[s], yp[s], **kw); votes += (sig(Xq@w+b) >= 0.5)
    share = votes/len(shards)
    accs = {t_: round(((share>=t_)==yq).mean(),3) for t_ in [0.2,0.35,0.5]}
    print(tag, accs, 'auc', round(roc_auc_score(yq, share),3), f'{time.time()-t:.0f}s', flush=True)
for lr, wd, ep, ho in [(0.2,5e-4,12,0.1),(0.2,5e-5,12,0.1),(0.2,5e-6,12,0.1),(0.2,5e-5,12,0),(0.2,5e-5,30,0),(0.05,5e-5,30,0),(0.2,0,12,0)]:
    evaluate(f'lr={lr} wd={wd} ep={ep} ho={ho}', lr=lr, wd=wd, epochs=ep, batch=16, holdout_frac=ho)
