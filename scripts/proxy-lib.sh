# Sourced by scripts/demo.sh and bench/lib.sh: waiting for a pate-proxy started in the background.
# wait_proxy_ready ADMIN_PORT PID LOG: returns once http://127.0.0.1:ADMIN_PORT/ready answers 200;
# exits 1 with LOG on stderr if the proxy exits first, or after 30 s.
wait_proxy_ready() {
  for _ in $(seq 1 150); do
    curl -fs "http://127.0.0.1:$1/ready" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { cat "$3" >&2; exit 1; }
    sleep 0.2
  done
  echo "pate-proxy not ready after 30 s; its log: $3" >&2
  exit 1
}
