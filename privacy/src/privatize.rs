//! Student-data privatization ("Trusted Curator B", Yovine et al. 2021).
//!
//! Each l1-normalized feature vector x (‖x‖₁ = 1) gets independent Lap(1/ρ) noise on every
//! coordinate before the teachers see it. For two records x, x' with ‖x‖₁ = ‖x'‖₁ = 1,
//! ‖x − x'‖₁ ≤ 2, so the Laplace mechanism with scale 1/ρ is (2ρ, 0)-DP for each record in the
//! local model (Dwork & Roth 2014, Theorem 3.6, with l1-sensitivity Δ₁ = 2 and scale Δ₁/ε).
//! The teachers vote on the noisy vector; the student trains on the original one.
use crate::noise;
use crate::rng::NoiseRng;
use crate::{PrivacyError, Result};

/// The local ε of [`laplace`] with parameter ρ on l1-normalized vectors: ε = Δ₁·ρ = 2ρ.
pub fn local_epsilon(rho: f64) -> f64 {
    2.0 * rho
}

/// Checks ρ: finite and positive.
pub fn check_rho(rho: f64) -> Result<()> {
    if !rho.is_finite() || rho <= 0.0 {
        return Err(PrivacyError::InvalidParameter(format!(
            "rho must be a finite positive number, got {rho}"
        )));
    }
    Ok(())
}

/// Adds Lap(1/ρ) to each coordinate of `x` in place (continuous Laplace, real-valued features).
pub fn laplace(x: &mut [f32], rho: f64, rng: &mut NoiseRng) -> Result<()> {
    check_rho(rho)?;
    let scale = 1.0 / rho;
    for v in x.iter_mut() {
        *v = (*v as f64 + noise::laplace(rng, scale)) as f32;
    }
    Ok(())
}
