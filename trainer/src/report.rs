//! The typed run artifacts that are reports: `report.json` ([`Report`]) and `evaluation.json`
//! ([`EvaluationReport`]). The stages build them; `run`, `export`, the sweep and the tests read
//! them back through these types (never by string key).
//!
//! The privacy part is [`privacy::PrivacyReport`] (key `privacy`); the bundle carries only its
//! whitelist ([`privacy::PublishedPrivacy`]) and the student's test [`Metrics`] — everything else
//! here (data-dependent ε, private counts, teacher-ensemble metrics) stays in the run directory.
use std::fmt;
use std::path::{Path, PathBuf};

use privacy::accountant::EpsilonReport;
use privacy::{Mechanism, PrivacyReport, RngProvenance};
use serde::{Deserialize, Serialize};

use crate::config::{FitOn, QuerySelection, SelfTrainingConfig, SplitConfig, TeacherMultiplicity};
use crate::ensemble::MemberReport;
use crate::error::{Error, Result};
use crate::metrics::Metrics;

/// What the teacher ensemble's score is (`evaluation.json`'s `teacher_ensemble_score`).
pub const TEACHER_ENSEMBLE_SCORE: &str =
    "share of teachers voting malicious; malicious when >= 0.5";

/// What `aggregated_label_agreement` measures (`report.json`'s `aggregated_label_agreement_note`).
pub const LABEL_AGREEMENT_NOTE: &str = "share of answered queries whose noisy label equals the query's true label (public-side labels; diagnostic only)";

/// The best TPR on a test ROC at FPR ≤ 0, 0.5 %, 1 % and 2 % (operating points read off the ROC,
/// not the model's threshold); `None` where no ROC point has that FPR.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TprAtFpr {
    /// At FPR 0.
    #[serde(rename = "0")]
    pub fpr_0: Option<f64>,
    /// At FPR ≤ 0.5 %.
    #[serde(rename = "0.005")]
    pub fpr_0_005: Option<f64>,
    /// At FPR ≤ 1 %.
    #[serde(rename = "0.01")]
    pub fpr_0_01: Option<f64>,
    /// At FPR ≤ 2 %.
    #[serde(rename = "0.02")]
    pub fpr_0_02: Option<f64>,
}

/// `evaluation.json`: the student (and the noiseless teacher ensemble) on the test split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationReport {
    /// Test samples.
    pub samples: usize,
    /// The student at its threshold.
    pub student: Metrics,
    /// The student's TPR at fixed FPRs (None: one class absent).
    pub student_tpr_at_fpr: Option<TprAtFpr>,
    /// The teacher ensemble ([`TEACHER_ENSEMBLE_SCORE`]); None without teachers.
    pub teacher_ensemble: Option<Metrics>,
    /// The ensemble's TPR at fixed FPRs.
    pub teacher_ensemble_tpr_at_fpr: Option<TprAtFpr>,
    /// Always [`TEACHER_ENSEMBLE_SCORE`].
    pub teacher_ensemble_score: String,
    /// Test samples the ensemble was evaluated on (`evaluation.ensemble_max`).
    pub teacher_ensemble_samples: usize,
}

/// The student on a subset of the test split (each distinct request once; the novel ones).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestView {
    /// Samples in the subset (written for the novel view only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<usize>,
    /// The student at its threshold.
    pub metrics: Metrics,
    /// The student's TPR at fixed FPRs.
    pub tpr_at_fpr: Option<TprAtFpr>,
}

/// The mechanism's name as the report and the dashboard write it (`lnmax`, `gnmax`,
/// `confident-gnmax`; its parameters are in `mechanism_parameters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MechanismName {
    /// LNMax.
    Lnmax,
    /// GNMax.
    Gnmax,
    /// Confident-GNMax.
    ConfidentGnmax,
    /// One release of the teachers' mean model.
    ModelAverage,
}

