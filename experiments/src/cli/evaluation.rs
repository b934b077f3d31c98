//! `pate-experiments evaluation`: runs what EVALUATION.md reports (fresh runs, no seed) and
//! writes its tables into EVALUATION.md and README.md.
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::evaluation::{doc, plan, tables};

/// Arguments of `pate-experiments evaluation`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where the runs go: OUT/PART/RECIPE-i/ (run folders), OUT/tables/NAME.md (the tables).
    #[arg(long, value_name = "DIR", default_value = "runs/evaluation")]
    pub out: PathBuf,
    /// Fresh runs of each recipe under test (the tables show each, and the worst).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub runs: usize,
    /// Fresh runs of each baseline (no teachers; 200 reviewed labels).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub baseline_runs: usize,
    /// The parts to run (comma-separated); the tables are written from whatever runs are there.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = plan::Part::ALL)]
    pub parts: Vec<plan::Part>,
    /// Run nothing: write the tables of the runs already in OUT.
    #[arg(long)]
    pub tables_only: bool,
    /// The documents whose blocks are rewritten.
    #[arg(long = "doc", value_name = "FILE", default_values = ["EVALUATION.md", "README.md"])]
    pub docs: Vec<PathBuf>,
    /// The pate-trainer binary (default: the one beside this binary).
    #[arg(long, value_name = "FILE")]
    pub trainer: Option<PathBuf>,
}

/// Runs `pate-experiments evaluation`.
pub fn run(args: Args) -> Result<()> {
    if args.runs == 0 || args.baseline_runs == 0 {
        return Err(Error::FlagRange {
            flag: if args.runs == 0 {
                "runs"
            } else {
                "baseline-runs"
            },
            expected: "at least 1",
        });
    }
    let layout = plan::Layout {
        out: args.out,
        runs: args.runs,
        baseline_runs: args.baseline_runs,
    };
    if !args.tables_only {
        let tools = plan::Tools {
            repo: repo_root()?,
            trainer: match args.trainer {
                Some(t) => t,
                None => sibling("pate-trainer")?,
            },
        };
        plan::run_parts(&tools, &layout, &args.parts)?;
    }
    let rendered = tables::render_all(&layout)?;
    for path in &args.docs {
        let written = doc::update(path, &rendered)?;
        tracing::info!("evaluation: {}: {}", path.display(), written.join(", "));
    }
    Ok(())
}

/// The current directory, checked to be the repository root (the configs and scripts are read
/// relative to it).
fn repo_root() -> Result<PathBuf> {
    let cwd = std::env::current_dir().map_err(|source| Error::Io {
        path: ".".into(),
        source,
    })?;
    let absolute = std::path::absolute(&cwd).unwrap_or(cwd);
    if absolute.join("configs/site.yaml").is_file() && absolute.join("bench").is_dir() {
        Ok(absolute)
    } else {
        Err(Error::FlagValue {
            flag: "(working directory)",
            value: absolute.display().to_string(),
            problem: "run pate-experiments evaluation from the repository root".into(),
        })
    }
}

fn sibling(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|source| Error::Io {
        path: name.into(),
        source,
    })?;
    let path = exe.with_file_name(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::FlagValue {
            flag: "trainer",
            value: path.display().to_string(),
            problem: "no such file: build it (cargo build --release -p trainer) or give --trainer"
                .into(),
        })
    }
}
