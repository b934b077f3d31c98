#!/usr/bin/env bash
# Soak (issue 8): steady wrk load through pate-proxy (mode: block, fixture bundle or BUNDLE=dir)
# in front of a loopback Apache for --minutes N (default 10). Every 10 s it samples the proxy's RSS
# (VmRSS) and open file descriptors (/proc/PID/fd); at the end it reports the failed requests,
# the RSS slope (least squares, KiB/min, over all samples and after the first minute of warm-up),
# and the fd growth, with a PASS/FAIL line: 0 failed requests, RSS growth after warm-up below
# SLOPE_MAX KiB/min (default 64; a shrinking RSS passes), fd count at the end not above the first
# sample + 4, the proxy still running.
#
#   bench/soak.sh                 # 10 minutes
#   bench/soak.sh --minutes 2
#   RATE=200 CONNECTIONS=4 bench/soak.sh    # about RATE requests/s in all (wrk with a delay)
#
# Steady, not saturating: each of CONNECTIONS wrk connections waits CONNECTIONS*1000/RATE ms
# between requests (wrk's `delay()`), so the load is about RATE req/s whatever else runs on the
# machine. The mix alternates a normal and an attack request (200 / 403). Samples go to
# $OUT/samples.tsv (OUT defaults to a temp dir that is kept when KEEP_WORK=1).
#
# Needs target/release/pate-proxy and target/release/examples/fixture_bundle (see bench/faults.sh
# for the build commands), wrk, apache2, curl, python3.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MINUTES=10
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) MINUTES=$2; shift 2 ;;
    *) echo "usage: $0 [--minutes N]" >&2; exit 2 ;;
  esac
done
RATE=${RATE:-200}
CONNECTIONS=${CONNECTIONS:-4}
SLOPE_MAX=${SLOPE_MAX:-64}
PORT_BASE=${PORT_BASE:-23580}
APACHE_PORT=$((PORT_BASE + 1)); PROXY_PORT=$((PORT_BASE + 3)); ADMIN_PORT=$((PORT_BASE + 4))
PROXY=$ROOT/target/release/pate-proxy
FIXTURE=$ROOT/target/release/examples/fixture_bundle
export ORT_DYLIB_PATH=${ORT_DYLIB_PATH:-$ROOT/.deps/libonnxruntime.so}
for bin in "$PROXY" "$FIXTURE"; do
  [ -x "$bin" ] || { echo "$0: $bin is missing (see bench/faults.sh for the build commands)" >&2; exit 2; }
done
for port in $APACHE_PORT $PROXY_PORT $ADMIN_PORT; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "$0: port $port is in use; pick other ports with PORT_BASE=N" >&2; exit 2
  fi
done

WORK=$(mktemp -d /tmp/pate-soak.XXXXXX)
chmod 755 "$WORK"
OUT=${OUT:-$WORK}
PROXY_PID=""; WRK_PID=""; APACHE_CONF=""
cleanup() {
  [ -n "$WRK_PID" ] && kill "$WRK_PID" 2>/dev/null
  [ -n "$PROXY_PID" ] && kill -INT "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
  [ -n "$APACHE_CONF" ] && apache2 -f "$APACHE_CONF" -k stop 2>/dev/null
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

APACHE_CONF=$(scripts/apache-conf.sh "$WORK/apache" "$APACHE_PORT" --bench)
apache2 -f "$APACHE_CONF" -k start || exit 2

if [ -n "${BUNDLE:-}" ]; then BUNDLE_DIR=$(cd "$BUNDLE" && pwd); else "$FIXTURE" "$WORK/bundle" soak >/dev/null; BUNDLE_DIR=$WORK/bundle; fi
cat > "$WORK/proxy.yaml" <<YAML
listen: "127.0.0.1:$PROXY_PORT"
upstream: "127.0.0.1:$APACHE_PORT"
admin_listen: "127.0.0.1:$ADMIN_PORT"
bundle: "$BUNDLE_DIR"
mode: block
audit_log: "$WORK/audit.jsonl"
log_level: warn
threads: 2
upgrade_sock: "$WORK/upgrade.sock"
YAML
"$PROXY" --config "$WORK/proxy.yaml" > "$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$ADMIN_PORT/ready" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fs "http://127.0.0.1:$ADMIN_PORT/ready" >/dev/null || { cat "$WORK/proxy.log" >&2; exit 2; }

DELAY_MS=$((CONNECTIONS * 1000 / RATE))
SOAK_TARGETS="/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&precio=100&cantidad=55&B1=A%F1adir+al+carrito \
/tienda1/publico/anadir.jsp?id=2&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25"

SECONDS_TOTAL=$((MINUTES * 60))
echo "== soak: $MINUTES min, ~$RATE req/s over $CONNECTIONS connections (delay ${DELAY_MS} ms), proxy pid $PROXY_PID, samples every 10 s -> $OUT/samples.tsv" >&2
WRK_TARGETS=$SOAK_TARGETS WRK_DELAY_MS=$DELAY_MS wrk -t 1 -c "$CONNECTIONS" -d "${SECONDS_TOTAL}s" --timeout 5s \
  -s bench/wrk-status-counts.lua "http://127.0.0.1:$PROXY_PORT" > "$WORK/wrk.txt" 2>&1 &
WRK_PID=$!
printf 'seconds\trss_kib\tfds\n' > "$OUT/samples.tsv"
start=$(date +%s)
while kill -0 "$WRK_PID" 2>/dev/null; do
  now=$(( $(date +%s) - start ))
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$PROXY_PID/status" 2>/dev/null)
  fds=$(ls "/proc/$PROXY_PID/fd" 2>/dev/null | wc -l)
  [ -n "$rss" ] && printf '%s\t%s\t%s\n' "$now" "$rss" "$fds" >> "$OUT/samples.tsv"
  sleep 10
done
wait "$WRK_PID"; WRK_PID=""
alive=1; kill -0 "$PROXY_PID" 2>/dev/null || alive=0
summary=$(tail -1 "$WORK/wrk.txt")

python3 - "$OUT/samples.tsv" "$summary" "$SLOPE_MAX" "$alive" <<'PY'
import sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n")[1:] if l]
t = [int(r[0]) for r in rows]; rss = [int(r[1]) for r in rows]; fds = [int(r[2]) for r in rows]
def slope(xs, ys):
    # least squares, KiB per minute
    n = len(xs)
    if n < 2: return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float("nan")
warm = [i for i, x in enumerate(t) if x >= 60]
s_all = slope(t, rss)
s_warm = slope([t[i] for i in warm], [rss[i] for i in warm]) if len(warm) >= 2 else s_all
f = dict(zip(sys.argv[2].split()[0::2], sys.argv[2].split()[1::2]))
failed = int(f.get("errors", 1)) + int(f.get("other", 1))
slope_max = float(sys.argv[3])
ok = failed == 0 and s_warm < slope_max and fds[-1] <= fds[0] + 4 and sys.argv[4] == "1"
print(f"{'PASS' if ok else 'FAIL'} soak: {len(t)} samples over {t[-1]} s; {sys.argv[2]}; failed {failed}; "
      f"RSS {rss[0]} -> {rss[-1]} KiB (min {min(rss)}, max {max(rss)}), slope {s_all:+.1f} KiB/min overall, "
      f"{s_warm:+.1f} KiB/min after the first minute; fds {fds[0]} -> {fds[-1]} (min {min(fds)}, max {max(fds)})")
sys.exit(0 if ok else 1)
PY
