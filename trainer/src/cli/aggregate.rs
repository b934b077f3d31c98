//! `pate-trainer aggregate`: noisy aggregation of one or several vote files into labels.
//!
//! ```text
//! pate-trainer aggregate --votes votes.csv --mechanism gnmax --sigma 40 --out labels.csv
//! pate-trainer aggregate --votes org1.csv --votes org2.csv --votes org3.csv --mechanism gnmax \
//!     --sigma 40 --out labels.csv [--ledger teachers/ledger.jsonl]
//! ```
//! Several `--votes` files (one per organization, from `vote --teacher`) are merged: they must
//! have the same number of queries and classes, and their counts are summed. Noisy share files
//! (`vote --noise-share-sigma S --organizations N`) are summed as they are and labelled by their
//! argmax without further noise: the aggregator never sees a clean count; they need
//! `--mechanism gnmax --sigma S` and exactly N files. Clean and noisy files cannot be mixed.
//!
//! `--out` gets one line per query: the class index, or `-` when Confident-GNMax declined to
//! answer (no header, the format `account --answered` reads). A JSON summary (mechanism,
//! parameters, counts, rng provenance) is printed on stdout and written beside the labels as
//! `<out>.json`. Noise comes from the OS-seeded ChaCha20 CSPRNG; `--seed` is for experiments
//! only and is recorded as `{"rng":"seeded","seed":N}`. `--ledger` appends the aggregation to the
//! teachers' privacy ledger. `--malicious-vote-share S` is `run`'s calibrated aggregation
//! (`aggregation.malicious_vote_share`, the same function: `stages::aggregate::calibrate`); give
//! `account` the same flag to charge the counts the mechanism saw.
use std::path::PathBuf;

use privacy::aggregate::format_labels;
use privacy::Mechanism;

use super::account::MechanismArgs;
use crate::error::{Error, Result, UsageProblem, VoteProblem};
use crate::report::MechanismName;

/// Arguments of `pate-trainer aggregate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Vote file(s): one line per query, per-class counts separated by commas. Repeat for one file
    /// per organization (summed), or give the organizations' noisy share files.
    #[arg(long, required = true, num_args = 1..)]
    pub votes: Vec<PathBuf>,
    /// Mechanism and its parameters.
    #[command(flatten)]
    pub mechanism: MechanismArgs,
    /// EXPERIMENTS ONLY: fixed noise seed (recorded in the summary; the labels are then NOT private).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Labels file to write (one line per query: class index or `-`).
    #[arg(long)]
    pub out: PathBuf,
    /// The teachers' privacy ledger (JSON lines) to append this aggregation to.
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// Calibrated aggregation, as `aggregation.malicious_vote_share` in `run`: a query is
    /// labelled malicious (without noise) when at least this share of the teachers vote
    /// malicious (+round(N·(1−2s)) on the malicious count, N teachers). Clean vote files only.
    #[arg(long, default_value_t = 0.5)]
    pub malicious_vote_share: f64,
}

fn read_text(path: &PathBuf) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })
}

/// Sums clean vote files: same queries and classes (errors name both files).
fn merged_votes(files: &[(PathBuf, String)]) -> Result<privacy::VoteMatrix> {
    let mut sum: Option<(PathBuf, Vec<Vec<u64>>)> = None;
    for (path, text) in files {
        let v = privacy::votes::parse_votes(text, path)?;
        match &mut sum {
            None => sum = Some((path.clone(), v.rows().map(<[u64]>::to_vec).collect())),
            Some((first, rows)) => {
                if v.queries() != rows.len() || v.classes() != rows[0].len() {
                    return Err(Error::Votes(VoteProblem::Shape {
                        path: path.clone(),
                        queries: v.queries(),
                        classes: v.classes(),
                        first: first.clone(),
                        first_queries: rows.len(),
                        first_classes: rows[0].len(),
                    }));
                }
                for (acc, r) in rows.iter_mut().zip(v.rows()) {
                    for (a, c) in acc.iter_mut().zip(r) {
                        *a = a.saturating_add(*c);
                    }
                }
            }
        }
    }
    let (_, rows) = sum.ok_or(Error::Usage {
        command: "aggregate",
        problem: UsageProblem::NoVotes,
    })?;
    Ok(privacy::VoteMatrix::from_rows(&rows)?)
}

