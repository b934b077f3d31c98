#!/bin/bash
# loop.sh NAME N: N fresh quick runs of quick-NAME.yaml, the demo's 10 requests scored
cd /work/lab/s25/quick
for i in $(seq 1 $2); do
  /work/main/target/release/pate-trainer run --config quick-$1.yaml --out r-$1-$i > r-$1-$i.log 2>&1
  echo "$1 $i $(./demo10.sh /work/lab/s25/quick/r-$1-$i/bundle 2>&1 | tail -1) $(grep -o 'validation_traffic_tpr_at_1pct_fpr[^,]*' r-$1-$i/report.json)"
done
