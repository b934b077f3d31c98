//! Every vector and score of the hot path stays bit for bit what it was: a few hundred varied
//! requests (CSIC 2010 requests with their headers from `data/sample`, and crafted ones: JSON,
//! multipart, XML and text bodies, long values, Unicode and Latin-1, percent-, entity-, JS- and
//! Base64-encoding, repeated and excessive parts, excluded fields), featurized with the
//! recommended featurizer (the settings of `trainer::recipe::featurizer()`, copied so that a
//! change of the recipe does not move this file, with `part_values_only`) and a variant that cuts
//! windows small and reads pair by pair, then scored by a bundle with a linear student and a
//! 10000→64→1 part model (weights from a fixed generator) as pate-proxy scores them.
//!
//! Each view (`transform`, `transform_windows`, `windows_and_parts`, `part_vectors`,
//! `placement_vectors`, `explain`, the content-only featurizer's views, `score_checked` both
//! ways, `worst_placement`) is recorded per request as a 64-bit FNV-1a digest of its exact bits
//! (indices, value bits, truncation flags, placements, score bits) in
//! `tests/data/featurize_golden.json`, written before the hot path was optimized (issue 44). The
//! file is only rewritten (`PATE_WRITE_FEATURIZE_GOLDEN=1`) for a deliberate change of reading.

use std::collections::BTreeMap;
use std::path::Path;

use bundle::{write_bundle, BundleContents, Dense, Mlp, PartOffsets};
use datasets::{Format, Record};
use featurizer::{
    ExcludedFields, Featurizer, FeaturizerConfig, Headers, Norm, Placement, PlacementConfig,
    RequestParts, Scratch, SparseVector,
};
use proxy::config::ScorerKind;
use proxy::model::ServingModel;

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/featurize_golden.json"
);

/// 64-bit FNV-1a: a digest that is the same on every platform and Rust version.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn u32(&mut self, n: u32) {
        self.bytes(&n.to_le_bytes());
    }
    fn vector(&mut self, v: &SparseVector) {
        self.u32(v.indices.len() as u32);
        for &i in &v.indices {
            self.u32(i);
        }
        for &x in &v.values {
            self.u32(x.to_bits());
        }
        self.bytes(&[u8::from(v.truncated)]);
    }
    fn placed(&mut self, p: Placement, v: &SparseVector) {
        self.bytes(p.as_str().as_bytes());
        self.vector(v);
    }
    fn hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

fn digest_vectors(vs: &[SparseVector]) -> String {
    let mut h = Fnv::new();
    vs.iter().for_each(|v| h.vector(v));
    format!("{}:{}", vs.len(), h.hex())
}

fn digest_placed(vs: &[(Placement, SparseVector)]) -> String {
    let mut h = Fnv::new();
    vs.iter().for_each(|(p, v)| h.placed(*p, v));
    format!("{}:{}", vs.len(), h.hex())
}

fn digest_text(text: &str) -> String {
    let mut h = Fnv::new();
    h.bytes(text.as_bytes());
    h.hex()
}

/// The recommended featurizer (`trainer::recipe::featurizer()` of 2026-11-28, with
/// `part_values_only`).
fn recipe() -> FeaturizerConfig {
    FeaturizerConfig {
        top_k: 10_000,
        char_ngrams: Some([1, 3]),
        sublinear_tf: true,
        params: true,
        rarity_min_count: Some(3),
        odd_permille: vec![10, 50],
        odd_shape_path: true,
        odd_name_variants: true,
        norm: Norm::L2,
        placements: Some(PlacementConfig {
            referer_as_url: true,
            opaque_tokens: true,
            request_line_whole: true,
            part_values_only: true,
            known_header_permille: Some(10),
            known_digit_runs: true,
            ..PlacementConfig::default()
        }),
        libinjection: true,
        signatures: true,
        ..FeaturizerConfig::default()
    }
}