impl From<&Mechanism> for MechanismName {
    fn from(m: &Mechanism) -> Self {
        match m {
            Mechanism::Lnmax(_) => MechanismName::Lnmax,
            Mechanism::Gnmax(_) => MechanismName::Gnmax,
            Mechanism::ConfidentGnmax(_) => MechanismName::ConfidentGnmax,
            Mechanism::ModelAverage(_) => MechanismName::ModelAverage,
        }
    }
}

/// The threshold rule the student's threshold came from, with its target FPR (written `youden`,
/// `target_fpr 0.01`, `answered_benign 0.01`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum AppliedThresholdRule {
    /// Youden's J on the validation samples.
    #[default]
    Youden,
    /// The highest-TPR validation point with FPR at most this.
    TargetFpr(f64),
    /// The quantile of the answered-benign scores at this FPR.
    AnsweredBenign(f64),
}

impl fmt::Display for AppliedThresholdRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppliedThresholdRule::Youden => f.write_str("youden"),
            AppliedThresholdRule::TargetFpr(t) => write!(f, "target_fpr {t}"),
            AppliedThresholdRule::AnsweredBenign(t) => write!(f, "answered_benign {t}"),
        }
    }
}

impl std::str::FromStr for AppliedThresholdRule {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let target = |t: &str| {
            t.parse::<f64>()
                .map_err(|e| format!("threshold rule `{s}`: the target FPR: {e}"))
        };
        match s.split_once(' ') {
            None if s == "youden" => Ok(AppliedThresholdRule::Youden),
            Some(("target_fpr", t)) => Ok(AppliedThresholdRule::TargetFpr(target(t)?)),
            Some(("answered_benign", t)) => Ok(AppliedThresholdRule::AnsweredBenign(target(t)?)),
            _ => Err(format!(
                "threshold rule `{s}`: expected `youden`, `target_fpr F` or `answered_benign F`"
            )),
        }
    }
}

impl Serialize for AppliedThresholdRule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AppliedThresholdRule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The featurizer of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeaturizerSummary {
    /// The side it was fitted on.
    pub fit_on: FitOn,
    /// Its content hash.
    pub content_hash: String,
    /// Feature dimension.
    pub dim: usize,
    /// Set when it was fitted on the private data.
    pub warning: Option<String>,
}

/// The `student:` options of the run and what they did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudentOptions {
    /// How the queries were chosen.
    pub query_selection: QuerySelection,
    /// The threshold rule applied.
    pub threshold_rule: AppliedThresholdRule,
    /// `student.target_fpr_confidence`: the budget held at this confidence (null: at the point
    /// estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_fpr_confidence: Option<f64>,
    /// (FPR, TPR) of the chosen threshold on the validation samples (counted with their
    /// traffic when `multiplicity_cap` is set).
    pub validation_operating_point_fpr_tpr: Option<(f64, f64)>,
    /// ROC AUC on the validation samples.
    pub validation_roc_auc: Option<f64>,
    /// TPR at FPR ≤ 1 % on the validation samples.
    pub validation_tpr_at_1pct_fpr: Option<f64>,
    /// TPR at FPR ≤ 1 % on the validation samples counted with their copies in the validation
    /// split (traffic-weighted, uncapped): what recipes are compared on, beside the figure above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_traffic_tpr_at_1pct_fpr: Option<f64>,
    /// Self-training.
    pub self_training: SelfTrainingConfig,
    /// `student.multiplicity_cap`.
    pub multiplicity_cap: Option<usize>,
    /// With a multiplicity cap: the answered rows counted with their (capped) copies.
    pub answered_rows_after_weighting: Option<usize>,
    /// Per self-training round: pseudo-labels added (malicious, benign).
    pub pseudo_labels_malicious_benign_per_round: Vec<(usize, usize)>,
    /// Unlabelled public rows in the self-training pool.
    pub unlabelled_pool: usize,
    /// `student.validation_labels`: the drawn requests the validation split labelled instead of
    /// the teachers (never asked; None when off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_labels_known: Option<usize>,
    /// `student.label_cleaning`: the answered labels left out of the student's training.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_cleaning: Option<CleaningReport>,
    /// With the featurizer's `placements`: the threshold rule was applied to requests scored as
    /// pate-proxy scores them (the highest window): the validation requests (`answered_benign`:
    /// the answered queries labelled benign); the validation figures above are on those too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_scored_as_served: Option<ServedThreshold>,
    /// `student.public_examples.content_only_validation`: the content-only threshold (the
    /// bundle's `content_only_threshold`) and the validation figures at it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_only_threshold: Option<ContentOnlyThreshold>,
}

