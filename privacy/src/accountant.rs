//! Privacy accountants for PATE.
//!
//! **LNMax — moments accountant** (Abadi et al. 2016, §3.2; Papernot et al. 2017, §3 and App. A).
//! The log moment of the privacy loss at order λ > 0 composes additively over queries
//! (Abadi et al. 2016, Theorem 2, composability), and the tail bound gives, for a target δ,
//! ε = min_λ (α_total(λ) + ln(1/δ)) / λ  (Abadi et al. 2016, Theorem 2, tail bound).
//! Per query, LNMax is (2γ, 0)-DP, so
//! * data-independent: α(λ) ≤ 2γ²λ(λ+1)  (Papernot et al. 2017, Theorem 2 with ε = 2γ);
//! * data-dependent: α(λ) ≤ ln((1−q)·((1−q)/(1−e^{2γ}q))^λ + q·e^{2γλ})  (Papernot et al. 2017,
//!   Theorem 3), valid only where q < (e^{2γ}−1)/(e^{4γ}−1), with q ≥ P[output ≠ true argmax].
//!   Lemma 4 of the paper bounds q for continuous Laplace noise by Σ_{j≠j*} (2+γΔ_j)/(4e^{γΔ_j});
//!   the aggregator adds DISCRETE Laplace noise, so q is the same union bound with the exact tail
//!   of the difference of two discrete Laplace variables ([`crate::special`]), ties counted as
//!   errors; it tends to Lemma 4's value as γ → 0 and is never below it by more than rounding.
//!
//! **GNMax / Confident-GNMax — Rényi DP** (Mironov 2017; Papernot et al. 2018, §4 and App. B).
//! RDP of order α > 1 composes additively and converts to (ε, δ)-DP as
//! ε = min_α (RDP_total(α) + (ln(1/δ) − ln α)/(α−1) + ln(1 − 1/α))  ([`rdp_epsilon`]: Canonne,
//! Kamath & Steinke 2020, Proposition 12; Balle et al. 2020, Theorem 21), a bound never above
//! Mironov 2017's RDP_total(α) + ln(1/δ)/(α−1) (Proposition 3) at any order.
//! * GNMax with a head (the first k queries answered at σ_h, [`crate::aggregate::GnmaxHead`]):
//!   each query is charged with the σ it was answered with (k·α/σ_h² + (T − k)·α/σ²
//!   data-independent; the data-dependent bound per query at its own σ). Which queries form the
//!   head is their position, fixed before any vote is seen, so the sum composes as usual.
//! * GNMax data-independent: α/σ²  (Papernot et al. 2018, Proposition 8; the vote histogram has
//!   l2-sensitivity √2; for integer shifts the discrete Gaussian has the same Rényi divergence
//!   bound α·Δ²/(2σ²) per coordinate as the continuous one, Canonne, Kamath & Steinke 2020, §2,
//!   and independent coordinates compose).
//! * GNMax data-dependent: Theorem 6 of Papernot et al. 2018 with μ₂ = σ·√(ln(1/q)), μ₁ = μ₂ + 1
//!   (Proposition 10), used only where its conditions hold (otherwise the data-independent bound);
//!   q is Proposition 7's union bound Σ_{j≠j*} P[Z_j − Z_{j*} ≥ Δ_j] evaluated for the discrete
//!   Gaussian that is actually added (an upper bound, see [`crate::special::DiscreteGaussianTails`]).
//! * Confident-GNMax's threshold step: a Gaussian mechanism on max_j n_j (sensitivity 1), i.e. the
//!   same bounds with σ₁·√2 (Papernot et al. 2018, §4.1 and App. B.2); q = min(P(answer),
//!   P(no answer)). Data-independent: the GNMax step is charged min(queries, `max_answered`)
//!   times — every query when there is no cap — because the number of answered queries depends
//!   on the private votes: charging only the realized answers is a privacy odometer, not a
//!   bound (Rogers et al. 2016). With a cap fixed in advance and the aggregator declining every
//!   query past it, the sum is a Rényi privacy filter (Feldman & Zrnic 2021), so
//!   the data-independent total holds whatever the votes. Data-dependent (never published as
//!   is): the GNMax step is charged for the answered queries only (Papernot et al. 2018, §4.1;
//!   without `answered`, every query).
//!
//! * Model averaging ([`ModelAverage`]): one Gaussian release of the sum of the teachers' clipped
//!   linear models, α/(2σ²) data-independent and nothing data-dependent, whatever the number of
//!   queries it then labels (post-processing; [`crate::average`] has the sensitivity argument).
//!
//! For each query and order the data-dependent value is the minimum of the valid bounds, so the
//! data-dependent total never exceeds the data-independent total at any order, hence neither does
//! its ε over the same set of orders. The data-dependent ε depends on the private votes and is NOT
//! private to publish; [`crate::smooth`] sanitizes it (Papernot et al. 2018, §4.2 and App. C).
use crate::aggregate::{ConfidentGnmax, Gnmax, GnmaxHead, Lnmax};
use crate::average::ModelAverage;
use crate::noise::{DiscreteGaussian, DiscreteLaplace};
use crate::special::{
    ln_discrete_laplace_diff_sf, log1mexp, logaddexp, logsumexp, DiscreteGaussianTails,
};
use crate::votes::VoteMatrix;
use crate::{PrivacyError, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Label of a data-independent ε (safe to publish).
pub const LABEL_DATA_INDEPENDENT: &str = "data-independent";
/// Label of a data-dependent ε (a function of the private votes: must not be published as is).
pub const LABEL_DATA_DEPENDENT: &str = "data-dependent (not private to publish)";
/// Label of a smooth-sensitivity sanitized ε (safe to publish; its own privacy cost included).
pub const LABEL_SANITIZED: &str = "sanitized";

/// One reported ε with its label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelledEpsilon {
    /// One of [`LABEL_DATA_INDEPENDENT`], [`LABEL_DATA_DEPENDENT`], [`LABEL_SANITIZED`].
    pub label: String,
    /// The ε.
    pub epsilon: f64,
    /// The order (λ for the moments accountant, α for RDP) where it was attained.
    pub order: f64,
}

