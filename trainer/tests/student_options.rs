//! The `student:` options of the run configuration (traffic query selection, multiplicity
//! weights, target-FPR threshold, self-training) and the helpers behind them, on the in-repo
//! sample (small and fast; no timings).
use std::path::{Path, PathBuf};
use std::process::Command;

use rand::SeedableRng;
use trainer::config::QuerySelection;
use trainer::metrics::roc_curve;
use trainer::report::{AppliedThresholdRule, Report, SplitsReport};

mod common;
use common::trainer;

/// configs/quick.yaml's setup with the given `student:` section.
fn config(dir: &Path, student: &str) -> PathBuf {
    common::sample_config(
        dir,
        "{count: 10, training: {hidden: [16], max_epochs: 20, patience: 3}}",
        student,
    )
}

fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output().expect("pate-trainer starts")
}

/// `pate-trainer run --config CFG --out RUN_DIR`, which must succeed.
fn run_ok(cfg: &Path, run_dir: &Path) {
    let out = run(trainer()
        .args(["run", "--config"])
        .arg(cfg)
        .arg("--out")
        .arg(run_dir));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_with_every_student_option_reports_them_and_the_student_stage_reuses_the_pool() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        tmp.path(),
        "{queries: 150, validation_max: 200, query_selection: traffic, multiplicity_cap: 100000, \
         threshold_rule: target_fpr, target_fpr: 0.05, self_training: {rounds: 1, confidence: 0.8}, \
         validation_labels: true, training: {hidden: [16], max_epochs: 30, patience: 4}}",
    );
    let run_dir = tmp.path().join("run");
    run_ok(&cfg, &run_dir);
    let report: Report = trainer::report::read(&run_dir.join("report.json")).unwrap();
    let options = &report.student_options;
    let known = options
        .validation_labels_known
        .expect("validation_labels reported");
    // The sample's frequent requests recur in its validation split: some of the draw is known.
    assert!(
        known > 0,
        "no drawn request labelled by the validation split"
    );
    assert_eq!(options.query_selection, QuerySelection::Traffic);
    assert_eq!(
        options.threshold_rule,
        AppliedThresholdRule::TargetFpr(0.05)
    );
    assert_eq!(options.multiplicity_cap, Some(100000));
    // A cap above every multiplicity weights validation by its whole traffic: the validation
    // figure then is the traffic-weighted one (reported for every run, whatever the cap).
    let traffic = options.validation_traffic_tpr_at_1pct_fpr.unwrap();
    assert_eq!(Some(traffic), options.validation_tpr_at_1pct_fpr);
    // The target-FPR threshold holds on the (weighted) validation rows it was chosen on.
    let (fpr, _) = options.validation_operating_point_fpr_tpr.unwrap();
    assert!(fpr <= 0.05, "validation FPR {fpr}");
    // One self-training round, counted; the pool is every distinct public request neither
    // queried nor labelled by the validation samples; the draw asked all 150 queries.
    assert_eq!(options.pseudo_labels_malicious_benign_per_round.len(), 1);
    let pool = options.unlabelled_pool;
    let splits: SplitsReport = trainer::report::read(&run_dir.join("splits.json")).unwrap();
    assert_eq!(pool + 150 + known, splits.counts.public_distinct);
    assert_eq!(splits.counts.queries, 150);
    assert!(run_dir.join("features/public_pool.f32").exists());
    // Weighting by multiplicity never gives fewer rows than the answered queries.
    assert!(options.answered_rows_after_weighting.unwrap() >= report.answered);
    // TPR read off the ROC at growing FPR levels never decreases, for student and ensemble.
    for (key, t) in [
        ("student_tpr_at_fpr", report.student_tpr_at_fpr),
        (
            "teacher_ensemble_tpr_at_fpr",
            report.teacher_ensemble_tpr_at_fpr,
        ),
    ] {
        let t = t.unwrap_or_else(|| panic!("{key}: both classes are in the test split"));
        let v: Vec<f64> = [t.fpr_0, t.fpr_0_005, t.fpr_0_01, t.fpr_0_02]
            .into_iter()
            .map(Option::unwrap)
            .collect();
        assert!(v.windows(2).all(|w| w[0] <= w[1]), "{key}: {v:?}");
    }
    assert!(report.student_distinct_test.metrics.samples > 0);

    // The student stage: the same options from a config, minus the multiplicity weights (which
    // need the split), with the pool file `run` wrote.
    let stage_cfg = config(
        &tmp.path().join("stage").tap_mkdir(),
        "{threshold_rule: target_fpr, target_fpr: 0.1, self_training: {rounds: 1, confidence: 0.8}, \
         training: {hidden: [16], max_epochs: 30, patience: 4}}",
    );
    let student_out = tmp.path().join("student2.safetensors");
    let out = run(trainer()
        .args(["student", "--run"])
        .arg(&run_dir)
        .arg("--config")
        .arg(&stage_cfg)
        .arg("--out")
        .arg(&student_out));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["options"]["threshold_rule"], "target_fpr 0.1");
    assert_eq!(
        printed["options"]["pseudo_labels"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(student_out.exists());
    // ... and refuses, naming the key, what it cannot compute without the split: multiplicity
    // weights and the validation split's labels.
    let refused = |cfg: &Path, out_name: &str, key: &str| {
        let out = run(trainer()
            .args(["student", "--run"])
            .arg(&run_dir)
            .arg("--config")
            .arg(cfg)
            .arg("--out")
            .arg(tmp.path().join(out_name)));
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains(key));
        assert!(!tmp.path().join(out_name).exists());
    };
    refused(&cfg, "s3", "student.multiplicity_cap");
    let vl_cfg = config(
        &tmp.path().join("vl").tap_mkdir(),
        "{validation_labels: true, training: {hidden: [16], max_epochs: 30, patience: 4}}",
    );
    refused(&vl_cfg, "s4", "student.validation_labels");
}

