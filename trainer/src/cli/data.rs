//! `pate-trainer data`: inspect datasets, and write out the requests of a run's public roles.
use std::path::PathBuf;

use crate::error::Result;

/// Arguments of `pate-trainer data`.
pub type Args = super::Group<Command>;

/// `data` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Count records per label; prints one JSON object
    /// `{"records": N, "by_label": {"benign": .., "malicious": .., "unlabeled": ..}}`.
    Stats(StatsArgs),
    /// Write the requests of one public role of a run configuration (its simulated split, or its
    /// role files) in CSIC's format, every copy in load order: `OUT/normal.txt` (benign),
    /// `OUT/anomalous.txt` (malicious; the CSIC loader labels by these names) and
    /// `OUT/unlabeled.txt` (unlabelled public requests), so that other detectors can be replayed
    /// on exactly the requests a run was evaluated on (`bench/crs/run.sh --files`). Prints one JSON object with the counts. Headers as the run
    /// reads them: none without the featurizer's `placements`. The private role is never written.
    Split(SplitArgs),
}

/// A role whose requests are not private.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PublicRole {
    /// The public split (the student's query pool).
    Public,
    /// The student's labelled validation split.
    Validation,
    /// The test split.
    Test,
}

/// Arguments of `pate-trainer data split`.
#[derive(Debug, clap::Args)]
pub struct SplitArgs {
    /// The run configuration (`pate-trainer run --config`).
    #[arg(long)]
    pub config: PathBuf,
    /// Which role's requests.
    #[arg(long, value_enum)]
    pub role: PublicRole,
    /// Output directory (created; the files in it are replaced).
    #[arg(long)]
    pub out: PathBuf,
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
        Command::Split(a) => split(&a),
    }
}

/// `pate-trainer data split`.
fn split(a: &SplitArgs) -> Result<()> {
    let config = crate::config::RunConfig::load(&a.config)?;
    let data = crate::stages::split::load_run_data(&config)?;
    let rows = match a.role {
        PublicRole::Public => &data.splits.public,
        PublicRole::Validation => &data.splits.student_validation,
        PublicRole::Test => &data.splits.test,
    };
    let mut counts = serde_json::Map::new();
    for (name, count) in crate::stages::split::write_csic_by_label(&data, rows, &a.out)? {
        counts.insert(name.into(), count.into());
    }
    let role = clap::ValueEnum::to_possible_value(&a.role)
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default();
    super::featurize::print_line(&serde_json::json!({"role": role, "requests": counts}).to_string())
}
