#!/usr/bin/env python3
"""Validation-only calibration check of the confident threshold (no test data): the records of
the validation traffic split in two halves at random (200 draws, each copy of a request on its
own side, as the simulation splits records); the threshold is chosen on half A (point estimate,
or held at confidence 0.9 / 0.95 by the record-level Poisson bootstrap) and half B's benign
traffic share above it is read. A calibrated rule at confidence C leaves B over the budget in
about 1 - C of the draws (more, since B is itself a sample).
  python3 split_half.py DUMP_PREFIX...   (PREFIX.val.json of the PATE_DUMP patch)"""
import json, sys
import numpy as np
sys.path.insert(0, __file__.rsplit('/', 1)[0])
from analyze import boot_thr, thr
for pre in sys.argv[1:]:
    v = json.load(open(pre + '.val.json')); n = len(v['traffic'])
    S = np.array(v['scores'][:n], np.float32); L = np.array(v['labels'][:n], bool); W = np.array(v['traffic'])
    rng = np.random.default_rng(5); out = {}
    for _ in range(200):
        a = rng.binomial(W, 0.5); b = W - a
        keep = a > 0
        for rule in ['point', 0.9, 0.95]:
            if rule == 'point':
                t = thr(list(S[keep]), list(L[keep]), list(a[keep]), 0.01)
            else:
                t = boot_thr(S[keep], L[keep], a[keep], 0.01, rule, B=300, seed=int(rng.integers(1 << 30)))
            fb = b[(~L) & (S >= t)].sum() / max(b[~L].sum(), 1)
            out.setdefault(rule, []).append(fb)
    print(pre.split('/')[-1], 'benign validation traffic', int(W[~L].sum()))
    for rule, f in out.items():
        f = np.array(f)
        print(f"  {str(rule):5s} half B's FPR mean {f.mean():.4f}, 90th pct {np.quantile(f, 0.9):.4f}, P(> 1 %) {(f > 0.01).mean():.2f}")
