//! Property tests: transform never panics, its output is l1-normalized or empty, fitting is
//! deterministic.
use featurizer::{Featurizer, FeaturizerConfig, RequestParts};
use proptest::prelude::*;

fn fitted() -> Featurizer {
    let docs = [
        "/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&B1=A%F1adir",
        "/tienda1/miembros/editar.jsp?email=%27+or+1%3D1--",
        "/cgi-bin/../../etc/passwd",
        "/search?q=<script>alert(1)</script>",
        "/%C3%B1%25%32%37",
    ];
    Featurizer::fit(
        FeaturizerConfig {
            max_input_bytes: 256,
            ..Default::default()
        },
        docs.iter().map(|d| RequestParts::get(d)),
    )
    .unwrap()
}

/// Bytes biased towards what matters: `%`, hex digits, `+`, `?`, and arbitrary (invalid UTF-8) bytes.
fn request_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        3 => prop::sample::select(b"%+?&=/'<>-.2527aFfC3".to_vec()),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..400)
}

proptest! {
    #[test]
    fn transform_never_panics_and_is_l1_normalized_or_empty(
        target in request_bytes(),
        body in prop::option::of(request_bytes()),
    ) {
        let f = fitted();
        let req = RequestParts { method: "POST", target: &target, body: body.as_deref(), headers: Default::default(), excluded_fields: Default::default() };
        let v = f.transform(&req);
        prop_assert_eq!(v.indices.len(), v.values.len());
        prop_assert!(v.indices.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(v.indices.iter().all(|&i| (i as usize) < f.dim()));
        prop_assert!(v.values.iter().all(|x| x.is_finite() && *x > 0.0));
        if !v.is_empty() {
            let sum: f32 = v.values.iter().sum();
            prop_assert!((sum - 1.0).abs() < 1e-5, "sum {}", sum);
        }
        let raw_len = target.len() + body.as_ref().map_or(0, |b| if b.is_empty() { 0 } else { b.len() + 1 });
        prop_assert_eq!(v.truncated, raw_len > 256);
        let dense = f.transform_dense(&req);
        prop_assert_eq!(dense.len(), f.dim());
        let e = f.explain(&req);
        prop_assert_eq!(e.weights.len(), v.indices.len());
    }

    #[test]
    fn fit_is_deterministic(
        docs in prop::collection::vec(request_bytes(), 1..20),
        top_k in 1usize..40,
        ngram_max in 1usize..=3,
    ) {
        let config = FeaturizerConfig { top_k, ngram_max, ..Default::default() };
        let parts = || docs.iter().map(|d| RequestParts { method: "GET", target: d, body: None, headers: Default::default(), excluded_fields: Default::default() });
        let a = Featurizer::fit(config.clone(), parts()).unwrap();
        let b = Featurizer::fit(config.clone(), parts().rev()).unwrap();
        prop_assert_eq!(a.to_json(), b.to_json());
        prop_assert!(a.dim() <= top_k);
        let back = Featurizer::from_json(&a.to_json()).unwrap();
        prop_assert_eq!(back.to_json(), a.to_json());
        for d in &docs {
            let v = a.transform(&RequestParts { method: "GET", target: d, body: None, headers: Default::default(), excluded_fields: Default::default() });
            if !v.is_empty() {
                let sum: f32 = v.values.iter().sum();
                prop_assert!((sum - 1.0).abs() < 1e-5, "sum {}", sum);
            }
        }
    }
}

proptest! {
    /// The ASCII fast path of `tokenize` gives exactly the regex's tokens.
    #[test]
    fn ascii_scanner_matches_the_regex(text in "[\\x00-\\x7f]{0,200}") {
        let fast: Vec<&str> = featurizer::tokenize(&text).collect();
        let regex: Vec<&str> = featurizer::tokenize_with_regex(&text).collect();
        prop_assert_eq!(fast, regex);
    }

    #[test]
    fn tokenize_is_the_regex_on_any_text(text in any::<String>()) {
        let fast: Vec<&str> = featurizer::tokenize(&text).collect();
        let regex: Vec<&str> = featurizer::tokenize_with_regex(&text).collect();
        prop_assert_eq!(fast, regex);
    }
}

proptest! {
    /// Text rich in the characters where Unicode classes are subtle (marks, non-Latin digits,
    /// Unicode spaces, symbols).
    #[test]
    fn tokenize_is_the_regex_on_tricky_unicode(
        chars in prop::collection::vec(prop::sample::select(vec![
            'a', 'Z', '0', ' ', '\t', '\u{0b}', '\u{85}', '\u{a0}', '\u{1680}', '\u{2003}', '\u{3000}',
            'ñ', 'Ñ', 'ß', '\u{301}', '\u{903}', '٣', 'Ⅻ', '²', '½', '€', '©', '·', '\u{200b}', '\u{feff}',
            '漢', 'ㄱ', '🙂', '\u{1d7d8}', '_', '-', '\u{0}', '\u{7f}', '\u{9f}', 'ǅ', 'ʰ',
        ]), 0..60),
    ) {
        let text: String = chars.into_iter().collect();
        let fast: Vec<&str> = featurizer::tokenize(&text).collect();
        let regex: Vec<&str> = featurizer::tokenize_with_regex(&text).collect();
        prop_assert_eq!(fast, regex);
    }
}

#[test]
fn tokenize_is_the_regex_on_every_code_point() {
    // Each code point alone and between word characters: the per-character classes agree.
    for cp in 0..=0x10ffffu32 {
        let Some(c) = char::from_u32(cp) else {
            continue;
        };
        let text = format!("a{c}b {c}");
        let fast: Vec<&str> = featurizer::tokenize(&text).collect();
        let regex: Vec<&str> = featurizer::tokenize_with_regex(&text).collect();
        assert_eq!(fast, regex, "U+{cp:04X}");
    }
}

/// The definition, written plainly: count vocabulary tokens, tf = count / tokens, times idf,
/// divided by the sum.
fn reference_transform(f: &Featurizer, req: &RequestParts) -> Vec<(u32, f64)> {
    let (text, _) = featurizer::normalize(f.config(), req);
    let tokens: Vec<&str> = featurizer::tokenize_with_regex(&text).collect();
    let mut counts = std::collections::BTreeMap::<u32, u32>::new();
    for t in &tokens {
        if let Some(i) = f.vocabulary().iter().position(|v| v == t) {
            *counts.entry(i as u32).or_default() += 1;
        }
    }
    let raw: Vec<(u32, f64)> = counts
        .into_iter()
        .map(|(i, c)| {
            (
                i,
                c as f64 / tokens.len() as f64 * f.idf()[i as usize] as f64,
            )
        })
        .collect();
    let sum: f64 = raw.iter().map(|(_, w)| w).sum();
    raw.into_iter().map(|(i, w)| (i, w / sum)).collect()
}

proptest! {
    #[test]
    fn transform_equals_the_plain_definition(target in request_bytes(), body in prop::option::of(request_bytes())) {
        let f = fitted();
        let req = RequestParts { method: "POST", target: &target, body: body.as_deref(), headers: Default::default(), excluded_fields: Default::default() };
        let v = f.transform(&req);
        let expected = reference_transform(&f, &req);
        prop_assert_eq!(v.indices.len(), expected.len());
        for ((&i, &w), &(ei, ew)) in v.indices.iter().zip(&v.values).zip(&expected) {
            prop_assert_eq!(i, ei);
            prop_assert!((w as f64 - ew).abs() < 1e-6, "{} vs {}", w, ew);
        }
    }
}
