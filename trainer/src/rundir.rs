//! The run directory: where every stage reads and writes its typed artifacts, and the manifest
//! (`manifest.json`) that records the config, where randomness came from, versions and the sha256
//! of every artifact.
//!
//! ```text
//! RUN_DIR/
//!   config.yaml            the effective configuration
//!   manifest.json          config, rng provenance, versions, sha256 of every artifact
//!   splits.json            which request (dataset, line) went to which split
//!   featurizer.json        vocabulary + IDF (fitted on the public side by default)
//!   features/*.f32         features (privacy crate's f32 matrix files; sparse where smaller)
//!   features/*.labels      labels, one class index per line (0 benign, 1 malicious)
//!   shards.json            rows of features/private.f32 per teacher
//!   teachers/teacher-NNNNN.safetensors
//!   votes.csv              per-query vote counts "benign,malicious" (privacy format)
//!   aggregate.labels       noisy labels (class index or `-` for no answer)
//!   privacy.json           the accountant's EpsilonReport
//!   student.safetensors    the student
//!   ledger.jsonl           the privacy ledger of the teachers (every aggregation they answered)
//!   evaluation.json, roc.svg, roc.png, report.json, bundle/
//! ```
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::{file_sha256, write_json};

/// The privacy ledger of the run's teacher set, beside `teachers/` (`privacy::ledger`).
pub const LEDGER_FILE: &str = "ledger.jsonl";

/// Name of the feature set of the unlabelled public pool (self-training), `features/public_pool.f32`.
pub const PUBLIC_POOL_SET: &str = "public_pool";

/// The student's model file inside a run directory (a [`crate::model_file::ModelFile`], safetensors).
pub const RUN_STUDENT_FILE: &str = "student.safetensors";
/// The model of single parts inside a run directory (a [`crate::model_file::ModelFile`], when the run made one).
pub const RUN_PART_MODEL_FILE: &str = "part_model.safetensors";
/// The featurizer artifact inside a run directory.
pub const RUN_FEATURIZER_FILE: &str = "featurizer.json";
/// The run report inside a run directory (privacy report and test metrics).
pub const RUN_REPORT_FILE: &str = "report.json";
/// The bundle directory inside a run directory.
pub const RUN_BUNDLE_DIR: &str = "bundle";

/// Paths inside a run directory: every file name a stage reads or writes is here.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The run directory.
    pub root: PathBuf,
}

/// Names of the feature sets.
pub mod sets {
    /// Teachers' private data.
    pub const PRIVATE: &str = "private";
    /// The student's queries (original features).
    pub const QUERIES: &str = "queries";
    /// The student's queries as sent to the teachers (Laplace-privatized when ρ is set).
    pub const QUERIES_SENT: &str = "queries.sent";
    /// Student validation (early stopping, threshold).
    pub const STUDENT_VALIDATION: &str = "student_validation";
    /// Test.
    pub const TEST: &str = "test";
}

/// Resolves one input or output path of a stage subcommand: the explicit `--FLAG` value, else the
/// run directory's default for it, else an error naming both ways to give it.
pub fn resolve_path(
    given: &Option<PathBuf>,
    run: Option<&RunDir>,
    default: impl Fn(&RunDir) -> PathBuf,
    command: &str,
    flag: &str,
) -> Result<PathBuf> {
    given
        .clone()
        .or_else(|| run.map(default))
        .ok_or_else(|| Error::MissingPath {
            command: command.to_string(),
            flag: flag.to_string(),
        })
}

