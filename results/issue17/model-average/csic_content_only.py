#!/usr/bin/env python3
"""CSIC's test split of a run scored in the content-only mode (`pate-trainer score
--no-format-checks`, as pate-proxy with `format_checks: false`) at the bundle's content-only
threshold: attacks and normal requests blocked. The test split's records are read from the run's
splits.json (the source line of each test record, in load order: the config's simulate_from files
one after the other, so a line number lower than the one before starts the next file).

    results/issue17/model-average/csic_content_only.py RUN_DIR [DATA_DIR]
(DATA_DIR: ../shared/datasets/csic2010; run from the repository root; ORT_DYLIB_PATH set)
"""
import json, os, subprocess, sys

run = sys.argv[1]
data = sys.argv[2] if len(sys.argv) > 2 else "../shared/datasets/csic2010"
files = [("normalTrafficTraining.txt", "benign"), ("normalTrafficTest_A.txt", "benign"),
         ("anomalousTrafficTest_A.txt", "malicious")]
lines = [x[0] for x in json.load(open(f"{run}/splits.json"))["lines"]["test"]]
wanted = [set() for _ in files]
f = 0
for i, line in enumerate(lines):
    if i and line < lines[i - 1]:
        f += 1
    wanted[f].add(line)
assert f == len(files) - 1, f"expected {len(files)} files, found {f + 1}"
counts = {"benign": [0, 0], "malicious": [0, 0]}  # blocked, total
for (name, label), want in zip(files, wanted):
    out = subprocess.run(["target/release/pate-trainer", "score", "--bundle", f"{run}/bundle",
                          "--no-format-checks", "--input", os.path.join(data, name), "--format",
                          "csic", "--label", label], check=True, capture_output=True,
                         text=True).stdout
    seen = 0
    for row in map(json.loads, out.splitlines()):
        if row["line"] in want:
            seen += 1
            counts[label][0] += row["verdict"] == "block"
            counts[label][1] += 1
    assert seen == len(want), f"{name}: {seen} of {len(want)} test lines scored"
b, m = counts["benign"], counts["malicious"]
print(f"{run}: content only, attacks {100 * m[0] / m[1]:.1f} % ({m[0]}/{m[1]}), "
      f"normal {100 * b[0] / b[1]:.2f} % ({b[0]}/{b[1]}) blocked")
