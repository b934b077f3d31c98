# Session 25: the non-private model with the same features — logistic regression on the private
# split's TRUE labels (no privacy), C chosen on the validation split (each distinct request once),
# read on the test split (every copy). Usage: nonprivate.py RUN_DIR. Not private: a reference.
import sys; sys.path.insert(0, '/work/main/results/issue16/model-average')
from common import *
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
R = sys.argv[1]
Xp, yp = mat(R, 'private'), labels(R, 'private')
Xv, yv = mat(R, 'student_validation'), labels(R, 'student_validation')
Xt, yt = mat(R, 'test'), labels(R, 'test')
best = None
for C in (1, 10, 100, 1000):
    m = LogisticRegression(C=C, max_iter=3000, solver='liblinear').fit(Xp, yp)
    v = tpr_at(yv, m.decision_function(Xv))
    print(f'C {C}: validation TPR @ FPR <= 1 % (distinct) {100*v:.1f} %', flush=True)
    if best is None or v > best[0]: best = (v, C, m)
v, C, m = best
s = m.decision_function(Xt)
print(f'chosen C {C}: test TPR @ FPR <= 1 % {100*tpr_at(yt, s):.1f} %, AUC {roc_auc_score(yt, s):.4f}')
