//! [`FeaturizerError`].
use super::*;

/// Errors of the featurizer crate.
#[derive(Debug, thiserror::Error)]
pub enum FeaturizerError {
    /// Reading or writing an artifact failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bytes are not a featurizer artifact (bad JSON or missing fields).
    #[error("not a featurizer artifact: {0}")]
    Parse(#[source] serde_json::Error),
    /// The artifact is of another kind or format version.
    #[error("featurizer artifact is {found}, expected {ARTIFACT_KIND} version {FORMAT_VERSION}; refit the featurizer with this version")]
    Version {
        /// What the file says it is.
        found: String,
    },
    /// The stored content hash does not match the content (the file was edited or corrupted).
    #[error("featurizer artifact content hash mismatch: file says {stored}, content hashes to {computed}")]
    HashMismatch {
        /// The hash written in the file.
        stored: String,
        /// The hash of the content as read.
        computed: String,
    },
    /// The artifact or the settings are inconsistent (e.g. vocabulary and IDF lengths differ).
    #[error("invalid featurizer: {0}")]
    Invalid(String),
    /// An error while loading a file, with the file named.
    #[error("{path}: {source}")]
    InFile {
        /// The artifact file.
        path: PathBuf,
        /// What went wrong.
        source: Box<FeaturizerError>,
    },
}
