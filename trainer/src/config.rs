//! The YAML configuration of `pate-trainer run`. Every default is the recommended recipe (the
//! nested ones in [`crate::recipe`]), so a config states only what differs from it
//! (`configs/train.yaml`: the CSIC simulation's data). Unknown keys are errors
//! (`deny_unknown_fields`), and every check names its key.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::device::DeviceChoice;
use crate::ensemble::{MemberThreshold, TrainConfig};
use crate::error::{Error, Result};

/// The whole run configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// A fixed seed for every random choice (shards, initialization, batches, noise). Only for
    /// experiments: the privacy guarantee assumes fresh OS randomness, which is the default (absent
    /// or null); a seeded run is recorded as such in every artifact.
    #[serde(default)]
    pub seed: Option<u64>,
    /// `auto`, `cpu`, `cuda` or `cuda:<i>` (the command line's `--device` overrides it).
    #[serde(default = "default_device")]
    pub device: DeviceChoice,
    /// libtorch intra-op CPU threads (null: libtorch's default, one per core). Small networks
    /// on a busy machine run much faster with 1 (OpenMP threads spin while waiting).
    #[serde(default)]
    pub threads: Option<usize>,
    /// `private:` the teachers' labelled logs: the ONLY data under ε (unit: one request record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub private: Vec<DatasetSource>,
    /// `public:` the student's unlabelled traffic: featurizer corpus and query pool. Labels, if
    /// the files have them, are never read for training (only for a diagnostic in the report).
    /// No guarantee covers it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub public: Vec<DatasetSource>,
    /// `validation:` a small labelled set the operator declares public: the student's early
    /// stopping and threshold. No guarantee covers it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation: Vec<DatasetSource>,
    /// `test:` labelled evaluation data (never used for a choice).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test: Vec<DatasetSource>,
    /// Instead of the four roles, a SIMULATION for evaluation: one pool of labelled files split
    /// record by record into the four roles (`split: {simulate_from: [...], private: 0.6, ...}`).
    /// The report and docs call such a run a simulation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SimulatedSplit>,
    /// The featurizer.
    #[serde(default)]
    pub featurizer: FeaturizerSection,
    /// The teachers.
    #[serde(default)]
    pub teachers: TeachersConfig,
    /// The student.
    #[serde(default)]
    pub student: StudentConfig,
    /// Query privatization, aggregation and accounting.
    #[serde(default)]
    pub privacy: PrivacyConfig,
    /// How the teachers' votes are turned into a label before the noisy aggregation.
    #[serde(default)]
    pub aggregation: AggregationConfig,
    /// Evaluation on the test split.
    #[serde(default)]
    pub evaluation: EvaluationConfig,
    /// `site:` no labelled data of the protected site: its validation (and, without a `test:`
    /// role, its test) data are held out of its unlabelled traffic (`public:`) and public attacks
    /// placed into them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<SiteConfig>,
}

/// The site's labels derived without labelling (`site:`): a share of the site's unlabelled
/// traffic (the `public:` role), chosen by a hash of each record, is held out and taken as
/// benign — real traffic is overwhelmingly benign, and an attack in it only makes the threshold
/// stricter — and public attack values are placed into copies of those requests as its attacks.
/// Nothing here reads private data.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SiteConfig {
    /// Share of the site's traffic held out as the validation traffic (threshold, rarity table).
    pub validation: f64,
    /// Share held out as the report's traffic when there is no labelled `test:` role.
    pub test: f64,
    /// Public attack values (the held-out tenth of `student.public_examples.files`) placed into
    /// the validation traffic's requests, labelled malicious.
    pub validation_attacks: usize,
    /// Attack values of `test_attack_files` placed into the test traffic's requests (without a
    /// `test:` role).
    pub test_attacks: usize,
    /// Public attack files for the test's placed attacks: read for nothing else.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub test_attack_files: Vec<DatasetSource>,
    /// The validation traffic the teachers' release labels malicious (likely the attacks real
    /// traffic holds) is left out of the traffic the threshold's budget is a share of: the budget
    /// then goes to benign requests, not to attacks the student rightly flags. Post-processing
    /// of the release (`privacy.mechanism: model_average`); no effect otherwise.
    pub threshold_without_release_flagged: bool,
    /// The validation traffic a public detector calls an attack (in any part: libinjection's SQL
    /// injection or XSS, or a signature: path traversal, a system file, a shell command, a long
    /// run of one byte) is left out of the traffic the thresholds' budgets are a share of, as the
    /// release-flagged one is: a scanner's burst in the log would otherwise spend the budget and
    /// lift the threshold above the very attacks it sent. What it leaves out can add at most its
    /// own share to the flagged share of benign traffic (the run logs the count). Public
    /// knowledge, no ε.
    pub threshold_without_known_attacks: bool,
    /// Which requests are held out: `last` (the default: the last ones of the logs, in order —
    /// tomorrow's traffic, new pages included, is what the threshold must hold on) or `hash`
    /// (each record by a hash of itself, as a simulation's pool has no order).
    pub holdout: SiteHoldout,
    /// The bundle's recommendation for pate-proxy's `format_checks` (bundle.yaml
    /// `format_checks`). `false` (the default): a site's unlabelled log does not cover the pages
    /// and parameters it will add, and its format model flagged them (the second site's new
    /// pages, a new query parameter); content alone is scored, with the part model. `true` for a
    /// site whose traffic the held-out share covers (a simulation's pool).
    pub format_checks: bool,
    /// A simulation's operator review: the labels of the `review` highest-scoring distinct
    /// requests of the validation traffic are read (an operator looking at what the bundle flags
    /// in detect mode), and those that are attacks leave the traffic the threshold's budget is a
    /// share of. At most [`MAX_SITE_REVIEW`]; the report's `student_side_labels`. 0 (the
    /// default): no label of the site is read.
    pub review: usize,
    /// How much one client may shape the site's format model: its requests count at most this
    /// many times per value, path or name in the rarity table (counted on the validation
    /// traffic), so a client repeating a payload (a scanner) cannot make its values the site's
    /// own. The thresholds' budgets stay shares of every held-out request (what bounds a scanner
    /// there is `threshold_without_known_attacks`). Clients are an access log's remote host or a
    /// capture's address; a request without one counts as its own client. `null`: every request
    /// counts.
    pub requests_per_client: Option<u32>,
}

/// The most student-side labels `site.review` may read.
pub const MAX_SITE_REVIEW: usize = 200;

/// How `site:` chooses the held-out traffic ([`SiteConfig::holdout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteHoldout {
    /// The last requests of the logs, in order.
    Last,
    /// Each record by a hash of itself.
    Hash,
}

impl Default for SiteConfig {
    fn default() -> Self {
        SiteConfig {
            validation: 0.2,
            test: 0.1,
            validation_attacks: 600,
            test_attacks: 1000,
            test_attack_files: Vec::new(),
            threshold_without_release_flagged: true,
            threshold_without_known_attacks: true,
            holdout: SiteHoldout::Last,
            format_checks: false,
            review: 0,
            requests_per_client: Some(2),
        }
    }
}

/// The aggregation section: calibrated aggregation.
///
/// Small-shard teachers under-call attacks (issue 16: queries with 10–30 % of the teachers
/// voting malicious are about half malicious), so plurality (a vote share of 0.5) mislabels many
/// attacks. With `malicious_vote_share: s` the noisy max is taken over the counts
/// (benign, malicious + c) with the constant c = round(N · (1 − 2s)) for N teachers: without noise
/// that decides malicious exactly when at least a share s of the teachers (up to the rounding of
/// c) vote malicious. c depends only on the configuration and the number of teachers, never on
/// the private data, and adding a constant to the count vector leaves its sensitivity unchanged
/// (one teacher's vote moving still changes two counts by one each), so the LNMax / GNMax /
/// Confident-GNMax analyses hold unchanged for the shifted counts; the accountant is given the
/// shifted counts, which is the vote matrix the mechanism actually releases the noisy argmax of.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AggregationConfig {
    /// The share of teachers voting malicious at which (without noise) a query is labelled
    /// malicious; default 0.35 (with `model_average` it only shifts the votes kept for the
    /// label-agreement diagnostic); 0.5 = plurality (no shift).
    pub malicious_vote_share: f64,
    /// How `privacy.mechanism: model_average`'s released mean model labels the queries (only
    /// with that mechanism; absent: the defaults).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_average: Option<ModelAverageLabelling>,
}

impl Default for AggregationConfig {
    fn default() -> Self {
        AggregationConfig {
            malicious_vote_share: 0.35,
            model_average: None,
        }
    }
}

/// `aggregation.model_average`: post-processing of the released noisy mean of the teachers'
/// models (no ε of its own: it reads the release and public data only).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelAverageLabelling {
    /// Weights within this many noise standard deviations of 0 are set to 0 and the others moved
    /// toward 0 by as much (soft thresholding): the teachers' mean is sparse, the noise is on
    /// every weight, and a request's score would sum the noise of all its features (lab: labels
    /// right on every public request 90.3 % with none, 96.0 % at 3, at ε 2).
    pub soft_threshold: f64,
    /// A query is labelled malicious when it scores at least as high as this share of the
    /// labelled validation split's distinct malicious requests do: the attacks the teachers miss
    /// cost the student more than benign requests they flag; 0.97 was chosen on CSIC's validation
    /// split over 0.95-0.99 (EVALUATION.md, "One release of the teachers' mean model").
    pub validation_recall: f64,
    /// With it, the label threshold is also at least as high as flags this share of the
    /// validation split's distinct benign requests (with `site:`, the site's held-out traffic):
    /// placed public attacks may score below much of a site's own traffic, and a recall on them
    /// alone would label much of that traffic malicious. Null: recall alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_fpr: Option<f64>,
}

impl Default for ModelAverageLabelling {
    fn default() -> Self {
        ModelAverageLabelling {
            soft_threshold: 3.0,
            validation_recall: 0.97,
            validation_fpr: None,
        }
    }
}

/// The evaluation section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvaluationConfig {
    /// The teacher ensemble (N full networks per request) is evaluated on at most this many test
    /// requests, drawn at random (default 2000; null: all); the student always on the whole
    /// test split.
    pub ensemble_max: Option<usize>,
}

impl Default for EvaluationConfig {
    fn default() -> Self {
        EvaluationConfig {
            ensemble_max: Some(2000),
        }
    }
}

