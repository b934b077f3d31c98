//! `teachers.multiplicity` end to end on the in-repo sample (small and fast; no timings): the
//! `run` pipeline and the `teach` stage train on the same weighted rows, and every row is in
//! exactly one shard.
use std::path::{Path, PathBuf};

mod common;
use common::trainer;
use trainer::report::Report;

/// configs/quick.yaml-like setup with the given `teachers.multiplicity`.
fn config(dir: &Path, multiplicity: &str) -> PathBuf {
    common::sample_config(
        dir,
        &format!("{{count: 5, multiplicity: '{multiplicity}', training: {{hidden: [8], max_epochs: 5, patience: 2}}}}"),
        "{queries: 100, training: {hidden: [8], max_epochs: 5, patience: 2}}",
    )
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// Runs the whole pipeline; returns (report, total rows over the shards).
fn run(dir: &Path, multiplicity: &str) -> (Report, u64) {
    let cfg = config(dir, multiplicity);
    let run_dir = dir.join("run");
    let out = trainer()
        .args(["run", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{multiplicity}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shards = json(&run_dir.join("shards.json"));
    let total = shards
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_array().unwrap().len() as u64)
        .sum();
    (
        trainer::report::read(&run_dir.join("report.json")).unwrap(),
        total,
    )
}

#[test]
fn sublinear_weightings_sit_between_distinct_and_traffic_in_run_and_teach() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rows = std::collections::BTreeMap::new();
    for m in ["traffic", "distinct", "log", "cap:2"] {
        let (report, total) = run(&tmp.path().join(m.replace(':', "")), m);
        assert_eq!(String::from(report.teacher_multiplicity), m);
        assert_eq!(
            report.teacher_private_rows as u64, total,
            "{m}: every row in one shard"
        );
        rows.insert(m, total);
    }
    let (traffic, distinct, log, cap2) = (
        rows["traffic"],
        rows["distinct"],
        rows["log"],
        rows["cap:2"],
    );
    // The sample repeats some requests, so traffic > distinct; log and cap:2 lie in between.
    assert!(distinct < traffic, "{rows:?}");
    assert!(distinct <= log && log <= traffic, "{rows:?}");
    assert!(
        distinct < cap2 && cap2 <= 2 * distinct && cap2 <= traffic,
        "{rows:?}"
    );

    // The teach stage selects the same rows: its teachers' training sets add up to the same
    // number of rows (teach writes teachers only; compare the mean shard size it prints, which is
    // the floor of rows / teachers).
    let cfg = config(&tmp.path().join("stage"), "cap:2");
    let stage_dir = tmp.path().join("stage/run");
    let out = trainer()
        .args(["teach", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&stage_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let per_shard = cap2 / 5;
    assert!(
        stderr.contains(&format!("~{per_shard} samples per shard")),
        "expected ~{per_shard} samples per shard: {stderr}"
    );
}
