//! N networks of the same shape trained at once as one batched model: layer `l` holds weights
//! `[N, in, out]` and biases `[N, 1, out]`, the forward pass is one `bmm` per layer, and each
//! member sees only its own batch (`[N, B, in]`).
//!
//! The loss is the sum over members of each member's mean binary cross-entropy, so member k's
//! gradient is exactly the gradient of its own loss (the other terms do not depend on its weights).
//! Adam is applied elementwise with per-member step counts and a per-member mask (Kingma & Ba
//! 2015, "Adam", Algorithm 1): a masked member's parameters and moments stay bit-for-bit unchanged,
//! so training N members together equals N independent trainings, each with its own early
//! stopping (Prechelt 1998, "Early Stopping — But When?": keep the weights of the epoch with the
//! lowest held-out loss, stop after `patience` epochs without improvement). PATE (Papernot et
//! al. 2017, §2.1) trains its teachers independently on disjoint partitions; this is the same
//! computation, only batched.
use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use crate::dense::DenseMatrix;
use crate::error::{Error, Result};
use crate::metrics::youden_threshold;
use crate::model::{Dense, Mlp};

/// Upper bound on the floats of one intermediate activation tensor when scoring in chunks.
const CHUNK_ELEMENTS: usize = 1 << 23;

/// How the positive (malicious) class is weighted in the loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassBalance {
    /// `pos_weight = negatives / positives` of the member's training data in
    /// `BCEWithLogits(pos_weight)`, so both classes weigh the same in total.
    PosWeight,
    /// Plain binary cross-entropy.
    None,
}

/// Hyper-parameters of one training (teachers or student).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// Hidden layer widths (the input width comes from the featurizer, the output is 1).
    pub hidden: Vec<usize>,
    /// Upper bound on epochs (early stopping usually ends training before).
    pub max_epochs: usize,
    /// Mini-batch size.
    pub batch_size: usize,
    /// Adam step size.
    pub learning_rate: f64,
    /// Epochs without a lower held-out loss before a member stops.
    pub patience: usize,
    /// Class weighting in the loss.
    pub class_balance: ClassBalance,
    /// L2 penalty λ/2 · ‖W‖² on each member's weights (not the biases) added to its training
    /// loss; 0 (the default) = none. Logistic-regression teachers on ~200 requests with thousands
    /// of features need it (scikit-learn's LogisticRegression regularizes by default).
    pub weight_decay: f64,
    /// How each member's decision threshold is chosen: `youden` (Youden's J on its held-out
    /// samples, the default) or `half` (0.5: with class-balanced training the natural threshold,
    /// steadier than Youden's J on a few dozen held-out samples of a small shard).
    pub member_threshold: MemberThreshold,
}

/// How a member's threshold is chosen ([`TrainConfig::member_threshold`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberThreshold {
    /// Youden's J on the member's held-out samples.
    Youden,
    /// 0.5.
    Half,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            hidden: vec![512, 128],
            max_epochs: 100,
            batch_size: 64,
            learning_rate: 1e-3,
            patience: 5,
            class_balance: ClassBalance::PosWeight,
            weight_decay: 0.0,
            member_threshold: MemberThreshold::Youden,
        }
    }
}

impl TrainConfig {
    /// Checks the values, naming the offending key under `prefix` (e.g. `teachers.batch_size`).
    pub fn validate(&self, prefix: &str) -> Result<()> {
        let bad = |key: &str, why: &str| Err(Error::Config(format!("{prefix}.{key}: {why}")));
        if self.hidden.contains(&0) {
            return bad("hidden", "every hidden width must be at least 1");
        }
        if self.max_epochs == 0 {
            return bad("max_epochs", "must be at least 1");
        }
        if self.batch_size == 0 {
            return bad("batch_size", "must be at least 1");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return bad("learning_rate", "must be a positive number");
        }
        if self.patience == 0 {
            return bad("patience", "must be at least 1");
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return bad("weight_decay", "must be a non-negative number");
        }
        Ok(())
    }

    /// Layer widths for `input` features: input, hidden..., 1.
    pub fn dims(&self, input: usize) -> Vec<usize> {
        let mut dims = vec![input];
        dims.extend(&self.hidden);
        dims.push(1);
        dims
    }
}

/// Labelled feature rows (label true = malicious).
#[derive(Debug, Clone, Default)]
pub struct LabeledRows {
    /// One row per sample.
    pub x: DenseMatrix,
    /// One label per row.
    pub y: Vec<bool>,
}

/// One member's data: what it trains on and what it is early-stopped and thresholded on.
#[derive(Debug, Clone, Default)]
pub struct MemberData {
    /// Training samples.
    pub train: LabeledRows,
    /// Held-out samples (early stopping and the Youden threshold).
    pub holdout: LabeledRows,
}

/// Batched (all members at once) or one member after the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One `[N, in, out]` model, one `bmm` per layer.
    Batched,
    /// N separate trainings of a one-member model.
    Sequential,
}

/// What happened to one member during training.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberReport {
    /// Training samples.
    pub train_samples: usize,
    /// Held-out samples.
    pub holdout_samples: usize,
    /// Malicious training samples.
    pub train_positives: usize,
    /// The loss weight of the malicious class.
    pub pos_weight: f32,
    /// Epochs run before stopping.
    pub epochs: usize,
    /// The epoch (1-based) whose weights were kept.
    pub best_epoch: usize,
    /// The held-out loss of the kept weights; `None` when the member had no held-out samples
    /// (fixed-epoch training: the last weights are kept).
    pub best_holdout_loss: Option<f64>,
    /// The decision threshold on the malicious probability (Youden's J on the held-out samples).
    pub threshold: f32,
    /// True when the held-out samples had only one class, so 0.5 was used instead.
    pub threshold_fallback: bool,
}