fn default_device() -> DeviceChoice {
    DeviceChoice::Auto
}

/// One dataset file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSource {
    /// The file; a relative path is relative to the directory of the config file.
    pub path: PathBuf,
    /// Its format (`csic|fwaf|httpparams|csv|apache`).
    pub format: datasets::Format,
    /// Label every request of the file with this label, whatever the file says.
    #[serde(default)]
    pub label: Option<datasets::Label>,
    /// Use at most this many requests of the file (the first ones), e.g. for quick runs.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The simulation mode (`split:`): one pool of labelled files split into the four roles, record
/// by record ([`crate::stages::split::split_by_record`]): the k-th copy of a (request, label) goes to
/// a role by a hash of (request, label, k), so every record is in exactly one role and a
/// recurring request (a static page) appears in the private, public and test roles in proportion,
/// as in real traffic.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulatedSplit {
    /// The labelled files to split.
    pub simulate_from: Vec<DatasetSource>,
    /// Share of the records simulated as the teachers' private logs (default 0.6).
    #[serde(default = "default_private_fraction")]
    pub private: f64,
    /// Share simulated as public traffic (featurizer corpus, query pool; default 0.2).
    #[serde(default = "default_public_fraction")]
    pub public: f64,
    /// Share simulated as the operator's public labelled validation set (default 0.1: the
    /// threshold's FPR budget is estimated on it).
    #[serde(default = "default_validation_fraction")]
    pub validation: f64,
    /// Share simulated as test data (default 0.1).
    #[serde(default = "default_test_fraction")]
    pub test: f64,
    /// The share of attacks the simulated public traffic keeps (null: all of the pool's): the
    /// pool's other attacks are dropped, by a hash of each record, as a site's real traffic holds
    /// far fewer attacks than a labelled corpus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_attack_share: Option<f64>,
}

fn default_private_fraction() -> f64 {
    0.6
}
fn default_public_fraction() -> f64 {
    0.2
}
fn default_validation_fraction() -> f64 {
    0.1
}
fn default_test_fraction() -> f64 {
    0.1
}

impl SimulatedSplit {
    /// The four fractions.
    pub fn fractions(&self) -> SplitConfig {
        SplitConfig {
            private: self.private,
            public: self.public,
            validation: self.validation,
            test: self.test,
        }
    }
}

/// The fractions of a simulated split (see [`SimulatedSplit`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SplitConfig {
    /// The teachers' private data (partitioned into disjoint shards).
    pub private: f64,
    /// The public side: the featurizer's fitting corpus and the query pool.
    pub public: f64,
    /// Labelled public samples for the student's early stopping and threshold. Runs and sweeps
    /// written before ee46a94 named it `student_validation`; the alias reads those as what they
    /// are, the same fraction.
    #[serde(alias = "student_validation")]
    pub validation: f64,
    /// The test split (evaluation only).
    pub test: f64,
}

impl Default for SplitConfig {
    fn default() -> Self {
        SplitConfig {
            private: default_private_fraction(),
            public: default_public_fraction(),
            validation: default_validation_fraction(),
            test: default_test_fraction(),
        }
    }
}

/// Where the featurizer's vocabulary and IDF come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitOn {
    /// The public (student) side: no privacy cost.
    Public,
    /// The teachers' private data: the vocabulary then reveals which tokens the private data
    /// contains, which no PATE bound covers. The report carries a loud warning.
    Private,
}

/// Which requests the featurizer's rarity table (the site's format model: `rare:*`,
/// `unseen:path`, `odd:*`) counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RarityOn {
    /// The rows the vocabulary is fitted on (`fit_on`).
    FitOn,
    /// The validation split's requests labelled benign: public, labelled data, so the table is
    /// a model of the site's BENIGN formats. The public pool holds the site's attacks too, and
    /// counted on it a character only attacks put into a parameter (`/` in a password) is as
    /// common as the rarer benign ones, so `odd:char<1 %` never fires on it. Each validation
    /// request is scored with the table of the other folds (`stages::featurize::ValidationFolds`),
    /// so that the threshold sees the site's benign formats as new traffic does. The default.
    #[default]
    ValidationBenign,
}

/// The featurizer section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeaturizerSection {
    /// Which side the vocabulary and IDF are fitted on.
    #[serde(default = "default_fit_on")]
    pub fit_on: FitOn,
    /// Which requests the rarity table counts (with `config.rarity_min_count`): `fit_on`'s rows
    /// or the validation split's benign requests (`validation_benign`, the default; [`RarityOn`]).
    #[serde(default)]
    pub rarity_on: RarityOn,
    /// The featurizer's own settings; default [`crate::recipe::featurizer`], and the keys a config
    /// gives replace those of it.
    #[serde(
        default = "crate::recipe::featurizer",
        deserialize_with = "crate::recipe::featurizer_over",
        serialize_with = "crate::recipe::featurizer_written"
    )]
    pub config: featurizer::FeaturizerConfig,
    /// A file of real browsers' User-Agent strings (one per line, as
    /// `student.public_examples.user_agents`; public data): every header value such a browser
    /// sends — its User-Agent, and the Accept, Accept-Encoding and Accept-Language of its family
    /// ([`crate::public_examples::browser_headers`]) — is a known header value, for nine in ten
    /// of them ([`crate::public_examples::is_known_browser`])
    /// (`config.placements.known_header_permille`, which it needs), read as its name and a
    /// `known` mark whatever its share of the site's requests; with
    /// `config.placements.known_digit_runs` also with other version numbers. Why: a browser's
    /// User-Agent and Accept strings the site's data never showed were read as hundreds of
    /// n-grams that diluted the request line's own features in the l2-normalized vector, so the
    /// same anomalous request scored far lower from a real browser than from the site's own
    /// client (EVALUATION.md, "Real browsers' headers"). A relative path is relative to the
    /// config file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_browsers: Option<PathBuf>,
}

fn default_fit_on() -> FitOn {
    FitOn::Public
}

impl Default for FeaturizerSection {
    fn default() -> Self {
        FeaturizerSection {
            fit_on: FitOn::Public,
            rarity_on: RarityOn::ValidationBenign,
            config: crate::recipe::featurizer(),
            known_browsers: None,
        }
    }
}

/// The teachers section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TeachersConfig {
    /// Number of teachers (disjoint shards of the private data).
    pub count: usize,
    /// The removed `teachers.mode` key: the teachers always train one at a time, each with its
    /// own shard's shapes (`trainer::ensemble::Mode`). Configs and run directories written
    /// before it left still say `mode: batched`, so that value is accepted and ignored; anything
    /// else is an error naming the key.
    #[serde(default, rename = "mode", skip_serializing)]
    _legacy_mode: LegacyTeacherMode,
    /// Share of each shard held out for early stopping and the teacher's threshold. `0` (the
    /// default) holds nothing out: every teacher trains on its whole shard for exactly `max_epochs` epochs and
    /// keeps its last weights (requires `member_threshold: half`). On shards of ~150 records the
    /// best epoch picked on ~15 held-out records is noise, and the teachers it picks are
    /// under-trained (EVALUATION.md, issue 16: 49 % of aggregated labels right with a 10 %
    /// hold-out, ~85 % without).
    pub holdout_fraction: f64,
    /// At most this many held-out samples per teacher (the seeds used 800).
    pub holdout_max: usize,
    /// How often each distinct private request appears in its teacher's shard
    /// ([`TeacherMultiplicity`]): `traffic` (every private record, the default), `distinct`
    /// (once), `log` (round(1 + ln m) times for a request occurring m times) or `cap:N`
    /// (min(m, N) times). null = `traffic`.
    pub multiplicity: Option<TeacherMultiplicity>,
    /// Deal all records of one distinct request to the same teacher (a request-level partition)
    /// instead of record by record (false, the default and `traffic`'s behaviour: a request with
    /// m ≥ `count` records reaches every teacher). With true, 49 of 50 teachers never see a given
    /// static page, which on CSIC made the ensemble flag unseen static pages (EVALUATION.md,
    /// section improved, rows t50xm*).
    pub copies_on_one_teacher: bool,
    /// Tampered requests added to each teacher's shard, as a share of the shard's benign
    /// requests: each a benign request *of that shard* with another method or one parameter name
    /// edited ([`crate::public_examples::tamper`]), labelled malicious. Teachers of ~166 records
    /// rarely see such attacks and voted them benign (a `PUT` to the login page, `rememberA=`).
    /// A teacher's added rows are a function of its own shard and the run's randomness only, so
    /// one private record still changes at most one teacher's vote and the aggregation's privacy
    /// analysis is unchanged (docs/privacy.md). Default 0.05; 0 adds nothing.
    pub tamperings: f64,
    /// Network and optimizer: default [`crate::recipe::teacher_training`], and the keys a
    /// config gives replace those of it.
    #[serde(deserialize_with = "crate::recipe::teacher_training_over")]
    pub training: TrainConfig,
}

impl TeachersConfig {
    /// The effective weighting: [`TeachersConfig::multiplicity`] when set, else `traffic`.
    pub fn weighting(&self) -> TeacherMultiplicity {
        self.multiplicity.unwrap_or(TeacherMultiplicity::Traffic)
    }
}

/// What an old config's `teachers.mode` may say: only `batched`, the one mode there is (see
/// [`TeachersConfig`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LegacyTeacherMode;

impl<'de> Deserialize<'de> for LegacyTeacherMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let value = String::deserialize(d)?;
        if value == "batched" {
            return Ok(LegacyTeacherMode);
        }
        Err(serde::de::Error::custom(format!(
            "`teachers.mode: {value}` is not accepted any more: the teachers always train batched; \
             remove the key (the sequential path is benchmark-only: trainer/benches/ensemble.rs)"
        )))
    }
}

/// How the teachers weight a request that occurs m times in the private split
/// ([`TeachersConfig::multiplicity`]). Why: in a traffic-weighted shard the benign mass is a few
/// static pages repeated thousands of times and the malicious mass distinct parameterized
/// requests, so small teachers learn "has parameters ⇒ malicious"; one copy per request loses
/// "static pages are benign". The sub-linear weightings sit in between. The kept copies are
/// different private records (the first ones of the request), so each record is still in at most
/// one teacher's shard (Papernot et al. 2017, §2.1: disjoint partitions); how they are dealt is
/// [`TeachersConfig::copies_on_one_teacher`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum TeacherMultiplicity {
    /// Every private record (a request occurring m times counts m times).
    Traffic,
    /// Each distinct request once.
    Distinct,
    /// round(1 + ln m) copies.
    Log,
    /// min(m, N) copies (N ≥ 1).
    Cap(usize),
}

