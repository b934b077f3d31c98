#!/usr/bin/env bash
# Copied from the GPU run of issue 16 (EVALUATION.md): there it lived in .gpu/ beside the packed
# binary (bench/gpu-build.sh), the configs of configs/ in .gpu/grid and .gpu/grid2 (their dataset
# paths are relative to those folders); grid2.sh is the second call.
# Grid of configs (.gpu/grid/*.yaml) x SEEDS on the GPU; one summary line per run into $OUT/grid.csv.
set -u
PACK=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gpu-out}; SEEDS=${SEEDS:-1 2}; ONLY=${ONLY:-}
mkdir -p "$OUT" ../shared/datasets
[ -d ../shared/datasets/csic2010 ] || tar -xJf "$PACK/csic.tar.xz" -C ../shared/datasets
[ -f /tmp/libonnxruntime.so ] || xz -dc "$PACK/libonnxruntime.so.xz" > /tmp/libonnxruntime.so
TORCH=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
export LIBTORCH=$TORCH LD_LIBRARY_PATH=$TORCH/lib ORT_DYLIB_PATH=/tmp/libonnxruntime.so
B=$PACK/pate-trainer; chmod +x "$B"
echo "config,seed,wall_s,val_auc,val_tpr1,label_agree,ens_tpr1,test_tpr,test_fpr,test_tpr1,test_auc,novel_tpr1,eps_di" > "$OUT/${CSV:-grid.csv}"
for seed in $SEEDS; do
  for cfg in "$PACK"/${GRID:-grid}/*.yaml; do
  name=$(basename "$cfg" .yaml)
  [ -n "$ONLY" ] && ! echo " $ONLY " | grep -q " $name " && continue
    c="$PACK/${GRID:-grid}/.$name-$seed.yml"
    if [ "$seed" = fresh ]; then cp "$cfg" "$c"; else sed "s/^seed: null/seed: $seed/" "$cfg" > "$c"; fi
    rm -rf /tmp/gr; t0=$(date +%s)
    timeout 200 "$B" run --config "$c" --out /tmp/gr --device auto > "$OUT/last.log" 2>&1 || { echo "$name $seed FAILED"; tail -3 "$OUT/last.log"; continue; }
    t1=$(date +%s)
    python3 - "$name" "$seed" $((t1-t0)) >> "$OUT/${CSV:-grid.csv}" <<'PY'
import json, sys
r = json.load(open('/tmp/gr/report.json')); so = r['student_options']; m = r['metrics']
n = (r.get('student_novel_test') or {}).get('tpr_at_fpr') or {}
f = lambda v: '' if v is None else f'{v:.4f}'
print(','.join([sys.argv[1], sys.argv[2], sys.argv[3], f(so.get('validation_roc_auc')), f(so.get('validation_tpr_at_1pct_fpr')),
  f(r.get('aggregated_label_agreement')), f((r.get('teacher_ensemble_tpr_at_fpr') or {}).get('0.01')), f(m['tpr']), f(m['fpr']),
  f(r['student_tpr_at_fpr'].get('0.01')), f(m.get('roc_auc')), f(n.get('0.01')), f(r['data_independent_epsilon'])]))
PY
    tail -1 "$OUT/${CSV:-grid.csv}"
  done
done
grep -m1 "^device:" "$OUT/last.log"
