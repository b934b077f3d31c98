//! Batched vs sequential teacher training on the CPU (a benchmark, not a test: it prints timings).
//!
//!   cargo bench -p trainer --bench ensemble
//!   BENCH_TEACHERS=250 BENCH_EPOCHS=2 BENCH_THREADS=2 BENCH_HIDDEN=512,128 cargo bench -p trainer --bench ensemble
//!   BENCH_MODES=batched (or sequential): one mode only (for profiling with `perf record`)
//!   BENCH_SQRT=1: the micro-benchmark behind Adam's floored square root (see `apply_adam`)
//!
//! Each mode prints its wall time and this process's CPU time (the machine is shared: wall time
//! includes waiting for a core).
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

/// BENCH_SQRT=1: how long elementwise square roots of 2^15 floats take on zeros and non-zeros
/// (the Adam denominator), by each way libtorch offers.
fn sqrt_micro() {
    use tch::{Kind, Tensor};
    let n = 1i64 << 15;
    let out = Tensor::zeros([n], (Kind::Float, tch::Device::Cpu));
    for (name, v) in [
        ("ones", Tensor::ones([n], (Kind::Float, tch::Device::Cpu))),
        ("zeros", Tensor::zeros([n], (Kind::Float, tch::Device::Cpu))),
        (
            "1e-39",
            Tensor::full([n], 1e-39, (Kind::Float, tch::Device::Cpu)),
        ),
    ] {
        let half = Tensor::from_slice(&[0.5f32]);
        for op in ["sqrt", "pow0.5", "powT", "mul", "lerp"] {
            let run = || match op {
                "sqrt" => drop(v.sqrt_out(&out)),
                "pow0.5" => drop(v.pow_tensor_scalar_out(&out, 0.5)),
                "mul" => drop(v.mul_out(&out, &v)),
                "powT" => drop(v.pow_tensor_tensor_out(&out, &half)),
                _ => drop(out.shallow_clone().lerp_(&v, 0.1)),
            };
            run();
            let t = Instant::now();
            for _ in 0..2000 {
                run();
            }
            eprintln!(
                "sqrt-micro: {name} {op}: {:.1} us",
                t.elapsed().as_secs_f64() / 2000.0 * 1e6
            );
        }
    }
}

/// This process's CPU time (user + system) in seconds, from /proc/self/stat (clock ticks of
/// 1/100 s): on the shared machine the wall time includes waiting for a core, CPU time does not.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    if std::env::var("BENCH_SQRT").is_ok() {
        tch::set_num_threads(1);
        sqrt_micro();
        return;
    }
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
        ..TrainConfig::default()
    };
    let mut data_rng = ChaCha20Rng::seed_from_u64(1);
    let data: Vec<MemberData> = (0..teachers)
        .map(|_| MemberData {
            train: rows(125, dim, &mut data_rng),
            holdout: rows(31, dim, &mut data_rng),
            train_weights: None,
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

    // BENCH_MODES=batched (or sequential) runs one mode only (profiling); the JSON then has null
    // for the other.
    let modes: Vec<Mode> = match std::env::var("BENCH_MODES").as_deref() {
        Ok("batched") => vec![Mode::Batched],
        Ok("sequential") => vec![Mode::Sequential],
        _ => vec![Mode::Batched, Mode::Sequential],
    };
    let mut seconds = std::collections::HashMap::new();
    let mut cpu_seconds_by_mode = std::collections::HashMap::new();
    for mode in modes {
        let model = Ensemble::from_members(&init, tch::Device::Cpu).unwrap();
        let started = Instant::now();
        let cpu_started = cpu_seconds();
        let (_, reports) = ensemble::train(
            model,
            &data,
            &config,
            &mut streams(),
            mode,
            "",
            ensemble::InputLayout::Auto,
        )
        .unwrap();
        let s = started.elapsed().as_secs_f64();
        assert!(reports.iter().all(|r| r.epochs == epochs));
        let cpu = cpu_seconds() - cpu_started;
        eprintln!("bench: {mode:?}: {s:.2} s wall, {cpu:.2} s CPU");
        seconds.insert(format!("{mode:?}"), s);
        cpu_seconds_by_mode.insert(format!("{mode:?}"), cpu);
    }
    let batched = seconds.get("Batched").copied();
    let sequential = seconds.get("Sequential").copied();
    println!(
        "{}",
        serde_json::json!({
            "teachers": teachers,
            "epochs": epochs,
            "threads": tch::get_num_threads(),
            "widths": config.dims(dim),
            "batched_seconds": batched,
            "sequential_seconds": sequential,
            "speedup": batched.zip(sequential).map(|(b, s)| s / b),
            "batched_cpu_seconds": cpu_seconds_by_mode.get("Batched"),
            "sequential_cpu_seconds": cpu_seconds_by_mode.get("Sequential"),
        })
    );
}
