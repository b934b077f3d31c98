//! `pate-trainer data`: inspect datasets, and write out the requests of a run's public roles.
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
    std::fs::create_dir_all(&a.out).map_err(|source| crate::error::Error::Io {
        path: a.out.clone(),
        source,
    })?;
    let mut counts = serde_json::Map::new();
    for (name, label) in [
        ("normal", Some(datasets::Label::Benign)),
        ("anomalous", Some(datasets::Label::Malicious)),
        ("unlabeled", None),
    ] {
        let mut bytes = Vec::new();
        let mut written = 0usize;
        for &i in rows.iter().filter(|&&i| data.records[i].label == label) {
            // One record at a time, so that an error names the record's own file.
            match datasets::write_csic([&data.records[i]]) {
                Ok(b) => bytes.extend(b),
                Err(datasets::DatasetError::NotWritable { line, problem }) => {
                    return Err(datasets::DatasetError::Parse {
                        path: data.files[i].clone(),
                        line,
                        expected: "a request that CSIC's format can carry".into(),
                        found: problem.into(),
                    }
                    .into())
                }
                Err(e) => return Err(e.into()),
            }
            written += 1;
        }
        let path = a.out.join(format!("{name}.txt"));
        if written == 0 {
            // A file of an earlier call would otherwise be read as this role's.
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(crate::error::Error::Io { path, source: e })
                }
                _ => {}
            }
            continue;
        }
        crate::pipeline::write_file(&path, &bytes)?;
        counts.insert(name.into(), written.into());
    }
    let role = format!("{:?}", a.role).to_lowercase();
    super::featurize::print_line(&serde_json::json!({"role": role, "requests": counts}).to_string())
}
