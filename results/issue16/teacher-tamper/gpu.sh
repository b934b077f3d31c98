#!/usr/bin/env bash
# On the GPU machine (BENCHMARKS.md §5), from the repository root, after bench/gpu-build.sh packed
# .gpu/: each config of CONFIGS run RUNS times by .gpu/gpu-run.sh, logs and reports under
# $OUT/<config>/, one summary line per run printed.
#   CONFIGS="results/issue16/teacher-tamper/configs/tt010.yaml ..." OUT=$OUT bash results/issue16/teacher-tamper/gpu.sh
set -u
for c in $CONFIGS; do
  n=$(basename "$c" .yaml)
  CONFIG=$c OUT=$OUT/$n RUNS="${RUNS:-auto auto auto}" bash .gpu/gpu-run.sh > "$OUT/$n.txt" 2>&1
  echo "== $n"; grep -E "^== [0-9]|TPR " "$OUT/$n.txt"
done
