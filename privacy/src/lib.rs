//! The PATE privacy core (pure Rust, no libtorch).
//!
//! * [`rng`]: the only source of privacy noise, a ChaCha20 CSPRNG seeded from the OS (a fixed seed
//!   exists for tests and experiments only and is recorded as provenance in every artifact).
//! * [`noise`]: exact discrete Laplace / discrete Gaussian samplers for integer vote counts
//!   (Canonne, Kamath & Steinke 2020) and continuous Laplace / Gaussian for real values.
//! * [`aggregate`]: LNMax (Papernot et al. 2017), GNMax and Confident-GNMax (Papernot et al. 2018).
//! * [`privatize`]: Laplace perturbation of the student's l1-normalized features, (2ρ, 0)-local DP.
//! * [`accountant`]: the 2017 moments accountant (LNMax) and the 2018 RDP accountant (GNMax,
//!   Confident-GNMax), data-independent and data-dependent, and the smooth-sensitivity sanitization
//!   of the data-dependent value ([`smooth`]).
//! * [`shares`]: distributed GNMax noise (each organization adds its own share).
//! * [`ledger`]: the privacy ledger of a teacher set and the ε composed over it.
//! * [`report`]: the typed privacy report of a run and the whitelist that may leave it.
//! * [`votes`] and [`matrix`]: the vote file and the little-endian f32 feature-matrix file.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod accountant;
pub mod aggregate;
pub mod ledger;
pub mod matrix;
pub mod noise;
pub mod privatize;
pub mod report;
pub mod rng;
pub mod shares;
pub mod smooth;
pub mod special;
pub mod votes;

pub use accountant::{EpsilonReport, Mechanism};
pub use report::{FeaturizerProvenance, FitSide, PrivacyReport, PublishedPrivacy};
pub use rng::{NoiseRng, RngProvenance};
pub use votes::VoteMatrix;

use std::path::PathBuf;

/// Errors of the privacy crate. Every variant says what was expected and, for files, where.
#[derive(Debug, thiserror::Error)]
pub enum PrivacyError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line of a text file (vote file, label file) is malformed.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was found and what was expected.
        message: String,
    },
    /// A binary file (feature matrix) is malformed.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What was found and what was expected.
        message: String,
    },
    /// A mechanism or accountant parameter is out of its valid range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// The inputs are inconsistent with each other (e.g. vote matrix vs answered file).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The operating system could not provide entropy to seed the CSPRNG.
    #[error("cannot seed the noise generator from the operating system: {0}")]
    Entropy(String),
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, PrivacyError>;

/// Writes `bytes` to `path` atomically ([`atomic_write::write_atomic`]), with the path in the
/// error. Readers never see a partial artifact.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    atomic_write::write_atomic(path, bytes).map_err(|source| PrivacyError::Io {
        path: path.to_path_buf(),
        source,
    })
}
