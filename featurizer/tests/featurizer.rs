//! Normalization, tokenization, fitting, transforming and the artifact.
use featurizer::{
    normalize, tokenize, Featurizer, FeaturizerConfig, FeaturizerError, RequestParts,
};

fn norm(target: &[u8]) -> String {
    normalize(
        &FeaturizerConfig::default(),
        &RequestParts {
            method: "GET",
            target,
            body: None,
            headers: Default::default(),
            excluded_fields: Default::default(),
        },
    )
    .0
}

fn toks(text: &str) -> Vec<&str> {
    tokenize(text).collect()
}

#[test]
fn single_double_and_triple_encoding_decode_within_the_round_limit() {
    assert_eq!(norm(b"/a?x=%27"), "/a?x='");
    assert_eq!(norm(b"/a?x=%2527"), "/a?x='");
    assert_eq!(norm(b"/a?x=%252527"), "/a?x='");
    // Four levels of encoding, three rounds: one level is left.
    assert_eq!(norm(b"/a?x=%25252527"), "/a?x=%27");
    let one_round = FeaturizerConfig {
        decode_rounds: 1,
        ..Default::default()
    };
    let req = RequestParts::get("/a?x=%2527");
    assert_eq!(normalize(&one_round, &req).0, "/a?x=%27");
    let no_decoding = FeaturizerConfig {
        decode_rounds: 0,
        ..Default::default()
    };
    assert_eq!(normalize(&no_decoding, &req).0, "/a?x=%2527");
}

#[test]
fn malformed_escapes_stay_as_they_are() {
    assert_eq!(norm(b"/a?x=%zz%4"), "/a?x=%zz%4");
    assert_eq!(norm(b"%"), "%");
    assert_eq!(norm(b"/100%25"), "/100%");
}

#[test]
fn plus_is_a_space_in_the_query_and_body_only_and_only_before_decoding() {
    assert_eq!(norm(b"/a+b/c?q=x+y"), "/a+b/c?q=x y");
    // `%2B` is an encoded literal plus: it stays a plus.
    assert_eq!(norm(b"/c?q=1%2B1"), "/c?q=1+1");
    let post = RequestParts {
        method: "POST",
        target: b"/login.jsp",
        body: Some(b"user=a+b&pwd=x%2By"),
        headers: Default::default(),
        excluded_fields: Default::default(),
    };
    assert_eq!(
        normalize(&FeaturizerConfig::default(), &post).0,
        "/login.jsp?user=a b&pwd=x+y"
    );
    // With a query already present the body is joined with '&'.
    let both = RequestParts {
        method: "POST",
        target: b"/p?a=1",
        body: Some(b"b=2+3"),
        headers: Default::default(),
        excluded_fields: Default::default(),
    };
    assert_eq!(
        normalize(&FeaturizerConfig::default(), &both).0,
        "/p?a=1&b=2 3"
    );
    let no_body = FeaturizerConfig {
        include_body: false,
        ..Default::default()
    };
    assert_eq!(normalize(&no_body, &both).0, "/p?a=1");
}

#[test]
fn latin1_and_utf8_encodings_of_the_same_letter_agree() {
    assert_eq!(norm(b"/a?B1=A%F1adir"), "/a?b1=añadir");
    assert_eq!(norm(b"/a?B1=A%C3%B1adir"), "/a?b1=añadir");
    // Upper-case Latin-1 Ñ (0xD1) is lower-cased too.
    assert_eq!(norm(b"/%D1"), "/ñ");
    assert_eq!(
        toks("/a?b1=añadir"),
        vec!["/", "a", "?", "b1", "=", "añadir"]
    );
}

#[test]
fn invalid_utf8_is_data_not_an_error() {
    assert_eq!(norm(b"/\xff\xFE?x=\xc3"), "/ÿþ?x=ã");
    assert_eq!(norm(b"/%ff%c3%28"), "/ÿã(");
    // A truncated UTF-8 sequence at the end.
    assert_eq!(norm(b"/\xe2\x82"), "/â\u{82}");
}

