//! `pate-trainer featurize`: fit the featurizer artifact on a dataset, or show what it does to a
//! request.
use std::path::PathBuf;

use crate::error::{Error, Result};

/// Arguments of `pate-trainer featurize`.
pub type Args = super::Group<Command>;

/// `featurize` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Fit the vocabulary (top-K tokens by document frequency) and IDF; write the artifact.
    Fit(FitArgs),
    /// Print the normalized text, the tokens and the non-zero TF-IDF weights of one request (JSON).
    Show(ShowArgs),
}

/// Arguments of `pate-trainer featurize fit`.
#[derive(Debug, clap::Args)]
pub struct FitArgs {
    /// Dataset format: csic|fwaf|httpparams|csv|apache.
    #[arg(long)]
    pub format: datasets::Format,
    /// Dataset files (all their records are fitted on; labels are not used).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Vocabulary size K.
    #[arg(long, default_value_t = featurizer::FeaturizerConfig::default().top_k)]
    pub top_k: usize,
    /// Longest raw input read per request, in bytes (longer ones are truncated and flagged).
    #[arg(long, default_value_t = featurizer::FeaturizerConfig::default().max_input_bytes)]
    pub max_input_bytes: usize,
    /// Most rounds of percent-decoding.
    #[arg(long, default_value_t = featurizer::FeaturizerConfig::default().decode_rounds)]
    pub decode_rounds: usize,
    /// Ignore form bodies.
    #[arg(long)]
    pub no_body: bool,
    /// Longest token n-gram used as a feature (1 = unigrams, as in the seeds; at most 3).
    #[arg(long, default_value_t = 1)]
    pub ngram_max: usize,
    /// Where to write the artifact (atomically).
    #[arg(long)]
    pub out: PathBuf,
}

/// Arguments of `pate-trainer featurize show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The featurizer artifact.
    #[arg(long)]
    pub featurizer: PathBuf,
    /// Request target (path + query, as sent).
    #[arg(long)]
    pub target: String,
    /// Form body.
    #[arg(long)]
    pub body: Option<String>,
    /// Request method.
    #[arg(long, default_value = "GET")]
    pub method: String,
}

/// Runs `pate-trainer featurize`.
pub fn run(args: Args) -> Result<()> {
    match args.command {
        Command::Fit(a) => fit(a),
        Command::Show(a) => show(a),
    }
}

fn fit(a: FitArgs) -> Result<()> {
    let config = featurizer::FeaturizerConfig {
        top_k: a.top_k,
        max_input_bytes: a.max_input_bytes,
        decode_rounds: a.decode_rounds,
        include_body: !a.no_body,
        ngram_max: a.ngram_max,
        ..Default::default()
    };
    let records = datasets::load_all(a.format, &a.paths, &datasets::LoadOptions::default())?;
    if records.is_empty() {
        return Err(Error::NoRecords {
            paths: a.paths.clone(),
        });
    }
    let f = featurizer::Featurizer::fit(config, records.iter().map(|r| r.parts()))?;
    f.save(&a.out)?;
    let summary = FitSummary {
        out: a.out.clone(),
        documents: f.documents(),
        dim: f.dim(),
        content_hash: f.content_hash().to_string(),
    };
    print_line(&serde_json::to_string(&summary).expect("a summary serializes"))
}

fn show(a: ShowArgs) -> Result<()> {
    let f = featurizer::Featurizer::load(&a.featurizer)?;
    let req = featurizer::RequestParts {
        method: &a.method,
        target: a.target.as_bytes(),
        body: a.body.as_deref().map(str::as_bytes),
        headers: Default::default(),
        excluded_fields: Default::default(),
    };
    let explanation = f.explain(&req);
    print_line(&serde_json::to_string_pretty(&explanation).expect("plain data serializes"))
}

/// Prints one line on stdout; a closed pipe (`| head`) is not an error.
pub(crate) fn print_line(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
            path: "<stdout>".into(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// What `featurize fit` did (printed as one JSON line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FitSummary {
    /// The featurizer file.
    pub out: PathBuf,
    /// Documents it was fitted on.
    pub documents: u64,
    /// Feature dimension.
    pub dim: usize,
    /// Its content hash.
    pub content_hash: String,
}
