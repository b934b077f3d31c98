//! The trainer's one error type.
use std::path::PathBuf;

/// Everything that can go wrong in `pate-trainer`. Each variant names what and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON artifact could not be read as what it should be.
    #[error("{path}: not valid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error (line and column).
        source: serde_json::Error,
    },
    /// A configuration file or a command-line value is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// An input (dataset, vote file, artifact) is not what was expected.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The featurizer failed.
    #[error(transparent)]
    Featurizer(#[from] featurizer::FeaturizerError),
    /// A dataset could not be loaded.
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    /// The privacy core rejected an input.
    #[error(transparent)]
    Privacy(#[from] privacy::PrivacyError),
    /// A bundle could not be written or loaded.
    #[error(transparent)]
    Bundle(#[from] bundle::BundleError),
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

/// The trainer's result type.
pub type Result<T> = std::result::Result<T, Error>;
