//! Model averaging: ONE Gaussian release of the sum of the teachers' clipped linear models.
//!
//! GNMax pays for every query; a linear teacher's whole model is a vector, so the ensemble's mean
//! model can be released once and then label every public request (post-processing). Each
//! teacher's parameter vector θ_i (weights, then bias) is scaled to ℓ2 norm ≤ C (`clip_norm`),
//! put on an integer grid by truncation toward zero (which never raises a norm), and checked in
//! exact integer arithmetic to have ‖z_i‖₂ ≤ B. One private record is in one teacher's shard (the
//! partition), so on neighbouring data sets — one record added or removed, the relation of
//! docs/privacy.md — only one z_i differs: the sum Σ z_i moves by at most 2B in ℓ2. (Replacing a
//! record is a removal and an addition, two teachers: a group of two, 4B, whose ε the same
//! accounting computes — `Mechanism::for_group` — and which is more than twice the ε.) A
//! teacher whose parameters are not all finite counts as the zero vector rather than stopping the
//! run, so that no record can turn a release into an abort. Independent discrete Gaussian noise
//! N_ℤ(0, s²) with s ≥ 2σB on each coordinate makes the release (α, α·(2B)²/(2s²))-RDP
//! ≤ (α, α/(2σ²)) for every α > 1 (Canonne, Kamath & Steinke 2020: for integer shifts the
//! discrete Gaussian has the continuous one's Rényi divergence, and independent coordinates
//! add). The released integers divided by (grid scale × teachers) are the
//! noisy mean model; everything after (thresholding small weights, labelling) is post-processing.
use serde::{Deserialize, Serialize};

use crate::noise::DiscreteGaussian;
use crate::{NoiseRng, PrivacyError, Result};

/// The Gaussian mechanism on the sum of the teachers' clipped linear models
/// (`{mechanism: model_average, sigma: 4.05, clip_norm: 75}`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelAverage {
    /// Noise multiplier: the noise's standard deviation over the sum's ℓ2 sensitivity (2 ×
    /// `clip_norm`). The release is (α, α/(2σ²))-RDP.
    pub sigma: f64,
    /// Each teacher's parameter vector (weights and bias) is scaled down to this ℓ2 norm when
    /// longer. Public: fixed before training, never read off the teachers.
    pub clip_norm: f64,
}

/// The released noisy mean model.
#[derive(Debug, Clone, PartialEq)]
pub struct NoisyMean {
    /// The noisy mean of the teachers' clipped parameter vectors (weights, then the bias).
    pub mean: Vec<f64>,
    /// The standard deviation of the noise on each coordinate of `mean` (public: a function of
    /// the parameters and the number of teachers).
    pub noise_std: f64,
}

impl ModelAverage {
    /// Largest accepted σ: the integer grid keeps B = ⌊MAX_SIGMA / (2σ)⌋ ≥ 100 steps per clip norm.
    pub const MAX_SIGMA: f64 = DiscreteGaussian::MAX_SIGMA / 200.0;

    /// Checks the parameters, naming the one that is wrong.
    pub fn check(&self) -> Result<()> {
        if !(self.sigma.is_finite() && self.sigma >= 0.1 && self.sigma <= Self::MAX_SIGMA) {
            return Err(PrivacyError::Parameter {
                name: "sigma",
                reason: format!(
                    "must be a finite number in [0.1, {}], got {}",
                    Self::MAX_SIGMA,
                    self.sigma
                ),
            });
        }
        if !(self.clip_norm.is_finite() && self.clip_norm > 0.0) {
            return Err(PrivacyError::Parameter {
                name: "clip_norm",
                reason: format!("must be a finite number > 0, got {}", self.clip_norm),
            });
        }
        Ok(())
    }

    /// B: the integer ℓ2 bound of one teacher's grid vector, as large as the sampler allows
    /// (s = 2σB, asked a hair above, ≤ [`DiscreteGaussian::MAX_SIGMA`]) so that the grid's
    /// rounding is negligible.
    pub fn grid_bound(&self) -> u64 {
        (DiscreteGaussian::MAX_SIGMA / (2.0 * self.sigma * (1.0 + 1e-6))).floor() as u64
    }

    /// The noise on each coordinate of the sum: s a hair above 2σB, so that the sampler's
    /// rational s² (rounded up from the float) is ≥ (2σB)² exactly.
    pub fn noise(&self) -> Result<DiscreteGaussian> {
        DiscreteGaussian::new(2.0 * self.sigma * self.grid_bound() as f64 * (1.0 + 1e-9))
    }

