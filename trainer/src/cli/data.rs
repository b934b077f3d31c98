//! `pate-trainer data`: inspect datasets.
use std::path::PathBuf;

use crate::error::Result;

/// Arguments of `pate-trainer data`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `data` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Count records per label; prints one JSON object
    /// `{"records": N, "by_label": {"benign": .., "malicious": .., "unlabeled": ..}}`.
    Stats(StatsArgs),
}

/// Arguments of `pate-trainer data stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Dataset format: csic|fwaf|httpparams|csv|apache.
    #[arg(long)]
    pub format: datasets::Format,
    /// Give every record this label (benign|malicious), whatever the file says.
    #[arg(long)]
    pub label: Option<datasets::Label>,
    /// Apache format: a file with one label per log line.
    #[arg(long)]
    pub label_file: Option<PathBuf>,
    /// Dataset files (their counts are summed).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

/// Runs `pate-trainer data`.
pub fn run(args: Args) -> Result<()> {
    match args.command {
        Command::Stats(a) => {
            let options = datasets::LoadOptions {
                label: a.label,
                label_file: a.label_file,
            };
            let mut stats = datasets::Stats::default();
            for path in &a.paths {
                stats.add(&datasets::load_with(a.format, path, &options)?);
            }
            super::featurize::print_line(
                &serde_json::to_string(&stats).expect("plain data serializes"),
            )
        }
    }
}
