//! Every run config the repository ships or its documents tell a reader to run parses and
//! validates: `configs/*.yaml` (but the sweep's and the proxy's) and the committed result configs
//! under `results/` (whose README/EVALUATION.md commands reproduce a row). Removing or renaming a
//! key has to update these files, or keep reading the old spelling.
use std::path::{Path, PathBuf};

use trainer::config::RunConfig;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

#[test]
fn every_committed_run_config_parses() {
    let mut files = Vec::new();
    yaml_files(&repo().join("configs"), &mut files);
    yaml_files(&repo().join("results"), &mut files);
    // Not run configs: the sweep's file (experiments crate) and the proxy's. The
    // `results/improved/` configs predate ee46a94 (top-level `datasets:` split by request hash,
    // since replaced by `split: {simulate_from}` split by record); EVALUATION.md says so.
    files.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name != "sweep.yaml"
            && !name.starts_with("proxy")
            && !p.components().any(|c| c.as_os_str() == "improved")
    });
    files.sort();
    assert!(files.len() >= 50, "{files:?}");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|p| {
            RunConfig::load(p)
                .err()
                .map(|e| format!("{}: {e}", p.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
