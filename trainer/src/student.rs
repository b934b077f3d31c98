//! Training the student on the aggregated labels: early stopping, optional self-training and
//! label cleaning, and its threshold rule.

use tch::Device;

use crate::calibrate::confident_target_fpr_threshold;
use crate::calibrate::target_fpr_threshold;
use crate::calibrate::weighted_quantile_threshold;
use crate::dense::DenseMatrix;
use crate::ensemble::{self, Ensemble, LabeledRows, MemberData, Mode, TrainConfig};
use crate::error::{Error, Result};
use crate::model_file::{ModelFile, ModelInfo, ModelRole};
use crate::report::AppliedThresholdRule;
use crate::rng::shuffled;
use crate::rng::RunRng;
use crate::stages::evaluate::evaluate_scores;
use crate::stages::evaluate::model_scores;
use crate::stages::evaluate::tpr_at_fpr;
use crate::teachers::shard_hash;

/// What every student training reads besides its data and config: the featurizer's hash (in
/// the model file), the run's randomness and the device.
#[derive(Clone, Copy)]
pub struct StudentEnv<'a> {
    /// The featurizer's content hash.
    pub featurizer_hash: &'a str,
    /// The run's randomness.
    pub rng: &'a RunRng,
    /// The training device.
    pub device: Device,
}

/// Trains the student on `train` with their (noisily aggregated) labels, with a weight per row
/// where `train_weights` has them (`MemberData::train_weights`: a row of weight w counts as w
/// copies; the data hash covers the weights); early stopping and the Youden threshold on the
/// labelled validation samples.
pub fn train_student(
    train: LabeledRows,
    train_weights: Option<Vec<f32>>,
    validation: LabeledRows,
    config: &TrainConfig,
    featurizer_hash: &str,
    rng: &RunRng,
    device: Device,
) -> Result<ModelFile> {
    let dims = config.dims(train.x.cols);
    let mut rngs = vec![rng.stream("student")];
    let init = ensemble::init_members(&dims, &mut rngs);
    let data_hash = shard_hash(
        featurizer_hash,
        &train.x,
        &train.y,
        &match &train_weights {
            // Unweighted: the hash as before weights existed.
            None => serde_json::json!({"training": config}),
            Some(w) => serde_json::json!({"training": config, "weights": w}),
        },
    );
    tracing::info!(
        "student: {} labelled queries ({} malicious), {} validation samples, widths {dims:?}",
        train.y.len(),
        train.y.iter().filter(|&&y| y).count(),
        validation.y.len()
    );
    let model = Ensemble::from_members(&init, device)?;
    let (model, mut reports) = ensemble::train(
        model,
        &[MemberData {
            train,
            holdout: validation,
            train_weights,
        }],
        config,
        &mut rngs,
        Mode::Batched,
        "student",
        ensemble::InputLayout::Auto,
    )?;
    let report = reports.remove(0);
    Ok(ModelFile {
        weights: model.members()?.remove(0),
        info: ModelInfo::trained(
            ModelRole::Student,
            report,
            data_hash,
            featurizer_hash.into(),
            rng.provenance(),
        ),
    })
}

/// What [`train_student_full`] did beyond training.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StudentExtras {
    /// Per self-training round: pseudo-labels added (malicious, benign).
    pub pseudo_labels: Vec<(usize, usize)>,
    /// The threshold rule used (the Youden threshold stays in `training`).
    pub threshold_rule: crate::report::AppliedThresholdRule,
    /// Validation ROC operating point of the chosen threshold: (FPR, TPR).
    pub validation_operating_point: Option<(f64, f64)>,
    /// The student's ROC AUC on its (distinct, labelled, public-side) validation requests: what
    /// a recipe is chosen on — never the test split.
    pub validation_roc_auc: Option<f64>,
    /// The best TPR at FPR ≤ 1 % on the same validation ROC.
    pub validation_tpr_at_1pct_fpr: Option<f64>,
    /// The best TPR at FPR ≤ 1 % on the validation ROC with every request counted as often as
    /// it occurs in the validation split (uncapped): what the traffic-weighted test figure is
    /// the held-out image of. Set by the run (which knows the multiplicities).
    pub validation_traffic_tpr_at_1pct_fpr: Option<f64>,
    /// Set when the threshold was chosen on the validation requests scored as served.
    pub served: Option<crate::report::ServedThreshold>,
    /// The content-only threshold and its validation figures
    /// (`student.public_examples.content_only_validation`).
    pub content_only: Option<crate::report::ContentOnlyThreshold>,
}

