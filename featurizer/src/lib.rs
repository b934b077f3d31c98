//! featurizer crate (skeleton; filled in by its issue).
#![warn(missing_docs)]

/// Errors of the featurizer crate.
#[derive(Debug, thiserror::Error)]
pub enum FeaturizerError {
    /// Placeholder until the crate is implemented.
    #[error("{0}")]
    Other(String),
}