/// ε minimized over a set of orders.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OrderMinimum {
    /// How the orders were chosen.
    pub orders_used: String,
    /// Data-independent ε and its order.
    pub data_independent_epsilon: f64,
    /// Order of the data-independent minimum.
    pub data_independent_order: f64,
    /// Data-dependent ε and its order.
    pub data_dependent_epsilon: f64,
    /// Order of the data-dependent minimum.
    pub data_dependent_order: f64,
}

/// The smooth-sensitivity sanitized ε ([`crate::smooth::sanitize`]): an upper bound on the
/// data-dependent ε that holds with probability 1 − `failure_probability`, for δ + that
/// probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SanitizedEpsilon {
    /// The published ε (label [`LABEL_SANITIZED`]), valid with [`SanitizedEpsilon::published_delta`].
    pub epsilon: f64,
    /// Always [`LABEL_SANITIZED`].
    pub label: String,
    /// δ of this ε: the accountant's δ plus `failure_probability`.
    pub published_delta: f64,
    /// p = P[the released value is below the data-dependent RDP total].
    pub failure_probability: f64,
    /// z = Φ⁻¹(1 − p): the released value is shifted up by z·`noise_std`.
    pub confidence_z: f64,
    /// RDP order α at which the release was made (for LNMax: λ + 1).
    pub rdp_order: f64,
    /// How the order was chosen.
    pub order_choice: String,
    /// β of the β-smooth sensitivity.
    pub beta: f64,
    /// σ_s: the Gaussian noise added is SS_β·σ_s·N(0, 1).
    pub noise_multiplier: f64,
    /// The β-smooth sensitivity SS_β of the data-dependent RDP total at `rdp_order`: a noiseless
    /// function of the vote margins, so never serialized (Theorem 23 covers releasing only the
    /// noisy value); in memory for tests and diagnostics.
    #[serde(skip)]
    pub smooth_sensitivity: f64,
    /// Standard deviation of the noise added to the RDP value: SS_β·σ_s (as private as SS_β:
    /// never serialized).
    #[serde(skip)]
    pub noise_std: f64,
    /// k = 1 + z·σ_s·(e^β − 1): the shifted value's smooth sensitivity is k·SS_β, so the release
    /// is charged at noise multiplier σ_s/k.
    pub sensitivity_factor: f64,
    /// The published upper bound on the data-dependent RDP total at `rdp_order` (no clamp at 0;
    /// at most the data-independent total).
    pub released_rdp_upper_bound: f64,
    /// RDP cost of the release itself at `rdp_order` (Papernot et al. 2018, Theorem 23).
    pub release_rdp_cost: f64,
    /// Where the noise came from.
    pub rng: crate::rng::RngProvenance,
}

/// The accountant's report (one JSON object on the CLI).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpsilonReport {
    /// `lnmax`, `gnmax` or `confident-gnmax`.
    pub mechanism: String,
    /// Number of queries in the vote file.
    pub queries: usize,
    /// Confident-GNMax: number of answered queries charged for the GNMax step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered: Option<usize>,
    /// Target δ.
    pub delta: f64,
    /// Effective mechanism parameters (the exact rationals the samplers use).
    pub parameters: serde_json::Value,
    /// Which accountant produced the numbers.
    pub accountant: String,
    /// Meaning of "order": `lambda` (moments accountant) or `alpha` (Rényi order).
    pub order_kind: String,
    /// The discrete orders evaluated.
    pub orders: Vec<f64>,
    /// How the orders were chosen (and, for the headline numbers, which minimization was used).
    pub orders_used: String,
    /// Headline data-independent ε (label `data-independent`).
    pub data_independent_epsilon: f64,
    /// Order of the headline data-independent ε.
    pub data_independent_order: f64,
    /// Always [`LABEL_DATA_INDEPENDENT`].
    pub data_independent_label: String,
    /// Headline data-dependent ε (label `data-dependent (not private to publish)`).
    pub data_dependent_epsilon: f64,
    /// Order of the headline data-dependent ε.
    pub data_dependent_order: f64,
    /// Always [`LABEL_DATA_DEPENDENT`].
    pub data_dependent_label: String,
    /// Number of queries whose data-dependent bound beat the data-independent one at the
    /// data-dependent order.
    pub data_dependent_queries: usize,
    /// Minimum over the discrete orders (always computed). Serialized only when it is the
    /// headline: with the continuous LNMax minimum as headline, the grid's data-dependent value can
    /// exceed the headline data-independent one, and a report shows only the tighter valid pair.
    #[serde(skip)]
    pub discrete: OrderMinimum,
    /// LNMax without `--orders`: the minimum over real λ > 0 (the headline numbers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continuous: Option<OrderMinimum>,
    /// Smooth-sensitivity sanitized ε, when requested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sanitized: Option<SanitizedEpsilon>,
    /// Every reported ε with its label.
    pub epsilons: Vec<LabelledEpsilon>,
}

// ---------------------------------------------------------------------------------------------
// Per-query bounds.

/// LNMax data-independent log moment: α(λ) ≤ 2γ²λ(λ+1) (Papernot et al. 2017, Theorem 2 applied
/// to a (2γ, 0)-DP mechanism).
pub fn lnmax_moment_data_independent(gamma: f64, lambda: f64) -> f64 {
    2.0 * gamma * gamma * lambda * (lambda + 1.0)
}

