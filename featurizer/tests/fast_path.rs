//! The hot path (`Featurizer::transform_into`, with its lookup tables) against a reference
//! written the plain way: every feature enumerated as text by the public enumerators (what
//! `Featurizer::fit` counts), prefixed, looked up by string in the vocabulary, weighted with
//! the documented formulas. The vectors must be identical (same indices, bit-identical values,
//! same truncation flag) on every CSIC sample request and on arbitrary text, for the detector's
//! request-line feature set (configs/train-request-line.yaml) and the other families: the trainer and the proxy share the
//! featurizer, so a speed change that altered a single weight would silently change scores.
use std::collections::{BTreeMap, HashMap};

use featurizer::params::{self, ParamScratch, RarityTable};
use featurizer::{
    for_each_configured_feature, normalize, FeatureKind, Featurizer, FeaturizerConfig, Norm,
    RequestParts, Scratch, SparseVector, PARAM_PREFIX, UNSEEN_NAME, VALUE_SHAPE_PREFIX,
};
use proptest::prelude::*;

const SAMPLES: [&str; 3] = [
    "csic_normalTrafficTraining_sample.txt",
    "csic_normalTrafficTest_A_sample.txt",
    "csic_anomalousTrafficTest_A_sample.txt",
];

/// (method, target, body) of every request of the in-repo CSIC samples.
fn csic_requests() -> Vec<(String, String, Option<String>)> {
    let mut out: Vec<(String, String, Option<String>)> = Vec::new();
    for file in SAMPLES {
        let path = format!("{}/../data/sample/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read(&path).expect("data/sample CSIC file");
        let text = String::from_utf8_lossy(&text);
        let mut in_body = false;
        for line in text.lines() {
            let line = line.trim_end_matches('\r');
            let method = ["GET ", "POST ", "PUT "]
                .into_iter()
                .find(|m| line.starts_with(m));
            if let Some(m) = method {
                let rest = &line[m.len()..];
                let url = rest.rsplit_once(' ').map_or(rest, |(u, _)| u);
                let target = url.strip_prefix("http://localhost:8080").unwrap_or(url);
                out.push((m.trim().to_owned(), target.to_owned(), None));
                in_body = false;
            } else if line.is_empty() {
                in_body = true;
            } else if in_body {
                if let Some(last) = out.last_mut() {
                    last.2 = Some(line.to_owned());
                }
            }
        }
    }
    assert!(out.len() > 2000, "{} requests", out.len());
    out
}

fn parts(r: &(String, String, Option<String>)) -> RequestParts<'_> {
    RequestParts {
        method: &r.0,
        target: r.1.as_bytes(),
        body: r.2.as_deref().map(str::as_bytes),
        headers: Default::default(),
        excluded_fields: Default::default(),
    }
}

/// configs/train-request-line.yaml's featurizer.config (trainer/tests/committed_configs.rs
/// checks the file resolves to these keys; the
/// request-line reading, which this plain reference implements: configs/train.yaml adds
/// `placements`, whose vectors `tests/placements.rs` checks).
fn train_request_line_yaml() -> FeaturizerConfig {
    FeaturizerConfig {
        top_k: 10000,
        char_ngrams: Some([1, 3]),
        sublinear_tf: true,
        params: true,
        rarity_min_count: Some(3),
        odd_permille: vec![10, 50],
        norm: Norm::L2,
        ..Default::default()
    }
}

fn configs() -> Vec<(&'static str, FeaturizerConfig)> {
    vec![
        ("train-request-line.yaml", train_request_line_yaml()),
        ("default (the seeds')", FeaturizerConfig::default()),
        (
            "value shapes, token bigrams",
            FeaturizerConfig {
                value_shapes: true,
                ngram_max: 2,
                ..Default::default()
            },
        ),
        (
            "character 1-8-grams, l1, no sublinear tf, params",
            FeaturizerConfig {
                top_k: 4000,
                char_ngrams: Some([1, 8]),
                params: true,
                ..Default::default()
            },
        ),
        (
            "character 3-5-grams, shapes, rarity",
            FeaturizerConfig {
                top_k: 2000,
                char_ngrams: Some([3, 5]),
                value_shapes: true,
                sublinear_tf: true,
                rarity_min_count: Some(2),
                ..Default::default()
            },
        ),
    ]
}

/// The plain-way vector of a request.
struct Reference {
    vocab: HashMap<String, u32>,
    rarity: Option<params::RarityLookup>,
}

impl Reference {
    fn new(f: &Featurizer) -> Self {
        let json: serde_json::Value = serde_json::from_slice(&f.to_json()).expect("json");
        let rarity = json.get("rarity").map(|t| {
            serde_json::from_value::<RarityTable>(t.clone())
                .expect("rarity table")
                .lookup()
        });
        Reference {
            vocab: f
                .vocabulary()
                .iter()
                .enumerate()
                .map(|(i, t)| (t.clone(), i as u32))
                .collect(),
            rarity,
        }
    }

