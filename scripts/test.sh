#!/usr/bin/env bash
# Runs every test: unit, property, CLI and end-to-end (real Apache, real ONNX Runtime, real libtorch).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --release 2>&1
