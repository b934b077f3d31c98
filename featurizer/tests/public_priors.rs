//! The public priors as features: libinjection's SQLi / XSS detectors
//! (`FeaturizerConfig::libinjection`) and the attack signatures (`FeaturizerConfig::signatures`:
//! reserved places, fired by the decoded value in any placement, nothing on benign values, off
//! by default).
use featurizer::placement::libinjection_flags;
use featurizer::{
    Featurizer, FeaturizerConfig, FeaturizerError, Headers, PlacementConfig, RequestParts,
    SIGNATURE_FEATURES,
};
use proptest::prelude::*;

fn config(libinjection: bool, top_k: usize) -> FeaturizerConfig {
    FeaturizerConfig {
        top_k,
        placements: Some(PlacementConfig::default()),
        libinjection,
        ..Default::default()
    }
}

/// Benign requests only: no document fires libinjection, and many distinct tokens compete for a
/// small `top_k`.
fn benign_corpus() -> Vec<String> {
    (0..40)
        .map(|k| {
            format!(
                "/tienda/anadir.jsp?id={k}&nombre=producto{k}&precio={}",
                k * 7
            )
        })
        .collect()
}

fn fit(libinjection: bool, top_k: usize) -> Featurizer {
    let docs = benign_corpus();
    Featurizer::fit(
        config(libinjection, top_k),
        docs.iter().map(|d| RequestParts::get(d)),
    )
    .unwrap()
}

fn names<'f>(f: &'f Featurizer, req: &RequestParts) -> Vec<&'f str> {
    let vocab = f.vocabulary();
    f.transform(req)
        .indices
        .iter()
        .map(|&i| vocab[i as usize].as_str())
        .collect()
}

#[test]
fn attacks_fire_and_benign_values_do_not() {
    for sqli in [
        "1' or '1'='1",
        "1 union select password from users--",
        "admin'--",
    ] {
        assert!(libinjection_flags(sqli.as_bytes())[0], "{sqli}");
    }
    for xss in [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "\"><svg onload=alert(1)>",
    ] {
        assert!(libinjection_flags(xss.as_bytes())[1], "{xss}");
    }
    for benign in [
        "juan perez",
        "queso manchego",
        "juan.perez@example.com",
        "calle mayor 12, 2b",
        "39",
        "",
    ] {
        assert_eq!(
            libinjection_flags(benign.as_bytes()),
            [false, false],
            "{benign}"
        );
    }
}

#[test]
fn features_are_reserved_and_fire_in_any_placement() {
    // top_k 5 keeps 3 tokens of the benign corpus and the 2 reserved libinjection entries, which
    // no document of the corpus fired.
    let f = fit(true, 5);
    let vocab = f.vocabulary();
    assert_eq!(vocab.len(), 5, "{vocab:?}");
    assert_eq!(&vocab[3..], ["pl:li:sqli", "pl:li:xss"]);
    let ua: &[(&str, &[u8])] = &[("User-Agent", b"<script>alert(1)</script>")];
    let req = RequestParts {
        method: "GET",
        target: b"/tienda/anadir.jsp?id=1%27%20or%20%271%27%3D%271",
        body: None,
        headers: Headers::Pairs(ua),
        excluded_fields: Default::default(),
    };
    let n = names(&f, &req);
    assert!(
        n.contains(&"pl:li:sqli") && n.contains(&"pl:li:xss"),
        "{n:?}"
    );
    // A JSON body's \u-escaped SQLi is decoded before libinjection reads it.
    let json: &[(&str, &[u8])] = &[("Content-Type", b"application/json")];
    let req = RequestParts {
        method: "POST",
        target: b"/tienda/anadir.jsp",
        body: Some(br#"{"nombre": "1\u0027 or \u00271\u0027=\u00271"}"#),
        headers: Headers::Pairs(json),
        excluded_fields: Default::default(),
    };
    assert!(names(&f, &req).contains(&"pl:li:sqli"));
    // Benign values fire nothing.
    let req = RequestParts::get(
        "/tienda/anadir.jsp?nombre=Queso+Manchego&email=juan.perez%40example.com&n=juan%20perez",
    );
    let n = names(&f, &req);
    assert!(!n.iter().any(|t| t.starts_with("pl:li:")), "{n:?}");
    // Round trip.
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(back.to_json(), f.to_json());
}

#[test]
fn off_means_no_features_and_the_artifact_does_not_mention_it() {
    let f = fit(false, 500);
    assert!(!f.vocabulary().iter().any(|t| t.starts_with("pl:li:")));
    let json = String::from_utf8(f.to_json()).unwrap();
    assert!(!json.contains("libinjection"), "{json}");
    let on = fit(true, 500);
    assert!(String::from_utf8(on.to_json())
        .unwrap()
        .contains("\"libinjection\""));
    // An artifact written before the setting existed (no key) loads with it off.
    let f2 = Featurizer::from_json(json.as_bytes()).unwrap();
    assert!(!f2.config().libinjection);
}

#[test]
fn public_priors_need_placements() {
    // libinjection's detectors and the attack signatures read each decoded part of the request.
    let configs = [
        (
            "libinjection",
            FeaturizerConfig {
                libinjection: true,
                ..Default::default()
            },
        ),
        (
            "signatures",
            FeaturizerConfig {
                signatures: true,
                ..Default::default()
            },
        ),
    ];
    for (key, c) in configs {
        let err = Featurizer::fit(c, [RequestParts::get("/a")]).unwrap_err();
        assert!(
            matches!(err, FeaturizerError::Setting { key: k, .. } if k == key),
            "{key}: {err}"
        );
    }
}

// The attack signatures.

fn fit_priors(libinjection: bool, signatures: bool, top_k: usize) -> Featurizer {
    let docs = benign_corpus();
    let config = FeaturizerConfig {
        top_k,
        placements: Some(PlacementConfig::default()),
        libinjection,
        signatures,
        ..Default::default()
    };
    Featurizer::fit(config, docs.iter().map(|d| RequestParts::get(d))).unwrap()
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
    let f = fit_priors(true, true, 8);
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
        excluded_fields: Default::default(),
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
        excluded_fields: Default::default(),
    };
    assert!(signatures_of(&f, &req).is_empty());
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(back.to_json(), f.to_json());
}

