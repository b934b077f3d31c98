//! `pate-trainer teach`: trains teachers into `RUN_DIR/teachers/`, one file per shard.
//!
//! * `teach --config CFG --out RUN_DIR` trains every teacher on the config's private split,
//!   partitioned into `teachers.count` disjoint shards by request hash.
//! * `teach --config CFG --out RUN_DIR --shard i/N` trains only teacher i (0-based) of that
//!   partition: one process per shard (e.g. a Kubernetes Indexed Job), the processes agree on the
//!   shards without talking to each other.
//! * `teach --shard i/N --data FILE --format F --featurizer FEATURIZER.json --out RUN_DIR`
//!   is the multi-organization mode: organization i trains its own teacher on its own logs (all of
//!   FILE is its shard); the featurizer comes from the public side. Teachers never leave the
//!   organization unless it ships the file.
//!
//! Resumable: a teacher whose file exists and was trained on the same data (same hash of features,
//! labels and settings) is kept and skipped.
use std::path::PathBuf;

use crate::cli::run::parse_device;
use crate::config::RunConfig;
use crate::device::{self, DeviceChoice};
use crate::error::{Error, Result, UsageProblem};
use crate::rng::RunRng;
use crate::rundir::RunDir;
use crate::stages;

/// Arguments of `pate-trainer teach`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run configuration (datasets, split, featurizer and `teachers:` settings); without it the
    /// built-in `teachers:` defaults apply (250 teachers, a 20 % hold-out, the [512, 128]
    /// network with Adam; configs/train.yaml sets others) and --data is required.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run directory: teachers go to RUN_DIR/teachers/, the featurizer is read from (or, fitted on
    /// the public split, written to) RUN_DIR/featurizer.json.
    #[arg(long, value_name = "RUN_DIR")]
    pub out: PathBuf,
    /// Train only shard i of N (0-based i), e.g. `--shard 3/250`.
    #[arg(long, value_name = "i/N", value_parser = parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// Multi-organization mode: this organization's private request files (need --shard).
    #[arg(long, value_name = "FILE", requires = "shard")]
    pub data: Vec<PathBuf>,
    /// Format of the --data files.
    #[arg(long, requires = "data")]
    pub format: Option<datasets::Format>,
    /// Label every --data request with this label (`benign` or `malicious`) instead of the file's.
    #[arg(long, requires = "data")]
    pub label: Option<datasets::Label>,
    /// Featurizer artifact (default: RUN_DIR/featurizer.json).
    #[arg(long, value_name = "FILE")]
    pub featurizer: Option<PathBuf>,
    /// `auto`, `cpu`, `cuda` or `cuda:<i>`.
    #[arg(long, value_parser = parse_device)]
    pub device: Option<DeviceChoice>,
    /// libtorch CPU threads.
    #[arg(long, value_parser = super::run::parse_threads)]
    pub threads: Option<usize>,
}

/// Parses `i/N` with 0 <= i < N.
pub fn parse_shard(s: &str) -> std::result::Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("expected i/N (e.g. 3/250), got {s:?}"))?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("shard index {i:?} is not a number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("shard count {n:?} is not a number"))?;
    if n == 0 || i >= n {
        return Err(format!(
            "shard {i}/{n}: the index must be in 0..{n} (0-based)"
        ));
    }
    Ok((i, n))
}

/// Runs `pate-trainer teach`.
pub fn run(args: Args) -> Result<()> {
    let config = match &args.config {
        Some(p) => RunConfig::load(p)?,
        None if !args.data.is_empty() => RunConfig::without_datasets(),
        None => {
            return Err(Error::Usage {
                command: "teach",
                problem: UsageProblem::TeachInput,
            })
        }
    };
    if let Some(t) = args.threads.or(config.threads) {
        tch::set_num_threads(t as i32);
    }
    let run = RunDir::new(&args.out);
    run.create()?;
    let job = Job {
        rng: RunRng::new(config.seed)?,
        device: device::resolve(args.device.unwrap_or(config.device))?,
        featurizer_path: args.featurizer.clone().unwrap_or_else(|| run.featurizer()),
        config,
        run,
    };
    if args.data.is_empty() {
        teach_from_config(&args, &job)
    } else {
        teach_own_files(&args, &job)
    }
}

/// What both ways of teaching share.
struct Job {
    config: RunConfig,
    run: RunDir,
    rng: RunRng,
    device: tch::Device,
    featurizer_path: std::path::PathBuf,
}

