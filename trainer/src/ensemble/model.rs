//! The batched [`Ensemble`]: N networks stacked as `[N, in, out]` layers, and its scoring.
use rand::Rng;
use tch::{Device, Kind, Tensor};

use super::rows::{shared_sparse_rows, Rows};
use crate::dense::DenseMatrix;
use crate::error::{EnsembleProblem, Error, Result};
use crate::model::{Dense, Mlp};

/// Upper bound on the floats of one intermediate activation tensor when scoring in chunks.
pub(super) const CHUNK_ELEMENTS: usize = 1 << 23;

/// N networks of the same shape, stacked on one device.
pub struct Ensemble {
    pub(super) device: Device,
    pub(super) dims: Vec<usize>,
    /// Layer l: `[N, dims[l], dims[l+1]]`.
    pub(super) weights: Vec<Tensor>,
    /// Layer l: `[N, 1, dims[l+1]]`.
    pub(super) biases: Vec<Tensor>,
}

impl std::fmt::Debug for Ensemble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ensemble")
            .field("members", &self.len())
            .field("dims", &self.dims)
            .field("device", &self.device)
            .finish()
    }
}

impl Ensemble {
    /// Stacks `members` (all of the same shape) onto `device`.
    pub fn from_members(members: &[Mlp], device: Device) -> Result<Self> {
        let first = members
            .first()
            .ok_or(Error::Ensemble(EnsembleProblem::NoMembers))?;
        let dims = first.dims();
        for (k, m) in members.iter().enumerate() {
            m.validate().map_err(|source| Error::Network {
                what: format!("member {k}"),
                source: Box::new(source),
            })?;
            if m.dims() != dims {
                return Err(Error::Ensemble(EnsembleProblem::Widths {
                    member: k,
                    widths: m.dims(),
                    first: dims,
                }));
            }
        }
        let n = members.len() as i64;
        let mut weights = Vec::new();
        let mut biases = Vec::new();
        for l in 0..dims.len() - 1 {
            let (i, o) = (dims[l] as i64, dims[l + 1] as i64);
            // Stored [out][in]; the batched layer multiplies by [in, out].
            let mut w = Vec::with_capacity(members.len() * (i * o) as usize);
            let mut b = Vec::with_capacity(members.len() * o as usize);
            for m in members {
                w.extend_from_slice(&m.layers[l].weight);
                b.extend_from_slice(&m.layers[l].bias);
            }
            let w = Tensor::from_slice(&w)
                .view([n, o, i])
                .transpose(1, 2)
                .contiguous()
                .to_device(device);
            let b = Tensor::from_slice(&b).view([n, 1, o]).to_device(device);
            weights.push(w);
            biases.push(b);
        }
        Ok(Ensemble {
            device,
            dims,
            weights,
            biases,
        })
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.weights[0].size()[0] as usize
    }

    /// Always false: an ensemble has at least one member.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Layer widths, input first.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The device the weights live on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Copies every member's weights back to the CPU.
    pub fn members(&self) -> Result<Vec<Mlp>> {
        let n = self.len();
        let mut members = vec![Mlp { layers: Vec::new() }; n];
        for l in 0..self.weights.len() {
            let (i, o) = (self.dims[l], self.dims[l + 1]);
            let w = Vec::<f32>::try_from(
                self.weights[l]
                    .transpose(1, 2)
                    .contiguous()
                    .to_device(Device::Cpu)
                    .view([-1]),
            )?;
            let b = Vec::<f32>::try_from(
                self.biases[l]
                    .to_device(Device::Cpu)
                    .contiguous()
                    .view([-1]),
            )?;
            for (k, m) in members.iter_mut().enumerate() {
                m.layers.push(Dense {
                    in_dim: i,
                    out_dim: o,
                    weight: w[k * i * o..(k + 1) * i * o].to_vec(),
                    bias: b[k * o..(k + 1) * o].to_vec(),
                });
            }
        }
        Ok(members)
    }

