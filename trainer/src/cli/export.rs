//! `pate-trainer export`: writes the deployable bundle (`model.onnx`, `featurizer.json`,
//! `bundle.yaml`) that `pate-proxy` and `pate-trainer score` load.
//!
//! The pipeline calls [`export_bundle`]; the command line reads the student from a run directory
//! (`--run`) or from explicit files.
//!
//! What goes into `bundle.yaml` from the run report is a whitelist: the typed privacy section
//! ([`privacy::PublishedPrivacy`], from the report's `privacy` object) and the student's test
//! metrics (`metrics`). Everything else in `report.json` (data-dependent ε, private counts,
//! teacher-ensemble metrics) stays in the run directory. A run whose ε does not hold (seeded
//! noise, a featurizer fitted on the private data) or that has no privacy report is refused unless
//! `--not-private` is given; the bundle then says `published_epsilon_kind: none (not private: ...)`
//! (or has no privacy section).
use std::path::{Path, PathBuf};

use bundle::{Bundle, BundleContents, Manifest, Mlp, Scorer};
use featurizer::Featurizer;

use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::model_file::ModelFile;
use crate::report::ExportedParts;
use crate::rundir::{
    RUN_BUNDLE_DIR, RUN_FEATURIZER_FILE, RUN_PART_MODEL_FILE, RUN_REPORT_FILE, RUN_STUDENT_FILE,
};

/// Arguments of `pate-trainer export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run directory: reads `student.safetensors`, `featurizer.json` and (if present)
    /// `report.json` from it and writes `RUN_DIR/bundle/`. The options below override each part.
    #[arg(long, value_name = "RUN_DIR")]
    pub run: Option<PathBuf>,
    /// The student: a pate-trainer model file (`.safetensors`, carries its threshold and the
    /// featurizer hash it was trained with) or a JSON file of `bundle::onnx::Mlp`
    /// (`{"layers": [{"in_dim", "out_dim", "weight": [out×in, row-major], "bias"}]}`).
    #[arg(long, alias = "weights", value_name = "FILE")]
    pub student: Option<PathBuf>,
    /// Featurizer artifact the student was trained with.
    #[arg(long, value_name = "FILE")]
    pub featurizer: Option<PathBuf>,
    /// The model of single parts (a pate-trainer model file, `part_model.safetensors`), scored
    /// beside the student where content alone is scored (default with --run: the run's, when it
    /// has one).
    #[arg(long, value_name = "FILE")]
    pub part_model: Option<PathBuf>,
    /// Decision threshold on the malicious probability (default: the student file's, else the
    /// report's `threshold`).
    #[arg(long)]
    pub threshold: Option<f32>,
    /// Run report (JSON, `report.json`): its student metrics (`metrics`) and its typed privacy
    /// report (`privacy`), from which only the whitelist goes into bundle.yaml.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Export a run whose ε does not hold (seeded noise, featurizer fitted on private data) or
    /// that has no privacy report: the bundle then publishes no ε (`published_epsilon_kind:
    /// none (not private: ...)`), and the dashboard shows that.
    #[arg(long)]
    pub not_private: bool,
    /// Bundle directory to write (replaced atomically if it exists).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Model version recorded in bundle.yaml (default: derived from the model's sha256).
    #[arg(long)]
    pub model_version: Option<String>,
}

/// Writes the bundle into `out_dir` (e.g. `RUN_DIR/bundle`) atomically, loads it back (hashes,
/// versions, dimensions) and returns its manifest. `contents.privacy` is the whitelist (None: no
/// privacy report); `contents.metrics` the student's test metrics (`Null` when there are none).
pub fn export_bundle(out_dir: &Path, contents: &BundleContents) -> Result<Manifest> {
    let written = bundle::write_bundle(out_dir, contents)?;
    let loaded = Bundle::load(out_dir)?;
    if loaded.manifest != written {
        return Err(Error::Export {
            dir: out_dir.to_owned(),
            problem: "bundle.yaml read back differs from what was written".into(),
        });
    }
    Ok(written)
}

/// Checks through ONNX Runtime that the exported model scores like the network it came from, on
/// the zero vector and a few one-hot and spread inputs. Returns the largest difference.
pub fn verify_with_onnxruntime(bundle: &Bundle, mlp: &Mlp) -> Result<f32> {
    let dim = bundle.manifest.input_dim;
    let mut scorer = Scorer::new(bundle)?;
    let mut rows = vec![vec![0.0f32; dim], vec![1.0 / dim as f32; dim]];
    for k in 0..dim.min(8) {
        let mut row = vec![0.0f32; dim];
        row[k * dim / dim.min(8)] = 1.0;
        rows.push(row);
    }
    let scores = scorer.score_batch(&rows)?;
    let mut worst = 0.0f32;
    for (row, got) in rows.iter().zip(&scores) {
        worst = worst.max((got - mlp.forward(row)?).abs());
    }
    if worst > 1e-4 {
        return Err(Error::Export {
            dir: bundle.dir.clone(),
            problem: format!(
                "ONNX Runtime scores differ from the network by {worst} (tolerance 1e-4)"
            ),
        });
    }
    Ok(worst)
}

