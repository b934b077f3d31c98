//! Attack signatures as features (`FeaturizerConfig::signatures`): reserved places, fired by
//! the decoded value in any placement, nothing on benign values, off by default (that they need
//! `placements`, as libinjection's do: `tests/libinjection.rs`).
use featurizer::{
    Featurizer, FeaturizerConfig, Headers, PlacementConfig, RequestParts, SIGNATURE_FEATURES,
};

fn fit(libinjection: bool, signatures: bool, top_k: usize) -> Featurizer {
    let docs: Vec<String> = (0..40)
        .map(|k| {
            format!(
                "/tienda/anadir.jsp?id={k}&nombre=producto{k}&precio={}",
                k * 7
            )
        })
        .collect();
    let config = FeaturizerConfig {
        top_k,
        placements: Some(PlacementConfig::default()),
        libinjection,
        signatures,
        ..Default::default()
    };
    Featurizer::fit(config, docs.iter().map(|d| RequestParts::get(d))).unwrap()
}

fn names<'f>(f: &'f Featurizer, req: &RequestParts) -> Vec<&'f str> {
    let vocab = f.vocabulary();
    f.transform(req)
        .indices
        .iter()
        .map(|&i| vocab[i as usize].as_str())
        .collect()
}

fn signatures_of<'f>(f: &'f Featurizer, req: &RequestParts) -> Vec<&'f str> {
    let mut n: Vec<&str> = names(f, req)
        .into_iter()
        .filter(|t| t.starts_with("pl:sig:"))
        .collect();
    n.sort_unstable();
    n
}

#[test]
fn signatures_are_reserved_and_fire_in_any_placement_after_decoding() {
    // top_k 8 keeps 2 tokens of the benign corpus, libinjection's 2 and the 4 signatures.
    let f = fit(true, true, 8);
    let vocab = f.vocabulary();
    assert_eq!(vocab.len(), 8, "{vocab:?}");
    let expected: Vec<String> = ["li:sqli", "li:xss"]
        .iter()
        .chain(SIGNATURE_FEATURES.iter())
        .map(|b| format!("pl:{b}"))
        .collect();
    assert_eq!(&vocab[2..], expected.as_slice());
    // A percent-encoded traversal in the query, a system file in a header, a shell command in a
    // JSON body (\u-escaped), a long run in a cookie.
    let headers: &[(&str, &[u8])] = &[
        ("User-Agent", b"file:/boot.ini"),
        ("Content-Type", b"application/json"),
        ("Cookie", &[b'a'; 100]),
    ];
    let req = RequestParts {
        method: "POST",
        target: b"/tienda/anadir.jsp?id=%2F0x2e0x2e0x2f0x2e0x2e0x2fetc",
        body: Some(br#"{"nombre": "x\u003b /bin/sleep 31 \u003b"}"#),
        headers: Headers::Pairs(headers),
    };
    assert_eq!(
        signatures_of(&f, &req),
        [
            "pl:sig:long_run",
            "pl:sig:shell",
            "pl:sig:system_file",
            "pl:sig:traversal"
        ]
    );
    // The site's own kind of values fire none.
    let benign: &[(&str, &[u8])] = &[
        (
            "User-Agent",
            b"Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101",
        ),
        ("Cookie", b"JSESSIONID=1; id=2; type=3"),
    ];
    let req = RequestParts {
        method: "GET",
        target: b"/tienda/anadir.jsp?nombre=Queso+Manchego&email=juan.perez%40example.com",
        body: None,
        headers: Headers::Pairs(benign),
    };
    assert!(signatures_of(&f, &req).is_empty());
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(back.to_json(), f.to_json());
}

#[test]
fn off_means_no_signature_features_and_no_key_in_the_artifact() {
    let off = fit(true, false, 500);
    assert!(!off.vocabulary().iter().any(|t| t.starts_with("pl:sig:")));
    let json = String::from_utf8(off.to_json()).unwrap();
    assert!(!json.contains("signatures"), "{json}");
    let ua: &[(&str, &[u8])] = &[("User-Agent", b"/usr/bin/id")];
    let req = RequestParts {
        method: "GET",
        target: b"/tienda/anadir.jsp",
        body: None,
        headers: Headers::Pairs(ua),
    };
    assert!(signatures_of(&off, &req).is_empty());
    assert_eq!(
        signatures_of(&fit(false, true, 500), &req),
        ["pl:sig:system_file"]
    );
    let on = String::from_utf8(fit(false, true, 500).to_json()).unwrap();
    assert!(on.contains("\"signatures\": true"), "{on}");
    // An artifact written before the setting existed (no key) loads with it off.
    assert!(
        !Featurizer::from_json(json.as_bytes())
            .unwrap()
            .config()
            .signatures
    );
}
