//! Log-space arithmetic and exact tail probabilities of the discrete noise distributions, as
//! needed by the data-dependent accountants (the probability q that the noisy argmax differs from
//! the true argmax).
//!
//! The q bounds of the papers (Papernot et al. 2017, Lemma 4; 2018, Proposition 7) are for
//! continuous Laplace / Gaussian noise. The aggregators add exact DISCRETE noise, where ties have
//! positive probability, so this module computes the corresponding tails for the noise that is
//! actually added, counting a tie as a loss (conservative whatever the tie-breaking).

/// ln(eᵃ + eᵇ) without overflow; −∞ is the neutral element.
pub fn logaddexp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// ln Σ eˣⁱ without overflow (−∞ for an empty sum).
pub fn logsumexp(xs: impl IntoIterator<Item = f64>) -> f64 {
    let xs: Vec<f64> = xs.into_iter().collect();
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// ln(1 − eˣ) for x ≤ 0 (−∞ at x = 0), accurate near both ends (Mächler 2012).
pub fn log1mexp(x: f64) -> f64 {
    if x >= 0.0 {
        f64::NEG_INFINITY
    } else if x < -std::f64::consts::LN_2 {
        (-x.exp()).ln_1p()
    } else {
        (-x.exp_m1()).ln()
    }
}

/// ln P[N(0, 1) > z] for z ≥ 0, in log space (no underflow up to z = 40 and beyond), from
/// erfc(x) = t·exp(−x² + P(t)), t = 1/(1 + x/2) (Press et al., Numerical Recipes, 2nd ed., §6.2,
/// `erfcc`: fractional error below 1.2·10⁻⁷ everywhere).
pub fn ln_normal_sf(z: f64) -> f64 {
    let x = z.max(0.0) / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x);
    let poly = -1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    t.ln() - x * x + poly - std::f64::consts::LN_2
}

/// ln P(Y ≥ Δ) for Y = X₁ − X₂, X₁, X₂ iid discrete Laplace with P(x) ∝ e^{−γ|x|}, Δ ≥ 0.
///
/// With p = e^{−γ} and c = (1−p)/(1+p): P(Y = k) = c²·p^k·(k + A), A = (1+p²)/(1−p²) for k ≥ 0
/// (sum over x₂ of P(x₂)·P(x₂+k), split at x₂ ≥ 0, −k ≤ x₂ < 0, x₂ < −k), hence
/// P(Y ≥ Δ) = c²·p^Δ·[(Δ + A)/(1−p) + p/(1−p)²]. For small γ this tends to the continuous value
/// (2 + γΔ)/(4e^{γΔ}) of Papernot et al. 2017, Lemma 4, and exceeds it by the tie mass.
pub fn ln_discrete_laplace_diff_sf(gamma: f64, delta: u64) -> f64 {
    let d = delta as f64;
    let ln_p = -gamma;
    let one_m_p = -(-gamma).exp_m1(); // 1 − p
    let p = (-gamma).exp();
    let ln_c = one_m_p.ln() - (1.0 + p).ln();
    let a = (1.0 + p * p) / (one_m_p * (1.0 + p));
    let bracket = (d + a) / one_m_p + p / (one_m_p * one_m_p);
    (2.0 * ln_c + d * ln_p + bracket.ln()).min(0.0)
}

/// Tail probabilities of the discrete Gaussian N_ℤ(0, σ²), computed so that every value is an
/// UPPER bound on the true probability:
/// * the normalizer Σ_{|z|≤M} e^{−z²/2σ²} is a partial sum (≤ the true one), so each pmf value
///   is over-estimated;
/// * mass beyond the table (|z| > M, M = ⌈40σ⌉ + 2) is bounded by the sub-Gaussian tail
///   P(Z ≥ k) ≤ e^{−k²/(2σ²)} for k > 0 (the discrete Gaussian is σ-sub-Gaussian,
///   E e^{tZ} ≤ e^{t²σ²/2}, Canonne, Kamath & Steinke 2020, §2; then a Chernoff bound).
#[derive(Debug, Clone)]
pub struct DiscreteGaussianTails {
    sigma2: f64,
    m: i64,
    ln_pmf: Vec<f64>, // index z + m, z ∈ [−m, m]
    ln_sf: Vec<f64>,  // index k + m, k ∈ [−m, m]: ln P(Z ≥ k) (upper bound)
    ln_beyond: f64,   // ln of the bound on P(Z > m)
}

impl DiscreteGaussianTails {
    /// Tables for N_ℤ(0, σ²).
    pub fn new(sigma2: f64) -> Self {
        let sigma = sigma2.sqrt();
        let m = (40.0 * sigma).ceil() as i64 + 2;
        let ln_w: Vec<f64> = (-m..=m)
            .map(|z| -((z * z) as f64) / (2.0 * sigma2))
            .collect();
        let ln_norm = logsumexp(ln_w.iter().copied());
        let ln_pmf: Vec<f64> = ln_w.iter().map(|w| w - ln_norm).collect();
        let ln_beyond = -(((m + 1) * (m + 1)) as f64) / (2.0 * sigma2);
        let mut ln_sf = vec![0.0; ln_pmf.len()];
        let mut acc = ln_beyond;
        for i in (0..ln_pmf.len()).rev() {
            acc = logaddexp(acc, ln_pmf[i]);
            ln_sf[i] = acc.min(0.0);
        }
        DiscreteGaussianTails {
            sigma2,
            m,
            ln_pmf,
            ln_sf,
            ln_beyond,
        }
    }

    /// Upper bound on ln P(Z ≥ k).
    pub fn ln_sf(&self, k: i64) -> f64 {
        if k < -self.m {
            0.0
        } else if k > self.m {
            -((k * k) as f64) / (2.0 * self.sigma2)
        } else {
            self.ln_sf[(k + self.m) as usize]
        }
    }

    /// Upper bound on ln P(Z₁ − Z₂ ≥ Δ) for Z₁, Z₂ iid N_ℤ(0, σ²):
    /// Σ_{|z₂|≤M} P(z₂)·P(Z₁ ≥ Δ + z₂) + P(|Z₂| > M).
    pub fn ln_diff_sf(&self, delta: i64) -> f64 {
        let main = logsumexp(
            (-self.m..=self.m)
                .map(|z2| self.ln_pmf[(z2 + self.m) as usize] + self.ln_sf(delta + z2)),
        );
        logaddexp(main, std::f64::consts::LN_2 + self.ln_beyond).min(0.0)
    }
}
