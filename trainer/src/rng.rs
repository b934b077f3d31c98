//! Where a run's randomness comes from: one master secret (OS randomness, or a recorded seed
//! for experiments only) and an independent ChaCha20 stream per purpose.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Where every random choice of a run comes from: 256 bits from the OS (the default) or, for
/// experiments only, a recorded seed. Each purpose (shards, teacher k, student, ...) gets its own
/// ChaCha20 stream derived as sha256(master ‖ purpose), so teacher k's initialization and batch
/// order do not depend on how many teachers train beside it.
pub struct RunRng {
    master: [u8; 32],
    seed: Option<u64>,
}

impl RunRng {
    /// Fresh OS randomness unless `seed` is given.
    pub fn new(seed: Option<u64>) -> Result<Self> {
        let master = match seed {
            Some(s) => {
                Sha256::digest([b"pate-waf experiment seed ".as_slice(), &s.to_le_bytes()].concat())
                    .into()
            }
            None => {
                let mut rng =
                    ChaCha20Rng::try_from_rng(&mut rand::rngs::SysRng).map_err(Error::Entropy)?;
                let mut master = [0u8; 32];
                rand::Rng::fill_bytes(&mut rng, &mut master);
                master
            }
        };
        Ok(RunRng { master, seed })
    }

    /// The random stream for `purpose`.
    pub fn stream(&self, purpose: &str) -> ChaCha20Rng {
        let digest: [u8; 32] = Sha256::new()
            .chain_update(self.master)
            .chain_update(purpose.as_bytes())
            .finalize()
            .into();
        ChaCha20Rng::from_seed(digest)
    }

    /// A child generator for a sub-task that itself calls [`RunRng::stream`] with fixed purposes
    /// (e.g. each self-training round's student): master = sha256(master ‖ "derived:" ‖ purpose),
    /// same provenance.
    pub fn derived(parent: &RunRng, purpose: &str) -> RunRng {
        let master: [u8; 32] = Sha256::new()
            .chain_update(parent.master)
            .chain_update(b"derived:")
            .chain_update(purpose.as_bytes())
            .finalize()
            .into();
        RunRng {
            master,
            seed: parent.seed,
        }
    }

    /// The privacy noise generator (the privacy crate's CSPRNG; seeded only when the run is).
    pub fn noise(&self) -> Result<privacy::NoiseRng> {
        Ok(privacy::NoiseRng::from_option(self.seed)?)
    }

    /// `{"rng": "os"}` or `{"rng": "seeded", "seed": N}`.
    pub fn provenance(&self) -> privacy::RngProvenance {
        match self.seed {
            Some(seed) => privacy::RngProvenance::Seeded { seed },
            None => privacy::RngProvenance::Os,
        }
    }
}

/// Fisher–Yates shuffle of 0..n.
pub fn shuffled(n: usize, rng: &mut impl rand::Rng) -> Vec<usize> {
    use rand::RngExt;
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.random_range(0..=i));
    }
    p
}