/// Small windows, pair by pair, every part of a shared window alone, value shapes, longer
/// character n-grams, l1: the other branches of the same code.
fn variant() -> FeaturizerConfig {
    FeaturizerConfig {
        top_k: 6000,
        max_input_bytes: 200,
        char_ngrams: Some([1, 5]),
        value_shapes: true,
        sublinear_tf: false,
        params: true,
        rarity_min_count: Some(2),
        odd_permille: vec![10],
        norm: Norm::L1,
        placements: Some(PlacementConfig {
            max_parts: 40,
            max_bytes: 6000,
            window_overlap_bytes: 32,
            parts_alone: true,
            referer_as_url: false,
            opaque_tokens: true,
            request_line_whole: false,
            part_values_only: false,
            known_header_permille: Some(20),
            known_digit_runs: false,
            ..PlacementConfig::default()
        }),
        libinjection: true,
        signatures: true,
        priors_undiluted: true,
        ..FeaturizerConfig::default()
    }
}

fn sample(file: &str) -> Vec<Record> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/sample")
        .join(file);
    datasets::load(Format::Csic, &path).expect("CSIC sample")
}

/// An owned request (method, target, headers, body).
struct Owned {
    method: String,
    target: Vec<u8>,
    headers: Vec<(String, Vec<u8>)>,
    body: Option<Vec<u8>>,
    excluded: Vec<String>,
}

impl Owned {
    fn parts(&self) -> RequestParts<'_> {
        RequestParts {
            method: &self.method,
            target: &self.target,
            body: self.body.as_deref(),
            headers: Headers::Owned(&self.headers),
            excluded_fields: ExcludedFields::new(&self.excluded),
        }
    }

    fn from_record(r: &Record) -> Self {
        Owned {
            method: r.method.clone(),
            target: r.target.clone(),
            headers: r.headers.clone(),
            body: r.body.clone(),
            excluded: Vec::new(),
        }
    }
}

const UA: &str = "Mozilla/5.0 (compatible; Konqueror/3.5; Linux) KHTML/3.5.8 (like Gecko)";