/// Multi-organization mode: the organization's files (`--data`) are its whole shard `i/N`.
fn teach_own_files(args: &Args, job: &Job) -> Result<()> {
    let (i, n) = args.shard.expect("clap: --data requires --shard");
    let format = args.format.ok_or(Error::FlagRequired {
        flag: "format",
        with: "--data".into(),
    })?;
    if !job.featurizer_path.exists() {
        return Err(Error::Usage {
            command: "teach",
            problem: UsageProblem::MissingFeaturizer(job.featurizer_path.clone()),
        });
    }
    let featurizer = featurizer::Featurizer::load(&job.featurizer_path)?;
    let sources: Vec<_> = args
        .data
        .iter()
        .map(|p| crate::config::DatasetSource {
            path: p.clone(),
            format,
            label: args.label,
            limit: None,
        })
        .collect();
    let records = crate::stages::split::load_datasets(&sources)?;
    let all: Vec<usize> = (0..records.len()).collect();
    let x = crate::stages::featurize::featurize_rows(&featurizer, &records, &all);
    let y = crate::stages::featurize::labels_of(&records, &all)?;
    let mut shards = vec![None; n];
    shards[i] = Some((x, y));
    let mut partition = vec![Vec::new(); n];
    partition[i] = all.clone();
    stages::teach::add_tamperings(
        &mut shards,
        &partition,
        &all,
        &records,
        &featurizer,
        job.config.teachers.tamperings,
        &job.rng,
    );
    train(job, shards, featurizer.content_hash())
}

/// The config's roles: the private role partitioned, every shard (or `--shard i/N` alone)
/// trained.
fn teach_from_config(args: &Args, job: &Job) -> Result<()> {
    let config = &job.config;
    if args.config.is_none() {
        return Err(Error::Usage {
            command: "teach",
            problem: UsageProblem::ConfigForDatasets,
        });
    }
    if let Some((_, count)) = args.shard.filter(|&(_, n)| n != config.teachers.count) {
        return Err(Error::Usage {
            command: "teach",
            problem: UsageProblem::ShardCount {
                shards: count,
                config: config.teachers.count,
            },
        });
    }
    let data = crate::stages::split::load_run_data(config)?;
    let featurizer = if job.featurizer_path.exists() {
        featurizer::Featurizer::load(&job.featurizer_path)?
    } else {
        let fit_rows = stages::featurize::fit_rows(config, &data.splits);
        tracing::info!(
            "teach: fitting the featurizer on {} requests into {}",
            fit_rows.len(),
            job.featurizer_path.display()
        );
        let f = stages::featurize::fit(config, &data)?;
        f.save(&job.featurizer_path)?;
        f
    };
    let (records, splits) = (data.records, data.splits);
    let private_rows =
        crate::teachers::teacher_rows(&records, &splits.private, config.teachers.weighting());
    // Only this process's shard is featurized (`--shard i/N`).
    let sets = stages::teach::shard_sets(
        config,
        &records,
        &private_rows,
        &featurizer,
        |k, shard| {
            if args.shard.is_some_and(|(i, _)| i != k) {
                return Ok(None);
            }
            let idx: Vec<usize> = shard.iter().map(|&j| private_rows[j]).collect();
            Ok(Some((
                crate::stages::featurize::featurize_rows(&featurizer, &records, &idx),
                crate::stages::featurize::labels_of(&records, &idx)?,
            )))
        },
        &job.rng,
    )?;
    train(job, sets.data, featurizer.content_hash())
}

fn train(
    job: &Job,
    shards: Vec<Option<stages::teach::ShardData>>,
    featurizer_hash: &str,
) -> Result<()> {
    let (config, run, rng, device) = (&job.config, &job.run, &job.rng, job.device);
    let (trained, reused) = stages::teach::train(
        config,
        shards,
        featurizer_hash,
        &run.teachers(),
        rng,
        device,
    )?;
    let summary = TeachSummary {
        trained,
        reused,
        teachers_dir: run.teachers(),
    };
    println!(
        "{}",
        serde_json::to_string(&summary).expect("a summary serializes")
    );
    Ok(())
}

/// What `teach` did (printed as one JSON line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TeachSummary {
    /// Teachers trained now.
    pub trained: usize,
    /// Teachers already trained on the same data, kept.
    pub reused: usize,
    /// Where they are.
    pub teachers_dir: PathBuf,
}
