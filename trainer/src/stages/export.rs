//! Stage 8, `export`: the run's report (`report.json`: metrics, privacy, provenance) and the
//! ONNX bundle for pate-proxy (`bundle/`), which carries only the report's publishable parts.
use crate::cli::export::{export_bundle, report_metrics, REPORT_PRIVACY_KEY};
use crate::config::{FitOn, RunConfig};
use crate::device;
use crate::error::{Error, Result};
use crate::pipeline::{self, RunData};
use crate::rundir::{RunDir, RunManifest, LEDGER_FILE};

use super::aggregate::{Aggregation, LedgerSummary};
use super::evaluate::Evaluated;
use super::featurize::{Features, PRIVATE_FEATURIZER_WARNING};
use super::split::QueryPlan;
use super::student::Student;
use super::teach::Teachers;
use super::Env;

/// Every artifact of a run the report reads.
pub struct Parts<'a> {
    /// The configuration.
    pub config: &'a RunConfig,
    /// The records and their roles.
    pub data: &'a RunData,
    /// The queries and validation samples.
    pub plan: &'a QueryPlan,
    /// The featurized sets.
    pub features: &'a Features,
    /// The teachers.
    pub teachers: &'a Teachers,
    /// The noisy labels and their ε.
    pub aggregation: &'a Aggregation,
    /// The privacy ledger after this run.
    pub ledger: &'a LedgerSummary,
    /// The privacy noise generator (its provenance).
    pub noise: &'a privacy::NoiseRng,
    /// The student.
    pub student: &'a Student,
    /// The evaluation.
    pub evaluated: &'a Evaluated,
    /// Randomness, device, start time.
    pub env: &'a Env,
}

/// The typed privacy report of a run (the bundle's privacy section is its published part).
pub fn privacy_report(p: &Parts) -> privacy::PrivacyReport {
    let (config, a) = (p.config, p.aggregation);
    privacy::PrivacyReport {
        simulation: config.is_simulation(),
        mechanism: config.privacy.mechanism,
        delta: config.privacy.delta,
        queries: p.plan.query_rows.len(),
        answered_queries: p.student.answered.len(),
        rng: p.noise.provenance(),
        rho: config.privacy.rho,
        student_local_epsilon: config.privacy.rho.map(privacy::privatize::local_epsilon),
        featurizer: privacy::FeaturizerProvenance {
            fit_on: match config.featurizer.fit_on {
                FitOn::Public => privacy::FitSide::Public,
                FitOn::Private => privacy::FitSide::Private,
            },
            content_hash: p.features.hash.clone(),
        },
        accountant: a.epsilon.clone(),
        delta_warning: a.delta_warning.clone(),
    }
}

fn student_options(p: &Parts) -> serde_json::Value {
    let (s, student) = (&p.config.student, p.student);
    serde_json::json!({
        "query_selection": s.query_selection,
        "threshold_rule": student.extras.threshold_rule,
        "validation_operating_point_fpr_tpr": student.extras.validation_operating_point,
        "validation_roc_auc": student.extras.validation_roc_auc,
        "validation_tpr_at_1pct_fpr": student.extras.validation_tpr_at_1pct_fpr,
        "self_training": s.self_training,
        "multiplicity_cap": s.multiplicity_cap,
        "answered_rows_after_weighting": s.multiplicity_cap.map(|_| student.answered.iter().map(|&i| p.plan.query_copies[i]).sum::<usize>()),
        "pseudo_labels_malicious_benign_per_round": student.extras.pseudo_labels,
        "unlabelled_pool": p.plan.pool_rows.len(),
    })
}

