//! In-process scoring time per request: featurize + score (exactly what the proxy does in
//! `request_filter`, `ServingModel::score`), for each proxy scorer: `onnxruntime` (the default:
//! ONNX Runtime on the sparse-input graph, `bundle::Scorer::score_sparse`, from the session pool)
//! and `native` (the opt-in native sparse forward pass, `bundle::SparseMlp`), with a bundle of
//! production size: a
//! featurizer fitted (K = 500) on CSIC 2010 requests and a 500→512→128→1 MLP (weights set by a
//! deterministic generator; timing does not depend on their values). Two requests: a typical
//! CSIC request (median length of those with a query or body) and a long one (the longest).
//!
//! Run: `cargo bench -p proxy --bench score`. Besides criterion's estimates it prints p50/p99 of
//! 20 000 timed calls per request.

use std::path::Path;
use std::time::Instant;

use bundle::{write_bundle, BundleContents, Dense, Mlp};
use criterion::{criterion_group, criterion_main, Criterion};
use datasets::{Format, Record};
use featurizer::{Featurizer, FeaturizerConfig, RequestParts};
use proxy::config::ScorerKind;
use proxy::model::ServingModel;

fn csic_records() -> Vec<Record> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets/csic2010");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/sample");
    let mut records = Vec::new();
    for (dir, file) in [
        (&dir, "normalTrafficTest_A.txt"),
        (&dir, "anomalousTrafficTest_A.txt"),
        (&sample, "csic_normalTrafficTest_A_sample.txt"),
        (&sample, "csic_anomalousTrafficTest_A_sample.txt"),
    ] {
        // The full files when present (the sample otherwise), at most 10 000 requests each.
        if records.len() >= 20_000 || (file.contains("sample") && !records.is_empty()) {
            continue;
        }
        if let Ok(r) = datasets::load(Format::Csic, &dir.join(file)) {
            records.extend(r.into_iter().take(10_000));
        }
    }
    assert!(
        !records.is_empty(),
        "no CSIC data (shared/datasets or data/sample)"
    );
    records
}

