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

/// What is wrong with a scoring input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputProblem {
    /// Not one value per index.
    #[error("{indices} indices but {values} values")]
    IndexValueCount {
        /// Indices given.
        indices: usize,
        /// Values given.
        values: usize,
    },
    /// An index past the input width.
    #[error("feature index {index} ≥ input dimension {dim}")]
    FeatureIndex {
        /// The index.
        index: u32,
        /// The model's input width.
        dim: usize,
    },
    /// Values that are not a positive number of rows.
    #[error("{values} values are not a positive number of rows of {width}")]
    NotRows {
        /// Values given.
        values: usize,
        /// The model's input width.
        width: usize,
    },
    /// A dense input of another width.
    #[error("{what} has {found} values, the model expects {expected}")]
    Width {
        /// `input` or `row i`.
        what: String,
        /// Values given.
        found: usize,
        /// The model's input width.
        expected: usize,
    },
}

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
    #[error("ONNX Runtime: {what}: {source}")]
    Ort {
        /// What was being done (`creating the session`, `scoring 3 row(s)`).
        what: String,
        /// ONNX Runtime's error.
        source: ort::Error,
    },
    /// ONNX Runtime returned an output of another shape than the graph declares.
    #[error("ONNX Runtime: output `{output}`{graph} has shape {shape}, expected {expected}")]
    OutputShape {
        /// The output's name.
        output: &'static str,
        /// Which graph (`" of the sparse graph"`, or empty).
        graph: &'static str,
        /// The shape returned.
        shape: String,
        /// The shape expected.
        expected: String,
    },
    /// The model returned NaN or infinity.
    #[error("ONNX Runtime: the model returned {0}")]
    NonFiniteScore(f32),
    /// A scoring input has the wrong shape.
    #[error("invalid scoring input: {0}")]
    Input(InputProblem),
}