impl RunDir {
    /// A run directory at `root` (not created).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        RunDir { root: root.into() }
    }

    /// Creates the directory (and `features/`, `teachers/`).
    pub fn create(&self) -> Result<()> {
        for d in [
            self.root.clone(),
            self.root.join("features"),
            self.teachers(),
        ] {
            std::fs::create_dir_all(&d).map_err(|source| Error::Io { path: d, source })?;
        }
        Ok(())
    }

    /// A path inside the run directory.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// `features/<set>.f32`.
    pub fn features(&self, set: &str) -> PathBuf {
        self.root.join("features").join(format!("{set}.f32"))
    }

    /// `features/<set>.labels`.
    pub fn labels(&self, set: &str) -> PathBuf {
        self.root.join("features").join(format!("{set}.labels"))
    }

    /// `teachers/`.
    pub fn teachers(&self) -> PathBuf {
        self.root.join("teachers")
    }

    /// `config.yaml`.
    pub fn config(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// `featurizer.json`.
    pub fn featurizer(&self) -> PathBuf {
        self.root.join("featurizer.json")
    }

    /// `shards.json`.
    pub fn shards(&self) -> PathBuf {
        self.root.join("shards.json")
    }

    /// `votes.csv`.
    pub fn votes(&self) -> PathBuf {
        self.root.join("votes.csv")
    }

    /// `aggregate.labels`.
    pub fn aggregate_labels(&self) -> PathBuf {
        self.root.join("aggregate.labels")
    }

    /// `privacy.json`.
    pub fn privacy(&self) -> PathBuf {
        self.root.join("privacy.json")
    }

    /// `student.safetensors`.
    pub fn student(&self) -> PathBuf {
        self.root.join(RUN_STUDENT_FILE)
    }

    /// `part_model.safetensors` (`student.public_examples.part_model`).
    pub fn part_model(&self) -> PathBuf {
        self.root.join(RUN_PART_MODEL_FILE)
    }

    /// `manifest.json`.
    pub fn manifest(&self) -> PathBuf {
        self.root.join("manifest.json")
    }

    /// `splits.json`.
    pub fn splits(&self) -> PathBuf {
        self.root.join("splits.json")
    }

    /// `ledger.jsonl`, the privacy ledger of the teachers in `teachers/`.
    pub fn ledger(&self) -> PathBuf {
        self.root.join(LEDGER_FILE)
    }

    /// `evaluation.json`.
    pub fn evaluation(&self) -> PathBuf {
        self.root.join("evaluation.json")
    }

    /// `roc.svg`.
    pub fn roc(&self) -> PathBuf {
        self.root.join("roc.svg")
    }

    /// `roc.png`, the same plot as [`RunDir::roc`].
    pub fn roc_png(&self) -> PathBuf {
        self.root.join("roc.png")
    }

    /// `report.json`.
    pub fn report(&self) -> PathBuf {
        self.root.join(RUN_REPORT_FILE)
    }

    /// `bundle/`.
    pub fn bundle(&self) -> PathBuf {
        self.root.join(RUN_BUNDLE_DIR)
    }
}

/// Layout version of the run directories this trainer writes: config.yaml holds every key of
/// its day and is read over today's recommended defaults, so a config.yaml of an older version
/// does not read back as the settings that run had (version 1 left out the keys at the defaults
/// of its day; version 2 lacks `featurizer.config.placements.part_values_only`).
pub const RUN_FORMAT_VERSION: u32 = 3;

/// The layout version of the run directory at `run` (its manifest's `format_version`).
pub fn format_version(run: &RunDir) -> Result<u32> {
    #[derive(Deserialize)]
    struct Version {
        format_version: u32,
    }
    let path = run.manifest();
    let text = std::fs::read(&path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let v: Version =
        serde_json::from_slice(&text).map_err(|source| Error::Json { path, source })?;
    Ok(v.format_version)
}

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunManifest {
    /// Layout version of the run directory.
    pub format_version: u32,
    /// When the run started (RFC 3339, UTC).
    pub created: String,
    /// `{"rng": "os"}` or `{"rng": "seeded", "seed": N}` (seeded only via the config's `seed:`).
    pub rng: privacy::RngProvenance,
    /// Versions of the software.
    pub versions: BTreeMap<String, String>,
    /// The device that trained.
    pub device: String,
    /// The effective configuration.
    pub config: serde_json::Value,
    /// Stages completed, in order.
    pub stages: Vec<String>,
    /// sha256 (hex) of every artifact, by path relative to the run directory.
    pub artifacts: BTreeMap<String, String>,
}

impl RunManifest {
    /// A new manifest.
    pub fn new(rng: privacy::RngProvenance, device: String, config: serde_json::Value) -> Self {
        let versions = BTreeMap::from([
            (
                "pate-trainer".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
            ("tch".to_string(), "0.26.0".to_string()),
            ("featurizer-artifact".to_string(), featurizer_version()),
        ]);
        RunManifest {
            format_version: RUN_FORMAT_VERSION,
            created: bundle::rfc3339_utc(std::time::SystemTime::now()),
            rng,
            versions,
            device,
            config,
            stages: Vec::new(),
            artifacts: BTreeMap::new(),
        }
    }

    /// Records a finished stage and the hashes of the files it wrote, then rewrites
    /// `manifest.json` atomically.
    pub fn record(&mut self, run: &RunDir, stage: &str, files: &[PathBuf]) -> Result<()> {
        for f in files {
            self.add_file(run, f)?;
        }
        self.stages.push(stage.to_string());
        write_json(&run.manifest(), self)
    }

    fn add_file(&mut self, run: &RunDir, f: &Path) -> Result<()> {
        if f.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(f)
                .map_err(|source| Error::Io {
                    path: f.to_owned(),
                    source,
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            entries.sort();
            for e in entries {
                self.add_file(run, &e)?;
            }
            return Ok(());
        }
        let relative = f
            .strip_prefix(&run.root)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        self.artifacts.insert(relative, file_sha256(f)?);
        Ok(())
    }
}

fn featurizer_version() -> String {
    // The artifact's own version is inside featurizer.json; the crate version pins the code.
    format!("featurizer crate {}", env!("CARGO_PKG_VERSION"))
}