impl TeacherMultiplicity {
    /// How many copies of a request occurring `m` (≥ 1) times the teachers train on.
    pub fn copies(self, m: usize) -> usize {
        let m = m.max(1);
        match self {
            TeacherMultiplicity::Traffic => m,
            TeacherMultiplicity::Distinct => 1,
            TeacherMultiplicity::Log => (1.0 + (m as f64).ln()).round() as usize,
            TeacherMultiplicity::Cap(n) => m.min(n),
        }
    }
}

impl TryFrom<String> for TeacherMultiplicity {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        let expected = "expected traffic, distinct, log or cap:N (N ≥ 1)";
        match s.trim() {
            "traffic" => Ok(TeacherMultiplicity::Traffic),
            "distinct" => Ok(TeacherMultiplicity::Distinct),
            "log" => Ok(TeacherMultiplicity::Log),
            other => match other
                .strip_prefix("cap:")
                .map(|n| n.trim().parse::<usize>())
            {
                Some(Ok(n)) if n >= 1 => Ok(TeacherMultiplicity::Cap(n)),
                _ => Err(Error::key(
                    "teachers.multiplicity",
                    format!("{expected}, got {other:?}"),
                )),
            },
        }
    }
}

impl From<TeacherMultiplicity> for String {
    fn from(m: TeacherMultiplicity) -> String {
        match m {
            TeacherMultiplicity::Traffic => "traffic".into(),
            TeacherMultiplicity::Distinct => "distinct".into(),
            TeacherMultiplicity::Log => "log".into(),
            TeacherMultiplicity::Cap(n) => format!("cap:{n}"),
        }
    }
}

impl Default for TeachersConfig {
    fn default() -> Self {
        TeachersConfig {
            count: 250,
            _legacy_mode: LegacyTeacherMode,
            holdout_fraction: 0.0,
            holdout_max: 800,
            multiplicity: None,
            copies_on_one_teacher: false,
            tamperings: 0.05,
            training: crate::recipe::teacher_training(),
        }
    }
}

/// The student section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StudentConfig {
    /// Number of queries drawn from the public split and labelled by the release (default 4500).
    pub queries: usize,
    /// At most this many labelled validation samples (early stopping and threshold; default
    /// 4000, the seeds used 200).
    pub validation_max: usize,
    /// Network and optimizer: default [`crate::recipe::student_training`], and the keys a config
    /// gives replace those of it.
    #[serde(deserialize_with = "crate::recipe::student_training_over")]
    pub training: TrainConfig,
    /// Which distinct public requests are sent as queries: `head` (the default: a share
    /// [`StudentConfig::head_share`] on the most frequent ones), `distinct` (uniformly among the
    /// distinct requests) or `traffic` (weighted by how often each distinct request occurs in the
    /// public split, without replacement, so the queries look like the traffic the student will
    /// score; the multiplicities are public).
    pub query_selection: QuerySelection,
    /// How the student's decision threshold is chosen on the validation samples: `target_fpr`
    /// (the default: the highest-TPR point of the validation ROC whose FPR is at most
    /// [`StudentConfig::target_fpr`]), `youden` (max TPR − FPR, the seeds' rule) or
    /// `answered_benign`.
    pub threshold_rule: ThresholdRule,
    /// The false-positive rate aimed at by `threshold_rule: target_fpr` (default 0.01).
    pub target_fpr: f64,
    /// With `threshold_rule: target_fpr`: hold the budget at this confidence (in (0, 1)) instead
    /// of at the point estimate: the threshold is the highest-TPR point at which this quantile of
    /// the benign share flagged, over resamplings of the validation traffic record by record, is
    /// at most `target_fpr` ([`crate::calibrate::confident_target_fpr_threshold`]). Default
    /// 0.95; null: the point estimate, which new traffic exceeds about half the time.
    pub target_fpr_confidence: Option<f64>,
    /// Traffic weighting: each answered query and each validation sample counts as many times as
    /// its request occurs in its (public) split, capped at this number of copies in training
    /// (default 10; null = off, every distinct request once). With it, `threshold_rule: target_fpr` counts
    /// each validation request with ALL its copies: the budget is a rate of the site's traffic.
    /// The test data, like real traffic, is dominated by a few requests repeated thousands of
    /// times (CSIC: 8 static pages are 83 % of the benign test requests); the multiplicities are
    /// public, so this costs no ε.
    pub multiplicity_cap: Option<usize>,
    /// Self-training on the unlabelled public pool (post-processing of the private labels: it
    /// costs no privacy budget). Off when `rounds` is 0.
    pub self_training: SelfTrainingConfig,
    /// With `query_selection: head`: the share of the queries spent on the most frequent
    /// distinct public requests (the rest drawn uniformly among the others; default 0.25).
    pub head_share: f64,
    /// The share (in [0, 1]) of the student's training rows of each class — the answered
    /// queries, the validation-labelled drawn requests and the public examples, each counted by
    /// class — that get the headers a load balancer writes (`X-Forwarded-For` of 1–3 random
    /// public addresses, `X-Forwarded-Proto: https`:
    /// [`crate::public_examples::add_forwarding_headers`]) after their label is fixed; and the
    /// same share of the part model's templates (both classes alike: benign parts beside the
    /// placed value, [`crate::part_model::Dressing`]). Default
    /// 0.25; 0: none. Why: the site's requests (CSIC's) carry no `X-Forwarded-For`, so it
    /// appeared only in placed public examples, half of them attacks, and the student read the
    /// header's name (`-f`, `for`) as an attack sign, and the part model, which never saw a
    /// benign address or `https` there, read an address's n-grams (`3.`) and `https` (`ttp`)
    /// as those of the public attack values (RFI, SSRF): train.yaml bundles blocked 0.5–16.5 %
    /// of benign `X-Forwarded-For` values and a plain `X-Forwarded-For: 203.0.113.7` request
    /// (EVALUATION.md). Only the student's input is augmented (the teachers' inputs and queries
    /// are as they were; public randomness of the run's RNG): post-processing, no ε.
    pub forwarding_headers: f64,
    /// The share (in [0, 1]) of each class of the same rows, and of the part model's templates,
    /// that get a `Referer` naming one of the site's pages on their own `Host`
    /// ([`crate::public_examples::add_site_referer`]; pages of requests labelled benign, for
    /// both classes) after their label is fixed. Default 0.25; 0: none. Why: the site's requests
    /// (CSIC's) carry no `Referer`, so one appeared only in placed public examples, half of them
    /// attacks, and the student read the site's own host in it (`0/`, `080` of `localhost:8080/`)
    /// as an attack sign: train.yaml bundles blocked up to 99 % of benign Referer values
    /// (EVALUATION.md). Post-processing, as `forwarding_headers`: no ε.
    pub site_referers: f64,
    /// Public labelled examples (attack corpora such as Fwaf and HttpParamsDataset) placed into
    /// the site's own request shapes (`trainer::public_examples`) and added to the student's
    /// training rows beside the PATE-labelled queries. Public data: no privacy cost. Off when
    /// absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_examples: Option<PublicExamplesConfig>,
    /// Cross-validated label cleaning of the answered queries (off when absent): see
    /// [`LabelCleaningConfig`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_cleaning: Option<LabelCleaningConfig>,
    /// A drawn query whose request (the same method, target and body — the key queries are made
    /// distinct by; headers may differ, as a per-session cookie does) the labelled validation
    /// samples also hold is not asked: the student trains on the validation sample with its
    /// label, and the draw goes on until `queries` requests are asked. The validation
    /// split is public labelled data; the site's frequent pages are all in it, so the privacy
    /// budget goes to requests only the teachers can label, and GNMax's noise can no longer
    /// publish one of those pages as malicious (at ε ≤ 1, σ 60: about 2 % per unanimous benign
    /// query), which made the student flag a page of the site's traffic. The threshold is still
    /// chosen on every validation sample, these included. Only `pate-trainer run` has the split
    /// (the `student` stage refuses it). On by default.
    pub validation_labels: bool,
    /// `release` (the default: the teachers' labels) or `assume_benign` (the no-private-data
    /// baseline).
    #[serde(skip_serializing_if = "LabelsFrom::is_release")]
    pub labels_from: LabelsFrom,
}

/// Cross-validated label cleaning (`student.label_cleaning`): the answered queries are split into
/// `folds` folds; a student trained (as configured) on the other folds scores each fold, and an
/// answered label its out-of-fold score contradicts with at least `confidence` (malicious with a
/// score ≤ 1 − `confidence`, benign with a score ≥ `confidence`) is left out of the final
/// student's training. Why: at a large σ GNMax publishes some near-unanimous votes with the wrong
/// label (at σ 80 and a 0.35 vote share 6 % of the unanimous benign ones); such a label is an easy
/// request of the other class to a student that never saw it. It uses only the released labels
/// and public features: post-processing, no ε.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelCleaningConfig {
    /// Number of folds (≥ 2).
    pub folds: usize,
    /// How confidently the out-of-fold score must contradict a label to leave it out, in (0.5, 1).
    pub confidence: f64,
}

