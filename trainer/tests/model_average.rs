//! `privacy.mechanism: model_average` end to end on the in-repo sample: one release of the
//! linear teachers' mean model labels every query, the run publishes that one release's ε
//! (whatever the number of queries), and the bundle carries the mechanism.
use std::path::Path;

use privacy::average::ModelAverage;
use privacy::Mechanism;
use trainer::report::{MechanismName, Report};

mod common;
use common::trainer;

const MECHANISM: ModelAverage = ModelAverage {
    sigma: 4.1,
    clip_norm: 20.0,
};

/// The sample's setup with linear teachers, model averaging, fresh OS randomness (a private run
/// publishes its ε) and `queries` queries.
fn config(dir: &Path, queries: usize) -> std::path::PathBuf {
    let path = common::sample_config(
        dir,
        "{count: 10, holdout_fraction: 0, training: {hidden: [], optimizer: fista, l1: 0.0003, \
         learning_rate: 4.0, max_epochs: 60, class_balance: pos_weight, member_threshold: half}}",
        &format!(
            "{{queries: {queries}, validation_max: 200, training: {{hidden: [16], max_epochs: 30, patience: 4}}}}"
        ),
    );
    let text = common::over(
        &std::fs::read_to_string(&path).unwrap(),
        &format!(
            "seed: null\n\
             privacy: {{mechanism: model_average, sigma: {}, clip_norm: {}}}\n\
             aggregation: {{model_average: {{soft_threshold: 3.0, validation_recall: 0.9}}}}\n",
            MECHANISM.sigma, MECHANISM.clip_norm
        ),
    );
    assert!(text.contains("model_average") && text.contains("seed: null"));
    std::fs::write(&path, text).unwrap();
    path
}

fn run_ok(cfg: &Path, run_dir: &Path) -> Report {
    let out = trainer()
        .args(["run", "--config"])
        .arg(cfg)
        .arg("--out")
        .arg(run_dir)
        .output()
        .expect("pate-trainer starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    trainer::report::read(&run_dir.join("report.json")).unwrap()
}

#[test]
fn one_release_labels_every_query_for_one_published_epsilon() {
    let tmp = tempfile::tempdir().unwrap();
    // One release of ℓ2 sensitivity 2C with noise σ·2C: RDP α/(2σ²).
    let one_release =
        common::independent_gaussian_epsilon(1.0 / (2.0 * MECHANISM.sigma.powi(2)), 1.0, 1e-5);
    assert!((one_release - 0.9854).abs() < 1e-3, "{one_release}");
    let mut epsilons = Vec::new();
    for queries in [60, 150] {
        let run_dir = tmp.path().join(format!("run-{queries}"));
        let report = run_ok(
            &config(&tmp.path().join(format!("cfg-{queries}")), queries),
            &run_dir,
        );
        assert_eq!(report.mechanism, MechanismName::ModelAverage);
        assert_eq!(
            report.mechanism_parameters,
            Mechanism::ModelAverage(MECHANISM)
        );
        // Every query has a label: the release answers all of them.
        assert_eq!((report.queries, report.answered), (queries, queries));
        let labels = std::fs::read_to_string(run_dir.join("aggregate.labels")).unwrap();
        assert_eq!(labels.lines().count(), queries);
        assert!(labels.lines().all(|l| l == "0" || l == "1"), "{labels}");
        // The published ε is the one release's, and nothing data-dependent is below it.
        let bundle = bundle::Bundle::load(&run_dir.join("bundle"))
            .unwrap()
            .manifest;
        let published = bundle.privacy.expect("a privacy section");
        assert_eq!(published.mechanism, Mechanism::ModelAverage(MECHANISM));
        let eps = published
            .published_epsilon
            .expect("a private run publishes ε");
        assert!(
            eps >= one_release - 1e-9 && eps - one_release < 2e-3,
            "published {eps}, one release {one_release}"
        );
        assert_eq!(
            report.data_dependent_epsilon,
            report.data_independent_epsilon
        );
        epsilons.push(eps);
    }
    // 60 or 150 queries: the same ε.
    assert_eq!(epsilons[0], epsilons[1]);
    assert!(
        epsilons[0] <= 1.0,
        "σ 4.1 publishes ε ≤ 1, got {}",
        epsilons[0]
    );
}
