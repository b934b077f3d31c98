//! `pate-trainer run --config configs/train.yaml --out RUN_DIR`: the whole pipeline.
//!
//! load datasets → split by request hash → fit the featurizer (public side by default) →
//! featurize → teach (one teacher per shard) → privatize the queries (Lap(1/ρ), optional) → vote →
//! noisy aggregation → accounting → student on the ORIGINAL query features with the aggregated
//! labels → evaluate on the test split → export the ONNX bundle → `report.json` and `roc.svg`.
//! The stages are [`crate::stages`]; this command only reads the arguments.
use std::path::PathBuf;
use std::time::Instant;

use crate::config::RunConfig;
use crate::device::DeviceChoice;
use crate::error::{Error, Result};
use crate::rundir::RunDir;

/// Arguments of `pate-trainer run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The YAML configuration: configs/site.yaml for a site's unlabelled log (with --public),
    /// configs/train.yaml for the CSIC simulation; dataset paths are relative to its directory.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The run directory to write (created; an existing one is reused, and teachers already
    /// trained on the same data are kept).
    #[arg(long, value_name = "RUN_DIR", required_unless_present = "print_config")]
    pub out: Option<PathBuf>,
    /// `auto`, `cpu`, `cuda` or `cuda:<i>` (overrides the config's `device`).
    #[arg(long, value_parser = parse_device)]
    pub device: Option<DeviceChoice>,
    /// libtorch CPU threads (overrides the config's `threads`).
    #[arg(long, value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// The protected site's traffic, in place of the config's `public:` role (repeatable; paths
    /// relative to the current directory): the featurizer's corpus and the student's queries.
    #[arg(long, value_name = "FILE")]
    pub public: Vec<PathBuf>,
    /// The format of the `--public` files: `apache` (an access log, common or combined),
    /// `capture` (pate-proxy's capture file: whole requests), or any dataset format.
    #[arg(
        long,
        value_name = "FORMAT",
        default_value = "apache",
        requires = "public"
    )]
    pub public_format: datasets::Format,
    /// EXPERIMENTS AND TESTS ONLY: seed every random draw (overrides the config's `seed`); the
    /// run is then reproducible and its bundle and report say it is NOT private.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the effective configuration (every default filled in, dataset paths resolved, the
    /// other options applied) as the run directory's `config.yaml` would hold it, and exit
    /// without reading any data.
    #[arg(long)]
    pub print_config: bool,
}

/// clap parser for `--threads`: a number of libtorch threads, 1 to `i32::MAX` (libtorch refuses
/// 0 by aborting, so it is refused here first).
pub fn parse_threads(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(t) if (1..=i32::MAX as usize).contains(&t) => Ok(t),
        _ => Err(format!(
            "expected a number of threads from 1 to {}, got {s:?}",
            i32::MAX
        )),
    }
}

/// clap parser for `--device`.
pub fn parse_device(s: &str) -> std::result::Result<DeviceChoice, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

/// Runs `pate-trainer run`.
pub fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let mut config = RunConfig::load(&args.config)?;
    if let Some(d) = args.device {
        config.device = d;
    }
    if args.threads.is_some() {
        config.threads = args.threads;
    }
    if args.seed.is_some() {
        config.seed = args.seed;
    }
    if !args.public.is_empty() {
        if config.split.is_some() {
            return Err(Error::Usage {
                command: "run",
                problem: crate::error::UsageProblem::PublicWithSimulation,
            });
        }
        config.public = args
            .public
            .iter()
            .map(|path| crate::config::DatasetSource {
                // Absolute, as the config's own paths are once loaded.
                path: std::path::absolute(path).unwrap_or_else(|_| path.clone()),
                format: args.public_format,
                label: None,
                limit: None,
            })
            .collect();
        config.validate()?;
    }
    let Some(out) = args.out.filter(|_| !args.print_config) else {
        return print_config(&config);
    };
    let report = crate::stages::run(&config, &RunDir::new(&out), started)?;
    tracing::info!(
        "run: done in {:.1} s; student TPR {} TNR {}; report {}",
        started.elapsed().as_secs_f64(),
        fmt_rate(report.metrics.tpr),
        fmt_rate(report.metrics.tnr),
        out.join("report.json").display()
    );
    Ok(())
}

/// `--print-config`: the effective configuration on stdout, serialized as `config.yaml` is.
fn print_config(config: &RunConfig) -> Result<()> {
    let yaml = serde_yaml::to_string(config).map_err(|source| Error::SerializeYaml {
        what: "the effective configuration".into(),
        source,
    })?;
    print!("{yaml}");
    Ok(())
}

fn fmt_rate(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.4}"))
}
