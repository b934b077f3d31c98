#!/bin/bash
# demo10.sh BUNDLE: the demo's 10 requests (scripts/demo.sh) scored by pate-trainer score
cd /work/main
targets() {
  grep -a '^GET ' "$1" | sed -e 's#^GET http://localhost:8080##' -e 's# HTTP/1\.[01].*$##' | tr -d '\r' |
    awk -v re="$2" 'BEGIN { IGNORECASE = 1 } tolower($0) ~ tolower(re) && !seen[$0]++ && n < 5 { print; n++ }'
}
n=0; a=0
while IFS= read -r t; do ./target/release/pate-trainer score --bundle $1 --target "$t" --header "Host: localhost:8080" | grep -q '"verdict":"block"' && n=$((n+1)); done <<< "$(targets data/sample/csic_normalTrafficTest_A_sample.txt '')"
while IFS= read -r t; do ./target/release/pate-trainer score --bundle $1 --target "$t" --header "Host: localhost:8080" | grep -q '"verdict":"block"' && a=$((a+1)); done <<< "$(targets data/sample/csic_anomalousTrafficTest_A_sample.txt 'script|select|drop|waitfor|delete')"
echo "normal blocked $n of 5, attacks blocked $a of 5"