/// The threshold for scoring content alone (without the site's format checks) and what it blocks
/// of the placed validation values (public data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentOnlyThreshold {
    /// The threshold: the highest of `site_threshold` and each placement's.
    pub threshold: f32,
    /// The threshold that alone holds `target_fpr` on the site's validation traffic scored
    /// without the checks.
    pub site_threshold: f32,
    /// Per placement, at `threshold`.
    pub placements: Vec<ContentOnlyPlacement>,
}

/// One placement's validation figures at the content-only threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentOnlyPlacement {
    /// Where the values were placed.
    pub placement: crate::public_examples::Spot,
    /// The threshold that alone holds the budget on this placement's benign values.
    pub threshold: f32,
    /// The part model's offset for this placement's parts (logit units; 0: none).
    #[serde(default)]
    pub offset: f32,
    /// Share of the placed attack values blocked.
    pub attacks_blocked: f64,
    /// Share of the placed public benign values blocked.
    pub benign_blocked: f64,
}

/// The validation requests a threshold was chosen on, scored as served
/// ([`StudentOptions::threshold_scored_as_served`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedThreshold {
    /// Validation requests scored (the placed public examples included).
    pub validation_requests: usize,
    /// Of them, public examples placed into validation requests
    /// (`student.public_examples.validation`).
    pub placed_public_examples: usize,
}

/// Records per role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitSizes {
    /// Private (teachers).
    pub private: usize,
    /// Public (queries, pool).
    pub public: usize,
    /// Student validation.
    pub student_validation: usize,
    /// Test.
    pub test: usize,
}

/// How the run trained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingSummary {
    /// The libtorch device.
    pub device: String,
    /// Teachers trained in this run.
    pub teachers_trained: usize,
    /// Teachers reused from an earlier run on the same data.
    pub teachers_reused: usize,
    /// Seconds spent training teachers.
    pub teach_seconds: f64,
    /// Teacher layer widths.
    pub teacher_widths: Vec<usize>,
    /// Student layer widths.
    pub student_widths: Vec<usize>,
    /// The student's training.
    pub student: MemberReport,
}

/// The privacy ledger after the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerReport {
    /// The ledger's file name in the run directory.
    pub file: String,
    /// Aggregations recorded.
    pub aggregations: usize,
    /// Their composed data-independent ε.
    pub composed_data_independent_epsilon: f64,
    /// The RDP order of that ε.
    pub rdp_order: f64,
    /// δ.
    pub delta: f64,
}

