#!/usr/bin/env python3
"""One line per run directory: the figures of its report.json (no metric is recomputed here)."""
import json, sys
def pct(v): return "–" if v is None else f"{100*v:.1f} %"
print("| run | TPR | FPR | TPR @ FPR ≤ 1 % | AUC | novel TPR @ 1 % | novel TPR / FPR | answered | label agreement | ε di | ε dd | ensemble TPR @ 1 % |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for d in sys.argv[1:]:
    try: r = json.load(open(f"{d}/report.json"))
    except Exception as e: print(f"| {d} | failed: {e} |"); continue
    m = r["metrics"]; n = r.get("student_novel_test") or {}
    nm = n.get("metrics", {})
    print(f"| {d.rstrip('/').split('/')[-1]} | {pct(m.get('tpr'))} | {pct(m.get('fpr'))} | {pct(r['student_tpr_at_fpr'].get('0.01'))} | {m.get('roc_auc', 0):.3f} | "
          f"{pct((n.get('tpr_at_fpr') or {}).get('0.01'))} | {pct(nm.get('tpr'))} / {pct(nm.get('fpr'))} | {r['answered']}/{r['queries']} | {pct(r.get('aggregated_label_agreement'))} | "
          f"{r['data_independent_epsilon']:.2f} | {r['data_dependent_epsilon']:.2f} | {pct((r.get('teacher_ensemble_tpr_at_fpr') or {}).get('0.01'))} |")