/// LNMax data-dependent log moment for one query given ln q (q ≥ P[output ≠ argmax]):
/// Papernot et al. 2017, Theorem 3, where q < (e^{2γ}−1)/(e^{4γ}−1) = 1/(e^{2γ}+1); otherwise, and
/// whenever it is larger, the data-independent bound.
pub fn lnmax_moment_data_dependent(ln_q: f64, gamma: f64, lambda: f64) -> f64 {
    let independent = lnmax_moment_data_independent(gamma, lambda);
    let eps = 2.0 * gamma;
    // ln(1/(e^{2γ}+1)) = −(2γ + ln(1 + e^{−2γ})).
    let ln_condition = -(eps + (-eps).exp().ln_1p());
    if ln_q.is_nan() || ln_q >= ln_condition {
        return independent;
    }
    if ln_q == f64::NEG_INFINITY {
        return 0.0;
    }
    let ln_1mq = log1mexp(ln_q);
    // ln[(1−q)·((1−q)/(1−e^{2γ}q))^λ] and ln[q·e^{2γλ}], summed in log space.
    let t1 = ln_1mq + lambda * (ln_1mq - log1mexp(eps + ln_q));
    let t2 = ln_q + eps * lambda;
    logaddexp(t1, t2).max(0.0).min(independent)
}

/// Index of the true argmax (lowest index among the maximal counts).
fn argmax(counts: &[u64]) -> usize {
    let mut best = 0;
    for (j, &c) in counts.iter().enumerate() {
        if c > counts[best] {
            best = j;
        }
    }
    best
}

/// ln q for LNMax with discrete Laplace noise (union bound over the classes j ≠ j*).
pub fn lnmax_ln_q(counts: &[u64], gamma: f64) -> f64 {
    union_ln_q(counts, |gap| ln_discrete_laplace_diff_sf(gamma, gap))
}

/// ln q by the union bound over the classes j ≠ j* (the plurality): ln Σ_j P(noise difference ≥
/// gap_j), with `ln_sf(gap)` the log tail of the noise difference at the gap between the top
/// count and class j's; at most ln 1.
fn union_ln_q(counts: &[u64], ln_sf: impl Fn(u64) -> f64) -> f64 {
    let star = argmax(counts);
    let top = counts[star];
    logsumexp(
        counts
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != star)
            .map(|(_, &c)| ln_sf(top - c)),
    )
    .min(0.0)
}

/// GNMax data-independent RDP of order α: α/σ² (Papernot et al. 2018, Proposition 8).
pub fn gnmax_rdp_data_independent(sigma: f64, alpha: f64) -> f64 {
    alpha / (sigma * sigma)
}

/// GNMax data-dependent RDP of order α given ln q: Papernot et al. 2018, Theorem 6 with
/// ε₁ = μ₁/σ², ε₂ = μ₂/σ² and μ₂ = σ√(ln 1/q), μ₁ = μ₂ + 1 (Proposition 10). Valid for α < μ₁
/// when μ₂ > 1, q·e^{ε₂} < 1 and q ≤ e^{(μ₂−1)ε₂}/(μ₁/(μ₁−1)·μ₂/(μ₂−1))^{μ₂}; then
/// RDP ≤ 1/(α−1)·ln((1−q)·A^{α−1} + q·B^{α−1}) with A = (1−q)/(1−(q e^{ε₂})^{(μ₂−1)/μ₂}) and
/// B = e^{ε₁}/q^{1/(μ₁−1)}. Otherwise, and whenever larger, the data-independent α/σ².
pub fn gnmax_rdp_data_dependent(ln_q: f64, sigma: f64, alpha: f64) -> f64 {
    let independent = gnmax_rdp_data_independent(sigma, alpha);
    if ln_q == f64::NEG_INFINITY {
        return 0.0; // the output is fixed: 0-RDP
    }
    if ln_q.is_nan() || ln_q >= 0.0 {
        return independent;
    }
    let var = sigma * sigma;
    let mu2 = (var * -ln_q).sqrt();
    let mu1 = mu2 + 1.0;
    if !(mu1 > alpha && mu2 > 1.0) {
        return independent;
    }
    let eps1 = mu1 / var;
    let eps2 = mu2 / var;
    let ln_a2 = (mu2 - 1.0) * eps2;
    let condition = ln_q
        <= ln_a2 - mu2 * ((1.0 / (mu1 - 1.0)).ln_1p() + (1.0 / (mu2 - 1.0)).ln_1p())
        && -ln_q > eps2;
    if !condition {
        return independent;
    }
    let ln_1mq = log1mexp(ln_q);
    let ln_a = (alpha - 1.0) * (ln_1mq - log1mexp((ln_q + eps2) * (1.0 - 1.0 / mu2)));
    let ln_b = (alpha - 1.0) * (eps1 - ln_q / (mu1 - 1.0));
    let ln_s = logaddexp(ln_1mq + ln_a, ln_q + ln_b);
    let bound = ln_s / (alpha - 1.0);
    if bound.is_finite() {
        bound.max(0.0).min(independent)
    } else {
        independent
    }
}

/// ln q for GNMax with discrete Gaussian noise (union bound, Papernot et al. 2018, Prop. 7).
pub fn gnmax_ln_q(counts: &[u64], tails: &DiscreteGaussianTails) -> f64 {
    union_ln_q(counts, |gap| {
        tails.ln_diff_sf(gap.min(i64::MAX as u64) as i64)
    })
}

/// ln q of Confident-GNMax's threshold step for a query whose largest count is `max`: the
/// smaller of (upper bounds on) P[max + Z ≥ T] and P[max + Z < T], Z ~ N_ℤ(0, σ₁²).
pub fn threshold_ln_q(max: u64, threshold: i128, tails: &DiscreteGaussianTails) -> f64 {
    let v = max as i128;
    let clamp = |x: i128| x.clamp(i64::MIN as i128 / 2, i64::MAX as i128 / 2) as i64;
    let ln_answer = tails.ln_sf(clamp(threshold - v)); // P[Z ≥ T − v]
    let ln_no_answer = tails.ln_sf(clamp(v + 1 - threshold)); // P[Z ≤ T − v − 1] = P[Z ≥ v + 1 − T]
    ln_answer.min(ln_no_answer)
}

// ---------------------------------------------------------------------------------------------
// Whole-run analysis.