#[test]
fn empty_input_gives_empty_text_and_an_empty_vector() {
    assert_eq!(norm(b""), "");
    let f = Featurizer::fit(
        FeaturizerConfig::default(),
        [RequestParts::get("/index.html")],
    )
    .unwrap();
    let v = f.transform(&RequestParts {
        method: "GET",
        target: b"",
        body: None,
        headers: Default::default(),
        excluded_fields: Default::default(),
    });
    assert!(v.is_empty() && !v.truncated);
    assert_eq!(
        f.transform_dense(&RequestParts::get("")),
        vec![0.0; f.dim()]
    );
    // Nothing in the vocabulary: empty too.
    assert!(f.transform(&RequestParts::get("zzz")).is_empty());
}

#[test]
fn huge_input_is_truncated_and_flagged() {
    let config = FeaturizerConfig {
        max_input_bytes: 1000,
        ..Default::default()
    };
    let huge = format!("/a?x={}", "%41".repeat(1_000_000));
    let (text, truncated) = normalize(&config, &RequestParts::get(&huge));
    assert!(truncated);
    assert!(text.len() <= 1000, "{}", text.len());
    assert!(text.starts_with("/a?x=aaaa"));
    let f = Featurizer::fit(config.clone(), [RequestParts::get("/a?x=a")]).unwrap();
    let v = f.transform(&RequestParts::get(&huge));
    assert!(v.truncated);
    assert!(!v.is_empty());
    assert!(!f.transform(&RequestParts::get("/a?x=a")).truncated);
    // The body counts against the same limit.
    let long_body = vec![b'b'; 2000];
    let post = RequestParts {
        method: "POST",
        target: b"/a",
        body: Some(&long_body),
        headers: Default::default(),
        excluded_fields: Default::default(),
    };
    assert!(f.transform(&post).truncated);
}

#[test]
fn tokens_are_alphanumeric_runs_and_single_symbols() {
    assert_eq!(toks("' or 1=1--"), vec!["'", "or", "1", "=", "1", "-", "-"]);
    assert_eq!(
        toks("<script>alert(1)</script>"),
        vec!["<", "script", ">", "alert", "(", "1", ")", "<", "/", "script", ">"]
    );
    assert_eq!(
        toks("/tienda1/publico/anadir.jsp?id=3"),
        vec!["/", "tienda1", "/", "publico", "/", "anadir", ".", "jsp", "?", "id", "=", "3"]
    );
    // Underscore is a symbol; white space separates; NUL is a token.
    assert_eq!(toks("a_b  c\t;\0"), vec!["a", "_", "b", "c", ";", "\0"]);
    assert!(toks("   ").is_empty());
}

fn corpus() -> Vec<RequestParts<'static>> {
    vec![
        RequestParts::get("/tienda1/index.jsp"),
        RequestParts::get("/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja"),
        RequestParts::get("/tienda1/publico/pagar.jsp?modo=insertar"),
        RequestParts {
            method: "POST",
            target: b"/tienda1/publico/autenticar.jsp",
            body: Some(b"login=a&pwd=b"),
            headers: Default::default(),
            excluded_fields: Default::default(),
        },
        RequestParts::get("/tienda1/miembros/editar.jsp?email=%27+or+1%3D1--"),
    ]
}

#[test]
fn vocabulary_is_top_k_by_document_frequency_with_token_ties_ascending() {
    let f = Featurizer::fit(
        FeaturizerConfig {
            top_k: 6,
            ..Default::default()
        },
        corpus(),
    )
    .unwrap();
    // "/", ".", "jsp", "tienda1" occur in all 5 documents; then "=" and "?" in 4 ("?" comes from
    // the POST body join as well).
    assert_eq!(f.vocabulary(), &[".", "/", "jsp", "tienda1", "=", "?"]);
    assert_eq!(f.dim(), 6);
    assert_eq!(f.documents(), 5);
    // Smoothed IDF: ln((1+n)/(1+df)) + 1.
    let expected_df5 = ((6.0f64 / 6.0).ln() + 1.0) as f32;
    let expected_df4 = ((6.0f64 / 5.0).ln() + 1.0) as f32;
    assert_eq!(
        f.idf(),
        &[
            expected_df5,
            expected_df5,
            expected_df5,
            expected_df5,
            expected_df4,
            expected_df4
        ]
    );
    // Fewer distinct tokens than top_k: the vocabulary is smaller.
    let small = Featurizer::fit(FeaturizerConfig::default(), [RequestParts::get("/a/b")]).unwrap();
    assert_eq!(small.vocabulary(), &["/", "a", "b"]);
}

