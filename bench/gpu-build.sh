#!/usr/bin/env bash
# Builds pate-trainer against ANOTHER libtorch than the project's (e.g. the torch 2.11.0+cu130 of a
# GPU machine that has its own PyTorch and no network) and packs what such a machine needs into a
# small folder: the binary, the CSIC 2010 data (xz), the two generic files that
# configs/train.yaml's public examples read (datasets.tar.xz) and libonnxruntime.so
# (xz), plus bench/gpu-run.sh. The project's own build is not touched: the workspace is copied (git archive
# of HEAD) to $WORK, only the copy's `tch` version is changed, and it builds into its own target dir.
#
#   bench/gpu-build.sh                      # torch 2.11.0 / tch 0.24.0 -> .gpu/ (about 19 MB)
#   TORCH_VERSION=2.11.0 TCH_VERSION=0.24.0 PACK=.gpu WORK=/tmp/gpu-build bench/gpu-build.sh
#
# The tch release must be the one made for that torch (torch-sys's build.rs: `TORCH_VERSION`):
# tch 0.24.0 <-> torch 2.11.0, tch 0.26.0 <-> torch 2.13.0 (the project's). The binary links
# libtorch_cpu.so and libc10.so with BIND_NOW, so an ABI mismatch fails at load, not later; on the
# GPU machine run it with LD_LIBRARY_PATH=<its torch>/lib and LIBTORCH=<its torch> (then
# `--device auto` loads that torch's libtorch_cuda.so); bench/gpu-run.sh does this.
# Put PACK inside the checkout and ignore it (`echo /.gpu/ >> .git/info/exclude`) so it travels.
# Needs scripts/setup.sh's .venv (its pip) and .deps/libonnxruntime.so (`make setup`).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TORCH_VERSION=${TORCH_VERSION:-2.11.0}
TCH_VERSION=${TCH_VERSION:-0.24.0}
WORK=${WORK:-/tmp/gpu-build}
PACK=${PACK:-$ROOT/.gpu}
DATA=${DATA:-$ROOT/../shared/datasets/csic2010}
log() { printf '[gpu-build] %s\n' "$*" >&2; }

# 1. The libtorch to build against: headers and libraries from the PyPI wheel (about 0.5 GB).
TORCH_DIR=$WORK/torch-$TORCH_VERSION
if [ ! -f "$TORCH_DIR/torch/lib/libtorch_cpu.so" ]; then
  log "downloading torch==$TORCH_VERSION (wheel, headers and libraries only are unpacked)"
  mkdir -p "$WORK/whl" "$TORCH_DIR"
  "$ROOT/.venv/bin/pip" download -q --no-deps "torch==$TORCH_VERSION" -d "$WORK/whl"
  unzip -q -o "$WORK"/whl/torch-"$TORCH_VERSION"-*.whl 'torch/include/*' 'torch/lib/*' \
    'torch/share/*' 'torch/version.py' -d "$TORCH_DIR"
fi
grep -m1 "^__version__" "$TORCH_DIR/torch/version.py" >&2

# 2. A copy of the workspace with only the tch version changed.
SRC=$WORK/src
rm -rf "$SRC" && mkdir -p "$SRC"
git archive HEAD | tar -x -C "$SRC"
sed -i "s/^tch = \".*\"/tch = \"$TCH_VERSION\"/" "$SRC/Cargo.toml"
(cd "$SRC" && cargo update -q -p tch --precise "$TCH_VERSION")
log "building pate-trainer with tch $TCH_VERSION against $TORCH_DIR/torch"
(cd "$SRC" && LIBTORCH="$TORCH_DIR/torch" CARGO_TARGET_DIR="$WORK/target" \
  cargo build --release -p trainer --bin pate-trainer)
BIN=$WORK/target/release/pate-trainer

# 3. Every libtorch symbol the binary needs must resolve in that libtorch (BIND_NOW).
# (ldd -r also lists libtorch_cpu's own CUDA-runtime symbols, absent here: only the binary's count.)
missing=$(LD_LIBRARY_PATH="$TORCH_DIR/torch/lib" ldd -r "$BIN" 2>&1 | grep -F "($BIN)" || true)
if [ -n "$missing" ]; then log "undefined against torch $TORCH_VERSION:"; echo "$missing" >&2; exit 1; fi

# 4. The folder to carry.
mkdir -p "$PACK"
cp "$BIN" "$PACK/pate-trainer"
cp "$ROOT/bench/gpu-run.sh" "$PACK/gpu-run.sh"
tar -C "$(dirname "$DATA")" -cJf "$PACK/csic.tar.xz" "$(basename "$DATA")"
tar -C "$(dirname "$DATA")" -cJf "$PACK/datasets.tar.xz" httpparams/payload_train.csv fwaf/badqueries.txt
xz -T1 -c "$ROOT/.deps/libonnxruntime.so" > "$PACK/libonnxruntime.so.xz"
du -ch "$PACK"/* >&2
log "done: carry $PACK; on the GPU machine: bash $(basename "$PACK")/gpu-run.sh"
