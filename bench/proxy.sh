#!/usr/bin/env bash
# Proxy overhead on loopback, one run, same request mix for every configuration (issue 7, item 2;
# the decomposition of issue 15):
#   direct  wrk -> Apache
#   nginx   wrk -> nginx, a plain reverse proxy (bench/nginx-conf.sh: 1 worker, upstream
#                  keep-alive, the same forwarding headers) -> the same Apache
#   off     wrk -> pate-proxy (mode: off: the same binary and hop, neither featurizes nor scores)
#   detect  wrk -> pate-proxy (mode: detect) -> the same Apache
#   block   wrk -> pate-proxy (mode: block)  -> the same Apache
#   crs     wrk -> Apache + ModSecurity 2 + OWASP CRS, paranoia level 1 (bench/crs/crs-conf.sh)
# So: direct -> nginx is what any proxy hop costs here, nginx -> off what pingora and pate-proxy's
# hop cost beyond nginx, off -> detect what featurizing, scoring and auditing cost.
# Reports, per configuration, the median over ROUNDS of requests/s as a ratio to direct Apache
# (ratio taken within each round), p50/p99 latency (wrk --latency), added p99 over direct, the
# spread (min-max over rounds), the share of non-2xx answers, the CPU time each request cost the
# proxy (pate-proxy or nginx, master and worker) and Apache (utime + stime from /proc over the timed run, divided by the requests served:
# unlike req/s it hardly depends on what else runs on the machine), and pate-proxy's RSS at idle
# and under load (max of `ps -o rss` sampled every 0.5 s during the timed runs).
#
#   bench/proxy.sh                      # defaults below; ~5 min
#   BUNDLE=runs/demo/bundle bench/proxy.sh   # an existing bundle instead of training one
#   DURATION=10s ROUNDS=2 CONNECTIONS="16 1" N_PER_CLASS=200 bench/proxy.sh
#
# CONNECTIONS is a list: each entry is a separate closed-loop load (wrk -c N). 16 saturates the
# server core (throughput, latency with queueing); 1 keeps one request in flight at a time, so
# its p50/p99 differences are the latency the proxy adds per request without queueing.
#
# Request mix: the first N_PER_CLASS distinct GET targets of CSIC 2010 normal traffic
# (data/sample/csic_normalTrafficTest_A_sample.txt, which has 105, then
# csic_normalTrafficTraining_sample.txt) and of anomalous traffic
# (data/sample/csic_anomalousTrafficTest_A_sample.txt), alternating normal/anomalous; every wrk
# connection cycles through the list. `http://localhost:8080` is stripped from the request line.
#
# CPU sharing (the machine has 2 cores): wrk runs alone on CPU WRK_CPU (default 1); every server
# (both Apaches with all their children, both pate-proxy processes) is pinned to CPU SERVER_CPU
# (default 0). So "through the proxy" means proxy + Apache share one core, exactly as direct
# Apache or Apache+CRS have that one core to themselves. Only one configuration is loaded at a
# time; the others sit idle. Other jobs on the machine are not pinned away, hence several rounds.
# PROXY_CPU (default SERVER_CPU) pins the two pate-proxy processes elsewhere, e.g. PROXY_CPU=1
# puts them on wrk's core instead of Apache's.
#
# CONFIGS (default "direct nginx off detect block crs") picks configurations; direct is always run
# (the ratios are to it).
#
# Needs: target/release/pate-trainer and pate-proxy (build once with
# `cargo build --release -p trainer -p proxy`; this script never builds), wrk, apache2, nginx
# (Debian nginx-light), libapache2-mod-security2, modsecurity-crs, python3. Everything it starts
# is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-2}
CONNECTIONS=${CONNECTIONS:-"16 1"}
WRK_THREADS=${WRK_THREADS:-1}
N_PER_CLASS=${N_PER_CLASS:-200}
WRK_CPU=${WRK_CPU:-1}
SERVER_CPU=${SERVER_CPU:-0}
PROXY_CPU=${PROXY_CPU:-$SERVER_CPU}
PROXY_THREADS=${PROXY_THREADS:-1}
SCORER=${SCORER:-auto}   # the proxy's `scorer:` (auto = the default, onnxruntime or native to force one)
PORT_BASE=${PORT_BASE:-18280}
DIRECT_PORT=$((PORT_BASE + 1)); CRS_PORT=$((PORT_BASE + 2))
DETECT_PORT=$((PORT_BASE + 3)); BLOCK_PORT=$((PORT_BASE + 4))
NGINX_PORT=$((PORT_BASE + 5)); OFF_PORT=$((PORT_BASE + 6))
DETECT_ADMIN=$((PORT_BASE + 13)); BLOCK_ADMIN=$((PORT_BASE + 14)); OFF_ADMIN=$((PORT_BASE + 16))
CONFIGS=${CONFIGS:-"direct nginx off detect block crs"}
case " $CONFIGS " in *" direct "*) ;; *) CONFIGS="direct $CONFIGS";; esac
has() { case " $CONFIGS " in *" $1 "*) return 0;; *) return 1;; esac; }
TRAINER=$ROOT/target/release/pate-trainer
PROXY=$ROOT/target/release/pate-proxy
export ORT_DYLIB_PATH=${ORT_DYLIB_PATH:-$ROOT/.deps/libonnxruntime.so}

