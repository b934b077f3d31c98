#!/usr/bin/env bash
# Runs every test: unit, property, CLI and end-to-end (real Apache, real ONNX Runtime, real libtorch),
# then the deploy checks (promtool, Apache config syntax, the loopback Prometheus scrape).
set -euo pipefail
cd "$(dirname "$0")/.."
# The end-to-end tests run the release binaries of other packages: build them first.
cargo build --release -p trainer -p proxy
cargo test --workspace --release
if [ -x scripts/check-deploy.sh ]; then scripts/check-deploy.sh; fi