/// `report.json`: everything a run measured. Only [`Report::privacy`]'s whitelist and
/// [`Report::metrics`] ever leave the run directory (in the bundle).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Teachers.
    pub teachers: usize,
    /// How the teachers weight repeated requests.
    pub teacher_multiplicity: TeacherMultiplicity,
    /// Private rows the teachers trained on (after the multiplicity).
    pub teacher_private_rows: usize,
    /// `teachers.copies_on_one_teacher`.
    pub teacher_copies_on_one_teacher: bool,
    /// Tampered requests of the shards' own benign ones added to the teachers
    /// (`teachers.tamperings`), all teachers together (0 in reports written before it).
    #[serde(default)]
    pub teacher_tampered_rows: usize,
    /// Queries sent to the teachers.
    pub queries: usize,
    /// Queries answered (the student's labelled samples).
    pub answered: usize,
    /// Public labelled examples added to the student.
    pub public_examples: usize,
    /// The aggregation mechanism.
    pub mechanism: MechanismName,
    /// The mechanism with its parameters.
    pub mechanism_parameters: Mechanism,
    /// True when the roles were simulated from one labelled pool.
    pub simulation: bool,
    /// δ.
    pub delta: f64,
    /// The accountant's data-independent ε.
    pub data_independent_epsilon: f64,
    /// Its label.
    pub data_independent_epsilon_label: String,
    /// The accountant's data-dependent ε (not private to publish).
    pub data_dependent_epsilon: f64,
    /// Its label.
    pub data_dependent_epsilon_label: String,
    /// The local ε of each privatized query (None: off).
    pub student_local_epsilon: Option<f64>,
    /// ρ of the query privatization (None: off).
    pub rho: Option<f64>,
    /// The run's randomness.
    pub rng: RngProvenance,
    /// The featurizer.
    pub featurizer: FeaturizerSummary,
    /// The student's threshold.
    pub threshold: f32,
    /// The student on the test split (traffic-weighted).
    pub metrics: Metrics,
    /// The student's TPR at fixed FPRs.
    pub student_tpr_at_fpr: Option<TprAtFpr>,
    /// The student on each distinct test request once (`split::labelled_key`).
    pub student_distinct_test: TestView,
    /// The student on the test requests absent from the public split (None: none).
    pub student_novel_test: Option<TestView>,
    /// `aggregation.malicious_vote_share`.
    pub malicious_vote_share: f64,
    /// The constant added to the benign votes for that share.
    pub vote_shift: i64,
    /// The noiseless teacher ensemble on the test split.
    pub teacher_ensemble_metrics: Option<Metrics>,
    /// Its TPR at fixed FPRs.
    pub teacher_ensemble_tpr_at_fpr: Option<TprAtFpr>,
    /// The student options and what they did.
    pub student_options: StudentOptions,
    /// [`LABEL_AGREEMENT_NOTE`].
    pub aggregated_label_agreement: Option<f64>,
    /// Always [`LABEL_AGREEMENT_NOTE`].
    pub aggregated_label_agreement_note: String,
    /// Labelled requests of the protected site the student side used (validation samples): 0
    /// with `site:`, whose validation data are the site's unlabelled traffic and placed public
    /// attacks.
    #[serde(default)]
    pub student_side_labels: usize,
    /// What the test figures measure (a labelled test role, or the site's held-out traffic and
    /// public attacks placed into it).
    #[serde(default)]
    pub test_data: String,
    /// Where the student's query labels came from (`release`, or `assume_benign` for the
    /// no-private-data baseline).
    #[serde(default = "default_labels_from")]
    pub labels_from: crate::config::LabelsFrom,
    /// The test split scored by the bundle in the mode it recommends, when that is content
    /// alone (`site:`): the figures an operator's default proxy gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_test: Option<ServedTest>,
    /// With `site:`: the held-out traffic the thresholds' budgets are a share of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site_threshold_traffic: Option<SiteThresholdTraffic>,
    /// Records per role.
    pub splits: SplitSizes,
    /// How the run trained.
    pub training: TrainingSummary,
    /// The accountant's full report.
    pub privacy_report: EpsilonReport,
    /// The typed privacy report (the bundle publishes its whitelist).
    pub privacy: PrivacyReport,
    /// Set when δ is not small against the number of private records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_warning: Option<String>,
    /// The privacy ledger after this run.
    pub ledger: LedgerReport,
    /// Set when the featurizer was fitted on the private data.
    #[serde(rename = "WARNING", default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The exported bundle.
    pub bundle: PathBuf,
    /// Seconds the run took.
    pub seconds: f64,
}

