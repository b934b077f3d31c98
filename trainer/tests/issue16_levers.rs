//! The issue-16 levers through the real `pate-trainer run` on the in-repo sample: parameter and
//! rarity features (count-based and share-based oddity) with l2 norm, logistic-regression teachers with weight decay and threshold 0.5,
//! head query selection, calibrated aggregation, the answered-benign threshold and the novel-test
//! metrics.
mod common;

use std::path::Path;

use trainer::config::QuerySelection;
use trainer::report::{AppliedThresholdRule, Report};

fn run(dir: &Path, share: f64) -> Report {
    let config = common::sample_config(
        dir,
        "{count: 10, training: {hidden: [], max_epochs: 30, batch_size: 16, learning_rate: 0.1, patience: 5, weight_decay: 0.005, member_threshold: half}}",
        "{queries: 200, query_selection: head, head_share: 0.25, threshold_rule: answered_benign, target_fpr: 0.01, training: {hidden: [], max_epochs: 50, learning_rate: 0.1, patience: 8}}",
    );
    // The sample config with the issue-16 featurizer and the vote share.
    let text = common::over(
        &std::fs::read_to_string(&config).unwrap(),
        &format!(
            "featurizer: {{config: {{top_k: 1500, value_shapes: false, char_ngrams: [1, 3], \
             sublinear_tf: true, params: true, rarity_min_count: 3, odd_permille: [10, 50], \
             norm: l2}}}}\naggregation: {{malicious_vote_share: {share}}}\n"
        ),
    );
    std::fs::write(&config, text).unwrap();
    let out = dir.join("run");
    let o = common::trainer()
        .args(["run", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    trainer::report::read(&out.join("report.json")).unwrap()
}

#[test]
fn the_issue16_levers_run_end_to_end_and_the_vote_shift_leaves_the_published_epsilon_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let shifted = run(&tmp.path().join("shifted"), 0.3);
    assert_eq!(shifted.malicious_vote_share, 0.3);
    // c = round(10 · (1 − 2 · 0.3)) = 4: a function of the configuration only.
    assert_eq!(shifted.vote_shift, 4);
    assert_eq!(
        shifted.student_options.threshold_rule,
        AppliedThresholdRule::AnsweredBenign(0.01)
    );
    assert_eq!(
        shifted.student_options.query_selection,
        QuerySelection::Head
    );
    let novel = shifted
        .student_novel_test
        .as_ref()
        .expect("novel test requests");
    let samples = novel.samples.unwrap();
    let test = shifted.splits.test;
    assert!(samples > 0 && samples <= test, "{samples} of {test}");
    // The rarity table travels in the bundle's featurizer.
    let featurizer = std::fs::read_to_string(shifted.bundle.join("featurizer.json")).unwrap();
    assert!(featurizer.contains("\"rarity\"") && featurizer.contains("p:rare:any"));
    // So do the oddity levels and their counts, and each level's features are in the vocabulary.
    let artifact: serde_json::Value = serde_json::from_str(&featurizer).unwrap();
    assert_eq!(
        artifact["rarity"]["odd_permille"],
        serde_json::json!([10, 50])
    );
    assert!(
        artifact["rarity"]["name_classes"]
            .as_object()
            .unwrap()
            .len()
            > 10
    );
    let vocabulary: Vec<&str> = artifact["vocabulary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for kind in ["method", "name", "char", "len", "any"] {
        for level in ["0.01", "0.05"] {
            let token = format!("p:odd:{kind}<{level}");
            assert!(vocabulary.contains(&token.as_str()), "{token} missing");
        }
    }
    // The same run at plurality: the same data-independent ε (the shift is data-independent).
    let plain = run(&tmp.path().join("plain"), 0.5);
    assert_eq!(plain.vote_shift, 0);
    assert_eq!(
        plain.data_independent_epsilon,
        shifted.data_independent_epsilon
    );
}
