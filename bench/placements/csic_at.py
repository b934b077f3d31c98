#!/usr/bin/env python3
"""TPR / FPR of a run's bundle on the run's CSIC test split at given thresholds (ONNX Runtime on
the dense graph of bundle/model.onnx, features/test.f32 + test.labels as the trainer wrote them).
Needs numpy and onnxruntime (the project's .venv).

    .venv/bin/python bench/placements/csic_at.py RUN_DIR THRESHOLD...
"""
import struct, sys

import numpy as np
import onnxruntime as ort

run = sys.argv[1]
thresholds = [float(t) for t in sys.argv[2:]]
raw = open(f"{run}/features/test.f32", "rb").read()
if raw[:8] != b"PATEF32\0":
    sys.exit(f"{run}/features/test.f32 is not a PATEF32 matrix")
rows, cols = struct.unpack("<QQ", raw[8:24])
x = np.frombuffer(raw[24:24 + 4 * rows * cols], dtype="<f4").reshape(rows, cols)
y = np.array([int(line) for line in open(f"{run}/features/test.labels")])
s = ort.InferenceSession(f"{run}/bundle/model.onnx").run(None, {"features": x})[0][:, 0]
for t in thresholds:
    tpr = (s[y == 1] >= t).mean()
    fpr = (s[y == 0] >= t).mean()
    print(f"{run} threshold {t:.4f}: TPR {tpr:.3f} FPR {fpr:.3f} ({rows} requests, {int(y.sum())} anomalous)")