/// `splits.json`: how the records were split into roles, the counts, and where each request of
/// each role came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitsReport {
    /// How the roles were assigned.
    pub method: String,
    /// True when the roles were simulated from one labelled pool.
    pub simulation: bool,
    /// The simulation's fractions (None: the roles came from their own files).
    pub fractions: Option<SplitConfig>,
    /// Records per role and what the student side used.
    pub counts: SplitCounts,
    /// The source line of every request of each role (`[line]` per request).
    pub lines: SplitLines,
}

/// Records per role and what the student side used (`splits.json`'s `counts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitCounts {
    /// Private (teachers).
    pub private: usize,
    /// Public.
    pub public: usize,
    /// Student validation.
    pub student_validation: usize,
    /// Test.
    pub test: usize,
    /// Queries sent to the teachers.
    pub queries: usize,
    /// Validation samples the student used.
    pub student_validation_used: usize,
    /// Distinct public requests.
    pub public_distinct: usize,
    /// Distinct validation rows (`split::labelled_key`: a benign request by its request, an
    /// attack with its headers).
    pub student_validation_distinct: usize,
}

/// The source line of every request of each role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitLines {
    /// Private.
    pub private: Vec<[usize; 1]>,
    /// Queries.
    pub queries: Vec<[usize; 1]>,
    /// Validation samples used.
    pub student_validation: Vec<[usize; 1]>,
    /// Test.
    pub test: Vec<[usize; 1]>,
}

/// The parts of a run report that `export` reads: the typed privacy report (of which only the
/// whitelist goes into the bundle), the student's test metrics and its threshold. Every
/// [`Report`] reads as one; a hand-made report may carry only these.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ExportedParts {
    /// The typed privacy report (None: the export claims no ε).
    pub privacy: Option<PrivacyReport>,
    /// The student's test metrics.
    pub metrics: Option<Metrics>,
    /// The student's threshold.
    pub threshold: Option<f32>,
}

/// Reads a JSON report artifact (`report.json`, `evaluation.json`, [`ExportedParts`]).
pub fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| Error::Json {
        path: path.to_owned(),
        source,
    })
}

/// The answered labels [`crate::student::clean_labels`] left out of the student's training.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CleaningReport {
    /// Labels "malicious" left out.
    pub dropped_malicious: usize,
    /// Labels "benign" left out.
    pub dropped_benign: usize,
    /// In a simulation (the queries' true labels known): how many of those left out were wrong.
    pub dropped_wrong: Option<usize>,
}

fn default_labels_from() -> crate::config::LabelsFrom {
    crate::config::LabelsFrom::Release
}

/// [`Report::test_data`] of a run without a labelled test role.
pub const SITE_TEST_DATA: &str = "no labelled test data: the site's held-out traffic (taken as \
    benign: FPR is the share of it flagged) and public attack values placed into its requests \
    (TPR is the share of them blocked)";

/// [`Report::test_data`] of a run with a labelled test role.
pub const LABELLED_TEST_DATA: &str = "the labelled test role";

/// The site's held-out requests (taken as benign) and what left the traffic the thresholds'
/// budgets are a share of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteThresholdTraffic {
    /// Held-out requests of the site's traffic.
    pub held_out: usize,
    /// Distinct held-out requests a public detector (libinjection, the signatures) calls an
    /// attack (`site.threshold_without_known_attacks`): likely attacks in the log.
    pub known_attacks: usize,
}

/// [`Report::served_test`]: the test split through the exported bundle as pate-proxy scores it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServedTest {
    /// The mode: with the site's format checks or on content alone.
    pub format_checks: bool,
    /// The bundle's threshold for that mode.
    pub threshold: f32,
    /// Share of the test's malicious requests blocked.
    pub tpr: f64,
    /// Share of the test's benign requests blocked.
    pub fpr: f64,
    /// Malicious test requests.
    pub positives: usize,
    /// Benign test requests.
    pub negatives: usize,
}
