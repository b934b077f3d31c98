//! The student evaluated natively on the featurizer's sparse vector, for the proxy's per-request
//! path.
//!
//! Why not ONNX Runtime per request: `cargo bench -p proxy --bench score` measured ORT's per-call
//! floor at 4–5.5 µs (a 500→1 network: input/output tensor wrapping, the run's bookkeeping,
//! output allocation), above the whole 5 µs budget of featurize + score. The network is small and
//! its input has tens of non-zeros of K = 500, so a plain forward pass that skips zeros is
//! ≈ nnz·H1 + (non-zero H1 activations)·H2 + H2 multiply-adds: ≈ 1 µs for 500→512→128→1.
//!
//! Same network, same maths as `model.onnx` (the [`Mlp`] decoded from it): layer `l` computes
//! `y = W_l·x + b_l` (ReLU between layers, sigmoid at the end; ONNX `Gemm` with `transB = 1`,
//! see [`crate::onnx`]). Written column-wise, `W·x = Σ_{j : x_j ≠ 0} x_j · W[:, j]`: every term
//! dropped is an exact `0 · w = 0` (weights are finite, [`Mlp::validate`]), so only the order of
//! the float additions differs from ONNX Runtime's dense `Gemm`: scores agree to rounding
//! (≈1e-7; the tests hold it to 1e-6), not bit for bit. The proxy checks this against ONNX
//! Runtime every time it loads a bundle.
use std::cell::RefCell;

use crate::onnx::{sigmoid, Mlp};
use crate::{BundleError, InputProblem};

/// One layer with its weights transposed: row `j` of `weight_t` is column `j` of `W`, i.e. the
/// weights from input `j` to every output (contiguous, so `y += x_j · row` vectorizes).
#[derive(Debug, Clone)]
pub(crate) struct TransposedLayer {
    pub(crate) in_dim: usize,
    pub(crate) out_dim: usize,
    /// Row-major `[in_dim][out_dim]`.
    pub(crate) weight_t: Vec<f32>,
    pub(crate) bias: Vec<f32>,
}

/// A validated MLP laid out for sparse-input scoring (see the module documentation).
#[derive(Debug, Clone)]
pub struct SparseMlp {
    pub(crate) layers: Vec<TransposedLayer>,
}

thread_local! {
    /// Two activation buffers and the active (non-zero) positions, per thread, reused across
    /// calls (no allocation per request).
    static ACTIVATIONS: RefCell<(Vec<f32>, Vec<f32>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new(), Vec::new())) };
}

/// Output floats per register-accumulated block of a hidden layer (4 SSE / 2 AVX registers).
const BLOCK: usize = 16;

impl SparseMlp {
    /// Lays out a validated copy of `mlp`'s weights for sparse scoring.
    pub fn new(mlp: &Mlp) -> Result<Self, BundleError> {
        mlp.validate()?;
        let layers = mlp
            .layers
            .iter()
            .map(|layer| {
                let mut weight_t = vec![0.0f32; layer.weight.len()];
                for (o, row) in layer.weight.chunks_exact(layer.in_dim).enumerate() {
                    for (i, &w) in row.iter().enumerate() {
                        weight_t[i * layer.out_dim + o] = w;
                    }
                }
                TransposedLayer {
                    in_dim: layer.in_dim,
                    out_dim: layer.out_dim,
                    weight_t,
                    bias: layer.bias.clone(),
                }
            })
            .collect();
        Ok(SparseMlp { layers })
    }

    /// Width of the input (`K`).
    pub fn input_dim(&self) -> usize {
        self.layers[0].in_dim
    }

    /// Malicious probability of one sparse feature vector: the value at `indices[j]` is
    /// `values[j]`, every other feature is 0; a repeated index adds its values (as
    /// [`crate::Scorer::score_sparse`] does). Thread-safe (`&self`), allocation-free after a
    /// thread's first call.
    pub fn score(&self, indices: &[u32], values: &[f32]) -> Result<f32, BundleError> {
        if indices.len() != values.len() {
            return Err(BundleError::Input(InputProblem::IndexValueCount {
                indices: indices.len(),
                values: values.len(),
            }));
        }
        let first = &self.layers[0];
        if let Some(&i) = indices.iter().find(|&&i| i as usize >= first.in_dim) {
            return Err(BundleError::Input(InputProblem::FeatureIndex {
                index: i,
                dim: first.in_dim,
            }));
        }
        ACTIVATIONS.with(|buffers| {
            let mut buffers = buffers.borrow_mut();
            let (current, next, active) = &mut *buffers;
            // Layer 0: b + Σ_j values[j] · W[:, indices[j]].
            first.accumulate(indices, values, current);
            for layer in &self.layers[1..] {
                relu(current);
                // After ReLU about half the activations are exactly 0: keep the others (moved to
                // the front of `current`, with their positions in `active`).
                active.clear();
                let mut kept = 0;
                for j in 0..current.len() {
                    let a = current[j];
                    if a != 0.0 {
                        current[kept] = a;
                        active.push(j as u32);
                        kept += 1;
                    }
                }
                current.truncate(kept);
                layer.accumulate(active, current, next);
                std::mem::swap(current, next);
            }
            // The last layer has out_dim 1 (validated): one logit.
            Ok(sigmoid(current[0]))
        })
    }
}

impl TransposedLayer {
    /// `out = b + Σ_j values[j] · W[:, inputs[j]]` (inputs < `in_dim`, checked by the caller or
    /// by construction). Output blocks of [`BLOCK`] floats accumulate in registers over every
    /// input (the block stays out of memory until it is done); the tail goes input by input.
    pub(crate) fn accumulate(&self, inputs: &[u32], values: &[f32], out: &mut Vec<f32>) {
        out.clear();
        out.extend_from_slice(&self.bias);
        let blocks = self.out_dim / BLOCK * BLOCK;
        for start in (0..blocks).step_by(BLOCK) {
            let mut acc = [0.0f32; BLOCK];
            acc.copy_from_slice(&out[start..start + BLOCK]);
            for (&j, &a) in inputs.iter().zip(values) {
                let offset = j as usize * self.out_dim + start;
                let w = &self.weight_t[offset..offset + BLOCK];
                for k in 0..BLOCK {
                    acc[k] += a * w[k];
                }
            }
            out[start..start + BLOCK].copy_from_slice(&acc);
        }
        if blocks < self.out_dim {
            for (&j, &a) in inputs.iter().zip(values) {
                let row =
                    &self.weight_t[j as usize * self.out_dim..(j as usize + 1) * self.out_dim];
                axpy(&mut out[blocks..], a, &row[blocks..]);
            }
        }
    }
}

/// `y += a · x` (lengths equal by construction).
#[inline]
fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

#[inline]
fn relu(values: &mut [f32]) {
    for v in values {
        *v = v.max(0.0);
    }
}