#[test]
fn weights_are_tf_idf_l1_normalized() {
    let f = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    let req = RequestParts::get("/tienda1/index.jsp?x=zzz");
    let v = f.transform(&req);
    assert!(v.indices.windows(2).all(|w| w[0] < w[1]));
    let sum: f32 = v.values.iter().sum();
    assert!((sum - 1.0).abs() < 1e-6, "{sum}");
    // Recompute by hand: tokens / tienda1 / index . jsp ? x = zzz -> 10 tokens.
    let e = f.explain(&req);
    assert_eq!(e.tokens.len(), 10);
    let raw: Vec<f64> = e
        .weights
        .iter()
        .map(|w| w.count as f64 / 10.0 * f.idf()[w.index as usize] as f64)
        .collect();
    let total: f64 = raw.iter().sum();
    for (w, r) in e.weights.iter().zip(&raw) {
        assert!((w.weight as f64 - r / total).abs() < 1e-6);
    }
    let slash = e.weights.iter().find(|w| w.token == "/").unwrap();
    assert_eq!(slash.count, 2);
    assert!(e.weights.iter().all(|w| w.token != "zzz"));
    // Dense agrees with sparse.
    let dense = f.transform_dense(&req);
    assert_eq!(dense.len(), f.dim());
    for (&i, &x) in v.indices.iter().zip(&v.values) {
        assert_eq!(dense[i as usize], x);
    }
    assert_eq!(dense.iter().filter(|x| **x != 0.0).count(), v.indices.len());
}

#[test]
fn transform_into_reuses_buffers_and_matches_transform() {
    let f = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    let mut scratch = featurizer::Scratch::default();
    let mut out = featurizer::SparseVector::default();
    for req in corpus()
        .iter()
        .chain([RequestParts::get(""), RequestParts::get("/x")].iter())
    {
        f.transform_into(req, &mut scratch, &mut out);
        assert_eq!(out, f.transform(req));
    }
}

#[test]
fn fitting_is_deterministic_and_order_independent() {
    let a = Featurizer::fit(FeaturizerConfig::default(), corpus())
        .unwrap()
        .to_json();
    let b = Featurizer::fit(FeaturizerConfig::default(), corpus())
        .unwrap()
        .to_json();
    let mut reversed = corpus();
    reversed.reverse();
    let c = Featurizer::fit(FeaturizerConfig::default(), reversed)
        .unwrap()
        .to_json();
    assert_eq!(a, b);
    assert_eq!(a, c);
}

#[test]
fn artifact_round_trips_byte_identically() {
    let f = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    let json = f.to_json();
    let g = Featurizer::from_json(&json).unwrap();
    assert_eq!(f, g);
    assert_eq!(g.to_json(), json);
    assert_eq!(f.content_hash().len(), 64);
    // serde on the type writes the same artifact.
    let mut via_serde = serde_json::to_vec_pretty(&f).unwrap();
    via_serde.push(b'\n');
    assert_eq!(via_serde, json);
    let via_to_json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(via_to_json["format_version"], 1);
    assert_eq!(via_to_json["config"]["top_k"], 500);
}

#[test]
fn edited_artifact_fails_the_hash_check() {
    let f = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&f.to_json()).unwrap();
    v["idf"][0] = serde_json::json!(7.5);
    let err = Featurizer::from_json(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(matches!(err, FeaturizerError::HashMismatch { .. }), "{err}");
    assert!(err.to_string().contains("hash mismatch"));
}

