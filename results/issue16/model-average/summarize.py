#!/usr/bin/env python3
"""One line per run directory (or report.json): the choice criterion (validation TPR at FPR ≤ 1 %
of its traffic, and beside it once per distinct request: session 24 found the traffic-counted
figure blind to a 7-point drop, ../session24/README.md) first, then the test figures, read from
report.json (nothing recomputed)."""
import json, os, sys
def pct(v): return "–" if v is None else f"{100*v:.1f} %"
print("| run | labels right | validation TPR @ 1 % of traffic | validation TPR @ 1 %, distinct | test TPR / FPR at the bundle's threshold | test TPR @ FPR ≤ 1 % | novel TPR @ 1 % | ε |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for d in sys.argv[1:]:
    f = d if d.endswith('.json') else os.path.join(d, 'report.json')
    try: r = json.load(open(f))
    except Exception as e: print(f"| {d} | failed: {e} |"); continue
    m = r["metrics"]; n = (r.get("student_novel_test") or {}).get("tpr_at_fpr") or {}
    o = r.get("student_options") or {}
    name = os.path.basename(os.path.dirname(f) if f.endswith('report.json') else f)
    print(f"| {name} | {pct(r.get('aggregated_label_agreement'))} | {pct(o.get('validation_traffic_tpr_at_1pct_fpr'))} | {pct(o.get('validation_tpr_at_1pct_fpr'))} | "
          f"{pct(m.get('tpr'))} / {pct(m.get('fpr'))} | {pct(r['student_tpr_at_fpr'].get('0.01'))} | {pct(n.get('0.01'))} | {r['data_independent_epsilon']:.2f} |")
