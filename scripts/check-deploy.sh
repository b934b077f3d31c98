#!/usr/bin/env bash
# Validates every file under deploy/ as far as this machine allows (no Docker daemon, no running
# systemd, no Kubernetes cluster), then runs the loopback Prometheus scrape check:
#
#   promtool      check config / check rules / test rules (alert unit tests)
#   apache2 -t    the host site files, the container's httpd.conf, the Kubernetes ConfigMap's one
#   systemd       systemd-analyze verify (must print nothing) and security --offline exposure
#   pate-proxy    check-config on every proxy YAML in deploy/ (against a real bundle)
#   Grafana       dashboard JSON: panels, metric names, PromQL syntax (via promtool)
#   compose       compose-spec schema (check-jsonschema) and that every bind-mounted file exists
#   Dockerfiles   hadolint
#   Kubernetes    kubernetes-validate --strict (1.31 and 1.37 schemas) and cross-references
#                 (ports, probes, ConfigMap keys, volumes, Indexed Job shard count)
#   docs          every file in deploy/ is named in docs/deploy.md
#   scrape        scripts/prometheus-scrape-check.sh (Apache + pate-proxy + Prometheus, loopback)
#
# Prints one line per check and ends with "N passed, N failed"; exits 1 if any failed.
# PATE_SKIP_SCRAPE_CHECK=1 leaves the scrape check out (it needs pate-proxy and a bundle).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
TMP=$(mktemp -d /tmp/pate-check-deploy.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
TOOLS=$ROOT/.deps/deploy-tools
PROXY=${PATE_PROXY:-$ROOT/target/release/pate-proxy}
passed=0; failed=0; skipped=0; failed_names=()
skip() { skipped=$((skipped + 1)); printf 'skip  %s\n' "$1"; }

# check NAME COMMAND...: runs it quietly; prints its output only when it fails.
check() {
  local name=$1; shift
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1)); printf 'ok    %s\n' "$name"
    [ -n "${VERBOSE:-}" ] && [ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/      /'
  else
    failed=$((failed + 1)); failed_names+=("$name"); printf 'FAIL  %s\n' "$name"
    printf '%s\n' "$out" | tail -n 40 | sed 's/^/      /'
  fi
  return 0
}

# --- validators from PyPI (deploy/check-tools.txt), in a venv of their own ----------------------
ensure_tools() {
  local want; want=$(sha256sum deploy/check-tools.txt | cut -d' ' -f1)
  if [ "$(cat "$TOOLS/.installed" 2>/dev/null)" != "$want" ]; then
    echo "[check-deploy] installing validators into .deps/deploy-tools (deploy/check-tools.txt)" >&2
    python3 -m venv "$TOOLS" && "$TOOLS/bin/pip" install -q -r deploy/check-tools.txt && echo "$want" > "$TOOLS/.installed"
  fi
}
ensure_tools || echo "[check-deploy] could not install the validators; their checks will fail" >&2
PY=$TOOLS/bin/python

# --- Prometheus -------------------------------------------------------------------------------
check "promtool check config deploy/prometheus/prometheus.yml" promtool check config deploy/prometheus/prometheus.yml
check "promtool check rules deploy/prometheus/pate-waf.rules.yml" promtool check rules deploy/prometheus/pate-waf.rules.yml
check "promtool test rules deploy/prometheus/pate-waf.rules.test.yml (alert unit tests)" \
  promtool test rules deploy/prometheus/pate-waf.rules.test.yml
compose_prometheus() {  # the compose file mounts both files into one directory: do the same
  mkdir -p "$TMP/compose-prom"
  cp deploy/container/prometheus.yml deploy/prometheus/pate-waf.rules.yml "$TMP/compose-prom/"
  promtool check config "$TMP/compose-prom/prometheus.yml"
}
check "promtool check config deploy/container/prometheus.yml (with the rules beside it, as compose mounts them)" compose_prometheus

# --- Apache -------------------------------------------------------------------------------------
M=/usr/lib/apache2/modules
apache_host_files() {
  mkdir -p "$TMP/apache-host"
  { "$ROOT/scripts/deploy-httpd-head.sh" "$TMP/apache-host"; cat <<CONF
Include "$ROOT/deploy/apache/ports.conf"
Listen 443
Include "$ROOT/deploy/apache/pate-waf-backend.conf"
Include "$ROOT/deploy/apache/pate-waf-tls-front.conf"
CONF
  } > "$TMP/apache-host/httpd.conf"
  apache2 -t -f "$TMP/apache-host/httpd.conf"
}
check "apache2 -t: deploy/apache/{ports.conf,pate-waf-backend.conf,pate-waf-tls-front.conf}" apache_host_files

