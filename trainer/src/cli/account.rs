//! `pate-trainer account`: privacy accounting of a vote file; prints one JSON object
//! ([`privacy::EpsilonReport`]) on stdout.
//!
//! ```text
//! pate-trainer account --votes FILE --mechanism lnmax --gamma 0.05 --delta 1e-5 [--orders 1,2,3]
//! pate-trainer account --votes FILE --mechanism gnmax --sigma 40 --delta 1e-5 [--orders 2,2.5,3]
//!     [--head-queries 32 --head-sigma 25]
//! pate-trainer account --votes FILE --mechanism confident-gnmax --threshold 200 --sigma1 150 \
//!     --sigma2 40 --delta 1e-5 [--answered labels.csv]
//! pate-trainer account --votes RUN/votes.csv --mechanism-from RUN/report.json
//! pate-trainer account --votes votes.csv --mechanism-from labels.json   # aggregate's summary
//! pate-trainer account --mechanism-from RUN/report.json --group 2     # one record replaced
//! ```
//! `--mechanism-from` takes the mechanism with every parameter (GNMax's head included) and the
//! vote share from what ran them, so a re-accounting cannot leave one out.
//! Add `--sanitize` for a smooth-sensitivity sanitized ε (its noise comes from the OS-seeded
//! CSPRNG, or from `--seed` for experiments, recorded in the output).
use std::path::PathBuf;

use privacy::accountant::{account, AccountOptions, Mechanism};
use privacy::aggregate::{ConfidentGnmax, Gnmax, GnmaxHead, Lnmax};
use privacy::smooth::{sanitize, SanitizeOptions};

use crate::error::{Error, Result};

/// The noisy aggregation mechanisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MechanismName {
    /// LNMax (Papernot et al. 2017): Laplace noise with parameter γ.
    Lnmax,
    /// GNMax (Papernot et al. 2018): Gaussian noise with σ.
    Gnmax,
    /// Confident-GNMax (Papernot et al. 2018): threshold T with σ₁, then GNMax with σ₂.
    ConfidentGnmax,
}

/// Mechanism parameters shared by `account` and `aggregate`.
#[derive(Debug, Clone, clap::Args)]
pub struct MechanismArgs {
    /// Aggregation mechanism.
    #[arg(long, value_enum)]
    pub mechanism: MechanismName,
    /// LNMax: γ, the inverse scale of the Laplace noise.
    #[arg(long)]
    pub gamma: Option<f64>,
    /// GNMax: σ of the Gaussian noise.
    #[arg(long)]
    pub sigma: Option<f64>,
    /// Confident-GNMax: threshold T on the noisy largest vote count.
    #[arg(long, allow_negative_numbers = true)]
    pub threshold: Option<f64>,
    /// Confident-GNMax: σ₁ of the threshold check.
    #[arg(long)]
    pub sigma1: Option<f64>,
    /// Confident-GNMax: σ₂ of the GNMax step.
    #[arg(long)]
    pub sigma2: Option<f64>,
    /// Confident-GNMax: the most queries answered, fixed in advance (the aggregator declines
    /// every query past it). The data-independent ε charges the GNMax step this many times
    /// (at most the number of queries); without it, every query.
    #[arg(long)]
    pub max_answered: Option<usize>,
    /// GNMax: answer the first N queries (a vote file of `query_selection: head` lists the most
    /// frequent requests first) with `--head-sigma` instead of `--sigma`.
    #[arg(long, requires = "head_sigma")]
    pub head_queries: Option<usize>,
    /// GNMax: σ of the Gaussian noise on the first `--head-queries` queries.
    #[arg(long, requires = "head_queries")]
    pub head_sigma: Option<f64>,
}

