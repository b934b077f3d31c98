//! The PATE privacy core (pure Rust, no libtorch).
//!
//! * [`rng`]: the only source of privacy noise, a ChaCha20 CSPRNG seeded from the OS (a fixed seed
//!   exists for tests and experiments only and is recorded as provenance in every artifact).
//! * [`noise`]: exact discrete Laplace / discrete Gaussian samplers for integer vote counts
//!   (Canonne, Kamath & Steinke 2020) and continuous Laplace / Gaussian for real values.
//! * [`aggregate`]: LNMax (Papernot et al. 2017), GNMax and Confident-GNMax (Papernot et al. 2018).
//! * [`average`]: model averaging, one Gaussian release of the teachers' clipped linear models.
//! * [`privatize`]: Laplace perturbation of the student's l1-normalized features, (2ρ, 0)-local DP.
//! * [`accountant`]: the 2017 moments accountant (LNMax) and the 2018 RDP accountant (GNMax,
//!   Confident-GNMax), data-independent and data-dependent, and the smooth-sensitivity sanitization
//!   of the data-dependent value ([`smooth`]).
//! * [`shares`]: distributed GNMax noise (each organization adds its own share).
//! * [`ledger`]: the privacy ledger of a teacher set and the ε composed over it.
//! * [`report`]: the typed privacy report of a run and the whitelist that may leave it.
//! * [`votes`] and [`matrix`]: the vote file and the little-endian f32 feature-matrix file.
#![forbid(unsafe_code)]

pub mod accountant;
pub mod aggregate;
pub mod average;
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
    #[error("invalid parameter: {name} {reason}")]
    Parameter {
        /// The parameter (`gamma`, `delta`, `RDP orders α`, ...).
        name: &'static str,
        /// What it must be, and what it is (`must be in (0, 1), got 2`).
        reason: String,
    },
    /// A vote row of fewer than two classes.
    #[error("invalid input: a vote row needs at least 2 classes, got {0}")]
    TooFewClasses(usize),
    /// Vote rows of different widths.
    #[error("invalid input: vote row {row} has {found} classes, expected {expected}")]
    RowClasses {
        /// The 0-based row.
        row: usize,
        /// Its classes.
        found: usize,
        /// The first row's.
        expected: usize,
    },
    /// A query without classes.
    #[error("invalid input: a query has no classes")]
    NoClasses,
    /// A vote matrix without queries.
    #[error("invalid input: the vote matrix has no queries")]
    NoQueries,
    /// An answered list of another length than the votes.
    #[error("invalid input: the answered list has {answered} entries but the vote file has {queries} queries")]
    AnsweredLength {
        /// Entries of the answered list.
        answered: usize,
        /// Queries of the vote file.
        queries: usize,
    },
    /// The answered list answers more queries than the mechanism's `max_answered` allows (it is
    /// not the output of this mechanism).
    #[error("the answered list answers {answered} queries, more than max_answered = {cap}")]
    AnsweredOverCap {
        /// Answered entries of the list.
        answered: usize,
        /// The mechanism's cap.
        cap: usize,
    },
    /// A computation gave a non-finite number.
    #[error("invalid input: {step} produced a non-finite {quantity} ({value})")]
    NonFinite {
        /// `accounting` or `sanitization`.
        step: &'static str,
        /// What (`data_dependent_epsilon`, ...).
        quantity: &'static str,
        /// The value.
        value: f64,
    },
    /// A feature vector with NaN or infinity.
    #[error("invalid input: a feature vector holds NaN or infinity")]
    NonFiniteFeatures,
    /// Values that are not whole rows.
    #[error("invalid input: {values} values are not rows of {cols} columns")]
    NotRows {
        /// Values given.
        values: usize,
        /// Columns per row.
        cols: usize,
    },
    /// A matrix whose values do not fill rows × cols.
    #[error("invalid input: matrix of {rows}×{cols} needs {} values, got {values}", rows.saturating_mul(*cols))]
    MatrixSize {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// Values given.
        values: usize,
    },
    /// A matrix row of another length.
    #[error("invalid input: row {row} has {found} values, expected {expected}")]
    RowLength {
        /// The 0-based row.
        row: usize,
        /// Its values.
        found: usize,
        /// Columns.
        expected: usize,
    },
    /// No vote share given.
    #[error("invalid input: no vote shares")]
    NoShares,
    /// Vote shares drawn with other parameters.
    #[error("invalid input: {path} has sigma={sigma} organizations={organizations}, {first} has sigma={first_sigma} organizations={first_organizations}: the shares of one aggregation must agree")]
    ShareParameters {
        /// This share.
        path: PathBuf,
        /// Its σ.
        sigma: f64,
        /// Its organizations.
        organizations: usize,
        /// The first share.
        first: PathBuf,
        /// Its σ.
        first_sigma: f64,
        /// Its organizations.
        first_organizations: usize,
    },
    /// Vote shares on other queries.
    #[error("invalid input: {path} has {queries} queries, {first} has {first_queries}: every organization must vote on the same queries")]
    ShareQueries {
        /// This share.
        path: PathBuf,
        /// Its queries.
        queries: usize,
        /// The first share.
        first: PathBuf,
        /// Its queries.
        first_queries: usize,
    },
    /// Vote shares with other classes.
    #[error("invalid input: {path} has {classes} classes, {first} has {first_classes}")]
    ShareClasses {
        /// This share.
        path: PathBuf,
        /// Its classes.
        classes: usize,
        /// The first share.
        first: PathBuf,
        /// Its classes.
        first_classes: usize,
    },
    /// Fewer (or more) shares than organizations.
    #[error("invalid input: {given} vote shares given but they were drawn for organizations={organizations}: with fewer, the noise is smaller than σ and the accounting would not hold")]
    ShareCount {
        /// Shares given.
        given: usize,
        /// Organizations they were drawn for.
        organizations: usize,
    },
    /// A value could not be written as JSON.
    #[error("{what}: {source}")]
    Serialize {
        /// What was being written.
        what: &'static str,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// The operating system could not provide entropy to seed the CSPRNG.
    #[error("cannot seed the noise generator from the operating system: {0}")]
    Entropy(#[source] rand::rngs::SysError),
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