/// The bundle's `metrics`: the student's test metrics (`Null` when there are none).
pub fn bundle_metrics(metrics: &Metrics) -> serde_json::Value {
    serde_json::to_value(metrics).expect("metrics serialize")
}

/// The bundle's privacy whitelist from a run report's typed privacy report. A run that is not
/// private, or a report without a privacy report, is refused unless `allow_not_private`.
/// `source` names the report in errors.
pub fn published_privacy(
    report: Option<&privacy::PrivacyReport>,
    allow_not_private: bool,
    source: &str,
) -> Result<Option<privacy::PublishedPrivacy>> {
    let Some(full) = report else {
        return if allow_not_private {
            Ok(None)
        } else {
            Err(Error::NoPrivacyReport {
                report: source.to_string(),
            })
        };
    };
    full.published(allow_not_private)
        .map(Some)
        .map_err(|reasons| Error::NotPrivate {
            report: source.to_string(),
            source: reasons,
        })
}

/// The student and what its file records (thresholds, featurizer hash), if it is a model file.
fn read_student(path: &Path) -> Result<(Mlp, Option<crate::model_file::ModelInfo>)> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || bytes.first() == Some(&b'{');
    if is_json {
        let mlp: Mlp = serde_json::from_slice(&bytes).map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        })?;
        mlp.validate().map_err(|source| Error::Network {
            what: path.display().to_string(),
            source: Box::new(source),
        })?;
        Ok((mlp, None))
    } else {
        let file = ModelFile::from_bytes(&bytes, path)?;
        Ok((file.weights, Some(file.info)))
    }
}

/// The files `export` reads and the directory it writes: each flag, else its file in `--run`.
struct ExportPaths {
    student: PathBuf,
    featurizer: PathBuf,
    out: PathBuf,
    /// Optional: with `--run`, used when the file exists.
    report: Option<PathBuf>,
    /// Optional: with `--run`, used when the file exists.
    part_model: Option<PathBuf>,
}

impl ExportPaths {
    fn resolve(args: &Args) -> Result<ExportPaths> {
        let in_run = |name: &str| args.run.as_ref().map(|r| r.join(name));
        let existing = |name: &str| in_run(name).filter(|p| p.exists());
        let missing = |what: &'static str, flag: &'static str| Error::ExportInput { what, flag };
        Ok(ExportPaths {
            student: args
                .student
                .clone()
                .or_else(|| in_run(RUN_STUDENT_FILE))
                .ok_or_else(|| missing("student", "student"))?,
            featurizer: args
                .featurizer
                .clone()
                .or_else(|| in_run(RUN_FEATURIZER_FILE))
                .ok_or_else(|| missing("featurizer", "featurizer"))?,
            out: args
                .out
                .clone()
                .or_else(|| in_run(RUN_BUNDLE_DIR))
                .ok_or_else(|| missing("output directory", "out"))?,
            report: args.report.clone().or_else(|| existing(RUN_REPORT_FILE)),
            part_model: args
                .part_model
                .clone()
                .or_else(|| existing(RUN_PART_MODEL_FILE)),
        })
    }
}

/// An error unless the model at `model`, trained with the featurizer of hash `trained_with`, is
/// exported with that featurizer.
fn same_featurizer(
    model: &Path,
    trained_with: &str,
    featurizer: &Featurizer,
    featurizer_path: &Path,
) -> Result<()> {
    if trained_with == featurizer.content_hash() {
        return Ok(());
    }
    Err(Error::FeaturizerMismatch {
        model: model.to_owned(),
        trained_with: trained_with.to_string(),
        featurizer: featurizer_path.to_owned(),
        found: featurizer.content_hash().to_string(),
    })
}

/// The ε composed over every aggregation that used the run's teachers (the ledger beside them);
/// `None` without entries.
fn ledger_summary(run: &Path, delta: f64) -> Result<Option<ExportLedger>> {
    let entries = privacy::ledger::read(&run.join(crate::rundir::LEDGER_FILE))?;
    if entries.is_empty() {
        return Ok(None);
    }
    let (e, order) = privacy::ledger::composed_epsilon(&entries, delta)?;
    Ok(Some(ExportLedger {
        aggregations: entries.len(),
        composed_data_independent_epsilon: e,
        rdp_order: order,
        delta,
    }))
}

