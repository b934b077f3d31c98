//! The proxy crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in `pate-proxy` outside the per-request path (which never fails
/// a request because of an error: it follows `on_error`).
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The configuration file is invalid; `message` names the key.
    #[error("config {}: {message}", path.display())]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bundle could not be loaded or verified.
    #[error("bundle {}: {message}", path.display())]
    Bundle {
        /// The bundle directory.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Scoring one request failed (featurizer output or ONNX Runtime).
    #[error("scoring failed: {0}")]
    Scoring(String),
    /// A metric could not be registered (a programming error caught at start-up).
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// `POST /promote` had nothing (or not the observed bundle) to promote.
    #[error("promote: {0}")]
    Promote(String),
    /// pingora could not be set up.
    #[error("server: {0}")]
    Server(String),
}
