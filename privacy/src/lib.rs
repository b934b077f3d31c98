//! privacy crate (skeleton; filled in by its issue).
#![warn(missing_docs)]

/// Errors of the privacy crate.
#[derive(Debug, thiserror::Error)]
pub enum PrivacyError {
    /// Placeholder until the crate is implemented.
    #[error("{0}")]
    Other(String),
}
