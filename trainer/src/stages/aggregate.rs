//! Stage 5, `aggregate` (+ account): the noisy aggregation of the votes into labels
//! (`privacy.mechanism`), the accountant's ε of those answers, and the privacy ledger.
use std::path::Path;
use std::time::Instant;

use privacy::accountant::{AccountOptions, EpsilonReport};

use crate::config::{Mechanism, RunConfig};
use crate::error::{Error, Result, VoteProblem};
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
    /// With `model_average`: the validation samples the release labels malicious (one flag per
    /// sample; empty for the vote mechanisms). Post-processing of the release.
    pub validation_flagged: Vec<bool>,
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
/// votes of `teachers` teachers with the constant, data-independent shift of [`crate::votes::shift_votes`]
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
    crate::votes::shift_votes(&votes, share, teachers)
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
///
/// With `privacy.mechanism: model_average` the labels come from one release of the teachers'
/// mean model instead ([`model_average_labels`]); `run` is the one entry point of both, for
/// `pate-trainer run` and the sweep alike.
pub fn run(
    config: &RunConfig,
    votes: privacy::VoteMatrix,
    teachers: &[crate::model_file::ModelFile],
    features: &super::featurize::Features,
    private_records: usize,
    noise: &mut privacy::NoiseRng,
    started: Instant,
) -> Result<Aggregation> {
    // The votes shifted by the vote share whatever the mechanism: the vote mechanisms aggregate
    // them; with model_average they stay in the run directory for the label agreement only.
    let votes = calibrate(
        votes,
        config.aggregation.malicious_vote_share,
        teachers.len(),
    )?;
    let (labels, validation_flagged) = match &config.privacy.mechanism {
        Mechanism::ModelAverage(m) => {
            model_average_labels(config, m, teachers, features, noise, started)?
        }
        _ => (
            vote_labels(config, &votes, teachers.len(), noise, started)?,
            Vec::new(),
        ),
    };
    super::banner("account", started);
    let delta = config.privacy.delta;
    let epsilon = account(&votes, &labels, &config.privacy.mechanism, delta)?;
    let delta_warning = privacy::accountant::delta_warning(delta, private_records);
    if let Some(w) = &delta_warning {
        tracing::warn!("run: WARNING: {w}");
    }
    Ok(Aggregation {
        votes,
        labels,
        epsilon,
        delta_warning,
        validation_flagged,
    })
}

/// The noisy labels of the vote mechanisms (LNMax, GNMax, Confident-GNMax) of [`run`], from the
/// shifted `votes` of `teachers` teachers.
fn vote_labels(
    config: &RunConfig,
    votes: &privacy::VoteMatrix,
    teachers: usize,
    noise: &mut privacy::NoiseRng,
    started: Instant,
) -> Result<Vec<Option<bool>>> {
    let mechanism = config.privacy.mechanism;
    let share = config.aggregation.malicious_vote_share;
    super::banner(
        &format!(
            "aggregate with {} (malicious at a vote share of {share}: +{} on the malicious count)",
            mechanism.name(),
            crate::votes::vote_share_shift(share, teachers)
        ),
        started,
    );
    let noisy_labels = mechanism.aggregate(votes, noise)?;
    Ok(noisy_labels.iter().map(|l| l.map(|c| c == 1)).collect())
}