    /// Logits `[N, B]` of per-member batches `x: [N, B, in]`.
    fn logits(&self, x: &Tensor) -> Tensor {
        let last = self.weights.len() - 1;
        let mut h = x.shallow_clone();
        for (l, (w, b)) in self.weights.iter().zip(&self.biases).enumerate() {
            h = h.bmm(w) + b;
            if l < last {
                h = h.relu();
            }
        }
        h.squeeze_dim(-1)
    }

    /// Logits `[N, B]` of per-member rows, dense or sparse.
    pub(super) fn logits_rows(&self, rows: &Rows) -> Tensor {
        match rows {
            Rows::Dense(x) => self.logits(x),
            Rows::Sparse {
                index,
                value,
                n,
                b,
                width,
            } => {
                let out = self.dims[1] as i64;
                let bags = n * b;
                let offsets =
                    Tensor::arange_start_step(0, bags * width, *width, (Kind::Int64, self.device));
                // Mode 0 = sum: Σⱼ valueⱼ · W[indexⱼ] over each row's entries.
                let (first, _, _, _) = Tensor::embedding_bag(
                    &self.weights[0].view([-1, out]),
                    index,
                    &offsets,
                    false,
                    0,
                    false,
                    Some(value),
                    false,
                );
                let mut h = first.view([*n, *b, out]) + &self.biases[0];
                for l in 1..self.weights.len() {
                    h = h.relu();
                    h = h.bmm(&self.weights[l]) + &self.biases[l];
                }
                h.squeeze_dim(-1)
            }
        }
    }

    /// Logits `[N, B]` of every member on the same rows `x: [B, in]`.
    fn logits_shared(&self, x: &Tensor) -> Tensor {
        let last = self.weights.len() - 1;
        // [B, in] @ [N, in, out] broadcasts to [N, B, out] without copying x N times.
        let mut h = x.matmul(&self.weights[0]) + &self.biases[0];
        for l in 1..=last {
            h = h.relu();
            h = h.bmm(&self.weights[l]) + &self.biases[l];
        }
        if last == 0 {
            return h.squeeze_dim(-1);
        }
        h.squeeze_dim(-1)
    }

    /// Malicious probabilities of every member on every row of `x`: `result[k][r]`.
    pub fn scores(&self, x: &DenseMatrix) -> Result<Vec<Vec<f32>>> {
        self.scores_with(x, |_| {})
    }

    /// [`Ensemble::scores`], calling `rows_done` with the number of rows scored after each chunk.
    pub fn scores_with(
        &self,
        x: &DenseMatrix,
        mut rows_done: impl FnMut(usize),
    ) -> Result<Vec<Vec<f32>>> {
        if x.cols != self.dims[0] {
            return Err(Error::FeatureWidth {
                what: "the matrix".into(),
                found: x.cols,
                of: "the model".into(),
                expected: self.dims[0],
            });
        }
        let n = self.len();
        let widest = *self.dims.iter().max().unwrap_or(&1);
        let chunk = (CHUNK_ELEMENTS / (n * widest)).max(1);
        let mut out = vec![Vec::with_capacity(x.rows); n];
        let _guard = tch::no_grad_guard();
        for start in (0..x.rows).step_by(chunk) {
            let end = (start + chunk).min(x.rows);
            let rows = &x.values[start * x.cols..end * x.cols];
            let logits = match shared_sparse_rows(rows, x.cols, n) {
                Some(sparse) => self.logits_rows(&sparse.to_device(self.device)),
                None => {
                    let t = Tensor::from_slice(rows)
                        .view([(end - start) as i64, x.cols as i64])
                        .to_device(self.device);
                    self.logits_shared(&t)
                }
            };
            let p = logits.sigmoid().to_device(Device::Cpu).contiguous();
            let p = Vec::<f32>::try_from(p.view([-1]))?;
            for (k, member) in out.iter_mut().enumerate() {
                member.extend_from_slice(&p[k * (end - start)..(k + 1) * (end - start)]);
            }
            rows_done(end);
        }
        Ok(out)
    }
}

/// Random initial weights for `n` members, member k from `rngs[k]`.
pub fn init_members<R: Rng>(dims: &[usize], rngs: &mut [R]) -> Vec<Mlp> {
    rngs.iter_mut()
        .map(|rng| crate::model::init_mlp(dims, rng))
        .collect()
}
