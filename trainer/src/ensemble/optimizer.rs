//! The loss, and Adam or FISTA with per-member step counts and masks ([`Trainer`]).
use tch::{Device, Kind, Tensor};

use super::config::Optimizer;
use super::model::Ensemble;
use super::rows::Rows;
use crate::error::{EnsembleProblem, Error, Result};

/// Elementwise ℓ = −[p·y·log σ(z) + (1 − y)·log σ(−z)] (PyTorch's `BCEWithLogitsLoss` with
/// `pos_weight`, computed through log-sigmoid for stability).
pub(super) fn bce_rows(logits: &Tensor, y: &Tensor, pos_weight: &Tensor) -> Tensor {
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
    pub(super) ensemble: Ensemble,
    first_moments: Vec<Tensor>,
    second_moments: Vec<Tensor>,
    /// One reusable buffer of `ADAM_CHUNK` floats for Adam's denominator (no allocation per step).
    scratch: Tensor,
    steps: Vec<u64>,
    learning_rate: f64,
    weight_decay: f64,
    optimizer: Optimizer,
    l1: f64,
    /// FISTA's previous iterate x_{k−1} of every parameter (empty with Adam).
    previous: Vec<Tensor>,
}

impl Trainer {
    /// Sets the L2 penalty ([`TrainConfig::weight_decay`](super::TrainConfig::weight_decay)).
    pub fn with_weight_decay(mut self, weight_decay: f64) -> Self {
        self.weight_decay = weight_decay;
        self
    }

