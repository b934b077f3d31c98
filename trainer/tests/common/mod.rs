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
    std::fs::write(&path, legacy(&text)).unwrap();
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

/// The settings these tests were written for, where they differ from the recommended recipe
/// (the trainer's defaults): a bare unigram featurizer, Adam-trained networks, LNMax-era
/// student settings. [`legacy`] lays a test's config over them.
const LEGACY: &str = "
featurizer:
  rarity_on: fit_on
  config: {top_k: 500, char_ngrams: null, sublinear_tf: false, params: false,
           rarity_min_count: null, odd_permille: [], odd_shape_path: false,
           odd_name_variants: false, norm: l1, placements: null, libinjection: false,
           signatures: false}
teachers:
  holdout_fraction: 0.2
  tamperings: 0.0
  training: {hidden: [512, 128], optimizer: adam, l1: 0.0, max_epochs: 100, batch_size: 64,
             learning_rate: 0.001, patience: 5, member_threshold: youden}
student:
  queries: 1000
  validation_max: 200
  query_selection: distinct
  threshold_rule: youden
  target_fpr_confidence: null
  multiplicity_cap: null
  validation_labels: false
  training: {hidden: [512, 128], optimizer: adam, l1: 0.0, max_epochs: 100, batch_size: 64,
             learning_rate: 0.001, patience: 5}
privacy: {mechanism: lnmax, gamma: 0.05}
aggregation: {malicious_vote_share: 0.5}
evaluation: {ensemble_max: 5000}
";

/// What a section these tests give stood for when the section was off by default: the section
/// with every key at its former default, for the keys the test leaves out.
fn legacy_section(key: &str) -> Option<serde_yaml::Value> {
    let text = match key {
        "placements" => {
            "{referer_as_url: false, opaque_tokens: false, request_line_whole: false, \
             known_header_permille: null, known_digit_runs: false}"
        }
        "public_examples" => {
            "{validation: 0, validation_benign_spots: null, validation_fpr: null, \
             tamperings: 0.0, content_only_validation: 0, part_model: null}"
        }
        "part_model" => {
            "{placement_offsets: false, training: {hidden: [512, 128], optimizer: adam, l1: 0.0, \
             max_epochs: 100, batch_size: 64, learning_rate: 0.001, patience: 5}}"
        }
        _ => return None,
    };
    Some(serde_yaml::from_str(text).unwrap())
}

/// `config` (YAML text) laid over [`LEGACY`]: the run these tests were written for.
pub fn legacy(config: &str) -> String {
    over(LEGACY, config)
}

/// `given` (YAML text) laid over `base`, key by key.
pub fn over(base: &str, given: &str) -> String {
    let mut base: serde_yaml::Value = serde_yaml::from_str(base).unwrap();
    let given: serde_yaml::Value = serde_yaml::from_str(given).unwrap();
    lay_over(&mut base, given);
    serde_yaml::to_string(&base).unwrap()
}

fn lay_over(base: &mut serde_yaml::Value, given: serde_yaml::Value) {
    use serde_yaml::Value;
    let (Value::Mapping(base), Value::Mapping(given)) = (&mut *base, &given) else {
        *base = given;
        return;
    };
    for (key, value) in given {
        // A mechanism's parameters are its own: another mechanism replaces them all.
        if key.as_str() == Some("privacy") {
            base.insert(key.clone(), value.clone());
            continue;
        }
        let template = key.as_str().and_then(legacy_section);
        let slot = base.entry(key.clone()).or_insert(Value::Null);
        if let (Value::Null, Some(t), Value::Mapping(_)) = (&*slot, template, value) {
            *slot = t;
        }
        lay_over(slot, value.clone());
    }
}