#[test]
fn other_versions_and_other_files_are_refused_clearly() {
    let f = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&f.to_json()).unwrap();
    v["format_version"] = serde_json::json!(99);
    let err = Featurizer::from_json(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(matches!(err, FeaturizerError::Version { .. }), "{err}");
    assert!(err.to_string().contains("version 99"), "{err}");
    let err = Featurizer::from_json(br#"{"hello": 1}"#).unwrap_err();
    assert!(matches!(err, FeaturizerError::Version { .. }), "{err}");
    let err = Featurizer::from_json(b"not json").unwrap_err();
    assert!(matches!(err, FeaturizerError::Parse(_)), "{err}");
}

#[test]
fn save_is_atomic_and_load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("featurizer.json");
    let f = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    f.save(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), f.to_json());
    assert_eq!(Featurizer::load(&path).unwrap(), f);
    // Only the artifact is left in the directory (no temporary files).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    std::fs::write(&path, b"{}").unwrap();
    let err = Featurizer::load(&path).unwrap_err().to_string();
    assert!(err.contains("featurizer.json"), "{err}");
    let err = Featurizer::load(&dir.path().join("missing.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.json"), "{err}");
    // Writing into a missing directory fails without leaving anything behind.
    assert!(f.save(&dir.path().join("no/such/dir/f.json")).is_err());
}

#[test]
fn bad_settings_are_refused() {
    let err = Featurizer::fit(
        FeaturizerConfig {
            top_k: 0,
            ..Default::default()
        },
        corpus(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("top_k"));
    let err = Featurizer::fit(FeaturizerConfig::default(), Vec::<RequestParts>::new()).unwrap_err();
    assert!(err.to_string().contains("empty corpus"));
}

#[test]
fn bigrams_are_an_opt_in_feature_family() {
    let mut gram = String::new();
    let mut features = Vec::new();
    let n = featurizer::for_each_feature("' or 1", 2, &mut gram, |f| features.push(f.to_owned()));
    assert_eq!(features, vec!["'", "or", "' or", "1", "or 1"]);
    assert_eq!(n, 5);
    let mut features = Vec::new();
    featurizer::for_each_feature("a b c", 3, &mut gram, |f| features.push(f.to_owned()));
    assert_eq!(features, vec!["a", "b", "a b", "c", "b c", "a b c"]);

    let config = FeaturizerConfig {
        ngram_max: 2,
        ..Default::default()
    };
    let f = Featurizer::fit(config, corpus()).unwrap();
    assert!(
        f.vocabulary().iter().any(|t| t == "/ tienda1"),
        "{:?}",
        f.vocabulary()
    );
    let req = RequestParts::get("/tienda1/index.jsp");
    let v = f.transform(&req);
    let sum: f32 = v.values.iter().sum();
    assert!((sum - 1.0).abs() < 1e-6);
    let e = f.explain(&req);
    assert_eq!(
        e.weights
            .iter()
            .find(|w| w.token == "/ tienda1")
            .unwrap()
            .count,
        1
    );
    assert_eq!(e.weights.iter().find(|w| w.token == "/").unwrap().count, 2);
    // The setting is in the artifact and survives a round trip.
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(back.config().ngram_max, 2);
    assert_eq!(back.transform(&req), v);
    // A unigram artifact does not mention the setting at all (its form and hash are unchanged).
    let uni = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    assert!(!String::from_utf8(uni.to_json())
        .unwrap()
        .contains("ngram_max"));
    let err = Featurizer::fit(
        FeaturizerConfig {
            ngram_max: 4,
            ..Default::default()
        },
        corpus(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("ngram_max"));
}

#[test]
fn unknown_fields_in_the_artifact_are_refused() {
    let f = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&f.to_json()).unwrap();
    v["surprise"] = serde_json::json!(1);
    let err = Featurizer::from_json(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(err.to_string().contains("surprise"), "{err}");
    let mut v: serde_json::Value = serde_json::from_slice(&f.to_json()).unwrap();
    v["config"]["ngram"] = serde_json::json!(2);
    let err = Featurizer::from_json(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(err.to_string().contains("ngram"), "{err}");
}
