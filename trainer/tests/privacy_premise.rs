//! The premise every mechanism's analysis stands on: on neighbouring private data sets (one
//! record added or removed) exactly one teacher's data differs, and every other teacher's
//! computation — weights, threshold, clipped grid vector, votes — is identical, bit for bit.
//!
//! Trained through `pate-trainer teach` on the privacy audit's files
//! (`shared/testdata/privacy-premise/`): the audit's own pair, and the two neighbours that broke
//! batched training (one record removed from the largest shard, one added to it: the padded row
//! count every teacher trained with moved).
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use privacy::average::ModelAverage;
use trainer::config::RunConfig;
use trainer::model_file::{load_teachers, ModelFile};

mod common;
use common::{repo, trainer};

fn premise_dir() -> PathBuf {
    repo().join("../shared/testdata/privacy-premise")
}

/// FISTA-trained linear teachers as configs/train.yaml trains them (fixed steps, own-shard
/// tamperings), or small Adam networks with early stopping on a hold-out.
const LINEAR: &str = "{count: 10, holdout_fraction: 0, tamperings: 0.05, training: {hidden: [], \
    optimizer: fista, l1: 0.0003, learning_rate: 4.0, max_epochs: 60, class_balance: pos_weight, \
    member_threshold: half}}";
const NETWORK: &str = "{count: 10, holdout_fraction: 0.2, tamperings: 0, training: {hidden: [16], \
    max_epochs: 25, patience: 3, batch_size: 16, learning_rate: 0.01, class_balance: pos_weight, \
    optimizer: adam, l1: 0.0, member_threshold: youden}}";

