//! The YAML configuration of `pate-experiments sweep` (see `configs/sweep.yaml`, which documents every
//! key). Unknown keys are errors (`deny_unknown_fields`) and every check names its key.
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use trainer::config::{DatasetSource, RunConfig};

/// The whole sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    /// The `pate-trainer run` config the settings come from (datasets, split, featurizer, teacher
    /// and student training, δ); relative to the sweep file's directory.
    pub base: PathBuf,
    /// Experiment seed (null: fresh OS randomness for every teacher set and every student): the
    /// teachers and repeat 0 of every cell use it, repeat r > 0 a seed derived from it and r.
    #[serde(default)]
    pub seed: Option<u64>,
    /// libtorch CPU threads (null: the base config's `threads`, else libtorch's default).
    #[serde(default)]
    pub threads: Option<usize>,
    /// Students trained at the same time (each in its own thread).
    #[serde(default = "default_jobs")]
    pub jobs: usize,
    /// The experiments, run in this order.
    pub experiments: Vec<Experiment>,
}

fn default_jobs() -> usize {
    1
}

/// What an experiment trains per cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExperimentKind {
    /// PATE students: teachers × queries × ρ × mechanisms, `repeats` students per cell.
    Pate,
    /// The cost of privacy: per teacher count the teacher ensemble itself (noiseless vote share,
    /// threshold 0.5) and students trained on the noiseless majority vote; once per data set a
    /// non-private model of the student's architecture trained on all the private data.
    Baselines,
}

/// One experiment: a grid of cells.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Names the experiment in the outputs (letters, digits, `-`, `_`).
    pub name: String,
    /// `pate` or `baselines`.
    pub kind: ExperimentKind,
    /// Other datasets than the base config's (e.g. the cross-dataset experiment).
    #[serde(default)]
    pub datasets: Option<Vec<SweepDataset>>,
    /// Teacher counts.
    pub teachers: Vec<usize>,
    /// Student query counts (absent: the base config's `student.queries`).
    #[serde(default)]
    pub queries: Option<Vec<usize>>,
    /// Student-side noise ρ values (Lap(1/ρ) per feature; null = none). `pate` only.
    #[serde(default)]
    pub rho: Option<Vec<Option<f64>>>,
    /// Aggregation mechanisms. `pate` only.
    #[serde(default)]
    pub mechanisms: Vec<MechanismSpec>,
    /// Students per cell.
    pub repeats: usize,
    /// `baselines` only: training of the non-private model (absent: the base config's student
    /// training). All the private data is far more rows than the student's queries, so a larger
    /// batch keeps its cost sane.
    #[serde(default)]
    pub non_private_training: Option<trainer::ensemble::TrainConfig>,
    /// Also account ε after this many queries (≤ the cell's queries): the ε-vs-queries curve.
    #[serde(default)]
    pub epsilon_curve: Vec<usize>,
}

/// A dataset file of an experiment: `pate-trainer run`'s keys plus `splits`. It reads (see its
/// `Deserialize`) and writes as one flat map, `path`, `format`, `label`, `limit`, `splits`.
#[derive(Debug, Clone, Serialize)]
pub struct SweepDataset {
    /// The file (relative to the sweep file's directory), its format, label override and limit.
    #[serde(flatten)]
    pub source: DatasetSource,
    /// Keep this file's requests only in these splits (the hash split still decides which split
    /// a request falls in; requests falling elsewhere are dropped). Absent: every split.
    pub splits: Option<Vec<SplitName>>,
}

/// `splits` is read here and every other key by `DatasetSource`, which refuses unknown keys
/// (which is why `#[serde(flatten)]` cannot read it): an unknown key is refused where it stands,
/// naming `DatasetSource`'s keys and `splits`.
impl<'de> Deserialize<'de> for SweepDataset {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserializer.deserialize_map(DatasetVisitor)
    }
}

struct DatasetVisitor;

impl<'de> Visitor<'de> for DatasetVisitor {
    type Value = SweepDataset;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct SweepDataset")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<SweepDataset, A::Error> {
        let mut keys = SourceKeys {
            map,
            fields: &[],
            splits: None,
        };
        let source = DatasetSource::deserialize(&mut keys)?;
        Ok(SweepDataset {
            source,
            splits: keys.splits.flatten(),
        })
    }
}

