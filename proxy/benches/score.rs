//! In-process scoring time per request: featurize + score (exactly what the proxy does in
//! `request_filter`, `ServingModel::score`), for each proxy scorer: `onnxruntime` (the default:
//! ONNX Runtime on the sparse-input graph, `bundle::Scorer::score_sparse`, from the session pool)
//! and `native` (the opt-in native sparse forward pass, `bundle::SparseMlp`).
//!
//! The featurizer is the detector's: the `featurizer.config` of `configs/train.yaml` (character
//! 1–3-grams, parameter-aware tokens, the rarity table, l2, top_k 3000), fitted like the trainer
//! fits it (`Featurizer::fit` on a public corpus): every other CSIC 2010 request (the full files
//! under `shared/datasets` when present, `data/sample` otherwise); the requests timed come from
//! the other half, so they are live traffic to the featurizer. Two networks (weights from a
//! deterministic generator; timing does not depend on their values): the student shape of
//! `configs/train.yaml` (`student.training.hidden`, today `[]`: K→1, logistic regression), and a
//! K→512→128→1 MLP (the older production-size shape). Two requests: a typical CSIC request
//! (median length of those with a query or body) and a long one (the longest).
//!
//! Run: `cargo bench -p proxy --bench score`. Besides criterion's estimates it prints p50/p99 of
//! 20 000 timed calls per case, in 3 rounds interleaved across the scorers (median round, and
//! the spread over rounds), then the parts (featurize alone, each scorer alone, ORT's floor).
//!
//! `PATE_BENCH_BUNDLE=DIR` times a trained bundle instead (e.g. a `configs/csic-site.yaml`
//! run's `bundle/`): `ServingModel::score` with the format checks and `score_checked(req,
//! false)` (content alone, with the bundle's part model if it has one), as pate-proxy loads it
//! (`scorer: auto`), on the same typical and long CSIC requests with their headers.
// criterion_group! defines an undocumented `pub fn` (workspace lint missing_docs).
#![allow(missing_docs)]

use std::path::Path;
use std::time::Instant;

use bundle::{write_bundle, BundleContents, Dense, Mlp};
use criterion::{criterion_group, criterion_main, Criterion};
use datasets::Record;
use featurizer::{Featurizer, FeaturizerConfig, Scratch, SparseVector};
use proxy::config::ScorerKind;
use proxy::model::ServingModel;

fn csic_records() -> Vec<Record> {
    let records = test_support::csic_requests::csic_records();
    assert!(
        !records.is_empty(),
        "no CSIC data (shared/datasets or data/sample)"
    );
    records
}

