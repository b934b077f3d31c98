#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the folder bench/gpu-build.sh packed
# (default .gpu/): unpacks the CSIC data to ../shared/datasets (where configs/ expect it) and ONNX
# Runtime, points the binary at the machine's own torch (python3's), then runs
# `pate-trainer run` once per entry of RUNS and prints each run's device line, stage times and
# result. Logs and report.json files go to $OUT (or /tmp/gpu-out).
#
#   bash .gpu/gpu-run.sh                                    # RUNS="auto cpu"
#   RUNS="auto auto cpu" CONFIG=configs/seeds.yaml bash .gpu/gpu-run.sh
# (the sequential teacher mode left the CLI: `cargo bench -p trainer --bench ensemble` compares it)
#   SEED=7 RUNS="auto cpu" bash .gpu/gpu-run.sh             # same seed on both: same ε and metrics
#
# An `auto` run that falls back to the CPU (libtorch_cuda.so did not load) is stopped at once and
# retried with LD_PRELOAD of libtorch_cuda.so, printing why.
# SEED writes CONFIG's seeded copy beside it (dataset paths are relative to the config's folder)
# and removes it at the end.
set -u
PACK=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gpu-out}
RUNS=${RUNS:-auto cpu}
CONFIG=${CONFIG:-configs/train.yaml}
TIMEOUT=${TIMEOUT:-280}
mkdir -p "$OUT" ../shared/datasets
for t in "$PACK"/*.tar.xz; do # csic.tar.xz, plus datasets.tar.xz where gpu-build.sh packed more
  [ -e "$t" ] && tar -xJf "$t" -C ../shared/datasets --skip-old-files
done
[ -f /tmp/libonnxruntime.so ] || xz -dc "$PACK/libonnxruntime.so.xz" > /tmp/libonnxruntime.so
TORCH=${TORCH_DIR:-$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')}
export LIBTORCH=$TORCH LD_LIBRARY_PATH=$TORCH/lib ORT_DYLIB_PATH=/tmp/libonnxruntime.so
B=$PACK/pate-trainer
chmod +x "$B"
if [ -n "${SEED:-}" ]; then
  sed "s/^seed: null.*/seed: $SEED/" "$CONFIG" > "${CONFIG%.yaml}-seed$SEED.yaml"
  CONFIG=${CONFIG%.yaml}-seed$SEED.yaml
  trap 'rm -f "$CONFIG"' EXIT
fi
echo "== $(nproc) cores; $(nvidia-smi -L 2>/dev/null); torch at $TORCH; config $CONFIG"
ldd "$B" | grep -E "libtorch|libc10|not found"

one() { # NAME DEVICE [ENV=VALUE]
  local name=$1 dev=$2 t0 t1 rc pid
  rm -rf "/tmp/gpu-run-$name"
  t0=$(date +%s.%N)
  env ${3:-} timeout "$TIMEOUT" "$B" run --config "$CONFIG" --out "/tmp/gpu-run-$name" \
    --device "$dev" > "$OUT/$name.log" 2>&1 &
  pid=$!
  if [ "$dev" = auto ]; then
    for _ in $(seq 1 100); do grep -q "^device:" "$OUT/$name.log" && break; sleep 0.2; done
    if grep -q "^device: cpu" "$OUT/$name.log"; then
      echo "== $name: auto fell back to the CPU: $(head -1 "$OUT/$name.log")"
      kill "$pid"; wait "$pid"; return 1
    fi
  fi
  wait "$pid"; rc=$?
  t1=$(date +%s.%N)
  echo "== $name ($dev): exit $rc, wall $(awk "BEGIN{print $t1 - $t0}") s"
  grep -E "^device:|\] ==|run: done" "$OUT/$name.log"
  [ -f "/tmp/gpu-run-$name/report.json" ] || return 0
  cp "/tmp/gpu-run-$name/report.json" "$OUT/$name-report.json"
  python3 - "$OUT/$name-report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m, a = r["metrics"], r["privacy"]["accountant"]
print(f"   TPR {m['tpr']:.4f} FPR {m['fpr']:.4f} AUC {m['roc_auc']:.4f} threshold {m['threshold']:.7f}"
      f" | TPR at FPR <= 1 % {r['student_tpr_at_fpr']['0.01']:.4f}"
      f" (novel {r['student_novel_test']['tpr_at_fpr']['0.01']:.4f})"
      f" | eps data-independent {a['data_independent_epsilon']:.4f}"
      f" data-dependent {a['data_dependent_epsilon']:.4f}")
PY
}
i=0
for dev in $RUNS; do
  i=$((i + 1))
  one "$i-$dev" "$dev" || one "$i-$dev-preload" "$dev" "LD_PRELOAD=$TORCH/lib/libtorch_cuda.so"
done
