#!/bin/sh
# variant.sh SEED NAME BIN 'sed expr'...: a copy of run-sSEED's teachers, the config of seed SEED changed by the sed expressions
set -e
cd "${LAB:?the lab folder: run-sSEED/ and nSEED.yaml (configs/train.yaml at seed SEED, part_model removed)}"
seed=$1; name=$2; bin=$3; shift 3
d=v-s$seed-$name
rm -rf $d; mkdir -p $d
cp -r run-s$seed/teachers run-s$seed/shards.json run-s$seed/ledger.jsonl $d/ 2>/dev/null || true
cp n$seed.yaml $d.yaml
for e in "$@"; do sed -i "$e" $d.yaml; done
./$bin run --config $d.yaml --out $d > $d.log 2>&1
