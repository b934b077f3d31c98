//! bundle crate (skeleton; filled in by its issue).
#![warn(missing_docs)]

/// Errors of the bundle crate.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// Placeholder until the crate is implemented.
    #[error("{0}")]
    Other(String),
}
