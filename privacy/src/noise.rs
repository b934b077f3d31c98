//! Noise samplers.
//!
//! * Exact discrete noise for integer vote counts: discrete Laplace and discrete Gaussian sampled
//!   with integer arithmetic only, following Canonne, Kamath & Steinke, "The Discrete Gaussian for
//!   Differential Privacy" (NeurIPS 2020), Algorithms 1, 2 and 3. Adding floating-point Laplace
//!   noise to counts leaks through the low-order bits of the result (Mironov, "On significance of
//!   the least significant bits for differential privacy", CCS 2012); integer noise added to
//!   integer counts has no such side channel.
//! * Continuous Laplace and Gaussian for real values (the student-feature privatizer), from
//!   `rand_distr` (`Exp1`, `StandardNormal`; `rand_distr` has no Laplace, so Lap(b) = b·(E₁ − E₂)
//!   with E₁, E₂ iid Exp(1), whose difference is standard Laplace).
//!
//! Parameters given as `f64` are turned into exact rationals with denominator 10⁶, always rounded
//! towards MORE noise (smaller γ, larger σ²), so the mechanism that runs is never less private than
//! the one the accountant is told about; the accountant uses the same rationals ([`Rational`]).
use crate::rng::NoiseRng;
use crate::{PrivacyError, Result};
use rand_distr::{Distribution, Exp1, StandardNormal};
use serde::Serialize;

/// Denominator used to turn `f64` parameters into exact rationals.
pub const PARAMETER_DENOMINATOR: u128 = 1_000_000;

/// A non-negative rational `num/den` in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rational {
    /// Numerator.
    pub num: u128,
    /// Denominator (positive).
    pub den: u128,
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rational {
    /// `num/den` reduced to lowest terms. `den` must be positive.
    pub fn new(num: u128, den: u128) -> Self {
        let g = gcd(num, den).max(1);
        Rational {
            num: num / g,
            den: den / g,
        }
    }
    /// The largest multiple of 1/10⁶ that is ≤ `x` (x finite, ≥ 0).
    pub fn floor_of(x: f64) -> Self {
        Rational::new(
            (x * PARAMETER_DENOMINATOR as f64).floor() as u128,
            PARAMETER_DENOMINATOR,
        )
    }
    /// The smallest multiple of 1/10⁶ that is ≥ `x` (x finite, ≥ 0).
    pub fn ceil_of(x: f64) -> Self {
        Rational::new(
            (x * PARAMETER_DENOMINATOR as f64).ceil() as u128,
            PARAMETER_DENOMINATOR,
        )
    }
    /// The value as `f64`.
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

/// Discrete Laplace noise on ℤ with P(x) ∝ exp(−γ·|x|): the integer analogue of Lap(1/γ).
/// Used by LNMax; γ is the exact rational that is actually sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DiscreteLaplace {
    /// γ = 1/scale as an exact rational (rounded down from the requested value: more noise).
    pub gamma: Rational,
}

impl DiscreteLaplace {
    /// Largest accepted γ (noise scale 10⁻⁶ would be no noise at all).
    pub const MAX_GAMMA: f64 = 1e6;
    /// Discrete Laplace with P(x) ∝ exp(−γ|x|), γ rounded down to a multiple of 10⁻⁶.
    pub fn new(gamma: f64) -> Result<Self> {
        if !gamma.is_finite() || gamma <= 0.0 || gamma > Self::MAX_GAMMA {
            return Err(PrivacyError::Parameter {
                name: "gamma",
                reason: format!(
                    "must be a finite number in (0, {}], got {gamma}",
                    Self::MAX_GAMMA
                ),
            });
        }
        let g = Rational::floor_of(gamma);
        if g.num == 0 {
            return Err(PrivacyError::Parameter {
                name: "gamma",
                reason: format!("must be at least 1e-6, got {gamma}"),
            });
        }
        Ok(DiscreteLaplace { gamma: g })
    }
    /// One sample.
    pub fn sample(&self, rng: &mut NoiseRng) -> i128 {
        // exp(−|x|·s/t) with s/t = γ.
        discrete_laplace(rng, self.gamma.num, self.gamma.den)
    }
}

/// Discrete Gaussian N_ℤ(0, σ²) on ℤ: P(x) ∝ exp(−x²/(2σ²)) (CKS 2020, Definition 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DiscreteGaussian {
    /// σ² as an exact rational (rounded up from the requested σ²: more noise).
    pub sigma2: Rational,
}

impl DiscreteGaussian {
    /// Smallest accepted σ.
    pub const MIN_SIGMA: f64 = 1e-2;
    /// Largest accepted σ (keeps every intermediate of Algorithm 3 within u128).
    pub const MAX_SIGMA: f64 = 1e4;
    /// N_ℤ(0, σ²) with σ² rounded up to a multiple of 10⁻⁶.
    pub fn new(sigma: f64) -> Result<Self> {
        if !sigma.is_finite() || !(Self::MIN_SIGMA..=Self::MAX_SIGMA).contains(&sigma) {
            return Err(PrivacyError::Parameter {
                name: "sigma",
                reason: format!(
                    "must be a finite number in [{}, {}], got {sigma}",
                    Self::MIN_SIGMA,
                    Self::MAX_SIGMA
                ),
            });
        }
        Ok(DiscreteGaussian {
            sigma2: Rational::ceil_of(sigma * sigma),
        })
    }
    /// The effective σ (square root of the exact σ² that is sampled).
    pub fn sigma(&self) -> f64 {
        self.sigma2.to_f64().sqrt()
    }
    /// One sample.
    pub fn sample(&self, rng: &mut NoiseRng) -> i128 {
        discrete_gaussian(rng, self.sigma2.num, self.sigma2.den)
    }
}

