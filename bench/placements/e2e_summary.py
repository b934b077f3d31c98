#!/usr/bin/env python3
"""Summary of bench/placements/e2e_cases.py lines (one per trained bundle): per placement, in how
many runs both attacks were blocked and the benign value passed; the padding / encoding cases;
each run's CSIC test figures from its report.json (the run directory is the bundle's parent).

    bench/placements/e2e_summary.py RESULTS.jsonl
"""
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
att = collections.Counter(); ben = collections.Counter()
for r in rows:
    for n, c in r["cases"].items():
        att[n] += c["sqli"][1] and c["xss"][1]
        ben[n] += not c["benign"][1]
print(f"{len(rows)} runs; thresholds", [round(r["threshold"],3) for r in rows], "ok per run", [r["ok"] for r in rows])
for n in rows[0]["cases"]:
    print(f"{n:16} attacks blocked {att[n]}/{len(rows)}  benign passed {ben[n]}/{len(rows)}  benign scores", [r["cases"][n]["benign"][0] for r in rows])

enc = collections.Counter()
for r in rows:
    for k, v in r.get("enc", {}).items(): enc[k] += v[1]
print("encodings blocked:", dict(enc), "padded benign passed:", sum(not r["padded_benign"][1] for r in rows if "padded_benign" in r))
import os
aucs = []
for r in rows:
    rep = json.load(open(os.path.join(os.path.dirname(r["bundle"]), "report.json")))
    m = rep["metrics"]
    aucs.append((round(m["roc_auc"], 3), round(m.get("tpr") or 0, 2), round(m.get("fpr") or 0, 3)))
print("CSIC test (auc, tpr, fpr) at bundle threshold:", aucs)