/// The student's public labelled examples ([`StudentConfig::public_examples`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicExamplesConfig {
    /// Public labelled files (`fwaf`, `httpparams`, `csv`: labels from the file or `label:`);
    /// each malicious record's value is placed (an HttpParams payload; a Fwaf line's most
    /// symbol-laden query value, or its path when it has no query and the path holds an attack's
    /// character: `trainer::public_examples::fwaf_attack_value`); benign values are placed for
    /// the part model and the content-only threshold's validation only.
    pub files: Vec<DatasetSource>,
    /// How many examples are made: half public attacks placed into public requests of the site,
    /// half requests the teachers labelled benign re-shaped with their own values; each at a
    /// random placement, one in five encoded. Default 1500.
    #[serde(default = "default_public_examples_count")]
    pub count: usize,
    /// How many more are made for the student's VALIDATION samples (early stopping and the
    /// threshold; default 600, 0 makes none): public attack values of a held-out tenth of the
    /// files' values (never trained on) placed into the student's benign validation requests,
    /// and those requests re-shaped with their own values, half each, at random placements.
    /// With the featurizer's `placements`, the threshold is chosen on every validation request
    /// scored as pate-proxy scores it (`bundle::score_request`: the highest score over its
    /// windows), these included.
    #[serde(default = "default_public_examples_validation")]
    pub validation: usize,
    /// Where the benign re-shaped examples go: `every` placement (the default), or
    /// `headers_and_bodies` only, so that a site value is never moved into another parameter or
    /// the path, where the parameter and rarity features read it as anomalous
    /// ([`crate::public_examples::BenignSpots`]).
    #[serde(default)]
    pub benign_spots: crate::public_examples::BenignSpots,
    /// Where the benign VALIDATION examples go (default `headers_and_bodies`; null: as
    /// `benign_spots`). With
    /// `headers_and_bodies`, the threshold (FPR ≤ `target_fpr` of the validation requests) is not
    /// held over site values moved into another parameter or the path — requests the site's own
    /// data calls anomalous, which pushed the threshold above most of the site's attacks — while
    /// benign values in every header and body still count.
    #[serde(default = "default_validation_benign_spots")]
    pub validation_benign_spots: Option<crate::public_examples::BenignSpots>,
    /// With `threshold_rule: target_fpr`: the placed validation examples get a false-positive
    /// budget of their own, in (0, 1) — the threshold is the lowest that holds FPR ≤
    /// `target_fpr` on the site's validation requests (counted with their traffic) AND FPR ≤
    /// this on the placed benign examples (default 0.05) — instead of counting them as 600 more
    /// requests of the site's traffic (null). Why: a few dozen placed benign examples scoring high
    /// then set the threshold alone, far above what the site's own traffic needed (a
    /// whole-request bundle held 0.1–0.3 % FPR on CSIC's test traffic where `target_fpr` asked
    /// 1 %, and blocked 62–77 % of its attacks there against train.yaml's 84–88 %).
    #[serde(default = "default_public_examples_validation_fpr")]
    pub validation_fpr: Option<f64>,
    /// A file of real browsers' `User-Agent` strings, one per line (public data; `#` lines and
    /// blank lines skipped). When given, half the examples of each class are dressed as a
    /// request of one of those browsers: its User-Agent (unless the example's value rides in
    /// the User-Agent) and the Accept, Accept-Encoding and Accept-Language its family sends
    /// ([`crate::public_examples::dress_as_browser`]). Why: a site's data may come from one
    /// client (CSIC's every request carries one Konqueror User-Agent), and a student that never
    /// saw another browser's headers on a benign request calls them anomalous. A tenth of the
    /// lines is held out of training for the validation examples. A relative path is relative
    /// to the config file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agents: Option<PathBuf>,
    /// The share (in [0, 1]) of the malicious examples that are requests the teachers labelled
    /// benign, tampered instead of carrying an attack value (`public_examples::tamper`: verb
    /// tampering or a parameter name the page never receives; public knowledge, no ε). Default
    /// 0.2; 0: none.
    #[serde(default = "default_public_examples_tamperings")]
    pub tamperings: f64,
    /// Also train on a copy of each example that carries a public attack value or a benign
    /// value (not the tampered ones), featurized without the site's format checks
    /// ([`featurizer::Featurizer::without_format_checks`]), same label. Why: with the checks the
    /// sparse student explains a placed attack by `odd:*` / `rare:*` and leaves its content's
    /// features unweighted, so pate-proxy's `format_checks: false` let through injections the
    /// student was trained on (`; /bin/sleep 31 ;`, `1 and 7533=7533#`). A tampered request has
    /// nothing but its format to tell it, so it gets no copy. Off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content_only_copies: bool,
    /// The **content-only threshold** (default 300; 0: none): the threshold pate-proxy applies
    /// where it scores content alone (`format_checks: false`; `pate-trainer score
    /// --no-format-checks`), written into the bundle as `content_only_threshold`. Chosen after
    /// the bundle's own threshold, on requests scored as served without the site's format
    /// checks: the highest of the threshold that holds FPR ≤ `target_fpr` on the site's
    /// validation traffic (the bundle's rule) and, for EVERY placement, the lowest threshold
    /// that holds FPR ≤ `validation_fpr` on its placed benign values (at
    /// `target_fpr_confidence`, the 13 placements' budgets all at once: each at
    /// 1 − (1 − confidence)/13). Per placement (each of the 13 spots), this many of the files'
    /// public BENIGN values (never trained on: benign values are not placed in training) and as
    /// many of the held-out attack values (reported, not deciding), each placed into a benign
    /// validation request of the site, half of them stripped to `Host` and `Connection` as a
    /// bare client sends them (one in five encoded). Why: the bundle's threshold is chosen with
    /// the checks on, where a site value in another parameter or on an unknown path scores high
    /// for its format; content alone scores lower, and the bundle's threshold left a generic
    /// benign value as a path segment blocked 8.5–12 % of the time (EVALUATION.md). Public
    /// data: no ε.
    /// Needs `validation > 0`, `validation_fpr`, a featurizer with format checks and
    /// placements, and benign records in `files`.
    #[serde(default = "default_content_only_validation")]
    pub content_only_validation: usize,
    /// The **model of single parts** (default [`PartModelConfig::default`]; null: none), written into the bundle as
    /// `part_model.onnx` and scored where content alone is scored (`format_checks: false`):
    /// every part of a request (a query or form pair, a header, a JSON value, ...) alone, beside
    /// the student's windows; the request's score is the highest of both, judged at the
    /// content-only threshold (chosen on both). Why: a linear model of whole windows weighs an
    /// attack in one field of a long form against all the form's other fields (they share the
    /// window's norm), so the registration form of a shop let 9–12 % of generic attacks through
    /// (EVALUATION.md); a part alone is not diluted. Trained on public data only — the files'
    /// benign and attack values placed into the site's requests the teachers labelled benign,
    /// in every spot, the placed value's part labelled by its value and every other part of
    /// those requests benign — so no ε. Values whose FNV-1a hash is 0 modulo 10 are held out
    /// of it, and of the student's public examples (in place of a random tenth), for the
    /// validation examples (`validation`, `content_only_validation`; the bench's
    /// `--held-out-tenth` replays the same tenth). Needs `content_only_validation > 0`.
    #[serde(default = "default_part_model")]
    pub part_model: Option<PartModelConfig>,
}

fn default_public_examples_count() -> usize {
    1500
}
fn default_public_examples_validation() -> usize {
    600
}
fn default_validation_benign_spots() -> Option<crate::public_examples::BenignSpots> {
    Some(crate::public_examples::BenignSpots::HeadersAndBodies)
}
fn default_public_examples_validation_fpr() -> Option<f64> {
    Some(0.05)
}
fn default_public_examples_tamperings() -> f64 {
    0.2
}
fn default_content_only_validation() -> usize {
    300
}
fn default_part_model() -> Option<PartModelConfig> {
    Some(PartModelConfig::default())
}

/// `student.public_examples.part_model` ([`PublicExamplesConfig::part_model`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct PartModelConfig {
    /// Values placed per class and spot (13 spots): the malicious and benign parts trained on
    /// (default 800).
    pub per_spot: usize,
    /// Each distinct benign part of the site's requests (and of the placed requests around
    /// the value) counts in training as often as it occurs, at most this many times (one row
    /// weighted by its count): a header every request carries weighs more than one value,
    /// without thousands of copies (default 50).
    pub copies_cap: usize,
    /// Its training (the student's schema): default [`crate::recipe::part_model_training`], and
    /// the keys a config gives replace those of it.
    #[serde(deserialize_with = "crate::recipe::part_model_training_over")]
    pub training: TrainConfig,
    /// Shift its scores per placement (bundle.yaml `part_model_offsets`), chosen with the
    /// content-only threshold on the same validation values: a threshold per placement for the
    /// parts, so that the placements where generic benign values score low alone (query, form,
    /// bodies) spend their budget too (the default). False: one threshold for every part.
    pub placement_offsets: bool,
}

impl Default for PartModelConfig {
    fn default() -> Self {
        PartModelConfig {
            per_spot: 800,
            copies_cap: 50,
            training: crate::recipe::part_model_training(),
            placement_offsets: true,
        }
    }
}

impl Default for StudentConfig {
    fn default() -> Self {
        StudentConfig {
            queries: 4500,
            validation_max: 4000,
            training: crate::recipe::student_training(),
            query_selection: QuerySelection::Head,
            threshold_rule: ThresholdRule::TargetFpr,
            target_fpr: 0.01,
            target_fpr_confidence: Some(0.95),
            multiplicity_cap: Some(10),
            self_training: SelfTrainingConfig::default(),
            head_share: 0.25,
            forwarding_headers: 0.25,
            site_referers: 0.25,
            public_examples: None,
            label_cleaning: None,
            validation_labels: true,
            labels_from: LabelsFrom::Release,
        }
    }
}

/// Where the student's query labels come from ([`StudentConfig::labels_from`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelsFrom {
    /// The teachers' release (the aggregation's labels): PATE.
    Release,
    /// Every query benign, the release unused: the no-private-data baseline (the site's traffic
    /// taken as benign, attacks only from the public corpora). The student then depends on
    /// public data alone; an experiment's comparison, not a product setting.
    AssumeBenign,
}

impl LabelsFrom {
    fn is_release(&self) -> bool {
        *self == LabelsFrom::Release
    }
}

/// How queries are drawn from the distinct public requests ([`StudentConfig::query_selection`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuerySelection {
    /// Uniformly among the distinct public requests.
    Distinct,
    /// Weighted by each distinct request's multiplicity in the public split.
    Traffic,
    /// A share [`StudentConfig::head_share`] of the queries on the most frequent distinct public
    /// requests (the pages that make most of the benign traffic: a student that never saw them
    /// flags them), the rest uniformly among the other distinct requests (issue 16: 1,000 true
    /// labels → 94 % TPR at 1 % FPR this way against ~40 % uniformly).
    Head,
}

/// How the student's threshold is chosen ([`StudentConfig::threshold_rule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdRule {
    /// Youden's J on the validation samples.
    Youden,
    /// The best TPR at validation FPR ≤ `target_fpr`.
    TargetFpr,
    /// The (1 − `target_fpr`) quantile of the student's scores on the answered queries labelled
    /// benign by the aggregation, each weighted by its request's multiplicity in the public split
    /// (so that about `target_fpr` of the benign public traffic scores above it). Uses only the
    /// noisy labels and public data: post-processing, no ε, and never the test split.
    AnsweredBenign,
}