/// N networks of the same shape, stacked on one device.
pub struct Ensemble {
    device: Device,
    dims: Vec<usize>,
    /// Layer l: `[N, dims[l], dims[l+1]]`.
    weights: Vec<Tensor>,
    /// Layer l: `[N, 1, dims[l+1]]`.
    biases: Vec<Tensor>,
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
            .ok_or_else(|| Error::Invalid("an ensemble needs at least one member".into()))?;
        let dims = first.dims();
        for (k, m) in members.iter().enumerate() {
            m.validate()
                .map_err(|e| Error::Invalid(format!("member {k}: {e}")))?;
            if m.dims() != dims {
                return Err(Error::Invalid(format!(
                    "member {k} has layer widths {:?}, member 0 has {dims:?}",
                    m.dims()
                )));
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
    fn logits_rows(&self, rows: &Rows) -> Tensor {
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
        if x.cols != self.dims[0] {
            return Err(Error::Invalid(format!(
                "the model takes {} features, the matrix has {}",
                self.dims[0], x.cols
            )));
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
        }
        Ok(out)
    }
}

/// How the first layer reads its input.
///
/// The features are l1-normalized TF-IDF vectors: a request has tens of non-zero features out of
/// K = 500. `Sparse` computes the first layer as Σⱼ xⱼ·W[fⱼ] over a row's non-zeros only
/// (`embedding_bag`, mode sum, with the values as per-sample weights, over the flattened
/// `[N·in, out]` weight), which is the same sum as the dense product `x·W` (only the rounding
/// order differs), and so is its gradient (the dense gradient xᵀδ is zero on absent features).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputLayout {
    /// `Sparse` when every row has at most a quarter of its features non-zero, else `Dense`.
    Auto,
    /// Dense rows, the first layer a `bmm`.
    Dense,
    /// (index, value) lists padded to the longest row, the first layer an `embedding_bag`.
    Sparse,
}

impl InputLayout {
    /// `Auto` resolved for rows whose longest has `max_nonzeros` of `cols` features non-zero.
    fn resolve(self, max_nonzeros: usize, cols: usize) -> InputLayout {
        match self {
            InputLayout::Auto if max_nonzeros * 4 <= cols => InputLayout::Sparse,
            InputLayout::Auto => InputLayout::Dense,
            other => other,
        }
    }
}

/// The most non-zero features of any row of `rows`.
fn max_nonzeros<'a>(rows: impl IntoIterator<Item = &'a DenseMatrix>) -> usize {
    rows.into_iter()
        .flat_map(|m| m.values.chunks(m.cols.max(1)))
        .map(|row| row.iter().filter(|&&v| v != 0.0).count())
        .max()
        .unwrap_or(0)
}

/// Rows of several members, `[N, B, ..]`, as the first layer reads them.
enum Rows {
    /// `[N, B, in]`.
    Dense(Tensor),
    /// `index`, `value`: `[N·B·width]`, row after row, each row's non-zeros padded with value 0
    /// to `width`; an index is `k·in + feature` for member k (a row of the flattened weight).
    Sparse {
        index: Tensor,
        value: Tensor,
        n: i64,
        b: i64,
        width: i64,
    },
}

/// `rows` (row-major, `cols` wide) as sparse rows for each of `members` members (the same
/// rows for every member, indices offset by `k·cols`), or `None` when some row has more than a
/// quarter of its features non-zero (then the dense product is as cheap).
fn shared_sparse_rows(rows: &[f32], cols: usize, members: usize) -> Option<Rows> {
    let count = rows.len() / cols.max(1);
    let width = rows
        .chunks(cols.max(1))
        .map(|r| r.iter().filter(|&&v| v != 0.0).count())
        .max()
        .unwrap_or(0)
        .max(1);
    if InputLayout::Auto.resolve(width, cols) != InputLayout::Sparse {
        return None;
    }
    // Padding entries: index 0 (any row of the weight would do) with value 0 add nothing.
    let mut index = vec![0i64; members * count * width];
    let mut value = vec![0f32; members * count * width];
    for (r, row) in rows.chunks(cols).enumerate() {
        for (j, (f, &v)) in row
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0.0)
            .enumerate()
        {
            for k in 0..members {
                let at = (k * count + r) * width + j;
                index[at] = (k * cols + f) as i64;
                value[at] = v;
            }
        }
    }
    Some(Rows::Sparse {
        index: Tensor::from_slice(&index),
        value: Tensor::from_slice(&value),
        n: members as i64,
        b: count as i64,
        width: width as i64,
    })
}

impl Rows {
    fn to_device(&self, device: Device) -> Rows {
        match self {
            Rows::Dense(x) => Rows::Dense(x.to_device(device)),
            Rows::Sparse {
                index,
                value,
                n,
                b,
                width,
            } => Rows::Sparse {
                index: index.to_device(device),
                value: value.to_device(device),
                n: *n,
                b: *b,
                width: *width,
            },
        }
    }
}

