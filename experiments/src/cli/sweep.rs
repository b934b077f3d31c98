//! `pate-experiments sweep --config configs/sweep.yaml --out DIR [--quick] [--jobs N]`: the evaluation
//! grids of issue 6 (see `experiments::sweep` and `configs/sweep.yaml`).
use std::path::PathBuf;

use crate::error::Result;
use crate::sweep::{self, config::SweepConfig};

/// Arguments of `pate-experiments sweep`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The sweep file (see configs/sweep.yaml); its `base:` run config gives the data and training.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Output directory: results.csv, summary.csv/.md, splits.csv/.md, plots/*.svg and *.png, one
    /// JSON per result under cells/ (existing ones are kept and skipped: the sweep resumes), work/ (teachers).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// A size that finishes in minutes on 2 cores: first 3,000 requests per file, the smallest
    /// teacher count (≤ 20), 3 ρ values, ≤ 200 queries, 2 repeats, shorter training.
    #[arg(long)]
    pub quick: bool,
    /// Compute nothing: write the tables and plots of the results already in DIR (e.g. while a
    /// long sweep is still running; missing results are left out).
    #[arg(long)]
    pub report_only: bool,
    /// Students trained at the same time (overrides the file's `jobs`).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// libtorch CPU threads (overrides the file's `threads`).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs `pate-experiments sweep`.
pub fn run(args: Args) -> Result<()> {
    let (mut config, mut base) = SweepConfig::load(&args.config)?;
    if args.quick {
        config.quick(&mut base);
    }
    if let Some(j) = args.jobs {
        config.jobs = j;
    }
    if args.threads.is_some() {
        config.threads = args.threads;
    }
    config.validate()?;
    sweep::run_sweep_with(&config, &base, &args.out, config.jobs, args.report_only)?;
    Ok(())
}