/// Self-training of the student (the semi-supervised step of Papernot et al. 2017, §3.1,
/// done here as pseudo-labelling, Lee 2013, "Pseudo-Label"): after training on the answered
/// queries, the student labels the unlabelled public requests it is confident about (score
/// ≥ `confidence` → malicious, ≤ 1 − `confidence` → benign), and a fresh student is trained on the
/// answered queries plus those pseudo-labels; repeated `rounds` times. Uses only the student's
/// own outputs on public data, so by post-processing it costs no ε.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfTrainingConfig {
    /// Number of pseudo-labelling rounds (0 = off).
    pub rounds: usize,
    /// Score confidence needed for a pseudo-label, in (0.5, 1).
    pub confidence: f64,
}

impl Default for SelfTrainingConfig {
    fn default() -> Self {
        SelfTrainingConfig {
            rounds: 0,
            confidence: 0.95,
        }
    }
}

/// The aggregation mechanism and its parameters: [`privacy::Mechanism`], written inline in the
/// privacy section (`mechanism: gnmax` with `sigma: 40`; another mechanism's parameter, such as
/// `sigma` with `mechanism: lnmax`, is an error).
pub use privacy::Mechanism;

/// The privacy section. Its keys are `rho`, `delta`, `mechanism` and exactly the parameters of
/// that mechanism (unknown keys are errors: they reach the mechanism, which denies them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrivacyConfig {
    /// Laplace privatization of the student's query features with scale 1/ρ
    /// ((2ρ, 0)-local DP per query); null to send the features as they are.
    #[serde(default)]
    pub rho: Option<f64>,
    /// δ of the (ε, δ) guarantee.
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// The aggregation mechanism with its parameters. Default `model_average` with `sigma: 4.1`
    /// and `clip_norm: 75` (ε 0.99 at δ 1e-5, whatever the number of queries); a `privacy:`
    /// section names its mechanism.
    #[serde(flatten)]
    pub mechanism: Mechanism,
}

fn default_delta() -> f64 {
    1e-5
}

impl Default for PrivacyConfig {
    fn default() -> Self {
        PrivacyConfig {
            rho: None,
            delta: default_delta(),
            mechanism: Mechanism::ModelAverage(privacy::average::ModelAverage {
                sigma: 4.1,
                clip_norm: 75.0,
            }),
        }
    }
}

impl RunConfig {
    /// Every default and no dataset (for stages that read their data from elsewhere).
    pub fn without_datasets() -> Self {
        RunConfig {
            seed: None,
            device: DeviceChoice::Auto,
            threads: None,
            private: Vec::new(),
            public: Vec::new(),
            validation: Vec::new(),
            test: Vec::new(),
            split: None,
            featurizer: FeaturizerSection::default(),
            teachers: TeachersConfig::default(),
            student: StudentConfig::default(),
            privacy: PrivacyConfig::default(),
            aggregation: AggregationConfig::default(),
            evaluation: EvaluationConfig::default(),
            site: None,
        }
    }

