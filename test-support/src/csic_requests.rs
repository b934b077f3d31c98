//! The CSIC 2010 requests the proxy's benchmark and its callgrind example score: the full test
//! files under `../shared/datasets/csic2010` when present (at most 10,000 requests each),
//! `data/sample` otherwise; every other request is "live" (the rest may fit a featurizer).

use std::path::Path;

use datasets::{Format, Record};

/// The benchmark's CSIC requests (empty when neither the full files nor the samples load).
pub fn csic_records() -> Vec<Record> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let full = root.join("../../shared/datasets/csic2010");
    let sample = root.join("../data/sample");
    let mut records = Vec::new();
    for (dir, file) in [
        (&full, "normalTrafficTest_A.txt"),
        (&full, "anomalousTrafficTest_A.txt"),
        (&sample, "csic_normalTrafficTest_A_sample.txt"),
        (&sample, "csic_anomalousTrafficTest_A_sample.txt"),
    ] {
        if records.len() >= 20_000 || (file.contains("sample") && !records.is_empty()) {
            continue;
        }
        if let Ok(r) = datasets::load(Format::Csic, &dir.join(file)) {
            records.extend(r.into_iter().take(10_000));
        }
    }
    records
}

/// The live half of `records` (every other one, from the second).
pub fn live(records: &[Record]) -> Vec<&Record> {
    records.iter().skip(1).step_by(2).collect()
}

/// The typical (median length of those with a query or body) and the longest of `live`, or
/// `None` when none has a query or body.
pub fn typical_and_long(live: &[&Record]) -> Option<[(&'static str, Record); 2]> {
    let mut with_args: Vec<&Record> = live
        .iter()
        .copied()
        .filter(|r| r.target.contains(&b'?') || r.body.is_some())
        .collect();
    with_args.sort_by_key(|r| r.target.len() + r.body.as_ref().map_or(0, Vec::len));
    let last = with_args.len().checked_sub(1)?;
    Some([
        ("typical", with_args[with_args.len() / 2].clone()),
        ("long", with_args[last].clone()),
    ])
}
