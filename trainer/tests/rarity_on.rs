//! `featurizer.rarity_on: validation_benign` through the real `pate-trainer run` on the in-repo
//! sample: the bundle's rarity table counts exactly the validation split's benign requests — not
//! the public pool it counted before, not a private record — and the run chooses its threshold
//! on the validation requests scored with their folds' tables (the served path, with placements).
mod common;

use std::path::Path;

/// `pate-trainer data split --role ROLE`'s counts: (normal, anomalous) requests.
fn role_counts(config: &Path, role: &str, out: &Path) -> (u64, u64) {
    let o = common::trainer()
        .args(["data", "split", "--config"])
        .arg(config)
        .args(["--role", role, "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let counts: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = |k: &str| counts["requests"][k].as_u64().unwrap_or(0);
    (n("normal"), n("anomalous"))
}

/// The number of requests the rarity table of a featurizer artifact counted (every request
/// counts once in its path's count).
fn table_requests(featurizer_json: &Path) -> u64 {
    let f: serde_json::Value =
        serde_json::from_slice(&std::fs::read(featurizer_json).unwrap()).unwrap();
    f["rarity"]["paths"]
        .as_object()
        .expect("a rarity table")
        .values()
        .map(|c| c.as_u64().unwrap())
        .sum()
}

#[test]
fn the_bundles_rarity_table_counts_the_validation_splits_benign_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let config = common::sample_config(
        tmp.path(),
        "{count: 10, training: {hidden: [], max_epochs: 20, learning_rate: 0.1, patience: 5, member_threshold: half}}",
        "{queries: 150, validation_max: 400, threshold_rule: target_fpr, target_fpr: 0.05, multiplicity_cap: 10, training: {hidden: [], max_epochs: 40, learning_rate: 0.1, patience: 8}}",
    );
    let featurizer = |rarity_on: &str| {
        format!(
            "featurizer: {{fit_on: public, rarity_on: {rarity_on}, config: {{top_k: 800, \
             value_shapes: false, char_ngrams: [1, 3], params: true, rarity_min_count: 3, \
             odd_permille: [10, 50], norm: l2, placements: {{}}}}}}"
        )
    };
    let base = std::fs::read_to_string(&config).unwrap();
    let validation_cfg = tmp.path().join("validation.yaml");
    std::fs::write(
        &validation_cfg,
        common::over(&base, &featurizer("validation_benign")),
    )
    .unwrap();
    let public_cfg = tmp.path().join("public.yaml");
    std::fs::write(&public_cfg, common::over(&base, &featurizer("fit_on"))).unwrap();

    let run = |cfg: &Path, name: &str| {
        let out = tmp.path().join(name);
        let o = common::trainer()
            .args(["run", "--config"])
            .arg(cfg)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let on_validation = run(&validation_cfg, "on-validation");
    let (benign, malicious) = role_counts(&validation_cfg, "validation", &tmp.path().join("v"));
    assert!(benign > 0 && malicious > 0, "{benign} / {malicious}");
    assert_eq!(
        table_requests(&on_validation.join("bundle/featurizer.json")),
        benign,
        "the table counts every benign validation request and nothing else"
    );
    // The same seed with the default counts the public split (every request of it).
    let on_public = run(&public_cfg, "on-public");
    let (public_benign, public_malicious) =
        role_counts(&public_cfg, "public", &tmp.path().join("p"));
    assert_eq!(
        table_requests(&on_public.join("bundle/featurizer.json")),
        public_benign + public_malicious
    );
    assert_ne!(public_benign + public_malicious, benign);
    // The report carries the threshold chosen on the validation traffic.
    let report: trainer::report::Report =
        trainer::report::read(&on_validation.join("report.json")).unwrap();
    assert!(report
        .student_options
        .validation_traffic_tpr_at_1pct_fpr
        .is_some());
}
