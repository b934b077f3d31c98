//! The experiments' one error type.
use std::path::PathBuf;

/// Everything that can go wrong in `pate-experiments`. Each variant names what and where and
/// keeps the underlying error as its source.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trainer's stages, which the sweep calls, failed.
    #[error(transparent)]
    Trainer(#[from] trainer::Error),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A sweep file is invalid.
    #[error("invalid configuration: {path}: {source}")]
    ConfigFile {
        /// The sweep file.
        path: PathBuf,
        /// What is wrong in it.
        source: Box<Error>,
    },
    /// A sweep file's base config is invalid.
    #[error("{sweep}: its base config: {source}")]
    BaseConfig {
        /// The base config.
        base: PathBuf,
        /// The sweep file naming it.
        sweep: PathBuf,
        /// What is wrong in it.
        source: Box<trainer::Error>,
    },
    /// The YAML does not parse or does not match the schema (serde_yaml's message names the key,
    /// the line and the column).
    #[error("{0}")]
    ConfigYaml(#[from] serde_yaml::Error),
    /// A sweep key has a value it cannot have.
    #[error("{key}: {reason}")]
    ConfigKey {
        /// The key (`experiments[2].teachers`).
        key: String,
        /// What was expected.
        reason: String,
    },
    /// A command line or a combination of settings is invalid (a usage error without a typed
    /// variant).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A command-line flag has a value it cannot have.
    #[error("invalid configuration: --{flag} {value}: {problem}")]
    FlagValue {
        /// The flag (without `--`).
        flag: &'static str,
        /// The value given, quoted.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A numeric command-line flag is out of its range.
    #[error("invalid configuration: --{flag} must be {expected}")]
    FlagRange {
        /// The flag (without `--`).
        flag: &'static str,
        /// Its range (`at least 1`, `1-64`).
        expected: &'static str,
    },
    /// A result the sweep computed is missing when the tables are written.
    #[error("{path}: missing or unreadable result")]
    MissingResult {
        /// The result file.
        path: PathBuf,
    },
    /// One repeat of a sweep cell failed.
    #[error("{cell} repeat {repeat}: {source}")]
    Cell {
        /// The cell.
        cell: String,
        /// The repeat.
        repeat: usize,
        /// What failed.
        source: Box<Error>,
    },
    /// A sweep unit of the wrong kind reached a computation (a bug).
    #[error("internal: {0}")]
    Internal(&'static str),
    /// The replay target stopped answering.
    #[error(
        "replay to {addr}: {failures} requests in a row got no response, stopping (last: {last})"
    )]
    ReplayStalled {
        /// The target.
        addr: std::net::SocketAddr,
        /// Consecutive failures.
        failures: usize,
        /// The last one.
        last: String,
    },
    /// The privacy core rejected an input.
    #[error(transparent)]
    Privacy(#[from] privacy::PrivacyError),
    /// A dataset could not be loaded.
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

/// The experiments' result type.
pub type Result<T> = std::result::Result<T, Error>;
