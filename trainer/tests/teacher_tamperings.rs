//! `teachers.tamperings` end to end on the in-repo sample (small and fast; no timings): `run`
//! adds tampered copies of the shards' benign requests, reports how many, and the `teach` stage
//! trains its teachers on the same rows.
use std::path::{Path, PathBuf};

mod common;
use common::trainer;
use trainer::report::Report;

fn config(dir: &Path, tamperings: f64) -> PathBuf {
    common::sample_config(
        dir,
        &format!(
            "{{count: 5, tamperings: {tamperings}, training: {{hidden: [8], max_epochs: 5, patience: 2}}}}"
        ),
        "{queries: 100, training: {hidden: [8], max_epochs: 5, patience: 2}}",
    )
}

/// Runs `pate-trainer COMMAND --config CFG --out DIR`; returns its stderr.
fn trainer_ok(command: &str, cfg: &Path, out_dir: &Path) -> String {
    let out = trainer()
        .args([command, "--config"])
        .arg(cfg)
        .arg("--out")
        .arg(out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{command}: {stderr}");
    stderr
}

fn per_shard(stderr: &str) -> &str {
    let at = stderr
        .find(" samples per shard")
        .unwrap_or_else(|| panic!("no shard size printed: {stderr}"));
    let start = stderr[..at].rfind('~').expect("~N samples per shard");
    &stderr[start..at]
}

#[test]
fn tampered_rows_join_the_shards_in_run_and_teach() {
    let tmp = tempfile::tempdir().unwrap();
    let report = |name: &str, tamperings: f64| -> (Report, String) {
        let dir = tmp.path().join(name);
        let stderr = trainer_ok("run", &config(&dir, tamperings), &dir.join("run"));
        let report = trainer::report::read(&dir.join("run/report.json")).unwrap();
        (report, stderr)
    };
    let (without, _) = report("without", 0.0);
    assert_eq!(without.teacher_tampered_rows, 0);
    let (with, stderr) = report("with", 0.3);
    let private = with.teacher_private_rows;
    assert_eq!(private, without.teacher_private_rows, "same private rows");
    // 0.3 × the benign private rows: more than none, fewer than 0.3 × all of them.
    let added = with.teacher_tampered_rows;
    assert!(
        added > 0 && (added as f64) < 0.3 * private as f64 + 5.0,
        "{added} tampered rows for {private} private rows"
    );
    assert_eq!(per_shard(&stderr), format!("~{}", (private + added) / 5));
    assert!(
        stderr.contains(&format!("{added} tampered requests")),
        "{stderr}"
    );

    // The teach stage (same seed) trains on the same rows.
    let dir = tmp.path().join("stage");
    let stage = trainer_ok("teach", &config(&dir, 0.3), &dir.join("run"));
    assert_eq!(per_shard(&stage), per_shard(&stderr), "{stage}");
}
