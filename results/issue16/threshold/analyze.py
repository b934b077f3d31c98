#!/usr/bin/env python3
"""Issue 16: where the bundle's threshold lands on the test traffic, capped vs full validation
traffic (diagnostic of simulation runs made with the temporary PATE_DUMP patch: validation served
scores, labels, traffic copies and capped copies; test scores and labels).
  python3 analyze.py DUMP_PREFIX... (each PREFIX.val.json, PREFIX.test.json, PREFIX.log)
For each run: the threshold the trainer took; thresholds at FPR <= t of the validation traffic
counted capped (multiplicity_cap) and in full; the test TPR / FPR at each (read, not chosen on);
and a validation-only split-half check: half the distinct validation requests set the threshold
(full traffic, FPR <= t), the other half's traffic FPR is read (200 random halves)."""
import json, sys, re, random
def thr(scores, labels, weights, t):
    # highest-TPR threshold with weighted FPR <= t (ties: a score at the threshold is malicious)
    neg = sum(w for s, l, w in zip(scores, labels, weights) if not l)
    pts = sorted(((s, l, w) for s, l, w in zip(scores, labels, weights)), key=lambda x: -x[0])
    fp = 0; best = pts[0][0] + 1e-6; i = 0
    while i < len(pts):
        s = pts[i][0]; j = i
        while j < len(pts) and pts[j][0] == s:
            if not pts[j][1]: fp += pts[j][2]
            j += 1
        if fp / neg <= t: best = s
        else: break
        i = j
    return best
def rates(scores, labels, t):
    p = sum(labels); n = len(labels) - p
    tp = sum(1 for s, l in zip(scores, labels) if l and s >= t); fp = sum(1 for s, l in zip(scores, labels) if not l and s >= t)
    return tp / p, fp / n
def main():
    for pre in sys.argv[1:]:
        v = json.load(open(pre + '.val.json')); te = json.load(open(pre + '.test.json'))
        log = open(pre + '.log').read()
        m = re.search(r'threshold ([0-9.]+) holds FPR <= [0-9.]+ on the site.s validation traffic, ([0-9.]+) FPR', log)
        placed = float(m.group(2)) if m else 0.0
        n = len(v['traffic']); S, L = v['scores'][:n], v['labels'][:n]
        print(f"{pre.split('/')[-1]}: trainer threshold {v['threshold']:.4f} (placed budget {placed:.4f}); test at it TPR {rates(te['scores'], te['labels'], v['threshold'])[0]:.4f} FPR {rates(te['scores'], te['labels'], v['threshold'])[1]:.4f}")
        for t in [0.01, 0.008, 0.006, 0.005]:
            for name, w in [('capped', v['capped'][:n]), ('full', v['traffic'])]:
                th = max(thr(S, L, w, t), placed)
                tpr, fpr = rates(te['scores'], te['labels'], th)
                print(f"  t {t:.3f} {name:6s} threshold {th:.4f}  test TPR {tpr:.4f} FPR {fpr:.4f}")
        rng = random.Random(1); idx = list(range(n))
        for t in [0.01, 0.008, 0.006, 0.005]:
            out = []
            for _ in range(200):
                rng.shuffle(idx); a, b = idx[:n // 2], idx[n // 2:]
                th = max(thr([S[i] for i in a], [L[i] for i in a], [v['traffic'][i] for i in a], t), placed)
                nb = sum(v['traffic'][i] for i in b if not L[i]); fb = sum(v['traffic'][i] for i in b if not L[i] and S[i] >= th)
                out.append(fb / nb)
            out.sort()
            print(f"  split-half t {t:.3f}: other half's traffic FPR median {out[100]:.4f}, 90th pct {out[180]:.4f}, max {out[-1]:.4f}, P(>1%) {sum(o > 0.01 for o in out) / 200:.2f}")

# A confidence rule: the lowest threshold whose (conf) quantile of the validation traffic FPR,
# over record-level Poisson bootstrap replicates (each request's traffic c ~ Poisson(copies): the
# split is drawn record by record), is <= t.
import numpy as np
def boot_thr(S, L, W, t, conf, B=400, seed=7):
    S = np.asarray(S); L = np.asarray(L, bool); W = np.asarray(W, float)
    order = np.argsort(-S, kind='stable'); S, L, W = S[order], L[order], W[order]
    rng = np.random.default_rng(seed)
    C = rng.poisson(W[None, :].repeat(B, 0))  # B x n
    fp = np.cumsum(C * (~L)[None, :], axis=1) / np.maximum((C * (~L)[None, :]).sum(1, keepdims=True), 1)
    # a threshold at S[k] flags rows 0..k (and equal scores): use the last index of each score run
    last = np.r_[S[1:] != S[:-1], True]
    q = np.quantile(fp, conf, axis=0)
    ok = (q <= t) & last
    return S[np.nonzero(ok)[0].max()] if ok.any() else S[0] + 1e-6
if __name__ == '__main__':
    main()
    for pre in sys.argv[1:]:
        v = json.load(open(pre + '.val.json')); te = json.load(open(pre + '.test.json'))
        log = open(pre + '.log').read()
        m = re.search(r'threshold ([0-9.]+) holds FPR <= [0-9.]+ on the site.s validation traffic, ([0-9.]+) FPR', log)
        placed = float(m.group(2)) if m else 0.0
        n = len(v['traffic'])
        for conf in [0.5, 0.8, 0.9, 0.95]:
            th = max(boot_thr(v['scores'][:n], v['labels'][:n], v['traffic'], 0.01, conf), placed)
            tpr, fpr = rates(te['scores'], te['labels'], th)
            print(f"  {pre.split('/')[-1]} bootstrap conf {conf}: threshold {th:.4f} test TPR {tpr:.4f} FPR {fpr:.4f}")
