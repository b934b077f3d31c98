# distinct.py RUN...: the test split counted once per distinct request (report.json's student_distinct_test) and the novel requests, at the bundle's threshold and on the ROC
import json, sys
for d in sys.argv[1:]:
    r = json.load(open(d + '/report.json'))
    out = []
    for key in ('student_distinct_test', 'student_novel_test'):
        n = r[key]; m = n['metrics']
        out.append(f"{key.split('_')[1]}: {100*m['tpr']:.1f} % / {100*m['fpr']:.2f} % at the threshold, ROC@1 % {100*n['tpr_at_fpr']['0.01']:.1f} %, AUC {m['roc_auc']:.4f}")
    print(f"{d:22}", ' | '.join(out))
