#!/usr/bin/env python3
"""One CSV line per run directory: the config, the test figures at the bundle's threshold and off
the ROC, the validation operating point and the published ε (report.json of `pate-trainer run`).
  python3 summarize.py RUN_DIR... > runs.csv"""
import json, sys
print("run,threshold,test_tpr,test_fpr,test_tpr_at_fpr_0.01,novel_tpr_at_fpr_0.01,auc,validation_fpr,validation_tpr,validation_traffic_tpr1,published_epsilon")
for d in sys.argv[1:]:
    r = json.load(open(d + '/report.json')); m = r['metrics']; so = r['student_options']
    vfpr, vtpr = so.get('validation_operating_point_fpr_tpr') or (None, None)
    f = lambda v: '' if v is None else f'{v:.4f}'
    print(','.join([d.rstrip('/').split('/')[-1], f(m['threshold']), f(m['tpr']), f(m['fpr']),
                    f(r['student_tpr_at_fpr']['0.01']), f(r['student_novel_test']['tpr_at_fpr']['0.01']),
                    f(m['roc_auc']), f(vfpr), f(vtpr), f(so.get('validation_traffic_tpr_at_1pct_fpr')),
                    f(r['data_independent_epsilon'])]))
