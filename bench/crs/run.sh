#!/usr/bin/env bash
# The incumbent benchmark of issue 6: replay CSIC 2010 test part A (normal + anomalous) against
# Apache + ModSecurity 2 + OWASP CRS at paranoia levels 1-4 (inbound anomaly threshold 5), and
# optionally through pate-proxy in block mode; write one table of TPR/FPR per detector.
#
#   bench/crs/run.sh [--levels "1 2 3 4"] [--every K] [--limit N] [--concurrency C]
#                    [--threshold T] [--test-split-from F] [--data DIR] [--files "A B"]
#                    [--out DIR] [--keep]
#                    [--proxy-bundle RUN/bundle] [--proxy-url http://127.0.0.1:PORT]
#                    [--proxy-name NAME] [--proxy-epsilon TEXT]
#
#   --levels        paranoia levels to run (default "1 2 3 4"; "" runs no CRS level)
#   --every K       replay every K-th request of each file (deterministic subsampling; default 1 = all)
#   --limit N       at most N requests per file (default: all)
#   --files "A B"   replay these CSIC-format files instead of test part A (labelled by name:
#                   normal… / anomalous…), e.g. the exact test split of a run configuration:
#                   `pate-trainer data split --config configs/train.yaml --role test --out DIR`,
#                   then --files "DIR/normal.txt DIR/anomalous.txt"
#   --test-split-from F  also report the rates on the trainer's test split: the requests whose
#                   request_hash / 2^64 >= F (default 0.8 = private 0.6 + public 0.15 + student
#                   validation 0.05, the defaults of trainer/src/config.rs SplitConfig)
#   --proxy-bundle  also start a plain Apache + pate-proxy (mode: block) with this bundle and
#                   replay the same requests through it (needs target/release/pate-proxy)
#   --proxy-url     also replay through an already running pate-proxy in block mode
#   --proxy-epsilon the ε text for the proxy row (default: read from the bundle's bundle.yaml)
#   --keep          keep the temporary Apache directories (configs, error/audit logs)
#
# Output (default bench/crs/): raw/<detector>.json (the replay summary + run settings, one per
# detector; committed), verdicts/<detector>.jsonl (one line per request with its request_hash,
# git-ignored), results.csv and results.md (one table built from every raw/*.json present, so a
# later `--levels "" --proxy-bundle ...` run adds the PATE row next to the CRS rows).
#
# The verdict is the HTTP status: 403 = blocked, anything else = passed (see crs-conf.sh). The
# requests carry CSIC's constant browser headers minus Accept-Charset: Debian's CRS 3.3.4 blocks
# every CSIC request for that header alone (rule 920450, restricted headers).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
LEVELS="1 2 3 4"; EVERY=1; LIMIT=""; CONCURRENCY=4; THRESHOLD=5; TEST_FROM=0.8
DATA=../shared/datasets/csic2010; OUT=bench/crs; KEEP=0
PROXY_BUNDLE=""; PROXY_URL=""; PROXY_NAME="pate-proxy"; PROXY_EPSILON=""
while [ $# -gt 0 ]; do
  case $1 in
    --levels) LEVELS=$2; shift 2;;
    --every) EVERY=$2; shift 2;;
    --limit) LIMIT=$2; shift 2;;
    --concurrency) CONCURRENCY=$2; shift 2;;
    --threshold) THRESHOLD=$2; shift 2;;
    --test-split-from) TEST_FROM=$2; shift 2;;
    --data) DATA=$2; shift 2;;
    --files) read -r -a FILES_GIVEN <<< "$2"; shift 2;;
    --out) OUT=$2; shift 2;;
    --keep) KEEP=1; shift;;
    --proxy-bundle) PROXY_BUNDLE=$2; shift 2;;
    --proxy-url) PROXY_URL=$2; shift 2;;
    --proxy-name) PROXY_NAME=$2; shift 2;;
    --proxy-epsilon) PROXY_EPSILON=$2; shift 2;;
    -h|--help) sed -n '2,30p' "$0"; exit 0;;
    *) echo "$0: unknown argument '$1' (see --help)" >&2; exit 2;;
  esac
