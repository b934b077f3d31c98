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
    // What a run directory's config.yaml holds reads back as the same settings: a key written
    // at a value the defaults do not have is not left out.
    for p in &files {
        let config = RunConfig::load(p).unwrap();
        let written = serde_yaml::to_string(&config).unwrap();
        let again = RunConfig::parse(&written).unwrap();
        assert_eq!(
            serde_yaml::to_string(&again).unwrap(),
            written,
            "{}",
            p.display()
        );
    }
    // And the defaults alone write and read back as themselves.
    let defaults = RunConfig::without_datasets();
    let written = serde_yaml::to_string(&defaults).unwrap();
    assert_eq!(
        serde_yaml::to_string(&serde_yaml::from_str::<RunConfig>(&written).unwrap()).unwrap(),
        written
    );
}

/// `pate-trainer run --print-config ARGS` run in the repository's root: what it prints.
fn print_config(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
        .current_dir(repo())
        .args(["run", "--print-config"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `run --print-config` prints what the run directory's config.yaml would hold: every default
/// filled in, and it reads back as the same settings.
#[test]
fn print_config_prints_the_effective_configuration() {
    let train = repo().join("configs/train.yaml");
    let printed = print_config(&["--config", train.to_str().unwrap()]);
    let expected = serde_yaml::to_string(&RunConfig::load(&train).unwrap()).unwrap();
    assert_eq!(printed, expected);
    for key in [
        "mechanism: model_average",
        "threshold_rule: target_fpr",
        "top_k: 10000",
    ] {
        assert!(printed.contains(key), "{key}: {printed}");
    }
}

/// The printed configuration names its files by absolute paths (the config's own, resolved
/// against its folder, and a relative `--public`, against the working directory), so written
/// to another folder and loaded from there it reads the same files.
#[test]
fn a_printed_configuration_reads_the_same_files_from_anywhere() {
    let printed = print_config(&[
        "--config",
        "configs/site.yaml",
        "--public",
        "data/sample/apache_access_sample.log",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("printed.yaml");
    std::fs::write(&copy, printed).unwrap();
    let mut config = RunConfig::load(&copy).unwrap();
    let paths: Vec<std::path::PathBuf> = config.sources_mut().map(|d| d.path.clone()).collect();
    assert!(paths.len() >= 5, "{paths:?}");
    for p in &paths {
        assert!(p.is_absolute() && p.exists(), "{}", p.display());
    }
    assert!(paths
        .iter()
        .any(|p| p.ends_with("data/sample/apache_access_sample.log")));
    let browsers = config.featurizer.known_browsers.unwrap();
    assert!(browsers.is_absolute() && browsers.exists());
}

/// featurizer/tests/fast_path.rs compares the fast featurizer with a plain reference on
/// configs/train-request-line.yaml's feature set, written out there: the file still resolves to it.
#[test]
fn train_request_line_yaml_has_the_feature_set_the_featurizer_tests_check() {
    let c = RunConfig::load(&repo().join("configs/train-request-line.yaml"))
        .unwrap()
        .featurizer
        .config;
    assert_eq!(c.top_k, 10000);
    assert_eq!(c.char_ngrams, Some([1, 3]));
    assert!(c.sublinear_tf && c.params);
    assert_eq!(c.rarity_min_count, Some(3));
    assert_eq!(c.odd_permille, vec![10, 50]);
    assert_eq!(c.norm, featurizer::Norm::L2);
    assert!(c.placements.is_none() && !c.libinjection && !c.signatures);
}
