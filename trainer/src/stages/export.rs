//! Stage 8, `export`: the run's report (`report.json`: metrics, privacy, provenance) and the
//! ONNX bundle for pate-proxy (`bundle/`), which carries only the report's publishable parts.
use std::path::PathBuf;

use crate::cli::export::{bundle_metrics, export_bundle};
use crate::config::{FitOn, RunConfig};
use crate::device;
use crate::error::{Error, Result};
use crate::report::{
    FeaturizerSummary, LedgerReport, MechanismName, Report, SplitSizes, StudentOptions,
    TrainingSummary, LABEL_AGREEMENT_NOTE,
};
use crate::rundir::{RunDir, RunManifest, LEDGER_FILE};
use crate::stages::split::RunData;

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

fn student_options(p: &Parts) -> StudentOptions {
    let (s, student) = (&p.config.student, p.student);
    StudentOptions {
        query_selection: s.query_selection,
        threshold_rule: student.extras.threshold_rule,
        target_fpr_confidence: s.target_fpr_confidence,
        validation_operating_point_fpr_tpr: student.extras.validation_operating_point,
        validation_roc_auc: student.extras.validation_roc_auc,
        validation_tpr_at_1pct_fpr: student.extras.validation_tpr_at_1pct_fpr,
        validation_traffic_tpr_at_1pct_fpr: student.extras.validation_traffic_tpr_at_1pct_fpr,
        self_training: s.self_training.clone(),
        multiplicity_cap: s.multiplicity_cap,
        answered_rows_after_weighting: s.multiplicity_cap.map(|_| {
            student
                .answered
                .iter()
                .map(|&i| p.plan.query_copies[i])
                .sum::<usize>()
        }),
        pseudo_labels_malicious_benign_per_round: student.extras.pseudo_labels.clone(),
        unlabelled_pool: p.plan.pool_rows.len(),
        label_cleaning: student.cleaning,
        validation_labels_known: student.validation_labels_known,
        threshold_scored_as_served: student.extras.served,
        content_only_threshold: student.extras.content_only.clone(),
    }
}

/// With `site:`, [`crate::report::SiteThresholdTraffic`]: the held-out requests of the site's
/// traffic (its benign-labelled validation records) and the distinct ones a public detector
/// left out.
fn site_threshold_traffic(p: &Parts) -> Option<crate::report::SiteThresholdTraffic> {
    p.config.site.as_ref()?;
    let records = &p.data.records;
    let benign = |i: usize| records[i].label == Some(datasets::Label::Benign);
    let held_out: Vec<usize> = p
        .data
        .splits
        .student_validation
        .iter()
        .copied()
        .filter(|&i| benign(i))
        .collect();
    let known_attacks = p
        .plan
        .validation_rows
        .iter()
        .zip(&p.features.validation_known_attack)
        .filter(|&(&i, &known)| benign(i) && known)
        .count();
    Some(crate::report::SiteThresholdTraffic {
        held_out: held_out.len(),
        known_attacks,
    })
}

/// The run's report; `bundle` is where [`run`] exports the bundle, and `seconds` the time so far
/// ([`run`] sets it again once the bundle is written).
pub fn report(p: &Parts, bundle: PathBuf) -> Report {
    let (config, splits, a) = (p.config, &p.data.splits, p.aggregation);
    let (evaluation, student) = (&p.evaluated.evaluation.report, &p.student.model);
    let epsilon = &a.epsilon;
    let teachers = config.teachers.count;
    let share = config.aggregation.malicious_vote_share;
    let dim = p.features.featurizer.dim();
    let private_featurizer = matches!(config.featurizer.fit_on, FitOn::Private);
    let warning = private_featurizer.then(|| PRIVATE_FEATURIZER_WARNING.to_string());
    Report {
        teachers,
        teacher_multiplicity: config.teachers.weighting(),
        teacher_private_rows: p.features.private_rows.len(),
        teacher_copies_on_one_teacher: config.teachers.copies_on_one_teacher,
        teacher_tampered_rows: p.teachers.tampered_rows,
        queries: p.plan.query_rows.len(),
        answered: p.student.answered.len(),
        public_examples: p.student.public_examples,
        mechanism: MechanismName::from(&config.privacy.mechanism),
        mechanism_parameters: config.privacy.mechanism,
        simulation: config.is_simulation(),
        delta: config.privacy.delta,
        data_independent_epsilon: epsilon.data_independent_epsilon,
        data_independent_epsilon_label: epsilon.data_independent_label.clone(),
        data_dependent_epsilon: epsilon.data_dependent_epsilon,
        data_dependent_epsilon_label: epsilon.data_dependent_label.clone(),
        student_local_epsilon: config.privacy.rho.map(privacy::privatize::local_epsilon),
        rho: config.privacy.rho,
        rng: p.env.rng.provenance(),
        featurizer: FeaturizerSummary {
            fit_on: config.featurizer.fit_on,
            content_hash: p.features.hash.clone(),
            dim,
            warning: warning.clone(),
        },
        threshold: student.info.threshold,
        metrics: evaluation.student.clone(),
        student_tpr_at_fpr: evaluation.student_tpr_at_fpr,
        student_distinct_test: p.evaluated.distinct.clone(),
        student_novel_test: p.evaluated.novel.clone(),
        malicious_vote_share: share,
        vote_shift: crate::votes::vote_share_shift(share, teachers),
        teacher_ensemble_metrics: evaluation.teacher_ensemble.clone(),
        teacher_ensemble_tpr_at_fpr: evaluation.teacher_ensemble_tpr_at_fpr,
        student_options: student_options(p),
        aggregated_label_agreement: p.student.label_agreement,
        aggregated_label_agreement_note: LABEL_AGREEMENT_NOTE.into(),
        student_side_labels: if let Some(site) = &config.site {
            site.review
        } else {
            p.plan.validation_rows.len()
        },
        test_data: if config.site.is_some() && config.test.is_empty() && !config.is_simulation() {
            crate::report::SITE_TEST_DATA
        } else {
            crate::report::LABELLED_TEST_DATA
        }
        .to_string(),
        labels_from: config.student.labels_from,
        served_test: None,
        site_threshold_traffic: site_threshold_traffic(p),
        splits: SplitSizes {
            private: splits.private.len(),
            public: splits.public.len(),
            student_validation: splits.student_validation.len(),
            test: splits.test.len(),
        },
        training: TrainingSummary {
            device: device::name(p.env.device),
            teachers_trained: p.teachers.trained,
            teachers_reused: p.teachers.reused,
            teach_seconds: p.teachers.seconds,
            teacher_widths: config.teachers.training.dims(dim),
            student_widths: config.student.training.dims(dim),
            student: student.info.training.clone(),
        },
        privacy_report: epsilon.clone(),
        privacy: privacy_report(p),
        delta_warning: a.delta_warning.clone(),
        ledger: LedgerReport {
            file: LEDGER_FILE.into(),
            aggregations: p.ledger.aggregations,
            composed_data_independent_epsilon: p.ledger.composed_epsilon,
            rdp_order: p.ledger.rdp_order,
            delta: config.privacy.delta,
        },
        warning,
        bundle,
        seconds: p.env.started.elapsed().as_secs_f64(),
    }
}

