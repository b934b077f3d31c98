//! Batched vs sequential teacher training on the CPU (a benchmark, not a test: it prints timings).
//!
//!   cargo bench --release -p trainer --bench ensemble
//!   BENCH_TEACHERS=250 BENCH_EPOCHS=2 BENCH_THREADS=2 BENCH_HIDDEN=512,128 cargo bench -p trainer --bench ensemble
//!
//! Both modes train the same teachers (the seeds' 500 → 512 → 128 → 1 network, shards of the
//! size the full CSIC run gives: 125 training + 31 held-out samples, batch 32) for a fixed number of
//! epochs (patience larger than the epochs, so no teacher stops early and both do the same work).
//! The sequential mode trains one one-member model after the other, as N separate trainings would.
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use trainer::dense::DenseMatrix;
use trainer::ensemble::{self, ClassBalance, Ensemble, LabeledRows, MemberData, Mode, TrainConfig};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Rows shaped like l1-normalized TF-IDF: a dozen non-zero features summing to 1.
fn rows(n: usize, dim: usize, rng: &mut ChaCha20Rng) -> LabeledRows {
    let mut values = vec![0f32; n * dim];
    let mut y = Vec::with_capacity(n);
    for r in 0..n {
        let malicious = rng.random_range(0.0..1.0) < 0.2;
        for _ in 0..12 {
            let j = if malicious {
                rng.random_range(0..dim / 2)
            } else {
                rng.random_range(dim / 2..dim)
            };
            values[r * dim + j] += 1.0 / 12.0;
        }
        y.push(malicious);
    }
    LabeledRows {
        x: DenseMatrix::new(n, dim, values).unwrap(),
        y,
    }
}

fn main() {
    let teachers = env("BENCH_TEACHERS", 250);
    let epochs = env("BENCH_EPOCHS", 2);
    if let Ok(t) = std::env::var("BENCH_THREADS") {
        tch::set_num_threads(t.parse().expect("BENCH_THREADS is a number"));
    }
    let dim = 500;
    let config = TrainConfig {
        hidden: std::env::var("BENCH_HIDDEN")
            .map(|h| {
                h.split(',')
                    .map(|w| w.trim().parse().expect("BENCH_HIDDEN: widths like 512,128"))
                    .collect()
            })
            .unwrap_or_else(|_| vec![512, 128]),
        max_epochs: epochs,
        batch_size: 32,
        learning_rate: 0.003,
        patience: epochs + 1,
        class_balance: ClassBalance::PosWeight,
    };
    let mut data_rng = ChaCha20Rng::seed_from_u64(1);
    let data: Vec<MemberData> = (0..teachers)
        .map(|_| MemberData {
            train: rows(125, dim, &mut data_rng),
            holdout: rows(31, dim, &mut data_rng),
        })
        .collect();
    let streams = || {
        (0..teachers)
            .map(|k| ChaCha20Rng::seed_from_u64(100 + k as u64))
            .collect::<Vec<_>>()
    };
    let init = ensemble::init_members(&config.dims(dim), &mut streams());
    eprintln!(
        "bench: {teachers} teachers, widths {:?}, {epochs} epochs, {} libtorch threads",
        config.dims(dim),
        tch::get_num_threads()
    );

    let mut seconds = Vec::new();
    for mode in [Mode::Batched, Mode::Sequential] {
        let model = Ensemble::from_members(&init, tch::Device::Cpu).unwrap();
        let started = Instant::now();
        let (_, reports) =
            ensemble::train(model, &data, &config, &mut streams(), mode, "").unwrap();
        let s = started.elapsed().as_secs_f64();
        assert!(reports.iter().all(|r| r.epochs == epochs));
        eprintln!("bench: {mode:?}: {s:.2} s");
        seconds.push(s);
    }
    println!(
        "{}",
        serde_json::json!({
            "teachers": teachers,
            "epochs": epochs,
            "threads": tch::get_num_threads(),
            "widths": config.dims(dim),
            "batched_seconds": seconds[0],
            "sequential_seconds": seconds[1],
            "speedup": seconds[1] / seconds[0],
        })
    );
}
