//! Smooth-sensitivity sanitization of the data-dependent ε (Papernot et al. 2018, §4.2 and
//! Appendix C; Nissim, Raskhodnikova & Smith 2007).
//!
//! The data-dependent RDP total f(D) = Σᵢ fᵢ(votesᵢ) at a fixed order α is a function of the
//! private votes. Its β-smooth sensitivity is SS_β(D) = max_{d ≥ 0} e^{−βd}·A⁽ᵈ⁾(D), where A⁽ᵈ⁾ is
//! the largest local sensitivity of f over vote matrices within d changed teachers of D
//! (Nissim et al. 2007, Definition 2.1; Papernot et al. 2018, App. C, Algorithms 4-5); A⁽ᵈ⁾(D) ≤ Σᵢ A⁽ᵈ⁾ᵢ since one teacher
//! changes every query's votes. The release f(D) + SS_β(D)·σ_s·N(0, 1) ("GNSS") is
//! (α, α·e^{2β}/σ_s² + (βα − ½·ln(1 − 2αβ))/(α − 1))-RDP for 1 < α < 1/(2β)
//! (Papernot et al. 2018, Theorem 23), and that cost is added to the sanitized ε.
//!
//! Per-query bound on A⁽ᵈ⁾ᵢ (this implementation; the paper's Algorithm 3 needs closed-form
//! bounds on how far q moves per teacher, which do not hold for discrete noise). With the counts
//! sorted c₀ ≥ c₁ ≥ …, gaps Δⱼ = c₀ − cⱼ and top gap G = Δ₁, every vote vector within k = d + 1
//! changed teachers has its union-bound q in [T(G + 2k), Σⱼ T(Δⱼ − 2k)] (upper end 1 if G ≤ 2k),
//! where T(Δ) is the per-class tail used by the accountant: a change of k teachers moves each gap by
//! at most 2k. Both the vote vector at distance ≤ d and its neighbour lie in that ball, so
//! A⁽ᵈ⁾ᵢ ≤ max fᵢ − min fᵢ over that q range, evaluated on a 33-point grid in ln q including both
//! ends (exact when fᵢ is monotone in q on the range, the paper's condition C5). For the
//! Confident-GNMax threshold step fᵢ depends only on v = maxⱼ cⱼ, and A⁽ᵈ⁾ᵢ is the largest
//! one-step change of fᵢ(v′) over v′ ∈ [v − d, v + d] (Papernot et al. 2018, Algorithm 5),
//! computed exactly. Distances beyond N (the number of teachers) reach every vote matrix, so the
//! maximum over d ≤ N, together with e^{−β(N+1)} times the data-independent total (a bound on any
//! change of f), is the smooth sensitivity. It is β-smooth: the balls around a neighbour D′ of
//! radius d + 1 lie inside those around D of radius d + 2.
use crate::accountant::{
    analyse, gnmax_rdp_data_dependent, lnmax_moment_data_dependent, threshold_ln_q, AccountOptions,
    EpsilonReport, LabelledEpsilon, Mechanism, SanitizedEpsilon, LABEL_SANITIZED,
};
use crate::aggregate::{ConfidentGnmax, Gnmax};
use crate::noise::{self, DiscreteGaussian, DiscreteLaplace};
use crate::rng::NoiseRng;
use crate::special::{ln_discrete_laplace_diff_sf, logsumexp, DiscreteGaussianTails};
use crate::votes::VoteMatrix;
use crate::{PrivacyError, Result};
use std::collections::BTreeMap;

/// Parameters of the sanitized release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SanitizeOptions {
    /// σ_s: the noise added is SS_β·σ_s·N(0,1). Larger: cheaper release, noisier (and so larger)
    /// published bound.
    pub noise_multiplier: f64,
    /// β; default 0.4/α (Theorem 23 needs α < 1/(2β)).
    pub beta: Option<f64>,
    /// The order (same unit as the report: λ for LNMax, α for RDP). Default: the report's
    /// data-independent order, which depends only on the mechanism's parameters, δ and the number
    /// of queries and the cap on answers, never on the votes. The order must be fixed without looking at the
    /// private votes: choosing it by the data-dependent value is an unaccounted release.
    pub order: Option<f64>,
    /// p: the probability that the published value is below the data-dependent RDP total. It
    /// is added to δ ([`SanitizedEpsilon::published_delta`]).
    pub failure_probability: f64,
}

