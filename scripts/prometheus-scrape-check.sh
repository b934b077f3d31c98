#!/usr/bin/env bash
# Proves the deploy topology of deploy/ on loopback, with the real programs (docs/deploy.md):
#
#   curl ──► pate-proxy 127.0.0.1:P ──► Apache 127.0.0.1:A (deploy/apache/ files, mod_remoteip)
#   curl -k ─TLS─► Apache 127.0.0.1:T (pate-waf-tls-front.conf) ──┘ (through the proxy too)
#                 │ admin 127.0.0.1:M /metrics
#                 ▼
#            Prometheus 127.0.0.1:Q (Debian's prometheus, scrape every 1 s, deploy/prometheus rules)
#
# and checks: Apache logs the client address from X-Forwarded-For; HTTPS through the TLS front
# reaches Apache through the proxy; the proxy starts from the
# systemd deploy config (deploy/systemd/pate-proxy.yaml, addresses and paths moved to a temp dir)
# and gets ready; Prometheus' targets API reports the proxy `up`; a query of
# patewaf_requests_total returns exactly the number of requests sent; the alert rules load and
# evaluate without error; every query of the Grafana dashboard runs without error; patewaf_model_info
# carries ε; SIGHUP reloads (and a corrupt bundle swapped in behind the `current` symlink is
# rejected, the old model keeps serving, and the PateModelReloadFailed alert fires); SIGTERM stops
# the proxy and the target goes down. Every wait is bounded; everything started is stopped on exit.
#
# Needs: apache2, prometheus (Debian packages, scripts/setup.sh installs them), curl, python3,
# target/release/pate-proxy, and a bundle (scripts/deploy-bundle.sh: $PATE_BUNDLE, or one trained
# with target/release/pate-trainer on configs/quick.yaml). KEEP=1 keeps the temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PROXY=${PATE_PROXY:-$ROOT/target/release/pate-proxy}

# fd 3: the real stderr, for failures raised inside output-silenced polls.
exec 3>&2
say() { printf '[scrape-check] %s\n' "$*"; }
die() { printf '[scrape-check] FAIL: %s\n' "$*" >&3; exit 1; }

for tool in apache2 prometheus promtool curl python3; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/setup.sh installs it)"
done
[ -x "$PROXY" ] || die "$PROXY not built: cargo build --release -p proxy"
BUNDLE=$(scripts/deploy-bundle.sh) || die "no model bundle (see scripts/deploy-bundle.sh)"

WORK=$(mktemp -d /tmp/pate-scrape-check.XXXXXX)
chmod 755 "$WORK"   # Apache's children run as www-data and read the docroot below
APACHE_CONF=""; PROXY_PID=""; PROM_PID=""