/// Groups equal values with their multiplicity (vote rows repeat a lot: unanimous queries).
fn group(values: impl IntoIterator<Item = f64>) -> Vec<(f64, usize)> {
    let mut map: HashMap<u64, usize> = HashMap::new();
    for v in values {
        *map.entry(v.to_bits()).or_default() += 1;
    }
    let mut out: Vec<(f64, usize)> = map
        .into_iter()
        .map(|(b, n)| (f64::from_bits(b), n))
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// `f` applied to every row, computed once per distinct row (vote rows repeat a lot).
fn per_row<'a>(rows: impl Iterator<Item = &'a [u64]>, f: impl Fn(&[u64]) -> f64) -> Vec<f64> {
    let mut memo: HashMap<&'a [u64], f64> = HashMap::new();
    rows.map(|r| *memo.entry(r).or_insert_with(|| f(r)))
        .collect()
}

/// The aggregation mechanism with its parameters: the one type the trainer's config, the CLI
/// (`account`, `aggregate`), the reports and the bundle use. In YAML/JSON it is tagged by
/// `mechanism` and carries exactly its own parameters (`{mechanism: lnmax, gamma: 0.05}`,
/// `{mechanism: gnmax, sigma: 40}`, `{mechanism: confident_gnmax, threshold: 200, sigma1: 150,
/// sigma2: 40}`); another mechanism's parameter is an error.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "mechanism", rename_all = "snake_case")]
pub enum Mechanism {
    /// LNMax(γ).
    Lnmax(Lnmax),
    /// GNMax(σ).
    Gnmax(Gnmax),
    /// Confident-GNMax(T, σ₁, σ₂).
    ConfidentGnmax(ConfidentGnmax),
    /// One Gaussian release of the teachers' clipped linear models ([`ModelAverage`]): it labels
    /// any number of queries for the same ε.
    ModelAverage(ModelAverage),
}

impl Mechanism {
    /// `lnmax`, `gnmax` or `confident-gnmax` (the CLI's and the dashboard's name).
    pub fn name(&self) -> &'static str {
        match self {
            Mechanism::Lnmax(_) => "lnmax",
            Mechanism::Gnmax(_) => "gnmax",
            Mechanism::ConfidentGnmax(_) => "confident-gnmax",
            Mechanism::ModelAverage(_) => "model-average",
        }
    }

    /// Checks the parameters against what the samplers accept (the same constructors the
    /// aggregation uses), naming the parameter.
    pub fn check(&self) -> Result<()> {
        match self {
            Mechanism::Lnmax(m) => DiscreteLaplace::new(m.gamma).map(|_| ()),
            Mechanism::Gnmax(m) => m.distributions().map(|_| ()),
            Mechanism::ConfidentGnmax(m) => {
                DiscreteGaussian::new(m.sigma1)?;
                DiscreteGaussian::new(m.sigma2)?;
                m.integer_threshold().map(|_| ())
            }
            Mechanism::ModelAverage(m) => m.check(),
        }
    }

    /// The mechanism whose one-record guarantee is this one's guarantee for a group of `k`
    /// records (group privacy by the same accounting, not k·ε): k records change at most k
    /// teachers, so every count (or the models' sum) moves by at most k times as much. Gaussian
    /// noise then has RDP k²·α/(2σ²), that of σ/k; Laplace noise the ε of γ·k. Replacing one
    /// record (one removal and one addition, two teachers) is `k = 2`. Only the
    /// data-independent bound of the result is a group bound (the data-dependent analysis
    /// assumes neighbours one teacher apart).
    pub fn for_group(&self, k: u32) -> Mechanism {
        let k = f64::from(k.max(1));
        match *self {
            Mechanism::Lnmax(m) => Mechanism::Lnmax(Lnmax { gamma: m.gamma * k }),
            Mechanism::Gnmax(m) => Mechanism::Gnmax(Gnmax {
                sigma: m.sigma / k,
                head: m.head.map(|h| GnmaxHead {
                    queries: h.queries,
                    sigma: h.sigma / k,
                }),
            }),
            Mechanism::ConfidentGnmax(m) => Mechanism::ConfidentGnmax(ConfidentGnmax {
                sigma1: m.sigma1 / k,
                sigma2: m.sigma2 / k,
                ..m
            }),
            Mechanism::ModelAverage(m) => Mechanism::ModelAverage(ModelAverage {
                sigma: m.sigma / k,
                ..m
            }),
        }
    }

    /// Noisy labels of every query (`None`: Confident-GNMax declined to answer).
    pub fn aggregate(
        &self,
        votes: &VoteMatrix,
        rng: &mut crate::NoiseRng,
    ) -> Result<Vec<Option<usize>>> {
        use crate::aggregate::Aggregator;
        match self {
            Mechanism::Lnmax(m) => m.aggregate(votes, rng),
            Mechanism::Gnmax(m) => m.aggregate(votes, rng),
            Mechanism::ConfidentGnmax(m) => m.aggregate(votes, rng),
            Mechanism::ModelAverage(_) => Err(PrivacyError::Parameter {
                name: "mechanism",
                reason: "model_average releases the teachers' models, not a vote file: it runs \
                         inside `pate-trainer run`"
                    .into(),
            }),
        }
    }
}

/// Queries of a GNMax run answered with one σ.
#[derive(Debug, Clone)]
pub(crate) struct GnmaxGroup {
    pub(crate) sigma: f64,
    pub(crate) queries: usize,
    pub(crate) ln_qs: Vec<(f64, usize)>,
}

