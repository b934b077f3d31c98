//! The loaders on the shared dataset files: counts per label as stated in each PROVENANCE.md.
use std::path::{Path, PathBuf};

use datasets::{load, stats, Format, Label, LabelCounts, Stats};

fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/datasets")
        .join(rel)
}

fn counts(benign: usize, malicious: usize) -> Stats {
    Stats {
        records: benign + malicious,
        by_label: LabelCounts {
            benign,
            malicious,
            unlabeled: 0,
        },
    }
}

fn methods(records: &[datasets::Record], m: &str) -> usize {
    records.iter().filter(|r| r.method == m).count()
}

#[test]
fn csic_training_file_is_36000_benign_requests() {
    let records = load(Format::Csic, &shared("csic2010/normalTrafficTraining.txt")).unwrap();
    assert_eq!(stats(&records), counts(36_000, 0));
    assert_eq!(methods(&records, "GET"), 28_000);
    assert_eq!(methods(&records, "POST"), 8_000);
    // Every POST has its form body; no GET has one.
    assert_eq!(records.iter().filter(|r| r.body.is_some()).count(), 8_000);
    assert!(records
        .iter()
        .filter(|r| r.method == "GET")
        .all(|r| r.body.is_none()));
    // Absolute-form URLs became origin form.
    assert!(
        records.iter().all(|r| r.target.starts_with(b"/tienda1/")),
        "{:?}",
        records[0]
    );
    let first = &records[0];
    assert_eq!(
        (first.method.as_str(), first.target.as_slice(), first.line),
        ("GET", &b"/tienda1/index.jsp"[..], 1)
    );
    let post = records.iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(post.target, b"/tienda1/publico/anadir.jsp");
    assert_eq!(
        post.body.as_deref(),
        Some(&b"id=3&nombre=Vino+Rioja&precio=100&cantidad=55&B1=A%F1adir+al+carrito"[..])
    );
}

#[test]
fn csic_normal_test_part_a_mixes_crlf_and_lf() {
    let path = shared("csic2010/normalTrafficTest_A.txt");
    let bytes = std::fs::read(&path).unwrap();
    let lf_only = bytes
        .windows(2)
        .filter(|w| w[1] == b'\n' && w[0] != b'\r')
        .count();
    assert!(lf_only > 0, "the file is expected to hold bare-LF lines");
    let records = load(Format::Csic, &path).unwrap();
    assert_eq!(stats(&records), counts(20_433, 0));
    assert_eq!(methods(&records, "GET"), 17_457);
    assert_eq!(methods(&records, "POST"), 2_976);
    assert_eq!(records.iter().filter(|r| r.body.is_some()).count(), 2_976);
    // No carriage return survives in a target or body.
    assert!(records.iter().all(
        |r| !r.target.contains(&b'\r') && !r.body.as_ref().is_some_and(|b| b.contains(&b'\r'))
    ));
}

#[test]
fn csic_anomalous_test_part_a_is_12849_malicious_requests() {
    let records = load(Format::Csic, &shared("csic2010/anomalousTrafficTest_A.txt")).unwrap();
    assert_eq!(stats(&records), counts(0, 12_849));
    assert_eq!(methods(&records, "GET"), 7_865);
    assert_eq!(methods(&records, "POST"), 4_785);
    assert_eq!(methods(&records, "PUT"), 199);
    assert_eq!(
        records.iter().filter(|r| r.body.is_some()).count(),
        4_785 + 199
    );
}

#[test]
fn fwaf_bad_and_good_queries() {
    // 48,126 lines, 61 of them empty (skipped).
    let bad = load(Format::Fwaf, &shared("fwaf/badqueries.txt")).unwrap();
    assert_eq!(stats(&bad), counts(0, 48_065));
    assert!(bad
        .iter()
        .all(|r| !r.target.is_empty() && !r.target.ends_with(b"\r")));
    // 112,161 newline-terminated lines plus the final, truncated `/` without a newline.
    let good = load(Format::Fwaf, &shared("fwaf/goodqueries_partial_prefix.txt")).unwrap();
    assert_eq!(stats(&good), counts(112_162, 0));
    assert_eq!(good[0].target, b"/103886/");
    assert_eq!(good.last().unwrap().target, b"/");
    assert_eq!(good.last().unwrap().line, 112_162);
}

#[test]
fn httpparams_files() {
    for (file, norm, anom) in [
        ("payload_full.csv", 19_304, 11_763),
        ("payload_train.csv", 12_870, 7_842),
        ("payload_test.csv", 6_434, 3_921),
        ("payload_test_lexical.csv", 1_000, 106),
    ] {
        let records = load(Format::Httpparams, &shared(&format!("httpparams/{file}"))).unwrap();
        assert_eq!(stats(&records), counts(norm, anom), "{file}");
    }
    let full = load(Format::Httpparams, &shared("httpparams/payload_full.csv")).unwrap();
    assert_eq!(full[0].target, b"c/ caridad s/n");
    assert_eq!(full[0].line, 2);
    assert_eq!(full[0].label, Some(Label::Benign));
}