/// `featurizer.config` and `student.training.hidden` of configs/train.yaml, or of the run
/// configuration `PATE_BENCH_CONFIG` names (relative to the repository root: e.g.
/// `configs/train-request-line.yaml`, whose featurizer reads the request line and form body
/// only; configs/train.yaml's reads every header and body, so that `ServingModel::score` scores
/// every window of the request, headers included).
fn train_yaml() -> (FeaturizerConfig, Vec<usize>) {
    let name = std::env::var("PATE_BENCH_CONFIG").unwrap_or_else(|_| "configs/train.yaml".into());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(&name);
    let config = trainer::config::RunConfig::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    (
        config.featurizer.config,
        config.student.training.hidden.clone(),
    )
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

/// "p50 X / p99 Y µs (rounds: p50 a–b, p99 c–d)": the median round by p50 and the spread.
fn summarize(mut rounds: Vec<(f64, f64)>) -> String {
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (p50, p99) = rounds[rounds.len() / 2];
    let min = |f: fn(&(f64, f64)) -> f64| rounds.iter().map(f).fold(f64::INFINITY, f64::min);
    let max = |f: fn(&(f64, f64)) -> f64| rounds.iter().map(f).fold(0.0, f64::max);
    format!(
        "p50 {p50:.1} µs, p99 {p99:.1} µs (rounds: p50 {:.1}–{:.1}, p99 {:.1}–{:.1})",
        min(|r| r.0),
        max(|r| r.0),
        min(|r| r.1),
        max(|r| r.1)
    )
}

/// The typical (median length of those with a query or body) and the longest live request.
fn typical_and_long(live: &[&Record]) -> [(&'static str, Record); 2] {
    test_support::csic_requests::typical_and_long(live).expect("a CSIC request with arguments")
}

/// `PATE_BENCH_BUNDLE`: a trained bundle, with and without the format checks.
fn bench_bundle(c: &mut Criterion, records: &[Record], dir: &Path) {
    let model = ServingModel::load(dir, None, 1).expect("load bundle");
    let live = test_support::csic_requests::live(records);
    let mut summary = vec![format!(
        "bundle {} (scorer {}, part model: {})",
        dir.display(),
        model.scorer().as_str(),
        model.has_part_model()
    )];
    for (name, record) in typical_and_long(&live) {
        let req = record.parts();
        let bytes = req.target.len() + req.body.map_or(0, <[u8]>::len);
        let modes = [("format checks", true), ("content only", false)];
        for (mode, checks) in modes {
            c.bench_function(&format!("bundle {mode}, {name} ({bytes} bytes)"), |b| {
                b.iter(|| model.score_checked(std::hint::black_box(&req), checks))
            });
        }
        let mut rounds: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for _ in 0..3 {
            for ((_, checks), out) in modes.iter().zip(rounds.iter_mut()) {
                out.push(percentiles_of(|| {
                    let scored = model.score_checked(std::hint::black_box(&req), *checks);
                    let _ = std::hint::black_box(scored);
                }));
            }
        }
        for ((mode, _), out) in modes.iter().zip(rounds) {
            summary.push(format!(
                "{mode}, {name} ({} {bytes} bytes, {} headers): {}",
                req.method,
                req.headers.len(),
                summarize(out)
            ));
        }
    }
    for line in summary {
        println!("featurize+score {line}");
    }
}

fn bench(c: &mut Criterion) {
    bundle::init_onnxruntime(None).expect("ONNX Runtime (ORT_DYLIB_PATH)");
    let records = csic_records();
    if let Ok(dir) = std::env::var("PATE_BENCH_BUNDLE") {
        return bench_bundle(c, &records, Path::new(&dir));
    }
    let (config, hidden) = train_yaml();
    // The trainer fits on its public split; here every other request (the timed requests come
    // from the rest).
    let featurizer =
        Featurizer::fit(config.clone(), records.iter().step_by(2).map(Record::parts)).expect("fit");
    let live = test_support::csic_requests::live(&records);
    let k = featurizer.dim();
    let shape_name = |widths: &[usize]| {
        widths
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join("-")
    };
    let student: Vec<usize> = std::iter::once(k)
        .chain(hidden.iter().copied())
        .chain([1])
        .collect();
    let shapes = [student, vec![k, 512, 128, 1]];
    let dir = tempfile::tempdir().expect("temp dir");
    // models[shape][scorer]
    let models: Vec<(String, Mlp, [ServingModel; 2])> = shapes
        .iter()
        .enumerate()
        .map(|(s, widths)| {
            let mlp = mlp_with_widths(widths);
            let bundle_dir = dir.path().join(format!("bundle-{s}"));
            write_bundle(
                &bundle_dir,
                &BundleContents {
                    mlp: &mlp,
                    featurizer: &featurizer,
                    threshold: 0.5,
                    content_only_threshold: None,
                    part_model: None,
                    part_model_offsets: Default::default(),
                    privacy: None,
                    metrics: serde_json::Value::Null,
                    model_version: Some("bench".into()),
                    format_checks: None,
                },
            )
            .expect("write bundle");
            let models = [ScorerKind::Onnxruntime, ScorerKind::Native].map(|kind| {
                let model = ServingModel::load_with_scorer(&bundle_dir, None, 1, kind)
                    .expect("load bundle");
                assert_eq!(model.scorer(), kind);
                model
            });
            (shape_name(widths), mlp, models)
        })
        .collect();

    let [(_, typical), (_, long)] = typical_and_long(&live);
    let (typical, long) = (&typical, &long);
    let mut summary = vec![format!(
        "featurizer: {}'s ({config:?}), K = {k}, fitted on {} CSIC requests",
        std::env::var("PATE_BENCH_CONFIG").unwrap_or_else(|_| "configs/train.yaml".into()),
        records.len().div_ceil(2)
    )];
    for (name, record) in [("typical", typical), ("long", long)] {
        let req = record.parts();
        let bytes = req.target.len() + req.body.map_or(0, <[u8]>::len);
        let nnz = featurizer.transform(&req).indices.len();
        for (shape, _, pair) in &models {
            for model in pair {
                let scorer = model.scorer().as_str();
                c.bench_function(
                    &format!(
                        "featurize+score scorer={scorer} {name} CSIC request ({bytes} bytes), {shape}"
                    ),
                    |b| b.iter(|| model.score(std::hint::black_box(&req))),
                );
            }
            // Percentiles of both scorers interleaved in rounds, so that load changes on the
            // shared machine hit both alike.
            let mut rounds: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
            for _ in 0..3 {
                for (model, out) in pair.iter().zip(rounds.iter_mut()) {
                    out.push(percentiles_of(|| {
                        let _ = std::hint::black_box(model.score(std::hint::black_box(&req)));
                    }));
                }
            }
            for (model, out) in pair.iter().zip(rounds) {
                summary.push(format!(
                    "scorer={} {name} ({} {bytes} bytes, {nnz} non-zeros), {shape}: {}",
                    model.scorer().as_str(),
                    req.method,
                    summarize(out)
                ));
            }
        }
    }
    // Content alone (`format_checks: false`) without a part model and with one (a second
    // network scored on every part of the request alone; `bundle::score_request_and_parts`):
    // linear K→1 (session 20) and K→64→1 (configs/train.yaml since session 21).
    let student = &models[0].1;
    let mut with_parts = Vec::new();
    for (name, widths) in [("linear", vec![k, 1]), ("hidden 64", vec![k, 64, 1])] {
        let part_dir = dir.path().join(format!("bundle-parts-{}", widths.len()));
        let part = mlp_with_widths(&widths);
        write_bundle(
            &part_dir,
            &BundleContents {
                mlp: student,
                featurizer: &featurizer,
                threshold: 0.5,
                content_only_threshold: None,
                part_model: Some(&part),
                part_model_offsets: Default::default(),
                privacy: None,
                metrics: serde_json::Value::Null,
                model_version: Some(format!("bench-parts-{}", widths.len())),
                format_checks: None,
            },
        )
        .expect("write bundle");
        with_parts.push((
            format!("windows and a {name} part model"),
            ServingModel::load_with_scorer(&part_dir, None, 1, ScorerKind::Onnxruntime)
                .expect("load bundle"),
        ));
    }
    let without_parts = &models[0].2[0];
    for (name, record) in [("typical", typical), ("long", long)] {
        let req = record.parts();
        let mut parts = Vec::new();
        featurizer.transform_parts(&req, &mut parts);
        let contenders: Vec<(&str, &ServingModel)> =
            std::iter::once(("windows only", without_parts))
                .chain(with_parts.iter().map(|(what, m)| (what.as_str(), m)))
                .collect();
        let mut rounds: Vec<Vec<(f64, f64)>> = vec![Vec::new(); contenders.len()];
        for _ in 0..3 {
            for ((_, model), out) in contenders.iter().zip(rounds.iter_mut()) {
                out.push(percentiles_of(|| {
                    let _ = std::hint::black_box(
                        model.score_checked(std::hint::black_box(&req), false),
                    );
                }));
            }
        }
        for ((what, _), out) in contenders.iter().zip(rounds) {
            summary.push(format!(
                "content only (format_checks: false), {what}, {name} ({} parts): {}",
                parts.len(),
                summarize(out)
            ));
        }
    }
    // Where the time goes (same process, same requests): featurize alone (`transform_into`
    // with reused buffers, and `transform`, what `ServingModel::score` calls); each scorer
    // alone; ORT's per-call floor (a K→1 network is the train.yaml student itself).
    for (name, record) in [("typical", typical), ("long", long)] {
        let req = record.parts();
        let features = featurizer.transform(&req);
        let mut line = |what: &str, (p50, p99): (f64, f64)| {
            summary.push(format!("{name}, {what}: p50 {p50:.1} µs, p99 {p99:.1} µs"))
        };
        let mut scratch = Scratch::default();
        let mut out = SparseVector::default();
        line(
            "featurize only (transform_into, reused buffers)",
            percentiles_of(|| {
                featurizer.transform_into(std::hint::black_box(&req), &mut scratch, &mut out);
                std::hint::black_box(&out);
            }),
        );
        line(
            "featurize only (transform)",
            percentiles_of(|| {
                std::hint::black_box(featurizer.transform(std::hint::black_box(&req)));
            }),
        );
        for (shape, mlp, _) in &models {
            let native = bundle::SparseMlp::new(mlp).expect("native");
            let encoded = bundle::encode_onnx(mlp).expect("encode");
            let mut scorer = bundle::Scorer::from_onnx(&encoded, k).expect("scorer");
            line(
                &format!("native SparseMlp only, {shape}"),
                percentiles_of(|| {
                    std::hint::black_box(native.score(&features.indices, &features.values).ok());
                }),
            );
            line(
                &format!("ORT sparse graph only, {shape}"),
                percentiles_of(|| {
                    std::hint::black_box(
                        scorer
                            .score_sparse(&features.indices, &features.values)
                            .ok(),
                    );
                }),
            );
        }
    }
    for line in summary {
        println!("featurize+score {line}");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