/// A run config reading `private` as the private role and the audit's other files.
fn config(dir: &Path, private: &Path, teachers: &str) -> PathBuf {
    // Model averaging needs linear teachers; the networks' votes go to GNMax.
    let privacy = if teachers.contains("hidden: []") {
        "{mechanism: model_average, sigma: 4.1, clip_norm: 75}"
    } else {
        "{mechanism: gnmax, sigma: 2.0}"
    };
    let file = |name: &str| premise_dir().join(name).display().to_string();
    let text = format!(
        "seed: 11\ndevice: cpu\nthreads: 1\n\
         private: [{{path: {}, format: csv}}]\n\
         public: [{{path: {}, format: csv}}]\n\
         validation: [{{path: {}, format: csv}}]\n\
         test: [{{path: {}, format: csv}}]\n\
         featurizer: {{fit_on: public, config: {{top_k: 3000}}}}\n\
         teachers: {teachers}\n\
         privacy: {privacy}\n",
        private.display(),
        file("public.csv"),
        file("validation.csv"),
        file("test.csv"),
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Trains the teachers of `private` into `dir/run`; returns them in shard order.
fn teach(dir: &Path, private: &Path, teachers: &str) -> Vec<ModelFile> {
    let cfg = config(dir, private, teachers);
    let out = trainer()
        .args(["teach", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(dir.join("run"))
        .output()
        .expect("pate-trainer starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    load_teachers(&dir.join("run/teachers")).unwrap()
}

/// The private file's lines with `drop` (1-based) left out and `add` appended.
fn neighbour(dir: &Path, drop: Option<usize>, add: Option<&str>) -> PathBuf {
    let base = std::fs::read_to_string(premise_dir().join("private.csv")).unwrap();
    let mut lines: Vec<&str> = base
        .lines()
        .enumerate()
        .filter(|(i, _)| Some(i + 1) != drop)
        .map(|(_, l)| l)
        .collect();
    lines.extend(add);
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("private.csv");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The run's records and each teacher's shard, as record indices.
fn shard_records(config: &RunConfig) -> (trainer::stages::split::RunData, Vec<Vec<usize>>) {
    let data = trainer::stages::split::load_run_data(config).unwrap();
    let rows = trainer::teachers::teacher_rows(
        &data.records,
        &data.splits.private,
        config.teachers.weighting(),
    );
    let shards = trainer::stages::teach::shards(config, &data.records, &rows).unwrap();
    let shards = shards
        .iter()
        .map(|s| s.iter().map(|&j| rows[j]).collect())
        .collect();
    (data, shards)
}

/// The line (1-based) of a record of teacher `k`'s shard of `private` that occurs once in the
/// file (removing a copy of a repeated record removes its last copy, whichever line it was).
fn record_of_shard(dir: &Path, private: &Path, k: usize) -> usize {
    let config = RunConfig::load(&config(dir, private, LINEAR)).unwrap();
    let (data, shards) = shard_records(&config);
    let text = std::fs::read_to_string(private).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    shards[k]
        .iter()
        .map(|&i| data.records[i].line)
        .find(|&line| lines.iter().filter(|&&l| l == lines[line - 1]).count() == 1)
        .expect("a record that occurs once")
}

/// Each teacher's malicious votes on the audit's test requests (each teacher alone), and the
/// malicious counts as the vote stage takes them (every teacher scored together).
fn votes(run: &Path, teachers: &[ModelFile]) -> (Vec<Vec<u64>>, Vec<u64>) {
    let config = RunConfig::load(&run.join("../config.yaml")).unwrap();
    let data = trainer::stages::split::load_run_data(&config).unwrap();
    let f = featurizer::Featurizer::load(&run.join("featurizer.json")).unwrap();
    let x = trainer::stages::featurize::featurize_rows(&f, &data.records, &data.splits.test);
    let malicious = |t: &[ModelFile]| -> Vec<u64> {
        let v = trainer::stages::vote::vote(t, &x, tch::Device::Cpu).unwrap();
        v.rows().map(|r| r[1]).collect()
    };
    let each = teachers
        .iter()
        .map(|t| malicious(std::slice::from_ref(t)))
        .collect();
    (each, malicious(teachers))
}

fn bits(t: &ModelFile) -> Vec<u32> {
    t.weights
        .layers
        .iter()
        .flat_map(|l| l.weight.iter().chain(&l.bias))
        .map(|v| v.to_bits())
        .collect()
}

/// The teacher's vector on model averaging's grid (weights, then bias), as the release sums it.
fn grid(t: &ModelFile) -> Option<Vec<i64>> {
    let [layer] = t.weights.layers.as_slice() else {
        return None;
    };
    let mut theta = layer.weight.clone();
    theta.extend_from_slice(&layer.bias);
    let mechanism = ModelAverage {
        sigma: 4.1,
        clip_norm: 75.0,
    };
    Some(mechanism.to_grid(&theta))
}

/// Asserts that the teachers of `a` and `b` differ in exactly the shards `changed` (their data
/// hashes) and that every other teacher is identical in every respect.
fn assert_only_changed(dirs: [&Path; 2], a: &[ModelFile], b: &[ModelFile], changed: &[usize]) {
    assert_eq!(a.len(), b.len());
    let differing: BTreeSet<usize> = (0..a.len())
        .filter(|&k| a[k].info.data_hash != b[k].info.data_hash)
        .collect();
    assert_eq!(
        differing,
        changed.iter().copied().collect(),
        "the shards whose data differ"
    );
    let ((va, counts_a), (vb, counts_b)) = (votes(dirs[0], a), votes(dirs[1], b));
    // The vote stage's counts move by at most one vote per changed teacher on every query.
    for (q, (&ca, &cb)) in counts_a.iter().zip(&counts_b).enumerate() {
        assert!(
            ca.abs_diff(cb) <= changed.len() as u64,
            "query {q}: {ca} vs {cb}"
        );
    }
    for k in (0..a.len()).filter(|k| !differing.contains(k)) {
        assert!(bits(&a[k]) == bits(&b[k]), "teacher {k}: weights differ");
        assert_eq!(a[k].info.threshold.to_bits(), b[k].info.threshold.to_bits());
        assert_eq!(grid(&a[k]), grid(&b[k]), "teacher {k}: grid vector");
        assert_eq!(va[k], vb[k], "teacher {k}: votes on the test requests");
    }
    // Not vacuous: the changed teachers' own weights did change.
    for &k in changed {
        assert!(
            bits(&a[k]) != bits(&b[k]),
            "teacher {k} should have changed"
        );
    }
}

fn premise_holds(teachers: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let base_dir = tmp.path().join("base");
    let base_file = premise_dir().join("private.csv");
    let base = teach(&base_dir, &base_file, teachers);
    let sizes: Vec<usize> = base
        .iter()
        .map(|t| t.info.training.train_samples + t.info.training.holdout_samples)
        .collect();

    // One record removed from the largest shard (rows with its tamperings: what batched
    // training padded every teacher to).
    let largest = (0..sizes.len()).max_by_key(|&k| sizes[k]).unwrap();
    let tied = sizes.iter().filter(|&&s| s == sizes[largest]).count();
    assert_eq!(
        tied, 1,
        "the largest shard is tied: a removal would not move the maximum"
    );
    let line = record_of_shard(&tmp.path().join("probe"), &base_file, largest);
    let removed_dir = tmp.path().join("removed");
    let removed = teach(
        &removed_dir,
        &neighbour(&removed_dir, Some(line), None),
        teachers,
    );
    assert_only_changed(
        [&base_dir.join("run"), &removed_dir.join("run")],
        &base,
        &removed,
        &[largest],
    );

    // The audit's neighbouring file: one record added (to the largest shard), one removed.
    let neighbour_text =
        std::fs::read_to_string(premise_dir().join("private-neighbour.csv")).unwrap();
    let base_text = std::fs::read_to_string(&base_file).unwrap();
    let base_lines: BTreeSet<&str> = base_text.lines().collect();
    let added = neighbour_text
        .lines()
        .find(|l| !base_lines.contains(l))
        .expect("the neighbour adds a record");
    // One record added to the largest shard alone.
    let added_dir = tmp.path().join("added");
    let with_added = teach(
        &added_dir,
        &neighbour(&added_dir, None, Some(added)),
        teachers,
    );
    let grown: Vec<usize> = (0..base.len())
        .filter(|&k| base[k].info.data_hash != with_added[k].info.data_hash)
        .collect();
    assert_eq!(grown.len(), 1);
    assert_eq!(
        sizes[grown[0]],
        *sizes.iter().max().unwrap(),
        "the added record lands in the largest shard"
    );
    assert_only_changed(
        [&base_dir.join("run"), &added_dir.join("run")],
        &base,
        &with_added,
        &grown,
    );

    // The audit's pair as it is.
    let pair_dir = tmp.path().join("pair");
    let pair = teach(
        &pair_dir,
        &premise_dir().join("private-neighbour.csv"),
        teachers,
    );
    let changed: Vec<usize> = (0..base.len())
        .filter(|&k| base[k].info.data_hash != pair[k].info.data_hash)
        .collect();
    assert!((1..=2).contains(&changed.len()), "{changed:?}");
    assert_only_changed(
        [&base_dir.join("run"), &pair_dir.join("run")],
        &base,
        &pair,
        &changed,
    );
}

#[test]
fn neighbouring_data_changes_one_linear_teacher_only() {
    premise_holds(LINEAR);
}

#[test]
fn neighbouring_data_changes_one_network_teacher_only() {
    premise_holds(NETWORK);
}

/// A teacher's data hash (what decides whether a saved teacher is reused) covers how it was
/// trained: one saved by the batched training of before, whose hash lacked the procedure, is
/// not reused.
#[test]
fn teachers_saved_by_batched_training_are_not_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let private = premise_dir().join("private.csv");
    let saved = teach(tmp.path(), &private, NETWORK);
    let config = RunConfig::load(&tmp.path().join("config.yaml")).unwrap();
    let (data, shards) = shard_records(&config);
    let f = featurizer::Featurizer::load(&tmp.path().join("run/featurizer.json")).unwrap();
    let x = trainer::stages::featurize::featurize_rows(&f, &data.records, &shards[0]);
    let y = trainer::stages::featurize::labels_of(&data.records, &shards[0]).unwrap();
    let t = &config.teachers;
    let hash = |procedure: Option<&str>| {
        let mut json = serde_json::json!({
            "training": t.training,
            "holdout_fraction": t.holdout_fraction,
            "holdout_max": t.holdout_max,
        });
        if let Some(p) = procedure {
            json["procedure"] = p.into();
        }
        trainer::teachers::shard_hash(f.content_hash(), &x, &y, &json)
    };
    assert_eq!(
        saved[0].info.data_hash,
        hash(Some(trainer::teachers::TEACHER_PROCEDURE))
    );
    assert_ne!(saved[0].info.data_hash, hash(None));
}
