#!/usr/bin/env bash
# Prints the path of a model bundle for the deploy checks (scripts/check-deploy.sh,
# scripts/prometheus-scrape-check.sh), training one on the in-repo sample when needed:
#   1. $PATE_BUNDLE, if set;
#   2. runs/deploy-check/bundle, if it exists and the current pate-proxy accepts it;
#   3. otherwise `target/release/pate-trainer run --config configs/quick.yaml --out runs/deploy-check`
#      (CPU, a few minutes) and its bundle.
# Needs target/release/pate-trainer (and pate-proxy for step 2): `cargo build --release -p trainer -p proxy`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -n "${PATE_BUNDLE:-}" ]; then
  [ -f "$PATE_BUNDLE/bundle.yaml" ] || { echo "PATE_BUNDLE=$PATE_BUNDLE has no bundle.yaml" >&2; exit 1; }
  echo "$PATE_BUNDLE"; exit 0
fi
RUN=$ROOT/runs/deploy-check
PROXY=$ROOT/target/release/pate-proxy
TRAINER=$ROOT/target/release/pate-trainer

bundle_ok() {
  [ -f "$RUN/bundle/bundle.yaml" ] || return 1
  [ -x "$PROXY" ] || return 0   # nothing to check it with: use it
  local cfg; cfg=$(mktemp /tmp/pate-bundle-check.XXXXXX.yaml)
  printf 'listen: "127.0.0.1:1"\nupstream: "127.0.0.1:2"\nadmin_listen: "127.0.0.1:3"\nbundle: "%s"\nmode: detect\naudit_log: "/tmp/unused-audit.jsonl"\n' \
    "$RUN/bundle" > "$cfg"
  local rc=0; "$PROXY" check-config --config "$cfg" >/dev/null 2>&1 || rc=$?
  rm -f "$cfg"; return $rc
}

if bundle_ok; then echo "$RUN/bundle"; exit 0; fi
[ -x "$TRAINER" ] || { echo "no $TRAINER: run cargo build --release -p trainer" >&2; exit 1; }
[ -f configs/quick.yaml ] || { echo "configs/quick.yaml is missing" >&2; exit 1; }
echo "[deploy-bundle] training a bundle: pate-trainer run --config configs/quick.yaml --out runs/deploy-check" >&2
rm -rf "$RUN" "$RUN.tmp"
mkdir -p "$ROOT/runs"
if ! "$TRAINER" run --config configs/quick.yaml --out "$RUN.tmp" > "$ROOT/runs/deploy-check.log" 2>&1; then
  tail -n 30 "$ROOT/runs/deploy-check.log" >&2
  echo "[deploy-bundle] pate-trainer run failed (log: runs/deploy-check.log)" >&2
  exit 1
fi
mv "$RUN.tmp" "$RUN"
[ -f "$RUN/bundle/bundle.yaml" ] || { echo "[deploy-bundle] $RUN/bundle/bundle.yaml missing after training" >&2; exit 1; }
echo "$RUN/bundle"