/// A dataset's map as `DatasetSource` sees it: every key but `splits`, which is kept aside.
struct SourceKeys<A> {
    map: A,
    /// `DatasetSource`'s keys (its `deserialize_struct` call names them).
    fields: &'static [&'static str],
    /// `splits`, once read.
    splits: Option<Option<Vec<SplitName>>>,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for &mut SourceKeys<A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, A::Error> {
        visitor.visit_map(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, A::Error> {
        self.fields = fields;
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for SourceKeys<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key_seed(DatasetKey(self.fields))? {
            if key != SPLITS {
                return seed.deserialize(key.into_deserializer()).map(Some);
            }
            if self.splits.is_some() {
                return Err(de::Error::duplicate_field(SPLITS));
            }
            self.splits = Some(self.map.next_value()?);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

const SPLITS: &str = "splits";

/// A key of a dataset: one of `DatasetSource`'s keys (the list) or `splits`.
struct DatasetKey(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for DatasetKey {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<String, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for DatasetKey {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> std::result::Result<String, E> {
        if key == SPLITS || self.0.contains(&key) {
            return Ok(key.to_string());
        }
        let expected: Vec<String> = (self.0.iter().chain([&SPLITS]))
            .map(|k| format!("`{k}`"))
            .collect();
        Err(E::custom(format_args!(
            "unknown field `{key}`, expected one of {}",
            expected.join(", ")
        )))
    }
}

/// The splits of `trainer::stages::split::split_by_record` (the simulation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitName {
    /// Teachers' private data.
    Private,
    /// Student side (featurizer corpus, query pool).
    Public,
    /// Student early stopping and threshold.
    StudentValidation,
    /// Evaluation.
    Test,
}

impl SplitName {
    /// All splits, in `split_by_record` order.
    pub const ALL: [SplitName; 4] = [
        SplitName::Private,
        SplitName::Public,
        SplitName::StudentValidation,
        SplitName::Test,
    ];
    /// The YAML name.
    pub fn name(self) -> &'static str {
        match self {
            SplitName::Private => "private",
            SplitName::Public => "public",
            SplitName::StudentValidation => "student_validation",
            SplitName::Test => "test",
        }
    }
}

/// A noise parameter: a number, or `matched` (solved so that the cell's data-independent ε equals
/// that of the experiment's first mechanism at the same number of queries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Sigma {
    /// An explicit σ.
    Value(f64),
    /// `matched`.
    Keyword(String),
}

impl Sigma {
    /// The explicit value, or `None` for `matched`.
    pub fn value(&self) -> Option<f64> {
        match self {
            Sigma::Value(v) => Some(*v),
            Sigma::Keyword(_) => None,
        }
    }
}

/// An aggregation mechanism of a `pate` experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MechanismSpec {
    /// LNMax (Papernot et al. 2017, §2.2): Lap(1/γ) on each count.
    Lnmax {
        /// γ.
        gamma: f64,
    },
    /// GNMax (Papernot et al. 2018, §4.1): N(0, σ²) on each count.
    Gnmax {
        /// σ, or `matched` (the σ of the queries after the head).
        sigma: Sigma,
        /// GNMax's head: the first `queries` queries at their own σ (as `privacy.head` of a run
        /// config; the base config needs `student.query_selection: head`). Without it the cell
        /// has no head, whatever the base config says.
        #[serde(default)]
        head: Option<privacy::aggregate::GnmaxHead>,
    },
    /// Confident-GNMax (Papernot et al. 2018, Algorithm 1).
    ConfidentGnmax {
        /// T as a share of the teachers (T = share × teachers), so one setting fits 100 and 250.
        threshold_share: f64,
        /// σ₁ of the threshold check.
        sigma1: f64,
        /// σ₂ of the answer, or `matched`.
        sigma2: Sigma,
    },
    /// Model averaging (`configs/train.yaml`'s mechanism): one Gaussian release of the linear
    /// teachers' clipped mean model, whatever the number of queries it labels.
    ModelAverage {
        /// σ, the noise multiplier.
        sigma: f64,
        /// The ℓ2 norm each teacher's model is clipped to.
        clip_norm: f64,
    },
}

impl MechanismSpec {
    /// Whether a parameter is `matched`.
    pub fn is_matched(&self) -> bool {
        match self {
            MechanismSpec::Lnmax { .. } => false,
            MechanismSpec::Gnmax { sigma, .. } => sigma.value().is_none(),
            MechanismSpec::ConfidentGnmax { sigma2, .. } => sigma2.value().is_none(),
            MechanismSpec::ModelAverage { .. } => false,
        }
    }

    /// A short label for ids and tables (`lnmax-g0.05`, `gnmax-matched`, ...).
    pub fn label(&self) -> String {
        let s = |v: &Sigma| v.value().map_or("matched".to_string(), |v| format!("{v}"));
        match self {
            MechanismSpec::Lnmax { gamma } => format!("lnmax-g{gamma}"),
            MechanismSpec::Gnmax { sigma, head } => match head {
                None => format!("gnmax-s{}", s(sigma)),
                Some(h) => format!("gnmax-s{}-head{}_s{}", s(sigma), h.queries, h.sigma),
            },
            MechanismSpec::ConfidentGnmax {
                threshold_share,
                sigma1,
                sigma2,
            } => format!("cgnmax-T{threshold_share}-s1_{sigma1}-s2_{}", s(sigma2)),
            MechanismSpec::ModelAverage { sigma, clip_norm } => {
                format!("avg-s{sigma}-c{clip_norm}")
            }
        }
    }
}

impl SweepConfig {
    /// Reads, resolves (relative paths against the file's directory) and validates a sweep file,
    /// and loads its base config.
    pub fn load(path: &Path) -> Result<(Self, RunConfig)> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        let in_file = |e: Error| Error::ConfigFile {
            path: path.to_owned(),
            source: Box::new(e),
        };
        let mut config: SweepConfig =
            serde_yaml::from_str(&text).map_err(|e| in_file(Error::ConfigYaml(e)))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        if config.base.is_relative() {
            config.base = dir.join(&config.base);
        }
        for e in &mut config.experiments {
            for d in e.datasets.iter_mut().flatten() {
                if d.source.path.is_relative() {
                    d.source.path = dir.join(&d.source.path);
                }
            }
        }
        let base = RunConfig::load(&config.base).map_err(|e| Error::BaseConfig {
            base: config.base.clone(),
            sweep: path.to_owned(),
            source: Box::new(e),
        })?;
        config.validate().map_err(in_file)?;
        Ok((config, base))
    }

    /// Checks every value, naming the key.
    pub fn validate(&self) -> Result<()> {
        if self.jobs == 0 {
            return bad("jobs".into(), "must be at least 1");
        }
        if self.threads == Some(0) {
            return bad("threads".into(), "must be at least 1 (or null)");
        }
        if self.experiments.is_empty() {
            return bad("experiments".into(), "at least one experiment is needed");
        }
        let mut names = std::collections::HashSet::new();
        for (i, e) in self.experiments.iter().enumerate() {
            let key = |k: &str| e.key(i, k);
            if e.name.is_empty()
                || !e
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return bad(key("name"), "letters, digits, '-' and '_' only, not empty");
            }
            if !names.insert(e.name.clone()) {
                return bad(key("name"), "two experiments have this name");
            }
            e.validate_grid(i)?;
        }
        Ok(())
    }

    /// `--quick`: a size that finishes in minutes on a 2-core machine. Every dataset keeps its
    /// first 3,000 requests, each experiment its smallest teacher count (at most 20), its first
    /// three ρ values, query counts capped at 200, 2 repeats; teachers train ≤ 15 epochs,
    /// students ≤ 30.
    pub fn quick(&mut self, base: &mut RunConfig) {
        let cap = |l: Option<usize>| Some(l.map_or(3000, |l| l.min(3000)));
        for d in base.sources_mut() {
            d.limit = cap(d.limit);
        }
        base.teachers.training.max_epochs = base.teachers.training.max_epochs.min(15);
        base.student.training.max_epochs = base.student.training.max_epochs.min(30);
        base.student.queries = base.student.queries.min(200);
        for e in &mut self.experiments {
            for d in e.datasets.iter_mut().flatten() {
                d.source.limit = cap(d.source.limit);
            }
            let smallest = *e.teachers.iter().min().expect("validated: not empty");
            e.teachers = vec![smallest.min(20)];
            if let Some(r) = &mut e.rho {
                r.truncate(3);
            }
            if let Some(q) = &mut e.queries {
                for v in q.iter_mut() {
                    *v = (*v).min(200);
                }
                q.dedup();
            }
            for v in e.epsilon_curve.iter_mut() {
                *v = (*v).min(200);
            }
            e.epsilon_curve.dedup();
            e.repeats = e.repeats.min(2);
        }
    }
}

