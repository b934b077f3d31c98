//! Stage 7, `evaluate`: the student (and the noiseless teacher ensemble) on the test split —
//! traffic-weighted, on each distinct test request once, and on the "novel" test requests that
//! never occur in the public split.
use std::collections::{HashMap, HashSet};

use crate::config::RunConfig;
use crate::dense::DenseMatrix;
use crate::error::Result;
use tch::Device;

use crate::ensemble::Ensemble;
use crate::metrics::{roc_curve, Metrics, RocPoint};
use crate::model_file::ModelFile;
use crate::report::{EvaluationReport, TestView, TprAtFpr, TEACHER_ENSEMBLE_SCORE};
use crate::rundir::RunDir;
use crate::stages::split::RunData;

use super::featurize::Features;
use super::Env;

/// What [`evaluate`] produces.
pub struct Evaluation {
    /// `evaluation.json`: the student and the teacher ensemble (score = share of teachers voting
    /// malicious, threshold 0.5) with their TPR at fixed FPRs read off the test ROC.
    pub report: EvaluationReport,
    /// The ROC curves of `roc.svg`/`roc.png` (name, points): the teacher ensemble's when there
    /// are teachers, then the student's. Drawn only when written ([`Evaluation::roc_plot`]).
    pub roc_curves: Vec<(String, Vec<RocPoint>)>,
}

impl Evaluation {
    /// The ROC plot, as SVG and PNG.
    pub fn roc_plot(&self) -> Result<crate::plot::Rendered> {
        let curves: Vec<(&str, &[RocPoint])> = self
            .roc_curves
            .iter()
            .map(|(name, points)| (name.as_str(), points.as_slice()))
            .collect();
        crate::plot::render(&crate::plot::Roc { curves: &curves })
    }
}

/// The evaluation of a run: [`Evaluation`] plus the distinct and novel test views.
pub struct Evaluated {
    /// The traffic-weighted test split (student and teacher ensemble).
    pub evaluation: Evaluation,
    /// The student on each distinct test request once.
    pub distinct: TestView,
    /// The student on the test requests absent from the public split (None when none).
    pub novel: Option<TestView>,
}

/// The best TPR at FPR ≤ 0, 0.5 %, 1 %, 2 % (None for an empty ROC).
pub fn tpr_at_fprs(roc: &[RocPoint]) -> Option<TprAtFpr> {
    (!roc.is_empty()).then(|| TprAtFpr {
        fpr_0: tpr_at_fpr(roc, 0.0),
        fpr_0_005: tpr_at_fpr(roc, 0.005),
        fpr_0_01: tpr_at_fpr(roc, 0.01),
        fpr_0_02: tpr_at_fpr(roc, 0.02),
    })
}

/// Evaluates the student (and the teacher ensemble when given) on labelled rows.
pub fn evaluate(
    student: &ModelFile,
    teachers: &[ModelFile],
    x: &DenseMatrix,
    y: &[bool],
    ensemble_rows: Option<&[usize]>,
    device: tch::Device,
) -> Result<Evaluation> {
    let scores = model_scores(student, x, device)?;
    let (student_metrics, student_roc) = evaluate_scores(&scores, y, student.info.threshold);
    let (ensemble_metrics, ensemble_roc) = if teachers.is_empty() {
        (None, Vec::new())
    } else {
        let (fraction, labels) = match ensemble_rows {
            Some(rows) => (
                super::vote::ensemble_vote_fraction(teachers, &x.select_rows(rows), device)?,
                rows.iter().map(|&r| y[r]).collect::<Vec<bool>>(),
            ),
            None => (
                super::vote::ensemble_vote_fraction(teachers, x, device)?,
                y.to_vec(),
            ),
        };
        let (m, roc) = evaluate_scores(&fraction, &labels, 0.5);
        (Some(m), roc)
    };
    let report = EvaluationReport {
        samples: y.len(),
        student: student_metrics,
        student_tpr_at_fpr: tpr_at_fprs(&student_roc),
        teacher_ensemble_tpr_at_fpr: tpr_at_fprs(&ensemble_roc),
        teacher_ensemble: ensemble_metrics,
        teacher_ensemble_score: TEACHER_ENSEMBLE_SCORE.into(),
        teacher_ensemble_samples: ensemble_rows.map_or(y.len(), |r| r.len()),
    };
    let mut roc_curves = Vec::new();
    if !ensemble_roc.is_empty() {
        let name = format!("{} teachers (noiseless vote share)", teachers.len());
        roc_curves.push((name, ensemble_roc));
    }
    roc_curves.push(("student".to_string(), student_roc));
    Ok(Evaluation { report, roc_curves })
}

