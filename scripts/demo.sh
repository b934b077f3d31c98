#!/usr/bin/env bash
# The main job on the in-repo sample (extended as the trainer and proxy land).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p trainer
