#!/usr/bin/env bash
# The main job, on the in-repo sample: train a PATE detector, export the ONNX bundle, start Apache
# and pate-proxy (block mode) in front of it on loopback, send five normal and five attack requests,
# and print the proxy's metrics. Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN=$ROOT/runs/demo
APACHE_PORT=${APACHE_PORT:-18081}
PROXY_PORT=${PROXY_PORT:-18080}
ADMIN_PORT=${ADMIN_PORT:-19090}

step() { printf '\n== %s\n' "$*"; }

step "build (release)"
cargo build --release -p trainer -p proxy 2>&1 | grep -E '^(error|warning: unused)|Finished' || true
TRAINER=$ROOT/target/release/pate-trainer
PROXY=$ROOT/target/release/pate-proxy

step "the in-repo sample (data/sample, see its README for provenance)"
"$TRAINER" data stats --format csic data/sample/csic_*_sample.txt

step "train: pate-trainer run --config configs/quick.yaml --out runs/demo"
rm -rf "$RUN"
"$TRAINER" run --config configs/quick.yaml --out "$RUN"
python3 - "$RUN/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
keys = ["teachers", "queries", "answered", "mechanism", "delta", "data_independent_epsilon",
        "data_dependent_epsilon", "student_local_epsilon"]
print(json.dumps({k: r.get(k) for k in keys}, indent=2))
for name, key in (("student", "metrics"), ("teacher ensemble", "teacher_ensemble_metrics")):
    m = r.get(key) or {}
    print(f"{name} on the test split: " + ", ".join(f"{k} {m[k]:.3f}" for k in ("tpr", "tnr", "fpr", "roc_auc") if k in m))
PY

step "start Apache on 127.0.0.1:$APACHE_PORT and pate-proxy (block mode) on 127.0.0.1:$PROXY_PORT"
WORK=$(mktemp -d /tmp/pate-demo.XXXXXX)
chmod 755 "$WORK"
CONF=$(scripts/apache-conf.sh "$WORK/apache" "$APACHE_PORT")
cleanup() {
  [ -n "${PROXY_PID:-}" ] && kill -INT "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
  apache2 -f "$CONF" -k stop 2>/dev/null || true
}
trap cleanup EXIT
apache2 -f "$CONF" -k start
cat > "$WORK/proxy.yaml" <<YAML
listen: "127.0.0.1:$PROXY_PORT"
upstream: "127.0.0.1:$APACHE_PORT"
admin_listen: "127.0.0.1:$ADMIN_PORT"
bundle: "$RUN/bundle"
mode: block
audit_log: "$WORK/audit.jsonl"
grace_period_seconds: 1
YAML
"$PROXY" --config "$WORK/proxy.yaml" > "$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
. scripts/proxy-lib.sh
wait_proxy_ready "$ADMIN_PORT" "$PROXY_PID" "$WORK/proxy.log"

# Five normal GET requests and five injection attacks (SQL injection, XSS) from the sample's CSIC
# 2010 test files. The quick model is small and trained with fresh OS randomness, so exactly which
# ones it blocks varies from run to run (configs/quick.yaml says how often).
# The first five distinct GET targets of FILE matching the (awk, case-insensitive) REGEX. awk reads
# its whole input, so no stage of the pipe dies of SIGPIPE (the script runs with pipefail).
targets() {
  grep -a '^GET ' "$1" | sed -e 's#^GET http://localhost:8080##' -e 's# HTTP/1\.[01].*$##' | tr -d '\r' |
    awk -v re="$2" 'BEGIN { IGNORECASE = 1 } tolower($0) ~ tolower(re) && !seen[$0]++ && n < 5 { print; n++ }'
}
for kind in normal attack; do
  if [ "$kind" = normal ]; then
    step "normal requests (data/sample/csic_normalTrafficTest_A_sample.txt)"
    list=$(targets data/sample/csic_normalTrafficTest_A_sample.txt '')
  else
    step "attack requests (data/sample/csic_anomalousTrafficTest_A_sample.txt: SQL injection and XSS)"
    list=$(targets data/sample/csic_anomalousTrafficTest_A_sample.txt 'script|select|drop|waitfor|delete')
  fi
  while IFS= read -r t; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PROXY_PORT$t")
    verdict=passed; [ "$code" = 403 ] && verdict="BLOCKED by pate-proxy"
    [ "$kind" = attack ] && [ "$code" = 403 ] && blocked_attacks=$((${blocked_attacks:-0} + 1))
    printf '%s  %-22s %s\n' "$code" "$verdict" "${t:0:110}"
  done <<< "$list"
done
echo "blocked ${blocked_attacks:-0} of 5 attacks"
step "what reached Apache (its access log: blocked requests never do)"
cat "$WORK/apache/logs/access.log"
step "audit log"
cat "$WORK/audit.jsonl" 2>/dev/null || true
step "metrics (http://127.0.0.1:$ADMIN_PORT/metrics)"
curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep -E '^patewaf_' | grep -v '_bucket'
