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
    /// The bundle does not pass the proxy's checks (dimensions, scorer vs ONNX Runtime).
    #[error("bundle {}: {message}", path.display())]
    Bundle {
        /// The bundle directory.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The bundle could not be loaded, or its scorer built or run (`what`: which step).
    #[error("bundle {}: {what}{source}", path.display())]
    BundleLoad {
        /// The bundle directory.
        path: PathBuf,
        /// The step (`""` for loading, `"ONNX Runtime check, e_3: "`, ...).
        what: String,
        /// The bundle crate's error.
        source: Box<bundle::BundleError>,
    },
    /// The warm-up request of a freshly loaded bundle failed.
    #[error("bundle {}: warm-up: {source}", path.display())]
    WarmUp {
        /// The bundle directory.
        path: PathBuf,
        /// The scoring error.
        source: Box<ProxyError>,
    },
    /// Scoring one request failed (featurizer output or ONNX Runtime).
    #[error("scoring failed: {0}")]
    Scoring(#[source] Box<bundle::BundleError>),
    /// A request arrived with no model loaded.
    #[error("scoring failed: no model loaded")]
    NoModel,
    /// The model returned NaN or infinity.
    #[error("scoring failed: the model returned {0}")]
    NonFiniteScore(f32),
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