/// The error of a value of the sweep file: `key` names it, `why` says what it must be.
fn bad(key: String, why: &str) -> Result<()> {
    Err(Error::ConfigKey {
        key,
        reason: why.into(),
    })
}

impl Experiment {
    /// The full key of this experiment's `k`, `i` its index (`experiments[2] (name).k`).
    fn key(&self, i: usize, k: &str) -> String {
        format!("experiments[{i}] ({}).{k}", self.name)
    }

    /// Checks every value but the name (the sweep checks names, which must also differ), `i`
    /// this experiment's index.
    fn validate_grid(&self, i: usize) -> Result<()> {
        let key = |k: &str| self.key(i, k);
        if self.teachers.is_empty() || self.teachers.contains(&0) {
            return bad(key("teachers"), "a non-empty list of counts ≥ 1");
        }
        if self.repeats == 0 {
            return bad(key("repeats"), "must be at least 1");
        }
        if let Some(q) = &self.queries {
            if q.is_empty() || q.contains(&0) {
                return bad(key("queries"), "a non-empty list of counts ≥ 1");
            }
        }
        if let Some(t) = &self.non_private_training {
            t.validate(&key("non_private_training"))?;
            if self.kind != ExperimentKind::Baselines {
                return bad(
                    key("non_private_training"),
                    "only a baselines experiment trains a non-private model",
                );
            }
        }
        if self.epsilon_curve.contains(&0) {
            return bad(key("epsilon_curve"), "query counts must be ≥ 1");
        }
        if let Some(ds) = &self.datasets {
            if ds.is_empty() {
                return bad(key("datasets"), "at least one dataset (or leave it out)");
            }
            for (j, d) in ds.iter().enumerate() {
                if d.splits.as_ref().is_some_and(|s| s.is_empty()) {
                    return bad(
                        key(&format!("datasets[{j}].splits")),
                        "at least one split (or leave it out)",
                    );
                }
            }
        }
        match self.kind {
            ExperimentKind::Baselines => {
                if !self.mechanisms.is_empty() || self.rho.is_some() {
                    return bad(
                        key("mechanisms"),
                        "a baselines experiment has no mechanisms or rho (no noise)",
                    );
                }
                Ok(())
            }
            ExperimentKind::Pate => self.validate_noise(i),
        }
    }

