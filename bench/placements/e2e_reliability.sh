#!/usr/bin/env bash
# How reliably a FRESH training of a config passes the end-to-end per-placement test's requests:
# trains CONFIG N times (fresh OS randomness when the config has `seed: null`), scores the test's
# requests with each bundle (bench/placements/e2e_cases.py: pate-trainer score, the proxy's
# scoring) and prints the per-placement counts (bench/placements/e2e_summary.py).
#
#   bench/placements/e2e_reliability.sh [CONFIG] [N] [OUT]
#
# Defaults: configs/whole-request.yaml, 8 runs, /tmp/e2e-reliability (run directories OUT/run-<i>,
# one JSON line per run in OUT/results.jsonl). Needs target/release/pate-trainer.
set -euo pipefail
cd "$(dirname "$0")/../.."
CONFIG=${1:-configs/whole-request.yaml}; N=${2:-8}; OUT=${3:-/tmp/e2e-reliability}
mkdir -p "$OUT"; : > "$OUT/results.jsonl"
for i in $(seq 1 "$N"); do
  rm -rf "$OUT/run-$i"
  target/release/pate-trainer run -qq --config "$CONFIG" --out "$OUT/run-$i"
  python3 bench/placements/e2e_cases.py "$OUT/run-$i/bundle" >> "$OUT/results.jsonl"
done
python3 bench/placements/e2e_summary.py "$OUT/results.jsonl"
