#!/usr/bin/env python3
"""One CSV line per report.json (a run directory's, or gpu-run.sh's copies NAME-report.json): the
teachers' tampered rows, the answered labels' agreement with the public split's true labels, the
validation figures the choice is made on, then the test figures (read, not chosen on), the ε.
  python3 summarize.py REPORT_OR_RUN_DIR... > runs.csv"""
import json, os, sys
print("run,teacher_tampered_rows,label_agreement,validation_traffic_tpr1,validation_fpr,validation_tpr,"
      "threshold,test_tpr,test_fpr,test_tpr_at_fpr_0.01,novel_tpr_at_fpr_0.01,auc,published_epsilon")
for p in sys.argv[1:]:
    f_ = p if p.endswith('.json') else os.path.join(p, 'report.json')
    r = json.load(open(f_)); m = r['metrics']; so = r['student_options']
    vfpr, vtpr = so.get('validation_operating_point_fpr_tpr') or (None, None)
    f = lambda v: '' if v is None else f'{v:.4f}'
    name = p.rstrip('/').split('/')[-1] if not p.endswith('.json') else p.replace('-report.json', '')
    print(','.join([name, str(r.get('teacher_tampered_rows', 0)), f(r.get('aggregated_label_agreement')),
                    f(so.get('validation_traffic_tpr_at_1pct_fpr')), f(vfpr), f(vtpr),
                    f(m['threshold']), f(m['tpr']), f(m['fpr']),
                    f(r['student_tpr_at_fpr']['0.01']), f(r['student_novel_test']['tpr_at_fpr']['0.01']),
                    f(m['roc_auc']), f(r['data_independent_epsilon'])]))