    /// A `pate` experiment's ρ values and mechanisms, `i` its index.
    fn validate_noise(&self, i: usize) -> Result<()> {
        let key = |k: &str| self.key(i, k);
        if self.mechanisms.is_empty() {
            return bad(key("mechanisms"), "at least one mechanism");
        }
        if self.mechanisms[0].is_matched() {
            return bad(key("mechanisms[0]"), "the first mechanism is the reference the others are matched to: give its parameters");
        }
        for r in self.rho.iter().flatten().flatten() {
            if !(r.is_finite() && *r > 0.0) {
                return bad(key("rho"), "each ρ must be a positive number or null");
            }
        }
        for (j, m) in self.mechanisms.iter().enumerate() {
            if !m.parameters_ok() {
                return bad(key(&format!("mechanisms[{j}]")), "γ, σ, σ₁, head.sigma and clip_norm must be positive numbers, head.queries at least 1, σ/σ₂ a positive number or `matched`, threshold_share in [0, 1]");
            }
        }
        Ok(())
    }
}

impl MechanismSpec {
    /// Whether every parameter is in range: noise scales positive numbers (σ and σ₂ may be
    /// `matched`), a head of at least one query, `threshold_share` in [0, 1].
    fn parameters_ok(&self) -> bool {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        let sigma_ok = |s: &Sigma| match s {
            Sigma::Value(v) => positive(*v),
            Sigma::Keyword(w) => w == "matched",
        };
        match self {
            MechanismSpec::Lnmax { gamma } => positive(*gamma),
            MechanismSpec::Gnmax { sigma, head } => {
                sigma_ok(sigma) && head.is_none_or(|h| h.queries > 0 && positive(h.sigma))
            }
            MechanismSpec::ConfidentGnmax {
                threshold_share,
                sigma1,
                sigma2,
            } => {
                threshold_share.is_finite()
                    && (0.0..=1.0).contains(threshold_share)
                    && positive(*sigma1)
                    && sigma_ok(sigma2)
            }
            MechanismSpec::ModelAverage { sigma, clip_norm } => {
                positive(*sigma) && positive(*clip_norm)
            }
        }
    }
}

impl SweepDataset {
    /// A base-config dataset (every split allowed).
    pub fn from_source(s: &DatasetSource) -> Self {
        SweepDataset {
            source: s.clone(),
            splits: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let parse = |t: &str| serde_yaml::from_str::<SweepConfig>(t).map_err(|e| e.to_string());
        let e = parse("base: x.yaml\nexperiments: []\nbogus: 1\n").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = parse("base: x.yaml\nexperiments:\n  - {name: a, kind: pate, teachers: [1], repeats: 1, mechanisms: [{kind: lnmax, gamma: 0.1, sigma: 2}]}\n").unwrap_err();
        assert!(e.contains("sigma"), "{e}");
        let c = parse("base: x.yaml\nexperiments:\n  - {name: a, kind: pate, teachers: [1], repeats: 1, mechanisms: [{kind: gnmax, sigma: matched}]}\n").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("mechanisms[0]"), "{e}");
        let c = parse("base: x.yaml\nexperiments:\n  - {name: a, kind: pate, teachers: [1], repeats: 1, mechanisms: [{kind: lnmax, gamma: 0.1}, {kind: gnmax, sigma: maybe}]}\n").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("mechanisms[1]"), "{e}");
        let c = parse("base: x.yaml\nexperiments:\n  - {name: a, kind: pate, teachers: [1], repeats: 1, rho: [null, 0.5], mechanisms: [{kind: lnmax, gamma: 0.1}, {kind: confident_gnmax, threshold_share: 0.7, sigma1: 10, sigma2: matched}]}\n").unwrap();
        c.validate().unwrap();
    }
}