# apache_image_conf FILE: an httpd.conf written for the httpd:2.4 image, checked with Debian's
# apache2: ServerRoot moved to a temp dir whose modules/ is Debian's, and the LoadModule lines of
# modules Debian compiles in (log_config, unixd...) dropped.
apache_image_conf() {
  local src=$1 root; root=$(mktemp -d "$TMP/httpd-image.XXXX")
  mkdir -p "$root/conf" "$root/htdocs"
  ln -s "$M" "$root/modules"
  cp /etc/mime.types "$root/conf/mime.types"
  local builtin; builtin=$(apache2 -l | sed -n 's/^ *mod_\(.*\)\.c$/\1_module/p' | paste -sd'|')
  sed -E -e "s#/usr/local/apache2#$root#g" -e "/^[[:space:]]*LoadModule ($builtin) /d" "$src" > "$root/conf/httpd.conf"
  apache2 -t -f "$root/conf/httpd.conf"
}
check "apache2 -t: deploy/container/apache-httpd.conf (httpd:2.4 image layout)" apache_image_conf deploy/container/apache-httpd.conf
configmap_key() {  # configmap_key FILE KEY OUT: extracts data.KEY of the ConfigMap in FILE
  "$PY" - "$1" "$2" "$3" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
cm = next(d for d in docs if d["kind"] == "ConfigMap")
open(sys.argv[3], "w").write(cm["data"][sys.argv[2]])
PY
}
k8s_httpd() {
  configmap_key deploy/kubernetes/proxy/configmap.yaml httpd.conf "$TMP/k8s-httpd.conf" && apache_image_conf "$TMP/k8s-httpd.conf"
}
check "apache2 -t: httpd.conf in deploy/kubernetes/proxy/configmap.yaml" k8s_httpd

# --- systemd ----------------------------------------------------------------------------------
systemd_verify() {
  command -v systemd-analyze >/dev/null || { echo "systemd-analyze not found (Debian package systemd)"; return 1; }
  # verify checks that ExecStart's binary exists: point it at a stand-in executable.
  mkdir -p "$TMP/systemd"
  local stand_in="$TMP/systemd/pate-proxy"; cp /bin/true "$stand_in"
  sed "s#/usr/local/bin/pate-proxy#$stand_in#g" deploy/systemd/pate-proxy.service > "$TMP/systemd/pate-proxy.service"
  local out; out=$(systemd-analyze verify "$TMP/systemd/pate-proxy.service" 2>&1) || { echo "$out"; return 1; }
  # Unknown keys and bad values are warnings with exit status 0: clean means no output at all.
  [ -z "$out" ] || { echo "$out"; return 1; }
  systemd-analyze security --offline=yes "$TMP/systemd/pate-proxy.service" 2>&1 | grep 'Overall exposure'
}
check "systemd-analyze verify deploy/systemd/pate-proxy.service (clean)" systemd_verify
if command -v logrotate >/dev/null; then
  # Exit status 1 on an unknown directive or a bad value.
  check "logrotate --debug deploy/systemd/pate-proxy.logrotate" \
    logrotate --debug --state "$TMP/logrotate.state" deploy/systemd/pate-proxy.logrotate
else
  skip "logrotate --debug deploy/systemd/pate-proxy.logrotate (logrotate is not installed)"
fi

# --- the proxy YAMLs --------------------------------------------------------------------------
proxy_yamls() {
  configmap_key deploy/kubernetes/proxy/configmap.yaml pate-proxy.yaml "$TMP/k8s-pate-proxy.yaml" || return 1
  local files=(deploy/systemd/pate-proxy.yaml deploy/container/pate-proxy.yaml "$TMP/k8s-pate-proxy.yaml")
  # The contract keys (ARCHITECTURE.md) are present in each.
  "$PY" - "${files[@]}" <<'PY' || return 1
import sys, yaml
for f in sys.argv[1:]:
    c = yaml.safe_load(open(f))
    missing = [k for k in ("listen", "upstream", "admin_listen", "bundle", "mode", "audit_log") if k not in c]
    if missing: sys.exit(f"{f}: missing contract keys {missing}")
    if c["mode"] not in ("detect", "block"): sys.exit(f"{f}: mode {c['mode']!r}")
    if c["upstream"] != "127.0.0.1:8081": sys.exit(f"{f}: upstream {c['upstream']!r}, expected Apache on 127.0.0.1:8081")
    print(f"{f}: contract keys present, mode {c['mode']}")
PY
  [ -x "$PROXY" ] || { echo "target/release/pate-proxy not built: cargo build --release -p proxy"; return 1; }
  local bundle; bundle=$(scripts/deploy-bundle.sh) || return 1
  for f in "${files[@]}"; do
    sed -e "s#^\( *\)bundle:.*#\1bundle: \"$bundle\"#" -e "s#^\( *\)audit_log:.*#\1audit_log: \"$TMP/audit.jsonl\"#" \
      "$f" > "$TMP/check-config.yaml"
    "$PROXY" check-config --config "$TMP/check-config.yaml" || { echo "in $f"; return 1; }
  done
}
check "pate-proxy check-config: deploy/systemd, deploy/container and the Kubernetes ConfigMap's YAML" proxy_yamls

# The unit's privilege model, reproduced without systemd: an unprivileged user (nobody, for
# DynamicUser), only CAP_NET_BIND_SERVICE in the effective/ambient/bounding sets, no_new_privs,
# PR_SET_MDWE (what MemoryDenyWriteExecute=yes enforces: no writable+executable memory) and, where
# Debian's python3-seccomp is installed, a seccomp filter allowing only systemd's @system-service
# system calls (expanded by systemd-analyze) that KILLS on any other call (stricter than the unit,
# which answers EPERM). The proxy must bind a port below 1024, load the bundle with ONNX Runtime,
# score a request, reload on SIGHUP and exit on SIGTERM.
SANDBOX_PY=/usr/bin/python3   # an interpreter nobody may run (pyenv's lives under /root)
if [ -x "$SANDBOX_PY" ] && "$SANDBOX_PY" -c 'import seccomp' 2>/dev/null && command -v systemd-analyze >/dev/null; then
  SANDBOX_SECCOMP=1; sandbox_what="no W+X memory, seccomp @system-service"
