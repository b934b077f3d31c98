//! Student-data privatization ("Trusted Curator B", Yovine et al. 2021).
//!
//! Each feature vector (one record, meant to be l1-normalized) gets independent Laplace-type noise
//! of scale 1/ρ on every coordinate before the teachers see it, so that each record is
//! (2ρ, 0)-DP in the local model (Dwork & Roth 2014, Theorem 3.6, l1-sensitivity 2).
//!
//! The premise ‖x‖₁ ≤ 1 and the arithmetic are enforced here, not left to callers:
//! 1. **Clip**: a record with ‖x‖₁ > 1 is scaled down to ‖x‖₁ = 1.
//! 2. **Discretize** (no floating-point noise, Mironov 2012): each coordinate is rounded towards
//!    zero onto the grid g = 2^−[`GRID_BITS`], kᵢ = trunc(xᵢ/g) ∈ ℤ, so Σ|kᵢ| ≤ 1/g (checked in
//!    integers, and corrected if rounding of the clip overshot).
//! 3. **Exact discrete Laplace** on the integers: kᵢ + Nᵢ with P(Nᵢ = n) ∝ exp(−ρ·g·|n|)
//!    (CKS 2020, Algorithm 2, [`crate::noise::discrete_laplace`]), ρ rounded down to a multiple of
//!    10⁻⁶ (more noise).
//! 4. The output is (kᵢ + Nᵢ)·g as f32, a post-processing of the integers.
//!
//! For two records, ‖k − k′‖₁ ≤ Σ|kᵢ| + Σ|k′ᵢ| ≤ 2/g, and the discrete Laplace mechanism with
//! parameter ρ·g on integer vectors at l1 distance d has privacy loss ≤ ρ·g·d ≤ 2ρ: the local
//! ε = 2ρ holds exactly, for any input. Compared with continuous Lap(1/ρ) the noise differs by
//! the grid step g ≈ 1.5·10⁻⁵ (and the clipped records by the clip).
use crate::noise::{self, Rational};
use crate::rng::NoiseRng;
use crate::{PrivacyError, Result};

/// The grid step is 2^−GRID_BITS (≈ 1.5·10⁻⁵; TF-IDF coordinates are ≥ 10⁻³ in practice).
pub const GRID_BITS: u32 = 16;

/// The local ε of [`laplace`] with parameter ρ: ε = Δ₁·ρ = 2ρ.
pub fn local_epsilon(rho: f64) -> f64 {
    2.0 * rho
}

/// Checks ρ: finite, at least 10⁻⁶ (the rational it is rounded down to must be positive) and at
/// most 10⁶.
pub fn check_rho(rho: f64) -> Result<()> {
    if !rho.is_finite() || !(1e-6..=1e6).contains(&rho) {
        return Err(PrivacyError::Parameter {
            name: "rho",
            reason: format!("must be a finite number in [1e-6, 1e6], got {rho}"),
        });
    }
    Ok(())
}

/// Privatizes ONE record `x` in place: clip to ‖x‖₁ ≤ 1, discretize, add exact discrete Laplace
/// noise of scale 1/ρ (see the module documentation). (2ρ, 0)-local DP for any input.
pub fn laplace(x: &mut [f32], rho: f64, rng: &mut NoiseRng) -> Result<()> {
    check_rho(rho)?;
    if x.iter().any(|v| !v.is_finite()) {
        return Err(PrivacyError::NonFiniteFeatures);
    }
    let rho = Rational::floor_of(rho);
    let one: i128 = 1 << GRID_BITS;
    let g = 1.0 / one as f64;
    let l1: f64 = x.iter().map(|v| (*v as f64).abs()).sum();
    let scale = if l1 > 1.0 { 1.0 / l1 } else { 1.0 };
    let mut k: Vec<i128> = x
        .iter()
        .map(|&v| ((v as f64 * scale) / g).trunc() as i128)
        .collect();
    // Exact premise: Σ|kᵢ| ≤ 1/g. The float clip can overshoot by rounding; shrink the largest.
    let mut total: i128 = k.iter().map(|v| v.abs()).sum();
    while total > one {
        let (i, _) = k
            .iter()
            .enumerate()
            .max_by_key(|(_, v)| v.abs())
            .unwrap_or((0, &0));
        let cut = (total - one).min(k[i].abs());
        k[i] -= k[i].signum() * cut;
        total -= cut;
    }
    // P(n) ∝ exp(−|n|·s/t) with s/t = ρ·g = ρ.num / (ρ.den · 2^GRID_BITS).
    let (s, t) = (rho.num, rho.den << GRID_BITS);
    for (v, ki) in x.iter_mut().zip(k) {
        let n = noise::discrete_laplace(rng, s, t);
        *v = ((ki + n) as f64 * g) as f32;
    }
    Ok(())
}

/// [`laplace`] on every row of a row-major matrix with `cols` columns (each row one record).
pub fn laplace_rows(values: &mut [f32], cols: usize, rho: f64, rng: &mut NoiseRng) -> Result<()> {
    check_rho(rho)?;
    if cols == 0 || !values.len().is_multiple_of(cols) {
        return Err(PrivacyError::NotRows {
            values: values.len(),
            cols,
        });
    }
    for row in values.chunks_mut(cols) {
        laplace(row, rho, rng)?;
    }
    Ok(())
}
