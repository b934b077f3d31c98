//! Dense row-major f32 feature matrices (one row per request, K = featurizer dimension columns):
//! the privacy crate's [`privacy::matrix::F32Matrix`], the one matrix type of the workspace,
//! under the name the trainer's stages use.
pub use privacy::matrix::F32Matrix as DenseMatrix;