done
FILES=("$DATA/normalTrafficTest_A.txt" "$DATA/anomalousTrafficTest_A.txt")
[ -n "${FILES_GIVEN[*]:-}" ] && FILES=("${FILES_GIVEN[@]}")
for f in "${FILES[@]}"; do [ -f "$f" ] || { echo "$0: $f not found (see ../shared/datasets)" >&2; exit 1; }; done
mkdir -p "$OUT/raw" "$OUT/verdicts"

cargo build --release -p experiments 2>&1 | grep -E '^(error|warning: unused)|Finished' || true
EXPERIMENTS=$ROOT/target/release/pate-experiments
[ -x "$EXPERIMENTS" ] || { echo "$0: $EXPERIMENTS was not built" >&2; exit 1; }

. bench/lib.sh   # $WORK, stop_apache, cleanup on exit, free_port
bench_workdir crs-bench
wait_http() { # URL: wait until something answers (any status)
  for _ in $(seq 1 100); do
    curl -s -o /dev/null "$1" && return 0
    sleep 0.1
  done
  echo "$0: nothing answers at $1" >&2; return 1
}
SUBSET=(--every "$EVERY"); [ -n "$LIMIT" ] && SUBSET+=(--limit "$LIMIT")

# replay NAME URL META_JSON: replays the CSIC files, writes raw/NAME.json and verdicts/NAME.jsonl.
replay() {
  local name=$1 url=$2 meta=$3
  echo "== $name: replaying to $url" >&2
  "$EXPERIMENTS" replay --url "$url" --format csic --drop-header Accept-Charset "${SUBSET[@]}" \
    --concurrency "$CONCURRENCY" --out "$OUT/verdicts/$name.jsonl" --summary "$WORK/$name.summary.json" \
    "${FILES[@]}" > /dev/null
  python3 - "$WORK/$name.summary.json" "$OUT/raw/$name.json" "$meta" "$OUT/verdicts/$name.jsonl" "$TEST_FROM" <<'PY'
import json, sys, os, datetime
summary = json.load(open(sys.argv[1]))
row = json.loads(sys.argv[3])
row["summary"] = summary
# The same rates on the trainer's test split (split_by_hash: request_hash / 2^64 >= test_from).
test_from = float(sys.argv[5])
t = {"test_from": test_from, "benign": 0, "malicious": 0, "blocked_benign": 0, "blocked_malicious": 0, "errors": 0}
for line in open(sys.argv[4]):
    v = json.loads(line)
    if int(v["request_hash"], 16) / 2**64 < test_from or v["label"] is None:
        continue
    if v["status"] is None:
        t["errors"] += 1
        continue
    t[v["label"]] += 1
    t["blocked_" + v["label"]] += int(v["blocked"])
t["tpr"] = t["blocked_malicious"] / t["malicious"] if t["malicious"] else None
t["fpr"] = t["blocked_benign"] / t["benign"] if t["benign"] else None
row["test_split"] = t
# Rates over distinct requests (CSIC repeats some requests up to 1,000 times; a request's verdict
# is the same every time, so each distinct request counts once here).
seen = {}
for line in open(sys.argv[4]):
    v = json.loads(line)
    if v["status"] is not None and v["label"] is not None:
        seen[(v["request_hash"], v["label"])] = v["blocked"]
d = {"benign": 0, "malicious": 0, "blocked_benign": 0, "blocked_malicious": 0}
for (_, label), blocked in seen.items():
    d[label] += 1
    d["blocked_" + label] += int(blocked)
d["tpr"] = d["blocked_malicious"] / d["malicious"] if d["malicious"] else None
d["fpr"] = d["blocked_benign"] / d["benign"] if d["benign"] else None
row["distinct"] = d
row["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
tmp = sys.argv[2] + ".tmp"
with open(tmp, "w") as f:
    json.dump(row, f, indent=2, sort_keys=True); f.write("\n")
os.replace(tmp, sys.argv[2])
s = summary
print(f"   TPR {s['tpr']:.4f}  FPR {s['fpr']:.4f}  ({s['malicious']['blocked']}/{s['malicious']['requests']} malicious, "
      f"{s['benign']['blocked']}/{s['benign']['requests']} benign blocked, {s['errors']} errors)", file=sys.stderr)
PY
}
SETTINGS="\"every\": $EVERY, \"limit\": ${LIMIT:-null}, \"files\": [\"${FILES[0]}\", \"${FILES[1]}\"]"

for PL in $LEVELS; do
  PORT=$(free_port)
  APACHE_CONF=$(bench/crs/crs-conf.sh "$WORK/crs-pl$PL" "$PORT" "$PL" "$THRESHOLD")
  apache2 -f "$APACHE_CONF" -k start
  wait_http "http://127.0.0.1:$PORT/"
  AUDIT=$WORK/crs-pl$PL/logs/modsec_audit.log
  replay "crs-pl$PL" "http://127.0.0.1:$PORT" \
    "{\"detector\": \"ModSecurity 2.9 + CRS 3.3 (PL$PL)\", \"kind\": \"crs\", \"paranoia_level\": $PL, \"anomaly_threshold\": $THRESHOLD, \"epsilon\": \"n/a\", $SETTINGS}"
  stop_apache
  # Cross-check: the audit log must hold one 949110 (inbound anomaly score exceeded) denial per 403.
  DENIALS=$(grep -c '^Message: Access denied with code 403 .*id "949110"' "$AUDIT" || true)
  python3 - "$OUT/raw/crs-pl$PL.json" "$DENIALS" <<'PY'
import json, sys, os
p = sys.argv[1]; row = json.load(open(p)); row["audit_log_949110_denials"] = int(sys.argv[2])
blocked = row["summary"]["status_counts"].get("403", 0)
if blocked != row["audit_log_949110_denials"]:
    print(f"   note: {blocked} responses were 403 but the audit log has {sys.argv[2]} 949110 denials", file=sys.stderr)
with open(p + ".tmp", "w") as f: json.dump(row, f, indent=2, sort_keys=True); f.write("\n")
os.replace(p + ".tmp", p)
PY
  rm -f "$WORK/crs-pl$PL/logs/error.log" # verbose (every CRS warning), not needed once replayed
done

proxy_epsilon() { # BUNDLE_DIR: the ε text for the table, from bundle.yaml's privacy report
  python3 - "$1/bundle.yaml" <<'PY'
import sys, yaml
m = yaml.safe_load(open(sys.argv[1])); p = m.get("privacy") or {}
def g(k):
    v = p.get(k); return None if v is None else float(v)
parts = []
for key, label in (("sanitized_epsilon", "sanitized"), ("data_independent_epsilon", "data-independent"),
                   ("data_dependent_epsilon", "data-dependent, not private to publish")):
    if g(key) is not None: parts.append(f"{g(key):.3g} ({label})")
d = p.get("delta")
print("; ".join(parts) + (f", δ = {d}" if d is not None and parts else "") if parts else "see bundle.yaml")
PY
}

if [ -n "$PROXY_BUNDLE" ]; then
  start_apache_and_proxy_config "$PROXY_BUNDLE"
  start_proxy
  EPS=${PROXY_EPSILON:-$(proxy_epsilon "$BUNDLE_ABS")}
  EPS_JSON=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$EPS")
  replay "$PROXY_NAME" "http://127.0.0.1:$PX_PORT" \
    "{\"detector\": \"$PROXY_NAME (block, bundle $(basename "$(dirname "$BUNDLE_ABS")"))\", \"kind\": \"pate\", \"paranoia_level\": null, \"anomaly_threshold\": null, \"epsilon\": $EPS_JSON, $SETTINGS}"
  kill -INT "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=""
  stop_apache
elif [ -n "$PROXY_URL" ]; then
  EPS_JSON=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "${PROXY_EPSILON:-see the bundle}")
  replay "$PROXY_NAME" "$PROXY_URL" \
    "{\"detector\": \"$PROXY_NAME (block, $PROXY_URL)\", \"kind\": \"pate\", \"paranoia_level\": null, \"anomaly_threshold\": null, \"epsilon\": $EPS_JSON, $SETTINGS}"
fi

python3 bench/crs/table.py "$OUT"
