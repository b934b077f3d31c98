//! Helpers shared by the trainer's integration tests that run `pate-trainer` on the in-repo sample.
#![allow(dead_code)] // each test binary uses its own subset
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `pate-trainer` binary built for these tests.
pub fn trainer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
}

/// A configs/quick.yaml-like run on the in-repo sample (dataset paths absolute, seed 7, CPU, one
/// thread, value-shape features, LNMax γ = 1) with the given `teachers:` and `student:` YAML
/// mappings, written to `dir/config.yaml`.
pub fn sample_config(dir: &Path, teachers: &str, student: &str) -> PathBuf {
    let sample = repo().join("data/sample");
    let s = |f: &str| sample.join(f).display().to_string();
    let text = format!(
        "seed: 7\ndevice: cpu\nthreads: 1\nsplit:\n\
         \x20 simulate_from:\n\
         \x20   - {{path: {}, format: csic, label: benign}}\n\
         \x20   - {{path: {}, format: csic, label: benign}}\n\
         \x20   - {{path: {}, format: csic, label: malicious}}\n\
         \x20 private: 0.55\n\x20 public: 0.2\n\x20 validation: 0.1\n\x20 test: 0.15\n\
         featurizer: {{fit_on: public, config: {{top_k: 300, value_shapes: true}}}}\n\
         teachers: {teachers}\n\
         student: {student}\n\
         privacy: {{mechanism: lnmax, gamma: 1.0}}\n",
        s("csic_normalTrafficTraining_sample.txt"),
        s("csic_normalTrafficTest_A_sample.txt"),
        s("csic_anomalousTrafficTest_A_sample.txt"),
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// ε of `releases` Gaussian releases of RDP `per_release`·α each, computed without the
/// accountant: RDP → (ε, δ) by Canonne, Kamath & Steinke 2020, Prop. 12, minimized over a fine
/// grid of real orders (the accountant's coarser grid can only give more).
pub fn independent_gaussian_epsilon(per_release: f64, releases: f64, delta: f64) -> f64 {
    (1..200_000)
        .map(|i| 1.0 + f64::from(i) * 1e-3)
        .map(|a| {
            releases * per_release * a
                + ((1.0 / delta).ln() - a.ln()) / (a - 1.0)
                + (1.0 - 1.0 / a).ln()
        })
        .fold(f64::INFINITY, f64::min)
}