/// [`train_student`] plus the `student:` options of the run configuration: self-training on
/// `pool` (unlabelled public features; needed when `student.self_training.rounds` > 0) and the
/// threshold rule (`answered_benign` needs `answered_benign`: the features of the answered
/// queries labelled benign and their public multiplicities).
pub fn train_student_full(
    train: LabeledRows,
    validation: LabeledRows,
    copies: Option<(&[usize], &[usize])>,
    pool: Option<&DenseMatrix>,
    answered_benign: Option<(&DenseMatrix, &[usize])>,
    student: &crate::config::StudentConfig,
    env: StudentEnv,
) -> Result<(ModelFile, StudentExtras)> {
    let StudentEnv {
        featurizer_hash,
        rng,
        device,
    } = env;
    let mut extras = StudentExtras::default();
    // Traffic weighting by repetition (a row with weight w appears w times): the same gradient
    // in expectation as a per-sample weight, and the ROC of the repeated validation rows is the
    // traffic-weighted ROC.
    let (train, validation) = match copies {
        None => (train, validation),
        Some((train_copies, validation_copies)) => (
            repeat_rows(train, train_copies, "answered queries")?,
            repeat_rows(validation, validation_copies, "validation")?,
        ),
    };
    let mut model = train_student(
        train.clone(),
        None,
        validation.clone(),
        &student.training,
        featurizer_hash,
        rng,
        device,
    )?;
    if student.self_training.rounds > 0 {
        model = self_train(model, &train, &validation, pool, student, env, &mut extras)?;
    }
    extras.threshold_rule = apply_threshold_rule(
        &mut model,
        &validation,
        answered_benign,
        student,
        rng,
        device,
    )?;
    let scores = model_scores(&model, &validation.x, device)?;
    let (m, roc) = evaluate_scores(&scores, &validation.y, model.info.threshold);
    extras.validation_operating_point = m.fpr.zip(m.tpr);
    extras.validation_roc_auc = m.roc_auc;
    extras.validation_tpr_at_1pct_fpr = tpr_at_fpr(&roc, 0.01);
    Ok((model, extras))
}

/// Which rows of `train` to keep after cross-validated label cleaning
/// ([`crate::config::LabelCleaningConfig`]): each fold is scored by a student trained (with
/// `training`, its rows repeated by `copies` when given) on the other folds; a row whose label the
/// out-of-fold score contradicts with at least `cleaning.confidence` is not kept. The folds are
/// drawn from the stream `label-cleaning` of `rng`.
pub fn clean_labels(
    train: &LabeledRows,
    copies: Option<&[usize]>,
    validation: &LabeledRows,
    cleaning: &crate::config::LabelCleaningConfig,
    training: &TrainConfig,
    env: StudentEnv,
) -> Result<Vec<bool>> {
    let StudentEnv {
        featurizer_hash,
        rng,
        device,
    } = env;
    let n = train.y.len();
    let folds = cleaning.folds.max(2);
    let mut fold = vec![0usize; n];
    for (position, &row) in shuffled(n, &mut rng.stream("label-cleaning"))
        .iter()
        .enumerate()
    {
        fold[row] = position % folds;
    }
    let mut keep = vec![true; n];
    for f in 0..folds {
        let (inside, outside): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| fold[i] != f);
        if outside.is_empty() {
            continue;
        }
        let rows = train.select(&inside);
        let rows = match copies {
            Some(c) => {
                let c: Vec<usize> = inside.iter().map(|&i| c[i]).collect();
                repeat_rows(rows, &c, "answered queries")?
            }
            None => rows,
        };
        let model = train_student(
            rows,
            None,
            validation.clone(),
            training,
            featurizer_hash,
            rng,
            device,
        )?;
        let scores = model_scores(&model, &train.x.select_rows(&outside), device)?;
        for (&i, &score) in outside.iter().zip(&scores) {
            let score = f64::from(score);
            let contradicted = if train.y[i] {
                score <= 1.0 - cleaning.confidence
            } else {
                score >= cleaning.confidence
            };
            keep[i] = !contradicted;
        }
    }
    Ok(keep)
}

