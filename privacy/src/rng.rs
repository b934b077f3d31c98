//! The noise generator: every random bit of privacy noise comes from here.
//!
//! ChaCha20 (Bernstein 2008) as a CSPRNG. [`NoiseRng::from_os`] seeds it with 256 bits from the
//! operating system; [`NoiseRng::seeded_for_experiments`] exists only for tests and reproducible
//! experiments, and its [`RngProvenance`] (`{"rng":"seeded","seed":N}`) must be recorded in every
//! artifact produced with it: noise from a published seed gives no privacy at all.
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

/// Where the noise came from; serialized into every artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rng", rename_all = "lowercase")]
pub enum RngProvenance {
    /// Seeded from the operating system's entropy source (the only private setting).
    Os,
    /// Fixed seed: reproducible, NOT private. Tests and experiments only.
    Seeded {
        /// The seed.
        seed: u64,
    },
}

impl RngProvenance {
    /// True when the noise is reproducible from a recorded seed (not private).
    pub fn is_seeded(&self) -> bool {
        matches!(self, RngProvenance::Seeded { .. })
    }
}

/// ChaCha20 cryptographically secure generator with its provenance.
pub struct NoiseRng {
    inner: ChaCha20Rng,
    provenance: RngProvenance,
}

impl std::fmt::Debug for NoiseRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the state: it would reveal the noise.
        f.debug_struct("NoiseRng")
            .field("provenance", &self.provenance)
            .finish()
    }
}

impl NoiseRng {
    /// A generator seeded with 256 bits from the operating system (`getrandom`).
    pub fn from_os() -> crate::Result<Self> {
        let inner = ChaCha20Rng::try_from_rng(&mut rand::rngs::SysRng)
            .map_err(crate::PrivacyError::Entropy)?;
        Ok(NoiseRng {
            inner,
            provenance: RngProvenance::Os,
        })
    }

    /// A reproducible generator for tests and experiments ONLY (provenance `seeded`).
    pub fn seeded_for_experiments(seed: u64) -> Self {
        NoiseRng {
            inner: ChaCha20Rng::seed_from_u64(seed),
            provenance: RngProvenance::Seeded { seed },
        }
    }

    /// `from_os()` unless a seed is given (the CLI's `--seed`, experiments only).
    pub fn from_option(seed: Option<u64>) -> crate::Result<Self> {
        match seed {
            Some(s) => Ok(Self::seeded_for_experiments(s)),
            None => Self::from_os(),
        }
    }

    /// How this generator was seeded.
    pub fn provenance(&self) -> RngProvenance {
        self.provenance
    }

    /// Uniform integer in `[0, n)` by rejection sampling on 128-bit words, exactly uniform
    /// (no modulo bias). `n` must be positive.
    pub fn uniform_below(&mut self, n: u128) -> u128 {
        debug_assert!(n > 0);
        if n == 1 {
            return 0;
        }
        // Accept x < limit where limit is the largest multiple of n not exceeding 2^128 - 1.
        let limit = (u128::MAX / n) * n;
        loop {
            let x = ((self.next_u64() as u128) << 64) | self.next_u64() as u128;
            if x < limit {
                return x % n;
            }
        }
    }

    /// Next uniformly random 64-bit word.
    pub fn next_u64(&mut self) -> u64 {
        rand::Rng::next_u64(&mut self.inner)
    }
}

impl rand::TryRng for NoiseRng {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(rand::Rng::next_u32(&mut self.inner))
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(rand::Rng::next_u64(&mut self.inner))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        rand::Rng::fill_bytes(&mut self.inner, dst);
        Ok(())
    }
}

impl rand::TryCryptoRng for NoiseRng {}