for bin in "$TRAINER" "$PROXY"; do
  [ -x "$bin" ] || { echo "$0: $bin is missing; build it once with: cargo build --release -p trainer -p proxy" >&2; exit 1; }
done
for tool in wrk apache2 taskset python3 curl; do
  command -v "$tool" >/dev/null || { echo "$0: '$tool' not found (apt-get install wrk apache2 util-linux python3 curl)" >&2; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if has nginx && [ ! -x "$NGINX" ]; then echo "$0: nginx not found (apt-get install nginx-light)" >&2; exit 1; fi

WORK=$(mktemp -d /tmp/pate-bench-proxy.XXXXXX)
chmod 755 "$WORK"
PIDS=()
DIRECT_CONF=""; CRS_CONF=""; NGINX_PID=""
cleanup() {
  for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -n "$NGINX_PID" ] && kill -QUIT "$NGINX_PID" 2>/dev/null || true
  [ -n "$DIRECT_CONF" ] && apache2 -f "$DIRECT_CONF" -k stop 2>/dev/null || true
  [ -n "$CRS_CONF" ] && apache2 -f "$CRS_CONF" -k stop 2>/dev/null || true
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
say() { printf '== %s\n' "$*" >&2; }

say "work dir $WORK; wrk on CPU $WRK_CPU, Apaches on CPU $SERVER_CPU, pate-proxy and nginx on CPU $PROXY_CPU; $ROUNDS rounds x $DURATION per configuration ($CONFIGS), $CONNECTIONS connections"

# --- request mix -------------------------------------------------------------------------------
python3 - "$N_PER_CLASS" \
  data/sample/csic_normalTrafficTest_A_sample.txt:data/sample/csic_normalTrafficTraining_sample.txt \
  data/sample/csic_anomalousTrafficTest_A_sample.txt > "$WORK/targets.txt" <<'PY'
import sys
n = int(sys.argv[1])
def lines(paths):
    for path in paths.split(":"):
        with open(path, encoding="latin-1") as f:
            yield from f
def targets(paths):
    seen, out = set(), []
    for line in lines(paths):
        if not line.startswith("GET "):
            continue
        parts = line.rstrip("\r\n").split(" ")
        if len(parts) != 3:
            continue
        t = parts[1].replace("http://localhost:8080", "", 1)
        if t.startswith("/") and t not in seen:
            seen.add(t); out.append(t)
        if len(out) == n:
            break
    if len(out) < n:
        sys.exit(f"{paths}: only {len(out)} distinct GET targets, wanted {n}")
    return out
normal, anomalous = targets(sys.argv[2]), targets(sys.argv[3])
for a, b in zip(normal, anomalous):
    print(a); print(b)
PY
say "request mix: $(wc -l < "$WORK/targets.txt") targets ($N_PER_CLASS normal + $N_PER_CLASS anomalous, alternating)"
cat > "$WORK/mix.lua" <<'LUA'
-- Cycles through the CSIC targets; each connection starts at a different offset.
local targets = {}
for line in io.lines(os.getenv("PATE_BENCH_TARGETS")) do targets[#targets + 1] = line end
local i = 0
function init(args) i = math.random(#targets) end
function request()
  i = i % #targets + 1
  return wrk.format("GET", targets[i])
end
LUA
export PATE_BENCH_TARGETS=$WORK/targets.txt

# --- servers ------------------------------------------------------------------------------------
# Same Apache settings for direct and CRS: every path answers index.html (CRS's config uses
# FallbackResource), same MPM limits, same access log.
DIRECT_CONF=$(scripts/apache-conf.sh "$WORK/apache" "$DIRECT_PORT" --bench)
taskset -c "$SERVER_CPU" apache2 -f "$DIRECT_CONF" -k start
if has crs; then
  CRS_CONF=$(bench/crs/crs-conf.sh "$WORK/crs" "$CRS_PORT" 1)
  taskset -c "$SERVER_CPU" apache2 -f "$CRS_CONF" -k start
fi
if has nginx; then
  NGINX_CONF=$(bench/nginx-conf.sh "$WORK/nginx" "$NGINX_PORT" "$DIRECT_PORT")
  taskset -c "$PROXY_CPU" "$NGINX" -c "$NGINX_CONF" -p "$WORK/nginx" 2>"$WORK/nginx/logs/start.log" \
    || { cat "$WORK/nginx/logs/start.log" >&2; exit 1; }
  for _ in $(seq 1 50); do [ -s "$WORK/nginx/nginx.pid" ] && break; sleep 0.1; done
  NGINX_PID=$(cat "$WORK/nginx/nginx.pid")
fi

# The bundle: BUNDLE=dir reuses one; otherwise configs/quick.yaml with a fixed seed (TRAIN_SEED), so
# the block rate (the bundle's threshold) is the same from one run of this script to the next.
if [ -n "${BUNDLE:-}" ]; then
  BUNDLE_DIR=$(cd "$BUNDLE" && pwd)
else
  TRAIN_SEED=${TRAIN_SEED:-7}
  sed -e "s#\.\./data/#$ROOT/data/#g" -e "s/^seed: null/seed: $TRAIN_SEED/" configs/quick.yaml > "$WORK/quick.yaml"
  grep -q "^seed: $TRAIN_SEED" "$WORK/quick.yaml" || { echo "$0: could not set the seed in configs/quick.yaml" >&2; exit 1; }
  say "bundle: pate-trainer run --config configs/quick.yaml (seed $TRAIN_SEED)"
  "$TRAINER" run --config "$WORK/quick.yaml" --out "$WORK/run" > "$WORK/trainer.log" 2>&1 \
    || { cat "$WORK/trainer.log" >&2; exit 1; }
  BUNDLE_DIR=$WORK/run/bundle
fi

start_proxy() { # mode port admin_port -> echoes pid
  local mode=$1 port=$2 admin=$3
  cat > "$WORK/proxy-$mode.yaml" <<YAML
listen: "127.0.0.1:$port"
upstream: "127.0.0.1:$DIRECT_PORT"
admin_listen: "127.0.0.1:$admin"
bundle: "$BUNDLE_DIR"
mode: $mode
audit_log: "$WORK/audit-$mode.jsonl"
log_level: warn
threads: $PROXY_THREADS
scorer: $SCORER
grace_period_seconds: 1
upgrade_sock: "$WORK/upgrade-$mode.sock"
${PROXY_EXTRA:-}
YAML
  taskset -c "$PROXY_CPU" "$PROXY" --config "$WORK/proxy-$mode.yaml" > "$WORK/proxy-$mode.log" 2>&1 &
  echo $!
}
DETECT_PID=""; BLOCK_PID=""; OFF_PID=""
has detect && { DETECT_PID=$(start_proxy detect "$DETECT_PORT" "$DETECT_ADMIN"); PIDS+=("$DETECT_PID"); }
has block && { BLOCK_PID=$(start_proxy block "$BLOCK_PORT" "$BLOCK_ADMIN"); PIDS+=("$BLOCK_PID"); }
has off && { OFF_PID=$(start_proxy off "$OFF_PORT" "$OFF_ADMIN"); PIDS+=("$OFF_PID"); }
wait_ready() { # url pid log
  for _ in $(seq 1 150); do
    curl -fs "$1" >/dev/null 2>&1 && return 0
    if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then cat "$3" >&2; exit 1; fi
    sleep 0.2
  done
  echo "$0: $1 not ready after 30 s" >&2; exit 1
}
wait_ready "http://127.0.0.1:$DIRECT_PORT/" "" ""
has crs && wait_ready "http://127.0.0.1:$CRS_PORT/" "" ""
has nginx && wait_ready "http://127.0.0.1:$NGINX_PORT/" "" ""
has detect && wait_ready "http://127.0.0.1:$DETECT_ADMIN/ready" "$DETECT_PID" "$WORK/proxy-detect.log"
has block && wait_ready "http://127.0.0.1:$BLOCK_ADMIN/ready" "$BLOCK_PID" "$WORK/proxy-block.log"
has off && wait_ready "http://127.0.0.1:$OFF_ADMIN/ready" "$OFF_PID" "$WORK/proxy-off.log"
rss() { if [ -n "$1" ]; then ps -o rss= -p "$1" | tr -d ' '; else echo 0; fi; }
IDLE_DETECT=$(rss "$DETECT_PID"); IDLE_BLOCK=$(rss "$BLOCK_PID")
say "pate-proxy RSS at idle (ready, no request yet): detect ${IDLE_DETECT} KiB, block ${IDLE_BLOCK} KiB"

port_of() { case $1 in direct) echo "$DIRECT_PORT";; nginx) echo "$NGINX_PORT";; off) echo "$OFF_PORT";; detect) echo "$DETECT_PORT";; block) echo "$BLOCK_PORT";; crs) echo "$CRS_PORT";; esac; }
# The proxy process(es) of a configuration: pate-proxy, or nginx's master and worker.
pid_of() { case $1 in detect) echo "$DETECT_PID";; block) echo "$BLOCK_PID";; off) echo "$OFF_PID";; nginx) echo "$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')";; *) echo "";; esac; }
# The Apache serving a configuration (crs: the CRS one; otherwise the plain one): its pids.
apache_pids_of() {
  local conf=$DIRECT_CONF; [ "$1" = crs ] && conf=$CRS_CONF
  pgrep -f -- "-f $conf" | tr '\n' ' '
}
# Sum of utime + stime (clock ticks) of the given pids (children that exited are not counted:
# Apache's event MPM keeps its children for the whole run, StartServers 1 / ServerLimit 4).
ticks_of() {
  local sum=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && sum=$((sum + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
  done
  echo "$sum"
}
run_wrk() { # config duration outfile connections
  taskset -c "$WRK_CPU" wrk -t "$WRK_THREADS" -c "$4" -d "$2" --latency -s "$WORK/mix.lua" \
    "http://127.0.0.1:$(port_of "$1")" > "$3" 2>&1
}
say "warm-up: 2 s per configuration"
for c in $CONFIGS; do run_wrk "$c" 2s "$WORK/warmup-$c.txt" 16; done
IDLE2_DETECT=$(rss "$DETECT_PID"); IDLE2_BLOCK=$(rss "$BLOCK_PID")

: > "$WORK/rss.txt"
for r in $(seq 1 "$ROUNDS"); do
 for n in $CONNECTIONS; do
  for c in $CONFIGS; do
    say "round $r/$ROUNDS: $c, $n connections ($DURATION)"
    pid=$(pid_of "$c"); apache=$(apache_pids_of "$c")
    # shellcheck disable=SC2086 # word splitting of the pid lists is intended
    before="$(ticks_of $pid) $(ticks_of $apache)"
    if [ -n "$pid" ] && [ "$c" != nginx ]; then
      ( while kill -0 "$pid" 2>/dev/null; do echo "$c $(rss "$pid")" >> "$WORK/rss.txt"; sleep 0.5; done ) &
      SAMPLER=$!
      run_wrk "$c" "$DURATION" "$WORK/wrk-$r-$n-$c.txt" "$n"
      kill "$SAMPLER" 2>/dev/null || true; wait "$SAMPLER" 2>/dev/null || true
    else
      run_wrk "$c" "$DURATION" "$WORK/wrk-$r-$n-$c.txt" "$n"
    fi
    # shellcheck disable=SC2086
    echo "$before $(ticks_of $pid) $(ticks_of $apache) $(getconf CLK_TCK)" > "$WORK/cpu-$r-$n-$c.txt"
  done
 done
done
IDLE3_DETECT=$(rss "$DETECT_PID"); IDLE3_BLOCK=$(rss "$BLOCK_PID")
# In-proxy scoring time (featurize + ONNX Runtime) over every request the proxy scored, warm-up
# included: patewaf_scoring_duration_seconds_sum / _count from the admin endpoint.
for mode in detect block; do
  admin=$DETECT_ADMIN; [ "$mode" = block ] && admin=$BLOCK_ADMIN
  : > "$WORK/metrics-$mode.txt"
  has "$mode" && { curl -fs "http://127.0.0.1:$admin/metrics" > "$WORK/metrics-$mode.txt" || true; }
done

# --- summary ------------------------------------------------------------------------------------
python3 - "$WORK" "$ROUNDS" "$CONFIGS" "$CONNECTIONS" <<PY
import re, statistics, sys
work, rounds, configs, conns = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}
def parse(path):
    text = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    lat = {p: float(v) * unit[u] for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)}
    total = int(re.search(r"(\d+) requests in", text).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errs = re.search(r"Socket errors: (.*)", text)
    return {"rps": rps, "p50": lat["50"], "p99": lat["99"], "non2xx": (int(m.group(1)) if m else 0) / total,
            "errors": errs.group(1) if errs else "", "total": total}
def cpu_per_request(path, total):
    """µs of CPU per request of (pate-proxy, Apache) over one timed run."""
    p0, a0, p1, a1, tick = (int(x) for x in open(path).read().split())
    return (p1 - p0) / tick / total * 1e6, (a1 - a0) / tick / total * 1e6
def med(xs): return statistics.median(xs)
def spread(xs, fmt): return fmt.format(min(xs)) + "–" + fmt.format(max(xs)) if len(xs) > 1 else "n/a"
names = {"direct": "Apache direct", "nginx": "nginx (plain reverse proxy) → Apache", "off": "pate-proxy mode off (no WAF) → Apache",
         "detect": "pate-proxy detect → Apache", "block": "pate-proxy block → Apache", "crs": "Apache + ModSecurity 2 + CRS PL1"}
for n in conns:
    res = {c: [parse(f"{work}/wrk-{r}-{n}-{c}.txt") for r in range(1, rounds + 1)] for c in configs}
    print(f"\n{n} connection(s), {rounds} round(s):\n")
    print("| configuration | req/s ratio to direct (median; min–max) | req/s (median) | p50 ms | p99 ms (median; min–max) | added p50 / p99 ms | non-2xx |")
    print("|---|---|---|---|---|---|---|")
    for c in configs:
        ratios = [res[c][i]["rps"] / res["direct"][i]["rps"] for i in range(rounds)]
        add50 = [res[c][i]["p50"] - res["direct"][i]["p50"] for i in range(rounds)]
        add99 = [res[c][i]["p99"] - res["direct"][i]["p99"] for i in range(rounds)]
        rr = [x["rps"] for x in res[c]]; p50 = [x["p50"] for x in res[c]]; p99 = [x["p99"] for x in res[c]]
        n2 = [x["non2xx"] for x in res[c]]
        print(f"| {names[c]} | {med(ratios):.3f} ({spread(ratios, '{:.3f}')}) | {med(rr):.0f} | {med(p50):.3f} | "
              f"{med(p99):.3f} ({spread(p99, '{:.3f}')}) | {med(add50):+.3f} / {med(add99):+.3f} | {med(n2):.1%} |")
    for c in configs:
        e = [x["errors"] for x in res[c] if x["errors"]]
        if e: print(f"\nwrk socket errors for {c}: {e}")
    if "nginx" in configs:
        print("\nThroughput ratios to nginx in the same round (median; min–max):\n")
        print("| configuration | req/s ratio to nginx |")
        print("|---|---|")
        for c in configs:
            if c in ("direct", "nginx"): continue
            ratios = [res[c][i]["rps"] / res["nginx"][i]["rps"] for i in range(rounds)]
            print(f"| {names[c]} | {med(ratios):.3f} ({spread(ratios, '{:.3f}')}) |")
    print(f"\nCPU time per request ({n} connection(s); median over rounds, min–max), µs:\n")
    print("| configuration | proxy (pate-proxy or nginx) | Apache | total | total / direct |")
    print("|---|---|---|---|---|")
    cpu = {c: [cpu_per_request(f"{work}/cpu-{r}-{n}-{c}.txt", res[c][r - 1]["total"]) for r in range(1, rounds + 1)]
           for c in configs}
    for c in configs:
        px = [p for p, _ in cpu[c]]; ap = [a for _, a in cpu[c]]; tot = [p + a for p, a in cpu[c]]
        rel = [(cpu[c][i][0] + cpu[c][i][1]) / (cpu["direct"][i][0] + cpu["direct"][i][1]) for i in range(rounds)]
        proxy_cell = f"{med(px):.1f} ({spread(px, '{:.1f}')})" if c in ("nginx", "off", "detect", "block") else "—"
        print(f"| {names[c]} | {proxy_cell} | {med(ap):.0f} ({spread(ap, '{:.0f}')}) | {med(tot):.0f} | {med(rel):.2f} |")
rss = {}
for line in open(f"{work}/rss.txt"):
    parts = line.split()
    if len(parts) == 2 and parts[1].isdigit():
        rss.setdefault(parts[0], []).append(int(parts[1]))
print()
print("| pate-proxy | requests scored | mean scoring time (featurize + score), µs |")
print("|---|---|---|")
for mode in ("detect", "block"):
    if mode not in configs: continue
    vals = {}
    for line in open(f"{work}/metrics-{mode}.txt"):
        m = re.match(r"patewaf_scoring_duration_seconds_(sum|count)(?:\{[^}]*\})? ([0-9.e+-]+)$", line.strip())
        if m: vals[m.group(1)] = vals.get(m.group(1), 0.0) + float(m.group(2))
    if vals.get("count"):
        print(f"| {mode} | {int(vals['count'])} | {vals['sum'] / vals['count'] * 1e6:.1f} |")
    else:
        print(f"| {mode} | n/a | n/a (no patewaf_scoring_duration_seconds in /metrics) |")
print()
print("| pate-proxy RSS (MiB) | idle, ready before any request | idle after warm-up | max under load | idle after the runs |")
print("|---|---|---|---|---|")
for c, i1, i2, i3 in (("detect", "$IDLE_DETECT", "$IDLE2_DETECT", "$IDLE3_DETECT"), ("block", "$IDLE_BLOCK", "$IDLE2_BLOCK", "$IDLE3_BLOCK")):
    if c not in configs: continue
    peak = max(rss.get(c, [0]))
    print(f"| {c} | {int(i1)/1024:.1f} | {int(i2)/1024:.1f} | {peak/1024:.1f} | {int(i3)/1024:.1f} |")
PY
