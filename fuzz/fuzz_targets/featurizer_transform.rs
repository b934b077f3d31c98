//! Featurizer normalization, tokenization and transform on arbitrary request bytes.
//!
//! Input layout: byte 0 = flags (bit 0: send a body; bits 1-2: the featurizer, 0 unigram,
//! 1 bigram, 2 decoding off, 3 every optional feature: char n-grams, value shapes, sublinear tf); the rest is the target, split at the first `\n` into target and body when a body
//! is sent. Property: nothing panics, and the output is a valid sparse vector (strictly increasing
//! indices below `dim`, finite non-negative values summing to 1 within 1e-4, or empty), the same as
//! the dense form, and the hand-written tokenizer agrees with the regex definition.
#![no_main]

use std::sync::LazyLock;

use featurizer::{Featurizer, FeaturizerConfig, RequestParts};
use libfuzzer_sys::fuzz_target;

/// Requests the small featurizers are fitted on once: benign and malicious shapes, so the
/// vocabulary holds words, digits and the symbols attacks use.
const FIT_TARGETS: &[&str] = &[
    "/index.html",
    "/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&precio=85",
    "/search?q=shoes&page=2",
    "/login.php?user=admin'%20OR%201=1--&pass=x",
    "/page?id=<script>alert(document.cookie)</script>",
    "/../../etc/passwd",
    "/api/v1/items?sort=name;DROP TABLE users",
    "/caf%C3%A9?x=%2527%2520union%2520select",
];

fn fit(ngram_max: usize, decode_rounds: usize) -> Featurizer {
    fit_with(FeaturizerConfig { top_k: 64, max_input_bytes: 512, decode_rounds, include_body: true, ngram_max, ..FeaturizerConfig::default() })
}

fn fit_with(config: FeaturizerConfig) -> Featurizer {
    let docs = FIT_TARGETS.iter().map(|t| RequestParts { method: "POST", target: t.as_bytes(), body: Some(b"a=1&b='or'"), headers: Default::default(), excluded_fields: Default::default() });
    Featurizer::fit(config, docs).expect("fitting the fixed fuzz featurizer")
}

static UNIGRAM: LazyLock<Featurizer> = LazyLock::new(|| fit(1, 3));
static BIGRAM: LazyLock<Featurizer> = LazyLock::new(|| fit(2, 3));
static NO_DECODE: LazyLock<Featurizer> = LazyLock::new(|| fit(1, 0));
/// Every optional feature on: character 2-4-grams, value shapes, sublinear tf, token bigrams.
static RICH: LazyLock<Featurizer> = LazyLock::new(|| {
    fit_with(FeaturizerConfig {
        top_k: 96,
        max_input_bytes: 512,
        ngram_max: 2,
        char_ngrams: Some([2, 4]),
        value_shapes: true,
        sublinear_tf: true,
        ..FeaturizerConfig::default()
    })
});

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let (target, body) = if flags & 1 != 0 {
        match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, Some(&[][..])),
        }
    } else {
        (rest, None)
    };
    let featurizer: &Featurizer = match (flags >> 1) & 3 {
        0 => &UNIGRAM,
        1 => &BIGRAM,
        2 => &NO_DECODE,
        _ => &RICH,
    };
    let req = RequestParts { method: "GET", target, body, headers: Default::default(), excluded_fields: Default::default() };

    let (normalized, truncated) = featurizer::normalize(featurizer.config(), &req);
    let fast: Vec<&str> = featurizer::tokenize(&normalized).collect();
    let by_regex: Vec<&str> = featurizer::tokenize_with_regex(&normalized).collect();
    assert_eq!(fast, by_regex, "tokenize disagrees with TOKEN_PATTERN on {normalized:?}");

    let v = featurizer.transform(&req);
    assert_eq!(v.truncated, truncated, "transform and normalize disagree on truncation");
    assert_eq!(v.indices.len(), v.values.len());
    let dim = featurizer.dim();
    assert!(v.indices.windows(2).all(|w| w[0] < w[1]), "indices not strictly increasing: {:?}", v.indices);
    assert!(v.indices.iter().all(|&i| (i as usize) < dim), "index out of range (dim {dim}): {:?}", v.indices);
    assert!(v.values.iter().all(|x| x.is_finite() && *x > 0.0), "bad value: {:?}", v.values);
    if !v.is_empty() {
        let sum: f32 = v.values.iter().sum();
        assert!((sum - 1.0).abs() <= 1e-4, "l1 sum {sum} is not 1");
    }
    let dense = featurizer.transform_dense(&req);
    assert_eq!(dense.len(), dim);
    assert_eq!(dense, v.to_dense(dim));

    let explanation = featurizer.explain(&req);
    assert_eq!(explanation.normalized, normalized);
});
