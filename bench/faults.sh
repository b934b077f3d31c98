#!/usr/bin/env bash
# Faults under load (issue 8): wrk drives pate-proxy (mode: block) in front of a loopback Apache
# while something breaks; one PASS/FAIL line per scenario with its numbers, exit status 1 when any
# scenario fails. Loopback only, bounded (about 1.5 minutes), everything started is stopped on exit.
#
#   bench/faults.sh                    # all scenarios
#   SCENARIOS="reload corrupt" bench/faults.sh
#
# Scenarios:
#   apache    Apache stopped for ~4 s and started again during a 12 s load: 502s while it is down,
#             every request answered 200 again afterwards, same proxy process (no restart).
#   reload    20 bundle reloads (POST /reload) during a load of alternating normal and attack
#             requests; the bundle alternates between the fixture (blocks attacks) and a harmless
#             one (blocks nothing): 0 failed requests, 20 ok reloads, and each time the attack's
#             verdict switches (403 <-> 200).
#   corrupt   A bundle with one flipped byte in model.onnx reloaded during load: 422, 0 failed
#             requests, the old model keeps serving (attack still 403), reload error metric +1.
#   scoring   Scoring fails for every request (a bundle whose model width does not match its
#             featurizer, started with start_without_model): on_error open forwards (200) and
#             closed answers 503, every request counted as verdict="error".
#   sigterm   SIGTERM while 16 requests are in flight (upstream takes 1 s each, grace period 3 s):
#             every one of them finishes with 200, then the proxy exits 0.
#
# "Failed requests" = wrk socket errors (connect, read, write, timeout) + answers outside the
# statuses the scenario expects (status counts come from a wrk Lua script).
#
# Needs target/release/pate-proxy, target/release/pate-trainer and the fixture example
# (`cargo build --release -p proxy -p trainer && cargo build --release -p proxy --example
# fixture_bundle`; this script never builds), wrk, apache2, curl, python3.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PROXY=$ROOT/target/release/pate-proxy
TRAINER=$ROOT/target/release/pate-trainer
FIXTURE=$ROOT/target/release/examples/fixture_bundle
export ORT_DYLIB_PATH=${ORT_DYLIB_PATH:-$ROOT/.deps/libonnxruntime.so}
SCENARIOS=${SCENARIOS:-"apache reload corrupt scoring sigterm"}
PORT_BASE=${PORT_BASE:-23480}
APACHE_PORT=$((PORT_BASE + 1)); SLOW_PORT=$((PORT_BASE + 2))
PROXY_PORT=$((PORT_BASE + 3)); ADMIN_PORT=$((PORT_BASE + 4))

for bin in "$PROXY" "$TRAINER" "$FIXTURE"; do
  [ -x "$bin" ] || { echo "$0: $bin is missing (see the header for the build commands)" >&2; exit 2; }
done
for tool in wrk apache2 curl python3; do
  command -v "$tool" >/dev/null || { echo "$0: '$tool' not found" >&2; exit 2; }
done

for port in $APACHE_PORT $SLOW_PORT $PROXY_PORT $ADMIN_PORT; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "$0: port $port is in use; pick other ports with PORT_BASE=N" >&2; exit 2
  fi
done