/// `target_fpr_confidence` (configs/train.yaml's 0.95): the same seeded run with the budget held
/// at confidence instead of at the point estimate takes a higher threshold, flags less of the
/// validation traffic, and says so in its report; a confidence out of (0, 1)
/// or beside another rule is refused, naming the key.
#[test]
fn a_threshold_held_at_confidence_is_above_the_point_estimates() {
    let tmp = tempfile::tempdir().unwrap();
    let student = |extra: &str| {
        format!(
            "{{queries: 150, validation_max: 400, multiplicity_cap: 3, threshold_rule: target_fpr, \
             target_fpr: 0.05, training: {{hidden: [16], max_epochs: 30, patience: 4}}{extra}}}"
        )
    };
    let report = |name: &str, extra: &str| -> Report {
        let cfg = config(&tmp.path().join(name), &student(extra));
        let run_dir = tmp.path().join(name).join("run");
        run_ok(&cfg, &run_dir);
        trainer::report::read(&run_dir.join("report.json")).unwrap()
    };
    let point = report("point", "");
    let held = report("held", ", target_fpr_confidence: 0.95");
    assert_eq!(point.student_options.target_fpr_confidence, None);
    assert_eq!(held.student_options.target_fpr_confidence, Some(0.95));
    // The point estimate spends the budget on the few benign validation requests of the sample;
    // held at 0.95 it leaves a margin, so it flags fewer of them.
    assert!(
        held.threshold > point.threshold,
        "{} <= {}",
        held.threshold,
        point.threshold
    );
    let fpr = |r: &Report| {
        r.student_options
            .validation_operating_point_fpr_tpr
            .unwrap()
            .0
    };
    assert!(
        fpr(&held) < fpr(&point) && fpr(&point) <= 0.05,
        "{} {}",
        fpr(&held),
        fpr(&point)
    );
    for (name, extra) in [
        ("one", ", target_fpr_confidence: 1.0"),
        ("zero", ", target_fpr_confidence: 0"),
    ] {
        let cfg = config(&tmp.path().join(name), &student(extra));
        let out = run(trainer()
            .args(["run", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(tmp.path().join(name).join("run")));
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("student.target_fpr_confidence"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let youden = "{queries: 150, threshold_rule: youden, target_fpr_confidence: 0.9}";
    let cfg = config(&tmp.path().join("youden"), youden);
    let out = run(trainer()
        .args(["run", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(tmp.path().join("youden").join("run")));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("student.target_fpr_confidence") && stderr.contains("threshold_rule"),
        "{stderr}"
    );
}

/// `student.training: {optimizer: fista, l1}` (configs/train.yaml's sparse student): the run's
/// student is a logistic regression with most weights exactly zero, kept at the epoch of its
/// lowest validation loss (the student has held-out samples, the teachers of train.yaml none);
/// the same run without the penalty leaves almost every weight non-zero.
#[test]
fn a_fista_student_with_an_l1_penalty_is_sparse() {
    let tmp = tempfile::tempdir().unwrap();
    let student = |l1: f64| -> (usize, usize, trainer::ensemble::MemberReport) {
        let dir = tmp.path().join(format!("l1-{l1}"));
        let cfg = config(
            &dir,
            &format!(
                "{{queries: 150, validation_max: 200, training: {{hidden: [], optimizer: fista, \
                 l1: {l1}, learning_rate: 2.0, max_epochs: 100, patience: 100}}}}"
            ),
        );
        let run_dir = dir.join("run");
        run_ok(&cfg, &run_dir);
        let model =
            trainer::model_file::ModelFile::load(&run_dir.join("student.safetensors")).unwrap();
        assert_eq!(model.weights.layers.len(), 1, "a logistic regression");
        let w = &model.weights.layers[0].weight;
        let zeros = w.iter().filter(|&&x| x == 0.0).count();
        (zeros, w.len(), model.info.training)
    };
    let (zeros, weights, report) = student(0.02);
    assert!(
        2 * zeros > weights,
        "{zeros} of {weights} weights at zero: {report:?}"
    );
    assert!(report.holdout_samples > 0 && report.best_holdout_loss.is_some());
    assert!(report.best_epoch <= report.epochs, "{report:?}");
    let (dense_zeros, _, _) = student(0.0);
    assert!(
        10 * dense_zeros < weights,
        "{dense_zeros} of {weights} weights at zero without the penalty"
    );
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn target_fpr_threshold_is_the_best_tpr_within_the_fpr_budget() {
    // Benign scores 0.1..0.9 (9 of them), malicious 0.5..0.95.
    let scores = [
        0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.55, 0.65, 0.85, 0.95,
    ];
    let labels = [
        false, false, false, false, false, false, false, false, false, true, true, true, true,
    ];
    // FPR 0: only above 0.9 → threshold 0.95 (TPR 1/4).
    assert_eq!(
        trainer::calibrate::target_fpr_threshold(&scores, &labels, 0.0),
        Some(0.95)
    );
    // FPR ≤ 1/9: the benign 0.9 may be flagged → threshold 0.85 (TPR 2/4).
    assert_eq!(
        trainer::calibrate::target_fpr_threshold(&scores, &labels, 0.12),
        Some(0.85)
    );
    // No point meets the budget (the top score is benign): a probability just above every score,
    // never +inf (a bundle refuses it), so nothing seen is flagged.
    let t = trainer::calibrate::target_fpr_threshold(&[0.9, 0.2, 0.5], &[false, true, true], 0.0)
        .unwrap();
    assert!(t > 0.9 && t <= 1.0, "{t}");
    let t = trainer::calibrate::target_fpr_threshold(&[1.0, 0.2], &[false, true], 0.0).unwrap();
    assert_eq!(t, 1.0);
    // A class absent: no threshold.
    assert_eq!(
        trainer::calibrate::target_fpr_threshold(&[0.1, 0.2], &[false, false], 0.01),
        None
    );
    let roc = roc_curve(&scores, &labels);
    assert_eq!(trainer::stages::evaluate::tpr_at_fpr(&roc, 0.0), Some(0.25));
    assert_eq!(trainer::stages::evaluate::tpr_at_fpr(&roc, 0.12), Some(0.5));
    assert_eq!(trainer::stages::evaluate::tpr_at_fpr(&roc, 1.0), Some(1.0));
}

#[test]
fn weighted_sampling_draws_heavy_items_first_without_repeats() {
    let weights = [1usize, 1000, 1, 1, 500, 1];
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let all = trainer::stages::split::weighted_sample(&weights, weights.len(), &mut rng);
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![0, 1, 2, 3, 4, 5], "a permutation");
    // Over many draws the two heavy items come first almost always.
    let mut heavy_first = 0;
    for seed in 0..200 {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let two = trainer::stages::split::weighted_sample(&weights, 2, &mut rng);
        heavy_first += usize::from(two.contains(&1) && two.contains(&4));
    }
    assert!(heavy_first >= 190, "{heavy_first}/200");
}

/// Label cleaning leaves out the labels an out-of-fold student contradicts with confidence: on
/// two separable clusters (malicious: feature 0 high), eight labels flipped on purpose are left
/// out and none of the 192 right ones is.
#[test]
fn label_cleaning_leaves_out_confidently_contradicted_labels() {
    use trainer::dense::DenseMatrix;
    use trainer::ensemble::{LabeledRows, TrainConfig};
    let n = 200;
    let mut values = Vec::new();
    let mut truth = Vec::new();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    for i in 0..n {
        let malicious = i % 4 == 0;
        let jitter = 0.2 * uniform();
        values.extend([
            if malicious { 1.0 - jitter } else { jitter },
            0.5,
            uniform(),
        ]);
        truth.push(malicious);
    }
    let flipped = [3usize, 17, 40, 88, 100, 121, 160, 199];
    let mut y = truth.clone();
    for &i in &flipped {
        y[i] = !y[i];
    }
    let train = LabeledRows {
        x: DenseMatrix::new(n, 3, values.clone()).unwrap(),
        y,
    };
    let validation = LabeledRows {
        x: DenseMatrix::new(n, 3, values).unwrap(),
        y: truth,
    };
    let training = TrainConfig {
        hidden: vec![],
        max_epochs: 200,
        patience: 200,
        learning_rate: 0.1,
        ..TrainConfig::default()
    };
    let cleaning = trainer::config::LabelCleaningConfig {
        folds: 5,
        confidence: 0.8,
    };
    let keep = trainer::student::clean_labels(
        &train,
        None,
        &validation,
        &cleaning,
        &training,
        trainer::student::StudentEnv {
            featurizer_hash: "test",
            rng: &trainer::rng::RunRng::new(Some(7)).unwrap(),
            device: tch::Device::Cpu,
        },
    )
    .unwrap();
    let left_out: Vec<usize> = (0..n).filter(|&i| !keep[i]).collect();
    assert_eq!(left_out, flipped, "left out: {left_out:?}");
}

/// A run with `label_cleaning` reports what it left out (and, in a simulation, how many of those
/// labels were wrong); a bad setting is an error naming the key.
#[test]
fn run_with_label_cleaning_reports_the_labels_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(
        tmp.path(),
        "{queries: 150, validation_max: 200, label_cleaning: {folds: 3, confidence: 0.9}, \
         training: {hidden: [16], max_epochs: 30, patience: 4}}",
    );
    let run_dir = tmp.path().join("run");
    run_ok(&cfg, &run_dir);
    let report: Report = trainer::report::read(&run_dir.join("report.json")).unwrap();
    let cleaning = report
        .student_options
        .label_cleaning
        .expect("label cleaning reported");
    let dropped = cleaning.dropped_malicious + cleaning.dropped_benign;
    assert!(dropped < report.answered, "{cleaning:?}");
    assert!(cleaning.dropped_wrong.is_some_and(|w| w <= dropped));
    // The student stage cleans the same way (no weights: the config has none).
    let student_out = tmp.path().join("student2.safetensors");
    let out = run(trainer()
        .args(["-v", "student", "--run"])
        .arg(&run_dir)
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(&student_out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("label cleaning: left out"), "{stderr}");
    assert!(student_out.exists());
    // Without --config it reads the run's config.yaml, which holds the run's settings; one an
    // older trainer wrote (whose defaults differed) is refused.
    let from_run = |name: &str| {
        run(trainer()
            .args(["-v", "student", "--run"])
            .arg(&run_dir)
            .arg("--out")
            .arg(tmp.path().join(name)))
    };
    let out = from_run("student3.safetensors");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("label cleaning: left out"), "{stderr}");
    let manifest = run_dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let current = format!(
        "\"format_version\": {}",
        trainer::rundir::RUN_FORMAT_VERSION
    );
    assert!(text.contains(&current), "{text}");
    let older = trainer::rundir::RUN_FORMAT_VERSION - 1;
    std::fs::write(
        &manifest,
        text.replace(&current, &format!("\"format_version\": {older}")),
    )
    .unwrap();
    let out = from_run("student4.safetensors");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains(&format!("older pate-trainer (run format {older})")),
        "{stderr}"
    );
    let bad = config(
        tmp.path(),
        "{queries: 150, label_cleaning: {folds: 1, confidence: 0.9}}",
    );
    let out = run(trainer()
        .args(["run", "--config"])
        .arg(&bad)
        .arg("--out")
        .arg(tmp.path().join("bad")));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("student.label_cleaning.folds"),
        "{err}"
    );
}
