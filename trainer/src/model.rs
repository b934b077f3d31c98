//! The detector's model: a fully connected network with one real-valued output (the logit of the
//! malicious probability), as in the seeds: by default 500 → 512 → 128 → 1 with ReLU (≈ 322 k
//! parameters).
//!
//! Weights live on the CPU as [`MlpWeights`] (what is saved, exported and compared) and on the
//! training device inside an [`crate::ensemble::Ensemble`], which holds N such networks stacked
//! (`[N, in, out]`), N = 1 for the student.
use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One fully connected layer `y = W x + b`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DenseWeights {
    /// Input width.
    pub in_dim: usize,
    /// Output width.
    pub out_dim: usize,
    /// Row-major `[out_dim][in_dim]` (the PyTorch `nn.Linear` and ONNX `Gemm(transB=1)` layout).
    pub weight: Vec<f32>,
    /// `[out_dim]`.
    pub bias: Vec<f32>,
}

/// The weights of one network: ReLU between layers, the last layer has one output (a logit;
/// the probability is its sigmoid).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlpWeights {
    /// The layers, input first.
    pub layers: Vec<DenseWeights>,
}

impl MlpWeights {
    /// Layer widths, input first, ending in 1.
    pub fn dims(&self) -> Vec<usize> {
        let mut dims = vec![self.layers.first().map_or(0, |l| l.in_dim)];
        dims.extend(self.layers.iter().map(|l| l.out_dim));
        dims
    }

    /// Random initial weights for the layer widths `dims` (input first, ending in 1): every weight
    /// and bias uniform in ±1/√fan_in, PyTorch's `nn.Linear` default (He et al. 2015, "Delving Deep
    /// into Rectifiers", §2.2, with a = √5 as torch uses), drawn from `rng` so that a teacher's
    /// initialization depends only on its own random stream, not on how many teachers train along.
    pub fn init(dims: &[usize], rng: &mut impl Rng) -> Self {
        let layers = dims
            .windows(2)
            .map(|w| {
                let (in_dim, out_dim) = (w[0], w[1]);
                let bound = 1.0 / (in_dim as f32).sqrt();
                let mut draw = |n: usize| {
                    (0..n)
                        .map(|_| rng.random_range(-bound..bound))
                        .collect::<Vec<f32>>()
                };
                let weight = draw(in_dim * out_dim);
                let bias = draw(out_dim);
                DenseWeights {
                    in_dim,
                    out_dim,
                    weight,
                    bias,
                }
            })
            .collect();
        MlpWeights { layers }
    }

    /// Checks that consecutive layers fit and every buffer has its declared size.
    pub fn validate(&self) -> Result<()> {
        if self.layers.is_empty() {
            return Err(Error::Invalid("a model needs at least one layer".into()));
        }
        for (i, l) in self.layers.iter().enumerate() {
            if l.weight.len() != l.in_dim * l.out_dim || l.bias.len() != l.out_dim {
                return Err(Error::Invalid(format!(
                    "layer {i}: weight has {} values and bias {} for {}x{} (expected {} and {})",
                    l.weight.len(),
                    l.bias.len(),
                    l.out_dim,
                    l.in_dim,
                    l.in_dim * l.out_dim,
                    l.out_dim
                )));
            }
            if i > 0 && self.layers[i - 1].out_dim != l.in_dim {
                return Err(Error::Invalid(format!(
                    "layer {i} takes {} inputs but layer {} gives {}",
                    l.in_dim,
                    i - 1,
                    self.layers[i - 1].out_dim
                )));
            }
        }
        if self.layers.last().map(|l| l.out_dim) != Some(1) {
            return Err(Error::Invalid(
                "the last layer must have exactly one output".into(),
            ));
        }
        Ok(())
    }

    /// Number of trainable parameters.
    pub fn parameter_count(&self) -> usize {
        self.layers
            .iter()
            .map(|l| l.weight.len() + l.bias.len())
            .sum()
    }

    /// The malicious probability of one feature row, computed in plain Rust (f32, no libtorch):
    /// a reference for tests and a fallback for tiny inputs.
    pub fn score_row(&self, x: &[f32]) -> f32 {
        let mut h = x.to_vec();
        for (i, l) in self.layers.iter().enumerate() {
            let mut out = l.bias.clone();
            for (o, out_v) in out.iter_mut().enumerate() {
                let row = &l.weight[o * l.in_dim..(o + 1) * l.in_dim];
                *out_v += row.iter().zip(&h).map(|(w, v)| w * v).sum::<f32>();
            }
            if i + 1 < self.layers.len() {
                out.iter_mut().for_each(|v| *v = v.max(0.0));
            }
            h = out;
        }
        1.0 / (1.0 + (-h[0]).exp())
    }
}