/// Crafted requests: every body reader, every decoding, the bounds.
fn crafted() -> Vec<Owned> {
    let req = |method: &str, target: &str, extra: &[(&str, &[u8])], body: Option<&[u8]>| {
        let mut headers: Vec<(String, Vec<u8>)> = vec![
            ("User-Agent".into(), UA.into()),
            ("Host".into(), b"localhost:8080".to_vec()),
        ];
        headers.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_vec())));
        Owned {
            method: method.into(),
            target: target.as_bytes().to_vec(),
            headers,
            body: body.map(<[u8]>::to_vec),
            excluded: Vec::new(),
        }
    };
    let form: &[(&str, &[u8])] = &[("Content-Type", b"application/x-www-form-urlencoded")];
    let json: &[(&str, &[u8])] = &[("Content-Type", b"application/json; charset=utf-8")];
    let xml: &[(&str, &[u8])] = &[("Content-Type", b"text/xml")];
    let text: &[(&str, &[u8])] = &[("Content-Type", b"text/plain")];
    let mp: &[(&str, &[u8])] = &[("Content-Type", b"multipart/form-data; boundary=XyZ")];
    let long_value = "a%20b+c".repeat(1500);
    let long_form = format!("q=1&pad={}&id=' or 1=1--", "x".repeat(9000));
    let many_pairs: String = (0..80).map(|k| format!("k{k}=v{k}&")).collect();
    let repeated = "a=1&".repeat(300);
    let unicode = "/caf%C3%A9/%E2%82%AC?q=na%EFve+%E2%82%AC+%F0%9F%98%80&n=%C0%AF..%C0%AFetc";
    let multipart = b"--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n' union select 1--\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.php\"\r\nContent-Type: text/plain\r\n\r\n<?php system($_GET[c]); ?>\r\n--XyZ--\r\n";
    let mut out = vec![
        req("GET", "/", &[], None),
        req("GET", "/tienda1/index.jsp", &[], None),
        req("PROPFIND", "/a/b/c.jsp?x=", &[], None),
        req("GET", "/a/b.jsp?id=3&x=%3Cscript%3Ealert(1)%3C/script%3E", &[], None),
        req("GET", unicode, &[], None),
        req("GET", "/p?v=%2527%2520or%25201%253D1", &[], None),
        req("GET", "/p?v=&#x27;&lt;b&gt;&#39&amp;lt;", &[], None),
        req("GET", "/p?v=%5Cu0027%5Cx3cscript", &[], None),
        req("GET", "/YWRtaW4nLS0=/x?q=Jm5ic3A7PHNjcmlwdD4=&t=Zx9kQ2mN7pL4tR8vWq3", &[], None),
        req("GET", &format!("/p?v={long_value}"), &[], None),
        req("GET", &format!("/p?{many_pairs}"), &[], None),
        req("GET", &format!("/p?{repeated}b=2"), &[], None),
        req("GET", "/p?q=%E9t%E9&r=\u{e9}", &[], None),
        req("POST", "/login", form, Some(b"user=bob&pass=%27+or+%271%27%3D%271&remember=on")),
        req("POST", "/login", form, Some(long_form.as_bytes())),
        req("POST", "/api?v=1", json, Some(br#"{"a": "' union select 1--", "b": [1, "x\u0027y"], "c": {"d": "../../etc/passwd", "e": {"f": ["<img src=x onerror=alert(1)>"]}}}"#)),
        req("POST", "/api", json, Some(b"{not json at all")),
        req("POST", "/api", json, Some(r#"{"name": "Jos\u00e9 Garc\u00eda", "emoji": "😀", "k": "日本語"}"#.as_bytes())),
        req("POST", "/upload", mp, Some(multipart)),
        req("POST", "/soap", xml, Some(br#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e "x">]><r a="1" q="attr"><q>text &lt;b&gt;<i>inner</i> tail</q><![CDATA[cdata ' or 1=1]]><!-- c --></r>"#)),
        req("POST", "/t", text, Some(b"plain text body with ; and ' and <tags>")),
        req("POST", "/t", &[], Some(b"no content type: a=1&b=<x>")),
        req("PUT", "/bin", &[("Content-Type", b"application/octet-stream")], Some(&[0xff, 0xfe, 0x00, 0x41, 0xe9, 0x80])),
        req("GET", "/r", &[("Referer", b"http://localhost:8080/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&precio=85&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25&B1=A%F1adir+al+carrito")], None),
        req("GET", "/r", &[("Cookie", b"JSESSIONID=B92A8B48B9008CD29F622A994E0F650D; theme=dark; theme=dark; x=%27or%271"), ("X-Forwarded-For", b"10.0.0.1, 192.168.1.1"), ("Forwarded", b"for=1.2.3.4;proto=https")], None),
        req("GET", "/r", &[("X-Custom", "Mözilla ünïcode ☃ 𝄞".as_bytes()), ("Accept-Language", b"\xe9t\xe9, en;q=0.5")], None),
        req("GET", "/r", &[("Accept", b"text/xml,application/xml,application/xhtml+xml,text/html;q=0.9,text/plain;q=0.8,image/png,*/*;q=0.5"), ("Accept-Charset", b"utf-8, utf-8;q=0.5, *;q=0.5"), ("Connection", b"close"), ("Content-Length", b"0")], None),
        req("GET", &format!("/{}", "seg/".repeat(400)), &[], None),
    ];
    let mut excluded = req(
        "POST",
        "/api",
        json,
        Some(br#"{"secret": "' or 1=1", "keep": "<script>"}"#),
    );
    excluded.excluded = vec!["secret".into()];
    out.push(excluded);
    out
}

/// The requests of the golden file: CSIC requests with headers (normal and anomalous, test and
/// training samples) and the crafted ones.
fn requests() -> Vec<Owned> {
    let mut out = Vec::new();
    for (file, step) in [
        ("csic_normalTrafficTest_A_sample.txt", 4),
        ("csic_anomalousTrafficTest_A_sample.txt", 3),
    ] {
        out.extend(sample(file).iter().step_by(step).map(Owned::from_record));
    }
    // CSIC requests with other bodies and headers: the CSIC headers with a JSON body, a
    // Base64 cookie, a long User-Agent.
    for (k, r) in sample("csic_anomalousTrafficTest_A_sample.txt")
        .iter()
        .step_by(37)
        .enumerate()
    {
        let mut o = Owned::from_record(r);
        match k % 3 {
            0 => {
                o.headers
                    .retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
                o.headers
                    .push(("Content-Type".into(), b"application/json".to_vec()));
                let target = String::from_utf8_lossy(&r.target).replace('"', "\\\"");
                o.body = Some(format!(r#"{{"target": "{target}", "n": [1, 2]}}"#).into_bytes());
                o.method = "POST".into();
            }
            1 => o.headers.push((
                "Cookie".into(),
                b"session=eyJ1c2VyIjoiYWRtaW4nLS0ifQ==".to_vec(),
            )),
            _ => o
                .headers
                .push(("User-Agent".into(), UA.repeat(40).into_bytes())),
        }
        out.push(o);
    }
    out.extend(crafted());
    out
}

/// Deterministic weights in [-scale, scale] (a 64-bit LCG, Knuth's MMIX constants).
fn weights(n: usize, scale: f32, state: &mut u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((*state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn mlp(widths: &[usize], scale: f32, seed: u64) -> Mlp {
    let mut state = seed;
    Mlp {
        layers: widths
            .windows(2)
            .map(|w| Dense {
                in_dim: w[0],
                out_dim: w[1],
                weight: weights(w[0] * w[1], scale, &mut state),
                bias: weights(w[1], scale, &mut state),
            })
            .collect(),
    }
}

/// A bundle of `featurizer` with a linear student and a K→64→1 part model, loaded natively.
fn serving_model(featurizer: &Featurizer, dir: &Path) -> ServingModel {
    let k = featurizer.dim();
    let student = mlp(&[k, 1], 0.5, 7);
    let part = mlp(&[k, 64, 1], 0.3, 11);
    let offsets = PartOffsets::new(BTreeMap::from([
        (Placement::Query, 2.2),
        (Placement::HdrUserAgent, 1.0),
        (Placement::JsonValue, 3.0),
    ]))
    .expect("offsets");
    write_bundle(
        dir,
        &BundleContents {
            mlp: &student,
            featurizer,
            threshold: 0.5,
            content_only_threshold: Some(0.6),
            part_model: Some(&part),
            part_model_offsets: offsets,
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: Some("featurize-golden".into()),
            format_checks: None,
        },
    )
    .expect("write bundle");
    ServingModel::load_with_scorer(dir, None, 1, ScorerKind::Native).expect("load bundle")
}

/// Every view of `req`, one digest each.
fn views(f: &Featurizer, content: &Featurizer, model: &ServingModel, req: &RequestParts) -> String {
    let mut fields: Vec<String> = Vec::new();
    for (prefix, f) in [("", f), ("content-", content)] {
        let v = f.transform(req);
        let mut again = SparseVector::default();
        f.transform_into(req, &mut Scratch::default(), &mut again);
        assert_eq!(again, v, "transform_into with a fresh scratch");
        fields.push(format!("{prefix}transform={}", digest_vectors(&[v])));
        let mut windows = Vec::new();
        f.transform_windows(req, &mut windows);
        fields.push(format!("{prefix}windows={}", digest_vectors(&windows)));
        let (mut both, mut parts) = (Vec::new(), Vec::new());
        f.windows_and_parts(req, &mut both, &mut parts);
        assert_eq!(both, windows, "windows_and_parts' windows");
        fields.push(format!("{prefix}parts={}", digest_placed(&parts)));
        assert_eq!(f.part_vectors(req), parts, "part_vectors");
        let mut alone = Vec::new();
        f.transform_parts(req, &mut alone);
        assert_eq!(alone.len(), parts.len(), "transform_parts");
        let placed = f.placement_vectors(req);
        let mut again = Vec::new();
        let segments = f.transform_windows_segmented(req, &mut again);
        assert_eq!(again, windows, "transform_windows_segmented's windows");
        if let Some(segments) = segments {
            let from_segments = f.placement_vectors_segmented(req, &segments);
            assert_eq!(
                from_segments, placed,
                "placement_vectors from the kept segments"
            );
        }
        fields.push(format!("{prefix}placements={}", digest_placed(&placed)));
    }
    fields.push(format!(
        "explain={}",
        digest_text(&format!("{:?}", f.explain(req)))
    ));
    for checks in [true, false] {
        let s = model.score_checked(req, checks).expect("score");
        let mut h = Fnv::new();
        h.u32(s.score.to_bits());
        h.vector(&s.features);
        let flags = [s.truncated, s.malicious, s.unseen_path];
        h.bytes(&flags.map(u8::from));
        h.bytes(s.part.map_or("-", Placement::as_str).as_bytes());
        let worst = model.worst_placement(req, checks);
        assert_eq!(
            model.worst_placement_of(req, checks, s.segments.as_ref()),
            worst,
            "worst placement from the scored request's segments"
        );
        h.bytes(worst.as_str().as_bytes());
        let unkept = proxy::model::Scored {
            segments: None,
            ..s.clone()
        };
        assert_eq!(
            format!("{:?}", model.explain(req, &s, checks, 8)),
            format!("{:?}", model.explain(req, &unkept, checks, 8)),
            "explanation with the scored request's segments"
        );
        let key = if checks {
            "score-checks"
        } else {
            "score-content"
        };
        fields.push(format!("{key}={:08x}:{}", s.score.to_bits(), h.hex()));
    }
    fields.join(" ")
}

/// One line per request and featurizer.
fn golden_now() -> String {
    let requests = requests();
    let training = sample("csic_normalTrafficTraining_sample.txt");
    let mut lines = Vec::new();
    for (name, config) in [("recipe", recipe()), ("variant", variant())] {
        let f = Featurizer::fit(config, training.iter().map(Record::parts)).expect("fit");
        let content = f.clone().without_format_checks();
        let dir = tempfile::tempdir().expect("temp dir");
        let model = serving_model(&f, dir.path());
        for (k, r) in requests.iter().enumerate() {
            lines.push(format!(
                "{name} {k} {}",
                views(&f, &content, &model, &r.parts())
            ));
        }
    }
    serde_json::to_string_pretty(&lines).expect("json") + "\n"
}

/// The views of every request are the bits recorded before issue 44's optimizations.
#[test]
fn hot_path_vectors_and_scores_are_unchanged() {
    bundle::init_onnxruntime(None).expect("ONNX Runtime (ORT_DYLIB_PATH)");
    let now = golden_now();
    if std::env::var_os("PATE_WRITE_FEATURIZE_GOLDEN").is_some() {
        std::fs::write(GOLDEN, &now).expect("write golden");
        return;
    }
    let before = std::fs::read_to_string(GOLDEN).expect("golden file");
    let before: Vec<String> = serde_json::from_str(&before).expect("golden json");
    let now: Vec<String> = serde_json::from_str(&now).expect("json");
    assert_eq!(before.len(), now.len(), "requests");
    let differ: Vec<String> = before
        .iter()
        .zip(&now)
        .filter(|(b, n)| b != n)
        .map(|(b, n)| format!("before {b}\n   now {n}"))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} lines differ:\n{}",
        differ.len(),
        now.len(),
        differ
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