WORK=$(mktemp -d /tmp/pate-faults.XXXXXX)
chmod 755 "$WORK"
PROXY_PID=""; SLOW_PID=""; APACHE_CONF=""
cleanup() {
  [ -n "$PROXY_PID" ] && kill -INT "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
  [ -n "$SLOW_PID" ] && kill "$SLOW_PID" 2>/dev/null && wait "$SLOW_PID" 2>/dev/null
  [ -n "$APACHE_CONF" ] && apache2 -f "$APACHE_CONF" -k stop 2>/dev/null
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say() { printf '== %s\n' "$*" >&2; }
FAILED=0
result() { # name pass(0/1) text
  if [ "$2" = 0 ]; then echo "PASS $1: $3"; else echo "FAIL $1: $3"; FAILED=1; fi
}

NORMAL='/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&precio=100&cantidad=55&B1=A%F1adir+al+carrito'
ATTACK='/tienda1/publico/anadir.jsp?id=2&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25'

# --- upstreams -----------------------------------------------------------------------------------
APACHE_CONF=$(scripts/apache-conf.sh "$WORK/apache" "$APACHE_PORT" --bench)
apache_up() { apache2 -f "$APACHE_CONF" -k start; for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$APACHE_PORT/" >/dev/null && return 0; sleep 0.1; done; return 1; }
apache_down() {
  local pid; pid=$(cat "$WORK/apache/logs/httpd.pid" 2>/dev/null)
  [ -n "$pid" ] && kill -TERM "$pid"
  for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$APACHE_PORT/" || return 0; sleep 0.1; done
}
apache_up || { echo "$0: Apache did not start" >&2; exit 2; }

# An upstream that takes 1 s per request (for SIGTERM with requests in flight).
python3 - "$SLOW_PORT" > "$WORK/slow.log" 2>&1 <<'PY' &
import http.server, sys, time
class Slow(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(1.0)
        body = b"slow ok\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128  # the default backlog of 5 would delay some of 16 connections
Server(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
PY
SLOW_PID=$!

# --- bundles -------------------------------------------------------------------------------------
"$FIXTURE" "$WORK/bundle" v0 >/dev/null
"$FIXTURE" "$WORK/wrong-width" wrong >/dev/null
# Wrong width: a featurizer of another dimension (fitted on the CSIC sample, K = 500) in place of
# the fixture's (116), with bundle.yaml's hashes updated so only the widths disagree.
"$TRAINER" featurize fit --format csic data/sample/csic_normalTrafficTraining_sample.txt \
  data/sample/csic_anomalousTrafficTest_A_sample.txt --out "$WORK/wrong-width/featurizer.json" >/dev/null
python3 - "$WORK/wrong-width" <<'PY'
import hashlib, json, re, sys
d = sys.argv[1]
fz = open(f"{d}/featurizer.json", "rb").read()
y = open(f"{d}/bundle.yaml").read()
y = re.sub(r"(featurizer.json: )[0-9a-f]{64}", lambda m: m.group(1) + hashlib.sha256(fz).hexdigest(), y)
y = re.sub(r"(featurizer_content_hash: )[0-9a-f]{64}", lambda m: m.group(1) + json.loads(fz)["content_hash"], y)
open(f"{d}/bundle.yaml", "w").write(y)
PY

# --- proxy ---------------------------------------------------------------------------------------
start_proxy() { # upstream_port extra_yaml [bundle_dir]
  cat > "$WORK/proxy.yaml" <<YAML
listen: "127.0.0.1:$PROXY_PORT"
upstream: "127.0.0.1:$1"
admin_listen: "127.0.0.1:$ADMIN_PORT"
bundle: "${3:-$WORK/bundle}"
mode: block
audit_log: "$WORK/audit.jsonl"
log_level: warn
threads: 2
grace_period_seconds: ${GRACE:-1}
upstream_connect_timeout_ms: 500
upgrade_sock: "$WORK/upgrade.sock"
$2
YAML
  "$PROXY" --config "$WORK/proxy.yaml" >> "$WORK/proxy.log" 2>&1 &
  PROXY_PID=$!
  for _ in $(seq 1 150); do
    curl -fs "http://127.0.0.1:$ADMIN_PORT/live" >/dev/null 2>&1 && return 0
    kill -0 "$PROXY_PID" 2>/dev/null || { cat "$WORK/proxy.log" >&2; exit 2; }
    sleep 0.2
  done
  echo "$0: proxy not live" >&2; exit 2
}
stop_proxy() { [ -n "$PROXY_PID" ] && kill -INT "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null; PROXY_PID=""; }
metric() { curl -fs "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v s="$1" 'index($0, s" ") == 1 { print $2; f=1 } END { if (!f) print 0 }'; }
status_of() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PROXY_PORT$1"; }

# wrk with per-status counts (bench/wrk-status-counts.lua): its last line is
# "requests N errors E s200 N s403 N s502 N ... other N p50_ms X p99_ms Y".
load() { # duration connections outfile targets...
  local d=$1 c=$2 out=$3; shift 3
  WRK_TARGETS="$*" wrk -t 1 -c "$c" -d "$d" --timeout 5s -s bench/wrk-status-counts.lua "http://127.0.0.1:$PROXY_PORT" > "$out" 2>&1
}
field() { tail -1 "$1" | awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i+1); exit } } END {}' | grep . || echo 0; }
statuses_except() { # file allowed-statuses... -> number of answers with another status
  local f=$1; shift
  tail -1 "$f" | awk -v ok="$*" 'BEGIN { n = split(ok, a, " "); for (i = 1; i <= n; i++) allow["s" a[i]] = 1 }
    { for (i = 5; i < NF; i += 2) if ($i ~ /^s[0-9]+$/ && !($i in allow)) bad += $(i+1) } END { print bad + 0 }'
}
failed_requests() { # file allowed-statuses... -> answers with another status, plus errors
  local f=$1; shift
  echo $(( $(statuses_except "$f" "$@") + $(field "$f" errors) ))
}
URL_NORMAL=$NORMAL; URL_ATTACK=$ATTACK

# The start of a fault under load: the proxy in front of Apache, then wrk in the background for
# `duration` (8 connections) on the targets into $WORK/<name>.txt. Sets METRIC_BEFORE (the value of
# `metric` before the load began) and WRK_PID.
start_under_load() { # name duration metric targets...
  local name=$1 duration=$2 m=$3; shift 3
  start_proxy "$APACHE_PORT" ""
  METRIC_BEFORE=$(metric "$m")
  load "$duration" 8 "$WORK/$name.txt" "$@" &
  WRK_PID=$!
}

# --- scenarios -----------------------------------------------------------------------------------
scenario_apache() {
  start_under_load apache 12s patewaf_upstream_errors_total "$URL_NORMAL"
  local pid=$PROXY_PID
  sleep 3; apache_down; say "apache stopped"; sleep 4; apache_up; say "apache started"
  wait "$WRK_PID"
  load 3s 8 "$WORK/apache-after.txt" "$URL_NORMAL"
  local s502 up1 after_bad after_n same=1
  s502=$(field "$WORK/apache.txt" s502); up1=$(metric patewaf_upstream_errors_total)
  after_bad=$(failed_requests "$WORK/apache-after.txt" 200)
  after_n=$(field "$WORK/apache-after.txt" requests)
  kill -0 "$pid" 2>/dev/null || same=0
  local ok=1
  [ "$s502" -gt 0 ] && [ "$after_bad" = 0 ] && [ "$after_n" -gt 0 ] && [ "$same" = 1 ] && ok=0
  result apache $ok "during: $(tail -1 "$WORK/apache.txt"); upstream_errors_total +$(echo "$up1 - $METRIC_BEFORE" | bc); after restart: $after_n requests, $after_bad not 200; same proxy pid: $same"
  stop_proxy
}

scenario_reload() {
  "$FIXTURE" "$WORK/bundle" r0 >/dev/null
  start_under_load reload 25s 'patewaf_model_reloads_total{result="ok"}' "$URL_NORMAL" "$URL_ATTACK"
  local switched=0 reloads=0
  sleep 1
  for i in $(seq 1 20); do
    local want
    if [ $((i % 2)) = 1 ]; then "$FIXTURE" "$WORK/bundle" "r$i" harmless >/dev/null; want=200
    else "$FIXTURE" "$WORK/bundle" "r$i" >/dev/null; want=403; fi
    [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$ADMIN_PORT/reload")" = 200 ] && reloads=$((reloads + 1))
    [ "$(status_of "$URL_ATTACK")" = "$want" ] && switched=$((switched + 1))
    sleep 0.9
  done
  wait "$WRK_PID"
  local ok1 bad; ok1=$(metric 'patewaf_model_reloads_total{result="ok"}')
  bad=$(failed_requests "$WORK/reload.txt" 200 403)
  local ok=1
  [ "$bad" = 0 ] && [ "$reloads" = 20 ] && [ "$switched" = 20 ] && ok=0
  result reload $ok "$(tail -1 "$WORK/reload.txt"); failed $bad; reloads answered 200: $reloads/20 (metric +$(echo "$ok1 - $METRIC_BEFORE" | bc)); attack verdict switched as expected: $switched/20"
  stop_proxy
}

scenario_corrupt() {
  "$FIXTURE" "$WORK/bundle" good >/dev/null
  start_under_load corrupt 8s 'patewaf_model_reloads_total{result="error"}' "$URL_NORMAL" "$URL_ATTACK"
  sleep 2
  "$FIXTURE" "$WORK/bundle" bad >/dev/null
  python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=0x40; open(p,'wb').write(b)" "$WORK/bundle/model.onnx"
  local code version attack
  code=$(curl -s -o "$WORK/corrupt-reload.json" -w '%{http_code}' -X POST "http://127.0.0.1:$ADMIN_PORT/reload")
  version=$(curl -fs "http://127.0.0.1:$ADMIN_PORT/ready" | python3 -c 'import json,sys; print(json.load(sys.stdin)["model_version"])')
  attack=$(status_of "$URL_ATTACK")
  wait "$WRK_PID"
  local err1 bad; err1=$(metric 'patewaf_model_reloads_total{result="error"}')
  bad=$(failed_requests "$WORK/corrupt.txt" 200 403)
  local ok=1
  [ "$code" = 422 ] && [ "$version" = good ] && [ "$attack" = 403 ] && [ "$bad" = 0 ] && [ "$(echo "$err1 - $METRIC_BEFORE" | bc)" = 1 ] && ok=0
  result corrupt $ok "reload answered $code ($(head -c 160 "$WORK/corrupt-reload.json")...); serving $version; attack $attack; $(tail -1 "$WORK/corrupt.txt"); failed $bad; reload errors +$(echo "$err1 - $METRIC_BEFORE" | bc)"
  stop_proxy
  "$FIXTURE" "$WORK/bundle" v0 >/dev/null
}

scenario_scoring() {
  for policy in open closed; do
    start_proxy "$APACHE_PORT" "on_error: $policy
start_without_model: true" "$WORK/wrong-width"
    local ready e0 want
    ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/ready")
    e0=$(metric 'patewaf_requests_total{verdict="error"}')
    load 4s 8 "$WORK/scoring-$policy.txt" "$URL_NORMAL" "$URL_ATTACK"
    local e1 n bad; e1=$(metric 'patewaf_requests_total{verdict="error"}'); n=$(field "$WORK/scoring-$policy.txt" requests)
    if [ $policy = open ]; then want=200; else want=503; fi
    bad=$(failed_requests "$WORK/scoring-$policy.txt" $want)
    local counted; counted=$(echo "$e1 - $e0" | bc)
    local ok=1
    # wrk counts the requests it completed; the proxy may have counted a few more that wrk cut
    # off at the end of its run (at most one per connection), never fewer.
    [ "$ready" = 503 ] && [ "$bad" = 0 ] && [ "$n" -gt 0 ] && [ "$(echo "$counted >= $n && $counted <= $n + 8" | bc)" = 1 ] && ok=0
    result "scoring/on_error=$policy" $ok "load error: $(sed 's/\x1b\[[0-9;]*m//g' "$WORK/proxy.log" | grep -o 'dimensions disagree[^"]*says [0-9]*' | tail -1); /ready $ready; $(tail -1 "$WORK/scoring-$policy.txt"); not $want: $bad; verdict=error +$counted"
    stop_proxy
  done
}

scenario_sigterm() {
  GRACE=3 start_proxy "$SLOW_PORT" ""
  local pid=$PROXY_PID
  local curls=()
  for i in $(seq 1 16); do
    curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "http://127.0.0.1:$PROXY_PORT/slow/$i" > "$WORK/inflight-$i.txt" &
    curls+=($!)
  done
  sleep 0.3
  local t0; t0=$(date +%s.%N)
  kill -TERM "$pid"
  wait "${curls[@]}" 2>/dev/null
  local rc=0 waited=0
  while kill -0 "$pid" 2>/dev/null && [ $waited -lt 100 ]; do sleep 0.1; waited=$((waited + 1)); done
  wait "$pid"; rc=$?
  PROXY_PID=""
  local t1; t1=$(date +%s.%N)
  local ok200; ok200=$(cat "$WORK"/inflight-*.txt | grep -c '^200$')
  local ok=1
  [ "$ok200" = 16 ] && [ "$rc" = 0 ] && ok=0
  result sigterm $ok "in-flight requests answered 200: $ok200/16 (others: $(cat "$WORK"/inflight-*.txt | grep -v '^200$' | sort | uniq -c | tr -s ' \n' ' ')); proxy exit status $rc, $(echo "$t1 - $t0" | bc | cut -c1-4) s after SIGTERM"
}

for s in $SCENARIOS; do
  say "scenario $s"
  "scenario_$s"
done
exit $FAILED
