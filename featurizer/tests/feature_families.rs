//! The opt-in feature families beyond the seeds' unigrams: character n-grams, parameter value
//! shapes and sublinear term frequency.
use featurizer::{
    for_each_configured_feature, normalize, value_shape, FeatureKind, Featurizer, FeaturizerConfig,
    RequestParts,
};
use proptest::prelude::*;

fn corpus() -> Vec<RequestParts<'static>> {
    vec![
        RequestParts::get("/tienda1/index.jsp"),
        RequestParts::get("/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&cantidad=2"),
        RequestParts::get("/tienda1/publico/anadir.jsp?id=2&nombre=Queso&cantidad=1"),
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

fn features(text: &str, config: &FeaturizerConfig) -> (Vec<String>, u32) {
    let mut out = Vec::new();
    let n = for_each_configured_feature(text, config, &mut String::new(), |kind, f| {
        out.push(format!("{}{f}", kind.prefix()))
    });
    (out, n)
}

#[test]
fn character_ngrams_follow_tokens_in_text_order_shortest_first() {
    let config = FeaturizerConfig {
        char_ngrams: Some([2, 3]),
        ..Default::default()
    };
    let (f, n) = features("a'b", &config);
    assert_eq!(f, vec!["a", "'", "b", "c:a'", "c:'b", "c:a'b"]);
    assert_eq!(n, 6);
    // Characters, not bytes: "ñ" is one character (two UTF-8 bytes).
    let (f, _) = features(
        "ñx",
        &FeaturizerConfig {
            char_ngrams: Some([1, 2]),
            ..Default::default()
        },
    );
    assert_eq!(f, vec!["ñx", "c:ñ", "c:x", "c:ñx"]);
    // Shorter text than the smallest n: no character n-grams at all.
    let (f, _) = features(
        "ab",
        &FeaturizerConfig {
            char_ngrams: Some([3, 5]),
            ..Default::default()
        },
    );
    assert_eq!(f, vec!["ab"]);
}

#[test]
fn value_shapes_name_each_parameter_and_the_kind_of_its_value() {
    assert_eq!(value_shape(""), "empty");
    assert_eq!(value_shape("49"), "digits");
    assert_eq!(value_shape("jamón ibérico"), "alpha");
    assert_eq!(value_shape("calle 3"), "alnum");
    assert_eq!(value_shape("a.b@c.es"), "text");
    assert_eq!(value_shape("' or 1=1--"), "symbols");
    assert_eq!(value_shape(&"a".repeat(64)), "alpha,long");
    assert_eq!(value_shape(&"a".repeat(63)), "alpha");
    let config = FeaturizerConfig {
        value_shapes: true,
        ..Default::default()
    };
    let (text, _) = normalize(
        &config,
        &RequestParts::get("/a.jsp?id=2%2F&cantidad=abc&B1=Entrar&flag"),
    );
    let (f, _) = features(&text, &config);
    let shapes: Vec<&String> = f.iter().filter(|f| f.starts_with("v:")).collect();
    assert_eq!(
        shapes,
        vec!["v:id=text", "v:cantidad=alpha", "v:b1=alpha", "v:flag=noeq"]
    );
    // No query: no shapes.
    let (f, _) = features("/a.jsp", &config);
    assert!(f.iter().all(|f| !f.starts_with("v:")));
}

#[test]
fn new_families_fit_transform_explain_and_round_trip() {
    let config = FeaturizerConfig {
        top_k: 200,
        char_ngrams: Some([3, 5]),
        value_shapes: true,
        sublinear_tf: true,
        ..Default::default()
    };
    let f = Featurizer::fit(config.clone(), corpus()).unwrap();
    let vocab = f.vocabulary();
    assert!(vocab.iter().any(|t| t == "c:jsp"), "{vocab:?}");
    assert!(vocab.iter().any(|t| t == "v:id=digits"), "{vocab:?}");
    assert!(vocab.iter().any(|t| t == "tienda1"), "{vocab:?}");
    let req = RequestParts::get("/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&cantidad=2");
    let v = f.transform(&req);
    let sum: f32 = v.values.iter().sum();
    assert!((sum - 1.0).abs() < 1e-5, "{sum}");
    let e = f.explain(&req);
    assert_eq!(e.weights.len(), v.indices.len());
    assert_eq!(
        e.weights
            .iter()
            .find(|w| w.token == "v:id=digits")
            .unwrap()
            .count,
        1
    );
    // "jsp" occurs once as a token and as the character 3-gram c:jsp.
    assert_eq!(
        e.weights.iter().find(|w| w.token == "c:jsp").unwrap().count,
        1
    );
    // The settings are in the artifact and survive a round trip; the weights are identical.
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(back.config(), &config);
    assert_eq!(back.transform(&req), v);
    assert_eq!(back.content_hash(), f.content_hash());
    // Wrong-type value: its shape feature differs from the normal one.
    let odd = f.explain(&RequestParts::get(
        "/tienda1/publico/anadir.jsp?id=3&nombre=Vino&cantidad=abc",
    ));
    assert!(odd.weights.iter().all(|w| w.token != "v:cantidad=digits"));
}

#[test]
fn parameters_never_seen_with_that_name_and_shape_count_as_unseen() {
    let config = FeaturizerConfig {
        top_k: 100,
        value_shapes: true,
        ..Default::default()
    };
    let f = Featurizer::fit(config, corpus()).unwrap();
    let vocab = f.vocabulary();
    // The 13 unseen-parameter features take the last places, in their fixed order.
    assert_eq!(
        &vocab[vocab.len() - 13..],
        featurizer::UNSEEN_SHAPES
            .map(|u| format!("v:{u}"))
            .as_slice()
    );
    let tampered = f.explain(&RequestParts::get(
        "/tienda1/publico/anadir.jsp?idA=3&nombre=Queso&cantidad=2",
    ));
    let w = |e: &featurizer::Explanation, t: &str| {
        e.weights.iter().find(|w| w.token == t).map(|w| w.count)
    };
    assert_eq!(
        w(&tampered, "v:unseen==digits"),
        Some(1),
        "{:?}",
        tampered.weights
    );
    assert_eq!(w(&tampered, "v:cantidad=digits"), Some(1));
    let wrong_type = f.explain(&RequestParts::get(
        "/tienda1/publico/anadir.jsp?id=3&nombre=Queso&cantidad=dos",
    ));
    assert_eq!(
        w(&wrong_type, "v:unseen==alpha"),
        Some(1),
        "{:?}",
        wrong_type.weights
    );
    let normal = f.explain(&RequestParts::get(
        "/tienda1/publico/anadir.jsp?id=3&nombre=Queso&cantidad=2",
    ));
    assert!(
        normal
            .weights
            .iter()
            .all(|w| !w.token.starts_with("v:unseen")),
        "{:?}",
        normal.weights
    );
    // The unseen features' document frequency was counted against the final vocabulary: the
    // corpus's only unseen pair kinds are from names that fell out of the top places (none here).
    let df_unseen_symbols = f.idf()[vocab.iter().position(|t| t == "v:unseen==symbols").unwrap()];
    assert!(df_unseen_symbols > 1.0);
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(
        back.transform(&RequestParts::get("/a?idA=3")),
        f.transform(&RequestParts::get("/a?idA=3"))
    );
    let err = Featurizer::fit(
        FeaturizerConfig {
            top_k: 13,
            value_shapes: true,
            ..Default::default()
        },
        corpus(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("unseen"), "{err}");
}

#[test]
fn sublinear_tf_damps_repeated_tokens() {
    let corpus = [RequestParts::get("/a?x=b"), RequestParts::get("/c?y=d")];
    let plain = Featurizer::fit(FeaturizerConfig::default(), corpus).unwrap();
    let sub = Featurizer::fit(
        FeaturizerConfig {
            sublinear_tf: true,
            ..Default::default()
        },
        corpus,
    )
    .unwrap();
    let req = RequestParts::get("/a/a/a/a?x=b");
    let weight = |f: &Featurizer, tok: &str| {
        let e = f.explain(&req);
        e.weights.iter().find(|w| w.token == tok).unwrap().weight
    };
    // "/" occurs 4 times, "x" once: the ratio of their weights is 4·idf ratio with raw tf and
    // (1 + ln 4)·idf ratio with sublinear tf.
    let idf =
        |f: &Featurizer, tok: &str| f.idf()[f.vocabulary().iter().position(|t| t == tok).unwrap()];
    let raw = weight(&plain, "/") / weight(&plain, "x");
    let damped = weight(&sub, "/") / weight(&sub, "x");
    let idf_ratio = idf(&plain, "/") / idf(&plain, "x");
    assert!((raw - 4.0 * idf_ratio).abs() < 1e-4, "{raw}");
    assert!(
        (damped - (1.0 + 4f32.ln()) * idf_ratio).abs() < 1e-4,
        "{damped}"
    );
}

#[test]
fn default_artifacts_do_not_mention_the_new_settings_and_bad_ones_are_refused() {
    let f = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    let json = String::from_utf8(f.to_json()).unwrap();
    for key in [
        "char_ngrams",
        "value_shapes",
        "sublinear_tf",
        "odd_permille",
        "odd_shape_path",
    ] {
        assert!(!json.contains(key), "{key} in a default artifact");
    }
    for bad in [[0, 3], [4, 3], [3, 9]] {
        let err = Featurizer::fit(
            FeaturizerConfig {
                char_ngrams: Some(bad),
                ..Default::default()
            },
            corpus(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("char_ngrams"), "{err}");
    }
    // Oddity levels need the rarity table, and are 1 to 4 ascending thousandths.
    for (rarity, levels) in [
        (None, vec![10]),
        (Some(3), vec![0]),
        (Some(3), vec![1000]),
        (Some(3), vec![50, 10]),
        (Some(3), vec![10, 10]),
        (Some(3), vec![1, 2, 3, 4, 5]),
    ] {
        let err = Featurizer::fit(
            FeaturizerConfig {
                params: true,
                rarity_min_count: rarity,
                odd_permille: levels.clone(),
                ..Default::default()
            },
            corpus(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("odd_permille"),
            "{levels:?}: {err}"
        );
    }
    // The shape/path kinds need the oddity levels.
    let err = Featurizer::fit(
        FeaturizerConfig {
            params: true,
            rarity_min_count: Some(3),
            odd_shape_path: true,
            ..Default::default()
        },
        corpus(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("odd_shape_path"), "{err}");
}

proptest! {
    #[test]
    fn new_families_never_panic_and_stay_l1_normalized(text in "[a-zñ0-9%'<>=&?/ .+-]{0,200}") {
        let config = FeaturizerConfig { top_k: 300, char_ngrams: Some([1, 5]), value_shapes: true, sublinear_tf: true, ..Default::default() };
        let f = Featurizer::fit(config, corpus()).unwrap();
        let req = RequestParts::get(&text);
        let v = f.transform(&req);
        prop_assert!(v.indices.windows(2).all(|w| w[0] < w[1]));
        if !v.is_empty() {
            let sum: f32 = v.values.iter().sum();
            prop_assert!((sum - 1.0).abs() < 1e-5);
        }
        prop_assert_eq!(f.explain(&req).weights.len(), v.indices.len());
    }
}

#[test]
fn feature_kind_prefixes() {
    assert_eq!(FeatureKind::Token.prefix(), "");
    assert_eq!(FeatureKind::Char.prefix(), "c:");
    assert_eq!(FeatureKind::Shape.prefix(), "v:");
}