/// Per-run data the per-order totals are computed from. Crate-internal; shared with
/// [`crate::smooth`].
#[derive(Debug, Clone)]
pub(crate) enum Analysis {
    Lnmax {
        gamma: f64,
        queries: usize,
        ln_qs: Vec<(f64, usize)>,
    },
    /// One group per σ: the head (when the mechanism has one) and the rest.
    Gnmax { groups: Vec<GnmaxGroup> },
    Confident {
        sigma1: f64,
        sigma2: f64,
        queries: usize,
        /// GNMax steps the data-independent total charges: the cap fixed in advance, or every
        /// query — never the number answered, which depends on the votes.
        gnmax_steps_bound: usize,
        /// GNMax steps the data-dependent total charges: the answered queries (or every query
        /// when no answered list was given).
        charged: usize,
        threshold_ln_qs: Vec<(f64, usize)>,
        gnmax_ln_qs: Vec<(f64, usize)>,
    },
    /// One release, whatever the number of queries it labels: no data-dependent analysis.
    ModelAverage(ModelAverage),
}

impl Analysis {
    pub(crate) fn is_moments(&self) -> bool {
        matches!(self, Analysis::Lnmax { .. })
    }
    /// Data-independent total at an order.
    pub(crate) fn independent_total(&self, order: f64) -> f64 {
        match self {
            Analysis::Lnmax { gamma, queries, .. } => {
                *queries as f64 * lnmax_moment_data_independent(*gamma, order)
            }
            Analysis::Gnmax { groups } => groups
                .iter()
                .map(|g| g.queries as f64 * gnmax_rdp_data_independent(g.sigma, order))
                .sum(),
            Analysis::Confident {
                sigma1,
                sigma2,
                queries,
                gnmax_steps_bound,
                ..
            } => {
                *queries as f64
                    * gnmax_rdp_data_independent(sigma1 * std::f64::consts::SQRT_2, order)
                    + *gnmax_steps_bound as f64 * gnmax_rdp_data_independent(*sigma2, order)
            }
            Analysis::ModelAverage(m) => m.rdp(order),
        }
    }
    /// Data-dependent total at an order, and how many queries beat the data-independent bound.
    pub(crate) fn dependent_total(&self, order: f64) -> (f64, usize) {
        let sum = |ln_qs: &[(f64, usize)], f: &dyn Fn(f64) -> f64, ind: f64| {
            let mut total = 0.0;
            let mut better = 0;
            for &(ln_q, n) in ln_qs {
                let v = f(ln_q).min(ind);
                if v < ind {
                    better += n;
                }
                total += v * n as f64;
            }
            (total, better)
        };
        match self {
            Analysis::Lnmax { gamma, ln_qs, .. } => sum(
                ln_qs,
                &|q| lnmax_moment_data_dependent(q, *gamma, order),
                lnmax_moment_data_independent(*gamma, order),
            ),
            Analysis::Gnmax { groups } => {
                let (mut total, mut better) = (0.0, 0);
                for g in groups {
                    let (t, b) = sum(
                        &g.ln_qs,
                        &|q| gnmax_rdp_data_dependent(q, g.sigma, order),
                        gnmax_rdp_data_independent(g.sigma, order),
                    );
                    total += t;
                    better += b;
                }
                (total, better)
            }
            Analysis::Confident {
                sigma1,
                sigma2,
                threshold_ln_qs,
                gnmax_ln_qs,
                ..
            } => {
                let s1 = sigma1 * std::f64::consts::SQRT_2;
                let (a, _) = sum(
                    threshold_ln_qs,
                    &|q| gnmax_rdp_data_dependent(q, s1, order),
                    gnmax_rdp_data_independent(s1, order),
                );
                let (b, better) = sum(
                    gnmax_ln_qs,
                    &|q| gnmax_rdp_data_dependent(q, *sigma2, order),
                    gnmax_rdp_data_independent(*sigma2, order),
                );
                // Without an answered list every query is charged, which can exceed the cap the
                // data-independent total charges; both are bounds, so the smaller holds.
                ((a + b).min(self.independent_total(order)), better)
            }
            Analysis::ModelAverage(m) => (m.rdp(order), 0),
        }
    }
    /// ε from a total at an order: moments (α + ln 1/δ)/λ, RDP [`rdp_epsilon`].
    pub(crate) fn epsilon(&self, total: f64, order: f64, ln_inv_delta: f64) -> f64 {
        if self.is_moments() {
            (total + ln_inv_delta) / order
        } else {
            rdp_epsilon(total, order, ln_inv_delta)
        }
    }
}

/// The ε at δ = e^{−`ln_inv_delta`} of a mechanism that is (α, `rdp`)-RDP:
/// rdp + (ln(1/δ) − ln α)/(α − 1) + ln(1 − 1/α), clamped at 0 (Canonne, Kamath & Steinke 2020,
/// "The Discrete Gaussian for Differential Privacy", Proposition 12; the same bound as Balle et
/// al. 2020, "Hypothesis testing interpretations and Rényi differential privacy", Theorem 21).
///
/// Why this and not Mironov 2017's rdp + ln(1/δ)/(α − 1): both are true bounds for every RDP
/// mechanism at every α > 1, and this one is smaller by ln α/(α − 1) − ln(1 − 1/α) > 0 (for
/// GNMax's 1,500 queries at σ 40, δ = 10⁻⁵: 6.83 instead of 7.51; the exact ε of that Gaussian
/// mechanism is 6.33), so the same published ε buys more queries or less noise. Tests compare
/// it with the exact privacy profile of the Gaussian mechanism and with pairs of two-point
/// distributions, where it is nearly tight (`privacy/tests/conversion.rs`).
pub fn rdp_epsilon(rdp: f64, alpha: f64, ln_inv_delta: f64) -> f64 {
    let eps = rdp + (ln_inv_delta - alpha.ln()) / (alpha - 1.0) + (-1.0 / alpha).ln_1p();
    eps.max(0.0)
}

/// `Some(warning)` when δ ≥ 1/(10n) for `records` private records. A mechanism that publishes
/// one random record outright is (0, 1/n)-DP, so δ must be well below 1/n to rule out leaking a
/// whole record (Dwork & Roth 2014, §2.3); "well below" is taken as a factor of ten at least.
/// `None` when δ < 1/(10n).
pub fn delta_warning(delta: f64, records: usize) -> Option<String> {
    let n = records.max(1) as f64;
    let limit = 1.0 / (10.0 * n);
    (delta >= limit).then(|| {
        format!(
            "delta = {delta:e} is not below 1/(10n) = {limit:e} for n = {records} private records: δ must be well below 1/n = {:e} (a δ of 1/n allows publishing a whole record); choose delta < {limit:e}",
            1.0 / n
        )
    })
}