/// Distributed GNMax: the organizations' noisy vote shares summed (each carries its share of
/// the noise), the label the argmax. Returns the labels, queries and classes.
fn aggregate_shares(
    files: &[(PathBuf, String)],
    mechanism: Mechanism,
) -> Result<(Vec<Option<usize>>, usize, usize)> {
    let parsed: Vec<(PathBuf, privacy::shares::NoisyShare)> = files
        .iter()
        .map(|(p, t)| Ok((p.clone(), privacy::shares::parse_share(t, p)?)))
        .collect::<Result<_>>()?;
    let sigma = parsed[0].1.sigma;
    match mechanism {
        Mechanism::Gnmax(m) if m.sigma == sigma && m.head.is_none() => {}
        _ => {
            return Err(Error::Usage {
                command: "aggregate",
                problem: UsageProblem::ShareSigma {
                    sigma,
                    got: Box::new(mechanism),
                },
            })
        }
    }
    let sum = privacy::shares::sum_shares(&parsed)?;
    let classes = sum[0].len();
    Ok((privacy::shares::argmax_labels(&sum), sum.len(), classes))
}

/// Runs `pate-trainer aggregate`.
pub fn run(args: Args) -> Result<()> {
    let mechanism = args.mechanism.mechanism()?;
    let files: Vec<(PathBuf, String)> = args
        .votes
        .iter()
        .map(|p| Ok((p.clone(), read_text(p)?)))
        .collect::<Result<_>>()?;
    let shares = files
        .iter()
        .filter(|(_, t)| privacy::shares::is_share(t))
        .count();
    let mut rng = privacy::NoiseRng::from_option(args.seed)?;
    if shares > 0 && args.malicious_vote_share != 0.5 {
        return Err(Error::Usage {
            command: "aggregate",
            problem: UsageProblem::VoteShareWithShares,
        });
    }
    let (labels, queries, classes, distributed) = if shares == 0 {
        let votes = merged_votes(&files)?;
        let votes = crate::stages::aggregate::calibrate_file(votes, args.malicious_vote_share)?;
        (
            mechanism.aggregate(&votes, &mut rng)?,
            votes.queries(),
            votes.classes(),
            false,
        )
    } else if shares == files.len() {
        let (labels, queries, classes) = aggregate_shares(&files, mechanism)?;
        (labels, queries, classes, true)
    } else {
        return Err(Error::Usage {
            command: "aggregate",
            problem: UsageProblem::MixedVoteFiles {
                shares,
                files: files.len(),
            },
        });
    };
    let mut per_class = vec![0usize; classes];
    for l in labels.iter().flatten() {
        per_class[*l] += 1;
    }
    let answered = labels.iter().filter(|l| l.is_some()).count();
    let summary = AggregateSummary {
        mechanism: MechanismName::from(&mechanism),
        parameters: mechanism,
        queries,
        answered,
        unanswered: queries - answered,
        labels_per_class: per_class,
        labels_file: args.out.clone(),
        label_format: "one line per query: the class index, or '-' for no answer".into(),
        rng: if distributed {
            NoiseSource::Distributed(
                "distributed: each organization's own CSPRNG (see their vote summaries)".into(),
            )
        } else {
            NoiseSource::Own(rng.provenance())
        },
        votes_files: args.votes.clone(),
        distributed_noise: distributed,
        malicious_vote_share: args.malicious_vote_share,
    };
    privacy::write_atomic(&args.out, format_labels(&labels).as_bytes())?;
    let mut sidecar = args.out.clone().into_os_string();
    sidecar.push(".json");
    let text = serde_json::to_string_pretty(&summary).map_err(Error::serialize("the summary"))?;
    privacy::write_atomic(&PathBuf::from(sidecar), format!("{text}\n").as_bytes())?;
    if let Some(ledger) = &args.ledger {
        privacy::ledger::append(
            ledger,
            &privacy::ledger::LedgerEntry {
                time: bundle::rfc3339_utc(std::time::SystemTime::now()),
                by: format!("aggregate --out {}", args.out.display()),
                mechanism,
                queries,
                answered,
            },
        )?;
    }
    println!(
        "{}",
        serde_json::to_string(&summary).map_err(Error::serialize("the summary"))?
    );
    Ok(())
}

/// What `aggregate` did (printed, and written beside the labels as `<out>.json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AggregateSummary {
    /// The mechanism.
    pub mechanism: MechanismName,
    /// The mechanism with its parameters.
    pub parameters: Mechanism,
    /// Queries.
    pub queries: usize,
    /// Queries answered.
    pub answered: usize,
    /// Queries not answered (Confident-GNMax).
    pub unanswered: usize,
    /// Answers per class.
    pub labels_per_class: Vec<usize>,
    /// The labels file.
    pub labels_file: PathBuf,
    /// Its format.
    pub label_format: String,
    /// Where the noise came from.
    pub rng: NoiseSource,
    /// The vote files aggregated.
    pub votes_files: Vec<PathBuf>,
    /// True when the noise came in the organizations' vote shares.
    pub distributed_noise: bool,
    /// The calibrated vote share.
    pub malicious_vote_share: f64,
}

/// Where an aggregation's noise came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum NoiseSource {
    /// This process's generator.
    Own(privacy::RngProvenance),
    /// Each organization's own generator (a description).
    Distributed(String),
}