/// Runs `pate-trainer export`.
pub fn run(args: Args) -> Result<()> {
    let ExportPaths {
        student: student_path,
        featurizer: featurizer_path,
        out,
        report: report_path,
        part_model: part_model_path,
    } = ExportPaths::resolve(&args)?;
    let (mlp, info) = read_student(&student_path)?;
    let featurizer = Featurizer::load(&featurizer_path)?;
    let same_featurizer = |model: &Path, trained_with: &str| {
        same_featurizer(model, trained_with, &featurizer, &featurizer_path)
    };
    let part_model = part_model_path
        .as_deref()
        .map(|path| {
            let file = ModelFile::load(path)?;
            same_featurizer(path, &file.info.featurizer_hash)?;
            Ok::<_, Error>(file.weights)
        })
        .transpose()?;
    if let Some(info) = &info {
        same_featurizer(&student_path, &info.featurizer_hash)?;
    }
    let report: ExportedParts = report_path
        .as_deref()
        .map(crate::report::read)
        .transpose()?
        .unwrap_or_default();
    let source = report_path
        .as_ref()
        .map_or("the export (no report)".to_string(), |p| {
            p.display().to_string()
        });
    let privacy = published_privacy(report.privacy.as_ref(), args.not_private, &source)?;
    let report_threshold = report
        .threshold
        .or_else(|| report.metrics.as_ref().map(|m| m.threshold));
    let threshold = args
        .threshold
        .or(info.as_ref().map(|i| i.threshold))
        .or(report_threshold)
        .ok_or_else(|| Error::NoThreshold {
            student: student_path.clone(),
        })?;
    let metrics = report
        .metrics
        .as_ref()
        .map_or(serde_json::Value::Null, bundle_metrics);
    // The content-only threshold and the part model's offsets are the student file's (chosen
    // with the bundle's); an explicit --threshold replaces the bundle's alone. Offsets go with a
    // part model only.
    let manifest = export_bundle(
        &out,
        &BundleContents {
            mlp: &mlp,
            featurizer: &featurizer,
            threshold,
            content_only_threshold: info.as_ref().and_then(|i| i.content_only_threshold),
            part_model: part_model.as_ref(),
            part_model_offsets: match (&part_model, &info) {
                (Some(_), Some(i)) => i.part_model_offsets.clone(),
                _ => bundle::PartOffsets::default(),
            },
            privacy,
            metrics,
            model_version: args.model_version,
            format_checks: None,
        },
    )?;
    let loaded = Bundle::load(&out)?;
    let difference = verify_with_onnxruntime(&loaded, &mlp)?;
    let ledger = match (&args.run, manifest.privacy.as_ref()) {
        (Some(dir), Some(p)) => ledger_summary(dir, p.delta)?,
        _ => None,
    };
    let summary = ExportSummary {
        bundle: out.clone(),
        model_version: manifest.model_version.clone(),
        threshold: manifest.threshold,
        input_dim: manifest.input_dim,
        widths: manifest.model.widths.clone(),
        parameters: manifest.model.parameters,
        onnxruntime_max_abs_difference: difference,
        published_epsilon: manifest.privacy.as_ref().and_then(|p| p.published_epsilon),
        published_epsilon_kind: manifest
            .privacy
            .as_ref()
            .map(|p| p.published_epsilon_kind.clone()),
        ledger,
    };
    println!(
        "{}",
        serde_json::to_string(&summary).expect("a summary serializes")
    );
    Ok(())
}

/// What `export` wrote (printed as one JSON line).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExportSummary {
    /// The bundle directory.
    pub bundle: PathBuf,
    /// Its model version.
    pub model_version: String,
    /// Its threshold.
    pub threshold: f32,
    /// Its input dimension.
    pub input_dim: usize,
    /// Layer widths.
    pub widths: Vec<usize>,
    /// Parameters.
    pub parameters: usize,
    /// The largest difference between ONNX Runtime's scores and the network's.
    pub onnxruntime_max_abs_difference: f32,
    /// The published ε (None: not private, or no privacy report).
    pub published_epsilon: Option<f64>,
    /// What the published ε is.
    pub published_epsilon_kind: Option<String>,
    /// With --run: the ε composed over the run's ledger.
    pub ledger: Option<ExportLedger>,
}

/// The ε composed over every aggregation in a run's ledger.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExportLedger {
    /// Aggregations recorded.
    pub aggregations: usize,
    /// Their composed data-independent ε.
    pub composed_data_independent_epsilon: f64,
    /// Its RDP order.
    pub rdp_order: f64,
    /// δ.
    pub delta: f64,
}
