//! `site:` derives the validation and test data from the site's unlabelled traffic and public
//! attack values alone: a neighbouring private data set (one record removed) leaves every derived
//! record as it was, and the public pool too; the held-out traffic is taken as benign, the placed
//! attacks are malicious, and none of it is in the public pool.

use std::path::{Path, PathBuf};
use std::time::Instant;

use trainer::config::RunConfig;
use trainer::rng::RunRng;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A site config over the in-repo samples with `private` as the teachers' malicious file.
fn config(dir: &Path, private: &Path) -> RunConfig {
    let sample = repo().join("data/sample");
    let yaml = format!(
        "seed: 3\n\
         private:\n\
         \x20 - {{path: {normal}, format: csic, label: benign}}\n\
         \x20 - {{path: {private}, format: csic, label: malicious}}\n\
         public: [{{path: {log}, format: apache}}]\n\
         site: {{validation: 0.3, test: 0.2, validation_attacks: 50, test_attacks: 40, \
         test_attack_files: [{{path: {attacks}, format: httpparams}}]}}\n\
         teachers: {{count: 2}}\n\
         student: {{queries: 10, public_examples: {{count: 10, files: [{{path: {attacks}, format: httpparams}}]}}}}\n",
        normal = sample.join("csic_normalTrafficTest_A_sample.txt").display(),
        private = private.display(),
        log = sample.join("apache_access_sample.log").display(),
        attacks = sample.join("httpparams_payload_full_sample.csv").display(),
    );
    let path = dir.join("site.yaml");
    std::fs::write(&path, yaml).unwrap();
    RunConfig::load(&path).unwrap()
}

fn records(data: &trainer::stages::split::RunData, rows: &[usize]) -> Vec<datasets::Record> {
    rows.iter().map(|&i| data.records[i].clone()).collect()
}

#[test]
fn the_site_data_depend_on_public_data_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let full = repo().join("data/sample/csic_anomalousTrafficTest_A_sample.txt");
    // The neighbour: the private malicious file without its first request (CSIC requests start
    // at a line `GET|POST|PUT `).
    let text = std::fs::read_to_string(&full).unwrap();
    let second = text
        .match_indices("\nGET ")
        .chain(text.match_indices("\nPOST "))
        .map(|(i, _)| i + 1)
        .filter(|&i| i > 0)
        .min()
        .unwrap();
    let neighbour = tmp.path().join("neighbour.txt");
    std::fs::write(&neighbour, &text[second..]).unwrap();

    let load = |private: &Path, sub: &str| {
        let dir = tmp.path().join(sub);
        std::fs::create_dir_all(&dir).unwrap();
        let config = config(&dir, private);
        let rng = RunRng::new(config.seed).unwrap();
        trainer::stages::split::load(&config, &rng, Instant::now()).unwrap()
    };
    let (a, b) = (load(&full, "a"), load(&neighbour, "b"));
    assert_eq!(a.splits.private.len(), b.splits.private.len() + 1);
    let splits = |d: &trainer::stages::split::RunData| {
        (
            records(d, &d.splits.public),
            records(d, &d.splits.student_validation),
            records(d, &d.splits.test),
        )
    };
    let (pa, va, ta) = splits(&a);
    assert_eq!(
        (pa, va.clone(), ta.clone()),
        splits(&b),
        "a private record moved the site data"
    );

    let label = |r: &datasets::Record| r.label;
    let malicious = |rs: &[datasets::Record]| {
        rs.iter()
            .filter(|r| label(r) == Some(datasets::Label::Malicious))
            .count()
    };
    assert_eq!(malicious(&va), 50, "the placed validation attacks");
    assert_eq!(malicious(&ta), 40, "the placed test attacks");
    assert!(va.len() > 50 && ta.len() > 40, "held-out traffic in both");
    assert!(
        va.iter().chain(&ta).all(|r| r.label.is_some()),
        "every derived record is labelled"
    );
    let public: std::collections::HashSet<usize> = a.splits.public.iter().copied().collect();
    assert!(a
        .splits
        .student_validation
        .iter()
        .chain(&a.splits.test)
        .all(|i| !public.contains(i)));
}

/// In a simulation the held-out traffic's attacks are taken as benign, as real traffic's are,
/// and only `held_out_attacks` (what `site.review` reads) still knows them: exactly the
/// validation traffic's requests whose file labels them malicious.
#[test]
fn a_simulation_keeps_the_held_out_attacks_for_a_review_only() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = repo().join("data/sample");
    let normal = sample.join("csic_normalTrafficTest_A_sample.txt");
    let anomalous = sample.join("csic_anomalousTrafficTest_A_sample.txt");
    let attacks = sample.join("httpparams_payload_full_sample.csv");
    let yaml = format!(
        "seed: 3\n\
         split: {{simulate_from: [{{path: {n}, format: csic, label: benign}}, {{path: {a}, format: csic, label: malicious}}], \
         private: 0.5, public: 0.4, validation: 0, test: 0.1}}\n\
         site: {{validation: 0.5, validation_attacks: 20, holdout: hash, review: 50}}\n\
         teachers: {{count: 2}}\n\
         student: {{queries: 10, public_examples: {{count: 10, files: [{{path: {p}, format: httpparams}}]}}}}\n",
        n = normal.display(),
        a = anomalous.display(),
        p = attacks.display(),
    );
    let path = tmp.path().join("sim.yaml");
    std::fs::write(&path, yaml).unwrap();
    let config = RunConfig::load(&path).unwrap();
    let rng = RunRng::new(config.seed).unwrap();
    let data = trainer::stages::split::load(&config, &rng, Instant::now()).unwrap();
    let anomalous_lines: std::collections::HashSet<usize> =
        datasets::load(datasets::Format::Csic, &anomalous)
            .unwrap()
            .iter()
            .map(|r| r.line)
            .collect();
    let is_attack =
        |i: usize| data.files[i] == anomalous && anomalous_lines.contains(&data.records[i].line);
    let site_rows: Vec<usize> = data
        .splits
        .student_validation
        .iter()
        .copied()
        .filter(|&i| i < data.files.len())
        .collect();
    let expected: Vec<usize> = site_rows
        .iter()
        .copied()
        .filter(|&i| is_attack(i))
        .collect();
    assert!(
        !expected.is_empty(),
        "the sample's held-out traffic holds attacks"
    );
    assert_eq!(data.held_out_attacks, expected);
    assert!(expected
        .iter()
        .all(|&i| data.records[i].label == Some(datasets::Label::Benign)));
}