/// Padded rows as stored: dense `[N·max, in]`, or sparse `index`/`value` `[N·max, width]` with
/// member k's indices already offset by `k·in`.
enum PaddedX {
    Dense(Tensor),
    Sparse { index: Tensor, value: Tensor },
}

/// Pads every member's rows to the same count: `x` (`N·max` rows, flat, for `index_select`),
/// `y` and `w` (1 for a real row, 0 for padding) `[N, max]`.
struct Padded {
    x: PaddedX,
    y: Tensor,
    w: Tensor,
    max: usize,
}

impl Padded {
    /// The rows at flat positions `index` (`[N·B]`, member k's in its k-th block of B).
    fn select(&self, index: &Tensor, n: i64, b: i64) -> Rows {
        match &self.x {
            PaddedX::Dense(x) => Rows::Dense(x.index_select(0, index).view([n, b, -1])),
            PaddedX::Sparse { index: fi, value } => Rows::Sparse {
                index: fi.index_select(0, index).view([-1]),
                value: value.index_select(0, index).view([-1]),
                n,
                b,
                width: fi.size()[1],
            },
        }
    }

    /// Rows `start..start + len` of every member.
    fn narrow(&self, n: i64, start: i64, len: i64) -> Rows {
        let max = self.max as i64;
        match &self.x {
            PaddedX::Dense(x) => Rows::Dense(x.view([n, max, -1]).narrow(1, start, len)),
            PaddedX::Sparse { index, value } => {
                let width = index.size()[1];
                let part = |t: &Tensor| {
                    t.view([n, max, width])
                        .narrow(1, start, len)
                        .contiguous()
                        .view([-1])
                };
                Rows::Sparse {
                    index: part(index),
                    value: part(value),
                    n,
                    b: len,
                    width,
                }
            }
        }
    }
}

fn pad(sets: &[&LabeledRows], cols: usize, layout: InputLayout, device: Device) -> Padded {
    let max = sets.iter().map(|s| s.y.len()).max().unwrap_or(0).max(1);
    let n = sets.len();
    let mut y = vec![0f32; n * max];
    let mut w = vec![0f32; n * max];
    for (k, s) in sets.iter().enumerate() {
        for (r, &label) in s.y.iter().enumerate() {
            y[k * max + r] = if label { 1.0 } else { 0.0 };
            w[k * max + r] = 1.0;
        }
    }
    let x = match layout {
        InputLayout::Sparse => {
            let width = max_nonzeros(sets.iter().map(|s| &s.x)).max(1);
            let mut index = vec![0i64; n * max * width];
            let mut value = vec![0f32; n * max * width];
            for (k, s) in sets.iter().enumerate() {
                let base = (k * cols) as i64;
                for r in 0..max {
                    let at = (k * max + r) * width;
                    // Padding entries (and padding rows) point at the member's own row 0 with
                    // value 0: they add nothing and receive no gradient.
                    index[at..at + width].fill(base);
                    if r < s.x.rows {
                        let nonzero = s.x.row(r).iter().enumerate().filter(|(_, &v)| v != 0.0);
                        for (j, (f, &v)) in nonzero.enumerate() {
                            index[at + j] = base + f as i64;
                            value[at + j] = v;
                        }
                    }
                }
            }
            let shape = [(n * max) as i64, width as i64];
            PaddedX::Sparse {
                index: Tensor::from_slice(&index).view(shape).to_device(device),
                value: Tensor::from_slice(&value).view(shape).to_device(device),
            }
        }
        _ => {
            let mut x = vec![0f32; n * max * cols];
            for (k, s) in sets.iter().enumerate() {
                x[k * max * cols..k * max * cols + s.x.values.len()].copy_from_slice(&s.x.values);
            }
            PaddedX::Dense(
                Tensor::from_slice(&x)
                    .view([(n * max) as i64, cols as i64])
                    .to_device(device),
            )
        }
    };
    Padded {
        x,
        y: Tensor::from_slice(&y)
            .view([n as i64, max as i64])
            .to_device(device),
        w: Tensor::from_slice(&w)
            .view([n as i64, max as i64])
            .to_device(device),
        max,
    }
}

/// Elementwise ℓ = −[p·y·log σ(z) + (1 − y)·log σ(−z)] (PyTorch's `BCEWithLogitsLoss` with
/// `pos_weight`, computed through log-sigmoid for stability).
fn bce_rows(logits: &Tensor, y: &Tensor, pos_weight: &Tensor) -> Tensor {
    let positive: Tensor = logits.log_sigmoid() * y * pos_weight;
    let negative: Tensor = logits.neg().log_sigmoid() * (y.ones_like() - y);
    (positive + negative).neg()
}

/// Per-member mean of `BCEWithLogits(pos_weight)` over the rows with weight 1:
/// ℓ = −[p·y·log σ(z) + (1 − y)·log σ(−z)], returned as `[N]`.
fn member_losses(logits: &Tensor, y: &Tensor, w: &Tensor, pos_weight: &Tensor) -> Tensor {
    let per_row = bce_rows(logits, y, pos_weight);
    (per_row * w).sum_dim_intlist(1, false, Kind::Float)
        / w.sum_dim_intlist(1, false, Kind::Float).clamp_min(1.0)
}

/// Adam's constants (Kingma & Ba 2015, §2: β₁ = 0.9, β₂ = 0.999, ε = 1e-8, PyTorch's defaults).
const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const EPSILON: f64 = 1e-8;

