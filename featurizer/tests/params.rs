//! Parameter-aware features, public-relative rarity features and l2 normalization (issue 16).
use featurizer::{Featurizer, FeaturizerConfig, Norm, RequestParts};

fn corpus() -> Vec<RequestParts<'static>> {
    let mut docs = Vec::new();
    for _ in 0..3 {
        docs.push(RequestParts::get(
            "/shop/buy.jsp?id=2&email=ana%40mail.es&cantidad=12",
        ));
        docs.push(RequestParts::get("/shop/index.jsp"));
    }
    docs.push(RequestParts {
        method: "POST",
        target: b"/shop/login.jsp",
        body: Some(b"login=ana&pwd=x1"),
        headers: Default::default(),
        excluded_fields: Default::default(),
    });
    docs
}

fn config() -> FeaturizerConfig {
    FeaturizerConfig {
        top_k: 400,
        char_ngrams: Some([1, 3]),
        sublinear_tf: true,
        params: true,
        rarity_min_count: Some(3),
        norm: Norm::L2,
        ..Default::default()
    }
}

fn tokens_of(f: &Featurizer, req: &RequestParts) -> Vec<String> {
    f.explain(req)
        .weights
        .into_iter()
        .map(|w| w.token)
        .filter(|t| t.starts_with("p:"))
        .collect()
}

#[test]
fn rarity_features_flag_a_tampered_parameter_relative_to_the_public_corpus() {
    let f = Featurizer::fit(config(), corpus()).unwrap();
    // The reserved rarity places are the last of the vocabulary.
    let vocab = f.vocabulary();
    let n = vocab.len();
    assert_eq!(&vocab[n - 2..], ["p:rare:any", "p:unseen:path"]);
    assert!(vocab.contains(&"p:rare:email".to_string()));
    assert!(vocab.contains(&"p:s:email=a@a.a".to_string()));
    assert!(vocab.contains(&"p:m:get".to_string()));

    let normal = RequestParts::get("/shop/buy.jsp?id=7&email=bob%40x.com&cantidad=99");
    let t = tokens_of(&f, &normal);
    assert!(
        !t.iter()
            .any(|t| t.contains("rare:") || t.contains("unseen:")),
        "{t:?}"
    );

    let tampered = RequestParts::get("/shop/buy.jsp?id=7&email=bob%40x%40y.com&cantidad=99");
    let t = tokens_of(&f, &tampered);
    assert!(t.contains(&"p:rare:email".to_string()), "{t:?}");
    assert!(t.contains(&"p:rare:any".to_string()), "{t:?}");
    assert!(!t.contains(&"p:unseen:path".to_string()), "{t:?}");

    let new_path = RequestParts::get("/shop/buy.jsp.bak");
    let t = tokens_of(&f, &new_path);
    assert!(t.contains(&"p:unseen:path".to_string()), "{t:?}");
    // The login path occurs once (< 3) in the corpus: unseen too.
    let t = tokens_of(
        &f,
        &RequestParts {
            method: "POST",
            target: b"/shop/login.jsp",
            body: Some(b"login=ana&pwd=x1"),
            headers: Default::default(),
            excluded_fields: Default::default(),
        },
    );
    assert!(t.contains(&"p:unseen:path".to_string()), "{t:?}");
}

/// `unseen_path_index`: the index of `p:unseen:path` while the format checks are on — in the
/// vector of a request to a path the corpus lacks, not in one of a known path — and `None`
/// without them or without rarity features.
#[test]
fn the_unseen_path_index_is_the_feature_a_new_path_carries() {
    let f = Featurizer::fit(config(), corpus()).unwrap();
    let i = f.unseen_path_index().expect("rarity features on");
    assert_eq!(f.vocabulary()[i as usize], "p:unseen:path");
    let has = |target: &str| f.transform(&RequestParts::get(target)).indices.contains(&i);
    assert!(has("/shop/buy.jsp.bak"));
    assert!(!has("/shop/buy.jsp?id=7&email=bob%40x.com&cantidad=99"));
    assert_eq!(f.clone().without_format_checks().unseen_path_index(), None);
    let plain = Featurizer::fit(
        FeaturizerConfig {
            rarity_min_count: None,
            ..config()
        },
        corpus(),
    )
    .unwrap();
    assert_eq!(plain.unseen_path_index(), None);
}

