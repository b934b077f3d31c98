//! Every run config the repository ships parses and validates: `configs/*.yaml` but the sweep's
//! and the proxy's (README, EVALUATION.md and docs tell a reader to run them). Removing or
//! renaming a key has to update these files, or keep reading the old spelling. Results and lab
//! configs are not in the tree (git history keeps them); this test reads nothing else.
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
    // Not run configs: the sweep's file (experiments crate) and the proxy's.
    files.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name != "sweep.yaml" && !name.starts_with("proxy")
    });
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // The configs README.md names: renaming one has to update the docs and this list.
    for documented in [
        "train.yaml",
        "train-request-line.yaml",
        "seeds.yaml",
        "quick.yaml",
    ] {
        assert!(
            names.iter().any(|n| n == documented),
            "configs/{documented} is gone: {names:?}"
        );
    }
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
