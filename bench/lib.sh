# Shared by the replay benches (bench/crs/run.sh, bench/placements/run.sh); source it after setting
# KEEP (1 = keep the work folder) and with the repository root as the working directory:
#   . bench/lib.sh; bench_workdir NAME
# It makes $WORK, starts nothing until asked (start_apache_and_proxy_config, start_proxy), and on exit
# stops the pate-proxy in $PROXY_PID and the Apache of
# $APACHE_CONF (whichever is set) and removes $WORK unless KEEP=1.
APACHE_CONF=""; PROXY_PID=""; WORK=""
bench_workdir() { # NAME: a fresh $WORK under /tmp, readable by Apache's user
  WORK=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$WORK"
}
stop_apache() {
  if [ -n "$APACHE_CONF" ]; then
    local pidfile; pidfile=$(dirname "$APACHE_CONF")/logs/httpd.pid
    apache2 -f "$APACHE_CONF" -k stop 2>/dev/null || true
    for _ in $(seq 1 50); do [ -f "$pidfile" ] || break; sleep 0.1; done
    APACHE_CONF=""
  fi
}
cleanup() {
  if [ -n "$PROXY_PID" ]; then kill -INT "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; fi
  stop_apache
  [ -n "$WORK" ] || return 0
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
. scripts/proxy-lib.sh   # wait_proxy_ready
# start_apache_and_proxy_config BUNDLE: checks target/release/pate-proxy and BUNDLE, starts an Apache
# upstream (scripts/apache-conf.sh) on a free port and writes $WORK/proxy.yaml for block mode in
# front of it; sets PROXY, BUNDLE_ABS, UP_PORT, PX_PORT, ADMIN_PORT. Append to the YAML, then start_proxy.
start_apache_and_proxy_config() {
  PROXY=$ROOT/target/release/pate-proxy
  [ -x "$PROXY" ] || { echo "$0: $PROXY not found: cargo build --release -p proxy" >&2; exit 1; }
  [ -f "$1/bundle.yaml" ] || { echo "$0: $1/bundle.yaml not found" >&2; exit 1; }
  BUNDLE_ABS=$(cd "$1" && pwd)
  UP_PORT=$(free_port); PX_PORT=$(free_port); ADMIN_PORT=$(free_port)
  APACHE_CONF=$(scripts/apache-conf.sh "$WORK/upstream" "$UP_PORT")
  chmod 755 "$WORK/upstream" "$WORK/upstream/htdocs"
  apache2 -f "$APACHE_CONF" -k start
  cat > "$WORK/proxy.yaml" <<YAML
listen: "127.0.0.1:$PX_PORT"
upstream: "127.0.0.1:$UP_PORT"
admin_listen: "127.0.0.1:$ADMIN_PORT"
bundle: "$BUNDLE_ABS"
mode: block
audit_log: "$WORK/proxy-audit.jsonl"
grace_period_seconds: 1
YAML
}
# start_proxy: pate-proxy on $WORK/proxy.yaml (log $WORK/proxy.log), ready; sets PROXY_PID.
start_proxy() {
  "$PROXY" --config "$WORK/proxy.yaml" > "$WORK/proxy.log" 2>&1 &
  PROXY_PID=$!
  wait_proxy_ready "$ADMIN_PORT" "$PROXY_PID" "$WORK/proxy.log"
}