/// Deterministic weights in [-scale, scale] (a 64-bit LCG, Knuth's MMIX constants).
fn weights(n: usize, scale: f32, state: &mut u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((*state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn production_sized_mlp(input: usize) -> Mlp {
    mlp_with_widths(&[input, 512, 128, 1])
}

fn mlp_with_widths(widths: &[usize]) -> Mlp {
    let mut state = 42;
    let mut layers = Vec::new();
    for (i, o) in widths.windows(2).map(|w| (w[0], w[1])) {
        let scale = 1.0 / (i as f32).sqrt();
        layers.push(Dense {
            in_dim: i,
            out_dim: o,
            weight: weights(i * o, scale, &mut state),
            bias: vec![0.0; o],
        });
    }
    Mlp { layers }
}

fn percentiles(model: &ServingModel, req: &RequestParts) -> (f64, f64) {
    percentiles_of(|| {
        let _ = std::hint::black_box(model.score(req));
    })
}

/// p50 and p99 in µs of 20 000 timed calls.
fn percentiles_of(mut call: impl FnMut()) -> (f64, f64) {
    let mut samples: Vec<f64> = (0..20_000)
        .map(|_| {
            let t = Instant::now();
            call();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    (
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
    )
}

fn bench(c: &mut Criterion) {
    bundle::init_onnxruntime(None).expect("ONNX Runtime (ORT_DYLIB_PATH)");
    let records = csic_records();
    let featurizer = Featurizer::fit(
        FeaturizerConfig::default(),
        records.iter().map(Record::parts),
    )
    .expect("fit");
    let mlp = production_sized_mlp(featurizer.dim());
    let dir = tempfile::tempdir().expect("temp dir");
    let bundle_dir = dir.path().join("bundle");
    write_bundle(
        &bundle_dir,
        &BundleContents {
            mlp: &mlp,
            featurizer: &featurizer,
            threshold: 0.5,
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: Some("bench".into()),
        },
    )
    .expect("write bundle");
    let models = [ScorerKind::Onnxruntime, ScorerKind::Native].map(|kind| {
        let model =
            ServingModel::load_with_scorer(&bundle_dir, None, 1, kind).expect("load bundle");
        assert_eq!(model.scorer(), kind);
        model
    });

    // configs/quick.yaml's student shape through the proxy path too (percentiles only).
    let quick_bundle_dir = dir.path().join("bundle-quick");
    write_bundle(
        &quick_bundle_dir,
        &BundleContents {
            mlp: &mlp_with_widths(&[featurizer.dim(), 64, 16, 1]),
            featurizer: &featurizer,
            threshold: 0.5,
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: Some("bench-quick".into()),
        },
    )
    .expect("write bundle");
    let quick_models = [ScorerKind::Onnxruntime, ScorerKind::Native].map(|kind| {
        ServingModel::load_with_scorer(&quick_bundle_dir, None, 1, kind).expect("load bundle")
    });

    let mut with_args: Vec<&Record> = records
        .iter()
        .filter(|r| r.target.contains(&b'?') || r.body.is_some())
        .collect();
    with_args.sort_by_key(|r| r.target.len() + r.body.as_ref().map_or(0, Vec::len));
    let typical = with_args[with_args.len() / 2];
    let long = with_args[with_args.len() - 1];
    let mut summary = Vec::new();
    for (name, record) in [("typical", typical), ("long", long)] {
        let req = record.parts();
        let bytes = req.target.len() + req.body.map_or(0, <[u8]>::len);
        for model in &models {
            let scorer = model.scorer().as_str();
            c.bench_function(
                &format!(
                    "featurize+score scorer={scorer} {name} CSIC request ({bytes} bytes, 500-512-128-1)"
                ),
                |b| b.iter(|| model.score(std::hint::black_box(&req))),
            );
        }
        // Percentiles of both scorers interleaved in rounds, so that load changes on the shared
        // machine hit both alike.
        let mut rounds: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for _ in 0..3 {
            for (model, out) in models.iter().zip(rounds.iter_mut()) {
                out.push(percentiles(model, &req));
            }
        }
        for model in &quick_models {
            let (p50, p99) = percentiles(model, &req);
            summary.push(format!(
                "scorer={} {name} ({} {bytes} bytes), 500-64-16-1 network: p50 {p50:.1} µs, p99 {p99:.1} µs",
                model.scorer().as_str(),
                req.method,
            ));
        }
        for (model, out) in models.iter().zip(rounds.iter_mut()) {
            out.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (p50, p99) = out[out.len() / 2];
            let p50s: Vec<String> = out.iter().map(|r| format!("{:.1}", r.0)).collect();
            summary.push(format!(
                "scorer={} {name} ({} {bytes} bytes): p50 {p50:.1} µs, p99 {p99:.1} µs \
                 (median round of 3; round p50s {})",
                model.scorer().as_str(),
                req.method,
                p50s.join("/")
            ));
        }
    }
    // Where the time goes (same process, same requests, p50/p99 of 20 000 calls): featurize
    // alone; the native sparse forward pass alone (`scorer: native`); ONNX Runtime on the
    // sparse-input graph (`scorer: onnxruntime`, the default) and on the bundle's dense graph
    // (the proxy's first path); ORT's per-call floor, a 500→1 network.
    let native = bundle::SparseMlp::new(&mlp).expect("native");
    // configs/quick.yaml's student shape, for comparison.
    let native_small =
        bundle::SparseMlp::new(&mlp_with_widths(&[featurizer.dim(), 64, 16, 1])).expect("native");
    let encoded = bundle::encode_onnx(&mlp).expect("encode");
    let mut scorer = bundle::Scorer::from_onnx(&encoded, featurizer.dim()).expect("scorer");
    let tiny = bundle::encode_onnx(&mlp_with_widths(&[featurizer.dim(), 1])).expect("encode");
    let mut tiny_scorer = bundle::Scorer::from_onnx(&tiny, featurizer.dim()).expect("scorer");
    for (name, record) in [("typical", typical), ("long", long)] {
        let req = record.parts();
        let features = featurizer.transform(&req);
        let dense = featurizer.transform_dense(&req);
        let nnz = features.indices.len();
        let mut line = |what: &str, (p50, p99): (f64, f64)| {
            summary.push(format!("{name}, {what}: p50 {p50:.1} µs, p99 {p99:.1} µs"))
        };
        line(
            "featurize only",
            percentiles_of(|| {
                std::hint::black_box(featurizer.transform(std::hint::black_box(&req)));
            }),
        );
        line(
            &format!("native SparseMlp only ({nnz} non-zeros)"),
            percentiles_of(|| {
                std::hint::black_box(native.score(&features.indices, &features.values).ok());
            }),
        );
        line(
            "native SparseMlp only, 500-64-16-1 network",
            percentiles_of(|| {
                std::hint::black_box(native_small.score(&features.indices, &features.values).ok());
            }),
        );
        line(
            "ORT sparse graph only",
            percentiles_of(|| {
                std::hint::black_box(
                    scorer
                        .score_sparse(&features.indices, &features.values)
                        .ok(),
                );
            }),
        );
        line(
            "ORT dense graph only",
            percentiles_of(|| {
                std::hint::black_box(scorer.score(&dense).ok());
            }),
        );
        line(
            "ORT 500-1 sparse graph (per-call floor)",
            percentiles_of(|| {
                std::hint::black_box(
                    tiny_scorer
                        .score_sparse(&features.indices, &features.values)
                        .ok(),
                );
            }),
        );
    }
    for line in summary {
        println!("featurize+score {line}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