/// Default LNMax orders: λ = 1, 2, …, 100 (integers, as in the 2017 code).
pub fn default_lnmax_orders() -> Vec<f64> {
    (1..=100).map(|l| l as f64).collect()
}

/// Default RDP orders: 1.25, 1.5, 1.75, then 2 to 50 by 0.5 and 20 log-spaced orders from 50 to
/// 1000 rounded (the grid of the Papernot et al. 2018 code).
pub fn default_rdp_orders() -> Vec<f64> {
    let mut o = vec![1.25, 1.5, 1.75];
    o.extend((4..=100).map(|i| i as f64 / 2.0));
    let (lo, hi) = (50f64.log10(), 1000f64.log10());
    for i in 1..20 {
        let v = 10f64.powf(lo + (hi - lo) * i as f64 / 19.0).round();
        if !o.contains(&v) {
            o.push(v);
        }
    }
    o
}

/// Options of an accounting run.
#[derive(Debug, Clone, Default)]
pub struct AccountOptions {
    /// Target δ in (0, 1).
    pub delta: f64,
    /// Restrict the minimization to exactly these orders (λ > 0 for LNMax, α > 1 for RDP).
    pub orders: Option<Vec<f64>>,
    /// Confident-GNMax: which queries were answered (the aggregator's output), one per query.
    pub answered: Option<Vec<bool>>,
}

fn validate(votes: &VoteMatrix, opts: &AccountOptions, moments: bool) -> Result<()> {
    if !(opts.delta > 0.0 && opts.delta < 1.0) {
        return Err(PrivacyError::Parameter {
            name: "delta",
            reason: format!("must be in (0, 1), got {}", opts.delta),
        });
    }
    if votes.queries() == 0 {
        return Err(PrivacyError::NoQueries);
    }
    if let Some(orders) = &opts.orders {
        if orders.is_empty() {
            return Err(PrivacyError::Parameter {
                name: "--orders",
                reason: "is empty".into(),
            });
        }
        for &o in orders {
            let ok = o.is_finite() && if moments { o > 0.0 } else { o > 1.0 };
            if !ok {
                return Err(if moments {
                    PrivacyError::Parameter {
                        name: "moments-accountant orders λ",
                        reason: format!("must be finite and > 0, got {o}"),
                    }
                } else {
                    PrivacyError::Parameter {
                        name: "RDP orders α",
                        reason: format!("must be finite and > 1, got {o}"),
                    }
                });
            }
        }
    }
    Ok(())
}

fn minimum(
    analysis: &Analysis,
    orders: &[f64],
    ln_inv_delta: f64,
    orders_used: String,
) -> OrderMinimum {
    let mut ind = (f64::INFINITY, orders[0]);
    let mut dep = (f64::INFINITY, orders[0]);
    for &o in orders {
        let e_ind = analysis.epsilon(analysis.independent_total(o), o, ln_inv_delta);
        let e_dep = analysis.epsilon(analysis.dependent_total(o).0, o, ln_inv_delta);
        if e_ind < ind.0 {
            ind = (e_ind, o);
        }
        if e_dep < dep.0 {
            dep = (e_dep, o);
        }
    }
    OrderMinimum {
        orders_used,
        data_independent_epsilon: ind.0,
        data_independent_order: ind.1,
        data_dependent_epsilon: dep.0,
        data_dependent_order: dep.1,
    }
}

/// Minimum over real λ > 0 for the moments accountant.
/// Data-independent: with A = T·2γ² and L = ln(1/δ), (A·λ(λ+1) + L)/λ = Aλ + A + L/λ is minimal
/// at λ* = √(L/A) with ε = A + 2√(AL). Data-dependent: a log-spaced scan of λ ∈ [10⁻³, 10⁴]
/// (plus λ* and the best discrete order) refined by golden-section search; it includes λ*, where
/// the data-dependent total is ≤ the data-independent one, so its ε is never larger.
fn continuous_lnmax(
    analysis: &Analysis,
    gamma: f64,
    queries: usize,
    ln_inv_delta: f64,
    discrete: &OrderMinimum,
) -> OrderMinimum {
    let a = queries as f64 * 2.0 * gamma * gamma;
    let lambda_star = (ln_inv_delta / a).sqrt();
    let eps_ind = a + 2.0 * (a * ln_inv_delta).sqrt();
    let f = |l: f64| analysis.epsilon(analysis.dependent_total(l).0, l, ln_inv_delta);
    let mut candidates: Vec<f64> = (0..=280)
        .map(|i| 10f64.powf(-3.0 + 7.0 * i as f64 / 280.0))
        .collect();
    candidates.push(lambda_star);
    candidates.push(discrete.data_dependent_order);
    candidates.sort_by(f64::total_cmp);
    let values: Vec<f64> = candidates.iter().map(|&l| f(l)).collect();
    let mut best = (f64::INFINITY, lambda_star);
    for (i, &v) in values.iter().enumerate() {
        if v < best.0 {
            best = (v, candidates[i]);
        }
    }
    // Golden-section refinement around the best candidate.
    let idx = candidates.iter().position(|&c| c == best.1).unwrap_or(0);
    let (mut lo, mut hi) = (
        candidates[idx.saturating_sub(1)],
        candidates[(idx + 1).min(candidates.len() - 1)],
    );
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..80 {
        let x1 = hi - phi * (hi - lo);
        let x2 = lo + phi * (hi - lo);
        let (f1, f2) = (f(x1), f(x2));
        if f1 < best.0 {
            best = (f1, x1);
        }
        if f2 < best.0 {
            best = (f2, x2);
        }
        if f1 < f2 {
            hi = x2;
        } else {
            lo = x1;
        }
    }
    OrderMinimum {
        orders_used: "continuous: real λ > 0 (closed form for the data-independent bound, scan + golden-section search for the data-dependent one)".into(),
        data_independent_epsilon: eps_ind,
        data_independent_order: lambda_star,
        data_dependent_epsilon: best.0.min(eps_ind),
        data_dependent_order: if best.0 <= eps_ind { best.1 } else { lambda_star },
    }
}