/// Elements of one parameter updated by one pass of Adam's elementwise operations: a chunk's
/// parameter, gradient, moments and scratch (5 × 120 KiB) stay in the core's L2 cache across
/// the operations, so main memory sees each array about once per step instead of once per
/// operation (the update is memory-bound on a CPU: the default 250 × (500·512 + 512·128)
/// parameters are 80 M floats, 320 MB per array). It is also below libtorch's parallel grain
/// size (2¹⁵ elements: an operation on at least that many forks OpenMP threads), so each
/// operation runs on the calling thread: at 2¹⁵ exactly, the ~20,000 fork/joins per step made a
/// 2-thread batched step twice as slow as a 1-thread one on the shared 2-core machine.
const ADAM_CHUNK: i64 = 30 * 1024;

/// The floor under Adam's second moment before its square root (see `apply_adam`).
const SQRT_FLOOR: f64 = 1e-30;

/// The trainable state of a batched ensemble: parameters, Adam moments and each member's step
/// count. Exposed so that tests can drive single masked steps.
pub struct Trainer {
    ensemble: Ensemble,
    first_moments: Vec<Tensor>,
    second_moments: Vec<Tensor>,
    /// One reusable buffer of `ADAM_CHUNK` floats for Adam's denominator (no allocation per step).
    scratch: Tensor,
    steps: Vec<u64>,
    learning_rate: f64,
    weight_decay: f64,
}