else
  SANDBOX_SECCOMP=0; sandbox_what="no W+X memory (seccomp part needs python3-seccomp)"
fi
hardened_run() {
  [ "$(id -u)" = 0 ] || { echo "needs root (to drop to nobody)"; return 1; }
  [ -x "$PROXY" ] || { echo "target/release/pate-proxy not built"; return 1; }
  [ -x "$SANDBOX_PY" ] || { echo "$SANDBOX_PY not found"; return 1; }
  local bundle; bundle=$(scripts/deploy-bundle.sh) || return 1
  local d="$TMP/hardened"; mkdir -p "$d/log"; chmod 755 "$TMP" "$d"; chown nobody "$d/log"
  cp -r "$bundle" "$d/bundle"; cp "$PROXY" "$d/pate-proxy"; cp -L .deps/libonnxruntime.so "$d/libonnxruntime.so"
  local port admin; read -r port admin < <(python3 -c '
import socket
for p in range(800, 1024):
    s = socket.socket()
    try: s.bind(("127.0.0.1", p)); break
    except OSError: continue
a = socket.socket(); a.bind(("127.0.0.1", 0)); print(p, a.getsockname()[1])')
  sed -e "s#^listen:.*#listen: \"127.0.0.1:$port\"#" -e "s#^admin_listen:.*#admin_listen: \"127.0.0.1:$admin\"#" \
      -e "s#^bundle:.*#bundle: \"$d/bundle\"#" -e "s#^audit_log:.*#audit_log: \"$d/log/audit.jsonl\"#" \
      -e "s#^grace_period_seconds:.*#grace_period_seconds: 1#" deploy/systemd/pate-proxy.yaml > "$d/pate-proxy.yaml"
  # The system calls of @system-service, expanded here (systemd-analyze needs no sandbox).
  if [ "$SANDBOX_SECCOMP" = 1 ]; then
    "$SANDBOX_PY" - > "$d/syscalls.txt" <<'PY' || return 1
import subprocess
def members(group, seen):
    out = subprocess.run(["systemd-analyze", "syscall-filter", group], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines()[1:]:
        t = line.strip()
        if t.startswith("@") and t not in seen:
            seen.add(t); names |= members(t, seen)
        elif t and not t.startswith(("#", "@")):
            names.add(t)
    return names
print("\n".join(sorted(members("@system-service", set()))))
PY
  fi
  cat > "$d/sandbox.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN (inherited across exec)
    sys.exit(f"prctl(PR_SET_MDWE) failed: errno {ctypes.get_errno()}")
syscalls = os.environ.pop("SANDBOX_SYSCALLS", "")
if syscalls:
    import seccomp
    f = seccomp.SyscallFilter(defaction=seccomp.KILL_PROCESS)
    n = 0
    for name in open(syscalls).read().split():
        try:
            f.add_rule(seccomp.ALLOW, name); n += 1
        except Exception:
            pass  # not a system call on this architecture
    f.load()
    print(f"sandbox: seccomp allows {n} system calls (@system-service), kills on any other", file=sys.stderr)
os.execv(sys.argv[1], sys.argv[1:])
PY
  chmod -R a+rX "$d"
  local syscalls_env=""; [ "$SANDBOX_SECCOMP" = 1 ] && syscalls_env="$d/syscalls.txt"
  SANDBOX_SYSCALLS="$syscalls_env" ORT_DYLIB_PATH="$d/libonnxruntime.so" setpriv --reuid=nobody --regid=nogroup --clear-groups \
    --inh-caps=-all,+net_bind_service --ambient-caps=-all,+net_bind_service \
    --bounding-set=-all,+net_bind_service --no-new-privs \
    "$SANDBOX_PY" "$d/sandbox.py" "$d/pate-proxy" --config "$d/pate-proxy.yaml" > "$d/proxy.log" 2>&1 &
  local pid=$! i ok=1
  for ((i = 0; i < 150; i++)); do
    curl -fsS --max-time 2 "http://127.0.0.1:$admin/ready" >/dev/null 2>&1 && { ok=0; break; }
    kill -0 "$pid" 2>/dev/null || break; sleep 0.2
  done
  metric() { curl -fsS --max-time 2 "http://127.0.0.1:$admin/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
  if [ "$ok" = 0 ]; then
    grep -E '^Cap(Eff|Amb|Bnd)|^NoNewPrivs|^Seccomp:' "/proc/$pid/status" | tr -s '\t\n' '  '; echo
    echo "user $(ps -o user= -p "$pid"), listening on 127.0.0.1:$port"
    # No upstream here: the request is scored through ONNX Runtime, then answered 502.
    curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$port/?id=1%27+UNION+SELECT+password+FROM+users--"
    [ "$(metric patewaf_score_count)" = 1 ] || { echo "patewaf_score_count is not 1: the request was not scored"; ok=1; }
    kill -HUP "$pid"
    for ((i = 0; i < 50; i++)); do [ "$(metric 'patewaf_model_reloads_total{result="ok"}')" = 1 ] && break; sleep 0.2; done
    [ "$(metric 'patewaf_model_reloads_total{result="ok"}')" = 1 ] || { echo "SIGHUP did not reload"; ok=1; }
    [ "$ok" = 0 ] && echo "scored a request (patewaf_score_count 1), reloaded on SIGHUP"
  fi
  kill -TERM "$pid" 2>/dev/null
  local rc=0; wait "$pid" 2>/dev/null || rc=$?
  # 159 = 128 + SIGSYS: the seccomp filter killed it.
  [ "$rc" = 0 ] || { echo "exit status $rc after SIGTERM"; ok=1; }
  [ "$ok" = 0 ] || { tail -n 20 "$d/proxy.log"; return 1; }
  grep -m1 'sandbox:' "$d/proxy.log" || true
}
check "pate-proxy as nobody with only CAP_NET_BIND_SERVICE, no_new_privs, $sandbox_what: binds <1024, scores, reloads, stops" hardened_run

# --- Grafana ----------------------------------------------------------------------------------
grafana_dashboard() {
  "$PY" - deploy/grafana/dashboards/pate-waf.json "$TMP/dashboard-rules.yml" <<'PY' || return 1
import json, sys, yaml
dash = json.load(open(sys.argv[1]))
assert dash["uid"] and dash["title"], "uid and title"
panels = {p["title"]: p for p in dash["panels"]}
def exprs(title):
    return " ".join(t["expr"] for t in panels[title]["targets"])
expected = {  # panel -> (type, text its queries must contain)
    "Requests by verdict": ("timeseries", "sum by (verdict) (rate(patewaf_requests_total"),
    "Block rate": ("stat", 'verdict=~"block|flag"'),
    "Block rate over time": ("timeseries", 'verdict=~"block|flag"'),
    "Score distribution": ("heatmap", "patewaf_score_bucket"),
    "Scoring latency (p50, p99)": ("timeseries", "histogram_quantile(0.99, sum by (le) (rate(patewaf_scoring_duration_seconds_bucket"),
    "Model (version, ε, δ, mechanism)": ("table", "patewaf_model_info"),
    "Model reloads": ("timeseries", "patewaf_model_reloads_total"),
    "Upstream (Apache) errors / s": ("timeseries", "patewaf_upstream_errors_total"),
    "Ready": ("stat", "patewaf_ready"),
    "Shadow model agreement rate": ("timeseries", 'active_verdict="allow", shadow_verdict="allow"'),
    "Requests to paths the bundle's site never served (share)": ("timeseries", "patewaf_unseen_path_requests_total"),
}
for title, (typ, text) in expected.items():
    assert title in panels, f"missing panel {title!r}"
    assert panels[title]["type"] == typ, f"{title}: type {panels[title]['type']}"
    assert text in exprs(title), f"{title}: queries lack {text!r}"
assert "histogram_quantile(0.5," in exprs("Scoring latency (p50, p99)"), "p50"
assert "epsilon" in exprs("Model (version, ε, δ, mechanism)"), "ε column"
assert panels["Score distribution"]["targets"][0]["format"] == "heatmap"
ids = [p["id"] for p in dash["panels"]]
assert len(ids) == len(set(ids)), "duplicate panel ids"
names = {"patewaf_requests_total", "patewaf_score_bucket", "patewaf_scoring_duration_seconds_bucket",
         "patewaf_model_info", "patewaf_model_reloads_total", "patewaf_upstream_errors_total", "patewaf_ready",
         "patewaf_shadow_requests_total", "patewaf_unseen_path_requests_total", "patewaf_score_count"}
import re
used = set(re.findall(r"patewaf_[a-z_]+", " ".join(t["expr"] for p in dash["panels"] for t in p["targets"])))
assert used <= names, f"unknown metric names {used - names} (ARCHITECTURE.md, proxy metrics)"
# Every query as a recording rule, so promtool parses the PromQL (variables as Grafana sets them).
rules = [{"record": f"dashboard:panel{p['id']}:{t['refId']}",
          "expr": t["expr"].replace("$__rate_interval", "1m").replace('"$instance"', '".*"')}
         for p in dash["panels"] for t in p["targets"]]
yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, open(sys.argv[2], "w"))
print(f"{len(panels)} panels, {len(rules)} queries")
PY
  promtool check rules "$TMP/dashboard-rules.yml"
}
check "Grafana dashboard: JSON, the expected panels, metric names, PromQL syntax" grafana_dashboard
grafana_provisioning() {
  "$PY" - <<'PY'
import yaml
ds = yaml.safe_load(open("deploy/grafana/provisioning/datasources/pate-waf.yaml"))
assert ds["apiVersion"] == 1 and ds["datasources"][0]["type"] == "prometheus", "datasource"
dp = yaml.safe_load(open("deploy/grafana/provisioning/dashboards/pate-waf.yaml"))
path = dp["providers"][0]["options"]["path"]
compose = yaml.safe_load(open("deploy/compose.yaml"))
mounts = compose["services"]["grafana"]["volumes"]
assert f"./grafana/dashboards:{path}:ro" in mounts, f"compose does not mount the dashboards at {path}"
assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in mounts
print("provisioning path", path, "matches the compose mount")
PY
}
check "Grafana provisioning files match the compose mounts" grafana_provisioning

# --- containers ---------------------------------------------------------------------------------
check "compose.yaml against the compose specification (check-jsonschema)" \
  "$TOOLS/bin/check-jsonschema" --builtin-schema vendor.compose-spec deploy/compose.yaml
compose_mounts() {
  "$PY" - <<'PY'
import os, yaml
c = yaml.safe_load(open("deploy/compose.yaml"))
for name, svc in c["services"].items():
    for v in svc.get("volumes", []):
        src = v.split(":")[0]
        if src.startswith("./") or src.startswith("../"):
            assert os.path.exists(os.path.join("deploy", src)), f"{name}: {src} does not exist"
    if "build" in svc:
        df = os.path.join("deploy", svc["build"]["context"], svc["build"]["dockerfile"])
        assert os.path.exists(df), f"{name}: {df} missing"
assert c["services"]["pate-proxy"]["network_mode"] == "service:apache"
print("bind mounts and build files exist")
PY
}
check "compose.yaml: every bind-mounted file and the Dockerfile exist" compose_mounts
check "hadolint deploy/container/Dockerfile" "$TOOLS/bin/hadolint" deploy/container/Dockerfile
check "hadolint deploy/container/Dockerfile.trainer" "$TOOLS/bin/hadolint" deploy/container/Dockerfile.trainer

# The runtime stage of deploy/container/Dockerfile, without Docker: its instructions (RUN, COPY,
# ENV, USER, ENTRYPOINT, CMD) applied to a debootstrap'ed Debian trixie minbase root file system
# (what debian:trixie-slim is made from), with the build stage's outputs taken from this build
# (target/release/pate-proxy, .deps/libonnxruntime.so); then the image's entrypoint runs as its
# USER in a network namespace of its own, with a bundle mounted as compose does, and must get
# ready and answer a request through to an upstream. Opt-in (a Debian download of ~50 MB, once):
# PATE_CHECK_CONTAINER_ROOTFS=1; the root file system is cached in .deps/rootfs-trixie.
container_runtime_stage() {
  [ "$(id -u)" = 0 ] || { echo "needs root (chroot, unshare)"; return 1; }
  [ -x "$PROXY" ] || { echo "target/release/pate-proxy not built"; return 1; }
  local cache=$ROOT/.deps/rootfs-trixie
  if [ ! -x "$cache/bin/sh" ]; then
    command -v debootstrap >/dev/null || { echo "debootstrap not installed (apt-get install debootstrap)"; return 1; }
    rm -rf "$cache.tmp"
    debootstrap --variant=minbase trixie "$cache.tmp" http://deb.debian.org/debian > "$TMP/debootstrap.log" 2>&1 \
      || { tail -n 20 "$TMP/debootstrap.log"; return 1; }
    mv "$cache.tmp" "$cache"
  fi
  local bundle; bundle=$(scripts/deploy-bundle.sh) || return 1
  local rootfs=$TMP/rootfs; cp -a "$cache" "$rootfs"
  "$PY" - deploy/container/Dockerfile "$rootfs" "$PROXY" "$ROOT/.deps/libonnxruntime.so" "$TMP/container-run.sh" <<'PY' || return 1
import json, os, re, shlex, shutil, subprocess, sys
dockerfile, rootfs, proxy, ort, run_sh = sys.argv[1:]
build_outputs = {"/opt/pate-proxy": proxy, "/opt/libonnxruntime.so": ort}
lines, cur = [], ""
for raw in open(dockerfile):
    line = raw.rstrip("\n")
    if not cur and (line.lstrip().startswith("#") or not line.strip()):
        continue
    if line.lstrip().startswith("#"):
        continue
    if line.endswith("\\"):
        cur += line[:-1] + " "; continue
    lines.append(cur + line); cur = ""
stage = [l for l in lines]
last_from = max(i for i, l in enumerate(stage) if l.split()[0].upper() == "FROM")
env, user, entrypoint, cmd = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, "0:0", [], []
for l in stage[last_from + 1:]:
    op, _, rest = l.strip().partition(" ")
    op = op.upper(); rest = rest.strip()
    if op == "RUN":
        subprocess.run(["chroot", rootfs, "/bin/sh", "-c", rest], check=True, env=env)
        print("RUN", rest[:70], "...")
    elif op == "COPY":
        args = shlex.split(rest)
        frm = next((a.split("=", 1)[1] for a in args if a.startswith("--from=")), None)
        src, dst = [a for a in args if not a.startswith("--")]
        src = build_outputs[src] if frm else src
        target = os.path.join(rootfs, dst.lstrip("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(src, target)
        print("COPY", src, "->", dst)
    elif op == "ENV":
        for kv in shlex.split(rest):
            k, v = kv.split("=", 1); env[k] = v
    elif op == "USER":
        user = rest
    elif op == "ENTRYPOINT":
        entrypoint = json.loads(rest)
    elif op == "CMD":
        cmd = json.loads(rest)
    elif op in ("VOLUME", "EXPOSE", "STOPSIGNAL", "LABEL", "WORKDIR", "ARG", "SHELL"):
        pass
    else:
        sys.exit(f"unsupported instruction in the runtime stage: {op}")
uid, gid = (user.split(":") + [user])[:2]
argv = entrypoint + cmd
envs = " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
open(run_sh, "w").write(
    f"exec chroot --userspec={uid}:{gid} {shlex.quote(rootfs)} /usr/bin/env -i {envs} "
    + " ".join(shlex.quote(a) for a in argv) + "\n")
print("USER", user, "ENTRYPOINT+CMD", argv)
PY
  mkdir -p "$rootfs/var/lib/pate-waf/bundle"; cp -r "$bundle"/. "$rootfs/var/lib/pate-waf/bundle/"
  mkdir -p "$rootfs/var/www"; echo 'upstream ok' > "$rootfs/var/www/index.html"
  # In a network namespace of its own: the image's 0.0.0.0:8080 / :9191 cannot clash with the host.
  unshare --net bash -euo pipefail -c '
    rootfs=$1 run=$2
    ip link set lo up 2>/dev/null || /sbin/ip link set lo up
    python3 -m http.server --bind 127.0.0.1 --directory "$rootfs/var/www" 8081 >/dev/null 2>&1 &
    up=$!
    for i in $(seq 1 50); do curl -fsS --max-time 1 http://127.0.0.1:8081/index.html >/dev/null 2>&1 && break; sleep 0.2; done
    bash "$run" > "$rootfs/../container.log" 2>&1 &
    pid=$!
    trap "kill $pid $up 2>/dev/null || true" EXIT
    for i in $(seq 1 150); do curl -fsS --max-time 2 http://127.0.0.1:9191/ready >/dev/null 2>&1 && break; kill -0 $pid || break; sleep 0.2; done
    curl -fsS --max-time 2 http://127.0.0.1:9191/ready || { tail -n 20 "$rootfs/../container.log"; exit 1; }; echo
    body=$(curl -fsS --max-time 5 "http://127.0.0.1:8080/index.html?id=1%27+UNION+SELECT+password+FROM+users--")
    [ "$body" = "upstream ok" ] || { echo "through the proxy: $body"; exit 1; }
    echo "process user: $(ps -o user=,uid= -p $(pgrep -P $pid || echo $pid) | head -n 1)"
    curl -fsS http://127.0.0.1:9191/metrics | grep -E "^patewaf_requests_total" | grep -v " 0$"
    ls -l "$rootfs/var/log/pate-waf/"
  ' _ "$rootfs" "$TMP/container-run.sh"
}
if [ "${PATE_CHECK_CONTAINER_ROOTFS:-0}" = 1 ]; then
  check "deploy/container/Dockerfile runtime stage replayed on a Debian trixie minbase rootfs: ready, forwards" container_runtime_stage
else
  skip "deploy/container/Dockerfile runtime stage on a trixie rootfs (opt-in: PATE_CHECK_CONTAINER_ROOTFS=1)"
fi

# --- Kubernetes -------------------------------------------------------------------------------
K8S=(deploy/kubernetes/namespace.yaml deploy/kubernetes/proxy/*.yaml deploy/kubernetes/training/*.yaml)
for v in 1.31.0 1.37.0; do
  check "kubernetes-validate --strict -k $v deploy/kubernetes/**.yaml" \
    "$TOOLS/bin/kubernetes-validate" --strict --quiet -k "$v" "${K8S[@]}"
done
k8s_references() {
  "$PY" - "${K8S[@]}" <<'PY'
import re, sys, yaml
objs = [d for f in sys.argv[1:] for d in yaml.safe_load_all(open(f)) if d]
by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
ns = {o["metadata"].get("namespace") for o in objs if o["kind"] != "Namespace"}
assert ns == {"pate-waf"}, f"namespaces {ns}"
def pod_checks(kind, name, spec):
    for vol in spec.get("volumes", []):
        if "configMap" in vol: assert ("ConfigMap", vol["configMap"]["name"]) in by, f"{name}: ConfigMap {vol['configMap']['name']}"
        if "persistentVolumeClaim" in vol:
            assert ("PersistentVolumeClaim", vol["persistentVolumeClaim"]["claimName"]) in by, f"{name}: PVC {vol['persistentVolumeClaim']['claimName']}"
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for c in spec["containers"]:
        ports = {p["name"] for p in c.get("ports", [])}
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            if probe in c and "httpGet" in c[probe]:
                assert c[probe]["httpGet"]["port"] in ports, f"{name}/{c['name']}: {probe} port"
        for m in c.get("volumeMounts", []):
            assert m["name"] in vols, f"{name}/{c['name']}: volume {m['name']}"
            v = vols[m["name"]]
            if "subPath" in m and "configMap" in v:
                data = by[("ConfigMap", v["configMap"]["name"])]["data"]
                assert m["subPath"] in data, f"{name}/{c['name']}: ConfigMap key {m['subPath']}"
dep = by[("Deployment", "pate-waf")]
spec = dep["spec"]["template"]["spec"]
pod_checks("Deployment", "pate-waf", spec)
assert dep["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
proxy = next(c for c in spec["containers"] if c["name"] == "pate-proxy")
assert proxy["readinessProbe"]["httpGet"]["path"] == "/ready" and proxy["livenessProbe"]["httpGet"]["path"] == "/live"
cfg = yaml.safe_load(by[("ConfigMap", "pate-waf-config")]["data"]["pate-proxy.yaml"])
admin_port = int(cfg["admin_listen"].rsplit(":", 1)[1]); http_port = int(cfg["listen"].rsplit(":", 1)[1])
ports = {p["name"]: p["containerPort"] for p in proxy["ports"]}
assert ports == {"http": http_port, "admin": admin_port}, f"container ports {ports} vs proxy YAML {cfg['listen']} {cfg['admin_listen']}"
assert cfg["bundle"].startswith(next(m["mountPath"] for m in proxy["volumeMounts"] if m["name"] == "bundles"))
assert spec["terminationGracePeriodSeconds"] > cfg["grace_period_seconds"] + 5
svc = by[("Service", "pate-waf")]
assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
assert svc["spec"]["ports"][0]["targetPort"] in ports
# The Indexed Job: one pod per shard, `--shard $(JOB_COMPLETION_INDEX)/N` with N = completions = teachers.count.
job = by[("Job", "pate-teachers")]
assert job["spec"]["completionMode"] == "Indexed"
jspec = job["spec"]["template"]["spec"]; pod_checks("Job", "pate-teachers", jspec)
c = jspec["containers"][0]; args = c["args"]
assert args[0] == "teach"
shard = args[args.index("--shard") + 1]
m = re.fullmatch(r"\$\(JOB_COMPLETION_INDEX\)/(\d+)", shard); assert m, f"--shard {shard}"
assert "JOB_COMPLETION_INDEX" in {e["name"] for e in c["env"]}, "$(VAR) expands only declared env vars"
train = yaml.safe_load(by[("ConfigMap", "pate-trainer-config")]["data"]["train.yaml"])
n = int(m.group(1))
assert n == job["spec"]["completions"] == train["teachers"]["count"], f"N={n}, completions={job['spec']['completions']}, teachers.count={train['teachers']['count']}"
student = by[("Job", "pate-student")]; pod_checks("Job", "pate-student", student["spec"]["template"]["spec"])
print(f"{len(objs)} objects; Indexed Job with {n} shards; probes, ports, ConfigMap keys and volumes resolve")
PY
}
check "Kubernetes cross-references (ports, probes, ConfigMap keys, volumes, shard count)" k8s_references
student_script() {
  configmap_key deploy/kubernetes/training/configmap.yaml student.sh "$TMP/student.sh" && sh -n "$TMP/student.sh"
}
check "sh -n on student.sh in deploy/kubernetes/training/configmap.yaml" student_script

# train.yaml of the training ConfigMap: pate-trainer parses and validates the whole config before
# it reads any data, so a valid config stops at the first dataset under /data (which exists only
# in the cluster), and an invalid one stops with "invalid configuration" naming the key.
trainer_config() {
  local trainer=$ROOT/target/release/pate-trainer
  [ -x "$trainer" ] || { echo "target/release/pate-trainer not built: cargo build --release -p trainer"; return 1; }
  configmap_key deploy/kubernetes/training/configmap.yaml train.yaml "$TMP/k8s-train.yaml" || return 1
  local out; out=$("$trainer" run --config "$TMP/k8s-train.yaml" --out "$TMP/k8s-train-run" 2>&1) && { echo "$out"; echo "unexpected success"; return 1; }
  case "$out" in
    *"invalid configuration"*) echo "$out"; return 1 ;;
    *"/data/"*"No such file"*) echo "config accepted; stopped at: $(printf '%s\n' "$out" | grep -m1 '/data/')" ;;
    *) echo "$out"; echo "expected to stop at a missing /data file"; return 1 ;;
  esac
}
check "pate-trainer accepts train.yaml of deploy/kubernetes/training/configmap.yaml" trainer_config
train_yaml_in_step() {
  "$PY" - <<'PY'
import yaml
cm = next(d for d in yaml.safe_load_all(open("deploy/kubernetes/training/configmap.yaml")) if d)
k8s = yaml.safe_load(cm["data"]["train.yaml"]); repo = yaml.safe_load(open("configs/train.yaml"))
def sources(c):  # every dataset source of a config: the split's and the student's public examples'
    return c["split"]["simulate_from"] + ((c["student"].get("public_examples") or {}).get("files") or [])
paths = [d.pop("path") for d in sources(k8s)], [d.pop("path") for d in sources(repo)]
# The public User-Agent list: data/public in the repository, /opt/pate/public in the trainer image.
for key, section in (("known_browsers", "featurizer"), ("user_agents", "student")):
    def holder(c):
        return c["featurizer"] if section == "featurizer" else (c["student"].get("public_examples") or {})
    k, r = holder(k8s).pop(key, None), holder(repo).pop(key, None)
    assert (k is None) == (r is None), (key, k, r)
    assert k is None or (k.startswith("/opt/pate/public/") and r.endswith("data/public/" + k.rsplit("/", 1)[1])), (key, k, r)
assert all(p.startswith("/data/") for p in paths[0]), paths[0]
assert [p.split("/data/", 1)[1] for p in paths[0]] == [p.split("datasets/", 1)[1] for p in paths[1]], paths
diff = sorted(k for k in set(k8s) | set(repo) if k8s.get(k) != repo.get(k))
assert not diff, f"the ConfigMap's train.yaml differs from configs/train.yaml in: {diff}"
print("same settings as configs/train.yaml; datasets under /data")
PY
}
check "train.yaml of the training ConfigMap = configs/train.yaml with the datasets under /data" train_yaml_in_step

# The training flow of deploy/kubernetes/training/ on this machine, with the manifests' own
# commands: every index of the Indexed Job runs the container's command and args (with
# $(JOB_COMPLETION_INDEX) expanded as Kubernetes does, four pods at a time), then the student Job
# runs student.sh; paths are moved to a temp dir and the config is configs/quick.yaml (the cluster's
# train.yaml needs the full data) with train.yaml's mechanism: its teachers linear and its privacy
# and aggregation model averaging (at σ 1: ten teachers, a flow check, not a detector). The student
# Job must keep every teacher the shards trained, release their mean model, and publish a bundle
# behind `current` that pate-proxy accepts.
k8s_training_flow() {
  local trainer=$ROOT/target/release/pate-trainer
  [ -x "$trainer" ] || { echo "target/release/pate-trainer not built"; return 1; }
  [ -x "$PROXY" ] || { echo "target/release/pate-proxy not built"; return 1; }
  local d=$TMP/k8s-flow; mkdir -p "$d/run" "$d/bundles"
  sed "s#path: \.\./#path: $ROOT/#" configs/quick.yaml > "$d/quick.yaml"
  "$PY" - "$d/quick.yaml" configs/train.yaml "$d/train.yaml" <<'PY' || return 1
import sys, yaml
quick, train = (yaml.safe_load(open(p)) for p in sys.argv[1:3])
# train.yaml states no privacy section: the default mechanism, model_average (σ 4.1, clip 75).
assert "privacy" not in train, "train.yaml states a mechanism now: update this check"
quick["teachers"]["training"]["hidden"] = []
quick["privacy"] = {"mechanism": "model_average", "sigma": 1.0, "clip_norm": 75.0}
quick["aggregation"] = train["aggregation"]
yaml.safe_dump(quick, open(sys.argv[3], "w"))
PY
  local n; n=$("$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["teachers"]["count"])' "$d/train.yaml") || return 1
  # One line per index: the pod's argv, separated by \x1f (bash variables cannot hold NUL), paths moved.
  "$PY" - deploy/kubernetes/training/teachers-job.yaml "$n" "$d" > "$d/pods.txt" <<'PY' || return 1
import sys, yaml
job = yaml.safe_load(open(sys.argv[1])); n = int(sys.argv[2]); d = sys.argv[3]
c = job["spec"]["template"]["spec"]["containers"][0]
for i in range(n):
    argv = [a.replace("$(JOB_COMPLETION_INDEX)", str(i)) for a in c["command"] + c["args"]]
    argv = [f"{i}/{n}" if a.startswith(f"{i}/") else a for a in argv]
    argv = [a.replace("/config/train.yaml", f"{d}/train.yaml").replace("/run/pate", f"{d}/run") for a in argv]
    print("\x1f".join(argv))
PY
  local i=0 line pids=()
  while IFS= read -r line; do
    local argv=(); IFS=$'\x1f' read -r -a argv <<< "$line"
    PATH="$ROOT/target/release:$PATH" "${argv[@]}" > "$d/teach-$i.log" 2>&1 &
    pids+=($!); i=$((i + 1))
    if [ "${#pids[@]}" -ge 4 ]; then wait "${pids[0]}" || { cat "$d/teach-$((i - 4)).log"; return 1; }; pids=("${pids[@]:1}"); fi
  done < "$d/pods.txt"
  local p; for p in "${pids[@]}"; do wait "$p" || { echo "a teacher shard failed"; tail -n 5 "$d"/teach-*.log; return 1; }; done
  echo "Indexed Job: $i pods, the first: $(head -n 1 "$d/pods.txt" | tr '\037' ' ')"
  configmap_key deploy/kubernetes/training/configmap.yaml student.sh "$d/student.sh" || return 1
  sed -i -e "s#/config/train.yaml#$d/train.yaml#g" -e "s#/run/pate#$d/run#g" -e "s#/bundles#$d/bundles#g" "$d/student.sh"
  PATH="$ROOT/target/release:$PATH" sh "$d/student.sh" > "$d/student.log" 2>&1 || { tail -n 20 "$d/student.log"; return 1; }
  grep -q "all $n teacher(s) already trained" "$d/student.log" || { echo "the student Job did not keep the shards' teachers:"; grep -i teach "$d/student.log" | head; return 1; }
  grep -q "aggregate with model-average" "$d/student.log" || { echo "the student Job did not release the teachers' mean model:"; grep -i aggregate "$d/student.log"; return 1; }
  grep -m1 'already trained' "$d/student.log"; tail -n 1 "$d/student.log"
  printf 'listen: "127.0.0.1:1"\nupstream: "127.0.0.1:2"\nadmin_listen: "127.0.0.1:3"\nbundle: "%s"\nmode: detect\naudit_log: "%s"\n' \
    "$d/bundles/current" "$d/audit.jsonl" > "$d/proxy.yaml"
  "$PROXY" check-config --config "$d/proxy.yaml"
}
check "Kubernetes training flow replayed: Indexed Job pods, then the student Job; bundle accepted by pate-proxy" k8s_training_flow

# --- docs ---------------------------------------------------------------------------------------
docs_reference_deploy() {
  local missing=0 f
  while IFS= read -r f; do
    grep -qF "$f" docs/deploy.md || { echo "docs/deploy.md does not mention $f"; missing=1; }
  done < <(git ls-files --cached --others --exclude-standard deploy | sort)
  return $missing
}
check "every file in deploy/ is referenced by docs/deploy.md" docs_reference_deploy

# --- the loopback scrape check ------------------------------------------------------------------
if [ "${PATE_SKIP_SCRAPE_CHECK:-0}" = 1 ]; then
  skip "scripts/prometheus-scrape-check.sh (PATE_SKIP_SCRAPE_CHECK=1)"
else
  check "scripts/prometheus-scrape-check.sh (Apache + pate-proxy + Prometheus on loopback)" scripts/prometheus-scrape-check.sh
fi

echo
[ "$failed" -eq 0 ] || printf 'failed: %s\n' "${failed_names[@]}"
echo "deploy: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