/// Bernoulli(num/den), exact. Requires `num ≤ den`, `den > 0`.
fn bernoulli_ratio(rng: &mut NoiseRng, num: u128, den: u128) -> bool {
    rng.uniform_below(den) < num
}

/// Bernoulli(exp(−num/den)) with integer arithmetic only: CKS 2020, Algorithm 1.
///
/// For γ = num/den ≤ 1: draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first A_k = 0 and
/// return 1 iff that k is odd (P = Σ_k (−γ)^k/k! = e^{−γ}). For γ > 1: ⌊γ⌋ independent
/// Bernoulli(e^{−1}) trials must all succeed, then one Bernoulli(e^{−(γ−⌊γ⌋)}).
pub fn bernoulli_exp(rng: &mut NoiseRng, num: u128, den: u128) -> bool {
    if num <= den {
        let mut k: u128 = 1;
        // den·k overflowing u128 would need ~2^64 consecutive successes of probabilities γ/k → 0;
        // treating it as A = 0 changes the output distribution by less than 2^-100.
        while let Some(dk) = den.checked_mul(k) {
            if !bernoulli_ratio(rng, num, dk) {
                break;
            }
            k += 1;
        }
        k % 2 == 1
    } else {
        let whole = num / den;
        let mut i: u128 = 0;
        while i < whole {
            if !bernoulli_exp(rng, 1, 1) {
                return false;
            }
            i += 1;
        }
        bernoulli_exp(rng, num % den, den)
    }
}

/// Discrete Laplace with P(x) ∝ exp(−|x|·s/t) (s, t positive integers): CKS 2020, Algorithm 2.
pub fn discrete_laplace(rng: &mut NoiseRng, s: u128, t: u128) -> i128 {
    loop {
        let u = rng.uniform_below(t);
        if !bernoulli_exp(rng, u, t) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp(rng, 1, 1) {
            v += 1;
        }
        // X = U + t·V is geometric with P(X = x) ∝ exp(−x/t); Y = ⌊X/s⌋ is geometric with
        // P(Y = y) ∝ exp(−y·s/t).
        let x = u + t * v;
        let y = (x / s) as i128;
        let negative = rng.next_u64() & 1 == 1;
        if negative && y == 0 {
            continue; // reject −0 so that 0 is not counted twice
        }
        return if negative { -y } else { y };
    }
}

fn isqrt(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    let mut x = (n as f64).sqrt() as u128;
    while x * x > n {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= n {
        x += 1;
    }
    x
}

/// Discrete Gaussian N_ℤ(0, σ²) with σ² = p/q: CKS 2020, Algorithm 3.
///
/// t = ⌊σ⌋ + 1; propose Y from the discrete Laplace with P(y) ∝ exp(−|y|/t) and accept it with
/// probability exp(−(|Y| − σ²/t)² / (2σ²)) = exp(−(|Y|·q·t − p)² / (2·p·q·t²)).
pub fn discrete_gaussian(rng: &mut NoiseRng, p: u128, q: u128) -> i128 {
    let t = isqrt(p / q) + 1;
    loop {
        let y = discrete_laplace(rng, 1, t);
        let abs_y = y.unsigned_abs();
        // With σ ≤ 10⁴ these products stay far below 2^128 except for |Y| astronomically far in
        // the tail (probability < exp(−10⁹)), whose acceptance probability is then exp(−huge):
        // rejecting on overflow changes nothing measurable.
        let accepted = (|| {
            let a = abs_y.checked_mul(q)?.checked_mul(t)?;
            let diff = a.abs_diff(p);
            let num = diff.checked_mul(diff)?;
            let den = 2u128
                .checked_mul(p)?
                .checked_mul(q)?
                .checked_mul(t)?
                .checked_mul(t)?;
            let g = gcd(num, den).max(1);
            Some(bernoulli_exp(rng, num / g, den / g))
        })();
        if accepted == Some(true) {
            return y;
        }
    }
}

/// Continuous Laplace Lap(scale): density exp(−|x|/scale)/(2·scale). Real values only.
pub fn laplace(rng: &mut NoiseRng, scale: f64) -> f64 {
    let e1: f64 = Exp1.sample(rng);
    let e2: f64 = Exp1.sample(rng);
    scale * (e1 - e2)
}

/// Continuous Gaussian N(0, σ²). Real values only.
pub fn gaussian(rng: &mut NoiseRng, sigma: f64) -> f64 {
    let z: f64 = StandardNormal.sample(rng);
    sigma * z
}