/// `report.json` (without `bundle` and `seconds`, which [`run`] adds) and the typed privacy report.
pub fn report(p: &Parts) -> Result<(serde_json::Value, privacy::PrivacyReport)> {
    let (config, splits, a) = (p.config, &p.data.splits, p.aggregation);
    let (evaluation, student) = (&p.evaluated.evaluation, &p.student.model);
    let epsilon = &a.epsilon;
    let teachers = config.teachers.count;
    let share = config.aggregation.malicious_vote_share;
    let dim = p.features.featurizer.dim();
    let private_featurizer = matches!(config.featurizer.fit_on, FitOn::Private);
    let mut report = serde_json::json!({
        "teachers": teachers,
        "teacher_multiplicity": String::from(config.teachers.weighting()),
        "teacher_private_rows": p.features.private_rows.len(),
        "teacher_copies_on_one_teacher": config.teachers.copies_on_one_teacher,
        "queries": p.plan.query_rows.len(),
        "answered": p.student.answered.len(),
        "public_examples": p.student.public_examples,
        "mechanism": config.privacy.mechanism.name(),
        "mechanism_parameters": config.privacy.mechanism,
        "simulation": config.is_simulation(),
        "delta": config.privacy.delta,
        "data_independent_epsilon": epsilon.data_independent_epsilon,
        "data_independent_epsilon_label": epsilon.data_independent_label,
        "data_dependent_epsilon": epsilon.data_dependent_epsilon,
        "data_dependent_epsilon_label": epsilon.data_dependent_label,
        "student_local_epsilon": config.privacy.rho.map(privacy::privatize::local_epsilon),
        "rho": config.privacy.rho,
        "rng": p.env.rng.provenance(),
        "featurizer": {
            "fit_on": config.featurizer.fit_on,
            "content_hash": p.features.hash,
            "dim": dim,
            "warning": private_featurizer.then_some(PRIVATE_FEATURIZER_WARNING),
        },
        "threshold": student.info.threshold,
        "metrics": evaluation.student,
        "student_tpr_at_fpr": evaluation.student_tpr_at_fpr,
        "student_distinct_test": p.evaluated.distinct,
        "student_novel_test": p.evaluated.novel,
        "malicious_vote_share": share,
        "vote_shift": pipeline::vote_share_shift(share, teachers),
        "teacher_ensemble_metrics": evaluation.ensemble,
        "teacher_ensemble_tpr_at_fpr": evaluation.ensemble_tpr_at_fpr,
        "student_options": student_options(p),
        "aggregated_label_agreement": p.student.label_agreement,
        "aggregated_label_agreement_note": "share of answered queries whose noisy label equals the query's true label (public-side labels; diagnostic only)",
        "splits": {
            "private": splits.private.len(), "public": splits.public.len(),
            "student_validation": splits.student_validation.len(), "test": splits.test.len(),
        },
        "training": {
            "device": device::name(p.env.device),
            "teacher_mode": config.teachers.mode,
            "teachers_trained": p.teachers.trained,
            "teachers_reused": p.teachers.reused,
            "teach_seconds": p.teachers.seconds,
            "teacher_widths": config.teachers.training.dims(dim),
            "student_widths": config.student.training.dims(dim),
            "student": student.info.training,
        },
        "privacy_report": epsilon,
    });
    let privacy_report = privacy_report(p);
    report[REPORT_PRIVACY_KEY] =
        serde_json::to_value(&privacy_report).map_err(|e| Error::Invalid(e.to_string()))?;
    if let Some(w) = &a.delta_warning {
        report["delta_warning"] = serde_json::Value::String(w.clone());
    }
    report["ledger"] = serde_json::json!({
        "file": LEDGER_FILE,
        "aggregations": p.ledger.aggregations,
        "composed_data_independent_epsilon": p.ledger.composed_epsilon,
        "rdp_order": p.ledger.rdp_order,
        "delta": config.privacy.delta,
    });
    if private_featurizer {
        report["WARNING"] = serde_json::Value::String(PRIVATE_FEATURIZER_WARNING.into());
    }
    Ok((report, privacy_report))
}

/// Exports the run's bundle (`bundle/`) and writes `report.json`; returns the report. A run
/// whose ε does not hold is exported as not private (the `export` command refuses such a run
/// unless --not-private).
pub fn run(
    run: &RunDir,
    mut report: serde_json::Value,
    privacy_report: &privacy::PrivacyReport,
    student: &Student,
    features: &Features,
    manifest: &mut RunManifest,
    env: &Env,
) -> Result<serde_json::Value> {
    super::banner("export the ONNX bundle", env.started);
    let published = privacy_report
        .published(true)
        .map_err(|e| Error::Invalid(format!("privacy whitelist: {e}")))?;
    if published.published_epsilon.is_none() {
        tracing::info!(
            "run: the bundle claims no ε: {}",
            published.published_epsilon_kind
        );
    }
    let metrics_part = report_metrics(&report);
    export_bundle(
        &run.bundle(),
        &student.model.weights,
        &features.featurizer,
        student.model.info.threshold,
        Some(published),
        metrics_part,
    )?;
    report["bundle"] = serde_json::Value::String(run.bundle().display().to_string());
    report["seconds"] = serde_json::json!(env.started.elapsed().as_secs_f64());
    pipeline::write_json(&run.report(), &report)?;
    manifest.record(run, "export+report", &[run.bundle(), run.report()])?;
    Ok(report)
}