impl Trainer {
    /// Sets the L2 penalty ([`TrainConfig::weight_decay`]).
    pub fn with_weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }

    /// Prepares `ensemble` for training with Adam at `learning_rate`.
    pub fn new(mut ensemble: Ensemble, learning_rate: f64) -> Self {
        for p in ensemble
            .weights
            .iter_mut()
            .chain(ensemble.biases.iter_mut())
        {
            *p = p.detach().set_requires_grad(true);
        }
        let zeros = |ps: &[Tensor]| ps.iter().map(|p| p.zeros_like()).collect::<Vec<_>>();
        let params = ensemble
            .weights
            .iter()
            .chain(&ensemble.biases)
            .map(|p| p.shallow_clone())
            .collect::<Vec<_>>();
        let n = ensemble.len();
        let scratch = Tensor::zeros([ADAM_CHUNK], (Kind::Float, ensemble.device));
        Trainer {
            first_moments: zeros(&params),
            second_moments: zeros(&params),
            scratch,
            steps: vec![0; n],
            learning_rate,
            weight_decay: 0.0,
            ensemble,
        }
    }

    fn params(&self) -> Vec<Tensor> {
        self.ensemble
            .weights
            .iter()
            .chain(&self.ensemble.biases)
            .map(|p| p.shallow_clone())
            .collect()
    }

    /// One Adam step on per-member batches `x: [N, B, in]`, `y`, `w: [N, B]` (w = 0 marks padding);
    /// members with `active[k] == false` are left exactly as they are (parameters and moments).
    /// Returns each member's batch loss.
    pub fn step(
        &mut self,
        x: &Tensor,
        y: &Tensor,
        w: &Tensor,
        pos_weight: &Tensor,
        active: &[bool],
    ) -> Result<Vec<f32>> {
        let n = self.ensemble.len();
        if active.len() != n {
            return Err(Error::Invalid(format!(
                "{} activity flags for {n} members",
                active.len()
            )));
        }
        self.step_rows(&Rows::Dense(x.shallow_clone()), y, w, pos_weight, active)
    }

    /// [`Trainer::step`] on dense or sparse rows.
    fn step_rows(
        &mut self,
        x: &Rows,
        y: &Tensor,
        w: &Tensor,
        pos_weight: &Tensor,
        active: &[bool],
    ) -> Result<Vec<f32>> {
        let losses = member_losses(&self.ensemble.logits_rows(x), y, w, pos_weight);
        let penalized = if self.weight_decay > 0.0 {
            // λ/2 · Σ‖W_l‖² per member (weights [N, in, out]; biases are not penalized).
            let mut total = losses.shallow_clone();
            for wl in &self.ensemble.weights {
                // Not `+=`: tch's AddAssign is in place, and `total` shares storage with
                // `losses`, which must stay the unpenalized loss.
                #[allow(clippy::assign_op_pattern)]
                {
                    total = total
                        + wl.square()
                            .sum_dim_intlist(&[1i64, 2][..], false, Kind::Float)
                            * (0.5 * self.weight_decay);
                }
            }
            total
        } else {
            losses.shallow_clone()
        };
        self.apply_adam(&penalized, active)?;
        Ok(Vec::<f32>::try_from(
            losses.detach().to_device(Device::Cpu),
        )?)
    }

    /// Back-propagates `Σ_k losses[k]` and applies one Adam step to the active members.
    ///
    /// The gradients come from `run_backward` as fresh tensors (nothing accumulates into or
    /// zeroes `.grad`). Adam (Kingma & Ba 2015, Algorithm 1) in PyTorch's form
    /// p ← p − α/(1−β₁ᵗ) · m / (√v/√(1−β₂ᵗ) + ε) is computed as the equal
    /// p ← p − (α√(1−β₂ᵗ)/(1−β₁ᵗ)) · m / (√v + ε√(1−β₂ᵗ)) with member k's own t, chunk by chunk
    /// over runs of consecutive active members: stopped members are never touched, so their
    /// parameters and moments stay bit-for-bit unchanged.
    fn apply_adam(&mut self, losses: &Tensor, active: &[bool]) -> Result<()> {
        let n = self.ensemble.len();
        let params = self.params();
        let grads = Tensor::f_run_backward(&[losses.sum(Kind::Float)], &params, false, false)?;
        let device = self.ensemble.device;
        for (k, &a) in active.iter().enumerate() {
            if a {
                self.steps[k] += 1;
            }
        }
        let (neg_step_size, eps_hat): (Vec<f32>, Vec<f32>) = self
            .steps
            .iter()
            .map(|&t| {
                if t == 0 {
                    // Never stepped: never updated either (it is inactive).
                    (0.0, 1.0)
                } else {
                    let sqrt_bc2 = (1.0 - BETA2.powi(t as i32)).sqrt();
                    let bc1 = 1.0 - BETA1.powi(t as i32);
                    (
                        (-self.learning_rate * sqrt_bc2 / bc1) as f32,
                        (EPSILON * sqrt_bc2) as f32,
                    )
                }
            })
            .unzip();
        let neg_step_size = Tensor::from_slice(&neg_step_size)
            .view([n as i64, 1])
            .to_device(device);
        let eps_hat = Tensor::from_slice(&eps_hat)
            .view([n as i64, 1])
            .to_device(device);
        // Runs [start, end) of consecutive active members.
        let mut runs = Vec::new();
        let mut k = 0;
        while k < n {
            if !active[k] {
                k += 1;
                continue;
            }
            let start = k;
            while k < n && active[k] {
                k += 1;
            }
            runs.push((start as i64, k as i64));
        }
        let _guard = tch::no_grad_guard();
        for (i, (p, g)) in params.iter().zip(grads).enumerate() {
            let per_member = p.numel() as i64 / n as i64;
            let view = |t: &Tensor| t.f_view([n as i64, per_member]);
            let (p, g) = (view(p)?, view(&g.f_contiguous()?)?);
            let m = view(&self.first_moments[i])?;
            let v = view(&self.second_moments[i])?;
            // A chunk is `members` whole members, or a `columns`-wide slice of one member.
            let columns = per_member.min(ADAM_CHUNK);
            let members = (ADAM_CHUNK / per_member).max(1);
            for &(start, end) in &runs {
                let mut k0 = start;
                while k0 < end {
                    let rows = members.min(end - k0);
                    let mut c0 = 0;
                    while c0 < per_member {
                        let len = columns.min(per_member - c0);
                        let chunk = |t: &Tensor| t.narrow(0, k0, rows).narrow(1, c0, len);
                        let (mut pc, mut gc, mut mc, mut vc) =
                            (chunk(&p), chunk(&g), chunk(&m), chunk(&v));
                        let sc = self.scratch.narrow(0, 0, rows * len).view([rows, len]);
                        let step = neg_step_size.narrow(0, k0, rows);
                        let eps = eps_hat.narrow(0, k0, rows);
                        // m ← β₁m + (1−β₁)g (as torch.optim.Adam: lerp), v ← β₂v + (1−β₂)g².
                        let _ = mc.f_lerp_(&gc, 1.0 - BETA1)?;
                        let _ = gc.f_mul_(&gc.shallow_clone())?;
                        let _ = vc.f_lerp_(&gc, 1.0 - BETA2)?;
                        // s ← m / (√v + ε̂), p ← p + (−α̂)·s, with √v taken of max(v, 1e-30):
                        // libtorch's sqrt (MKL VML) takes a path 8× slower for exact zeros (the
                        // moments of features a member never saw) and 40× for subnormals, which
                        // made it 19% of a step. Where v < 1e-30 the true √v < 1e-15 is
                        // negligible next to ε̂ ≥ 1e-8·√(1−β₂) ≈ 3e-10, and |m| ≤ 32√v there,
                        // so the update changes by < 1e-11 of the parameter's float spacing.
                        let _ = vc.f_clamp_min_out(&sc, SQRT_FLOOR)?;
                        let _ = sc.shallow_clone().f_sqrt_()?;
                        let _ = sc.shallow_clone().f_add_(&eps)?;
                        let _ = mc.f_div_out(&sc, &sc)?;
                        let _ = pc.f_addcmul_(&sc, &step)?;
                        c0 += len;
                    }
                    k0 += rows;
                }
            }
        }
        Ok(())
    }

    /// The ensemble being trained.
    pub fn ensemble(&self) -> &Ensemble {
        &self.ensemble
    }
}

/// Per-member `pos_weight` (negatives / positives; 1 when a class is missing or balancing is off).
fn pos_weights(data: &[MemberData], balance: ClassBalance) -> Vec<f32> {
    data.iter()
        .map(|d| {
            let pos = d.train.y.iter().filter(|&&y| y).count();
            let neg = d.train.y.len() - pos;
            match balance {
                ClassBalance::PosWeight if pos > 0 && neg > 0 => neg as f32 / pos as f32,
                _ => 1.0,
            }
        })
        .collect()
}

/// Fisher–Yates shuffle with the member's own random stream.
fn permutation(n: usize, rng: &mut impl Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.random_range(0..=i);
        p.swap(i, j);
    }
    p
}

