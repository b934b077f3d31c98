//! Outputs of the featurizer: [`SparseVector`] and the human-readable [`Explanation`].
use super::*;

/// A sparse feature vector: strictly increasing `indices` into the vocabulary and their
/// `values`. l1-normalized (values sum to 1) or empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SparseVector {
    /// Vocabulary indices, strictly increasing.
    pub indices: Vec<u32>,
    /// Weight of each index (same length as `indices`).
    pub values: Vec<f32>,
    /// The input was longer than [`FeaturizerConfig::max_input_bytes`] and was cut.
    pub truncated: bool,
}

impl SparseVector {
    /// The dense form, of length `dim`.
    pub fn to_dense(&self, dim: usize) -> Vec<f32> {
        let mut dense = vec![0.0f32; dim];
        self.write_dense(&mut dense);
        dense
    }

    /// Writes the weights into `dense` (which the caller has zeroed), e.g. one row of a batch.
    pub fn write_dense(&self, dense: &mut [f32]) {
        for (&i, &v) in self.indices.iter().zip(&self.values) {
            if let Some(slot) = dense.get_mut(i as usize) {
                *slot = v;
            }
        }
    }

    /// Whether no token of the request is in the vocabulary.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// What the featurizer saw in one request, for humans (`pate-trainer featurize show`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The normalized text (decoded, lower-cased, possibly truncated).
    pub normalized: String,
    /// All tokens, in order.
    pub tokens: Vec<String>,
    /// Whether the input was truncated.
    pub truncated: bool,
    /// The non-zero weights, by vocabulary index.
    pub weights: Vec<TokenWeight>,
}

/// One non-zero weight of an [`Explanation`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenWeight {
    /// The vocabulary token.
    pub token: String,
    /// Its vocabulary index.
    pub index: u32,
    /// How often it occurs in the request.
    pub count: u32,
    /// Its l1-normalized TF-IDF weight.
    pub weight: f32,
}
