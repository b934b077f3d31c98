//! In-process scoring time per request: featurize + ONNX Runtime score (what the proxy does in
//! `request_filter`), on the fixture bundle, for a typical and for a long CSIC 2010 request.
//! Run: `cargo bench -p proxy --bench score` (criterion reports the distribution; the p50/p99
//! summary printed at the end comes from 20 000 timed calls).

use std::path::Path;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use featurizer::RequestParts;
use proxy::fixture::write_fixture_bundle;
use proxy::model::ServingModel;

/// Request targets of CSIC 2010's test set (normal traffic): the median-length one and the longest.
fn csic_targets() -> (String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets/csic2010/normalTrafficTest_A.txt");
    let text = std::fs::read(&path).unwrap_or_default();
    let mut targets: Vec<String> = String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| l.strip_prefix("GET http://localhost:8080"))
        .filter_map(|l| l.strip_suffix(" HTTP/1.1"))
        .map(str::to_string)
        .collect();
    if targets.is_empty() {
        // Data set absent: fall back to the fixture's requests.
        targets = proxy::fixture::NORMAL_REQUESTS.iter().map(|r| r.1.to_string()).collect();
    }
    targets.sort_by_key(String::len);
    (targets[targets.len() / 2].clone(), targets[targets.len() - 1].clone())
}

fn percentiles(model: &ServingModel, req: &RequestParts) -> (f64, f64) {
    let mut samples: Vec<f64> = (0..20_000)
        .map(|_| {
            let t = Instant::now();
            let _ = std::hint::black_box(model.score(req));
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 2], samples[samples.len() * 99 / 100])
}

fn bench(c: &mut Criterion) {
    bundle::init_onnxruntime(None).expect("ONNX Runtime (ORT_DYLIB_PATH)");
    let dir = tempfile::tempdir().expect("temp dir");
    let bundle_dir = dir.path().join("bundle");
    write_fixture_bundle(&bundle_dir, None, 0.5, "bench").expect("fixture bundle");
    let model = ServingModel::load(&bundle_dir, None, 1).expect("load bundle");
    let (typical, long) = csic_targets();
    let mut summary = Vec::new();
    for (name, target) in [("typical", &typical), ("long", &long)] {
        let req = RequestParts { method: "GET", target: target.as_bytes(), body: None };
        c.bench_function(&format!("featurize+score {name} ({} bytes)", target.len()), |b| {
            b.iter(|| model.score(std::hint::black_box(&req)))
        });
        let (p50, p99) = percentiles(&model, &req);
        summary.push(format!("{name} ({} bytes): p50 {p50:.1} µs, p99 {p99:.1} µs", target.len()));
    }
    for line in summary {
        println!("scoring {line}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