/// Builds the per-run analysis of a mechanism on a vote matrix, with the mechanism's parameters
/// as the report records them.
pub(crate) fn analyse(
    votes: &VoteMatrix,
    mechanism: &Mechanism,
    answered: Option<&[bool]>,
) -> Result<(Analysis, serde_json::Value)> {
    match mechanism {
        Mechanism::Lnmax(m) => analyse_lnmax(votes, m),
        Mechanism::Gnmax(m) => analyse_gnmax(votes, m),
        Mechanism::ConfidentGnmax(m) => analyse_confident_gnmax(votes, m, answered),
        Mechanism::ModelAverage(m) => {
            m.check()?;
            let params = serde_json::json!({
                "sigma": m.sigma, "clip_norm": m.clip_norm, "grid_bound": m.grid_bound(),
                "noise": "discrete Gaussian N_Z(0, s^2), s >= 2 sigma grid_bound, on each coordinate of the sum of the teachers' grid vectors (l2 norm <= grid_bound each)",
                "releases": 1,
            });
            Ok((Analysis::ModelAverage(*m), params))
        }
    }
}

fn analyse_lnmax(votes: &VoteMatrix, m: &Lnmax) -> Result<(Analysis, serde_json::Value)> {
    let d = DiscreteLaplace::new(m.gamma)?;
    let gamma = d.gamma.to_f64();
    let ln_qs = group(per_row(votes.rows(), |r| lnmax_ln_q(r, gamma)));
    let params = serde_json::json!({"gamma": gamma, "gamma_rational": d.gamma, "noise": "discrete Laplace P(x) ∝ exp(-gamma|x|)"});
    Ok((
        Analysis::Lnmax {
            gamma,
            queries: votes.queries(),
            ln_qs,
        },
        params,
    ))
}

fn analyse_gnmax(votes: &VoteMatrix, m: &Gnmax) -> Result<(Analysis, serde_json::Value)> {
    let d = DiscreteGaussian::new(m.sigma)?;
    let k = m.head_queries(votes.queries());
    // The head (the first k queries, when the mechanism has one) and the rest, each with
    // its own σ: RDP composes additively over queries whatever their σ.
    let mut groups = Vec::new();
    let mut params = serde_json::json!({"sigma": d.sigma(), "sigma2_rational": d.sigma2, "noise": "discrete Gaussian N_Z(0, sigma^2)"});
    if let Some(h) = m.head {
        let dh = DiscreteGaussian::new(h.sigma)?;
        let tails = DiscreteGaussianTails::new(dh.sigma2.to_f64());
        groups.push(GnmaxGroup {
            sigma: dh.sigma(),
            queries: k,
            ln_qs: group(per_row(votes.rows().take(k), |r| gnmax_ln_q(r, &tails))),
        });
        if let Some(obj) = params.as_object_mut() {
            obj.insert(
                "head".into(),
                serde_json::json!({"queries": k, "sigma": dh.sigma(), "sigma2_rational": dh.sigma2}),
            );
        }
    }
    let tails = DiscreteGaussianTails::new(d.sigma2.to_f64());
    groups.push(GnmaxGroup {
        sigma: d.sigma(),
        queries: votes.queries() - k,
        ln_qs: group(per_row(votes.rows().skip(k), |r| gnmax_ln_q(r, &tails))),
    });
    Ok((Analysis::Gnmax { groups }, params))
}

fn analyse_confident_gnmax(
    votes: &VoteMatrix,
    m: &ConfidentGnmax,
    answered: Option<&[bool]>,
) -> Result<(Analysis, serde_json::Value)> {
    let d1 = DiscreteGaussian::new(m.sigma1)?;
    let d2 = DiscreteGaussian::new(m.sigma2)?;
    let t = m.integer_threshold()?;
    if let Some(a) = answered {
        if a.len() != votes.queries() {
            return Err(PrivacyError::AnsweredLength {
                answered: a.len(),
                queries: votes.queries(),
            });
        }
    }
    let tails1 = DiscreteGaussianTails::new(d1.sigma2.to_f64());
    let tails2 = DiscreteGaussianTails::new(d2.sigma2.to_f64());
    let threshold_ln_qs = group(
        votes
            .rows()
            .map(|r| threshold_ln_q(r.iter().copied().max().unwrap_or(0), t, &tails1)),
    );
    let charged_rows = charged_rows(votes, m, answered)?;
    let gnmax_ln_qs = group(per_row(charged_rows.iter().copied(), |r| {
        gnmax_ln_q(r, &tails2)
    }));
    let mut params = serde_json::json!({
        "threshold": t, "sigma1": d1.sigma(), "sigma2": d2.sigma(),
        "sigma1_squared_rational": d1.sigma2, "sigma2_squared_rational": d2.sigma2,
        "noise": "discrete Gaussian N_Z(0, sigma^2)",
        "gnmax_steps_data_independent": m.gnmax_steps_bound(votes.queries()),
        "gnmax_steps_data_dependent": if answered.is_some() { "answered queries (from the answered list)" } else { "every query (no answered list given: conservative)" },
    });
    if let (Some(cap), Some(obj)) = (m.max_answered, params.as_object_mut()) {
        obj.insert("max_answered".into(), cap.into());
    }
    Ok((
        Analysis::Confident {
            sigma1: d1.sigma(),
            sigma2: d2.sigma(),
            queries: votes.queries(),
            gnmax_steps_bound: m.gnmax_steps_bound(votes.queries()),
            charged: charged_rows.len(),
            threshold_ln_qs,
            gnmax_ln_qs,
        },
        params,
    ))
}

