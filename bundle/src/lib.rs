//! The deployable model bundle: the student MLP encoded as ONNX (`model.onnx`, built with
//! `prost`), the featurizer artifact it was trained with (`featurizer.json`), and a manifest
//! (`bundle.yaml`: threshold, the privacy whitelist, student metrics, sha256 of every file); written atomically,
//! loaded with every hash checked, and scored through ONNX Runtime.
#![forbid(unsafe_code)]

use std::path::PathBuf;

pub mod encoding;
pub mod explain;
mod manifest;
pub mod onnx;
pub mod proto;
pub mod request;
pub mod runtime;
pub mod sparse;

pub use explain::{
    explain_vector, explain_vector_segmented, Attribution, Contribution, Explanation, ScoredVector,
};
pub use manifest::{
    is_block, rfc3339_utc, sha256_hex, write_bundle, write_recalibrated, Bundle, BundleContents,
    Manifest, ModelSummary, PrivacyLabels, PublishedPrivacy, Recalibration, ThresholdSource,
    FEATURIZER_FILE, FORMAT_VERSION, MANIFEST_FILE, MODEL_FILE, PART_MODEL_FILE,
};
pub use onnx::{decode_onnx, encode_onnx, encode_sparse_onnx, Dense, Mlp};
pub use request::{
    score_request, score_request_and_parts, score_request_segmented, PartOffsets, RequestScore,
};
pub use runtime::{init_onnxruntime, Scorer};
pub use sparse::SparseMlp;

/// What is wrong with a network or `model.onnx`.
#[derive(Debug, thiserror::Error)]
pub enum ModelProblem {
    /// A layer is not a valid dense layer.
    #[error("layer {layer}: {problem}")]
    Layer {
        /// The 0-based layer.
        layer: usize,
        /// What is wrong.
        problem: LayerProblem,
    },
    /// No layers.
    #[error("the network has no layers")]
    NoLayers,
    /// Layers that do not chain.
    #[error(
        "layer {layer}: in_dim {in_dim} does not match layer {previous}'s out_dim {previous_out}"
    )]
    Chain {
        /// The layer.
        layer: usize,
        /// Its in_dim.
        in_dim: usize,
        /// The layer before.
        previous: usize,
        /// Its out_dim.
        previous_out: usize,
    },
    /// A last layer of more than one output.
    #[error("layer {layer} (the last) must have out_dim 1 (one logit), got {out_dim}")]
    LastWidth {
        /// The last layer.
        layer: usize,
        /// Its out_dim.
        out_dim: usize,
    },
    /// `model.onnx` is not protobuf.
    #[error("model.onnx: not an ONNX ModelProto: {0}")]
    Decode(#[source] prost::DecodeError),
    /// `model.onnx` is not the graph `encode_onnx` writes (the decoder says where it differs).
    #[error("model.onnx: {0}")]
    Graph(String),
    /// `model.onnx` decodes to an invalid network.
    #[error("model.onnx: {0}")]
    GraphNetwork(Box<ModelProblem>),
    /// A threshold that is not a probability.
    #[error("threshold {0} is not a probability in [0, 1]")]
    Threshold(f32),
    /// Offsets of the part model's scores without a part model.
    #[error("part_model_offsets without a part model: they shift the part model's scores")]
    OffsetsWithoutPartModel,
    /// Featurizer and model of different widths.
    #[error("the featurizer has dimension {featurizer} but the model's input has {model}")]
    Dimension {
        /// The featurizer's dimension.
        featurizer: usize,
        /// The model's input width.
        model: usize,
    },
    /// The ONNX Runtime session does not have the model's input and output.
    #[error("model.onnx must have one input `{input}` and one output `{output}`")]
    SessionNames {
        /// The input name expected.
        input: &'static str,
        /// The output name expected.
        output: &'static str,
    },
    /// The warm-up run gave NaN or infinity.
    #[error("warm-up run scored the zero vector as {0}")]
    WarmUp(f32),
    /// The sparse and dense graphs disagree.
    #[error("the sparse graph scored the zero vector {sparse}, the dense graph {dense}")]
    SparseDense {
        /// The sparse graph's score.
        sparse: f32,
        /// The dense graph's score.
        dense: f32,
    },
}

/// What is wrong with one dense layer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LayerProblem {
    /// A zero dimension.
    #[error("dimensions must be positive, got in_dim={in_dim} out_dim={out_dim}")]
    ZeroDimension {
        /// in_dim.
        in_dim: usize,
        /// out_dim.
        out_dim: usize,
    },
    /// More weights than fit in memory.
    #[error("{out_dim}×{in_dim} weights are too many")]
    TooLarge {
        /// in_dim.
        in_dim: usize,
        /// out_dim.
        out_dim: usize,
    },
    /// A weight buffer of another length.
    #[error("weight has {found} values, expected out_dim×in_dim = {out_dim}×{in_dim} = {}", out_dim * in_dim)]
    WeightLength {
        /// Values given.
        found: usize,
        /// out_dim.
        out_dim: usize,
        /// in_dim.
        in_dim: usize,
    },
    /// A bias buffer of another length.
    #[error("bias has {found} values, expected out_dim = {out_dim}")]
    BiasLength {
        /// Values given.
        found: usize,
        /// out_dim.
        out_dim: usize,
    },
    /// A NaN or infinite weight.
    #[error("weight[{index}] is not finite ({value})")]
    Weight {
        /// Its position.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// A NaN or infinite bias.
    #[error("bias[{index}] is not finite ({value})")]
    Bias {
        /// Its position.
        index: usize,
        /// Its value.
        value: f32,
    },
}

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
    InvalidModel(ModelProblem),
    /// A bundle's `model.onnx` is not a valid model (the directory named).
    #[error("{}: {source}", dir.display())]
    InBundle {
        /// The bundle directory.
        dir: PathBuf,
        /// What is wrong with its model.
        source: Box<BundleError>,
    },
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
