//! The in-repo sample (data/sample/README.md) has the counts its README states, and each sampled
//! request is a request of the original file.
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use datasets::{load, stats, Format, LabelCounts, Record, Stats};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/sample")
        .join(name)
}

fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/datasets")
        .join(rel)
}

fn key(r: &Record) -> (String, Vec<u8>, Option<Vec<u8>>) {
    (r.method.clone(), r.target.clone(), r.body.clone())
}

#[test]
fn sample_counts_match_the_readme() {
    let check = |format, name: &str, benign, malicious| {
        let records = load(format, &sample(name)).unwrap();
        let expected = Stats {
            records: benign + malicious,
            by_label: LabelCounts {
                benign,
                malicious,
                unlabeled: 0,
            },
        };
        assert_eq!(stats(&records), expected, "{name}");
        records
    };
    check(
        Format::Csic,
        "csic_normalTrafficTraining_sample.txt",
        1_242,
        0,
    );
    check(Format::Csic, "csic_normalTrafficTest_A_sample.txt", 584, 0);
    check(
        Format::Csic,
        "csic_anomalousTrafficTest_A_sample.txt",
        0,
        612,
    );
    check(
        Format::Httpparams,
        "httpparams_payload_full_sample.csv",
        965,
        589,
    );
}

#[test]
fn sample_is_every_kth_request_of_the_originals() {
    for (name, original, k) in [
        (
            "csic_normalTrafficTraining_sample.txt",
            "csic2010/normalTrafficTraining.txt",
            29,
        ),
        (
            "csic_normalTrafficTest_A_sample.txt",
            "csic2010/normalTrafficTest_A.txt",
            35,
        ),
        (
            "csic_anomalousTrafficTest_A_sample.txt",
            "csic2010/anomalousTrafficTest_A.txt",
            21,
        ),
    ] {
        let s = load(Format::Csic, &sample(name)).unwrap();
        let o = load(Format::Csic, &shared(original)).unwrap();
        let expected: Vec<_> = o.iter().step_by(k).map(key).collect();
        let got: Vec<_> = s.iter().map(key).collect();
        assert_eq!(got, expected, "{name}");
    }
    let s = load(
        Format::Httpparams,
        &sample("httpparams_payload_full_sample.csv"),
    )
    .unwrap();
    let o = load(Format::Httpparams, &shared("httpparams/payload_full.csv")).unwrap();
    let expected: Vec<_> = o
        .iter()
        .step_by(20)
        .map(|r| (r.target.clone(), r.label))
        .collect();
    assert_eq!(
        s.iter()
            .map(|r| (r.target.clone(), r.label))
            .collect::<Vec<_>>(),
        expected
    );
    // The training sample covers many kinds of request, not a few positions of CSIC's 36-request
    // session.
    let t = load(
        Format::Csic,
        &sample("csic_normalTrafficTraining_sample.txt"),
    )
    .unwrap();
    let paths: HashSet<&[u8]> = t
        .iter()
        .map(|r| r.target.split(|&b| b == b'?').next().unwrap())
        .collect();
    assert!(paths.len() >= 20, "{} distinct paths", paths.len());
}
