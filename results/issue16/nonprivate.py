#!/usr/bin/env python3
"""The non-private reference of EVALUATION.md (issue 16): one logistic regression on ALL private
records of a run with their true labels, on the run's own features (features/*.f32), C chosen on
the student-validation split, then read on the test split. Not private: a reference only.
Needs numpy, scipy and scikit-learn:  python3 results/issue16/nonprivate.py runs/final1
"""
import numpy as np, scipy.sparse as sp, sys
R = sys.argv[1]  # a run directory of pate-trainer run (its features/ folder)
def f32(name):
    hdr = np.fromfile(f'{R}/features/{name}.f32', dtype=np.uint64, count=3)
    a = np.memmap(f'{R}/features/{name}.f32', dtype=np.float32, mode='r', offset=24, shape=(int(hdr[1]), int(hdr[2])))
    out = []
    for i in range(0, a.shape[0], 4000): out.append(sp.csr_matrix(np.asarray(a[i:i+4000])))
    return sp.vstack(out).tocsr()
def labels(name): return np.array([int(l) for l in open(f'{R}/features/{name}.labels').read().split()])
Xp, yp = f32('private'), labels('private'); Xv, yv = f32('student_validation'), labels('student_validation'); Xt, yt = f32('test'), labels('test')
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score, roc_curve
def tpr_at(y, s, f=0.01):
    fpr,tpr,_=roc_curve(y,s); return tpr[fpr<=f].max()
best=None
for C in [10, 100, 1000]:
    m = LogisticRegression(C=C, class_weight='balanced', max_iter=3000).fit(Xp, yp)
    v = tpr_at(yv, m.decision_function(Xv)); print('C', C, 'val TPR@1%', round(v,4), flush=True)
    if best is None or v > best[0]: best=(v, C, m)
v, C, m = best; s = m.decision_function(Xt)
print('chosen C', C, 'test TPR@1%', round(tpr_at(yt, s),4), 'AUC', round(roc_auc_score(yt, s),4))