/// `privacy.mechanism: model_average`: one release of the mean of the teachers' clipped linear
/// models ([`privacy::average`]), soft-thresholded (`aggregation.model_average.soft_threshold`),
/// labels every query: malicious when it scores at least as high as
/// `validation_recall` of the labelled validation split's malicious requests. Only the release
/// reads private data; the threshold and the labels are post-processing of it with public data.
/// The teachers' votes are not used for the labels.
fn model_average_labels(
    config: &RunConfig,
    mechanism: &privacy::average::ModelAverage,
    teachers: &[crate::model_file::ModelFile],
    features: &super::featurize::Features,
    noise: &mut privacy::NoiseRng,
    started: Instant,
) -> Result<(Vec<Option<bool>>, Vec<bool>)> {
    let (queries, validation) = (&features.queries_x, &features.validation);
    let labelling = config.aggregation.model_average.unwrap_or_default();
    let models = teachers
        .iter()
        .enumerate()
        .map(|(i, t)| match t.weights.layers.as_slice() {
            [layer] if layer.out_dim == 1 => {
                let mut theta = layer.weight.clone();
                theta.extend_from_slice(&layer.bias);
                Ok(theta)
            }
            _ => Err(Error::ModelAverage(format!(
                "teacher {i} is not one linear layer with one output ({} layers)",
                t.weights.layers.len()
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    super::banner(
        &format!(
            "aggregate with model-average: one release of the mean of {} teachers' models (σ {}, clip norm {})",
            models.len(),
            mechanism.sigma,
            mechanism.clip_norm
        ),
        started,
    );
    let released = mechanism.release(&models, noise)?;
    let theta = released.soft_thresholded(labelling.soft_threshold);
    let (weights, bias) = theta.split_at(theta.len() - 1);
    if weights.len() != queries.cols || weights.len() != validation.x.cols {
        return Err(Error::ModelAverage(format!(
            "the teachers read {} features, the queries {} and the validation split {}",
            weights.len(),
            queries.cols,
            validation.x.cols
        )));
    }
    let score = |x: &crate::dense::DenseMatrix| -> Vec<f64> {
        x.values
            .chunks(x.cols.max(1))
            .map(|row| {
                bias[0]
                    + row
                        .iter()
                        .zip(weights)
                        .map(|(&v, &w)| f64::from(v) * w)
                        .sum::<f64>()
            })
            .collect()
    };
    let validation_scores = score(&validation.x);
    let mut threshold = recall_threshold(
        &validation_scores,
        &validation.y,
        labelling.validation_recall,
    )?;
    if let Some(fpr) = labelling.validation_fpr {
        // The site's requests left out of the thresholds' traffic (what a public detector calls
        // an attack: `Features::validation_traffic`) are left out here too.
        let (scores, labels): (Vec<f64>, Vec<bool>) = validation_scores
            .iter()
            .zip(&validation.y)
            .zip(&features.validation_traffic)
            .filter(|&(_, &copies)| copies > 0)
            .map(|((&s, &y), _)| (s, y))
            .unzip();
        let benign = benign_share_threshold(&scores, &labels, fpr)?;
        tracing::info!(
            "model-average: {fpr} of the validation's benign requests at score ≥ {benign:.4}, \
             the recall's threshold {threshold:.4}: the higher is taken"
        );
        threshold = threshold.max(benign);
    }
    let labels: Vec<Option<bool>> = score(queries)
        .into_iter()
        .map(|s| Some(s >= threshold))
        .collect();
    tracing::info!(
        "model-average: noise std {:.3} per weight, {} of {} weights kept after soft thresholding at {}; malicious at score ≥ {threshold:.4} ({} of the validation attacks): {} of {} queries malicious",
        released.noise_std,
        weights.iter().filter(|w| **w != 0.0).count(),
        weights.len(),
        labelling.soft_threshold,
        labelling.validation_recall,
        labels.iter().filter(|l| **l == Some(true)).count(),
        labels.len()
    );
    let flagged = validation_scores.iter().map(|&s| s >= threshold).collect();
    Ok((labels, flagged))
}

/// The highest score t at which at least `recall` of the malicious rows score ≥ t: the score of
/// the malicious row at rank ⌈recall·n⌉ from the top.
pub fn recall_threshold(scores: &[f64], labels: &[bool], recall: f64) -> Result<f64> {
    let mut malicious: Vec<f64> = scores
        .iter()
        .zip(labels)
        .filter(|(_, &y)| y)
        .map(|(&s, _)| s)
        .collect();
    if malicious.is_empty() {
        return Err(Error::ModelAverage(
            "the validation split has no malicious request to set the label threshold on".into(),
        ));
    }
    malicious.sort_by(|a, b| b.total_cmp(a));
    let rank = ((recall * malicious.len() as f64).ceil() as usize).clamp(1, malicious.len());
    Ok(malicious[rank - 1])
}

/// The lowest score t at which at most a share `fpr` of the benign rows score ≥ t: just above
/// the benign row at rank ⌊fpr·n⌋ + 1 from the top.
pub fn benign_share_threshold(scores: &[f64], labels: &[bool], fpr: f64) -> Result<f64> {
    let mut benign: Vec<f64> = scores
        .iter()
        .zip(labels)
        .filter(|(_, &y)| !y)
        .map(|(&s, _)| s)
        .collect();
    if benign.is_empty() {
        return Err(Error::ModelAverage(
            "the validation split has no benign request to set the label threshold on".into(),
        ));
    }
    benign.sort_by(|a, b| b.total_cmp(a));
    let allowed = (fpr * benign.len() as f64).floor() as usize;
    Ok(benign
        .get(allowed)
        .map_or(f64::NEG_INFINITY, |&s| s.next_up()))
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
    crate::io::write_labels(&run.aggregate_labels(), &a.labels)?;
    crate::io::write_json(&run.privacy(), &a.epsilon)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benign_share_threshold_flags_at_most_the_share() {
        let scores: Vec<f64> = (0..200).map(f64::from).collect();
        let labels: Vec<bool> = (0..200).map(|i| i >= 190).collect();
        // 190 benign rows: 1 % allows one of them at or above the threshold.
        let t = benign_share_threshold(&scores, &labels, 0.01).unwrap();
        assert_eq!((0..190).filter(|&i| f64::from(i) >= t).count(), 1);
        let t = benign_share_threshold(&scores, &labels, 0.001).unwrap();
        assert!((0..190).all(|i| f64::from(i) < t));
        assert!(benign_share_threshold(&scores, &[true; 200], 0.01).is_err());
    }

    /// The label threshold calls at least the asked share of the validation attacks malicious,
    /// and is the highest such score.
    #[test]
    fn the_recall_threshold_is_the_highest_that_keeps_the_share() {
        let scores = [0.9, 0.1, 0.8, 0.7, 0.2, 0.6, 0.5];
        let labels = [true, false, true, true, false, true, true];
        // Five attacks: 0.9 0.8 0.7 0.6 0.5. 80 % = 4 of them: ≥ 0.6.
        assert_eq!(recall_threshold(&scores, &labels, 0.8).unwrap(), 0.6);
        // 81 % needs a fifth: ≥ 0.5; every one of them at 1.0 too.
        assert_eq!(recall_threshold(&scores, &labels, 0.81).unwrap(), 0.5);
        assert_eq!(recall_threshold(&scores, &labels, 1.0).unwrap(), 0.5);
        // A tiny share still keeps the top attack.
        assert_eq!(recall_threshold(&scores, &labels, 0.01).unwrap(), 0.9);
        let e = recall_threshold(&[0.3], &[false], 0.9)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no malicious"), "{e}");
    }
}
