//! The batched ensemble against independent trainings, masking, Adam against libtorch's own, and
//! Youden's threshold on a hand-made ROC. Real libtorch on the CPU.
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use tch::nn::OptimizerConfig;
use tch::{Device, Kind, Tensor};
use trainer::dense::DenseMatrix;
use trainer::ensemble::{
    self, ClassBalance, Ensemble, InputLayout, LabeledRows, MemberData, Mode, TrainConfig, Trainer,
};
use trainer::metrics::{roc_curve, youden_threshold};
use trainer::model::Mlp;

const DIM: usize = 12;

/// `n` rows; label = malicious when the first features outweigh the next ones, flipped with
/// probability `noise` (so members differ in how fast they stop improving).
fn synthetic(n: usize, noise: f64, rng: &mut ChaCha20Rng) -> LabeledRows {
    let mut values = Vec::with_capacity(n * DIM);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f32> = (0..DIM).map(|_| rng.random_range(0.0f32..1.0)).collect();
        let signal = row[0] + row[1] - row[2] - row[3] > 0.3;
        y.push(if rng.random_range(0.0..1.0) < noise {
            !signal
        } else {
            signal
        });
        values.extend(row);
    }
    LabeledRows {
        x: DenseMatrix::new(n, DIM, values).unwrap(),
        y,
    }
}

fn member_data(seed: u64) -> Vec<MemberData> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    // Different shard sizes and label noise per member: they stop at different epochs.
    [(40, 0.0), (55, 0.3), (33, 0.1), (61, 0.45), (47, 0.05)]
        .iter()
        .map(|&(n, noise)| MemberData {
            train: synthetic(n, noise, &mut rng),
            holdout: synthetic(n / 3, noise, &mut rng),
            train_weights: None,
        })
        .collect()
}

/// [`member_data`] with no held-out rows (`teachers.holdout_fraction: 0`).
fn member_data_without_holdout(seed: u64) -> Vec<MemberData> {
    member_data(seed)
        .into_iter()
        .map(|d| MemberData {
            holdout: LabeledRows {
                x: DenseMatrix::new(0, DIM, vec![]).unwrap(),
                y: vec![],
            },
            ..d
        })
        .collect()
}

fn config() -> TrainConfig {
    TrainConfig {
        hidden: vec![16, 8],
        max_epochs: 40,
        batch_size: 8,
        learning_rate: 0.01,
        patience: 3,
        class_balance: ClassBalance::PosWeight,
        ..TrainConfig::default()
    }
}

fn streams(n: usize) -> Vec<ChaCha20Rng> {
    (0..n)
        .map(|k| ChaCha20Rng::seed_from_u64(1000 + k as u64))
        .collect()
}

