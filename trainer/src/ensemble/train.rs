//! Training every member on its own data with its own early stopping and threshold.
use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::config::{ClassBalance, MemberThreshold, Mode, Optimizer, TrainConfig};
use super::data::{LabeledRows, MemberData};
use super::model::{Ensemble, CHUNK_ELEMENTS};
use super::optimizer::{bce_rows, Trainer};
use super::rows::{pad, InputLayout, Padded};
use crate::error::{EnsembleProblem, Error, Result};
use crate::metrics::youden_threshold;

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

/// Per-member `pos_weight` (negatives / positives; 1 when a class is missing or balancing is off).
fn pos_weights(data: &[MemberData], balance: ClassBalance) -> Vec<f32> {
    data.iter()
        .map(|d| {
            // Weighted counts: a row of weight w is w copies.
            let weight = |i: usize| d.train_weights.as_ref().map_or(1.0, |w| f64::from(w[i]));
            let (mut pos, mut neg) = (0.0f64, 0.0f64);
            for (i, &y) in d.train.y.iter().enumerate() {
                if y {
                    pos += weight(i);
                } else {
                    neg += weight(i);
                }
            }
            match balance {
                ClassBalance::PosWeight if pos > 0.0 && neg > 0.0 => (neg / pos) as f32,
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
/// one member after the other, each with its own rows' shapes, so that a member's result depends
/// on its own data alone (how teachers train); `Mode::Batched` trains all at once, padded to the
/// largest member (results equal up to float rounding). The first layer reads its rows as
/// `layout` says (`InputLayout::Auto`: as the optimizer suits). Progress goes to stderr under
/// `label` unless it is empty.
pub fn train<R: Rng>(
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
        let (what, found) = if data.len() != n {
            ("data sets", data.len())
        } else {
            ("random streams", rngs.len())
        };
        return Err(Error::Ensemble(EnsembleProblem::PerMember {
            members: n,
            what,
            found,
        }));
    }
    // Without held-out samples (teachers.holdout_fraction: 0) every member trains for exactly
    // max_epochs and keeps its last weights; a mix of members with and without is an error.
    let fixed_epochs = data.iter().all(|d| d.holdout.y.is_empty());
    if fixed_epochs && config.member_threshold != MemberThreshold::Half {
        return Err(Error::Ensemble(EnsembleProblem::FixedEpochsThreshold));
    }
    for (k, d) in data.iter().enumerate() {
        if d.train.y.is_empty() || (d.holdout.y.is_empty() && !fixed_epochs) {
            return Err(Error::Ensemble(EnsembleProblem::Samples {
                member: k,
                train: d.train.y.len(),
                holdout: d.holdout.y.len(),
            }));
        }
        if let Some(w) = &d.train_weights {
            if w.len() != d.train.y.len() || w.iter().any(|&x| !(x.is_finite() && x > 0.0)) {
                return Err(Error::Ensemble(EnsembleProblem::Weights {
                    member: k,
                    weights: w.len(),
                    rows: d.train.y.len(),
                }));
            }
        }
        for (what, set) in [("training", &d.train), ("held-out", &d.holdout)] {
            if set.x.rows != set.y.len() || set.x.cols != ensemble.dims[0] {
                return Err(Error::Ensemble(EnsembleProblem::Shape {
                    member: k,
                    set: what,
                    rows: set.x.rows,
                    cols: set.x.cols,
                    labels: set.y.len(),
                    input: ensemble.dims[0],
                }));
            }
        }
    }
    // `Auto` is resolved WITHOUT looking at the rows: the teachers' rows are private, and one
    // record could flip a data-dependent choice and so change every teacher's float rounding
    // (more than one teacher's output for one record; independent review). The sparse layout
    // computes the same sums as the dense one (padding adds exact zeros) and is the cheaper one
    // for the featurizer's sparse rows.
    // FISTA's full batch of every row is cheapest as one dense `bmm` per step (the sparse
    // layout pads every row to the longest: 5 s a step for train.yaml's teachers against 0.4 s;
    // memory N·rows·features floats, 1.7 GB there); the choice depends on the config only.
    let layout = match (layout, config.optimizer) {
        (InputLayout::Auto, Optimizer::Adam) => InputLayout::Sparse,
        (InputLayout::Auto, Optimizer::Fista) => InputLayout::Dense,
        (chosen, _) => chosen,
    };
    match mode {
        Mode::Batched => train_batched(ensemble, data, config, rngs, label, layout),
        Mode::Sequential => {
            let device = ensemble.device;
            let members = ensemble.members()?;
            let mut trained = Vec::with_capacity(n);
            let mut reports = Vec::with_capacity(n);
            // One bar over the members (a line every tenth of them without a terminal).
            let bar = (!label.is_empty()).then(|| crate::log::Progress::new(n as u64));
            for k in 0..n {
                let one = Ensemble::from_members(std::slice::from_ref(&members[k]), device)?;
                let (one, mut report) =
                    train_batched(one, &data[k..=k], config, &mut rngs[k..=k], "", layout)?;
                trained.push(one.members()?.remove(0));
                reports.push(report.remove(0));
                if let Some(bar) = &bar {
                    let done = k + 1;
                    let line = format!("{label}: {done}/{n} trained, each on its own rows");
                    if done == n || done % n.div_ceil(10) == 0 {
                        bar.step(done as u64, line);
                    } else {
                        bar.set_position(done as u64);
                    }
                }
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
        let train_weights: Vec<Option<&[f32]>> = ids
            .iter()
            .map(|&k| data[k].train_weights.as_deref())
            .collect();
        let train_data = pad(&train_sets, &train_weights, cols, layout, device);
        let holdout = pad(&holdout_sets, &vec![None; n], cols, layout, device);
        let weights: Vec<f32> = ids.iter().map(|&k| pos_weights[k]).collect();
        let pos_weight = Tensor::from_slice(&weights)
            .view([n as i64, 1])
            .to_device(device);
        let sizes: Vec<usize> = ids.iter().map(|&k| data[k].train.y.len()).collect();
        // A member's batches are the same whatever the others' sizes: with B >= its size it takes
        // all its rows in one step, exactly as with B = its size. (FISTA takes every row at once:
        // `full_batch_step`.)
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

/// Each member's early-stopping record, indexed by its position in the full ensemble.
struct Progress {
    best_loss: Vec<f64>,
    best_epoch: Vec<usize>,
    epochs: Vec<usize>,
    bad_epochs: Vec<usize>,
}

impl Progress {
    /// `n` members, none trained yet.
    fn new(n: usize) -> Progress {
        Progress {
            best_loss: vec![f64::INFINITY; n],
            best_epoch: vec![0usize; n],
            epochs: vec![0usize; n],
            bad_epochs: vec![0usize; n],
        }
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

    let mut trainer = Trainer::new(ensemble, config.learning_rate)
        .with_weight_decay(config.weight_decay)
        .with_optimizer(config.optimizer, config.l1);
    // Best weights of every member, full size; members copy theirs in when they improve.
    let mut best: Vec<Tensor> = trainer.params().iter().map(|p| p.detach().copy()).collect();
    let mut progress = Progress::new(n_all);
    // Local activity (position in `work.ids`).
    let mut active = vec![true; n_all];

    // Epochs: a bar on a terminal, one line each otherwise (nothing when `label` is empty).
    let bar = (!label.is_empty()).then(|| crate::log::Progress::new(config.max_epochs as u64));
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
        match config.optimizer {
            Optimizer::Adam => train_epoch(&mut trainer, &work, &active, rngs, device)?,
            Optimizer::Fista => full_batch_step(&mut trainer, &work, &active)?,
        }
        // Held-out loss per member, then keep the improved members' weights. Without held-out
        // samples every running member "improves" each epoch: the last weights are kept.
        let losses = holdout_losses(&trainer, &work, device, fixed_epochs)?;
        let improved_local = early_stopping(
            &mut progress,
            &mut active,
            &work.ids,
            &losses,
            epoch,
            fixed_epochs,
            config.patience,
        );
        keep_best(
            &mut best,
            &trainer,
            &work.ids,
            &improved_local,
            n_all,
            device,
        )?;
        if let Some(bar) = &bar {
            let line = epoch_line(label, epoch, config, fixed_epochs, &active, &progress);
            bar.step(epoch as u64, line);
        }
    }

    // Every member's best weights.
    let dims = trainer.ensemble.dims.clone();
    drop(trainer);
    let ensemble = best_ensemble(dims, best, device);

    // Thresholds: Youden's J on each member's held-out scores. Only the held-out rows are padded
    // again (the training rows' padded copy, 1.7 GB for train.yaml's dense FISTA teachers, is
    // freed first).
    drop(work);
    let holdout_sets: Vec<&LabeledRows> = data.iter().map(|d| &d.holdout).collect();
    let holdout = pad(&holdout_sets, &vec![None; data.len()], cols, layout, device);
    let reports = member_reports(
        &ensemble,
        &holdout,
        data,
        config,
        &pos_weight_values,
        &progress,
        fixed_epochs,
    )?;
    Ok((ensemble, reports))
}

/// The ensemble of layer widths `dims` whose parameters are `best` (the weights of every layer,
/// then the biases, as [`Trainer::params`] lists them).
fn best_ensemble(dims: Vec<usize>, best: Vec<Tensor>, device: Device) -> Ensemble {
    let layers = dims.len() - 1;
    let mut best = best.into_iter();
    let weights: Vec<Tensor> = best.by_ref().take(layers).collect();
    let biases: Vec<Tensor> = best.collect();
    Ensemble {
        device,
        dims,
        weights,
        biases,
    }
}

/// One epoch of mini-batch steps: each active member (local position in `work.ids`) goes once
/// through its training rows in the order of a fresh permutation drawn from its own stream.
fn train_epoch<R: Rng>(
    trainer: &mut Trainer,
    work: &Working,
    active: &[bool],
    rngs: &mut [R],
    device: Device,
) -> Result<()> {
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
        // The rows' own weights (1 unless given), 0 for a batch's padding entries.
        let w = work
            .train_data
            .w
            .view([-1])
            .index_select(0, &index)
            .view([n as i64, batch as i64])
            * Tensor::from_slice(&weight)
                .view([n as i64, batch as i64])
                .to_device(device);
        trainer.step_rows(&x, &y, &w, &work.pos_weight, &step_active)?;
    }
    Ok(())
}

/// One FISTA step on every row of every active member: the padded rows as they are stored (a
/// full batch needs no order, so nothing is selected or copied; padding rows weigh 0).
fn full_batch_step(trainer: &mut Trainer, work: &Working, active: &[bool]) -> Result<()> {
    let n = work.ids.len() as i64;
    let rows = work.train_data.narrow(n, 0, work.train_data.max as i64);
    trainer.step_rows(
        &rows,
        &work.train_data.y,
        &work.train_data.w,
        &work.pos_weight,
        active,
    )?;
    Ok(())
}

/// Each working member's mean loss on its held-out rows, scored in chunks (NaN for every
/// member with `fixed_epochs`: there are no held-out rows).
fn holdout_losses(
    trainer: &Trainer,
    work: &Working,
    device: Device,
    fixed_epochs: bool,
) -> Result<Vec<f32>> {
    let n = work.ids.len();
    if fixed_epochs {
        return Ok(vec![f32::NAN; n]);
    }
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
    Ok(Vec::<f32>::try_from((sum / counts).to_device(Device::Cpu))?)
}

/// Records epoch `epoch` for every active member (local position k, full-ensemble index
/// `ids[k]`): an improved held-out loss resets its patience, `patience` epochs without one stop
/// it. Returns the local positions of the members that improved (every active one with
/// `fixed_epochs`).
fn early_stopping(
    progress: &mut Progress,
    active: &mut [bool],
    ids: &[usize],
    losses: &[f32],
    epoch: usize,
    fixed_epochs: bool,
    patience: usize,
) -> Vec<usize> {
    let mut improved_local = Vec::new();
    for k in 0..ids.len() {
        if !active[k] {
            continue;
        }
        let m = ids[k];
        progress.epochs[m] = epoch;
        let loss = losses[k] as f64;
        if fixed_epochs {
            progress.best_epoch[m] = epoch;
            improved_local.push(k);
        } else if loss < progress.best_loss[m] {
            progress.best_loss[m] = loss;
            progress.best_epoch[m] = epoch;
            progress.bad_epochs[m] = 0;
            improved_local.push(k);
        } else {
            progress.bad_epochs[m] += 1;
            if progress.bad_epochs[m] >= patience {
                active[k] = false;
            }
        }
    }
    improved_local
}

/// Copies the current weights of the members at local positions `improved_local` into `best`
/// (full size, indexed by `ids`).
fn keep_best(
    best: &mut [Tensor],
    trainer: &Trainer,
    ids: &[usize],
    improved_local: &[usize],
    n_all: usize,
    device: Device,
) -> Result<()> {
    if improved_local.is_empty() {
        return Ok(());
    }
    let _guard = tch::no_grad_guard();
    let local: Vec<i64> = improved_local.iter().map(|&k| k as i64).collect();
    let global: Vec<i64> = improved_local.iter().map(|&k| ids[k] as i64).collect();
    let local = Tensor::from_slice(&local).to_device(device);
    let global = Tensor::from_slice(&global).to_device(device);
    for (b, p) in best.iter_mut().zip(trainer.params()) {
        if improved_local.len() == n_all {
            b.f_copy_(&p)?;
        } else {
            let _ = b.f_index_copy_(0, &global, &p.index_select(0, &local))?;
        }
    }
    Ok(())
}

/// One epoch's progress line.
fn epoch_line(
    label: &str,
    epoch: usize,
    config: &TrainConfig,
    fixed_epochs: bool,
    active: &[bool],
    progress: &Progress,
) -> String {
    let n_all = progress.epochs.len();
    if fixed_epochs {
        return format!(
            "{label}: epoch {epoch}/{} (fixed epochs, no held-out samples)",
            config.max_epochs
        );
    }
    let running = active.iter().filter(|&&a| a).count();
    let finite: Vec<f64> = progress
        .best_loss
        .iter()
        .copied()
        .filter(|l| l.is_finite())
        .collect();
    let mean = finite.iter().sum::<f64>() / finite.len().max(1) as f64;
    format!(
        "{label}: epoch {epoch}/{}: {running}/{n_all} still training, mean best held-out loss {mean:.4}",
        config.max_epochs
    )
}

/// Every member's report, its threshold chosen on its held-out scores under `ensemble` (the best
/// weights; `holdout` holds every member's padded held-out rows).
fn member_reports(
    ensemble: &Ensemble,
    holdout: &Padded,
    data: &[MemberData],
    config: &TrainConfig,
    pos_weight_values: &[f32],
    progress: &Progress,
    fixed_epochs: bool,
) -> Result<Vec<MemberReport>> {
    let n_all = data.len();
    let mut reports = Vec::with_capacity(n_all);
    let holdout_scores = if fixed_epochs {
        Vec::new()
    } else {
        let _guard = tch::no_grad_guard();
        let logits = ensemble.logits_rows(&holdout.narrow(n_all as i64, 0, holdout.max as i64));
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
            .get(k * holdout.max..k * holdout.max + h.y.len())
            .unwrap_or(&[]);
        let (threshold, fallback) = match config.member_threshold {
            MemberThreshold::Half => (0.5, false),
            MemberThreshold::Youden => match youden_threshold(scores, &h.y) {
                Some(t) => (t, false),
                None => (0.5, true),
            },
        };
        let best_loss = progress.best_loss[k];
        reports.push(MemberReport {
            train_samples: data[k].train.y.len(),
            holdout_samples: h.y.len(),
            train_positives: data[k].train.y.iter().filter(|&&y| y).count(),
            pos_weight: pos_weight_values[k],
            epochs: progress.epochs[k],
            best_epoch: progress.best_epoch[k],
            best_holdout_loss: best_loss.is_finite().then_some(best_loss),
            threshold,
            threshold_fallback: fallback,
        });
    }
    Ok(reports)
}