stop_pid() {  # stop_pid PID SECONDS: SIGTERM, bounded wait, then SIGKILL
  local pid=$1 secs=$2 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < secs * 10; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  [ -n "$PROM_PID" ] && stop_pid "$PROM_PID" 10
  # SIGTERM is the proxy's graceful shutdown (grace_period_seconds, set to 1 below, + 5 s).
  [ -n "$PROXY_PID" ] && stop_pid "$PROXY_PID" 15
  if [ -n "$APACHE_CONF" ] && [ -f "$WORK/apache/logs/httpd.pid" ]; then
    local apid; apid=$(cat "$WORK/apache/logs/httpd.pid" 2>/dev/null || true)
    apache2 -f "$APACHE_CONF" -k stop 2>/dev/null || true
    [ -n "$apid" ] && stop_pid "$apid" 10
  fi
  if [ "$rc" -ne 0 ]; then
    for f in "$WORK/proxy.log" "$WORK/prometheus.log" "$WORK/apache/logs/error.log"; do
      [ -s "$f" ] && { echo "--- last lines of $f" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  if [ "${KEEP:-0}" = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Five free loopback ports, held open together so they differ.
read -r APACHE_PORT PROXY_PORT ADMIN_PORT PROM_PORT TLS_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: retry every 0.2 s
  local secs=$1 what=$2 i; shift 2
  for ((i = 0; i < secs * 5; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "timed out after ${secs}s waiting for $what"
}
json() {  # json URL PYTHON-EXPR: fetch JSON and print the expression over it (bound to `d`)
  curl -fsS --max-time 5 "$1" | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"
}

# --- Apache: the deploy files, moved to a free port and a temp docroot ---------------------------
say "Apache on 127.0.0.1:$APACHE_PORT with deploy/apache/ports.conf and pate-waf-backend.conf, TLS front on 127.0.0.1:$TLS_PORT"
mkdir -p "$WORK/apache/htdocs" "$WORK/apache/logs"
echo '<html><body>pate-waf scrape check upstream</body></html>' > "$WORK/apache/htdocs/index.html"
sed "s/127.0.0.1:8081/127.0.0.1:$APACHE_PORT/" deploy/apache/ports.conf > "$WORK/apache/ports.conf"
sed -e "s/127.0.0.1:8081/127.0.0.1:$APACHE_PORT/" -e "s#/var/www/html#$WORK/apache/htdocs#g" \
  deploy/apache/pate-waf-backend.conf > "$WORK/apache/pate-waf-backend.conf"
# The TLS front (optional HTTPS setup): its :443 and the proxy's :80 moved to the free ports, a
# throwaway self-signed certificate instead of Debian's snakeoil pair.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
  -keyout "$WORK/apache/tls.key" -out "$WORK/apache/tls.crt" 2>/dev/null || die "openssl could not make a test certificate"
sed -e "s/<VirtualHost \*:443>/<VirtualHost 127.0.0.1:$TLS_PORT>/" \
    -e "s#http://127.0.0.1:80/#http://127.0.0.1:$PROXY_PORT/#g" \
    -e "s#^\( *SSLCertificateFile\).*#\1 $WORK/apache/tls.crt#" \
    -e "s#^\( *SSLCertificateKeyFile\).*#\1 $WORK/apache/tls.key#" \
    -e "s#\${APACHE_LOG_DIR}#$WORK/apache/logs#g" \
  deploy/apache/pate-waf-tls-front.conf > "$WORK/apache/pate-waf-tls-front.conf"
APACHE_CONF=$WORK/apache/httpd.conf
{ scripts/deploy-httpd-head.sh "$WORK/apache"; cat <<CONF
TypesConfig /etc/mime.types
DirectoryIndex index.html
$( [ "$(id -u)" = 0 ] && printf 'User www-data\nGroup www-data' )
Include "$WORK/apache/ports.conf"
Include "$WORK/apache/pate-waf-backend.conf"
Listen 127.0.0.1:$TLS_PORT
Include "$WORK/apache/pate-waf-tls-front.conf"
CONF
} > "$APACHE_CONF"
apache2 -t -f "$APACHE_CONF" 2>&1 | grep -q 'Syntax OK' || die "apache2 -t: $(apache2 -t -f "$APACHE_CONF" 2>&1)"
apache2 -f "$APACHE_CONF" -k start
wait_for 10 "Apache on :$APACHE_PORT" curl -fsS --max-time 2 "http://127.0.0.1:$APACHE_PORT/"
# mod_remoteip: a request from loopback (a trusted proxy) is logged with its X-Forwarded-For client.
curl -sS -o /dev/null --max-time 5 -H 'X-Forwarded-For: 203.0.113.7' "http://127.0.0.1:$APACHE_PORT/remoteip-probe"
wait_for 5 "the access log line" grep -q 'remoteip-probe' "$WORK/apache/logs/access.log"
line=$(grep 'remoteip-probe' "$WORK/apache/logs/access.log" | tail -n 1)
case "$line" in
  "203.0.113.7 "*"proxy=127.0.0.1 "*) say "ok: Apache logs the forwarded client: $line" ;;
  *) die "mod_remoteip: expected the line to start with 203.0.113.7 and carry proxy=127.0.0.1, got: $line" ;;
esac

# --- pate-proxy: the systemd deploy config, moved to loopback and a temp dir ---------------------
say "pate-proxy on 127.0.0.1:$PROXY_PORT (admin 127.0.0.1:$ADMIN_PORT), bundle $BUNDLE"
# As in deploy/systemd/README.md: bundles side by side, the config names a `current` symlink.
mkdir -p "$WORK/bundles"
cp -r "$BUNDLE" "$WORK/bundles/good"
ln -s bundles/good "$WORK/current"
sed -e "s#^listen:.*#listen: \"127.0.0.1:$PROXY_PORT\"#" \
    -e "s#^upstream:.*#upstream: \"127.0.0.1:$APACHE_PORT\"#" \
    -e "s#^admin_listen:.*#admin_listen: \"127.0.0.1:$ADMIN_PORT\"#" \
    -e "s#^bundle:.*#bundle: \"$WORK/current\"#" \
    -e "s#^audit_log:.*#audit_log: \"$WORK/audit.jsonl\"#" \
    -e "s#^grace_period_seconds:.*#grace_period_seconds: 1#" \
    deploy/systemd/pate-proxy.yaml > "$WORK/pate-proxy.yaml"
"$PROXY" check-config --config "$WORK/pate-proxy.yaml" || die "pate-proxy check-config rejected the deploy config"
"$PROXY" --config "$WORK/pate-proxy.yaml" > "$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
proxy_ready() { kill -0 "$PROXY_PID" 2>/dev/null || die "pate-proxy exited"; curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/ready"; }
wait_for 60 "pate-proxy /ready" proxy_ready
curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/live" >/dev/null || die "/live is not 200 while /ready is"

# --- Prometheus: Debian's binary, a temp config scraping the admin address every second ---------
say "Prometheus on 127.0.0.1:$PROM_PORT scraping 127.0.0.1:$ADMIN_PORT/metrics"
cat > "$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/deploy/prometheus/pate-waf.rules.yml
scrape_configs:
  - job_name: pate-proxy
    metrics_path: /metrics
    static_configs:
      - targets: ["127.0.0.1:$ADMIN_PORT"]
YAML
promtool check config "$WORK/prometheus.yml" >/dev/null || die "promtool check config on the temp config"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prometheus-data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn > "$WORK/prometheus.log" 2>&1 &
PROM_PID=$!
prom_ready() { kill -0 "$PROM_PID" 2>/dev/null || die "prometheus exited"; curl -fsS --max-time 2 "http://127.0.0.1:$PROM_PORT/-/ready"; }
wait_for 30 "Prometheus /-/ready" prom_ready
P=http://127.0.0.1:$PROM_PORT

# --- traffic through the proxy -------------------------------------------------------------------
NORMAL='/?id=3&nombre=Vino+Rioja&precio=100&cantidad=55&B1=A%F1adir+al+carrito'
ATTACK="/?id=2&nombre=Jam%F3n&precio=85&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25&B1=A%F1adir+al+carrito"
SENT=0
for target in "$NORMAL" "$ATTACK" "$NORMAL"; do
  code=$(curl -sS -o /dev/null --max-time 5 -w '%{http_code}' -H 'X-Forwarded-For: 198.51.100.9' "http://127.0.0.1:$PROXY_PORT$target")
  # deploy/systemd/pate-proxy.yaml is detect mode: everything is forwarded, Apache answers 200.
  [ "$code" = 200 ] || die "GET $target through the proxy: HTTP $code (detect mode forwards everything)"
  SENT=$((SENT + 1))
done
# HTTPS: Apache's TLS front ──► pate-proxy ──► Apache's backend; the proxy's X-Request-Id header
# on the response shows it went through the proxy.
headers=$(curl -sk --max-time 5 -D - -o /dev/null "https://127.0.0.1:$TLS_PORT$NORMAL") || die "HTTPS through the TLS front failed"
case "$headers" in
  "HTTP/1.1 200"*) ;;
  *) die "HTTPS through the TLS front: expected 200, got: $(printf '%s' "$headers" | head -n 1)" ;;
esac
printf '%s' "$headers" | grep -qi '^x-request-id: ' || die "the TLS front's response has no X-Request-Id: it did not go through the proxy"
SENT=$((SENT + 1))
say "ok: HTTPS via deploy/apache/pate-waf-tls-front.conf went through the proxy ($(printf '%s' "$headers" | grep -i '^x-request-id' | tr -d '\r'))"
say "sent $SENT requests through the proxy (all 200: detect mode)"
direct=$(curl -fsS --max-time 5 "http://127.0.0.1:$ADMIN_PORT/metrics" | awk '/^patewaf_requests_total/ {s += $2} END {print s + 0}')
[ "$direct" = "$SENT" ] || die "the proxy's /metrics counts $direct requests, sent $SENT"
# Apache logged the client (not the proxy) and the proxy's request id.
wait_for 5 "Apache's log of the proxied requests" grep -q '^198.51.100.9 .*proxy=127.0.0.1 req=[^-]' "$WORK/apache/logs/access.log"
say "ok: Apache logs the client behind the proxy: $(grep '^198.51.100.9 ' "$WORK/apache/logs/access.log" | tail -n 1)"

# --- what Prometheus sees ------------------------------------------------------------------------
target_up() {
  [ "$(json "$P/api/v1/targets" "','.join(t['health'] for t in d['data']['activeTargets'] if t['labels']['job'] == 'pate-proxy')")" = up ]
}
wait_for 30 "the targets API to report the pate-proxy target up" target_up
say "ok: targets API: job pate-proxy, 127.0.0.1:$ADMIN_PORT, health up"
counted() {
  [ "$(json "$P/api/v1/query?query=sum(patewaf_requests_total)" "int(float(d['data']['result'][0]['value'][1])) if d['data']['result'] else -1")" = "$SENT" ]
}
wait_for 30 "patewaf_requests_total = $SENT in Prometheus" counted
say "ok: /api/v1/query?query=patewaf_requests_total: $(json "$P/api/v1/query?query=patewaf_requests_total" "'; '.join(r['metric']['verdict'] + '=' + r['value'][1] for r in d['data']['result'])")"
info=$(json "$P/api/v1/query?query=patewaf_model_info" "d['data']['result'][0]['metric'] if d['data']['result'] else ''")
case "$info" in *epsilon*) say "ok: patewaf_model_info: $info" ;; *) die "patewaf_model_info has no epsilon label: '$info'" ;; esac
[ "$(json "$P/api/v1/query?query=patewaf_ready" "d['data']['result'][0]['value'][1]")" = 1 ] || die "patewaf_ready is not 1 in Prometheus"