fn max_abs_diff(a: &Mlp, b: &Mlp) -> f32 {
    a.layers
        .iter()
        .zip(&b.layers)
        .flat_map(|(la, lb)| {
            la.weight
                .iter()
                .zip(&lb.weight)
                .chain(la.bias.iter().zip(&lb.bias))
        })
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn batched_training_equals_independent_trainings() {
    let data = member_data(7);
    let cfg = config();
    let dims = cfg.dims(DIM);
    let init = ensemble::init_members(&dims, &mut streams(data.len()));

    let batched = Ensemble::from_members(&init, Device::Cpu).unwrap();
    let (batched, batched_reports) = ensemble::train(
        batched,
        &data,
        &cfg,
        &mut streams(data.len()),
        Mode::Batched,
        "",
        ensemble::InputLayout::Auto,
    )
    .unwrap();
    let batched = batched.members().unwrap();

    // Each member alone: a one-member model, its own data, its own stream, nothing else.
    // Batched training pads every member to the largest member's rows, so it agrees with these
    // up to float rounding only; sequential training (how teachers train) agrees bit for bit.
    let mut alone_members = Vec::new();
    for k in 0..data.len() {
        let mut rngs = streams(data.len());
        let one = Ensemble::from_members(std::slice::from_ref(&init[k]), Device::Cpu).unwrap();
        let (one, reports) = ensemble::train(
            one,
            &data[k..=k],
            &cfg,
            &mut rngs[k..=k],
            Mode::Batched,
            "",
            ensemble::InputLayout::Auto,
        )
        .unwrap();
        let alone = one.members().unwrap().remove(0);
        alone_members.push(alone.clone());
        let diff = max_abs_diff(&alone, &batched[k]);
        assert!(
            diff < 1e-4,
            "member {k}: batched and independent weights differ by {diff}"
        );
        assert_eq!(
            reports[0].epochs, batched_reports[k].epochs,
            "member {k}: epochs"
        );
        assert_eq!(
            reports[0].best_epoch, batched_reports[k].best_epoch,
            "member {k}: best epoch"
        );
        assert!(
            (reports[0].threshold - batched_reports[k].threshold).abs() < 1e-4,
            "member {k}: threshold"
        );
        // Training changed the weights.
        assert!(
            max_abs_diff(&alone, &init[k]) > 1e-3,
            "member {k} did not train"
        );
    }
    // The test only means something if members stopped at different epochs (masking was used).
    let mut epochs: Vec<usize> = batched_reports.iter().map(|r| r.epochs).collect();
    epochs.sort_unstable();
    epochs.dedup();
    assert!(
        epochs.len() > 1,
        "all members stopped at the same epoch: {batched_reports:?}"
    );
    // ... and at least three had stopped while another still trained, so the batched model was
    // also shrunk to the members still training (the compaction path) before the end.
    let last = batched_reports.iter().map(|r| r.epochs).max().unwrap();
    assert!(
        batched_reports.iter().filter(|r| r.epochs < last).count() >= 3,
        "{batched_reports:?}"
    );

    // Sequential mode gives the same result as batched mode.
    let seq = Ensemble::from_members(&init, Device::Cpu).unwrap();
    let (seq, seq_reports) = ensemble::train(
        seq,
        &data,
        &cfg,
        &mut streams(data.len()),
        Mode::Sequential,
        "",
        ensemble::InputLayout::Auto,
    )
    .unwrap();
    for (k, m) in seq.members().unwrap().iter().enumerate() {
        assert!(
            max_abs_diff(m, &batched[k]) < 1e-4,
            "member {k}: sequential differs from batched"
        );
        assert_eq!(seq_reports[k].epochs, batched_reports[k].epochs);
        assert!(
            m == &alone_members[k],
            "member {k}: sequential training is not the member alone, bit for bit"
        );
    }
}

fn batch(rng: &mut ChaCha20Rng, n: usize, b: usize) -> (Tensor, Tensor, Tensor) {
    let rows: Vec<LabeledRows> = (0..n).map(|_| synthetic(b, 0.1, rng)).collect();
    let x: Vec<f32> = rows.iter().flat_map(|r| r.x.values.clone()).collect();
    let y: Vec<f32> = rows
        .iter()
        .flat_map(|r| r.y.iter().map(|&v| v as u8 as f32))
        .collect();
    (
        Tensor::from_slice(&x).view([n as i64, b as i64, DIM as i64]),
        Tensor::from_slice(&y).view([n as i64, b as i64]),
        Tensor::ones([n as i64, b as i64], (Kind::Float, Device::Cpu)),
    )
}

/// One member of the batched Adam equals libtorch's `nn::Adam` on a plain (unbatched) network
/// with libtorch's `binary_cross_entropy_with_logits(pos_weight)`.
#[test]
fn masked_adam_step_matches_libtorch_adam() {
    let dims = [DIM, 10, 1];
    let init = ensemble::init_members(&dims, &mut streams(3));
    let mut trainer = Trainer::new(Ensemble::from_members(&init, Device::Cpu).unwrap(), 0.01);
    let pos_weight_values = [1.0f32, 2.5, 0.5];
    let pos_weight = Tensor::from_slice(&pos_weight_values).view([3, 1]);

    // Reference for member 1.
    let k = 1;
    let vs = tch::nn::VarStore::new(Device::Cpu);
    let root = vs.root();
    let mut params = Vec::new();
    for (l, layer) in init[k].layers.iter().enumerate() {
        let w = Tensor::from_slice(&layer.weight).view([layer.out_dim as i64, layer.in_dim as i64]);
        let b = Tensor::from_slice(&layer.bias);
        params.push((
            root.var_copy(&format!("w{l}"), &w),
            root.var_copy(&format!("b{l}"), &b),
        ));
    }
    let mut opt = tch::nn::Adam::default().build(&vs, 0.01).unwrap();

    let mut rng = ChaCha20Rng::seed_from_u64(5);
    for _ in 0..12 {
        let (x, y, w) = batch(&mut rng, 3, 6);
        trainer
            .step(&x, &y, &w, &pos_weight, &[true, true, true])
            .unwrap();
        let xk = x.get(k as i64);
        let h = xk.matmul(&params[0].0.tr()) + &params[0].1;
        let logits = (h.relu().matmul(&params[1].0.tr()) + &params[1].1).squeeze_dim(-1);
        let loss = logits.binary_cross_entropy_with_logits::<Tensor>(
            &y.get(k as i64),
            None,
            Some(Tensor::from_slice(&[pos_weight_values[k]])),
            tch::Reduction::Mean,
        );
        opt.backward_step(&loss);
    }
    let ours = &trainer.ensemble().members().unwrap()[k];
    for (l, layer) in ours.layers.iter().enumerate() {
        let w_ref = Vec::<f32>::try_from(params[l].0.detach().contiguous().view([-1])).unwrap();
        let b_ref = Vec::<f32>::try_from(params[l].1.detach()).unwrap();
        for (a, b) in layer
            .weight
            .iter()
            .zip(&w_ref)
            .chain(layer.bias.iter().zip(&b_ref))
        {
            assert!((a - b).abs() < 1e-5, "layer {l}: {a} vs libtorch Adam {b}");
        }
    }
}

/// A masked (stopped) member keeps its weights and its Adam state bit for bit while the others
/// train.
#[test]
fn masked_members_stay_fixed() {
    let dims = [DIM, 8, 1];
    let init = ensemble::init_members(&dims, &mut streams(3));
    let mut trainer = Trainer::new(Ensemble::from_members(&init, Device::Cpu).unwrap(), 0.05);
    let pos_weight = Tensor::ones([3, 1], (Kind::Float, Device::Cpu));
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    for _ in 0..5 {
        let (x, y, w) = batch(&mut rng, 3, 5);
        trainer
            .step(&x, &y, &w, &pos_weight, &[true, false, true])
            .unwrap();
    }
    let after = trainer.ensemble().members().unwrap();
    assert_eq!(after[1], init[1], "a masked member changed");
    assert!(max_abs_diff(&after[0], &init[0]) > 1e-4 && max_abs_diff(&after[2], &init[2]) > 1e-4);

    // Its Adam state was untouched too: its first real step equals a fresh trainer's first step.
    let (x, y, w) = batch(&mut rng, 3, 5);
    trainer
        .step(&x, &y, &w, &pos_weight, &[false, true, false])
        .unwrap();
    let mut fresh = Trainer::new(
        Ensemble::from_members(&init[1..2], Device::Cpu).unwrap(),
        0.05,
    );
    fresh
        .step(
            &x.narrow(0, 1, 1),
            &y.narrow(0, 1, 1),
            &w.narrow(0, 1, 1),
            &pos_weight.narrow(0, 1, 1),
            &[true],
        )
        .unwrap();
    let diff = max_abs_diff(
        &trainer.ensemble().members().unwrap()[1],
        &fresh.ensemble().members().unwrap()[0],
    );
    assert!(
        diff < 1e-6,
        "masked member's first step differs from a fresh one by {diff}"
    );
}

/// Early stopping keeps the best epoch's weights: re-scoring the held-out samples with the returned
/// weights gives the reported best held-out loss.
#[test]
fn early_stopping_returns_best_weights() {
    let data = member_data(11);
    let cfg = config();
    let init = ensemble::init_members(&cfg.dims(DIM), &mut streams(data.len()));
    let model = Ensemble::from_members(&init, Device::Cpu).unwrap();
    let (model, reports) = ensemble::train(
        model,
        &data,
        &cfg,
        &mut streams(data.len()),
        Mode::Batched,
        "",
        ensemble::InputLayout::Auto,
    )
    .unwrap();
    let members = model.members().unwrap();
    let mut stopped_early = 0;
    for (k, (m, r)) in members.iter().zip(&reports).enumerate() {
        assert!(r.best_epoch <= r.epochs);
        if r.best_epoch < r.epochs {
            stopped_early += 1;
        }
        let h = &data[k].holdout;
        let loss: f64 = (0..h.y.len())
            .map(|i| {
                let p = m.forward(h.x.row(i)).unwrap() as f64;
                let p = p.clamp(1e-7, 1.0 - 1e-7);
                if h.y[i] {
                    -(r.pos_weight as f64) * p.ln()
                } else {
                    -(1.0 - p).ln()
                }
            })
            .sum::<f64>()
            / h.y.len() as f64;
        let best = r
            .best_holdout_loss
            .expect("members with held-out samples report its loss");
        assert!(
            (loss - best).abs() < 1e-3 * (1.0 + loss),
            "member {k}: {loss} vs {best}"
        );
    }
    assert!(stopped_early > 0, "no member stopped early: {reports:?}");
}

#[test]
fn youden_threshold_on_a_hand_made_roc() {
    // benign: 0.1 0.2 0.3 0.6 | malicious: 0.4 0.7 0.8 0.9
    let scores = [0.1, 0.2, 0.3, 0.6, 0.4, 0.7, 0.8, 0.9];
    let labels = [false, false, false, false, true, true, true, true];
    let curve = roc_curve(&scores, &labels);
    // (fpr, tpr) at each threshold, highest first.
    let expected = [
        (f32::INFINITY, 0.0, 0.0),
        (0.9, 0.0, 0.25),
        (0.8, 0.0, 0.5),
        (0.7, 0.0, 0.75),
        (0.6, 0.25, 0.75),
        (0.4, 0.25, 1.0),
        (0.3, 0.5, 1.0),
        (0.2, 0.75, 1.0),
        (0.1, 1.0, 1.0),
    ];
    assert_eq!(curve.len(), expected.len());
    for (p, &(t, fpr, tpr)) in curve.iter().zip(&expected) {
        assert_eq!((p.threshold, p.fpr, p.tpr), (t, fpr, tpr));
    }
    // J = 0.75 at 0.7 and at 0.4: the tie goes to the higher threshold.
    assert_eq!(youden_threshold(&scores, &labels), Some(0.7));
    // Moving one benign score above 0.7 leaves 0.4 as the unique best (J = 0.75 vs 0.5).
    let scores2 = [0.1, 0.2, 0.3, 0.75, 0.4, 0.7, 0.8, 0.9];
    assert_eq!(youden_threshold(&scores2, &labels), Some(0.4));
    // One class only: undefined.
    assert_eq!(youden_threshold(&[0.2, 0.3], &[true, true]), None);
}

#[test]
fn vote_counts_use_each_members_threshold() {
    let scores = vec![vec![0.2, 0.9], vec![0.6, 0.6], vec![0.5, 0.1]];
    let votes = ensemble::count_votes(&scores, &[0.5, 0.7, 0.5]);
    assert_eq!(votes, vec![[2, 1], [2, 1]]);
}

/// Rows like l1-normalized TF-IDF: 1 to 6 non-zero features of `dim`, summing to 1; malicious
/// when most of the mass is on the first quarter of the features (label noise `noise`).
fn sparse_synthetic(n: usize, dim: usize, noise: f64, rng: &mut ChaCha20Rng) -> LabeledRows {
    let mut values = vec![0f32; n * dim];
    let mut y = Vec::with_capacity(n);
    for r in 0..n {
        let row = &mut values[r * dim..(r + 1) * dim];
        for _ in 0..rng.random_range(1..=6) {
            row[rng.random_range(0..dim)] += rng.random_range(0.1f32..1.0);
        }
        let total: f32 = row.iter().sum();
        row.iter_mut().for_each(|v| *v /= total);
        let signal = row[..dim / 4].iter().sum::<f32>() > 0.3;
        y.push(if rng.random_range(0.0..1.0) < noise {
            !signal
        } else {
            signal
        });
    }
    LabeledRows {
        x: DenseMatrix::new(n, dim, values).unwrap(),
        y,
    }
}

/// The sparse first layer (`embedding_bag` over each row's non-zeros) trains the same members as
/// the dense `bmm`, batched and sequentially, and `Auto` picks it for TF-IDF-like rows.
#[test]
fn sparse_first_layer_equals_dense() {
    const SPARSE_DIM: usize = 40;
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let data: Vec<MemberData> = [(40, 0.0), (57, 0.3), (33, 0.1), (61, 0.4), (47, 0.05)]
        .iter()
        .map(|&(n, noise)| MemberData {
            train: sparse_synthetic(n, SPARSE_DIM, noise, &mut rng),
            holdout: sparse_synthetic(n / 3, SPARSE_DIM, noise, &mut rng),
            train_weights: None,
        })
        .collect();
    let cfg = TrainConfig {
        learning_rate: 0.03,
        ..config()
    };
    let init = ensemble::init_members(&cfg.dims(SPARSE_DIM), &mut streams(data.len()));
    let run = |mode: Mode, layout: InputLayout| {
        let model = Ensemble::from_members(&init, Device::Cpu).unwrap();
        let (model, reports) = ensemble::train(
            model,
            &data,
            &cfg,
            &mut streams(data.len()),
            mode,
            "",
            layout,
        )
        .unwrap();
        (model.members().unwrap(), reports)
    };
    let (dense, dense_reports) = run(Mode::Batched, InputLayout::Dense);
    for (mode, layout) in [
        (Mode::Batched, InputLayout::Sparse),
        (Mode::Sequential, InputLayout::Sparse),
        (Mode::Batched, ensemble::InputLayout::Auto),
    ] {
        let (other, reports) = run(mode, layout);
        for k in 0..data.len() {
            let diff = max_abs_diff(&dense[k], &other[k]);
            assert!(
                diff < 1e-4,
                "{mode:?} {layout:?}, member {k}: differs from dense batched by {diff}"
            );
            assert_eq!(reports[k].epochs, dense_reports[k].epochs);
            assert_eq!(reports[k].best_epoch, dense_reports[k].best_epoch);
            assert!((reports[k].threshold - dense_reports[k].threshold).abs() < 1e-4);
        }
    }
    for k in 0..data.len() {
        assert!(
            max_abs_diff(&dense[k], &init[k]) > 1e-3,
            "member {k} did not train"
        );
    }
    let mut epochs: Vec<usize> = dense_reports.iter().map(|r| r.epochs).collect();
    epochs.sort_unstable();
    epochs.dedup();
    assert!(
        epochs.len() > 1,
        "no member stopped early: {dense_reports:?}"
    );
}

/// `Ensemble::scores` (sparse first layer for TF-IDF-like rows, dense for dense rows) equals
/// `Mlp::forward` for every member and row.
#[test]
fn ensemble_scores_match_score_row() {
    let mut rng = ChaCha20Rng::seed_from_u64(33);
    let members = ensemble::init_members(&[40, 24, 8, 1], &mut streams(4));
    let model = Ensemble::from_members(&members, Device::Cpu).unwrap();
    let sparse = sparse_synthetic(300, 40, 0.0, &mut rng).x;
    let mut dense = sparse.clone();
    dense.values.iter_mut().for_each(|v| *v += 0.01);
    for x in [&sparse, &dense] {
        let scores = model.scores(x).unwrap();
        for (k, (m, member_scores)) in members.iter().zip(&scores).enumerate() {
            for (r, score) in member_scores.iter().enumerate().take(x.rows) {
                let expected = m.forward(x.row(r)).unwrap();
                assert!(
                    (score - expected).abs() < 1e-5,
                    "member {k}, row {r}: {score} vs forward {expected}"
                );
            }
        }
    }
}

/// Adam over parameters larger than one update chunk (a member's first layer split into column
/// chunks: 300 × 120 = 36,000 elements; or one member per chunk: 300 × 60) still equals
/// libtorch's `nn::Adam`, for every member.
#[test]
fn chunked_adam_matches_libtorch_adam_on_large_layers() {
    const WIDE: usize = 300;
    for hidden in [120usize, 60] {
        let dims = [WIDE, hidden, 1];
        let n = 3;
        let init = ensemble::init_members(&dims, &mut streams(n));
        let mut trainer = Trainer::new(Ensemble::from_members(&init, Device::Cpu).unwrap(), 0.01);
        let pos_weight = Tensor::ones([n as i64, 1], (Kind::Float, Device::Cpu));
        let mut references = Vec::new();
        for member in &init {
            let vs = tch::nn::VarStore::new(Device::Cpu);
            let root = vs.root();
            let params: Vec<(Tensor, Tensor)> = member
                .layers
                .iter()
                .enumerate()
                .map(|(l, layer)| {
                    let w = Tensor::from_slice(&layer.weight)
                        .view([layer.out_dim as i64, layer.in_dim as i64]);
                    (
                        root.var_copy(&format!("w{l}"), &w),
                        root.var_copy(&format!("b{l}"), &Tensor::from_slice(&layer.bias)),
                    )
                })
                .collect();
            let opt = tch::nn::Adam::default().build(&vs, 0.01).unwrap();
            references.push((vs, params, opt));
        }
        let mut rng = ChaCha20Rng::seed_from_u64(17);
        for _ in 0..6 {
            let x: Vec<f32> = (0..n * 5 * WIDE)
                .map(|_| rng.random_range(0.0f32..1.0))
                .collect();
            let y: Vec<f32> = (0..n * 5).map(|_| rng.random_range(0..2) as f32).collect();
            let x = Tensor::from_slice(&x).view([n as i64, 5, WIDE as i64]);
            let y = Tensor::from_slice(&y).view([n as i64, 5]);
            let w = Tensor::ones([n as i64, 5], (Kind::Float, Device::Cpu));
            trainer
                .step(&x, &y, &w, &pos_weight, &vec![true; n])
                .unwrap();
            for (k, (_, params, opt)) in references.iter_mut().enumerate() {
                let h = x.get(k as i64).matmul(&params[0].0.tr()) + &params[0].1;
                let logits = (h.relu().matmul(&params[1].0.tr()) + &params[1].1).squeeze_dim(-1);
                let loss = logits.binary_cross_entropy_with_logits::<Tensor>(
                    &y.get(k as i64),
                    None,
                    None,
                    tch::Reduction::Mean,
                );
                opt.backward_step(&loss);
            }
        }
        let ours = trainer.ensemble().members().unwrap();
        for (k, (_, params, _)) in references.iter().enumerate() {
            for (l, layer) in ours[k].layers.iter().enumerate() {
                let w_ref =
                    Vec::<f32>::try_from(params[l].0.detach().contiguous().view([-1])).unwrap();
                let b_ref = Vec::<f32>::try_from(params[l].1.detach()).unwrap();
                for (a, b) in layer
                    .weight
                    .iter()
                    .zip(&w_ref)
                    .chain(layer.bias.iter().zip(&b_ref))
                {
                    assert!(
                        (a - b).abs() < 1e-5,
                        "hidden {hidden}, member {k}, layer {l}: {a} vs libtorch Adam {b}"
                    );
                }
            }
        }
    }
}

#[test]
fn weight_decay_shrinks_the_weights_and_half_fixes_the_member_thresholds() {
    let data = member_data(11);
    let weight_norm = |cfg: &TrainConfig| {
        let init = ensemble::init_members(&cfg.dims(DIM), &mut streams(data.len()));
        let model = Ensemble::from_members(&init, Device::Cpu).unwrap();
        let (model, reports) = ensemble::train(
            model,
            &data,
            cfg,
            &mut streams(data.len()),
            Mode::Batched,
            "",
            ensemble::InputLayout::Auto,
        )
        .unwrap();
        let norm: f64 = model
            .members()
            .unwrap()
            .iter()
            .flat_map(|m| m.layers.iter().flat_map(|l| l.weight.iter()))
            .map(|&w| f64::from(w) * f64::from(w))
            .sum();
        (norm, reports)
    };
    let plain = TrainConfig {
        hidden: vec![],
        ..config()
    };
    let (free, free_reports) = weight_norm(&plain);
    let (decayed, half_reports) = weight_norm(&TrainConfig {
        weight_decay: 0.5,
        member_threshold: ensemble::MemberThreshold::Half,
        ..plain.clone()
    });
    assert!(decayed < 0.8 * free, "‖W‖² {decayed} with decay vs {free}");
    assert!(half_reports.iter().all(|r| r.threshold == 0.5));
    assert!(free_reports.iter().any(|r| r.threshold != 0.5));
}

/// `teachers.holdout_fraction: 0`: members without held-out samples train for exactly
/// `max_epochs` (no early stopping can end them) and keep their last weights; a mix of members
/// with and without held-out samples, or Youden's threshold without any, is refused.
#[test]
fn members_without_held_out_samples_train_every_epoch_and_keep_the_last_weights() {
    let no_holdout = member_data_without_holdout(12);
    let cfg = |epochs: usize| TrainConfig {
        hidden: vec![],
        max_epochs: epochs,
        patience: 1,
        member_threshold: ensemble::MemberThreshold::Half,
        ..config()
    };
    let train = |data: &[MemberData], cfg: &TrainConfig| {
        let init = ensemble::init_members(&cfg.dims(DIM), &mut streams(data.len()));
        let model = Ensemble::from_members(&init, Device::Cpu).unwrap();
        ensemble::train(
            model,
            data,
            cfg,
            &mut streams(data.len()),
            Mode::Batched,
            "",
            ensemble::InputLayout::Auto,
        )
    };
    let (six, reports) = train(&no_holdout, &cfg(6)).unwrap();
    for r in &reports {
        // patience 1 would have stopped some member before epoch 6 if held-out loss were used.
        assert_eq!((r.epochs, r.best_epoch), (6, 6), "{r:?}");
        assert_eq!(r.best_holdout_loss, None);
        assert_eq!(r.threshold, 0.5);
    }
    // The last weights: one more epoch moves every member.
    let (seven, _) = train(&no_holdout, &cfg(7)).unwrap();
    for (a, b) in six.members().unwrap().iter().zip(&seven.members().unwrap()) {
        assert!(
            max_abs_diff(a, b) > 0.0,
            "an extra epoch left a member unchanged"
        );
    }

    let mut mixed = no_holdout.clone();
    mixed[0] = member_data(12).remove(0);
    assert!(train(&mixed, &cfg(6)).is_err());
    let youden = TrainConfig {
        member_threshold: ensemble::MemberThreshold::Youden,
        ..cfg(6)
    };
    assert!(train(&no_holdout, &youden).is_err());
}

/// `optimizer: fista` with `l1`: the weights reached satisfy the optimality conditions of the
/// L1-penalized, class-weighted logistic regression of each member (for a weight at zero
/// |∂f/∂w| ≤ λ₁, for any other ∂f/∂w = −λ₁·sign(w)), which a wrong proximal step, momentum or
/// gradient would break; the noise features end exactly at zero; the batched members equal
/// independent trainings; and `l1` with Adam is refused.
#[test]
fn fista_reaches_the_l1_penalized_optimum_of_each_member() {
    let l1 = 0.01;
    let cfg = TrainConfig {
        hidden: vec![],
        max_epochs: 3000,
        learning_rate: 1.0,
        optimizer: ensemble::Optimizer::Fista,
        l1,
        member_threshold: ensemble::MemberThreshold::Half,
        ..config()
    };
    cfg.validate("teachers.training").unwrap();
    let data = member_data_without_holdout(13);
    let init = ensemble::init_members(&cfg.dims(DIM), &mut streams(data.len()));
    let train = |data: &[MemberData], init: &[trainer::model::Mlp]| {
        let model = Ensemble::from_members(init, Device::Cpu).unwrap();
        let (model, _) = ensemble::train(
            model,
            data,
            &cfg,
            &mut streams(data.len()),
            Mode::Batched,
            "",
            ensemble::InputLayout::Auto,
        )
        .unwrap();
        model.members().unwrap()
    };
    let members = train(&data, &init);
    let mut zeros = 0;
    for (k, (member, d)) in members.iter().zip(&data).enumerate() {
        let layer = &member.layers[0];
        let (w, b) = (&layer.weight, f64::from(layer.bias[0]));
        let rows = d.train.y.len();
        let positives = d.train.y.iter().filter(|&&y| y).count();
        let pos_weight = (rows - positives) as f64 / positives as f64;
        // ∂/∂w_j of mean_i −[p·y·log σ(z) + (1 − y)·log σ(−z)].
        let mut grad = [0f64; DIM];
        for (i, &y) in d.train.y.iter().enumerate() {
            let x = d.train.x.row(i);
            let z = b + x
                .iter()
                .zip(w)
                .map(|(&a, &c)| f64::from(a) * f64::from(c))
                .sum::<f64>();
            let s = 1.0 / (1.0 + (-z).exp());
            let dz = if y { pos_weight * (s - 1.0) } else { s };
            for j in 0..DIM {
                grad[j] += dz * f64::from(x[j]) / rows as f64;
            }
        }
        for j in 0..DIM {
            let wj = f64::from(w[j]);
            if wj == 0.0 {
                zeros += 1;
                assert!(
                    grad[j].abs() <= l1 * 1.05,
                    "member {k} w{j} = 0: |grad| {}",
                    grad[j]
                );
            } else {
                let want = -l1 * wj.signum();
                assert!(
                    (grad[j] - want).abs() <= l1 * 0.05,
                    "member {k} w{j} = {wj}: grad {} instead of {want}",
                    grad[j]
                );
            }
        }
    }
    // Features 4.. carry no signal: the penalty sets weights exactly to zero (15 of 60 here;
    // none without it).
    assert!(zeros >= data.len() * 2, "only {zeros} weights at zero");
    for k in 0..data.len() {
        let alone = train(&data[k..=k], &init[k..=k]).remove(0);
        // Relative to the weights' size: 300 FISTA steps on unregularized-size weights (up to
        // ~8 here) carry the float32 rounding of the batched and the single matmul (another
        // reduction order per CPU's kernels) into the last bits — 1.04e-4 on a weight of 8.3
        // (1.3e-5 relative) on an AMD EPYC, under 1e-4 elsewhere.
        let diff = max_abs_diff(&alone, &members[k]);
        let scale = members[k].layers[0]
            .weight
            .iter()
            .fold(1f32, |m, w| m.max(w.abs()));
        assert!(
            diff < 1e-4 * scale,
            "member {k}: batched and alone differ by {diff} (largest weight {scale})"
        );
    }
    let adam = TrainConfig {
        optimizer: ensemble::Optimizer::Adam,
        ..cfg.clone()
    };
    let err = adam.validate("teachers.training").unwrap_err().to_string();
    assert!(
        err.contains("teachers.training.l1") && err.contains("fista"),
        "{err}"
    );
}

/// `MemberData::train_weights`: a row of weight w trains as w copies of it — FISTA (full batch)
/// and Adam's mini-batches alike reach the same logistic regression from distinct rows with
/// weights as from the rows repeated (class-balanced, so the class counts are weighted too);
/// weights that are not one finite positive number per row are refused.
#[test]
fn a_row_of_weight_w_trains_as_w_copies() {
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let distinct = synthetic(30, 0.1, &mut rng);
    let copies: Vec<usize> = (0..30).map(|i| 1 + i % 4).collect();
    let repeated_rows: Vec<usize> = copies
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| std::iter::repeat_n(i, c))
        .collect();
    let repeated = distinct.select(&repeated_rows);
    let weights: Vec<f32> = copies.iter().map(|&c| c as f32).collect();
    let holdout = LabeledRows {
        x: DenseMatrix::new(0, DIM, vec![]).unwrap(),
        y: vec![],
    };
    for optimizer in [ensemble::Optimizer::Fista, ensemble::Optimizer::Adam] {
        let cfg = TrainConfig {
            hidden: vec![],
            max_epochs: if optimizer == ensemble::Optimizer::Fista {
                500
            } else {
                200
            },
            // One mini-batch holding every row: the same gradient as the full batch.
            batch_size: 1000,
            learning_rate: if optimizer == ensemble::Optimizer::Fista {
                1.0
            } else {
                0.05
            },
            optimizer,
            class_balance: ClassBalance::PosWeight,
            member_threshold: ensemble::MemberThreshold::Half,
            ..config()
        };
        let init = ensemble::init_members(&cfg.dims(DIM), &mut streams(1));
        let fit = |data: MemberData| {
            let model = Ensemble::from_members(&init, Device::Cpu).unwrap();
            ensemble::train(
                model,
                &[data],
                &cfg,
                &mut streams(1),
                Mode::Batched,
                "",
                ensemble::InputLayout::Auto,
            )
            .map(|(m, _)| m.members().unwrap().remove(0).layers[0].clone())
        };
        let a = fit(MemberData {
            train: repeated.clone(),
            holdout: holdout.clone(),
            train_weights: None,
        })
        .unwrap();
        let b = fit(MemberData {
            train: distinct.clone(),
            holdout: holdout.clone(),
            train_weights: Some(weights.clone()),
        })
        .unwrap();
        let differs = a
            .weight
            .iter()
            .chain(&a.bias)
            .zip(b.weight.iter().chain(&b.bias))
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        let scale = a.weight.iter().map(|x| x.abs()).fold(0f32, f32::max);
        assert!(
            differs < 1e-4 * scale.max(1.0),
            "{optimizer:?}: weights differ by {differs}"
        );
        // Unweighted distinct rows are another regression: the test can tell.
        let c = fit(MemberData {
            train: distinct.clone(),
            holdout: holdout.clone(),
            train_weights: None,
        })
        .unwrap();
        let apart = a
            .weight
            .iter()
            .zip(&c.weight)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(
            apart > 1e-3,
            "{optimizer:?}: copies changed nothing ({apart})"
        );
        for bad in [vec![1.0; 29], {
            let mut w = weights.clone();
            w[3] = 0.0;
            w
        }] {
            let err = fit(MemberData {
                train: distinct.clone(),
                holdout: holdout.clone(),
                train_weights: Some(bad),
            })
            .unwrap_err()
            .to_string();
            assert!(err.contains("weights"), "{err}");
        }
    }
}