    /// One teacher's vector on the integer grid: θ·min(1, C/‖θ‖)·(B/C), truncated toward zero,
    /// with ‖z‖₂ ≤ B checked exactly (the scale shrinks until it holds, against floating-point
    /// rounding in the norm). A vector with a parameter that is not finite is the zero vector.
    pub fn to_grid(&self, theta: &[f32]) -> Vec<i64> {
        if theta.iter().any(|v| !v.is_finite()) {
            return vec![0; theta.len()];
        }
        let bound = self.grid_bound();
        let norm = theta
            .iter()
            .map(|&v| f64::from(v) * f64::from(v))
            .sum::<f64>()
            .sqrt();
        // (C / 0).min(1) is 1: a zero vector stays zero.
        let mut scale = (bound as f64 / self.clip_norm) * (self.clip_norm / norm).min(1.0);
        let limit = u128::from(bound) * u128::from(bound);
        loop {
            let z: Vec<i64> = theta
                .iter()
                .map(|&v| (f64::from(v) * scale).trunc() as i64)
                .collect();
            let squares: u128 = z.iter().map(|&c| (c.unsigned_abs() as u128).pow(2)).sum();
            if squares <= limit {
                return z;
            }
            scale *= 1.0 - 1e-9;
        }
    }

    /// The release: every teacher's vector on the grid, summed, discrete Gaussian noise of
    /// standard deviation ≥ 2σB on each coordinate, divided back into a mean.
    pub fn release(&self, models: &[Vec<f32>], rng: &mut NoiseRng) -> Result<NoisyMean> {
        self.check()?;
        let dim = models.first().map_or(0, Vec::len);
        if dim == 0 || models.iter().any(|m| m.len() != dim) {
            return Err(PrivacyError::Parameter {
                name: "models",
                reason: format!(
                    "expected at least one teacher and one length for all, got lengths {:?}",
                    models
                        .iter()
                        .map(Vec::len)
                        .collect::<std::collections::BTreeSet<_>>()
                ),
            });
        }
        let bound = self.grid_bound();
        let noise = self.noise()?;
        let mut sum = vec![0i128; dim];
        for m in models {
            for (s, z) in sum.iter_mut().zip(self.to_grid(m)) {
                *s += i128::from(z);
            }
        }
        let per_unit = bound as f64 / self.clip_norm * models.len() as f64;
        let mean = sum
            .into_iter()
            .map(|s| (s + noise.sample(rng)) as f64 / per_unit)
            .collect();
        Ok(NoisyMean {
            mean,
            noise_std: noise.sigma() / per_unit,
        })
    }

    /// Data-independent RDP of the release at order α: α/(2σ²).
    pub fn rdp(&self, alpha: f64) -> f64 {
        alpha / (2.0 * self.sigma * self.sigma)
    }
}

