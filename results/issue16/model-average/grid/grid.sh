# seeds × validation_recall for the model-average config (validation_labels as in the row: true)
cd REPO
for seed in 1 2 3; do
  for rec in 0.97 0.98 0.99; do
    sed -e "s/^seed: null.*/seed: $seed/" -e 's#\.\./\.\./\.\./\.\./\.\./shared#../../shared#' \
        -e "s/validation_recall: 0.99/validation_recall: $rec/" \
        results/issue16/model-average/configs/ma_e1.yaml > RUNS/s${seed}_r${rec}.yaml
    target/release/pate-trainer run --config RUNS/s${seed}_r${rec}.yaml --out RUNS/run-s$seed > RUNS/s${seed}_r${rec}.log 2>&1
    cp RUNS/run-s$seed/report.json RUNS/s${seed}_r${rec}.report.json
    mkdir -p RUNS/s${seed}_r${rec} && cp RUNS/run-s$seed/report.json RUNS/s${seed}_r${rec}/
  done
done