# The alert rules: loaded, evaluated, healthy, none firing on this healthy proxy.
rules_ok() {
  [ "$(json "$P/api/v1/rules" "sum(1 for g in d['data']['groups'] for r in g['rules'] if r['health'] == 'ok')")" -ge 13 ]
}
wait_for 15 "the rules of deploy/prometheus/pate-waf.rules.yml to evaluate" rules_ok
firing=$(json "$P/api/v1/alerts" "','.join(a['labels']['alertname'] for a in d['data']['alerts'] if a['state'] == 'firing')")
[ -z "$firing" ] || die "alerts firing on a healthy proxy: $firing"
say "ok: 13 rules of pate-waf.rules.yml evaluate with health ok; no alert firing"

# Every query of the Grafana dashboard runs (variables set as Grafana would).
python3 - "$P" deploy/grafana/dashboards/pate-waf.json <<'PY' || die "a Grafana dashboard query failed"
import json, sys, urllib.parse, urllib.request
base, path = sys.argv[1], sys.argv[2]
dash = json.load(open(path))
n = 0
for panel in dash["panels"]:
    for t in panel.get("targets", []):
        q = t["expr"].replace("$__rate_interval", "1m").replace('"$instance"', '".*"')
        url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        with urllib.request.urlopen(url, timeout=5) as r:
            d = json.load(r)
        if d.get("status") != "success":
            sys.exit(f"panel {panel['title']!r}: {q}: {d}")
        n += 1
