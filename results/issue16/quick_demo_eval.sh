#!/usr/bin/env bash
# results/issue16/quick_demo_eval.sh CONFIG N: N fresh runs of CONFIG (a quick.yaml variant in configs/),
# each scored with `pate-trainer score` on the 10 requests scripts/demo.sh sends; prints per run the
# attacks and normal requests blocked and the student-validation / test TPR at FPR <= 1 %.
cd "$(dirname "$0")/../.."
T=./target/release/pate-trainer
targets() {
  grep -a '^GET ' "$1" | sed -e 's#^GET http://localhost:8080##' -e 's# HTTP/1\.[01].*$##' | tr -d '\r' |
    awk -v re="$2" 'BEGIN { IGNORECASE = 1 } tolower($0) ~ tolower(re) && !seen[$0]++ && n < 5 { print; n++ }'
}
N=$(targets data/sample/csic_normalTrafficTest_A_sample.txt '')
A=$(targets data/sample/csic_anomalousTrafficTest_A_sample.txt 'script|select|drop|waitfor|delete')
for i in $(seq $2); do
  R=${RUNS:-/tmp/quick-demo-runs}/$(basename $1 .yaml)-$i; rm -rf $R
  $T run --config $1 --out $R -q >/dev/null 2>&1 || { echo FAIL; continue; }
  nb=0; ab=0
  for t in $N; do v=$($T score --bundle $R/bundle --target "$t" 2>/dev/null | python3 -c 'import json,sys;print(json.load(sys.stdin)["verdict"])'); [ "$v" = block ] && nb=$((nb+1)); done
  for t in $A; do v=$($T score --bundle $R/bundle --target "$t" 2>/dev/null | python3 -c 'import json,sys;print(json.load(sys.stdin)["verdict"])'); [ "$v" = block ] && ab=$((ab+1)); done
  vt=$(python3 -c "import json;r=json.load(open('$R/report.json'));print(round(r['student_options'].get('validation_tpr_at_1pct_fpr') or -1,3), round(r['student_tpr_at_fpr']['0.01'],3))")
  echo "$(basename $1) run $i: attacks blocked $ab/5 normal blocked $nb/5 val/test tpr1 $vt"
done
