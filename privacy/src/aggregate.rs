//! Noisy aggregation of teacher votes into labels.
//!
//! * LNMax (Papernot et al. 2017, §2.2, Eq. 1): f(x) = argmax_j { n_j(x) + Lap(1/γ) }.
//! * GNMax (Papernot et al. 2018, §4.1): argmax_j { n_j(x) + N(0, σ²) }.
//! * Confident-GNMax (Papernot et al. 2018, Algorithm 1): answer only if
//!   max_j n_j(x) + N(0, σ₁²) ≥ T, then label with GNMax(σ₂).
//!
//! Counts are integers, so the noise is the exact discrete Laplace / discrete Gaussian
//! ([`crate::noise`]); the threshold test compares integers, so T is used as ⌈T⌉ (identical
//! outcome for integer left-hand sides). Ties in the noisy argmax go to the lowest class index
//! (a deterministic post-processing of the noisy histogram, so it costs no privacy).
use crate::noise::{DiscreteGaussian, DiscreteLaplace};
use crate::rng::NoiseRng;
use crate::votes::VoteMatrix;
use crate::{PrivacyError, Result};
use serde::{Deserialize, Serialize};

/// LNMax with Laplace parameter γ (noise scale 1/γ).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lnmax {
    /// γ: the inverse noise scale.
    pub gamma: f64,
}

/// GNMax with Gaussian standard deviation σ, optionally a smaller σ on the first queries.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gnmax {
    /// σ of the Gaussian noise on each count (every query after the head).
    pub sigma: f64,
    /// The first queries answered with their own σ ([`GnmaxHead`]); none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<GnmaxHead>,
}

/// The head of a GNMax run: its first `queries` queries are answered with σ = `sigma` instead
/// of the run's σ. Why: the trainer asks the requests that make most of the site's traffic
/// first (`query_selection: head`), and a benign one of those published as malicious teaches
/// the student to flag a page that is several per cent of all requests. A smaller σ there makes
/// that flip improbable (a unanimous benign vote of 250 teachers at a 0.35 vote share has a
/// margin of 175: 3.1 noise-difference deviations at σ 40, 4.9 at σ 25). Which queries form the
/// head is fixed by their position, before any vote is seen, so the data-independent RDP is
/// `queries·α/sigma² + (rest)·α/σ²` whatever the votes (Rényi DP composes additively over
/// queries with different σ, Mironov 2017, Proposition 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GnmaxHead {
    /// How many of the first queries (fewer when the vote matrix has fewer).
    pub queries: usize,
    /// σ of the noise on their counts.
    pub sigma: f64,
}

impl Gnmax {
    /// GNMax(σ) with no head.
    pub fn new(sigma: f64) -> Self {
        Gnmax { sigma, head: None }
    }

    /// How many of `queries` queries fall in the head: min(head queries, `queries`), 0 without
    /// a head.
    pub fn head_queries(&self, queries: usize) -> usize {
        self.head.map_or(0, |h| h.queries.min(queries))
    }

    /// The noise of the head and of the rest, checked (the head's σ, when there is one, must be
    /// as valid as the run's).
    pub(crate) fn distributions(&self) -> Result<(Option<DiscreteGaussian>, DiscreteGaussian)> {
        let rest = DiscreteGaussian::new(self.sigma)?;
        let head = match self.head {
            Some(h) => Some(DiscreteGaussian::new(h.sigma)?),
            None => None,
        };
        Ok((head, rest))
    }
}

/// Confident-GNMax: threshold T checked with N(0, σ₁²), then GNMax(σ₂).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfidentGnmax {
    /// The threshold T on the noisy maximum count.
    pub threshold: f64,
    /// σ₁ of the threshold check.
    pub sigma1: f64,
    /// σ₂ of the GNMax step.
    pub sigma2: f64,
    /// The most queries answered, fixed before the votes are looked at: once this many are
    /// answered the rest are declined unexamined. The data-independent ε charges the GNMax step
    /// min(queries, cap) times — without a cap, every query — because the number actually
    /// answered depends on the private votes (charging it would be a data-dependent ε).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_answered: Option<usize>,
}

/// A noisy aggregator: one label per query, `None` when it declined to answer.
pub trait Aggregator {
    /// Mechanism name as used on the CLI (`lnmax`, `gnmax`, `confident-gnmax`).
    fn name(&self) -> &'static str;
    /// Label of one query.
    fn aggregate_query(&self, counts: &[u64], rng: &mut NoiseRng) -> Result<Option<usize>>;
    /// Labels of every query of `votes`.
    fn aggregate(&self, votes: &VoteMatrix, rng: &mut NoiseRng) -> Result<Vec<Option<usize>>> {
        votes.rows().map(|r| self.aggregate_query(r, rng)).collect()
    }
}

fn noisy_argmax(counts: &[u64], mut noise: impl FnMut() -> i128) -> Result<usize> {
    if counts.is_empty() {
        return Err(PrivacyError::NoClasses);
    }
    let mut best = (0usize, i128::MIN);
    for (j, &c) in counts.iter().enumerate() {
        let v = c as i128 + noise();
        if v > best.1 {
            best = (j, v);
        }
    }
    Ok(best.0)
}