print(f"[scrape-check] ok: {n} Grafana dashboard queries run against Prometheus")
PY

# --- reload and stop, as systemd does them (ExecReload=/bin/kill -HUP, KillSignal=SIGTERM) --------
kill -HUP "$PROXY_PID"
reloaded() {
  [ "$(json "$P/api/v1/query?query=sum(patewaf_model_reloads_total%7Bresult%3D%22ok%22%7D)" "d['data']['result'][0]['value'][1] if d['data']['result'] else ''")" = 1 ]
}
wait_for 30 "patewaf_model_reloads_total{result=\"ok\"} = 1 in Prometheus after SIGHUP" reloaded
curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/ready" >/dev/null || die "not ready after SIGHUP"
say "ok: SIGHUP reloaded the bundle (Prometheus sees patewaf_model_reloads_total{result=\"ok\"} 1), still ready"
# A corrupt bundle (one byte of featurizer.json changed: its sha256 no longer matches bundle.yaml),
# deployed the documented way (switch `current` atomically, reload): rejected, counted, alerted
# (PateModelReloadFailed has no `for:`), and the old model keeps serving.
cp -r "$WORK/bundles/good" "$WORK/bundles/corrupt"
printf ' ' >> "$WORK/bundles/corrupt/featurizer.json"
ln -s bundles/corrupt "$WORK/current.new" && mv -T "$WORK/current.new" "$WORK/current"
kill -HUP "$PROXY_PID"
reload_alert() {
  [ "$(json "$P/api/v1/alerts" "','.join(a['labels']['alertname'] for a in d['data']['alerts'] if a['state'] == 'firing')")" = PateModelReloadFailed ]
}
wait_for 30 "alert PateModelReloadFailed to fire after a corrupt bundle" reload_alert
curl -fsS --max-time 2 "http://127.0.0.1:$ADMIN_PORT/ready" >/dev/null || die "not ready after a rejected reload"
code=$(curl -sS -o /dev/null --max-time 5 -w '%{http_code}' "http://127.0.0.1:$PROXY_PORT$NORMAL")
[ "$code" = 200 ] || die "after a rejected reload: HTTP $code"
say "ok: corrupt bundle rejected on SIGHUP; PateModelReloadFailed fires in Prometheus; the old model still serves"

start=$(date +%s)
kill -TERM "$PROXY_PID"
for ((i = 0; i < 150; i++)); do kill -0 "$PROXY_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PROXY_PID" 2>/dev/null && die "pate-proxy still running 15 s after SIGTERM (grace_period_seconds: 1)"
wait "$PROXY_PID" 2>/dev/null; rc=$?
PROXY_PID=""
say "ok: SIGTERM: pate-proxy exited (status $rc) in $(( $(date +%s) - start )) s with grace_period_seconds: 1"
down() {
  [ "$(json "$P/api/v1/targets" "','.join(t['health'] for t in d['data']['activeTargets'] if t['labels']['job'] == 'pate-proxy')")" = down ]
}
wait_for 30 "the targets API to report the stopped proxy down" down
say "ok: targets API reports the stopped proxy down (what PateProxyDown alerts on)"

say "PASS"