    /// Reads and validates a config file; relative dataset paths are resolved against its
    /// directory.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        let mut config = Self::parse(&text).map_err(|e| Error::ConfigFile {
            path: path.to_owned(),
            source: Box::new(e),
        })?;
        // Absolute, so that the effective configuration (`--print-config`, the run directory's
        // config.yaml) names the same files wherever it is read from.
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let base = std::path::absolute(parent.unwrap_or(Path::new(".")))
            .unwrap_or_else(|_| parent.unwrap_or(Path::new(".")).to_owned());
        let base = base.as_path();
        for d in config.sources_mut() {
            if d.path.is_relative() {
                d.path = base.join(&d.path);
            }
        }
        if let Some(p) = &mut config.featurizer.known_browsers {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        if let Some(pe) = &mut config.student.public_examples {
            for d in &mut pe.files {
                if d.path.is_relative() {
                    d.path = base.join(&d.path);
                }
            }
            if let Some(p) = &mut pe.user_agents {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            }
        }
        Ok(config)
    }

    /// True for the simulation mode (`split: {simulate_from: ...}`).
    pub fn is_simulation(&self) -> bool {
        self.split.is_some()
    }

    /// `site.requests_per_client` (none without `site:`).
    pub fn requests_per_client(&self) -> Option<u32> {
        self.site.as_ref().and_then(|s| s.requests_per_client)
    }

    /// Every dataset file of the config, whatever its role.
    pub fn sources_mut(&mut self) -> impl Iterator<Item = &mut DatasetSource> {
        let simulated = self
            .split
            .iter_mut()
            .flat_map(|s| s.simulate_from.iter_mut());
        self.private
            .iter_mut()
            .chain(self.public.iter_mut())
            .chain(self.validation.iter_mut())
            .chain(self.test.iter_mut())
            .chain(simulated)
            .chain(
                self.site
                    .iter_mut()
                    .flat_map(|s| s.test_attack_files.iter_mut()),
            )
    }

    /// Every dataset file of the config, whatever its role.
    pub fn sources(&self) -> Vec<&DatasetSource> {
        let simulated = self.split.iter().flat_map(|s| s.simulate_from.iter());
        self.private
            .iter()
            .chain(&self.public)
            .chain(&self.validation)
            .chain(&self.test)
            .chain(simulated)
            .chain(self.site.iter().flat_map(|s| s.test_attack_files.iter()))
            .collect()
    }

    /// Parses and validates YAML text (serde_yaml's messages name the key and line).
    pub fn parse(text: &str) -> Result<Self> {
        let mut config: RunConfig = serde_yaml::from_str(text)?;
        let given: serde_yaml::Value = serde_yaml::from_str(text)?;
        config.drop_defaults_that_do_not_apply(&given);
        config.validate()?;
        Ok(config)
    }

    /// A recommended default that only applies with another recommended setting is switched off
    /// when the config changes that setting and does not give the key itself: a config with
    /// `threshold_rule: youden` has no confidence, one without a rarity table counts none on the
    /// validation split. Given explicitly, such a key is still refused by [`Self::validate`].
    fn drop_defaults_that_do_not_apply(&mut self, given: &serde_yaml::Value) {
        let is_given = |path: &[&str]| path.iter().try_fold(given, |v, key| v.get(key)).is_some();
        if self.student.threshold_rule != ThresholdRule::TargetFpr
            && !is_given(&["student", "target_fpr_confidence"])
        {
            self.student.target_fpr_confidence = None;
        }
        if self.featurizer.config.rarity_min_count.is_none()
            && !is_given(&["featurizer", "rarity_on"])
        {
            self.featurizer.rarity_on = RarityOn::FitOn;
        }
    }

    /// Checks every value, naming the key.
    pub fn validate(&self) -> Result<()> {
        if self
            .threads
            .is_some_and(|t| t == 0 || t > i32::MAX as usize)
        {
            return bad(
                "threads",
                format!(
                    "must be from 1 to {} (or null for libtorch's default)",
                    i32::MAX
                ),
            );
        }
        self.validate_public_examples()?;
        if self.evaluation.ensemble_max == Some(0) {
            return bad(
                "evaluation.ensemble_max",
                "must be at least 1 (or null for the whole test split)".into(),
            );
        }
        self.validate_datasets()?;
        self.validate_teachers()?;
        self.validate_student()?;
        let s = self.aggregation.malicious_vote_share;
        if !(s > 0.0 && s < 1.0) {
            return bad(
                "aggregation.malicious_vote_share",
                format!("must be in (0, 1), got {s}"),
            );
        }
        self.validate_model_average()?;
        self.validate_featurizer()?;
        let c = self.student.self_training.confidence;
        if !(c > 0.5 && c < 1.0) {
            return bad(
                "student.self_training.confidence",
                format!("must be in (0.5, 1), got {c}"),
            );
        }
        self.validate_privacy()
    }

    /// `student.public_examples.*`.
    fn validate_public_examples(&self) -> Result<()> {
        if let Some(fpr) = self
            .student
            .public_examples
            .as_ref()
            .and_then(|pe| pe.validation_fpr)
        {
            if !(fpr > 0.0 && fpr < 1.0) {
                return bad(
                    "student.public_examples.validation_fpr",
                    format!("must be in (0, 1), got {fpr}"),
                );
            }
            let pe = self
                .student
                .public_examples
                .as_ref()
                .expect("checked above");
            if self.student.threshold_rule != ThresholdRule::TargetFpr || pe.validation == 0 {
                return bad(
                    "student.public_examples.validation_fpr",
                    "applies to placed validation examples (public_examples.validation > 0) under threshold_rule: target_fpr".to_string(),
                );
            }
        }
        for (key, share) in [
            (
                "student.forwarding_headers",
                self.student.forwarding_headers,
            ),
            ("student.site_referers", self.student.site_referers),
        ] {
            if !(0.0..=1.0).contains(&share) {
                return bad(key, format!("must be in [0, 1], got {share}"));
            }
        }
        if let Some(pe) = &self.student.public_examples {
            if !(0.0..=1.0).contains(&pe.tamperings) {
                return bad(
                    "student.public_examples.tamperings",
                    format!("must be in [0, 1], got {}", pe.tamperings),
                );
            }
            let featurizer = &self.featurizer.config;
            if pe.content_only_validation > 0
                && (pe.validation_fpr.is_none()
                    || featurizer.rarity_min_count.is_none()
                    || featurizer.placements.is_none())
            {
                return bad(
                    "student.public_examples.content_only_validation",
                    "needs public_examples.validation_fpr (and so validation > 0 under \
                     threshold_rule: target_fpr) and a featurizer with format checks \
                     (rarity_min_count) and placements"
                        .to_string(),
                );
            }
        }
        if let Some(pm) = self
            .student
            .public_examples
            .as_ref()
            .and_then(|pe| pe.part_model.as_ref().map(|pm| (pe, pm)))
        {
            let (pe, pm) = pm;
            if pe.content_only_validation == 0 {
                return bad(
                    "student.public_examples.part_model",
                    "is judged at the content-only threshold: needs content_only_validation > 0"
                        .to_string(),
                );
            }
            pm.training
                .validate("student.public_examples.part_model.training")?;
            if pm.per_spot == 0 || pm.copies_cap == 0 {
                return bad(
                    "student.public_examples.part_model",
                    format!(
                        "per_spot and copies_cap must be at least 1, got {} and {}",
                        pm.per_spot, pm.copies_cap
                    ),
                );
            }
        }
        Ok(())
    }

    /// `featurizer.*` against the rest: the norm the privatizer needs, what the known browsers
    /// and the rarity table need, and no exact private counts in the bundle.
    fn validate_featurizer(&self) -> Result<()> {
        if self.privacy.rho.is_some() && self.featurizer.config.norm != featurizer::Norm::L1 {
            return bad(
                "featurizer.config.norm",
                "must be l1 when privacy.rho is set (the Lap(1/ρ) privatizer assumes ‖x‖₁ ≤ 1)"
                    .into(),
            );
        }
        if self.featurizer.known_browsers.is_some()
            && self
                .featurizer
                .config
                .placements
                .as_ref()
                .and_then(|p| p.known_header_permille)
                .is_none()
        {
            return bad(
                "featurizer.known_browsers",
                "needs featurizer.config.placements.known_header_permille (the known header values it adds to)".to_string(),
            );
        }
        if self.featurizer.rarity_on == RarityOn::ValidationBenign
            && self.featurizer.config.rarity_min_count.is_none()
        {
            return bad(
                "featurizer.rarity_on",
                "validation_benign needs featurizer.config.rarity_min_count (the rarity table it counts)".to_string(),
            );
        }
        if self.featurizer.fit_on == FitOn::Private
            && self.featurizer.config.rarity_min_count.is_some()
        {
            // The rarity table (and the oddity counts of `odd_permille`) holds exact counts of
            // the corpus it is fitted on, and it travels in the bundle's featurizer.json: fitted
            // on the private data, it would publish exact private counts that no ε covers.
            return bad(
                "featurizer.config.rarity_min_count",
                "needs featurizer.fit_on: public (the rarity and oddity counts are written into \
                 the bundle; counted on private data they would publish exact private counts)"
                    .into(),
            );
        }
        Ok(())
    }

    /// The datasets: the four roles, or a simulation split from `split.simulate_from`.
    fn validate_datasets(&self) -> Result<()> {
        // `limit` keeps a file's first N records: removing one private line brings line N + 1
        // in, so neighbouring files differ in two records (two teachers) and the published ε
        // (one record) would not hold. Seeded runs are experiments, not private anyway.
        let private_sources = self
            .private
            .iter()
            .chain(self.split.iter().flat_map(|s| &s.simulate_from));
        if self.seed.is_none() && private_sources.clone().any(|d| d.limit.is_some()) {
            let key = if self.split.is_some() {
                "split.simulate_from"
            } else {
                "private"
            };
            return bad(
                key,
                "limit: is refused on private data: keeping a file's first N records turns \
                 one record removed into one replaced (two teachers), which the published ε \
                 does not cover; cut the file instead"
                    .into(),
            );
        }
        let roles = [
            ("private", self.private.len()),
            ("public", self.public.len()),
            ("validation", self.validation.len()),
            ("test", self.test.len()),
        ];
        match &self.split {
            Some(s) => {
                if let Some((role, _)) = roles.iter().find(|(_, n)| *n > 0) {
                    return bad(
                        role,
                        "the roles (private/public/validation/test) and the simulation \
                         (split.simulate_from) are exclusive: give one or the other"
                            .into(),
                    );
                }
                if s.simulate_from.is_empty() {
                    return bad(
                        "split.simulate_from",
                        "at least one dataset is needed".into(),
                    );
                }
                for (key, v) in [
                    ("split.private", s.private),
                    ("split.public", s.public),
                    ("split.validation", s.validation),
                    ("split.test", s.test),
                ] {
                    // With `site:` the validation data come from the public traffic.
                    if key == "split.validation" && self.site.is_some() && v == 0.0 {
                        continue;
                    }
                    if !(v.is_finite() && v > 0.0) {
                        return bad(key, format!("must be a positive fraction, got {v}"));
                    }
                }
                let total = s.private + s.public + s.validation + s.test;
                if (total - 1.0).abs() > 1e-6 {
                    return bad(
                        "split",
                        format!("fractions must sum to 1, they sum to {total}"),
                    );
                }
            }
            None => {
                // With `site:` the validation (and test) data come from the public traffic.
                let derived =
                    |role: &str| self.site.is_some() && (role == "validation" || role == "test");
                if let Some((role, _)) = roles.iter().find(|(r, n)| *n == 0 && !derived(r)) {
                    return bad(
                        role,
                        "at least one dataset is needed: give the four roles private, public, \
                         validation and test (or, with site:, private and public), or a \
                         simulation with split.simulate_from"
                            .into(),
                    );
                }
            }
        }
        self.validate_site()
    }

    /// `site.*` and `split.public_attack_share`.
    fn validate_site(&self) -> Result<()> {
        if let Some(share) = self.split.as_ref().and_then(|s| s.public_attack_share) {
            if !(0.0..1.0).contains(&share) {
                return bad(
                    "split.public_attack_share",
                    format!("must be in [0, 1), got {share}"),
                );
            }
        }
        let Some(site) = &self.site else {
            return Ok(());
        };
        let labelled_validation =
            !self.validation.is_empty() || self.split.as_ref().is_some_and(|s| s.validation > 0.0);
        if labelled_validation {
            return bad(
                "site",
                "derives the validation data from the site's traffic: give no validation: role \
                 (split.validation: 0 in a simulation)"
                    .into(),
            );
        }
        let labelled_test = !self.test.is_empty() || self.split.is_some();
        let test = if labelled_test { 0.0 } else { site.test };
        if !(site.validation > 0.0 && test >= 0.0 && site.validation + test < 0.9) {
            return bad(
                "site",
                format!(
                    "validation ({}) must be positive and, with test ({test}), leave at least a \
                     tenth of the traffic public",
                    site.validation
                ),
            );
        }
        if site.validation_attacks == 0 {
            return bad("site.validation_attacks", "must be at least 1".into());
        }
        if site.requests_per_client == Some(0) {
            return bad(
                "site.requests_per_client",
                "must be at least 1 (null: every request counts)".into(),
            );
        }
        if site.review > MAX_SITE_REVIEW {
            return bad(
                "site.review",
                format!("at most {MAX_SITE_REVIEW} labels, got {}", site.review),
            );
        }
        if site.review > 0 && !self.is_simulation() {
            return bad(
                "site.review",
                "reads a simulation's labels (split.simulate_from); a real site's reviewed \
                 attacks go to `pate-trainer calibrate --attacks`"
                    .into(),
            );
        }
        if self
            .student
            .public_examples
            .as_ref()
            .is_none_or(|pe| pe.files.is_empty())
        {
            return bad(
                "site",
                "places public attacks into the site's traffic: needs \
                 student.public_examples.files"
                    .into(),
            );
        }
        if !labelled_test && (site.test_attacks == 0 || site.test_attack_files.is_empty()) {
            return bad(
                "site.test_attack_files",
                "without a labelled test: role the test's attacks are placed from these files \
                 (and site.test_attacks > 0)"
                    .into(),
            );
        }
        Ok(())
    }

    /// `teachers.*`.
    fn validate_teachers(&self) -> Result<()> {
        if self.teachers.count < 1 {
            return bad("teachers.count", "must be at least 1".into());
        }
        if !(self.teachers.holdout_fraction >= 0.0 && self.teachers.holdout_fraction < 1.0) {
            return bad(
                "teachers.holdout_fraction",
                format!("must be in [0, 1), got {}", self.teachers.holdout_fraction),
            );
        }
        if self.teachers.holdout_fraction == 0.0
            && self.teachers.training.member_threshold != MemberThreshold::Half
        {
            return bad(
                "teachers.holdout_fraction",
                "0 (no held-out records) needs teachers.training.member_threshold: half \
                 (youden is chosen on held-out records)"
                    .into(),
            );
        }
        if self.teachers.holdout_max < 1 {
            return bad("teachers.holdout_max", "must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.teachers.tamperings) {
            return bad(
                "teachers.tamperings",
                format!("must be in [0, 1], got {}", self.teachers.tamperings),
            );
        }
        self.teachers.training.validate("teachers.training")?;
        Ok(())
    }

    /// `student.*` (but `student.self_training`, checked after `aggregation`).
    fn validate_student(&self) -> Result<()> {
        if self.student.queries < 1 {
            return bad("student.queries", "must be at least 1".into());
        }
        if self.student.validation_max < 2 {
            return bad(
                "student.validation_max",
                "must be at least 2 (one per class)".into(),
            );
        }
        self.student.training.validate("student.training")?;
        if !(self.student.target_fpr >= 0.0 && self.student.target_fpr < 1.0) {
            return bad(
                "student.target_fpr",
                format!("must be in [0, 1), got {}", self.student.target_fpr),
            );
        }
        if let Some(c) = self.student.target_fpr_confidence {
            if !(c > 0.0 && c < 1.0) {
                return bad(
                    "student.target_fpr_confidence",
                    format!("must be in (0, 1), got {c}"),
                );
            }
            if self.student.threshold_rule != ThresholdRule::TargetFpr {
                return bad(
                    "student.target_fpr_confidence",
                    "applies to `threshold_rule: target_fpr` only".into(),
                );
            }
        }
        if self.student.multiplicity_cap == Some(0) {
            return bad(
                "student.multiplicity_cap",
                "must be at least 1 (or null for off)".into(),
            );
        }
        let h = self.student.head_share;
        if !(0.0..=1.0).contains(&h) {
            return bad("student.head_share", format!("must be in [0, 1], got {h}"));
        }
        if let Some(c) = &self.student.label_cleaning {
            if c.folds < 2 {
                return bad(
                    "student.label_cleaning.folds",
                    format!("must be at least 2, got {}", c.folds),
                );
            }
            if !(c.confidence > 0.5 && c.confidence < 1.0) {
                return bad(
                    "student.label_cleaning.confidence",
                    format!("must be in (0.5, 1), got {}", c.confidence),
                );
            }
        }
        Ok(())
    }

    /// `privacy.mechanism: model_average` and `aggregation.model_average`: the release averages
    /// linear teachers' parameters and labels the queries as the student has them.
    fn validate_model_average(&self) -> Result<()> {
        let average = matches!(self.privacy.mechanism, Mechanism::ModelAverage(_));
        if let Some(l) = &self.aggregation.model_average {
            if !average {
                return bad(
                    "aggregation.model_average",
                    format!(
                        "applies to privacy.mechanism: model_average only, not {}",
                        self.privacy.mechanism.name()
                    ),
                );
            }
            if !(l.soft_threshold.is_finite() && l.soft_threshold >= 0.0) {
                return bad(
                    "aggregation.model_average.soft_threshold",
                    format!("must be a finite number ≥ 0, got {}", l.soft_threshold),
                );
            }
            if !(l.validation_recall > 0.0 && l.validation_recall <= 1.0) {
                return bad(
                    "aggregation.model_average.validation_recall",
                    format!("must be in (0, 1], got {}", l.validation_recall),
                );
            }
            if let Some(fpr) = l.validation_fpr.filter(|f| !(*f > 0.0 && *f < 1.0)) {
                return bad(
                    "aggregation.model_average.validation_fpr",
                    format!("must be in (0, 1), got {fpr}"),
                );
            }
        }
        if !average {
            return Ok(());
        }
        if !self.teachers.training.hidden.is_empty() {
            return bad(
                "teachers.training.hidden",
                "must be [] with privacy.mechanism: model_average (it averages the parameters of \
                 linear teachers; a hidden layer's units have no common order to average in)"
                    .into(),
            );
        }
        if self.privacy.rho.is_some() {
            return bad(
                "privacy.rho",
                "must be null with privacy.mechanism: model_average (no query is sent to the \
                 teachers: the released model labels them)"
                    .into(),
            );
        }
        Ok(())
    }

    /// `privacy.*`: ρ, the mechanism's parameters and δ.
    fn validate_privacy(&self) -> Result<()> {
        let p = &self.privacy;
        if let Some(rho) = p.rho {
            if privacy::privatize::check_rho(rho).is_err() {
                return bad(
                    "privacy.rho",
                    format!("must be a number in [1e-6, 1e6] or null, got {rho}"),
                );
            }
        }
        if let Err(e) = p.mechanism.check() {
            return bad(&format!("privacy ({})", p.mechanism.name()), e.to_string());
        }
        // GNMax's head answers the FIRST queries with its own σ: only `query_selection: head`
        // puts the most frequent public requests there, so anything else is a mistake.
        if let Mechanism::Gnmax(privacy::aggregate::Gnmax {
            head: Some(head), ..
        }) = p.mechanism
        {
            let s = &self.student;
            let frequent = (s.head_share * s.queries as f64).round() as usize;
            if s.query_selection != QuerySelection::Head || head.queries > frequent {
                return bad(
                    "privacy.head.queries",
                    format!(
                        "answers the first {} queries with their own sigma, so it needs \
                         student.query_selection: head with at least that many frequent \
                         requests first (head_share × queries = {frequent}, query_selection: {:?})",
                        head.queries, s.query_selection
                    ),
                );
            }
        }
        if !(p.delta > 0.0 && p.delta < 1.0) {
            return bad(
                "privacy.delta",
                format!("must be in (0, 1), got {}", p.delta),
            );
        }
        Ok(())
    }
}