impl NoisyMean {
    /// Weights whose magnitude is within `k` noise standard deviations of 0 set to 0, the others
    /// moved toward 0 by as much (soft thresholding; post-processing: the noise's scale is
    /// public). Why: the teachers' mean is sparse, the noise is on every coordinate, and a
    /// request's score sums the noise of all its features. The bias (last) is kept.
    pub fn soft_thresholded(&self, k: f64) -> Vec<f64> {
        let cut = k * self.noise_std;
        let last = self.mean.len().saturating_sub(1);
        self.mean
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                if i == last {
                    w
                } else {
                    w.signum() * (w.abs() - cut).max(0.0)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mech(sigma: f64, clip: f64) -> ModelAverage {
        ModelAverage {
            sigma,
            clip_norm: clip,
        }
    }

    /// The grid vector never exceeds B in ℓ2, whatever the vector's norm, so two teachers'
    /// vectors differ by at most 2B: the sensitivity the noise is scaled to.
    #[test]
    fn a_grid_vector_is_within_the_bound_and_a_short_one_is_kept() {
        let m = mech(4.0, 2.0);
        let b = m.grid_bound();
        assert_eq!(b, 1249);
        let long: Vec<f32> = (0..1000)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.37)
            .collect();
        let z = m.to_grid(&long);
        let sq: u128 = z.iter().map(|&c| (c.unsigned_abs() as u128).pow(2)).sum();
        assert!(sq <= (b as u128).pow(2));
        // Clipped to the bound, not far below it (truncation loses < 1 per coordinate).
        assert!((sq as f64).sqrt() > b as f64 - (1000f64).sqrt());
        // A vector inside the clip norm is only scaled onto the grid: 1 is 624.5 steps.
        let short = [0.5f32, 0.0, -0.25];
        assert_eq!(m.to_grid(&short), vec![312, 0, -156]);
        // Not finite: the zero vector (inside the bound), not an error a record could cause.
        assert_eq!(m.to_grid(&[f32::NAN, 1.0]), vec![0, 0]);
        // The noise is at least 2σB, exactly (the sampler's σ² is a rational rounded up).
        for sigma in [0.1, 0.3, 2.5, 4.1, 7.9, 50.0] {
            let m = mech(sigma, 1.0);
            let s2 = m.noise().unwrap().sigma2;
            let two_b = 2 * m.grid_bound() as u128;
            // s² = num/den ≥ (2σB)² ⇔ num ≥ den·(2B)²·σ², checked with σ² = p/q of σ's decimal
            // expansion (σ here has at most one decimal: σ = t/10).
            let t = (sigma * 10.0).round() as u128;
            assert!(s2.num * 100 >= s2.den * two_b * two_b * t * t, "σ {sigma}");
        }
    }

    /// The mean comes back on the original scale, with the stated noise: many releases of the
    /// same two teachers average to their mean, and the spread matches `noise_std`.
    #[test]
    fn the_release_is_the_mean_plus_noise_of_the_stated_scale() {
        let m = mech(2.0, 10.0);
        let models = vec![vec![1.0f32, -2.0, 0.5], vec![3.0f32, 0.0, 0.5]];
        let mut rng = NoiseRng::seeded_for_experiments(7);
        let n = 4000;
        let mut sums = [0.0f64; 3];
        let mut sq = 0.0;
        let mut std = 0.0;
        for _ in 0..n {
            let r = m.release(&models, &mut rng).unwrap();
            std = r.noise_std;
            for (s, v) in sums.iter_mut().zip(&r.mean) {
                *s += v;
            }
            sq += (r.mean[0] - 2.0).powi(2);
        }
        // σ·2C/teachers = 2·2·10/2 = 20 (rounded up by the sampler's rational σ²).
        assert!((std - 20.0).abs() < 0.05, "noise std {std}");
        let means: Vec<f64> = sums.iter().map(|s| s / n as f64).collect();
        for (got, want) in means.iter().zip([2.0, -1.0, 0.5]) {
            assert!(
                (got - want).abs() < 4.0 * std / (n as f64).sqrt(),
                "{means:?}"
            );
        }
        let spread = (sq / n as f64).sqrt();
        assert!(
            (spread / std - 1.0).abs() < 0.05,
            "spread {spread} vs {std}"
        );
    }

    /// Neighbouring data sets: one teacher's model replaced by anything (one record changed its
    /// shard) moves the integer sum by at most 2B in ℓ2 — the bound the RDP rests on.
    #[test]
    fn one_teacher_replaced_moves_the_sum_by_at_most_twice_the_bound() {
        let m = mech(1.0, 5.0);
        let b = m.grid_bound() as f64;
        let others: Vec<Vec<f32>> = (0..5).map(|k| vec![k as f32, -(k as f32), 0.3]).collect();
        let sum = |extra: &[f32]| -> Vec<i128> {
            let mut s = vec![0i128; 3];
            for t in others.iter().map(|v| v.as_slice()).chain([extra]) {
                for (a, z) in s.iter_mut().zip(m.to_grid(t)) {
                    *a += i128::from(z);
                }
            }
            s
        };
        for (a, b_) in [
            (vec![100.0f32, 0.0, 0.0], vec![-100.0f32, 0.0, 0.0]),
            (vec![3.0, 4.0, 0.0], vec![0.0, 0.0, -1e6]),
            (vec![0.0, 0.0, 0.0], vec![1e9, 1e9, 1e9]),
        ] {
            let (s1, s2) = (sum(&a), sum(&b_));
            let d: f64 = s1
                .iter()
                .zip(&s2)
                .map(|(x, y)| ((x - y) as f64).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(d <= 2.0 * b, "moved {d} > 2B = {}", 2.0 * b);
        }
    }

    #[test]
    fn soft_thresholding_zeroes_small_weights_and_keeps_the_bias() {
        let r = NoisyMean {
            mean: vec![0.5, -3.0, 2.5, -0.2],
            noise_std: 1.0,
        };
        assert_eq!(r.soft_thresholded(1.0), vec![0.0, -2.0, 1.5, -0.2]);
    }

    #[test]
    fn parameters_are_checked_by_name() {
        let e = mech(0.0, 1.0).check().unwrap_err().to_string();
        assert!(e.contains("sigma"), "{e}");
        let e = mech(1.0, -1.0).check().unwrap_err().to_string();
        assert!(e.contains("clip_norm"), "{e}");
        assert!(mech(1.0, 1.0)
            .release(
                &[vec![1.0], vec![1.0, 2.0]],
                &mut NoiseRng::seeded_for_experiments(1)
            )
            .is_err());
    }
}