impl MechanismArgs {
    /// The mechanism with its parameters; a missing parameter is a configuration error.
    pub fn mechanism(&self) -> Result<Mechanism> {
        let need = |v: Option<f64>, flag: &'static str, mech: &str| {
            v.ok_or_else(|| Error::FlagRequired {
                flag,
                with: format!("--mechanism {mech}"),
            })
        };
        if self.max_answered.is_some() && self.mechanism != MechanismName::ConfidentGnmax {
            return Err(Error::FlagNotApplicable {
                flag: "max-answered",
                applies: "to --mechanism confident-gnmax",
            });
        }
        if self.head_queries.is_some() && self.mechanism != MechanismName::Gnmax {
            return Err(Error::FlagNotApplicable {
                flag: "head-queries",
                applies: "to --mechanism gnmax",
            });
        }
        Ok(match self.mechanism {
            MechanismName::Lnmax => Mechanism::Lnmax(Lnmax {
                gamma: need(self.gamma, "gamma", "lnmax")?,
            }),
            MechanismName::Gnmax => Mechanism::Gnmax(Gnmax {
                sigma: need(self.sigma, "sigma", "gnmax")?,
                head: self
                    .head_queries
                    .zip(self.head_sigma)
                    .map(|(queries, sigma)| GnmaxHead { queries, sigma }),
            }),
            MechanismName::ConfidentGnmax => Mechanism::ConfidentGnmax(ConfidentGnmax {
                threshold: need(self.threshold, "threshold", "confident-gnmax")?,
                sigma1: need(self.sigma1, "sigma1", "confident-gnmax")?,
                sigma2: need(self.sigma2, "sigma2", "confident-gnmax")?,
                max_answered: self.max_answered,
            }),
        })
    }
}

/// Arguments of `pate-trainer account`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("mechanism_source").required(true).args(["mechanism", "mechanism_from"])))]
pub struct Args {
    /// Vote file: one line per query, per-class counts separated by commas, `#` comments.
    /// Not needed for model averaging (one release of the models, no votes).
    #[arg(long)]
    pub votes: Option<PathBuf>,
    /// Mechanism and its parameters (or `--mechanism-from`).
    #[command(flatten)]
    pub mechanism: Option<MechanismArgs>,
    /// Take the mechanism, its parameters and the vote share from a run's `report.json` or an
    /// `aggregate` summary (`<labels>.json`) instead of the mechanism flags.
    #[arg(long, conflicts_with_all = ["mechanism", "malicious_vote_share"])]
    pub mechanism_from: Option<PathBuf>,
    /// Target δ of the (ε, δ) guarantee.
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Minimize over exactly these orders (λ for lnmax, α > 1 for gnmax / confident-gnmax),
    /// comma-separated. Default: a documented grid (and, for lnmax, the minimum over real λ > 0).
    #[arg(long, value_delimiter = ',')]
    pub orders: Option<Vec<f64>>,
    /// Confident-GNMax: the labels file written by `aggregate` (class index or `-` per query);
    /// the data-dependent ε charges the GNMax step for the answered queries only (without it,
    /// every query). The data-independent ε never depends on it (see `--max-answered`).
    #[arg(long)]
    pub answered: Option<PathBuf>,
    /// Also release a smooth-sensitivity sanitized ε (Papernot et al. 2018, App. C).
    #[arg(long)]
    pub sanitize: bool,
    /// Sanitization: noise multiplier σ_s (noise = smooth sensitivity × σ_s × N(0,1)).
    #[arg(long, default_value_t = 10.0)]
    pub ss_noise: f64,
    /// Sanitization: β of the smooth sensitivity (default 0.4/α).
    #[arg(long)]
    pub ss_beta: Option<f64>,
    /// Sanitization: order to release at, fixed in advance (default: the data-independent
    /// optimum order, which does not look at the votes).
    #[arg(long)]
    pub ss_order: Option<f64>,
    /// Sanitization: probability p that the published value is below the data-dependent bound;
    /// the published ε holds for δ + p.
    #[arg(long, default_value_t = 1e-6)]
    pub ss_failure_probability: f64,
    /// EXPERIMENTS ONLY: seed the sanitization noise (recorded in the output; not private).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also write the JSON report to this file (atomically).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Group privacy: the data-independent ε for any K records together (K = 2: one record
    /// replaced), by the same accounting with every count moved K times as far; prints
    /// `{group_records, delta, mechanism, data_independent_epsilon}` instead of the report.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "sanitize")]
    pub group: Option<u32>,
    /// Calibrated aggregation (`aggregate --malicious-vote-share`, `aggregation
    /// .malicious_vote_share` in `run`): account for the shifted counts the mechanism saw.
    #[arg(long, default_value_t = 0.5)]
    pub malicious_vote_share: f64,
}

