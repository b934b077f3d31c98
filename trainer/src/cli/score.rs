//! `pate-trainer score`: scores requests with an exported bundle through ONNX Runtime, exactly as
//! `pate-proxy` does (same featurizer artifact, same model, same threshold rule
//! [`bundle::is_block`]).
use std::io::Write;
use std::path::PathBuf;

use bundle::{Bundle, Scorer};
use featurizer::RequestParts;

use crate::error::{Error, Result};

/// Requests scored per ONNX Runtime run with `--input`.
const BATCH_ROWS: usize = 256;

/// Arguments of `pate-trainer score`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bundle directory (written by `pate-trainer export`).
    #[arg(long, value_name = "DIR")]
    pub bundle: PathBuf,
    /// One request target (path and query, as sent); prints one JSON object
    /// `{"score", "threshold", "verdict"}`.
    #[arg(long, conflicts_with = "input", required_unless_present = "input")]
    pub target: Option<String>,
    /// Method of the `--target` request.
    #[arg(long, default_value = "GET", requires = "target")]
    pub method: String,
    /// Form body of the `--target` request.
    #[arg(long, requires = "target")]
    pub body: Option<String>,
    /// A dataset file; prints one JSON line per request
    /// `{"index", "line", "label", "score", "verdict"}`.
    #[arg(long, value_name = "FILE", requires = "format")]
    pub input: Option<PathBuf>,
    /// Format of `--input`: csic|fwaf|httpparams|csv|apache.
    #[arg(long)]
    pub format: Option<datasets::Format>,
    /// Give every `--input` record this label (benign|malicious), whatever the file says.
    #[arg(long, requires = "input")]
    pub label: Option<datasets::Label>,
    /// Apache format: a file with one label per log line.
    #[arg(long, requires = "input")]
    pub label_file: Option<PathBuf>,
    /// Override the bundle's threshold.
    #[arg(long)]
    pub threshold: Option<f32>,
    /// ONNX Runtime library (default: $ORT_DYLIB_PATH, else the path set at build time).
    #[arg(long, value_name = "FILE")]
    pub onnxruntime: Option<PathBuf>,
}

/// Output of `score --target` (a struct rather than `json!` so that f32 values print in their
/// shortest f32 form, e.g. `0.51428175`, not widened to f64 digits).
#[derive(serde::Serialize)]
struct OneScore<'a> {
    score: f32,
    threshold: f32,
    verdict: &'static str,
    model_version: &'a str,
}

/// One line of `score --input`.
#[derive(serde::Serialize)]
struct RecordScore {
    index: usize,
    line: usize,
    label: Option<datasets::Label>,
    score: f32,
    verdict: &'static str,
}

fn verdict(score: f32, threshold: f32) -> &'static str {
    if bundle::is_block(score, threshold) {
        "block"
    } else {
        "allow"
    }
}

/// Runs `pate-trainer score`.
pub fn run(args: Args) -> Result<()> {
    let bundle = Bundle::load(&args.bundle)?;
    let threshold = args.threshold.unwrap_or(bundle.manifest.threshold);
    if !(threshold.is_finite() && (0.0..=1.0).contains(&threshold)) {
        return Err(Error::Config(format!(
            "--threshold {threshold} is not a probability in [0, 1]"
        )));
    }
    bundle::init_onnxruntime(args.onnxruntime.as_deref())?;
    let mut scorer = Scorer::new(&bundle)?;

    if let Some(target) = &args.target {
        let parts = RequestParts {
            method: &args.method,
            target: target.as_bytes(),
            body: args.body.as_deref().map(str::as_bytes),
            headers: Default::default(),
        };
        let score = scorer.score(&bundle.featurizer.transform_dense(&parts))?;
        let out = OneScore {
            score,
            threshold,
            verdict: verdict(score, threshold),
            model_version: &bundle.manifest.model_version,
        };
        println!(
            "{}",
            serde_json::to_string(&out).map_err(|e| Error::Invalid(e.to_string()))?
        );
        return Ok(());
    }

    let (Some(input), Some(format)) = (&args.input, args.format) else {
        return Err(Error::Config(
            "score: pass --target or --input FILE --format F".into(),
        ));
    };
    let options = datasets::LoadOptions {
        label: args.label,
        label_file: args.label_file.clone(),
    };
    let records = datasets::load_with(format, input, &options)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let dim = bundle.featurizer.dim();
    let mut flat = Vec::with_capacity(BATCH_ROWS * dim);
    for (chunk_index, chunk) in records.chunks(BATCH_ROWS).enumerate() {
        flat.clear();
        for record in chunk {
            flat.extend(bundle.featurizer.transform_dense(&record.parts()));
        }
        let scores = scorer.score_flat(&flat)?;
        for (offset, (record, score)) in chunk.iter().zip(scores).enumerate() {
            let line = RecordScore {
                index: chunk_index * BATCH_ROWS + offset,
                line: record.line,
                label: record.label,
                score,
                verdict: verdict(score, threshold),
            };
            let line = serde_json::to_string(&line).map_err(|e| Error::Invalid(e.to_string()))?;
            if let Err(e) = writeln!(out, "{line}") {
                // A closed pipe (`| head`) ends the listing quietly.
                return if e.kind() == std::io::ErrorKind::BrokenPipe {
                    Ok(())
                } else {
                    Err(stdout_error(e))
                };
            }
        }
    }
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(stdout_error(e)),
        _ => Ok(()),
    }
}

fn stdout_error(source: std::io::Error) -> Error {
    Error::Io {
        path: PathBuf::from("<stdout>"),
        source,
    }
}