    /// Sets the update rule and its L1 penalty ([`TrainConfig::optimizer`](super::TrainConfig::optimizer),
    /// [`TrainConfig::l1`](super::TrainConfig::l1); the caller has validated that `l1 > 0` comes
    /// with FISTA).
    pub fn with_optimizer(mut self, optimizer: Optimizer, l1: f64) -> Self {
        self.optimizer = optimizer;
        self.l1 = l1;
        self.previous = match optimizer {
            Optimizer::Adam => Vec::new(),
            Optimizer::Fista => self.params().iter().map(|p| p.detach().copy()).collect(),
        };
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
            optimizer: Optimizer::Adam,
            l1: 0.0,
            previous: Vec::new(),
            ensemble,
        }
    }

    pub(super) fn params(&self) -> Vec<Tensor> {
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
            return Err(Error::Ensemble(EnsembleProblem::PerMember {
                members: n,
                what: "activity flags",
                found: active.len(),
            }));
        }
        self.step_rows(&Rows::Dense(x.shallow_clone()), y, w, pos_weight, active)
    }

    /// [`Trainer::step`] on dense or sparse rows.
    pub(super) fn step_rows(
        &mut self,
        x: &Rows,
        y: &Tensor,
        w: &Tensor,
        pos_weight: &Tensor,
        active: &[bool],
    ) -> Result<Vec<f32>> {
        if self.optimizer == Optimizer::Fista {
            self.extrapolate(active)?;
        }
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
        match self.optimizer {
            Optimizer::Adam => self.apply_adam(&penalized, active)?,
            Optimizer::Fista => self.apply_proximal(&penalized, active)?,
        }
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
        self.count_step(active);
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

    /// One more step for each active member (Adam's bias correction, FISTA's momentum).
    fn count_step(&mut self, active: &[bool]) {
        for (k, &a) in active.iter().enumerate() {
            if a {
                self.steps[k] += 1;
            }
        }
    }

    /// Per-member `[n, 1]` tensor of `value(k)` for the active members and 0 for the others.
    fn per_member(&self, active: &[bool], value: impl Fn(usize) -> f64) -> Tensor {
        let values: Vec<f32> = (0..active.len())
            .map(|k| if active[k] { value(k) as f32 } else { 0.0 })
            .collect();
        Tensor::from_slice(&values)
            .view([active.len() as i64, 1])
            .to_device(self.ensemble.device)
    }

    /// FISTA's extrapolation before the gradient of step k (Beck & Teboulle 2009, §4): the
    /// parameters move from x_{k−1} to y_k = x_{k−1} + β_k·(x_{k−1} − x_{k−2}) with
    /// β_k = (t_{k−1} − 1) / t_k, t_1 = 1, t_{k+1} = (1 + √(1 + 4t_k²)) / 2; `previous` becomes
    /// x_{k−1}. Inactive members keep their parameters (β = 0) and their `previous`.
    fn extrapolate(&mut self, active: &[bool]) -> Result<()> {
        let n = self.ensemble.len() as i64;
        let momentum = self.per_member(active, |k| fista_momentum(self.steps[k] + 1));
        let running = self.per_member(active, |_| 1.0).gt(0.0);
        let _guard = tch::no_grad_guard();
        for (p, previous) in self.params().iter().zip(&mut self.previous) {
            let per_member = p.numel() as i64 / n;
            let current = p.detach().copy();
            let view = |t: &Tensor| t.f_view([n, per_member]);
            let (pv, xv) = (view(p)?, view(previous)?);
            // y = x + β (x − x_prev)
            let y = &pv + (&pv - &xv) * &momentum;
            pv.shallow_clone().f_copy_(&y)?;
            // previous ← x_{k−1} for the active members only.
            let next_previous = view(&current)?.f_where_self(&running, &xv)?;
            xv.shallow_clone().f_copy_(&next_previous)?;
        }
        Ok(())
    }

    /// FISTA's proximal gradient step from y_k: x_k = prox(y_k − α∇f(y_k)), the proximal map
    /// of α·λ₁‖W‖₁ being soft-thresholding of the weights by α·λ₁ (biases are not penalized).
    fn apply_proximal(&mut self, losses: &Tensor, active: &[bool]) -> Result<()> {
        let n = self.ensemble.len() as i64;
        let params = self.params();
        let grads = Tensor::f_run_backward(&[losses.sum(Kind::Float)], &params, false, false)?;
        self.count_step(active);
        let step = self.per_member(active, |_| self.learning_rate);
        let shrink = self.per_member(active, |_| self.learning_rate * self.l1);
        let weights = self.ensemble.weights.len();
        let _guard = tch::no_grad_guard();
        for (i, (p, g)) in params.iter().zip(grads).enumerate() {
            let per_member = p.numel() as i64 / n;
            let pv = p.f_view([n, per_member])?;
            let gv = g.f_contiguous()?.f_view([n, per_member])?;
            // Inactive members: step 0 and shrink 0 leave them as they are.
            let mut x = &pv - &gv * &step;
            if i < weights && self.l1 > 0.0 {
                x = x.sign() * (x.abs() - &shrink).clamp_min(0.0);
            }
            pv.shallow_clone().f_copy_(&x)?;
        }
        Ok(())
    }

    /// The ensemble being trained.
    pub fn ensemble(&self) -> &Ensemble {
        &self.ensemble
    }
}

impl Trainer {
    /// Keeps only the members at local positions `keep` (parameters, moments, step counts).
    pub(super) fn retain(self, keep: &[usize]) -> Result<Trainer> {
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
            optimizer: self.optimizer,
            l1: self.l1,
            previous: select(&self.previous),
            ensemble,
        })
    }
}

/// FISTA's momentum β_k = (t_{k−1} − 1) / t_k of step k ≥ 1 (β_1 = 0): t_1 = 1,
/// t_{j+1} = (1 + √(1 + 4t_j²)) / 2.
fn fista_momentum(step: u64) -> f64 {
    let mut t_previous = 1.0f64;
    let mut t = 1.0f64;
    for _ in 1..step {
        t_previous = t;
        t = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
    }
    // Step 1 (and 0) leave t_previous = t = 1: β = 0.
    (t_previous - 1.0) / t
}