/// `rows` with row i repeated `copies[i]` times (at least once).
fn repeat_rows(rows: LabeledRows, copies: &[usize], what: &'static str) -> Result<LabeledRows> {
    if copies.len() != rows.y.len() {
        return Err(Error::Multiplicities {
            what,
            found: copies.len(),
            rows: rows.y.len(),
        });
    }
    let idx: Vec<usize> = copies
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| std::iter::repeat_n(i, c.max(1)))
        .collect();
    Ok(rows.select(&idx))
}

/// `student.self_training.rounds` (> 0) rounds of self-training from `model`: each round the
/// latest model pseudo-labels the confident rows of `pool`, and a fresh student trains on `train`
/// plus them. Returns the last round's model; each round's pseudo-label counts go to `extras`.
fn self_train(
    mut model: ModelFile,
    train: &LabeledRows,
    validation: &LabeledRows,
    pool: Option<&DenseMatrix>,
    student: &crate::config::StudentConfig,
    env: StudentEnv,
    extras: &mut StudentExtras,
) -> Result<ModelFile> {
    let StudentEnv {
        featurizer_hash,
        rng,
        device,
    } = env;
    let rounds = student.self_training.rounds;
    let pool = pool.ok_or_else(|| {
        Error::key(
            "student.self_training.rounds",
            "> 0 needs the unlabelled public pool's features",
        )
    })?;
    if pool.cols != train.x.cols {
        return Err(Error::FeatureWidth {
            what: "the unlabelled pool".into(),
            found: pool.cols,
            of: "the queries".into(),
            expected: train.x.cols,
        });
    }
    let c = student.self_training.confidence as f32;
    for round in 1..=rounds {
        let scores = model_scores(&model, pool, device)?;
        let mut x = train.x.values.clone();
        let mut y = train.y.clone();
        let (mut malicious, mut benign) = (0usize, 0usize);
        for (r, &s) in scores.iter().enumerate() {
            let label = if s >= c {
                malicious += 1;
                true
            } else if s <= 1.0 - c {
                benign += 1;
                false
            } else {
                continue;
            };
            x.extend_from_slice(pool.row(r));
            y.push(label);
        }
        tracing::info!(
            "student: self-training round {round}/{rounds}: {malicious} malicious and {benign} benign pseudo-labels from {} unlabelled public requests",
            pool.rows
        );
        extras.pseudo_labels.push((malicious, benign));
        let rows = y.len();
        let augmented = LabeledRows {
            x: DenseMatrix::new(rows, train.x.cols, x)?,
            y,
        };
        let round_rng = RunRng::derived(rng, &format!("self-training-{round}"));
        model = train_student(
            augmented,
            None,
            validation.clone(),
            &student.training,
            featurizer_hash,
            &round_rng,
            device,
        )?;
    }
    Ok(model)
}

/// Sets `model`'s threshold by `student.threshold_rule` (Youden's, from training, is kept as is)
/// and returns the rule as reported.
fn apply_threshold_rule(
    model: &mut ModelFile,
    validation: &LabeledRows,
    answered_benign: Option<(&DenseMatrix, &[usize])>,
    student: &crate::config::StudentConfig,
    rng: &RunRng,
    device: Device,
) -> Result<AppliedThresholdRule> {
    match student.threshold_rule {
        crate::config::ThresholdRule::Youden => Ok(AppliedThresholdRule::Youden),
        crate::config::ThresholdRule::TargetFpr => {
            let scores = model_scores(model, &validation.x, device)?;
            let t = match student.target_fpr_confidence {
                None => target_fpr_threshold(&scores, &validation.y, student.target_fpr),
                Some(confidence) => confident_target_fpr_threshold(
                    &scores,
                    &validation.y,
                    student.target_fpr,
                    confidence,
                    &mut rng.stream("threshold-confidence"),
                ),
            }
            .ok_or(Error::Threshold(
                "the student validation samples need both classes",
            ))?;
            model.info.threshold = t;
            Ok(AppliedThresholdRule::TargetFpr(student.target_fpr))
        }
        crate::config::ThresholdRule::AnsweredBenign => {
            let (x, weights) = answered_benign.ok_or_else(|| {
                Error::key(
                    "student.threshold_rule",
                    "answered_benign needs the answered queries labelled benign",
                )
            })?;
            let scores = model_scores(model, x, device)?;
            let t = weighted_quantile_threshold(&scores, weights, student.target_fpr)
                .ok_or(Error::Threshold("no answered query was labelled benign"))?;
            model.info.threshold = t;
            Ok(AppliedThresholdRule::AnsweredBenign(student.target_fpr))
        }
    }
}