#[test]
fn l2_vectors_have_unit_euclidean_norm_and_l1_stays_the_default() {
    let f = Featurizer::fit(config(), corpus()).unwrap();
    let v = f.transform(&RequestParts::get("/shop/buy.jsp?id=7&email=x%40y%40z"));
    let l2: f64 = v.values.iter().map(|&w| f64::from(w) * f64::from(w)).sum();
    assert!((l2 - 1.0).abs() < 1e-5, "{l2}");
    let l1 = Featurizer::fit(
        FeaturizerConfig {
            norm: Norm::L1,
            ..config()
        },
        corpus(),
    )
    .unwrap();
    let v = l1.transform(&RequestParts::get("/shop/buy.jsp?id=7&email=x%40y%40z"));
    let s: f64 = v.values.iter().map(|&w| f64::from(w)).sum();
    assert!((s - 1.0).abs() < 1e-5, "{s}");
    assert_eq!(FeaturizerConfig::default().norm, Norm::L1);
}

#[test]
fn the_rarity_table_is_part_of_the_artifact_and_its_hash() {
    let f = Featurizer::fit(config(), corpus()).unwrap();
    let json = f.to_json();
    let back = Featurizer::from_json(&json).unwrap();
    assert_eq!(back, f);
    let req = RequestParts::get("/shop/buy.jsp?id=7&email=x%40y%40z");
    assert_eq!(back.transform(&req), f.transform(&req));
    let text = String::from_utf8(json.clone()).unwrap();
    assert!(text.contains("\"rarity\""), "table stored");
    assert!(text.contains("/shop/buy.jsp\\tid\\t9"), "keys stored");
    // Editing a count is caught by the content hash.
    let edited = text.replacen("\"/shop/index.jsp\": 3", "\"/shop/index.jsp\": 4", 1);
    assert_ne!(edited, text);
    assert!(Featurizer::from_json(edited.as_bytes()).is_err());
    // A featurizer without the new families writes none of their keys (old artifacts keep
    // their bytes and hash).
    let plain = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    let plain_text = String::from_utf8(plain.to_json()).unwrap();
    for key in ["\"rarity\"", "\"params\"", "\"norm\"", "rarity_min_count"] {
        assert!(!plain_text.contains(key), "{key} in {plain_text}");
    }
}