/// The rows Confident-GNMax's GNMax step charges: the answered ones (every row without an
/// answered list), which must not exceed the mechanism's cap on answers.
fn charged_rows<'v>(
    votes: &'v VoteMatrix,
    m: &ConfidentGnmax,
    answered: Option<&[bool]>,
) -> Result<Vec<&'v [u64]>> {
    let charged_rows: Vec<&[u64]> = votes
        .rows()
        .enumerate()
        .filter(|(i, _)| answered.is_none_or(|a| a[*i]))
        .map(|(_, r)| r)
        .collect();
    if let Some(cap) = m
        .max_answered
        .filter(|&cap| answered.is_some() && charged_rows.len() > cap)
    {
        return Err(PrivacyError::AnsweredOverCap {
            answered: charged_rows.len(),
            cap,
        });
    }
    Ok(charged_rows)
}

/// Accounts for `mechanism` run on `votes`.
pub fn account(
    votes: &VoteMatrix,
    mechanism: &Mechanism,
    opts: &AccountOptions,
) -> Result<EpsilonReport> {
    let moments = matches!(mechanism, Mechanism::Lnmax(_));
    validate(votes, opts, moments)?;
    let (analysis, parameters) = analyse(votes, mechanism, opts.answered.as_deref())?;
    let ln_inv_delta = -opts.delta.ln();
    let (orders, orders_note) = match &opts.orders {
        Some(o) => (o.clone(), "exactly the orders given with --orders".to_string()),
        None if moments => (default_lnmax_orders(), "default: integer λ = 1..100".to_string()),
        None => (default_rdp_orders(), "default: α ∈ {1.25, 1.5, 1.75, 2, 2.5, …, 50} ∪ 19 log-spaced orders in (50, 1000] (Papernot et al. 2018 grid)".to_string()),
    };
    let discrete = minimum(&analysis, &orders, ln_inv_delta, orders_note);
    let continuous = match (&analysis, &opts.orders) {
        (Analysis::Lnmax { gamma, queries, .. }, None) => Some(continuous_lnmax(
            &analysis,
            *gamma,
            *queries,
            ln_inv_delta,
            &discrete,
        )),
        _ => None,
    };
    // With the continuous minimum as headline, its data-dependent value is also compared with the
    // grid's: both are valid bounds, the headline is the smaller.
    let tighter = continuous.as_ref().map(|c| {
        let mut c = c.clone();
        if discrete.data_dependent_epsilon < c.data_dependent_epsilon {
            c.data_dependent_epsilon = discrete.data_dependent_epsilon;
            c.data_dependent_order = discrete.data_dependent_order;
        }
        c
    });
    let headline = tighter.as_ref().unwrap_or(&discrete);
    let (mechanism_name, accountant, order_kind) = match mechanism {
        Mechanism::Lnmax(_) => (
            "lnmax",
            "moments accountant (Abadi et al. 2016; Papernot et al. 2017, Theorems 2-3)",
            "lambda",
        ),
        Mechanism::Gnmax(_) => (
            "gnmax",
            "Renyi DP (Mironov 2017; Papernot et al. 2018, Proposition 8, Theorem 6; to (ε, δ) by Canonne, Kamath & Steinke 2020, Proposition 12)",
            "alpha",
        ),
        Mechanism::ConfidentGnmax(_) => (
            "confident-gnmax",
            "Renyi DP (Mironov 2017; Papernot et al. 2018, Algorithm 1, Theorem 6; to (ε, δ) by Canonne, Kamath & Steinke 2020, Proposition 12)",
            "alpha",
        ),
        Mechanism::ModelAverage(_) => (
            "model-average",
            "Renyi DP of one Gaussian release, alpha/(2 sigma^2) (Mironov 2017, Proposition 7; discrete Gaussian: Canonne, Kamath & Steinke 2020; to (ε, δ) by their Proposition 12)",
            "alpha",
        ),
    };
    let data_dependent_queries = analysis.dependent_total(headline.data_dependent_order).1;
    let answered = match &analysis {
        Analysis::Confident { charged, .. } => Some(*charged),
        _ => None,
    };
    let report = EpsilonReport {
        mechanism: mechanism_name.into(),
        queries: votes.queries(),
        answered,
        delta: opts.delta,
        parameters,
        accountant: accountant.into(),
        order_kind: order_kind.into(),
        orders,
        orders_used: headline.orders_used.clone(),
        data_independent_epsilon: headline.data_independent_epsilon,
        data_independent_order: headline.data_independent_order,
        data_independent_label: LABEL_DATA_INDEPENDENT.into(),
        data_dependent_epsilon: headline.data_dependent_epsilon,
        data_dependent_order: headline.data_dependent_order,
        data_dependent_label: LABEL_DATA_DEPENDENT.into(),
        data_dependent_queries,
        epsilons: vec![
            LabelledEpsilon {
                label: LABEL_DATA_INDEPENDENT.into(),
                epsilon: headline.data_independent_epsilon,
                order: headline.data_independent_order,
            },
            LabelledEpsilon {
                label: LABEL_DATA_DEPENDENT.into(),
                epsilon: headline.data_dependent_epsilon,
                order: headline.data_dependent_order,
            },
        ],
        discrete,
        continuous,
        sanitized: None,
    };
    check_finite(&report)?;
    Ok(report)
}

fn check_finite(r: &EpsilonReport) -> Result<()> {
    for (name, v) in [
        ("data_independent_epsilon", r.data_independent_epsilon),
        ("data_dependent_epsilon", r.data_dependent_epsilon),
        ("data_independent_order", r.data_independent_order),
        ("data_dependent_order", r.data_dependent_order),
    ] {
        if !v.is_finite() {
            return Err(PrivacyError::NonFinite {
                step: "accounting",
                quantity: name,
                value: v,
            });
        }
    }
    Ok(())
}
