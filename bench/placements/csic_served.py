#!/usr/bin/env python3
"""ROC AUC and TPR / FPR at a threshold of a bundle on the in-repo CSIC sample's test files,
scored as pate-proxy scores them (`pate-trainer score --input`: bundle::score_request, every
window and, with `parts_alone`, every part). The files hold the run's training rows too (the
sample's roles are simulated from them), so the figures are optimistic; they compare scorings.

    bench/placements/csic_served.py BUNDLE_DIR THRESHOLD
"""
import json, subprocess, sys

bundle, threshold = sys.argv[1], float(sys.argv[2])
scores = {"benign": [], "malicious": []}
for label, name in (("benign", "csic_normalTrafficTest_A_sample.txt"),
                    ("malicious", "csic_anomalousTrafficTest_A_sample.txt")):
    out = subprocess.run(["target/release/pate-trainer", "score", "--bundle", bundle, "--input",
                          f"data/sample/{name}", "--format", "csic", "--label", label],
                         check=True, capture_output=True, text=True).stdout
    scores[label] = [json.loads(line)["score"] for line in out.splitlines()]
pos, neg = scores["malicious"], scores["benign"]
# AUC = P(score of an anomalous request > a normal one's), ties counted half.
ranked = sorted([(s, 1) for s in pos] + [(s, 0) for s in neg])
rank_sum, i = 0.0, 0
while i < len(ranked):
    j = i
    while j < len(ranked) and ranked[j][0] == ranked[i][0]:
        j += 1
    rank_sum += sum((i + j + 1) / 2 for k in range(i, j) if ranked[k][1])
    i = j
auc = (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))
tpr = sum(s >= threshold for s in pos) / len(pos)
fpr = sum(s >= threshold for s in neg) / len(neg)
print(f"{bundle}: AUC {auc:.3f}; threshold {threshold}: TPR {tpr:.3f} FPR {fpr:.3f} "
      f"({len(pos)} anomalous, {len(neg)} normal)")
