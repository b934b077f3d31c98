#!/bin/sh
# Draws the in-repo sample from the shared datasets, deterministically (every k-th record, starting
# with the first), keeping each record's bytes unchanged (CRLF included) so that the same loaders
# read the sample and the originals.
#
#   data/sample/draw_sample.sh [SHARED_DATASETS_DIR]   (default: ../shared/datasets from the repo root)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-$here/../../../shared/datasets}

# The CSIC generator sends sessions of 36 requests in a fixed order (index, anadir, autenticar,
# ...), so a stride sharing a factor with 36 would pick only a few kinds of page (every 30th gives
# 6 distinct requests): the strides below (29, 35, 21 on the hash-split test part) are coprime to
# 36 or applied to a file whose order the split has broken.
#
# every_kth_request K FILE: CSIC raw HTTP; a request starts at a line `GET|POST|PUT ` and runs to
# the next such line (headers, blank line, body, blank lines).
every_kth_request() {
    awk -v k="$1" '
        /^(GET|POST|PUT) / { n++ }
        n > 0 && (n - 1) % k == 0 { print }
    ' "$2"
}

# every_kth_row K FILE: a CSV with a header and no quoted newlines (checked below).
every_kth_row() {
    awk -v k="$1" 'NR == 1 || (NR - 2) % k == 0 { print }' "$2"
}

every_kth_request 29 "$src/csic2010/normalTrafficTraining.txt" > "$here/csic_normalTrafficTraining_sample.txt"
every_kth_request 35 "$src/csic2010/normalTrafficTest_A.txt" > "$here/csic_normalTrafficTest_A_sample.txt"
every_kth_request 21 "$src/csic2010/anomalousTrafficTest_A.txt" > "$here/csic_anomalousTrafficTest_A_sample.txt"

# The CSV rows must be one line each for the line-based draw to be right.
rows=$(($(wc -l < "$src/httpparams/payload_full.csv") - 1))
[ "$rows" -eq 31067 ] || { echo "payload_full.csv: expected 31067 one-line rows, found $rows lines" >&2; exit 1; }
every_kth_row 20 "$src/httpparams/payload_full.csv" > "$here/httpparams_payload_full_sample.csv"
cp "$src/httpparams/LICENSE" "$here/httpparams_LICENSE" && chmod 644 "$here/httpparams_LICENSE"

# The second site's onboarding sample: lines 3501-3800 of its training part (data/sites/).
sed -n 3501,3800p "$here/../sites/semicomplete/access.log" > "$here/apache_access_sample.log"
cd "$here" && sha256sum csic_*.txt httpparams_*.csv apache_access_sample.log > SHA256SUMS
