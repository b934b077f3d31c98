#!/usr/bin/env bash
# Installs what the build, the tests and the demo need, only from package registries, and only
# what is missing (idempotent). Called by `make demo` and `make test`; safe to run by hand.
#
#   PATE_CUDA=1 scripts/setup.sh   # opt-in: the full CUDA build of torch (about 4.7 GB) for GPU hosts
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

TORCH_VERSION=2.13.0
ORT_VERSION=1.31.1
# systemd (systemd-analyze), python3-seccomp and logrotate: scripts/check-deploy.sh validates the
# systemd unit, its sandbox and the audit-log rotation with them.
APT_PACKAGES=(apache2 cmake wrk prometheus libapache2-mod-security2 modsecurity-crs systemd python3-seccomp logrotate nginx-light)

log() { printf '[setup] %s\n' "$*" >&2; }

# --- Debian packages -------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  log "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts services on install; the tests and the demo start their own on loopback.
  for svc in apache2 prometheus nginx; do $SUDO systemctl stop "$svc" 2>/dev/null || true; done
  pkill -x apache2 2>/dev/null || true
  pkill -x prometheus 2>/dev/null || true
  pkill -x nginx 2>/dev/null || true
fi

# --- Python venv with libtorch and ONNX Runtime ----------------------------------------------
VENV=$ROOT/.venv
want="torch=$TORCH_VERSION ort=$ORT_VERSION cuda=${PATE_CUDA:-0}"
if [ "$(cat "$VENV/.pate-setup" 2>/dev/null)" != "$want" ]; then
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    if ! python3 -m venv "$VENV" 2>/dev/null; then
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get install -y -qq python3-venv >/dev/null
      python3 -m venv "$VENV"
    fi
  fi
  if [ "${PATE_CUDA:-0}" = 1 ]; then
    log "installing torch==$TORCH_VERSION with CUDA (about 4.7 GB)"
    "$VENV/bin/pip" install -q "torch==$TORCH_VERSION"
  else
    log "installing CPU libtorch from torch==$TORCH_VERSION (about 1.2 GB)"
    "$VENV/bin/pip" install -q --no-deps "torch==$TORCH_VERSION" \
      nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85
  fi
  # numpy only so that tests can cross-check model.onnx with the Python onnxruntime.
  "$VENV/bin/pip" install -q --no-deps "onnxruntime==$ORT_VERSION" numpy==2.3.5
  echo "$want" > "$VENV/.pate-setup"
fi

# --- Stable paths the build uses (.cargo/config.toml points at these) ------------------------
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$ROOT/.deps"
ln -sfn "$SITE/torch" "$ROOT/.deps/libtorch"
ln -sfn "$SITE/onnxruntime/capi/libonnxruntime.so.$ORT_VERSION" "$ROOT/.deps/libonnxruntime.so"
[ -f "$ROOT/.deps/libtorch/lib/libtorch_cpu.so" ] || { log "libtorch missing under $SITE/torch"; exit 1; }
[ -f "$ROOT/.deps/libonnxruntime.so" ] || { log "ONNX Runtime library missing under $SITE/onnxruntime/capi"; exit 1; }
log "ready: LIBTORCH=.deps/libtorch ORT_DYLIB_PATH=.deps/libonnxruntime.so"