/// What `--mechanism-from` reads: a run's `report.json` (`mechanism_parameters`) or an
/// `aggregate` summary (`parameters`); other keys are ignored.
#[derive(Debug, serde::Deserialize)]
struct MechanismSource {
    #[serde(alias = "mechanism_parameters")]
    parameters: Mechanism,
    malicious_vote_share: f64,
}

/// The mechanism and vote share `args` asks for.
fn mechanism_and_share(args: &Args) -> Result<(Mechanism, f64)> {
    match (&args.mechanism_from, &args.mechanism) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            let source: MechanismSource =
                serde_json::from_str(&text).map_err(|source| Error::Json {
                    path: path.clone(),
                    source,
                })?;
            Ok((source.parameters, source.malicious_vote_share))
        }
        (None, Some(m)) => Ok((m.mechanism()?, args.malicious_vote_share)),
        // clap requires one of them; kept as an error, not a panic.
        (None, None) => Err(Error::FlagRequired {
            flag: "mechanism",
            with: "account (or --mechanism-from)".into(),
        }),
    }
}

/// Runs `pate-trainer account`.
pub fn run(args: Args) -> Result<()> {
    let (mechanism, share) = mechanism_and_share(&args)?;
    let votes = match (&args.votes, mechanism) {
        (Some(path), _) => privacy::votes::read_vote_file(path)?,
        // One release whatever the queries: its ε does not read a vote.
        (None, Mechanism::ModelAverage(_)) => privacy::VoteMatrix::from_rows(&[[1u64, 0]])?,
        (None, _) => {
            return Err(Error::FlagRequired {
                flag: "votes",
                with: format!("--mechanism {}", mechanism.name()),
            })
        }
    };
    let votes = crate::stages::aggregate::calibrate_file(votes, share)?;
    let answered = match &args.answered {
        None => None,
        Some(path) => {
            if !matches!(mechanism, Mechanism::ConfidentGnmax(_)) {
                return Err(Error::FlagNotApplicable {
                    flag: "answered",
                    applies: "to --mechanism confident-gnmax",
                });
            }
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            let labels = privacy::aggregate::parse_labels(&text, path)?;
            Some(labels.iter().map(Option::is_some).collect::<Vec<bool>>())
        }
    };
    let opts = AccountOptions {
        delta: args.delta,
        orders: args.orders.clone(),
        answered,
    };
    if let Some(k) = args.group {
        let group = account(&votes, &mechanism.for_group(k), &opts)?;
        let json = serde_json::json!({
            "group_records": k,
            "delta": args.delta,
            "mechanism": mechanism,
            "data_independent_epsilon": group.data_independent_epsilon,
        });
        return print_json(&json.to_string(), args.out.as_deref());
    }
    let mut report = account(&votes, &mechanism, &opts)?;
    if args.sanitize {
        let mut rng = privacy::NoiseRng::from_option(args.seed)?;
        let sopts = SanitizeOptions {
            noise_multiplier: args.ss_noise,
            beta: args.ss_beta,
            order: args.ss_order,
            failure_probability: args.ss_failure_probability,
        };
        sanitize(&votes, &mechanism, &opts, &mut report, &sopts, &mut rng)?;
    } else if args.seed.is_some() {
        return Err(Error::FlagNotApplicable {
            flag: "seed",
            applies: "with --sanitize (accounting itself uses no randomness)",
        });
    }
    let json = serde_json::to_string(&report).map_err(Error::serialize("the report"))?;
    print_json(&json, args.out.as_deref())
}

/// Prints `json` and, with `out`, writes it there atomically.
fn print_json(json: &str, out: Option<&std::path::Path>) -> Result<()> {
    if let Some(out) = out {
        privacy::write_atomic(out, format!("{json}\n").as_bytes())?;
    }
    println!("{json}");
    Ok(())
}