impl Default for SanitizeOptions {
    fn default() -> Self {
        SanitizeOptions {
            noise_multiplier: 10.0,
            beta: None,
            order: None,
            failure_probability: 1e-6,
        }
    }
}

/// z with P[N(0, 1) > z] = p, for p in (0, 0.5]: bisection on the upper tail erfc(z/√2)/2,
/// computed by [`crate::special::ln_normal_sf`] (relative error < 1.2·10⁻⁷, which moves z by
/// less than 10⁻⁶ for z ≥ 0.1), plus 10⁻⁶ so that the true tail beyond z is at most p.
pub fn normal_upper_quantile(p: f64) -> f64 {
    let target = p.ln();
    let (mut lo, mut hi) = (0.0f64, 40.0f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if crate::special::ln_normal_sf(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi + 1e-6
}

const GRID: usize = 33;

fn range_of(f: &dyn Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
    let (mut mn, mut mx) = (f(lo).min(f(hi)), f(lo).max(f(hi)));
    if lo.is_finite() {
        for i in 1..GRID - 1 {
            let v = f(lo + (hi - lo) * i as f64 / (GRID - 1) as f64);
            mn = mn.min(v);
            mx = mx.max(v);
        }
    }
    (mx - mn).max(0.0)
}

/// Local-sensitivity bounds A⁽ᵈ⁾ for d = 0..=n of one noisy-argmax query.
fn argmax_query_ls(
    sorted: &[u64],
    n: u64,
    ln_tail: &dyn Fn(u64) -> f64,
    f: &dyn Fn(f64) -> f64,
) -> Vec<f64> {
    let g = sorted[0] - sorted[1];
    (0..=n)
        .map(|d| {
            let k = 2 * (d + 1);
            let lo = ln_tail(g + k);
            let hi = if g > k {
                logsumexp(sorted[1..].iter().map(|&c| ln_tail(sorted[0] - c - k))).min(0.0)
            } else {
                0.0
            };
            range_of(f, lo.min(hi), hi)
        })
        .collect()
}

/// β-smooth sensitivity of the data-dependent RDP total at `order` (λ for LNMax, whose RDP is
/// then of order λ + 1; α otherwise).
pub fn smooth_sensitivity(
    votes: &VoteMatrix,
    mechanism: &Mechanism,
    answered: Option<&[bool]>,
    order: f64,
    beta: f64,
) -> Result<f64> {
    let (analysis, _) = analyse(votes, mechanism, answered)?;
    let cap = if analysis.is_moments() {
        analysis.independent_total(order) / order
    } else {
        analysis.independent_total(order)
    };
    smooth_sensitivity_bound(votes, mechanism, answered, order, beta, cap)
}

/// SS_β at `order` from the per-distance sums Σᵢ A⁽ᵈ⁾ᵢ (d ≤ N) and, beyond N, the
/// data-independent total `cap`.
fn smooth_sensitivity_bound(
    votes: &VoteMatrix,
    mechanism: &Mechanism,
    answered: Option<&[bool]>,
    order: f64,
    beta: f64,
    cap: f64,
) -> Result<f64> {
    let n = votes.max_teachers().max(1);
    let mut sum = DistanceSums::new(n);
    match mechanism {
        Mechanism::Lnmax(m) => {
            let gamma = DiscreteLaplace::new(m.gamma)?.gamma.to_f64();
            // Moments α(λ) at λ = order is λ·RDP(λ + 1).
            let f = |ln_q: f64| lnmax_moment_data_dependent(ln_q, gamma, order) / order;
            sum.add_argmax_queries(
                votes,
                &|_| true,
                &|d| ln_discrete_laplace_diff_sf(gamma, d),
                &f,
            );
        }
        Mechanism::Gnmax(m) => add_gnmax_queries(&mut sum, votes, m, order)?,
        // The same RDP on every data set: its local sensitivity is 0 at every distance.
        Mechanism::ModelAverage(_) => {}
        Mechanism::ConfidentGnmax(m) => {
            add_confident_gnmax_queries(&mut sum, votes, m, answered, order)?
        }
    }
    // d ≤ N from the bounds above; every d > N is covered by the data-independent total `cap`
    // (0 ≤ fᵢ ≤ its data-independent value, so no change of f exceeds it), which also keeps the
    // bound β-smooth at d = N (the neighbour's ball of radius N + 1 is then covered).
    let within = sum
        .by_distance
        .iter()
        .enumerate()
        .map(|(d, a)| (-beta * d as f64).exp() * a)
        .fold(0.0, f64::max);
    Ok(within.max((-beta * (n + 1) as f64).exp() * cap))
}

/// Σᵢ A⁽ᵈ⁾ᵢ over the queries added so far, for d = 0..=n (n: the number of teachers).
struct DistanceSums {
    n: u64,
    by_distance: Vec<f64>,
}

impl DistanceSums {
    fn new(n: u64) -> DistanceSums {
        DistanceSums {
            n,
            by_distance: vec![0.0; n as usize + 1],
        }
    }

    /// Adds one query's bounds `ls` (indexed by d), `times` times.
    fn add(&mut self, ls: &[f64], times: usize) {
        for (c, l) in self.by_distance.iter_mut().zip(ls) {
            *c += l * times as f64;
        }
    }

    /// Adds the noisy-argmax bound ([`argmax_query_ls`]) of every query `selected` keeps, with
    /// the per-class tail `ln_diff_sf` (tabulated up to 3n + 4, where every gap ends) and the
    /// per-query RDP `f` of ln q. Queries with the same sorted counts have the same bound, so
    /// each distinct one is computed once.
    fn add_argmax_queries(
        &mut self,
        votes: &VoteMatrix,
        selected: &dyn Fn(usize) -> bool,
        ln_diff_sf: &dyn Fn(u64) -> f64,
        f: &dyn Fn(f64) -> f64,
    ) {
        let n = self.n;
        let table: Vec<f64> = (0..=3 * n + 4).map(ln_diff_sf).collect();
        let tail = |d: u64| table[(d as usize).min(table.len() - 1)];
        for (row, times) in sorted_row_counts(votes, selected) {
            self.add(&argmax_query_ls(&row, n, &tail, f), times);
        }
    }
}

/// The rows `selected` keeps, each sorted in decreasing order, with how many times each occurs,
/// in the rows' order (so that the sums over them add in one order, the same bits every run).
fn sorted_row_counts(
    votes: &VoteMatrix,
    selected: &dyn Fn(usize) -> bool,
) -> BTreeMap<Vec<u64>, usize> {
    let mut groups: BTreeMap<Vec<u64>, usize> = BTreeMap::new();
    for (i, r) in votes.rows().enumerate() {
        if selected(i) {
            let mut s = r.to_vec();
            s.sort_unstable_by(|a, b| b.cmp(a));
            *groups.entry(s).or_default() += 1;
        }
    }
    groups
}

/// GNMax: each query's bound with the σ it was answered with (the head's first, if any).
fn add_gnmax_queries(
    sum: &mut DistanceSums,
    votes: &VoteMatrix,
    m: &Gnmax,
    order: f64,
) -> Result<()> {
    let k = m.head_queries(votes.queries());
    let mut groups = vec![(m.sigma, k..votes.queries())];
    if let Some(h) = m.head {
        groups.push((h.sigma, 0..k));
    }
    for (sigma, rows) in groups {
        let d = DiscreteGaussian::new(sigma)?;
        let tails = DiscreteGaussianTails::new(d.sigma2.to_f64());
        let sigma = d.sigma();
        let f = |ln_q: f64| gnmax_rdp_data_dependent(ln_q, sigma, order);
        sum.add_argmax_queries(
            votes,
            &|i| rows.contains(&i),
            &|x| tails.ln_diff_sf(x as i64),
            &f,
        );
    }
    Ok(())
}

/// Confident-GNMax: the threshold step of every query, then the GNMax step of the charged
/// (answered) ones.
fn add_confident_gnmax_queries(
    sum: &mut DistanceSums,
    votes: &VoteMatrix,
    m: &ConfidentGnmax,
    answered: Option<&[bool]>,
    order: f64,
) -> Result<()> {
    let n = sum.n;
    let d1 = DiscreteGaussian::new(m.sigma1)?;
    let d2 = DiscreteGaussian::new(m.sigma2)?;
    let t = m.integer_threshold()?;
    let tails1 = DiscreteGaussianTails::new(d1.sigma2.to_f64());
    let s1 = d1.sigma() * std::f64::consts::SQRT_2;
    let fv: Vec<f64> = (0..=n)
        .map(|v| gnmax_rdp_data_dependent(threshold_ln_q(v, t, &tails1), s1, order))
        .collect();
    add_threshold_queries(sum, votes, &largest_one_step_changes(&fv));
    let tails2 = DiscreteGaussianTails::new(d2.sigma2.to_f64());
    let sigma2 = d2.sigma();
    let f = |ln_q: f64| gnmax_rdp_data_dependent(ln_q, sigma2, order);
    sum.add_argmax_queries(
        votes,
        &|i| answered.is_none_or(|a| a[i]),
        &|x| tails2.ln_diff_sf(x as i64),
        &f,
    );
    Ok(())
}

/// For each v, the larger of |f(v + 1) − f(v)| and |f(v) − f(v − 1)| (0 past either end).
fn largest_one_step_changes(fv: &[f64]) -> Vec<f64> {
    let n = fv.len() - 1;
    (0..=n)
        .map(|v| {
            let up = if v < n {
                (fv[v + 1] - fv[v]).abs()
            } else {
                0.0
            };
            let down = if v > 0 {
                (fv[v] - fv[v - 1]).abs()
            } else {
                0.0
            };
            up.max(down)
        })
        .collect()
}

/// The threshold step's bound for every query: it depends only on v = maxⱼ cⱼ, and A⁽ᵈ⁾ᵢ is the
/// largest one-step change `step` over [v − d, v + d] (Papernot et al. 2018, Algorithm 5).
fn add_threshold_queries(sum: &mut DistanceSums, votes: &VoteMatrix, step: &[f64]) {
    let n = sum.n;
    // Ordered, as `sorted_row_counts`: the sum adds in one order.
    let mut by_max: BTreeMap<u64, usize> = BTreeMap::new();
    for r in votes.rows() {
        *by_max
            .entry(r.iter().copied().max().unwrap_or(0).min(n))
            .or_default() += 1;
    }
    for (v, times) in by_max {
        let mut acc = 0.0f64;
        let ls: Vec<f64> = (0..=n)
            .map(|d| {
                let lo = v.saturating_sub(d) as usize;
                let hi = (v + d).min(n) as usize;
                acc = acc.max(step[lo]).max(step[hi]);
                acc
            })
            .collect();
        sum.add(&ls, times);
    }
}

/// RDP of the GNSS release at order α (Papernot et al. 2018, Theorem 23), 1 < α < 1/(2β).
pub fn gnss_rdp(beta: f64, noise_multiplier: f64, alpha: f64) -> f64 {
    alpha * (2.0 * beta).exp() / (noise_multiplier * noise_multiplier)
        + (beta * alpha - 0.5 * (1.0 - 2.0 * alpha * beta).ln()) / (alpha - 1.0)
}

/// Adds a sanitized ε to `report` (which must come from [`crate::accountant::account`] with the
/// same votes, mechanism and options). The noise comes from `rng` and its provenance is recorded.
///
/// What is published is an upper bound on the data-dependent RDP total f(D) that holds with
/// probability 1 − p (propose-test-release style; the failure probability p is added to δ):
///
/// * the released value is V = f(D) + z·σ_s·SS(D) + SS(D)·σ_s·N(0, 1), z = Φ⁻¹(1 − p), so
///   P[V < f(D)] = P[N < −z] = p;
/// * V is the GNSS release of g(D) = f(D) + z·σ_s·SS(D). For neighbours D, D′,
///   |g(D) − g(D′)| ≤ LS_f(D) + z·σ_s·|SS(D) − SS(D′)| ≤ (1 + z·σ_s·(e^β − 1))·SS(D) =: k·SS(D)
///   (SS is β-smooth), and k·SS is β-smooth, so V = g(D) + (k·SS(D))·(σ_s/k)·N(0, 1) costs
///   [`gnss_rdp`]`(β, σ_s/k, α)` (Papernot et al. 2018, Theorem 23);
/// * the published RDP value is min(V, data-independent total at α): the minimum of two valid
///   bounds (the second needs no release). There is NO clamp at 0: a low draw is a low bound
///   only with probability p, which δ pays for;
/// * ε = that value + release cost, converted at δ by [`crate::accountant::rdp_epsilon`], for
///   (ε, δ + p).
///
/// The order is fixed in advance (`sopts.order`, else the report's data-independent order).
pub fn sanitize(
    votes: &VoteMatrix,
    mechanism: &Mechanism,
    opts: &AccountOptions,
    report: &mut EpsilonReport,
    sopts: &SanitizeOptions,
    rng: &mut NoiseRng,
) -> Result<()> {
    let (analysis, _) = analyse(votes, mechanism, opts.answered.as_deref())?;
    let moments = analysis.is_moments();
    if !(sopts.noise_multiplier.is_finite() && sopts.noise_multiplier > 0.0) {
        return Err(PrivacyError::Parameter {
            name: "noise multiplier",
            reason: format!("must be positive, got {}", sopts.noise_multiplier),
        });
    }
    let p = sopts.failure_probability;
    if !(p > 0.0 && p < 0.5) {
        return Err(PrivacyError::Parameter {
            name: "failure probability",
            reason: format!("must be in (0, 0.5), got {p}"),
        });
    }
    let ln_inv_delta = -opts.delta.ln();
    let (order, order_choice) = match sopts.order {
        Some(o) => (o, "given (fixed in advance)".to_string()),
        None => (
            report.data_independent_order,
            "the data-independent optimum order (a function of the parameters, δ and the number of queries only)"
                .to_string(),
        ),
    };
    if !(order.is_finite() && if moments { order > 0.0 } else { order > 1.0 }) {
        return Err(PrivacyError::Parameter {
            name: "sanitization order",
            reason: format!("must be > {} , got {order}", if moments { 0 } else { 1 }),
        });
    }
    let alpha = if moments { order + 1.0 } else { order };
    let beta = sopts.beta.unwrap_or(0.4 / alpha);
    if !(beta > 0.0 && 2.0 * alpha * beta < 1.0) {
        return Err(PrivacyError::Parameter {
            name: "beta",
            reason: format!(
                "must be in (0, 1/(2α)) = (0, {}), got {beta}",
                1.0 / (2.0 * alpha)
            ),
        });
    }
    let rdp_dep = if moments {
        analysis.dependent_total(order).0 / order
    } else {
        analysis.dependent_total(order).0
    };
    let cap = if moments {
        analysis.independent_total(order) / order
    } else {
        analysis.independent_total(order)
    };
    let ss =
        smooth_sensitivity_bound(votes, mechanism, opts.answered.as_deref(), order, beta, cap)?;
    let z = normal_upper_quantile(p);
    let noise_std = ss * sopts.noise_multiplier;
    let inflation = 1.0 + z * sopts.noise_multiplier * beta.exp_m1();
    let released = rdp_dep + z * noise_std + noise::gaussian(rng, noise_std);
    let upper_bound = released.min(cap);
    let cost = gnss_rdp(beta, sopts.noise_multiplier / inflation, alpha);
    let epsilon = crate::accountant::rdp_epsilon(upper_bound + cost, alpha, ln_inv_delta);
    if !epsilon.is_finite() {
        return Err(PrivacyError::NonFinite {
            step: "sanitization",
            quantity: "epsilon",
            value: epsilon,
        });
    }
    report.epsilons.push(LabelledEpsilon {
        label: LABEL_SANITIZED.into(),
        epsilon,
        order,
    });
    report.sanitized = Some(SanitizedEpsilon {
        epsilon,
        label: LABEL_SANITIZED.into(),
        published_delta: opts.delta + p,
        failure_probability: p,
        confidence_z: z,
        rdp_order: alpha,
        order_choice,
        beta,
        noise_multiplier: sopts.noise_multiplier,
        smooth_sensitivity: ss,
        noise_std,
        sensitivity_factor: inflation,
        released_rdp_upper_bound: upper_bound,
        release_rdp_cost: cost,
        rng: rng.provenance(),
    });
    Ok(())
}