#[test]
fn off_means_no_signature_features_and_no_key_in_the_artifact() {
    let off = fit_priors(true, false, 500);
    assert!(!off.vocabulary().iter().any(|t| t.starts_with("pl:sig:")));
    let json = String::from_utf8(off.to_json()).unwrap();
    assert!(!json.contains("signatures"), "{json}");
    let ua: &[(&str, &[u8])] = &[("User-Agent", b"/usr/bin/id")];
    let req = RequestParts {
        method: "GET",
        target: b"/tienda/anadir.jsp",
        body: None,
        headers: Headers::Pairs(ua),
        excluded_fields: Default::default(),
    };
    assert!(signatures_of(&off, &req).is_empty());
    assert_eq!(
        signatures_of(&fit_priors(false, true, 500), &req),
        ["pl:sig:system_file"]
    );
    let on = String::from_utf8(fit_priors(false, true, 500).to_json()).unwrap();
    assert!(on.contains("\"signatures\": true"), "{on}");
    // An artifact written before the setting existed (no key) loads with it off.
    assert!(
        !Featurizer::from_json(json.as_bytes())
            .unwrap()
            .config()
            .signatures
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Arbitrary bytes never panic libinjection (a panic would count as both detections).
    #[test]
    fn arbitrary_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let ok = std::panic::catch_unwind(|| {
            libinjectionrs::detect_sqli(&bytes).is_injection();
            libinjectionrs::detect_xss(&bytes).is_injection();
        });
        prop_assert!(ok.is_ok());
    }

    /// Arbitrary ASCII that looks like SQL / HTML never panics either.
    #[test]
    fn sql_and_html_like_text_does_not_panic(s in "[-'\"<>=/ ;()a-z0-9#*!`&|]{0,256}") {
        let ok = std::panic::catch_unwind(|| {
            libinjectionrs::detect_sqli(s.as_bytes()).is_injection();
            libinjectionrs::detect_xss(s.as_bytes()).is_injection();
        });
        prop_assert!(ok.is_ok());
    }
}

/// What libinjection itself says of `value` (the detectors `libinjection_flags` skips for
/// letters-and-digits values).
fn detectors(value: &[u8]) -> [bool; 2] {
    [
        libinjectionrs::detect_sqli(value).is_injection(),
        libinjectionrs::detect_xss(value).is_injection(),
    ]
}

