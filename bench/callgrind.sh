#!/usr/bin/env bash
# User-space instructions per request of one proxy under load, counted by valgrind's callgrind
# (deterministic, unlike timings on this shared machine), with the functions that cost them.
#   bench/callgrind.sh off|detect|block|nginx BUNDLE_DIR [OUT_DIR]
# Starts a loopback Apache (scripts/apache-conf.sh --bench) and the proxy under callgrind
# (pate-proxy with `mode:` and `threads: 1`, or nginx from bench/nginx-conf.sh with one worker
# and no master), warms it up with 3 s of `wrk -c16` (the CSIC GET mix of bench/proxy.sh), zeroes
# the counters, runs 4 s more, dumps, and divides by the requests served in those 4 s (the
# proxy's patewaf_requests_total, or wrk's count for nginx). Prints the total per request, the
# split by shared object, the top functions by self cost, and for pate-proxy the inclusive cost
# of its own callbacks. Kernel time (syscalls, loopback TCP) is not counted: compare with the
# CPU time per request of bench/proxy.sh for that.
# Needs valgrind, wrk, apache2, nginx, python3, curl and target/release/pate-proxy.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WHAT=$1; BUNDLE=$(cd "$2" && pwd); OUT=${3:-$(mktemp -d /tmp/pate-callgrind.XXXXXX)}
mkdir -p "$OUT"; chmod 755 "$OUT"
export ORT_DYLIB_PATH=${ORT_DYLIB_PATH:-$ROOT/.deps/libonnxruntime.so}
PORT_BASE=${PORT_BASE:-18380}
AP=$((PORT_BASE + 1)); PX=$((PORT_BASE + 3)); AD=$((PORT_BASE + 13))
VPID=""; APCONF=""
cleanup() {
  [ -n "$VPID" ] && kill -INT "$VPID" 2>/dev/null && wait "$VPID" 2>/dev/null || true
  [ -n "$APCONF" ] && apache2 -f "$APCONF" -k stop 2>/dev/null || true
}
trap cleanup EXIT

# The request mix of bench/proxy.sh (100 normal + 100 anomalous CSIC GET targets).
python3 - > "$OUT/targets.txt" <<'PY'
def targets(path, n=100):
    seen, out = set(), []
    for line in open(path, encoding="latin-1"):
        parts = line.rstrip("\r\n").split(" ")
        if line.startswith("GET ") and len(parts) == 3:
            t = parts[1].replace("http://localhost:8080", "", 1)
            if t.startswith("/") and t not in seen:
                seen.add(t); out.append(t)
        if len(out) == n: break
    return out
for a, b in zip(targets("data/sample/csic_normalTrafficTest_A_sample.txt"), targets("data/sample/csic_anomalousTrafficTest_A_sample.txt")):
    print(a); print(b)
PY
cat > "$OUT/mix.lua" <<'LUA'
local targets = {}
for line in io.lines(os.getenv("PATE_BENCH_TARGETS")) do targets[#targets + 1] = line end
local i = 0
function init(args) i = math.random(#targets) end
function request() i = i % #targets + 1; return wrk.format("GET", targets[i]) end
LUA
export PATE_BENCH_TARGETS=$OUT/targets.txt

APCONF=$(scripts/apache-conf.sh "$OUT/apache" "$AP" --bench)
apache2 -f "$APCONF" -k start
CG=(valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file="$OUT/callgrind.out")
if [ "$WHAT" = nginx ]; then
  conf=$(bench/nginx-conf.sh "$OUT/nginx" "$PX" "$AP")
  "${CG[@]}" nginx -c "$conf" -p "$OUT/nginx" -g 'daemon off; master_process off;' > "$OUT/proxy.log" 2>&1 &
  VPID=$!
  for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PX/" >/dev/null 2>&1 && break; sleep 0.3; done
else
  cat > "$OUT/proxy.yaml" <<YAML
listen: "127.0.0.1:$PX"
upstream: "127.0.0.1:$AP"
admin_listen: "127.0.0.1:$AD"
bundle: "$BUNDLE"
mode: $WHAT
audit_log: "$OUT/audit.jsonl"
log_level: warn
threads: 1
grace_period_seconds: 1
upgrade_sock: "$OUT/upgrade.sock"
${PROXY_EXTRA:-}
YAML
  "${CG[@]}" "$ROOT/target/release/pate-proxy" --config "$OUT/proxy.yaml" > "$OUT/proxy.log" 2>&1 &
  VPID=$!
  for _ in $(seq 1 300); do curl -fs "http://127.0.0.1:$AD/ready" >/dev/null 2>&1 && break; sleep 1; done
fi
served() { curl -fs "http://127.0.0.1:$AD/metrics" | awk '/^patewaf_requests_total/{s+=$2} END{print s}'; }
wrk -t1 -c16 -d3s -s "$OUT/mix.lua" "http://127.0.0.1:$PX" > /dev/null 2>&1
[ "$WHAT" = nginx ] || R0=$(served)
callgrind_control -z "$VPID" > /dev/null
wrk -t1 -c16 -d4s -s "$OUT/mix.lua" "http://127.0.0.1:$PX" > "$OUT/wrk.txt" 2>&1
callgrind_control -d "$VPID" > /dev/null
if [ "$WHAT" = nginx ]; then
  REQUESTS=$(awk '/requests in/{print $1}' "$OUT/wrk.txt")
else
  REQUESTS=$(( $(served) - R0 ))
fi
python3 - "$OUT/callgrind.out.1" "$REQUESTS" "$WHAT" <<'PY'
import collections, sys
path, n, what = sys.argv[1], float(sys.argv[2]), sys.argv[3]
self_cost, call_cost, obj = collections.Counter(), collections.Counter(), {}
ob = fn = cfn = None; after_call = False
for line in open(path, errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("ob="): ob = line[3:]
    elif line.startswith("fn="): fn = line[3:]; obj[fn] = ob
    elif line.startswith("cfn="): cfn = line[4:]
    elif line.startswith("calls="): after_call = True
    elif line and (line[0].isdigit() or line[0] in "+-*"):
        parts = line.split()
        if len(parts) < 2: continue
        if after_call:
            after_call = False
            if cfn != fn: call_cost[fn] += int(parts[1])
        else:
            self_cost[fn] += int(parts[1])
total = sum(self_cost.values())
print(f"{what}: {int(n)} requests, {total / n:,.0f} instructions per request (user space)")
by_object = collections.Counter()
for f, c in self_cost.items(): by_object[(obj.get(f) or "?").split("/")[-1]] += c
for o, c in by_object.most_common(6): print(f"  {c / n:9,.0f}  {100 * c / total:5.1f}%  {o}")
print("top functions by self cost, per request:")
for f, c in self_cost.most_common(25): print(f"  {c / n:9,.0f}  {100 * c / total:5.1f}%  {f[:140]}")
if what != "nginx":
    print("pate-proxy's own code, inclusive, per request:")
    mine = [(self_cost[f] + call_cost[f], f) for f in set(self_cost) | set(call_cost)
            if ("WafProxy as" in f and "{{closure}}" in f) or f.startswith(("proxy::model::ServingModel::score", "proxy::filter::WafProxy::audit",
                "bundle::runtime::Scorer::score_sparse", "featurizer::Featurizer::transform ", "proxy::config::Config::route_for",
                "<proxy::slowloris::HeadDeadlineStream as tokio::io::async_read"))
            or f == "featurizer::Featurizer::transform"]
    for c, f in sorted(mine, reverse=True): print(f"  {c / n:9,.0f}  {f[:140]}")
PY
echo "callgrind output: $OUT/callgrind.out.1"
