//! `pate-trainer evaluate`: test metrics (TPR, TNR, FPR, precision, F1, ROC AUC at the model's
//! threshold) of the student and, when teachers are given, of the teacher ensemble (noiseless
//! vote share, malicious at >= 0.5); writes evaluation.json and an SVG ROC plot.
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::model_file::{load_teachers, ModelFile};
use crate::rundir::{resolve_path, sets, RunDir};

/// Arguments of `pate-trainer evaluate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run directory: defaults --model, --teachers, --features, --labels, --out and --roc.
    #[arg(long, value_name = "RUN_DIR")]
    pub run: Option<PathBuf>,
    /// The model file to evaluate (default RUN_DIR/student.safetensors).
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// Teachers to evaluate as an ensemble too (default RUN_DIR/teachers when it exists).
    #[arg(long, value_name = "DIR")]
    pub teachers: Option<PathBuf>,
    /// Test features (f32 matrix; default RUN_DIR/features/test.f32).
    #[arg(long, value_name = "FILE")]
    pub features: Option<PathBuf>,
    /// Test labels (0 or 1 per line; default RUN_DIR/features/test.labels).
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// Where to write the metrics JSON (default RUN_DIR/evaluation.json; printed either way).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where to write the ROC plot as SVG (default RUN_DIR/roc.svg); the PNG goes beside it,
    /// with the extension `.png` (default RUN_DIR/roc.png).
    #[arg(long, value_name = "FILE")]
    pub roc: Option<PathBuf>,
    /// `--device`, `--threads`.
    #[command(flatten)]
    pub compute: super::DeviceArgs,
}

/// Runs `pate-trainer evaluate`.
pub fn run(args: Args) -> Result<()> {
    let run = args.run.as_ref().map(RunDir::new);
    let pick = |given: &Option<PathBuf>, default: &dyn Fn(&RunDir) -> PathBuf, flag: &str| {
        resolve_path(given, run.as_ref(), default, "evaluate", flag)
    };
    let model_path = pick(&args.model, &|r| r.student(), "model")?;
    let features_path = pick(&args.features, &|r| r.features(sets::TEST), "features")?;
    let labels_path = pick(&args.labels, &|r| r.labels(sets::TEST), "labels")?;
    let teachers_dir = args
        .teachers
        .clone()
        .or_else(|| run.as_ref().map(|r| r.teachers()).filter(|p| p.is_dir()));
    let device = args.compute.apply(None)?;
    let model = ModelFile::load(&model_path)?;
    let x = crate::io::read_matrix(&features_path)?;
    let y = crate::io::read_full_labels(&labels_path, "test labels must be 0 or 1")?;
    if y.len() != x.rows {
        return Err(Error::RowCount {
            path: labels_path,
            what: "labels",
            found: y.len(),
            other: features_path,
            expected: x.rows,
        });
    }
    let teachers = match &teachers_dir {
        Some(d) => load_teachers(d)?,
        None => Vec::new(),
    };
    let evaluation = crate::stages::evaluate::evaluate(&model, &teachers, &x, &y, None, device)?;
    if let Some(out) = args
        .out
        .clone()
        .or_else(|| run.as_ref().map(|r| r.evaluation()))
    {
        crate::io::write_json(&out, &evaluation.report)?;
    }
    let roc = match (&args.roc, &run) {
        (Some(svg), _) if svg.extension().is_some_and(|e| e == "png") => {
            return Err(Error::FlagValue {
                flag: "roc",
                value: format!("{}:", svg.display()),
                problem: "names the SVG file; the PNG is written beside it",
            })
        }
        (Some(svg), _) => Some((svg.clone(), svg.with_extension("png"))),
        (None, Some(r)) => Some((r.roc(), r.roc_png())),
        (None, None) => None,
    };
    if let Some((svg, png)) = roc {
        evaluation.roc_plot()?.write(&svg, &png)?;
    }
    let json = serde_json::to_string(&evaluation.report).expect("an evaluation serializes");
    println!("{json}");
    Ok(())
}