    fn transform(&self, f: &Featurizer, req: &RequestParts) -> SparseVector {
        let config = f.config();
        let (text, truncated) = normalize(config, req);
        let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
        let mut add = |entry: &str| {
            if let Some(&i) = self.vocab.get(entry) {
                *counts.entry(i).or_default() += 1;
                true
            } else {
                false
            }
        };
        let mut gram = String::new();
        let mut tokens = for_each_configured_feature(&text, config, &mut gram, |kind, body| {
            let found = add(&format!("{}{body}", kind.prefix()));
            if !found && kind == FeatureKind::Shape {
                let shape = body.rsplit_once('=').map_or("", |(_, s)| s);
                add(&format!("{VALUE_SHAPE_PREFIX}{UNSEEN_NAME}{shape}"));
            }
        });
        if config.params || self.rarity.is_some() {
            tokens += params::for_each_param_feature(
                req.method,
                &text,
                config.params,
                self.rarity.as_ref(),
                &mut ParamScratch::default(),
                |body| {
                    add(&format!("{PARAM_PREFIX}{body}"));
                },
            );
        }
        let mut out = SparseVector {
            truncated,
            ..Default::default()
        };
        if counts.is_empty() {
            return out;
        }
        let idf = f.idf();
        let tf = |c: u32| {
            if config.sublinear_tf {
                1.0 + f64::from(c).ln()
            } else {
                f64::from(c) / f64::from(tokens)
            }
        };
        let l2 = config.norm == Norm::L2;
        let mut sum = 0.0f64;
        for (&i, &c) in &counts {
            let w = tf(c) * f64::from(idf[i as usize]);
            sum += if l2 { w * w } else { w };
        }
        let norm = if l2 { sum.sqrt() } else { sum };
        for (&i, &c) in &counts {
            out.indices.push(i);
            out.values
                .push((tf(c) * f64::from(idf[i as usize]) / norm) as f32);
        }
        out
    }
}

fn assert_same(f: &Featurizer, reference: &Reference, req: &RequestParts, what: &str) {
    let expected = reference.transform(f, req);
    let mut scratch = Scratch::default();
    let mut out = SparseVector::default();
    // Twice through the same buffers: the second call must not see the first one's state.
    for _ in 0..2 {
        f.transform_into(req, &mut scratch, &mut out);
        assert_eq!(out.indices, expected.indices, "{what}: {req:?}");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out.values), bits(&expected.values), "{what}: {req:?}");
        assert_eq!(out.truncated, expected.truncated, "{what}: {req:?}");
    }
    assert_eq!(f.transform(req), out, "{what}: transform vs transform_into");
}

#[test]
fn transform_equals_the_plain_reference_on_the_csic_sample() {
    let requests = csic_requests();
    for (name, config) in configs() {
        // Fitted on half (the public side), compared on all (seen and unseen requests).
        let f = Featurizer::fit(config, requests.iter().step_by(2).map(parts)).expect("fit");
        let reference = Reference::new(&f);
        let mut non_empty = 0;
        for r in &requests {
            let req = parts(r);
            assert_same(&f, &reference, &req, name);
            non_empty += usize::from(!reference.transform(&f, &req).is_empty());
        }
        assert!(
            non_empty > requests.len() / 2,
            "{name}: {non_empty} non-empty"
        );
    }
}

/// One featurizer per config, fitted on the sample plus text with multi-byte characters, NULs
/// and long runs (so that such n-grams are in the vocabulary).
fn fitted() -> &'static Vec<(Featurizer, Reference)> {
    static F: std::sync::OnceLock<Vec<(Featurizer, Reference)>> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let mut requests = csic_requests();
        for extra in [
            "/ñandú/añadir.jsp?nombre=Jamón+Ibérico&x=%00%00a%00&y=日本語テキスト日本語",
            "/a?b=%F0%9F%98%80%F0%9F%98%80x%E2%82%AC%E2%82%AC&c=ÀÉÎ%C3%80",
            "/%00%00%00/%00a?q=\u{1}\u{1}\u{1}&r=aaaaaaaaaaaaaaaaaaaa",
        ] {
            for _ in 0..5 {
                requests.push(("GET".into(), extra.into(), None));
            }
        }
        configs()
            .into_iter()
            .map(|(_, config)| {
                let f = Featurizer::fit(config, requests.iter().map(parts)).expect("fit");
                let r = Reference::new(&f);
                (f, r)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn transform_equals_the_plain_reference_on_arbitrary_requests(
        target in "/[a-zñé日%0-9A-F&=?+.\\x00\\x01 ÀÉ😀/]{0,60}",
        body in proptest::option::of("[a-z0-9%&=+ñ😀\\x00]{0,40}"),
        method in "(GET|POST|get|Put)",
    ) {
        let req = RequestParts {
            method: &method,
            target: target.as_bytes(),
            body: body.as_deref().map(str::as_bytes),
            headers: Default::default(), excluded_fields: Default::default(),
        };
        for (f, reference) in fitted() {
            assert_same(f, reference, &req, "arbitrary");
        }
    }
}
