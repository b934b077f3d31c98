//! `pate-trainer aggregate`: noisy aggregation of a vote file into labels.
//!
//! ```text
//! pate-trainer aggregate --votes votes.csv --mechanism gnmax --sigma 40 --out labels.csv
//! ```
//! `--out` gets one line per query: the class index, or `-` when Confident-GNMax declined to
//! answer (no header, the format `account --answered` reads). A JSON summary (mechanism,
//! parameters, counts, rng provenance) is printed on stdout and written beside the labels as
//! `<out>.json`. Noise comes from the OS-seeded ChaCha20 CSPRNG; `--seed` is for experiments
//! only and is recorded as `{"rng":"seeded","seed":N}`.
use std::path::PathBuf;

use privacy::accountant::Mechanism;
use privacy::aggregate::{format_labels, Aggregator};

use super::account::MechanismArgs;
use crate::error::{Error, Result};

/// Arguments of `pate-trainer aggregate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Vote file: one line per query, per-class counts separated by commas.
    #[arg(long)]
    pub votes: PathBuf,
    /// Mechanism and its parameters.
    #[command(flatten)]
    pub mechanism: MechanismArgs,
    /// EXPERIMENTS ONLY: fixed noise seed (recorded in the summary; the labels are then NOT private).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Labels file to write (one line per query: class index or `-`).
    #[arg(long)]
    pub out: PathBuf,
}

/// Runs `pate-trainer aggregate`.
pub fn run(args: Args) -> Result<()> {
    let votes = privacy::votes::read_vote_file(&args.votes)?;
    let mechanism = args.mechanism.mechanism()?;
    let mut rng = privacy::NoiseRng::from_option(args.seed)?;
    let (labels, parameters) = match &mechanism {
        Mechanism::Lnmax(m) => (m.aggregate(&votes, &mut rng)?, serde_json::to_value(m)),
        Mechanism::Gnmax(m) => (m.aggregate(&votes, &mut rng)?, serde_json::to_value(m)),
        Mechanism::ConfidentGnmax(m) => (m.aggregate(&votes, &mut rng)?, serde_json::to_value(m)),
    };
    let parameters =
        parameters.map_err(|e| Error::Invalid(format!("cannot serialize parameters: {e}")))?;
    let name = match &mechanism {
        Mechanism::Lnmax(_) => "lnmax",
        Mechanism::Gnmax(_) => "gnmax",
        Mechanism::ConfidentGnmax(_) => "confident-gnmax",
    };
    let mut per_class = vec![0usize; votes.classes()];
    for l in labels.iter().flatten() {
        per_class[*l] += 1;
    }
    let answered = labels.iter().filter(|l| l.is_some()).count();
    let summary = serde_json::json!({
        "mechanism": name,
        "parameters": parameters,
        "queries": votes.queries(),
        "answered": answered,
        "unanswered": votes.queries() - answered,
        "labels_per_class": per_class,
        "labels_file": args.out,
        "label_format": "one line per query: the class index, or '-' for no answer",
        "rng": rng.provenance(),
        "votes_file": args.votes,
    });
    privacy::write_atomic(&args.out, format_labels(&labels).as_bytes())?;
    let mut sidecar = args.out.clone().into_os_string();
    sidecar.push(".json");
    let text = serde_json::to_string_pretty(&summary)
        .map_err(|e| Error::Invalid(format!("cannot serialize the summary: {e}")))?;
    privacy::write_atomic(&PathBuf::from(sidecar), format!("{text}\n").as_bytes())?;
    println!(
        "{}",
        serde_json::to_string(&summary).map_err(|e| Error::Invalid(e.to_string()))?
    );
    Ok(())
}