impl Aggregator for Lnmax {
    fn name(&self) -> &'static str {
        "lnmax"
    }
    fn aggregate_query(&self, counts: &[u64], rng: &mut NoiseRng) -> Result<Option<usize>> {
        let d = DiscreteLaplace::new(self.gamma)?;
        noisy_argmax(counts, || d.sample(rng)).map(Some)
    }
    fn aggregate(&self, votes: &VoteMatrix, rng: &mut NoiseRng) -> Result<Vec<Option<usize>>> {
        let d = DiscreteLaplace::new(self.gamma)?;
        votes
            .rows()
            .map(|r| noisy_argmax(r, || d.sample(rng)).map(Some))
            .collect()
    }
}

impl Aggregator for Gnmax {
    fn name(&self) -> &'static str {
        "gnmax"
    }
    /// One query outside the head (a single query has no position): noise of σ.
    fn aggregate_query(&self, counts: &[u64], rng: &mut NoiseRng) -> Result<Option<usize>> {
        let d = DiscreteGaussian::new(self.sigma)?;
        noisy_argmax(counts, || d.sample(rng)).map(Some)
    }
    fn aggregate(&self, votes: &VoteMatrix, rng: &mut NoiseRng) -> Result<Vec<Option<usize>>> {
        let (head, rest) = self.distributions()?;
        let k = self.head_queries(votes.queries());
        votes
            .rows()
            .enumerate()
            .map(|(i, r)| {
                let d = match &head {
                    Some(h) if i < k => h,
                    _ => &rest,
                };
                noisy_argmax(r, || d.sample(rng)).map(Some)
            })
            .collect()
    }
}

impl ConfidentGnmax {
    /// How many queries out of `queries` the data-independent analysis charges for the GNMax
    /// step: the cap fixed in advance ([`ConfidentGnmax::max_answered`]), or every query.
    pub fn gnmax_steps_bound(&self, queries: usize) -> usize {
        self.max_answered.map_or(queries, |cap| cap.min(queries))
    }
    /// ⌈T⌉ as an integer (T must be finite; negative thresholds always pass).
    pub fn integer_threshold(&self) -> Result<i128> {
        if !self.threshold.is_finite() || self.threshold.abs() > 1e15 {
            return Err(PrivacyError::Parameter {
                name: "threshold",
                reason: format!("must be a finite number of votes, got {}", self.threshold),
            });
        }
        Ok(self.threshold.ceil() as i128)
    }
    fn run(
        &self,
        counts: &[u64],
        rng: &mut NoiseRng,
        d1: &DiscreteGaussian,
        d2: &DiscreteGaussian,
        t: i128,
    ) -> Result<Option<usize>> {
        let max = counts
            .iter()
            .copied()
            .max()
            .ok_or(PrivacyError::NoClasses)?;
        if max as i128 + d1.sample(rng) >= t {
            noisy_argmax(counts, || d2.sample(rng)).map(Some)
        } else {
            Ok(None)
        }
    }
}

impl Aggregator for ConfidentGnmax {
    fn name(&self) -> &'static str {
        "confident-gnmax"
    }
    fn aggregate_query(&self, counts: &[u64], rng: &mut NoiseRng) -> Result<Option<usize>> {
        let (d1, d2, t) = (
            DiscreteGaussian::new(self.sigma1)?,
            DiscreteGaussian::new(self.sigma2)?,
            self.integer_threshold()?,
        );
        if self.max_answered == Some(0) {
            return Ok(None);
        }
        self.run(counts, rng, &d1, &d2, t)
    }
    fn aggregate(&self, votes: &VoteMatrix, rng: &mut NoiseRng) -> Result<Vec<Option<usize>>> {
        let (d1, d2, t) = (
            DiscreteGaussian::new(self.sigma1)?,
            DiscreteGaussian::new(self.sigma2)?,
            self.integer_threshold()?,
        );
        let mut answered = 0;
        votes
            .rows()
            .map(|r| {
                // Past the cap a query is declined without looking at its votes (the stopping
                // rule of a privacy filter: the GNMax step runs at most `max_answered` times).
                if self.max_answered.is_some_and(|cap| answered >= cap) {
                    return Ok(None);
                }
                let label = self.run(r, rng, &d1, &d2, t)?;
                answered += usize::from(label.is_some());
                Ok(label)
            })
            .collect()
    }
}

/// Renders labels one per line: the class index, or `-` for "no answer".
pub fn format_labels(labels: &[Option<usize>]) -> String {
    let mut s = String::new();
    for l in labels {
        match l {
            Some(c) => s.push_str(&c.to_string()),
            None => s.push('-'),
        }
        s.push('\n');
    }
    s
}

/// Parses a label file (as written by [`format_labels`]): one line per query, a class index or
/// `-` (no answer); `#` lines are comments. `path` is only used in error messages.
pub fn parse_labels(text: &str, path: &std::path::Path) -> Result<Vec<Option<usize>>> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('#') {
            continue;
        }
        if line == "-" {
            out.push(None);
        } else {
            let v = line.parse::<usize>().map_err(|_| PrivacyError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                message: format!("{line:?}; expected a class index or \"-\" (no answer)"),
            })?;
            out.push(Some(v));
        }
    }
    Ok(out)
}