#[test]
fn bad_rarity_settings_are_clear_errors() {
    let e = Featurizer::fit(
        FeaturizerConfig {
            rarity_min_count: Some(0),
            ..config()
        },
        corpus(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("rarity_min_count"), "{e}");
    // Too small a vocabulary for the reserved rarity places.
    let e = Featurizer::fit(
        FeaturizerConfig {
            top_k: 3,
            ..config()
        },
        corpus(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("top_k"), "{e}");
}

/// The parameter and rarity families with the whole request (`placements`): read from the
/// target and a form body, never from a JSON body; carried by every window of a long request.
#[test]
fn parameter_features_combine_with_the_placement_view() {
    use featurizer::{Headers, PlacementConfig};
    let config = FeaturizerConfig {
        max_input_bytes: 256,
        placements: Some(PlacementConfig::default()),
        ..config()
    };
    let f = Featurizer::fit(config, corpus()).unwrap();
    let vocab = f.vocabulary();
    assert!(vocab.contains(&"p:rare:email".to_string()), "{vocab:?}");
    assert!(vocab.iter().any(|t| t.starts_with("pl:")), "{vocab:?}");
    let index = |name: &str| vocab.iter().position(|t| t == name).unwrap() as u32;
    let (rare_email, rare_any) = (index("p:rare:email"), index("p:rare:any"));

    let normal = RequestParts::get("/shop/buy.jsp?id=7&email=bob%40x.com&cantidad=99");
    assert!(!f.transform(&normal).indices.contains(&rare_any));
    let tampered = RequestParts::get("/shop/buy.jsp?id=7&email=bob%40x%40y.com&cantidad=99");
    let v = f.transform(&tampered);
    assert!(v.indices.contains(&rare_email) && v.indices.contains(&rare_any));
    let t = tokens_of(&f, &tampered);
    assert!(t.contains(&"p:rare:email".to_string()), "{t:?}");

    // A form body is part of the parameter view: the tampered e-mail in it is rare too.
    let form: &[(&str, &[u8])] = &[("Content-Type", b"application/x-www-form-urlencoded")];
    let posted = RequestParts {
        method: "GET",
        target: b"/shop/buy.jsp",
        body: Some(b"id=7&email=bob%40x%40y.com&cantidad=99"),
        headers: Headers::Pairs(form),
        excluded_fields: Default::default(),
    };
    assert!(f.transform(&posted).indices.contains(&rare_email));
    // A JSON body is not read as form pairs (its values are the placement view's).
    let json: &[(&str, &[u8])] = &[("Content-Type", b"application/json")];
    let as_json = RequestParts {
        body: Some(b"id=7&email=bob%40x%40y.com&cantidad=99"),
        headers: Headers::Pairs(json),
        ..posted
    };
    assert!(!f.transform(&as_json).indices.contains(&rare_email));

    // Every window of a long request carries the request's parameter features.
    let mut long = b"/shop/buy.jsp?id=7&email=bob%40x%40y.com&cantidad=99&pad=".to_vec();
    long.extend(std::iter::repeat_n(b'a', 2000));
    let long = RequestParts {
        target: &long,
        ..RequestParts::get("")
    };
    let mut windows = Vec::new();
    f.transform_windows(&long, &mut windows);
    assert!(windows.len() > 2, "{}", windows.len());
    assert!(windows.iter().all(|w| w.indices.contains(&rare_email)));
    // The artifact round-trips with both views.
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(back.transform(&tampered), v);
}

/// `without_format_checks` (pate-proxy's `format_checks: false`): a tampered parameter and a
/// path the public pool never has no longer emit `rare:*` / `unseen:path` / `odd:*`, every other
/// feature stays, and the artifact (its hash) is the same.
#[test]
fn without_format_checks_the_site_format_features_are_gone_and_the_rest_stays() {
    let config = FeaturizerConfig {
        odd_permille: vec![10, 50],
        ..config()
    };
    let with = Featurizer::fit(config, corpus()).unwrap();
    assert!(with.format_checks());
    let hash = with.content_hash().to_string();
    let without = with.clone().without_format_checks();
    assert!(!without.format_checks());
    assert_eq!(without.content_hash(), hash);
    let is_format_check =
        |t: &String| t.contains("rare:") || t.contains("unseen:") || t.contains("odd:");
    for target in [
        "/shop/buy.jsp?id=7&email=bob%40x%40y.com&cantidad=99",
        "/shop/buy.jsp.bak?x=1",
    ] {
        let req = RequestParts::get(target);
        let all = tokens_of(&with, &req);
        assert!(all.iter().any(is_format_check), "{target}: {all:?}");
        let rest: Vec<String> = all.into_iter().filter(|t| !is_format_check(t)).collect();
        let mut left = tokens_of(&without, &req);
        assert!(!left.iter().any(is_format_check), "{target}: {left:?}");
        let mut rest_sorted = rest.clone();
        rest_sorted.sort();
        left.sort();
        assert_eq!(left, rest_sorted, "{target}");
    }
}

/// A login form POST with `body`.
fn login(body: &'static str) -> RequestParts<'static> {
    RequestParts {
        method: "POST",
        target: b"/shop/login.jsp",
        body: Some(body.as_bytes()),
        headers: Default::default(),
        excluded_fields: Default::default(),
    }
}

/// `with_rarity_from`: the table counted on other requests (the benign ones), the vocabulary,
/// document frequencies and IDF kept. A pool where 3 of 22 passwords carry a `/` (attacks the
/// pool holds) does not make `/` odd at 1 %; counted on the 19 benign requests, it is.
#[test]
fn the_rarity_table_counted_on_other_requests_keeps_the_vocabulary() {
    const BENIGN: [&str; 19] = [
        "login=ana&pwd=x1",
        "login=bob&pwd=secret",
        "login=eva&pwd=q2w3",
        "login=ana&pwd=x2",
        "login=bob&pwd=verano",
        "login=eva&pwd=luna7",
        "login=ana&pwd=x3",
        "login=bob&pwd=clave",
        "login=eva&pwd=sol",
        "login=ana&pwd=mar9",
        "login=bob&pwd=tierra",
        "login=eva&pwd=rio",
        "login=ana&pwd=nube",
        "login=bob&pwd=cielo",
        "login=eva&pwd=roca1",
        "login=ana&pwd=pan",
        "login=bob&pwd=vino",
        "login=eva&pwd=queso",
        "login=ana&pwd=agua",
    ];
    let config = FeaturizerConfig {
        odd_permille: vec![10, 100],
        ..config()
    };
    // The pool: the 19 benign requests and 3 attacks.
    let pool = || {
        BENIGN.iter().map(|&b| login(b)).chain([
            login("login=bob&pwd=%2Fbuldar"),
            login("login=eva&pwd=ri%2Fo"),
            login("login=ana&pwd=nu%2Fbe"),
        ])
    };
    let fitted = Featurizer::fit(config, pool()).unwrap();
    let refit = fitted
        .with_rarity_from(BENIGN.iter().map(|&b| login(b)))
        .unwrap();
    assert_eq!(refit.vocabulary(), fitted.vocabulary());
    assert_eq!(refit.idf(), fitted.idf());
    assert_eq!(refit.documents(), fitted.documents());
    assert_ne!(
        refit.content_hash(),
        fitted.content_hash(),
        "the table is in the hash"
    );
    let attack = login("login=eva&pwd=%2Fsol");
    let odd = "p:odd:char<0.01".to_string();
    assert!(
        !tokens_of(&fitted, &attack).contains(&odd),
        "{:?}",
        tokens_of(&fitted, &attack)
    );
    assert!(
        tokens_of(&refit, &attack).contains(&odd),
        "{:?}",
        tokens_of(&refit, &attack)
    );
    assert!(!tokens_of(&refit, &login("login=eva&pwd=sol")).contains(&odd));
    // It round-trips as any artifact does.
    let back = Featurizer::from_json(&refit.to_json()).unwrap();
    assert_eq!(back.transform(&attack), refit.transform(&attack));
    // Counted on the corpus it was fitted on, the table is the fitted one (with placements too,
    // whose parameter view is the target and a form body).
    assert_eq!(fitted.with_rarity_from(pool()).unwrap(), fitted);
    let placed = Featurizer::fit(
        FeaturizerConfig {
            placements: Some(Default::default()),
            ..fitted.config().clone()
        },
        pool(),
    )
    .unwrap();
    assert_eq!(placed.with_rarity_from(pool()).unwrap(), placed);
    // No requests to count: an error, not an empty table.
    assert!(fitted.with_rarity_from(Vec::new()).is_err());
    // Without a rarity table there is nothing to recount.
    let plain = Featurizer::fit(FeaturizerConfig::default(), corpus()).unwrap();
    assert_eq!(plain.with_rarity_from(corpus()).unwrap(), plain);
}

/// `with_rarity_by_client`: one client repeating a value (a scanner replaying a payload) makes
/// it the site's own when every request counts, not when each client counts at most twice; a
/// value many clients send stays known, and requests without a client each count as their own.
#[test]
fn one_client_repeating_a_value_cannot_make_it_known() {
    let benign = [
        "login=ana&pwd=x1",
        "login=bob&pwd=luna",
        "login=eva&pwd=sol7",
    ];
    let scanner = "login=ana&pwd=%27+or+1%3D1";
    let config = FeaturizerConfig {
        odd_permille: vec![10, 100],
        ..config()
    };
    // 30 clients with 3 benign logins each, and one scanner sending its payload 12 times.
    let clients: Vec<String> = (0..31).map(|c| format!("10.0.0.{c}")).collect();
    let traffic = || {
        let benign = (0..30).flat_map(|c| benign.iter().map(move |&b| (c, b)));
        benign
            .chain(std::iter::repeat_n((30, scanner), 12))
            .map(|(c, b)| (login(b), Some(clients[c].as_str())))
    };
    let fitted = Featurizer::fit(config, traffic().map(|(r, _)| r)).unwrap();
    let attack = login("login=eva&pwd=%27+or+2%3D2");
    let is_format_check =
        |t: &String| t.contains("rare:") || t.contains("unseen:") || t.contains("odd:");
    let format_checks = |f: &Featurizer| -> Vec<String> {
        tokens_of(f, &attack)
            .into_iter()
            .filter(is_format_check)
            .collect()
    };
    let by_request = fitted.with_rarity_by_client(traffic(), None).unwrap();
    assert_eq!(
        by_request,
        fitted.with_rarity_from(traffic().map(|(r, _)| r)).unwrap()
    );
    assert!(
        !format_checks(&by_request)
            .iter()
            .any(|t| t.starts_with("p:rare:")),
        "counted by request, the scanner's 12 payloads make its shape known: {:?}",
        format_checks(&by_request)
    );
    let by_client = fitted.with_rarity_by_client(traffic(), Some(2)).unwrap();
    let fired = format_checks(&by_client);
    assert!(fired.iter().any(|t| t.starts_with("p:rare:")), "{fired:?}");
    assert!(
        fired.iter().any(|t| t.starts_with("p:odd:char")),
        "{fired:?}"
    );
    // The values many clients send stay the site's own.
    for b in benign {
        let tokens = tokens_of(&by_client, &login(b));
        assert!(!tokens.iter().any(is_format_check), "{b}: {tokens:?}");
    }
    // Without clients every request is its own client: the cap changes nothing.
    let anonymous = || traffic().map(|(r, _)| (r, None));
    assert_eq!(
        fitted.with_rarity_by_client(anonymous(), Some(2)).unwrap(),
        by_request
    );
}