/// Trains every member of `ensemble` on its own `data[k]` with its own random stream `rngs[k]`
/// (mini-batch order), early-stops each on its held-out loss, keeps each member's best weights and
/// picks each member's threshold by Youden's J on its held-out samples. `Mode::Sequential` trains
/// one member after the other (for comparison; results equal `Mode::Batched` up to float
/// rounding). Progress goes to stderr under `label` unless it is empty.
pub fn train<R: Rng>(
    ensemble: Ensemble,
    data: &[MemberData],
    config: &TrainConfig,
    rngs: &mut [R],
    mode: Mode,
    label: &str,
) -> Result<(Ensemble, Vec<MemberReport>)> {
    train_with_layout(ensemble, data, config, rngs, mode, label, InputLayout::Auto)
}

/// [`train`] with the first layer's input layout chosen by the caller (`Auto` in [`train`]).
pub fn train_with_layout<R: Rng>(
    ensemble: Ensemble,
    data: &[MemberData],
    config: &TrainConfig,
    rngs: &mut [R],
    mode: Mode,
    label: &str,
    layout: InputLayout,
) -> Result<(Ensemble, Vec<MemberReport>)> {
    let n = ensemble.len();
    if data.len() != n || rngs.len() != n {
        return Err(Error::Invalid(format!(
            "{n} members but {} data sets and {} random streams",
            data.len(),
            rngs.len()
        )));
    }
    // Without held-out samples (teachers.holdout_fraction: 0) every member trains for exactly
    // max_epochs and keeps its last weights; a mix of members with and without is an error.
    let fixed_epochs = data.iter().all(|d| d.holdout.y.is_empty());
    if fixed_epochs && config.member_threshold != MemberThreshold::Half {
        return Err(Error::Invalid(
            "members without held-out samples need member_threshold: half".into(),
        ));
    }
    for (k, d) in data.iter().enumerate() {
        if d.train.y.is_empty() || (d.holdout.y.is_empty() && !fixed_epochs) {
            return Err(Error::Invalid(format!(
                "member {k} has {} training and {} held-out samples; both must be at least 1 \
                 (or every member has no held-out samples)",
                d.train.y.len(),
                d.holdout.y.len()
            )));
        }
        for (what, set) in [("training", &d.train), ("held-out", &d.holdout)] {
            if set.x.rows != set.y.len() || set.x.cols != ensemble.dims[0] {
                return Err(Error::Invalid(format!(
                    "member {k}: {what} set has {} rows of {} features and {} labels (model takes {})",
                    set.x.rows,
                    set.x.cols,
                    set.y.len(),
                    ensemble.dims[0]
                )));
            }
        }
    }
    // `Auto` is resolved WITHOUT looking at the rows: the teachers' rows are private, and one
    // record could flip a data-dependent choice and so change every teacher's float rounding
    // (more than one teacher's output for one record; independent review). The sparse layout
    // computes the same sums as the dense one (padding adds exact zeros) and is the cheaper one
    // for the featurizer's sparse rows.
    let layout = match layout {
        InputLayout::Auto => InputLayout::Sparse,
        chosen => chosen,
    };
    match mode {
        Mode::Batched => train_batched(ensemble, data, config, rngs, label, layout),
        Mode::Sequential => {
            let device = ensemble.device;
            let members = ensemble.members()?;
            let mut trained = Vec::with_capacity(n);
            let mut reports = Vec::with_capacity(n);
            for k in 0..n {
                let one = Ensemble::from_members(std::slice::from_ref(&members[k]), device)?;
                let sub_label = if label.is_empty() {
                    String::new()
                } else {
                    format!("{label} {}/{n}", k + 1)
                };
                let (one, mut report) = train_batched(
                    one,
                    &data[k..=k],
                    config,
                    &mut rngs[k..=k],
                    &sub_label,
                    layout,
                )?;
                trained.push(one.members()?.remove(0));
                reports.push(report.remove(0));
            }
            Ok((Ensemble::from_members(&trained, device)?, reports))
        }
    }
}

/// The per-member tensors of the members still training (`ids[k]` is local member k's index in
/// the full ensemble): the data padded to the longest of THEM, their class weights.
struct Working {
    ids: Vec<usize>,
    train_data: Padded,
    holdout: Padded,
    pos_weight: Tensor,
    sizes: Vec<usize>,
    batch: usize,
}

impl Working {
    fn new(
        ids: Vec<usize>,
        data: &[MemberData],
        pos_weights: &[f32],
        config: &TrainConfig,
        cols: usize,
        layout: InputLayout,
        device: Device,
    ) -> Self {
        let n = ids.len();
        let train_sets: Vec<&LabeledRows> = ids.iter().map(|&k| &data[k].train).collect();
        let holdout_sets: Vec<&LabeledRows> = ids.iter().map(|&k| &data[k].holdout).collect();
        let train_data = pad(&train_sets, cols, layout, device);
        let holdout = pad(&holdout_sets, cols, layout, device);
        let weights: Vec<f32> = ids.iter().map(|&k| pos_weights[k]).collect();
        let pos_weight = Tensor::from_slice(&weights)
            .view([n as i64, 1])
            .to_device(device);
        let sizes: Vec<usize> = ids.iter().map(|&k| data[k].train.y.len()).collect();
        // A member's batches are the same whatever the others' sizes: with B >= its size it takes
        // all its rows in one step, exactly as with B = its size.
        let batch = config.batch_size.min(train_data.max);
        Working {
            ids,
            train_data,
            holdout,
            pos_weight,
            sizes,
            batch,
        }
    }
}

