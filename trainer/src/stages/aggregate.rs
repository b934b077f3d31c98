//! Stage 5, `aggregate` (+ account): the noisy aggregation of the votes into labels
//! (`privacy.mechanism`), the accountant's ε of those answers, and the privacy ledger.
use std::path::Path;
use std::time::Instant;

use privacy::accountant::{AccountOptions, EpsilonReport};

use crate::config::{Mechanism, RunConfig};
use crate::error::{Error, Result, VoteProblem};
use crate::pipeline;
use crate::rundir::RunDir;

/// The noisy labels of a run and what they cost.
pub struct Aggregation {
    /// The votes aggregated (shifted by `aggregation.malicious_vote_share`).
    pub votes: privacy::VoteMatrix,
    /// One label per query (true = malicious), `None` where the mechanism did not answer.
    pub labels: Vec<Option<bool>>,
    /// The accountant's ε of these answers.
    pub epsilon: EpsilonReport,
    /// Set when δ is not small against the number of private records.
    pub delta_warning: Option<String>,
}

impl Aggregation {
    /// Which queries were answered.
    pub fn answered_flags(&self) -> Vec<bool> {
        self.labels.iter().map(Option::is_some).collect()
    }

    /// The answered queries (indices).
    pub fn answered(&self) -> Vec<usize> {
        (0..self.labels.len())
            .filter(|&i| self.labels[i].is_some())
            .collect()
    }
}

/// The privacy ledger after this run's entry: the ε composed over every aggregation that used
/// the same teachers.
pub struct LedgerSummary {
    /// Entries (aggregations) in the ledger.
    pub aggregations: usize,
    /// Their composed data-independent ε.
    pub composed_epsilon: f64,
    /// The RDP order of that ε.
    pub rdp_order: f64,
}

/// Calibrated aggregation (`aggregation.malicious_vote_share`, `--malicious-vote-share`): the
/// votes of `teachers` teachers with the constant, data-independent shift of [`pipeline::shift_votes`]
/// for a vote share `share`; unchanged at 0.5 (plurality). The noisy aggregation and the
/// accountant both take the shifted votes.
pub fn calibrate(
    votes: privacy::VoteMatrix,
    share: f64,
    teachers: usize,
) -> Result<privacy::VoteMatrix> {
    if !(share > 0.0 && share < 1.0) {
        return Err(crate::error::Error::VoteShare(share));
    }
    if share == 0.5 {
        return Ok(votes);
    }
    pipeline::shift_votes(&votes, share, teachers)
}

/// [`calibrate`] for a vote file of unknown teacher count (the `aggregate` and `account`
/// subcommands): at a share other than 0.5 the count is [`teachers_of`] the votes.
pub fn calibrate_file(votes: privacy::VoteMatrix, share: f64) -> Result<privacy::VoteMatrix> {
    let teachers = if share == 0.5 {
        0
    } else {
        teachers_of(&votes)?
    };
    calibrate(votes, share, teachers)
}

/// The number of teachers behind a vote file: every query's counts sum to it (each teacher votes
/// once per query); an error when the rows disagree or the file is empty.
pub fn teachers_of(votes: &privacy::VoteMatrix) -> Result<usize> {
    let mut sums = votes.rows().map(|r| r.iter().sum::<u64>());
    let first = sums.next().ok_or(Error::Votes(VoteProblem::NoQuery))?;
    if sums.any(|s| s != first) {
        return Err(Error::Votes(VoteProblem::UnequalSums));
    }
    Ok(first as usize)
}

/// Aggregates `votes` of `teachers` teachers with `privacy.mechanism` (after the calibrated,
/// data-independent shift of `aggregation.malicious_vote_share`) and accounts for it; the
/// accountant is given the same shifted counts. `private_records` sizes the δ check.
pub fn run(
    config: &RunConfig,
    votes: privacy::VoteMatrix,
    teachers: usize,
    private_records: usize,
    noise: &mut privacy::NoiseRng,
    started: Instant,
) -> Result<Aggregation> {
    let p = &config.privacy;
    let mechanism = p.mechanism;
    let share = config.aggregation.malicious_vote_share;
    let votes = calibrate(votes, share, teachers)?;
    super::banner(
        &format!(
            "aggregate with {} (malicious at a vote share of {share}: +{} on the malicious count)",
            mechanism.name(),
            pipeline::vote_share_shift(share, teachers)
        ),
        started,
    );
    let noisy_labels = mechanism.aggregate(&votes, noise)?;
    let labels: Vec<Option<bool>> = noisy_labels.iter().map(|l| l.map(|c| c == 1)).collect();
    super::banner("account", started);
    let epsilon = account(&votes, &labels, &mechanism, p.delta)?;
    let delta_warning = privacy::accountant::delta_warning(p.delta, private_records);
    if let Some(w) = &delta_warning {
        tracing::warn!("run: WARNING: {w}");
    }
    Ok(Aggregation {
        votes,
        labels,
        epsilon,
        delta_warning,
    })
}

/// The accountant's ε of `labels` drawn from `votes` by `mechanism` (Confident-GNMax is charged
/// for the answered queries only).
pub fn account(
    votes: &privacy::VoteMatrix,
    labels: &[Option<bool>],
    mechanism: &Mechanism,
    delta: f64,
) -> Result<EpsilonReport> {
    let options = AccountOptions {
        delta,
        orders: None,
        answered: matches!(mechanism, Mechanism::ConfidentGnmax(_))
            .then(|| labels.iter().map(Option::is_some).collect()),
    };
    Ok(privacy::accountant::account(votes, mechanism, &options)?)
}

/// Appends the aggregation to the privacy ledger at `path` (beside the teachers: teachers kept
/// across runs spend privacy of the same records every time) and composes the ledger.
pub fn record_in_ledger(
    path: &Path,
    by: &str,
    config: &RunConfig,
    a: &Aggregation,
) -> Result<LedgerSummary> {
    privacy::ledger::append(
        path,
        &privacy::ledger::LedgerEntry {
            time: bundle::rfc3339_utc(std::time::SystemTime::now()),
            by: by.into(),
            mechanism: config.privacy.mechanism,
            queries: a.votes.queries(),
            answered: a.labels.iter().filter(|l| l.is_some()).count(),
        },
    )?;
    let ledger = privacy::ledger::read(path)?;
    let (composed_epsilon, rdp_order) =
        privacy::ledger::composed_epsilon(&ledger, config.privacy.delta)?;
    Ok(LedgerSummary {
        aggregations: ledger.len(),
        composed_epsilon,
        rdp_order,
    })
}

/// Writes `aggregate.labels` and `privacy.json`.
pub fn write(run: &RunDir, a: &Aggregation) -> Result<()> {
    pipeline::write_labels(&run.aggregate_labels(), &a.labels)?;
    pipeline::write_json(&run.privacy(), &a.epsilon)
}