/// The test rows the teacher ensemble is evaluated on (`evaluation.ensemble_max`, drawn from the
/// stream `ensemble-evaluation`); `None` for all of them.
pub fn ensemble_rows(config: &RunConfig, test_rows: usize, env: &Env) -> Option<Vec<usize>> {
    config
        .evaluation
        .ensemble_max
        .filter(|&m| m < test_rows)
        .map(|m| {
            let mut rows: Vec<usize> =
                crate::rng::shuffled(test_rows, &mut env.rng.stream("ensemble-evaluation"))
                    .into_iter()
                    .take(m)
                    .collect();
            rows.sort_unstable();
            rows
        })
}

/// The student on a subset of the test rows (`samples` set when `with_samples`).
fn subset_view(
    student: &ModelFile,
    features: &Features,
    rows: &[usize],
    with_samples: bool,
    env: &Env,
) -> Result<TestView> {
    let test = &features.test;
    let scores = model_scores(student, &test.x.select_rows(rows), env.device)?;
    let y: Vec<bool> = rows.iter().map(|&k| test.y[k]).collect();
    let (metrics, roc) = evaluate_scores(&scores, &y, student.info.threshold);
    Ok(TestView {
        samples: with_samples.then_some(rows.len()),
        metrics,
        tpr_at_fpr: tpr_at_fprs(&roc),
    })
}

/// The stage in a run.
pub fn run(
    config: &RunConfig,
    student: &ModelFile,
    teachers: &[ModelFile],
    features: &Features,
    data: &RunData,
    env: &Env,
) -> Result<Evaluated> {
    let (records, splits) = (&data.records, &data.splits);
    let test = &features.test;
    let ensemble_rows = ensemble_rows(config, test.x.rows, env);
    let evaluation = evaluate(
        student,
        teachers,
        &test.x,
        &test.y,
        ensemble_rows.as_deref(),
        env.device,
    )?;
    // The same student on each DISTINCT test request once: the traffic-weighted test split is
    // dominated by a few requests repeated thousands of times (CSIC: 8 static pages are most of
    // the benign test traffic), so its rates move in large steps; this view does not.
    let position: HashMap<usize, usize> = splits
        .test
        .iter()
        .enumerate()
        .map(|(k, &r)| (r, k))
        .collect();
    let distinct_test: Vec<usize> = crate::stages::split::distinct_labelled(records, &splits.test)
        .iter()
        .filter_map(|r| position.get(r).copied())
        .collect();
    let distinct = subset_view(student, features, &distinct_test, false, env)?;
    // "Novel" test requests: those whose request never occurs in the public split (traffic-
    // weighted among themselves). Recurring requests can be learnt from the public pool; these
    // cannot, so they show how the detector generalizes.
    let public_hashes: HashSet<[u8; 32]> = splits
        .public
        .iter()
        .map(|&i| crate::stages::split::request_hash(&records[i]))
        .collect();
    let novel_test: Vec<usize> = (0..splits.test.len())
        .filter(|&k| {
            !public_hashes.contains(&crate::stages::split::request_hash(
                &records[splits.test[k]],
            ))
        })
        .collect();
    let novel = if novel_test.is_empty() {
        None
    } else {
        Some(subset_view(student, features, &novel_test, true, env)?)
    };
    Ok(Evaluated {
        evaluation,
        distinct,
        novel,
    })
}

/// Writes `roc.svg`, `roc.png` and `evaluation.json`.
pub fn write(run: &RunDir, e: &Evaluated) -> Result<()> {
    e.evaluation.roc_plot()?.write(&run.roc(), &run.roc_png())?;
    crate::io::write_json(&run.evaluation(), &e.evaluation.report)
}

/// Scores of one model (e.g. the student) with libtorch.
pub fn model_scores(model: &ModelFile, x: &DenseMatrix, device: Device) -> Result<Vec<f32>> {
    let e = Ensemble::from_members(std::slice::from_ref(&model.weights), device)?;
    Ok(e.scores(x)?.remove(0))
}

/// Metrics and ROC curve of `scores` at `threshold`.
pub fn evaluate_scores(
    scores: &[f32],
    labels: &[bool],
    threshold: f32,
) -> (Metrics, Vec<RocPoint>) {
    (
        Metrics::compute(scores, labels, threshold),
        roc_curve(scores, labels),
    )
}

/// The best TPR over the ROC points with FPR ≤ `max_fpr` (an operating point read off the ROC,
/// not the model's own threshold).
pub fn tpr_at_fpr(roc: &[RocPoint], max_fpr: f64) -> Option<f64> {
    roc.iter()
        .filter(|p| p.fpr <= max_fpr)
        .map(|p| p.tpr)
        .reduce(f64::max)
}
