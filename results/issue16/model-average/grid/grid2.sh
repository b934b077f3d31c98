# variants on the teachers of seeds 1-3 (reused): label recall, soft threshold, ε 2 and 0.5
cd REPO
while pgrep -f "bash grid.sh" > /dev/null; do sleep 10; done
for seed in 1 2 3; do
  for v in "r0.95 0.95 3.0 4.1" "r0.96 0.96 3.0 4.1" "k2 0.97 2.0 4.1" "k4 0.97 4.0 4.1" "e2 0.97 3.0 2.2" "e05 0.97 3.0 7.9"; do
    set -- $v
    sed -e "s/^seed: null.*/seed: $seed/" -e 's#\.\./\.\./\.\./\.\./\.\./shared#../../shared#' \
        -e "s/validation_recall: 0.99/validation_recall: $2/" -e "s/soft_threshold: 3.0/soft_threshold: $3/" \
        -e "s/^  sigma: 4.1 .*/  sigma: $4/" \
        results/issue16/model-average/configs/ma_e1.yaml > RUNS/s${seed}_$1.yaml
    target/release/pate-trainer run --config RUNS/s${seed}_$1.yaml --out RUNS/run-s$seed > RUNS/s${seed}_$1.log 2>&1
    mkdir -p RUNS/s${seed}_$1 && cp RUNS/run-s$seed/report.json RUNS/s${seed}_$1/
  done
done
