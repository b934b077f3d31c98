# Shared by the replay benches (bench/crs/run.sh, bench/placements/run.sh); source it after setting
# KEEP (1 = keep the work folder) and with the repository root as the working directory:
#   . bench/lib.sh; bench_workdir NAME
# It makes $WORK, starts nothing, and on exit stops the pate-proxy in $PROXY_PID and the Apache of
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