/// Builds the report, exports the run's bundle (`bundle/`) and writes `report.json`; returns the
/// The test split scored by the exported bundle as pate-proxy serves it on content alone (the
/// mode a `site:` bundle recommends), at its content-only threshold.
fn served_test(p: &Parts, bundle_dir: &std::path::Path) -> Result<crate::report::ServedTest> {
    let bundle = bundle::Bundle::load(bundle_dir)?;
    let mut scorer = crate::served::ServedScorer::new(&bundle, false)?;
    let threshold = bundle.manifest.threshold_for(false);
    let (mut tp, mut fp, mut positives, mut negatives) = (0usize, 0usize, 0usize, 0usize);
    for &i in &p.data.splits.test {
        let record = &p.data.records[i];
        let blocked = bundle::is_block(scorer.score(&record.parts())?, threshold);
        if record.label == Some(datasets::Label::Malicious) {
            positives += 1;
            tp += usize::from(blocked);
        } else {
            negatives += 1;
            fp += usize::from(blocked);
        }
    }
    let rate = |k: usize, n: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    let served = crate::report::ServedTest {
        format_checks: false,
        threshold,
        tpr: rate(tp, positives),
        fpr: rate(fp, negatives),
        positives,
        negatives,
    };
    tracing::info!(
        "evaluate: as served (content only, threshold {threshold}): TPR {:.4} FPR {:.4} on the test split",
        served.tpr,
        served.fpr
    );
    Ok(served)
}

/// report. A run whose ε does not hold is exported as not private (the `export` command refuses
/// such a run unless --not-private).
pub fn run(run: &RunDir, p: &Parts, manifest: &mut RunManifest) -> Result<Report> {
    let mut report = report(p, run.bundle());
    super::banner("export the ONNX bundle", p.env.started);
    let published = report.privacy.published(true).map_err(Error::Whitelist)?;
    if published.published_epsilon.is_none() {
        tracing::info!(
            "run: the bundle claims no ε: {}",
            published.published_epsilon_kind
        );
    }
    export_bundle(
        &report.bundle,
        &bundle::BundleContents {
            mlp: &p.student.model.weights,
            featurizer: &p.features.featurizer,
            threshold: p.student.model.info.threshold,
            content_only_threshold: p.student.model.info.content_only_threshold,
            part_model: p.student.part_model.as_ref().map(|m| &m.weights),
            part_model_offsets: match p.student.part_model {
                Some(_) => p.student.model.info.part_model_offsets.clone(),
                None => bundle::PartOffsets::default(),
            },
            privacy: Some(published),
            metrics: bundle_metrics(&report.metrics),
            model_version: None,
            format_checks: p.config.site.as_ref().map(|s| s.format_checks),
        },
    )?;
    if p.config.site.as_ref().is_some_and(|s| !s.format_checks) {
        report.served_test = Some(served_test(p, &report.bundle)?);
    }
    report.seconds = p.env.started.elapsed().as_secs_f64();
    crate::io::write_json(&run.report(), &report)?;
    manifest.record(run, "export+report", &[run.bundle(), run.report()])?;
    Ok(report)
}
