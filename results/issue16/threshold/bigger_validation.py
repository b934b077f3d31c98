#!/usr/bin/env python3
"""Issue 16 diagnostic (simulation runs with the PATE_DUMP patch): what a larger validation split
would do to the threshold. Half the test records (at random, 20 draws) join the validation
traffic (every copy a record), the other half is read as the test; thresholds: FPR <= 1 % of the
validation traffic (point estimate) and the record-level Poisson bootstrap quantile (conf) <= 1 %.
Prints, per run, the mean / worst test FPR and TPR over the draws.
  python3 bigger_validation.py DUMP_PREFIX..."""
import json, sys
import numpy as np
def thr_point(s, l, t):
    o = np.argsort(-s, kind='stable'); s, l = s[o], l[o]
    fp = np.cumsum(~l) / max((~l).sum(), 1); last = np.r_[s[1:] != s[:-1], True]
    ok = (fp <= t) & last
    return s[np.nonzero(ok)[0].max()] if ok.any() else s[0] + 1e-6
def thr_boot(s, l, t, conf, B=300, rng=None):
    o = np.argsort(-s, kind='stable'); s, l = s[o], l[o]
    neg = s[~l]  # benign scores, descending
    C = rng.poisson(1.0, size=(B, len(neg)))
    fp = np.cumsum(C, axis=1) / np.maximum(C.sum(1, keepdims=True), 1)
    q = np.quantile(fp, conf, axis=0)  # FPR quantile when the threshold is at neg[k]
    last = np.r_[neg[1:] != neg[:-1], True]
    ok = (q <= t) & last
    if not ok.any(): return s[0] + 1e-6
    k = np.nonzero(ok)[0].max()
    # the lowest threshold flagging benign rows 0..k only: just above the next benign score
    nxt = neg[k + 1] if k + 1 < len(neg) else -1.0
    return np.nextafter(np.float32(nxt), np.float32(2)) if nxt >= 0 else 0.0
def rates(s, l, th):
    return (s[l] >= th).mean(), (s[~l] >= th).mean()
for pre in sys.argv[1:]:
    v = json.load(open(pre + '.val.json')); te = json.load(open(pre + '.test.json'))
    n = len(v['traffic'])
    vs = np.repeat(np.array(v['scores'][:n], np.float32), v['traffic']); vl = np.repeat(np.array(v['labels'][:n], bool), v['traffic'])
    ts = np.array(te['scores'], np.float32); tl = np.array(te['labels'], bool)
    rng = np.random.default_rng(3)
    res = {}
    for d in range(20):
        m = rng.random(len(ts)) < 0.5
        for name, (S, L) in {'val': (vs, vl), 'val+half-test': (np.r_[vs, ts[m]], np.r_[vl, tl[m]])}.items():
            for rule in ['point', 'boot0.9', 'boot0.95']:
                th = thr_point(S, L, 0.01) if rule == 'point' else thr_boot(S, L, 0.01, float(rule[4:]), rng=rng)
                res.setdefault((name, rule), []).append(rates(ts[~m], tl[~m], th))
    print(pre.split('/')[-1], f"validation benign traffic {int((~vl).sum())}, test benign {int((~tl).sum())}")
    for k, r in res.items():
        r = np.array(r)
        print(f"  {k[0]:14s} {k[1]:9s} test TPR mean {r[:,0].mean():.4f} min {r[:,0].min():.4f} | FPR mean {r[:,1].mean():.4f} max {r[:,1].max():.4f} P(>1%) {(r[:,1] > 0.01).mean():.2f}")