/// The shortcut of `libinjection_flags` (ASCII letters and digits: not injection) agrees with
/// the detectors: every such value of up to 2 characters, SQL keywords, functions and operator
/// words alone and with the numeric prefixes and suffixes that make two tokens (`1union`,
/// `0x1or`, `1e1select`), and random values up to 40 characters.
#[test]
fn alphanumeric_values_are_never_injection() {
    let alnum: Vec<u8> = (b'0'..=b'9')
        .chain(b'a'..=b'z')
        .chain(b'A'..=b'Z')
        .collect();
    let mut values: Vec<Vec<u8>> = Vec::new();
    for &a in &alnum {
        values.push(vec![a]);
        for &b in &alnum {
            values.push(vec![a, b]);
        }
    }
    let words = [
        "select",
        "union",
        "or",
        "and",
        "xor",
        "not",
        "div",
        "mod",
        "like",
        "rlike",
        "regexp",
        "sleep",
        "benchmark",
        "waitfor",
        "delay",
        "drop",
        "insert",
        "update",
        "delete",
        "from",
        "where",
        "having",
        "order",
        "by",
        "group",
        "null",
        "true",
        "false",
        "exec",
        "char",
        "concat",
        "version",
        "user",
        "database",
        "limit",
        "offset",
        "case",
        "when",
        "then",
        "else",
        "end",
        "into",
        "outfile",
        "load",
        "cast",
        "convert",
        "ascii",
        "substring",
        "if",
        "ifnull",
        "is",
        "in",
        "between",
        "exists",
        "procedure",
        "declare",
        "varchar",
        "int",
        "script",
        "javascript",
        "alert",
        "onerror",
        "onload",
        "iframe",
        "svg",
        "img",
        "body",
    ];
    for w in words {
        for word in [w.to_owned(), w.to_uppercase()] {
            for prefix in ["", "1", "0", "1e1", "1e", "0x1", "0xff", "0b1", "9e9"] {
                for suffix in ["", "1", "e1"] {
                    values.push(format!("{prefix}{word}{suffix}").into_bytes());
                }
            }
        }
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20_000 {
        let len = 3 + (next() % 38) as usize;
        values.push((0..len).map(|_| alnum[(next() % 62) as usize]).collect());
    }
    for v in &values {
        assert_eq!(
            detectors(v),
            [false, false],
            "{:?}",
            String::from_utf8_lossy(v)
        );
        assert_eq!(libinjection_flags(v), [false, false]);
    }
    // Anything else still goes to the detectors.
    assert_eq!(
        libinjection_flags(b"1 union select 2"),
        detectors(b"1 union select 2")
    );
    assert!(libinjection_flags(b"1' or '1'='1")[0]);
    assert!(libinjection_flags(b"<script>alert(1)</script>")[1]);
}

/// `priors_undiluted`: the priors' features keep the value 1 in a request with one part and in
/// one with thirty more distinct benign parts, the other features still have unit l2 norm; without it
/// the same feature weighs less among more parts. It needs a prior to keep.
#[test]
fn undiluted_priors_keep_their_value_among_many_parts() {
    let docs = benign_corpus();
    let fit = |undiluted: bool| {
        let config = FeaturizerConfig {
            top_k: 200,
            char_ngrams: Some([1, 3]),
            norm: featurizer::Norm::L2,
            placements: Some(PlacementConfig::default()),
            libinjection: true,
            signatures: true,
            priors_undiluted: undiluted,
            ..Default::default()
        };
        Featurizer::fit(config, docs.iter().map(|d| RequestParts::get(d))).unwrap()
    };
    let attack = "/tienda/anadir.jsp?nombre=%27%20union%20select%20password%20from%20users--";
    let padding: String = (0..30).map(|k| format!("&p{k}=valor{k}")).collect();
    let padded = format!("{attack}{padding}");
    let value_of = |f: &Featurizer, target: &str, token: &str| -> (f32, f32) {
        let v = f.transform(&RequestParts::get(target));
        let index = f.vocabulary().iter().position(|t| t == token).unwrap() as u32;
        let at = v
            .indices
            .iter()
            .position(|&i| i == index)
            .expect("the prior fires");
        let rest: f32 = v
            .indices
            .iter()
            .zip(&v.values)
            .filter(|(&i, _)| i != index && !f.vocabulary()[i as usize].starts_with("pl:sig:"))
            .map(|(_, &x)| x * x)
            .sum();
        (v.values[at], rest.sqrt())
    };
    let on = fit(true);
    for target in [attack, padded.as_str()] {
        let (value, rest) = value_of(&on, target, "pl:li:sqli");
        assert_eq!(value, 1.0, "{target}");
        assert!(
            (rest - 1.0).abs() < 1e-4,
            "{target}: the rest's norm {rest}"
        );
    }
    let off = fit(false);
    let (alone, _) = value_of(&off, attack, "pl:li:sqli");
    let (diluted, _) = value_of(&off, &padded, "pl:li:sqli");
    assert!(diluted < alone && alone < 1.0, "{alone} then {diluted}");
    let err = Featurizer::fit(
        FeaturizerConfig {
            placements: Some(PlacementConfig::default()),
            priors_undiluted: true,
            ..Default::default()
        },
        [RequestParts::get("/a")],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("priors_undiluted"), "{err}");
}