/// A configuration error naming `key`.
fn bad(key: &str, why: String) -> Result<()> {
    Err(Error::key(key, why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let base = "split: {simulate_from: [{path: a.txt, format: csic}]}\n";
        let e = RunConfig::parse(&format!("{base}teachers: {{count: 3, bogus: 1}}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
        let e = RunConfig::parse(&format!(
            "{base}teachers: {{training: {{batch_size: 0}}}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("teachers.training.batch_size"), "{e}");
        let e = RunConfig::parse(&format!(
            "{base}privacy: {{mechanism: lnmax, gamma: 0.1, delta: 2}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("privacy.delta"), "{e}");
        let e = RunConfig::parse(&format!("{base}device: tpu\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("device"), "{e}");
        let e = RunConfig::parse(&format!(
            "{base}student: {{self_training: {{confidence: 0.4}}}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("student.self_training.confidence"), "{e}");
        let e = RunConfig::parse(&format!("{base}student: {{target_fpr: 1.5}}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("student.target_fpr"), "{e}");
        let e = RunConfig::parse(&format!("{base}teachers: {{tamperings: 1.5}}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("teachers.tamperings"), "{e}");
        let e = RunConfig::parse(&format!("{base}student: {{threshold_rule: median}}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("threshold_rule") || e.contains("median"), "{e}");
        let ok = RunConfig::parse(&format!(
            "{base}student: {{query_selection: traffic, threshold_rule: target_fpr, target_fpr: 0.005, self_training: {{rounds: 2}}}}\n"
        ))
        .unwrap();
        assert_eq!(ok.student.query_selection, QuerySelection::Traffic);
        assert_eq!(ok.student.threshold_rule, ThresholdRule::TargetFpr);
        assert_eq!(ok.student.self_training.rounds, 2);
        assert_eq!(ok.student.self_training.confidence, 0.95);
        let ok = RunConfig::parse(base).unwrap();
        assert_eq!(ok.student.threshold_rule, ThresholdRule::TargetFpr);
        assert_eq!(ok.student.target_fpr_confidence, Some(0.95));
        // Another rule has no confidence, unless the config gives one (an error).
        let youden = format!("{base}student: {{threshold_rule: youden}}\n");
        let ok = RunConfig::parse(&youden).unwrap();
        assert_eq!(ok.student.target_fpr_confidence, None);
        let e =
            RunConfig::parse(&youden.replace("youden}", "youden, target_fpr_confidence: 0.95}"))
                .unwrap_err()
                .to_string();
        assert!(e.contains("student.target_fpr_confidence"), "{e}");
        assert_eq!(ok.student.self_training.rounds, 0);
        assert_eq!(ok.teachers.count, 250);
        assert_eq!(
            ok.privacy.mechanism,
            Mechanism::ModelAverage(privacy::average::ModelAverage {
                sigma: 4.1,
                clip_norm: 75.0
            })
        );
        assert_eq!(ok.aggregation.malicious_vote_share, 0.35);
        let e = RunConfig::parse(&format!(
            "{base}aggregation: {{malicious_vote_share: 1.0}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("aggregation.malicious_vote_share"), "{e}");
        let e = RunConfig::parse(&format!(
            "{base}privacy: {{mechanism: lnmax, gamma: 0.05, rho: 1.0}}\nfeaturizer: {{config: {{norm: l2}}}}\n"
        ))
        .unwrap_err().to_string();
        assert!(e.contains("featurizer.config.norm"), "{e}");
        // Rarity / oddity counts travel in the bundle: only from the public side.
        let rarity = "featurizer: {fit_on: FIT, config: {params: true, rarity_min_count: 3, odd_permille: [10, 50]}}\n";
        let e = RunConfig::parse(&format!("{base}{}", rarity.replace("FIT", "private")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("featurizer.config.rarity_min_count"), "{e}");
        RunConfig::parse(&format!("{base}{}", rarity.replace("FIT", "public"))).unwrap();
        // The rarity table on the validation split's benign requests: only with a table.
        let on_validation = rarity.replace("FIT", "public, rarity_on: validation_benign");
        let ok = RunConfig::parse(&format!("{base}{on_validation}")).unwrap();
        assert_eq!(ok.featurizer.rarity_on, RarityOn::ValidationBenign);
        let no_table = "featurizer: {config: {rarity_min_count: null}RARITY}\n";
        let e = RunConfig::parse(&format!(
            "{base}{}",
            no_table.replace("RARITY", ", rarity_on: validation_benign")
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("featurizer.rarity_on"), "{e}");
        assert_eq!(
            RunConfig::parse(base).unwrap().featurizer.rarity_on,
            RarityOn::ValidationBenign
        );
        // Without a table, the recommended `validation_benign` does not apply.
        let ok = RunConfig::parse(&format!("{base}{}", no_table.replace("RARITY", ""))).unwrap();
        assert_eq!(ok.featurizer.rarity_on, RarityOn::FitOn);
        let ok = RunConfig::parse(&format!(
            "{base}student: {{query_selection: head, head_share: 0.3, threshold_rule: answered_benign}}\n"
        ))
        .unwrap();
        assert_eq!(ok.student.query_selection, QuerySelection::Head);
        assert_eq!(ok.student.threshold_rule, ThresholdRule::AnsweredBenign);
        // No held-out records: fixed-epoch teachers, only with the 0.5 member threshold.
        let e = RunConfig::parse(&format!(
            "{base}teachers: {{holdout_fraction: 0, training: {{member_threshold: youden}}}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("teachers.holdout_fraction"), "{e}");
        let e = RunConfig::parse(&format!("{base}teachers: {{holdout_fraction: -0.1}}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("teachers.holdout_fraction"), "{e}");
        let ok = RunConfig::parse(&format!(
            "{base}teachers: {{holdout_fraction: 0, training: {{member_threshold: half}}}}\n"
        ))
        .unwrap();
        assert_eq!(ok.teachers.holdout_fraction, 0.0);
    }

    /// One mechanism type: `mechanism: lnmax` with `sigma: 12` is an error, and so is a key of no
    /// mechanism; each mechanism parses with exactly its parameters.
    #[test]
    fn privacy_section_takes_exactly_the_mechanisms_parameters() {
        let base = "split: {simulate_from: [{path: a.txt, format: csic}]}\n";
        let parse = |p: &str| RunConfig::parse(&format!("{base}privacy: {p}\n"));
        let e = parse("{mechanism: lnmax, sigma: 12}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sigma"), "{e}");
        let e = parse("{mechanism: lnmax, gamma: 0.1, gama: 0.1}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("gama"), "{e}");
        let e = parse("{mechanism: gnmax, sigma: -3}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("privacy") && e.contains("sigma"), "{e}");
        let c = parse("{mechanism: confident_gnmax, threshold: 200, sigma1: 150, sigma2: 40, delta: 1.0e-6, rho: 2}\nfeaturizer: {config: {norm: l1}}")
            .unwrap();
        assert_eq!(c.privacy.mechanism.name(), "confident-gnmax");
        assert_eq!((c.privacy.delta, c.privacy.rho), (1e-6, Some(2.0)));
        // The dump parses back to the same mechanism.
        let dumped = serde_yaml::to_string(&c).unwrap();
        assert_eq!(
            RunConfig::parse(&dumped).unwrap().privacy.mechanism,
            c.privacy.mechanism
        );
    }

    /// GNMax's head parses inline, round-trips, and is refused unless the first queries are the
    /// most frequent requests (`query_selection: head`, enough of them).
    #[test]
    fn gnmax_head_needs_head_query_selection() {
        let base = "split: {simulate_from: [{path: a.txt, format: csic}]}\n";
        let student = "student: {queries: 400, query_selection: head, head_share: 0.25}\n";
        let privacy = "privacy: {mechanism: gnmax, sigma: 40, head: {queries: 32, sigma: 25}}\n";
        let c = RunConfig::parse(&format!("{base}{student}{privacy}")).unwrap();
        let Mechanism::Gnmax(g) = c.privacy.mechanism else {
            panic!("{:?}", c.privacy.mechanism)
        };
        assert_eq!(g.head.map(|h| (h.queries, h.sigma)), Some((32, 25.0)));
        let dumped = serde_yaml::to_string(&c).unwrap();
        assert_eq!(
            RunConfig::parse(&dumped).unwrap().privacy.mechanism,
            c.privacy.mechanism
        );
        for student in [
            "student: {queries: 400, query_selection: distinct}\n",
            "student: {queries: 100, query_selection: head, head_share: 0.25}\n",
        ] {
            let e = RunConfig::parse(&format!("{base}{student}{privacy}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("privacy.head.queries"), "{e}");
        }
        let e = RunConfig::parse(&format!(
            "{base}{student}privacy: {{mechanism: gnmax, sigma: 40, head: {{queries: 32, sigma: 0}}}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("privacy (gnmax)"), "{e}");
    }

    /// Roles or a simulation, never both, never neither; the simulation's fractions sum to 1.
    #[test]
    fn roles_and_simulation_are_exclusive_and_complete() {
        let file = "[{path: a.txt, format: csic, label: benign}]";
        let roles = format!("private: {file}\npublic: {file}\nvalidation: {file}\ntest: {file}\n");
        let c = RunConfig::parse(&roles).unwrap();
        assert!(!c.is_simulation());
        let e = RunConfig::parse(&format!("private: {file}\npublic: {file}\ntest: {file}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("validation"), "{e}");
        let e = RunConfig::parse(&format!("{roles}split: {{simulate_from: {file}}}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exclusive"), "{e}");
        let e = RunConfig::parse(&format!(
            "split: {{simulate_from: {file}, private: 0.5, public: 0.5, validation: 0.1, test: 0.1}}\n"
        ))
        .unwrap_err().to_string();
        assert!(e.contains("sum to 1"), "{e}");
        let c = RunConfig::parse(&format!("split: {{simulate_from: {file}}}\n")).unwrap();
        assert!(c.is_simulation());
        assert_eq!(c.split.unwrap().fractions(), SplitConfig::default());
        let e = RunConfig::parse("datasets: [{path: a.txt, format: csic}]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("datasets"), "{e}");
    }

    /// `site:` needs only private and public roles (validation and test come from the site's
    /// traffic), refuses a labelled validation role, and needs attack files for its test.
    #[test]
    fn site_derives_validation_and_test_from_the_public_traffic() {
        let file = "[{path: a.txt, format: csic, label: benign}]";
        let pe =
            "student: {public_examples: {count: 10, files: [{path: p.csv, format: httpparams}]}}\n";
        let site = "site: {test_attack_files: [{path: t.csv, format: httpparams}]}\n";
        let ok = RunConfig::parse(&format!("private: {file}\npublic: {file}\n{pe}{site}"));
        let c = ok.unwrap();
        assert_eq!(c.site.as_ref().unwrap().validation, 0.2);
        assert_eq!(c.sources().len(), 3, "the test's attack files are a source");
        let e = RunConfig::parse(&format!(
            "private: {file}\npublic: {file}\nvalidation: {file}\n{pe}{site}"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("no validation: role"), "{e}");
        let e = RunConfig::parse(&format!(
            "private: {file}\npublic: {file}\n{pe}site: {{}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("site.test_attack_files"), "{e}");
        let e = RunConfig::parse(&format!("private: {file}\npublic: {file}\n{site}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("public_examples.files"), "{e}");
        // A simulation keeps its labelled test split and derives only the validation data.
        let sim = format!(
            "split: {{simulate_from: {file}, private: 0.6, public: 0.3, validation: 0, test: 0.1, \
             public_attack_share: 0.01}}\n{pe}site: {{validation: 0.3}}\n"
        );
        RunConfig::parse(&sim).unwrap();
        // A review reads a simulation's labels, 200 at most; a real site's goes to calibrate.
        let reviewed = sim.replace(
            "site: {validation: 0.3}",
            "site: {validation: 0.3, review: 200}",
        );
        assert_eq!(
            RunConfig::parse(&reviewed).unwrap().site.unwrap().review,
            200
        );
        let e = RunConfig::parse(&reviewed.replace("review: 200", "review: 201"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("site.review") && e.contains("at most 200"),
            "{e}"
        );
        // A client's requests count at least once toward the format model.
        let e = RunConfig::parse(&reviewed.replace("review: 200", "requests_per_client: 0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("site.requests_per_client"), "{e}");
        let e = RunConfig::parse(&format!(
            "private: {file}\npublic: {file}\n{pe}site: {{review: 10, test_attack_files: [{{path: t.csv, format: httpparams}}]}}\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("site.review") && e.contains("calibrate --attacks"),
            "{e}"
        );
        let e = RunConfig::parse(&sim.replace(
            "public: 0.3, validation: 0,",
            "public: 0.25, validation: 0.05,",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("site"), "{e}");
    }

    /// `privacy.mechanism: model_average` averages linear teachers and labels with its own
    /// post-processing section; anything else around it is refused by name.
    #[test]
    fn model_average_needs_linear_teachers_and_its_own_section() {
        let base = "split: {simulate_from: [{path: a.txt, format: csic}]}\n";
        let ma = "privacy: {mechanism: model_average, sigma: 4.1, clip_norm: 75}\n";
        let linear = "teachers: {training: {hidden: []}}\n";
        let ok = RunConfig::parse(&format!("{base}{ma}{linear}")).unwrap();
        assert_eq!(ok.aggregation.model_average, None);
        let with = RunConfig::parse(&format!(
            "{base}{ma}{linear}aggregation: {{model_average: {{validation_recall: 0.95}}}}\n"
        ))
        .unwrap();
        let l = with.aggregation.model_average.unwrap();
        assert_eq!((l.soft_threshold, l.validation_recall), (3.0, 0.95));
        let refused = |yaml: String, key: &str| {
            let e = RunConfig::parse(&yaml).unwrap_err().to_string();
            assert!(e.contains(key), "{key}: {e}");
        };
        refused(
            format!("{base}{ma}teachers: {{training: {{hidden: [8]}}}}\n"),
            "teachers.training.hidden",
        );
        refused(
            format!("{base}{linear}privacy: {{mechanism: model_average, sigma: 4.1, clip_norm: 75, rho: 1.0}}\nfeaturizer: {{config: {{norm: l1}}}}\n"),
            "privacy.rho",
        );
        refused(
            format!("{base}{linear}privacy: {{mechanism: gnmax, sigma: 40}}\naggregation: {{model_average: {{}}}}\n"),
            "aggregation.model_average",
        );
        refused(
            format!("{base}{ma}{linear}aggregation: {{model_average: {{validation_recall: 0}}}}\n"),
            "aggregation.model_average.validation_recall",
        );
        refused(
            format!("{base}{ma}{linear}aggregation: {{model_average: {{soft_threshold: -1}}}}\n"),
            "aggregation.model_average.soft_threshold",
        );
        refused(
            format!(
                "{base}privacy: {{mechanism: model_average, sigma: 4.1, clip_norm: 0}}\n{linear}"
            ),
            "clip_norm",
        );
    }

    #[test]
    fn teachers_mode_left_the_config() {
        let base = "split: {simulate_from: [{path: a.txt, format: csic}]}\n";
        // Old configs and run directories say `mode: batched`: accepted, and not written back.
        let config = RunConfig::parse(&format!("{base}teachers: {{mode: batched}}\n")).unwrap();
        let yaml = serde_yaml::to_string(&config).unwrap();
        assert!(!yaml.contains("mode:"), "{yaml}");
        let again = RunConfig::parse(&yaml).unwrap();
        assert_eq!(again.teachers.count, config.teachers.count);
        // Anything else is an error naming the key, with the hint.
        for bad in ["sequential", "parallel"] {
            let e = RunConfig::parse(&format!("{base}teachers: {{mode: {bad}}}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("teachers.mode: {bad}")) && e.contains("remove the key"),
                "{e}"
            );
        }
    }

    #[test]
    fn teacher_multiplicity_parses() {
        let base = "split: {simulate_from: [{path: a.txt, format: csic}]}\n";
        let weighting = |teachers: &str| {
            RunConfig::parse(&format!("{base}teachers: {teachers}\n"))
                .map(|c| c.teachers.weighting())
        };
        assert_eq!(weighting("{}").unwrap(), TeacherMultiplicity::Traffic);
        assert_eq!(
            weighting("{multiplicity: distinct}").unwrap(),
            TeacherMultiplicity::Distinct
        );
        assert_eq!(
            weighting("{multiplicity: log}").unwrap(),
            TeacherMultiplicity::Log
        );
        assert_eq!(
            weighting("{multiplicity: 'cap:5'}").unwrap(),
            TeacherMultiplicity::Cap(5)
        );
        // The old `teachers.distinct` flag is gone (`multiplicity: distinct` says it).
        let e = weighting("{distinct: true}").unwrap_err().to_string();
        assert!(e.contains("unknown field `distinct`"), "{e}");
        for bad in ["'cap:0'", "'cap:x'", "sqrt"] {
            let e = weighting(&format!("{{multiplicity: {bad}}}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("teachers.multiplicity") && e.contains("cap:N"),
                "{bad}: {e}"
            );
        }
        // round(1 + ln m): 1 → 1, 2 → 2, 1000 → 8; cap: min(m, N).
        let copies: Vec<usize> = [1, 2, 1000]
            .iter()
            .map(|&m| TeacherMultiplicity::Log.copies(m))
            .collect();
        assert_eq!(copies, [1, 2, 8]);
        assert_eq!(TeacherMultiplicity::Cap(5).copies(3), 3);
        assert_eq!(TeacherMultiplicity::Cap(5).copies(3000), 5);
        assert_eq!(TeacherMultiplicity::Traffic.copies(7), 7);
        assert_eq!(TeacherMultiplicity::Distinct.copies(7), 1);
        // Round trip through the config dump.
        let c = RunConfig::parse(&format!("{base}teachers: {{multiplicity: 'cap:3'}}\n")).unwrap();
        let dumped = serde_yaml::to_string(&c).unwrap();
        assert!(dumped.contains("cap:3"), "{dumped}");
    }
}
