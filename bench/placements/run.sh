#!/usr/bin/env bash
# The generic evaluation of issue 17: the held-out public set (HttpParamsDataset's payload_test.csv,
# never trained or tuned on) put into 13 placements by bench/placements/replay.py and replayed
# through Apache + ModSecurity 2 + OWASP CRS at each paranoia level, and through pate-proxy in
# block mode with a bundle; one table of attacks / benign blocked per placement and detector.
#
#   bench/placements/run.sh [--levels "1 2"] [--proxy-bundle RUN/bundle] [--per-class N]
#                           [--seed S] [--out DIR] [--keep] [--proxy-threshold T] [--calibrate]
#
#   --levels        CRS paranoia levels to run (default "1 2"; "" runs no CRS level), inbound
#                   anomaly threshold 5 (bench/crs/crs-conf.sh)
#   --proxy-bundle  also start a plain Apache + pate-proxy (mode: block) with this bundle
#                   (needs target/release/pate-proxy)
#   --per-class N   attack and benign values sampled from the held-out file (default 200)
#   --seed S        sampling seed (default 1; the same values for every detector)
#   --proxy-name N  the proxy row's name (default pate-proxy; DIR/N.json)
#   --proxy-threshold T  the proxy's `threshold:` override (default: the bundle's); the row is
#                   named N-tT
#   --no-format-checks  the proxy with `format_checks: false` (content alone scored, not the
#                   site's rare/unseen/odd formats, and every part alone with the bundle's part
#                   model where it has one, at the bundle's content_only_threshold where it has
#                   one); the row is named N-nofc
#   --data FILE     the values replayed (HttpParamsDataset CSV; default payload_test.csv, with
#                   --calibrate payload_train.csv)
#   --held-out-tenth  only the tenth of the values a bundle's part model never trained on
#                   (trainer::part_model::held_out: FNV-1a of the decoded value, 0 modulo 10); with
#                   --calibrate, the validation split of a bundle with a part model
#   --fit           also the query-fit and form-fit placements (replay.py --fit-to CSIC's normal
#                   traffic): each value in the site's registration field of its kind
#   --calibrate     instead of the held-out evaluation: the VALIDATION split (payload_train.csv's
#                   values, whose benign ones no training reads; the trainer's content-only
#                   threshold is chosen on them too), through the proxy in detect mode
#                   with threshold 0.0 (every score audited); writes DIR/calibrate-<version>.json
#                   with every score and prints the lowest threshold that blocks at most 5 % of
#                   benign values in every placement (bench/placements/calibrate.py)
#
# Output (default runs/placements/, git-ignored): <detector>.json (replay.py's counts and status
# codes per placement and class) and table.md (bench/placements/table.py over every <detector>.json
# there).
# Every detector gets the same request bytes (Host and Connection headers, no Accept-Charset, so
# CRS rule 920450 does not fire on it as it does on CSIC's); blocked = HTTP 403.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
LEVELS="1 2"; PROXY_BUNDLE=""; PER_CLASS=200; SEED=1; OUT=runs/placements; KEEP=0
PROXY_THRESHOLD=""; FORMAT_CHECKS=true; CALIBRATE=0; PROXY_NAME=pate-proxy; DATA=""; FIT=(); TENTH=()
while [ $# -gt 0 ]; do
  case $1 in
    --levels) LEVELS=$2; shift 2;;
    --proxy-bundle) PROXY_BUNDLE=$2; shift 2;;
    --per-class) PER_CLASS=$2; shift 2;;
    --seed) SEED=$2; shift 2;;
    --out) OUT=$2; shift 2;;
    --keep) KEEP=1; shift;;
    --proxy-threshold) PROXY_THRESHOLD=$2; shift 2;;
    --proxy-name) PROXY_NAME=$2; shift 2;;
    --no-format-checks) FORMAT_CHECKS=false; shift;;
    --calibrate) CALIBRATE=1; LEVELS=""; shift;;
    --data) DATA=$2; shift 2;;
    --held-out-tenth) TENTH=(--held-out-tenth); shift;;
    --fit) FIT=(--fit-to ../shared/datasets/csic2010/normalTrafficTraining.txt); shift;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0;;
    *) echo "$0: unknown argument '$1' (see --help)" >&2; exit 2;;
  esac
done
mkdir -p "$OUT"
. bench/lib.sh   # $WORK, stop_apache, cleanup on exit, free_port
bench_workdir placements-bench
wait_http() {
  for _ in $(seq 1 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "$0: nothing answers at $1" >&2; return 1
}
replay() { # NAME ADDR DETECTOR
  echo "== $1: replaying to $2" >&2
  python3 bench/placements/replay.py --proxy "$2" --per-class "$PER_CLASS" --seed "$SEED" \
    --data "${DATA:-../shared/datasets/httpparams/payload_test.csv}" --detector "$3" --out "$OUT/$1.json" \
    "${FIT[@]}" "${TENTH[@]}"
}

for PL in $LEVELS; do
  PORT=$(free_port)
  APACHE_CONF=$(bench/crs/crs-conf.sh "$WORK/crs-pl$PL" "$PORT" "$PL" 5)
  apache2 -f "$APACHE_CONF" -k start
  wait_http "http://127.0.0.1:$PORT/"
  replay "crs-pl$PL" "127.0.0.1:$PORT" "ModSecurity 2.9 + CRS 3.3 (PL$PL, anomaly threshold 5)"
  stop_apache
done

if [ -n "$PROXY_BUNDLE" ]; then
  start_apache_and_proxy_config "$PROXY_BUNDLE"
  echo "format_checks: $FORMAT_CHECKS" >> "$WORK/proxy.yaml"
  if [ "$CALIBRATE" = 1 ]; then
    printf 'threshold: 0.0\n' >> "$WORK/proxy.yaml"; sed -i 's/^mode: block$/mode: detect/' "$WORK/proxy.yaml"
  elif [ -n "$PROXY_THRESHOLD" ]; then
    printf 'threshold: %s\n' "$PROXY_THRESHOLD" >> "$WORK/proxy.yaml"
  fi
  start_proxy
  VERSION=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["model_version"])' "$BUNDLE_ABS/bundle.yaml")
  if [ "$CALIBRATE" = 1 ]; then
    python3 bench/placements/replay.py --proxy "127.0.0.1:$PX_PORT" --per-class "$PER_CLASS" --seed "$SEED" \
      --data "${DATA:-../shared/datasets/httpparams/payload_train.csv}" --audit "$WORK/proxy-audit.jsonl" "${FIT[@]}" "${TENTH[@]}" \
      --detector "pate-proxy (detect, threshold 0.0, bundle $VERSION): validation split" \
      --out "$OUT/calibrate-$VERSION.json" > /dev/null
    kill -INT "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=""
    python3 bench/placements/calibrate.py "$OUT/calibrate-$VERSION.json"
    exit 0
  fi
  NOFC=""; [ "$FORMAT_CHECKS" = false ] && NOFC=-nofc
  NAME=$PROXY_NAME${PROXY_THRESHOLD:+-t$PROXY_THRESHOLD}$NOFC
  replay "$NAME" "127.0.0.1:$PX_PORT" "pate-proxy (block, bundle $VERSION${PROXY_THRESHOLD:+, threshold $PROXY_THRESHOLD}${NOFC:+, format checks off})"
  kill -INT "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=""
  stop_apache
fi

python3 bench/placements/table.py "$OUT" | tee "$OUT/table.md"