impl Trainer {
    /// Keeps only the members at local positions `keep` (parameters, moments, step counts).
    fn retain(self, keep: &[usize]) -> Result<Trainer> {
        let device = self.ensemble.device;
        let idx: Vec<i64> = keep.iter().map(|&k| k as i64).collect();
        let idx = Tensor::from_slice(&idx).to_device(device);
        let _guard = tch::no_grad_guard();
        let select = |ts: &[Tensor]| {
            ts.iter()
                .map(|t| t.index_select(0, &idx))
                .collect::<Vec<_>>()
        };
        let ensemble = Ensemble {
            device,
            dims: self.ensemble.dims.clone(),
            weights: select(&self.ensemble.weights)
                .into_iter()
                .map(|t| t.set_requires_grad(true))
                .collect(),
            biases: select(&self.ensemble.biases)
                .into_iter()
                .map(|t| t.set_requires_grad(true))
                .collect(),
        };
        Ok(Trainer {
            first_moments: select(&self.first_moments),
            second_moments: select(&self.second_moments),
            scratch: self.scratch,
            steps: keep.iter().map(|&k| self.steps[k]).collect(),
            learning_rate: self.learning_rate,
            weight_decay: self.weight_decay,
            ensemble,
        })
    }
}

fn train_batched<R: Rng>(
    ensemble: Ensemble,
    data: &[MemberData],
    config: &TrainConfig,
    rngs: &mut [R],
    label: &str,
    layout: InputLayout,
) -> Result<(Ensemble, Vec<MemberReport>)> {
    let n_all = ensemble.len();
    let cols = ensemble.dims[0];
    let device = ensemble.device;
    let fixed_epochs = data.iter().all(|d| d.holdout.y.is_empty());
    let pos_weight_values = pos_weights(data, config.class_balance);
    let mut work = Working::new(
        (0..n_all).collect(),
        data,
        &pos_weight_values,
        config,
        cols,
        layout,
        device,
    );

    let mut trainer =
        Trainer::new(ensemble, config.learning_rate).with_weight_decay(config.weight_decay);
    // Best weights of every member, full size; members copy theirs in when they improve.
    let mut best: Vec<Tensor> = trainer.params().iter().map(|p| p.detach().copy()).collect();
    let mut best_loss = vec![f64::INFINITY; n_all];
    let mut best_epoch = vec![0usize; n_all];
    let mut epochs = vec![0usize; n_all];
    let mut bad_epochs = vec![0usize; n_all];
    // Local activity (position in `work.ids`).
    let mut active = vec![true; n_all];

    for epoch in 1..=config.max_epochs {
        let running: Vec<usize> = (0..active.len()).filter(|&k| active[k]).collect();
        if running.is_empty() {
            break;
        }
        // Once half the members have stopped, drop the stopped ones from the batched model:
        // masked members cost as much compute as training ones. Bit-for-bit the same result.
        if running.len() * 2 <= active.len() {
            let ids: Vec<usize> = running.iter().map(|&k| work.ids[k]).collect();
            trainer = trainer.retain(&running)?;
            work = Working::new(ids, data, &pos_weight_values, config, cols, layout, device);
            active = vec![true; running.len()];
        }
        let n = work.ids.len();
        let batch = work.batch;
        let sizes = &work.sizes;
        let perms: Vec<Option<Vec<usize>>> = (0..n)
            .map(|k| active[k].then(|| permutation(sizes[k], &mut rngs[work.ids[k]])))
            .collect();
        let steps: Vec<usize> = (0..n)
            .map(|k| {
                if active[k] {
                    sizes[k].div_ceil(batch)
                } else {
                    0
                }
            })
            .collect();
        let max_steps = steps.iter().copied().max().unwrap_or(0);
        for s in 0..max_steps {
            let mut index = vec![0i64; n * batch];
            let mut weight = vec![0f32; n * batch];
            let mut step_active = vec![false; n];
            for k in 0..n {
                let Some(perm) = &perms[k] else { continue };
                if s >= steps[k] {
                    continue;
                }
                step_active[k] = true;
                for j in 0..batch {
                    let r = s * batch + j;
                    if r < sizes[k] {
                        index[k * batch + j] = (k * work.train_data.max + perm[r]) as i64;
                        weight[k * batch + j] = 1.0;
                    } else {
                        index[k * batch + j] = (k * work.train_data.max) as i64;
                    }
                }
            }
            let index = Tensor::from_slice(&index).to_device(device);
            let x = work.train_data.select(&index, n as i64, batch as i64);
            let y = work
                .train_data
                .y
                .view([-1])
                .index_select(0, &index)
                .view([n as i64, batch as i64]);
            let w = Tensor::from_slice(&weight)
                .view([n as i64, batch as i64])
                .to_device(device);
            trainer.step_rows(&x, &y, &w, &work.pos_weight, &step_active)?;
        }
        // Held-out loss per member, then keep the improved members' weights. Without held-out
        // samples every running member "improves" each epoch: the last weights are kept.
        let losses = if fixed_epochs {
            vec![f32::NAN; n]
        } else {
            let _guard = tch::no_grad_guard();
            let widest = *trainer.ensemble.dims.iter().max().unwrap_or(&1);
            let chunk = (CHUNK_ELEMENTS / (n * widest)).max(1) as i64;
            let mut sum = Tensor::zeros([n as i64], (Kind::Float, device));
            let max = work.holdout.max as i64;
            let mut start = 0;
            while start < max {
                let len = chunk.min(max - start);
                let x = work.holdout.narrow(n as i64, start, len);
                let y = work.holdout.y.narrow(1, start, len);
                let w = work.holdout.w.narrow(1, start, len);
                let logits = trainer.ensemble.logits_rows(&x);
                let per_row = bce_rows(&logits, &y, &work.pos_weight);
                sum += (per_row * &w).sum_dim_intlist(1, false, Kind::Float);
                start += len;
            }
            let counts = work.holdout.w.sum_dim_intlist(1, false, Kind::Float);
            Vec::<f32>::try_from((sum / counts).to_device(Device::Cpu))?
        };
        let mut improved_local = Vec::new();
        for k in 0..n {
            if !active[k] {
                continue;
            }
            let m = work.ids[k];
            epochs[m] = epoch;
            let loss = losses[k] as f64;
            if fixed_epochs {
                best_epoch[m] = epoch;
                improved_local.push(k);
            } else if loss < best_loss[m] {
                best_loss[m] = loss;
                best_epoch[m] = epoch;
                bad_epochs[m] = 0;
                improved_local.push(k);
            } else {
                bad_epochs[m] += 1;
                if bad_epochs[m] >= config.patience {
                    active[k] = false;
                }
            }
        }
        if !improved_local.is_empty() {
            let _guard = tch::no_grad_guard();
            let local: Vec<i64> = improved_local.iter().map(|&k| k as i64).collect();
            let global: Vec<i64> = improved_local.iter().map(|&k| work.ids[k] as i64).collect();
            let local = Tensor::from_slice(&local).to_device(device);
            let global = Tensor::from_slice(&global).to_device(device);
            for (b, p) in best.iter_mut().zip(trainer.params()) {
                if improved_local.len() == n_all {
                    b.f_copy_(&p)?;
                } else {
                    let _ = b.f_index_copy_(0, &global, &p.index_select(0, &local))?;
                }
            }
        }
        if !label.is_empty() && fixed_epochs {
            eprintln!(
                "{label}: epoch {epoch}/{} (fixed epochs, no held-out samples)",
                config.max_epochs
            );
        } else if !label.is_empty() {
            let running = active.iter().filter(|&&a| a).count();
            let finite: Vec<f64> = best_loss
                .iter()
                .copied()
                .filter(|l| l.is_finite())
                .collect();
            let mean = finite.iter().sum::<f64>() / finite.len().max(1) as f64;
            eprintln!(
                "{label}: epoch {epoch}/{}: {running}/{n_all} still training, mean best held-out loss {mean:.4}",
                config.max_epochs
            );
        }
    }

    // Every member's best weights.
    let dims = trainer.ensemble.dims.clone();
    drop(trainer);
    let layers = dims.len() - 1;
    let mut best = best.into_iter();
    let weights: Vec<Tensor> = best.by_ref().take(layers).collect();
    let biases: Vec<Tensor> = best.collect();
    let ensemble = Ensemble {
        device,
        dims,
        weights,
        biases,
    };

    // Thresholds: Youden's J on each member's held-out scores.
    let full = Working::new(
        (0..n_all).collect(),
        data,
        &pos_weight_values,
        config,
        cols,
        layout,
        device,
    );
    let mut reports = Vec::with_capacity(n_all);
    let holdout_scores = if fixed_epochs {
        Vec::new()
    } else {
        let _guard = tch::no_grad_guard();
        let logits = ensemble.logits_rows(&full.holdout.narrow(
            n_all as i64,
            0,
            full.holdout.max as i64,
        ));
        Vec::<f32>::try_from(
            logits
                .sigmoid()
                .to_device(Device::Cpu)
                .contiguous()
                .view([-1]),
        )?
    };
    for k in 0..n_all {
        let h = &data[k].holdout;
        let scores = holdout_scores
            .get(k * full.holdout.max..k * full.holdout.max + h.y.len())
            .unwrap_or(&[]);
        let (threshold, fallback) = match config.member_threshold {
            MemberThreshold::Half => (0.5, false),
            MemberThreshold::Youden => match youden_threshold(scores, &h.y) {
                Some(t) => (t, false),
                None => (0.5, true),
            },
        };
        reports.push(MemberReport {
            train_samples: data[k].train.y.len(),
            holdout_samples: h.y.len(),
            train_positives: data[k].train.y.iter().filter(|&&y| y).count(),
            pos_weight: pos_weight_values[k],
            epochs: epochs[k],
            best_epoch: best_epoch[k],
            best_holdout_loss: best_loss[k].is_finite().then_some(best_loss[k]),
            threshold,
            threshold_fallback: fallback,
        });
    }
    Ok((ensemble, reports))
}

/// Random initial weights for `n` members, member k from `rngs[k]`.
pub fn init_members<R: Rng>(dims: &[usize], rngs: &mut [R]) -> Vec<Mlp> {
    rngs.iter_mut()
        .map(|rng| crate::model::init_mlp(dims, rng))
        .collect()
}

/// Counts member votes: `votes[r] = [benign, malicious]`, member k voting malicious on row r when
/// its probability reaches its threshold (`scores[k][r] >= thresholds[k]`).
pub fn count_votes(scores: &[Vec<f32>], thresholds: &[f32]) -> Vec<[u32; 2]> {
    let rows = scores.first().map_or(0, |s| s.len());
    let mut votes = vec![[0u32; 2]; rows];
    for (member, &t) in scores.iter().zip(thresholds) {
        for (v, &s) in votes.iter_mut().zip(member) {
            v[usize::from(s >= t)] += 1;
        }
    }
    votes
}
