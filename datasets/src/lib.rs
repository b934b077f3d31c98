//! datasets crate (skeleton; filled in by its issue).
#![warn(missing_docs)]

/// Errors of the datasets crate.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// Placeholder until the crate is implemented.
    #[error("{0}")]
    Other(String),
}
