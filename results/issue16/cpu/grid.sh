#!/usr/bin/env bash
# Issue 16, L1 (FISTA) teachers: a grid of configs (configs/*.yaml) x SEEDS on this machine's CPU,
# one summary line per run into $OUT/$CSV (same columns as ../gpu/grid.sh). Choices are made on
# the validation columns (val_*), never on the test ones. Run from the checkout's root:
#   SEEDS="1 2" ONLY="a_l1 b_l1_1e-3" results/issue16/cpu/grid.sh
#   SEEDS="fresh fresh fresh" ONLY=a_l1 CSV=fresh.csv results/issue16/cpu/grid.sh
# CONFIGS=DIR takes the configs from DIR (and OUT=DIR writes the CSV there). The last column,
# val_traffic_tpr1 (validation counted with its traffic), is absent from CSVs written before it.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${OUT:-$HERE}; CONFIGS=${CONFIGS:-$HERE/configs}; SEEDS=${SEEDS:-1 2}; ONLY=${ONLY:-}; CSV=${CSV:-grid.csv}
B=$ROOT/target/release/pate-trainer
[ -f "$OUT/$CSV" ] || echo "config,seed,wall_s,val_auc,val_tpr1,label_agree,ens_tpr1,test_tpr,test_fpr,test_tpr1,test_auc,novel_tpr1,eps_di,val_traffic_tpr1" > "$OUT/$CSV"
for seed in $SEEDS; do
  for cfg in "$CONFIGS"/*.yaml; do
    name=$(basename "$cfg" .yaml)
    [ -n "$ONLY" ] && ! echo " $ONLY " | grep -q " $name " && continue
    c="$CONFIGS/.$name-$seed.yml"
    if [ "$seed" = fresh ]; then cp "$cfg" "$c"; else sed "s/^seed: null.*/seed: $seed/" "$cfg" > "$c"; fi
    mkdir -p "${RUNS:-/tmp/issue16-cpu}"; run=${RUNS:-/tmp/issue16-cpu}/$name-$seed-$$-$RANDOM; rm -rf "$run"; t0=$(date +%s)
    "$B" run --config "$c" --out "$run" > "$run.log" 2>&1 || { echo "$name $seed FAILED"; tail -3 "$run.log"; rm -f "$c"; continue; }
    t1=$(date +%s); rm -f "$c"
    python3 - "$name" "$seed" $((t1-t0)) "$run" >> "$OUT/$CSV" <<'PY'
import json, sys
r = json.load(open(sys.argv[4] + '/report.json')); so = r['student_options']; m = r['metrics']
n = (r.get('student_novel_test') or {}).get('tpr_at_fpr') or {}
f = lambda v: '' if v is None else f'{v:.4f}'
print(','.join([sys.argv[1], sys.argv[2], sys.argv[3], f(so.get('validation_roc_auc')), f(so.get('validation_tpr_at_1pct_fpr')),
  f(r.get('aggregated_label_agreement')), f((r.get('teacher_ensemble_tpr_at_fpr') or {}).get('0.01')), f(m['tpr']), f(m['fpr']),
  f(r['student_tpr_at_fpr'].get('0.01')), f(m.get('roc_auc')), f(n.get('0.01')), f(r['data_independent_epsilon']),
  f(so.get('validation_traffic_tpr_at_1pct_fpr'))]))
PY
    tail -1 "$OUT/$CSV"
    [ -n "${KEEP:-}" ] || rm -rf "$run/features" "$run/teachers"
  done
done
