//! The deployable model bundle: the student MLP encoded as ONNX (`model.onnx`, built with
//! `prost`), the featurizer artifact it was trained with (`featurizer.json`), and a manifest
//! (`bundle.yaml`: threshold, the privacy whitelist, student metrics, sha256 of every file); written atomically,
//! loaded with every hash checked, and scored through ONNX Runtime.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::path::PathBuf;

mod manifest;
pub mod onnx;
pub mod proto;
pub mod request;
pub mod runtime;
pub mod sparse;

pub use manifest::{
    is_block, rfc3339_utc, sha256_hex, write_bundle, Bundle, BundleContents, Manifest,
    ModelSummary, PrivacyLabels, PublishedPrivacy, FEATURIZER_FILE, FORMAT_VERSION, MANIFEST_FILE,
    MODEL_FILE,
};
pub use onnx::{decode_onnx, encode_onnx, encode_sparse_onnx, Dense, Mlp};
pub use request::{score_request, RequestScore};
pub use runtime::{init_onnxruntime, Scorer};
pub use sparse::SparseMlp;

/// Errors of the bundle crate; each names the file or the layer concerned.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `bundle.yaml` is malformed, of another version, or disagrees with the files.
    #[error("{path}: {message}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The network (or `model.onnx`) is not a valid MLP of the expected shape.
    #[error("invalid model: {0}")]
    InvalidModel(String),
    /// The featurizer artifact was rejected.
    #[error("{path}: {source}")]
    Featurizer {
        /// The artifact file.
        path: PathBuf,
        /// The featurizer's error.
        source: featurizer::FeaturizerError,
    },
    /// The ONNX Runtime library cannot be found or loaded.
    #[error("ONNX Runtime library {}: {reason}", if path.as_os_str().is_empty() { "(none)".to_string() } else { format!("`{}`", path.display()) })]
    OrtLibrary {
        /// The library path tried (empty when none was found).
        path: PathBuf,
        /// What went wrong and how to fix it.
        reason: String,
    },
    /// ONNX Runtime reported an error.
    #[error("ONNX Runtime: {0}")]
    Ort(String),
    /// A scoring input has the wrong shape.
    #[error("invalid scoring input: {0}")]
    Input(String),
}
