//! The whole request by placement (`FeaturizerConfig::placements`): splitting, decoding, bounds,
//! features and windows.
use featurizer::placement::{base64_text, decode_value, split_request};
use featurizer::{Featurizer, FeaturizerConfig, Headers, Placement, PlacementConfig, RequestParts};

/// A User-Agent header, for requests that carry one.
const USER_AGENT: &[(&str, &[u8])] = &[("User-Agent", b"Mozilla/5.0")];

/// Two GETs of one shop page with a User-Agent: a benign product, and SQL injection in `q`.
fn shop_gets() -> [RequestParts<'static>; 2] {
    [
        parts_of(
            "GET",
            "/shop/a.jsp?id=2&nombre=Jam%F3n+Ib%E9rico",
            USER_AGENT,
            None,
        ),
        parts_of("GET", "/shop/a.jsp?id=3&q=%27+or+1%3D1--", USER_AGENT, None),
    ]
}

fn parts_of<'a>(
    method: &'a str,
    target: &'a str,
    headers: &'a [(&'a str, &'a [u8])],
    body: Option<&'a [u8]>,
) -> RequestParts<'a> {
    RequestParts {
        method,
        target: target.as_bytes(),
        body,
        headers: Headers::Pairs(headers),
        excluded_fields: Default::default(),
    }
}

/// (placement, name, value) of every part.
fn split(req: &RequestParts) -> Vec<(String, String, String)> {
    split_request(req, &PlacementConfig::default(), 3, true)
        .parts
        .into_iter()
        .map(|p| (p.placement.as_str().to_string(), p.name, p.value))
        .collect()
}

fn has(parts: &[(String, String, String)], placement: &str, value: &str) -> bool {
    parts.iter().any(|(p, _, v)| p == placement && v == value)
}

#[test]
fn request_line_and_headers_are_split_by_placement() {
    let headers: &[(&str, &[u8])] = &[
        ("Host", b"shop.example"),
        ("User-Agent", b"Mozilla/5.0 ' OR 1=1--"),
        ("Referer", b"http://x/?a=%3Cscript%3E"),
        ("Cookie", b"sid=abc; lang=es%27"),
        ("X-Forwarded-For", b"10.0.0.1"),
        ("X-Custom", b"hello"),
        ("Content-Length", b"0"),
    ];
    let req = parts_of("GET", "/shop/item.jsp?id=2&q=a%2Bb+c", headers, None);
    let p = split(&req);
    assert!(has(&p, "method", "get"));
    assert!(has(&p, "path", "/shop/item.jsp"));
    assert!(has(&p, "query", "2"));
    assert!(has(&p, "query", "a+b c"), "{p:?}");
    assert!(has(&p, "hdr:user-agent", "mozilla/5.0 ' or 1=1--"));
    assert!(has(&p, "hdr:referer", "http://x/?a=<script>"));
    assert!(has(&p, "hdr:cookie", "abc"));
    assert!(has(&p, "hdr:cookie", "es'"));
    assert!(has(&p, "hdr:x-forwarded", "10.0.0.1"));
    assert!(has(&p, "hdr:other", "hello"));
    assert!(has(&p, "hdr:other", "shop.example"));
    // Framing headers are protocol, not data.
    assert!(!p.iter().any(|(_, n, _)| n == "content-length"), "{p:?}");
}

#[test]
fn bodies_are_read_by_content_type() {
    let form: &[(&str, &[u8])] = &[("Content-Type", b"application/x-www-form-urlencoded")];
    let p = split(&parts_of(
        "POST",
        "/a",
        form,
        Some(b"user=bob&pwd=%27+or+1%3D1"),
    ));
    assert!(has(&p, "form", "' or 1=1"), "{p:?}");

    let json: &[(&str, &[u8])] = &[("Content-Type", b"application/json; charset=utf-8")];
    let body = br#"{"user": {"name": "\u0027 union select \u0070assword--", "n": 3}, "tags": ["a\"b", "<x>"], "k\u0065y": true}"#;
    let p = split(&parts_of("POST", "/api", json, Some(body)));
    assert!(has(&p, "json:value", "' union select password--"), "{p:?}");
    assert!(has(&p, "json:value", "a\"b"));
    assert!(has(&p, "json:value", "<x>"));
    assert!(has(&p, "json:key", "key"));
    assert!(has(&p, "json:key", "user"));
    assert!(
        !p.iter().any(|(_, _, v)| v == "3"),
        "numbers are not text: {p:?}"
    );

    let xml: &[(&str, &[u8])] = &[("Content-Type", b"text/xml")];
    let body = br#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><s:Envelope a="&lt;svg onload=1&gt;"><q>1 &#x27;or&#39; 1=1 &amp;&amp; &x;</q><![CDATA[<script>]]></s:Envelope>"#;
    let p = split(&parts_of("POST", "/soap", xml, Some(body)));
    assert!(has(&p, "xml:attr", "<svg onload=1>"), "{p:?}");
    assert!(has(&p, "xml:text", "1 'or' 1=1 && &x;"), "{p:?}");
    assert!(has(&p, "xml:text", "<script>"));
    // The DOCTYPE is read as text; the external entity is never resolved (no passwd content).
    assert!(p
        .iter()
        .any(|(pl, _, v)| pl == "xml:text" && v.contains("file:///etc/passwd")));

    let mp: &[(&str, &[u8])] = &[("Content-Type", b"multipart/form-data; boundary=----XyZ")];
    let body = b"------XyZ\r\nContent-Disposition: form-data; name=\"comment\"\r\n\r\n<script>alert(1)</script>\r\n------XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../../etc/passwd\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n------XyZ--\r\n";
    let p = split(&parts_of("POST", "/up", mp, Some(body)));
    assert!(has(&p, "mp:field", "<script>alert(1)</script>"), "{p:?}");
    assert!(has(&p, "mp:filename", "../../etc/passwd"));
    assert!(has(&p, "mp:field", "hello"));

    let text: &[(&str, &[u8])] = &[("Content-Type", b"text/plain")];
    let p = split(&parts_of("POST", "/t", text, Some(b"hi ' or 1=1")));
    assert!(has(&p, "text", "hi ' or 1=1"));

    // Broken JSON is still read (as text).
    let p = split(&parts_of("POST", "/api", json, Some(b"not json ' or 1=1")));
    assert!(has(&p, "text", "not json ' or 1=1"));
}

/// A multipart part's `name` and `filename` are read as the application reads them: a `;`
/// inside the quotes belongs to the value (split there, `x;<payload>` hid the payload: the
/// generic validation split's SQL injections with a `;` scored 0.33–0.67 as file names against
/// 0.93–1.0 as field values), `\"` is a quote, other backslashes stay, an unterminated quote
/// runs to the end, text after the closing quote is kept, `filename*` loses its charset prefix.
#[test]
fn multipart_names_and_file_names_are_read_whole() {
    let mp: &[(&str, &[u8])] = &[("Content-Type", b"multipart/form-data; boundary=\"XyZ\"")];
    let part = |disposition: &str| {
        format!("--XyZ\r\nContent-Disposition: {disposition}\r\n\r\nhello\r\n--XyZ--\r\n")
    };
    let filenames = |disposition: &str| -> Vec<String> {
        let body = part(disposition);
        split(&parts_of("POST", "/up", mp, Some(body.as_bytes())))
            .into_iter()
            .filter(|(p, _, _)| p == "mp:filename")
            .map(|(_, _, v)| v)
            .collect()
    };
    let cases: &[(&str, &str)] = &[
        (
            r#"form-data; name="f"; filename="1';select pg_sleep(5)--""#,
            "1';select pg_sleep(5)--",
        ),
        (
            r#"form-data; filename="a;b; c=d.txt"; name="f""#,
            "a;b; c=d.txt",
        ),
        (
            r#"form-data; name="f"; filename="say \"hi\".txt""#,
            "say \"hi\".txt",
        ),
        (
            r#"form-data; name="f"; filename="..\..\windows\win.ini""#,
            "..\\..\\windows\\win.ini",
        ),
        (
            r#"form-data; name="f"; filename="x.txt' or 1=1"#,
            "x.txt' or 1=1",
        ),
        (r#"form-data; name="f"; filename="x" or 1=1"#, "x or 1=1"),
        (r#"form-data; name="f"; filename=plain.txt"#, "plain.txt"),
        (
            r#"form-data; name="f"; filename*=UTF-8''%3Cscript%3E.txt"#,
            "<script>.txt",
        ),
    ];
    for (disposition, expected) in cases {
        assert_eq!(
            filenames(disposition),
            vec![expected.to_string()],
            "{disposition}"
        );
    }
    // The field's name with a `;` in it, and the quoted boundary.
    let body = part(r#"form-data; name="a;b""#);
    let p = split(&parts_of("POST", "/up", mp, Some(body.as_bytes())));
    assert!(
        p.iter()
            .any(|(pl, n, v)| pl == "mp:field" && n == "a;b" && v == "hello"),
        "{p:?}"
    );
}

/// Nothing of a multipart or XML body goes unread: parts after the closing delimiter (parsers
/// that do not stop there read them), a preamble and an epilogue (as text), and every XML
/// processing instruction but the declaration (`<?php ... ?>`).
#[test]
fn multipart_and_xml_bodies_are_read_to_the_end() {
    let mp: &[(&str, &[u8])] = &[("Content-Type", b"multipart/form-data; boundary=XyZ")];
    let body = b"' or 1=1 preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nfirst\r\n--XyZ--\r\n--XyZ\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n<script>\r\n--XyZ--\r\nunion select epilogue";
    let p = split(&parts_of("POST", "/up", mp, Some(body)));
    assert!(has(&p, "mp:field", "first"), "{p:?}");
    assert!(has(&p, "mp:field", "<script>"), "{p:?}");
    assert!(has(&p, "text", "' or 1=1 preamble\r\n"), "{p:?}");
    assert!(has(&p, "text", "\r\nunion select epilogue"), "{p:?}");
    // A well-formed body adds no text part.
    let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--XyZ--\r\n";
    let p = split(&parts_of("POST", "/up", mp, Some(body)));
    assert!(!p.iter().any(|(pl, _, _)| pl == "text"), "{p:?}");

    let xml: &[(&str, &[u8])] = &[("Content-Type", b"text/xml")];
    let body = b"<?xml version=\"1.0\"?><?php system($_GET['x']); ?><a>t</a>";
    let p = split(&parts_of("POST", "/soap", xml, Some(body)));
    assert!(has(&p, "xml:text", "php system($_get['x']); "), "{p:?}");
    assert!(
        !p.iter().any(|(_, _, v)| v.contains("version")),
        "the declaration is not read: {p:?}"
    );
}

/// What a lenient JSON reader takes but JSON is not (single-quoted strings, bare words,
/// comments, text after the end) makes the whole body read as text too; valid JSON is read by
/// key and value only (numbers, `true`, `false`, `null` are JSON).
#[test]
fn json_bodies_with_what_is_not_json_are_also_read_as_text() {
    let json: &[(&str, &[u8])] = &[("Content-Type", b"application/json")];
    let texts = |body: &[u8]| -> Vec<String> {
        split(&parts_of("POST", "/api", json, Some(body)))
            .into_iter()
            .filter(|(p, _, _)| p == "text")
            .map(|(_, _, v)| v)
            .collect()
    };
    for body in [
        &br#"{'q': '<script>alert(1)</script>'}"#[..],
        br#"{"a": "x", q: union select password}"#,
        br#"{"a": 1, /* ' or 1=1 */ "b": 2}"#,
        br#"["x"] <script>alert(1)</script>"#,
    ] {
        let t = texts(body);
        assert_eq!(t, vec![String::from_utf8_lossy(body).to_string()], "{t:?}");
    }
    for body in [
        &br#"{"a": -1.5e3, "b": [true, false, null], "c": "' or 1=1"}"#[..],
        b" [ 1 , 2 ] \n",
    ] {
        assert!(texts(body).is_empty(), "{}", String::from_utf8_lossy(body));
    }
}

#[test]
fn values_are_decoded_the_ways_attackers_encode() {
    // Repeated percent-encoding, overlong UTF-8, entities (with and without ';'), JS escapes.
    assert_eq!(decode_value(b"%2527%2520or", 3, false), "' or");
    assert_eq!(decode_value(b"..%C0%AF..%c0%af", 3, false), "../../");
    assert_eq!(
        decode_value(b"&lt;script&gt;&#x61;&#98", 3, false),
        "<script>ab"
    );
    assert_eq!(decode_value(b"%26lt%3Bimg%26gt%3B", 3, false), "<img>");
    assert_eq!(decode_value(b"\\u003cscript\\x3e", 3, false), "<script>");
    assert_eq!(decode_value(b"A+B", 3, true), "a b");
    assert_eq!(decode_value(b"A+B", 3, false), "a+b");
    // decode_rounds 0: no decoding at all.
    assert_eq!(decode_value(b"%27", 0, false), "%27");

    // Base64 of printable text decodes; words, numbers, ids and binary do not.
    assert_eq!(
        base64_text("JyBvciAxPTEtLQ==").as_deref(),
        Some("' or 1=1--")
    );
    assert_eq!(
        base64_text("PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg").as_deref(),
        Some("<script>alert(1)</script>")
    );
    for not in [
        "password",
        "12345678",
        "Mozilla",
        "9f86d081884c7d65",
        "AAECAwQFBgc=",
    ] {
        assert_eq!(base64_text(not), None, "{not}");
    }
    // Both forms of a Base64 value are parts.
    let req = parts_of("GET", "/a?q=JyBvciAxPTEtLQ%3D%3D", &[], None);
    let s = split_request(&req, &PlacementConfig::default(), 3, true);
    let q: Vec<_> = s
        .parts
        .iter()
        .filter(|p| p.placement == Placement::Query)
        .collect();
    assert_eq!(q.len(), 2, "{q:?}");
    assert!(q[1].encoded && q[1].value == "' or 1=1--");
}

#[test]
fn limits_bound_parts_depth_and_bytes() {
    let config = PlacementConfig {
        max_parts: 10,
        max_depth: 4,
        max_bytes: 2000,
        window_overlap_bytes: 16,
        parts_alone: false,
        referer_as_url: false,
        opaque_tokens: false,
        request_line_whole: false,
        part_values_only: false,
        known_header_permille: None,
        known_digit_runs: false,
    };
    let many = format!(
        "/a?{}",
        (0..100).map(|i| format!("x{i}=1&")).collect::<String>()
    );
    let s = split_request(&parts_of("GET", &many, &[], None), &config, 3, true);
    assert!(s.over_parts && s.parts.len() == 10);

    let json: &[(&str, &[u8])] = &[("Content-Type", b"application/json")];
    let deep = format!("{}\"deep\"{}", "[".repeat(50), "]".repeat(50));
    let s = split_request(
        &parts_of("POST", "/", json, Some(deep.as_bytes())),
        &config,
        3,
        true,
    );
    assert!(s.over_depth);
    assert!(!s.parts.iter().any(|p| p.value == "deep"));

    let big = vec![b'a'; 5000];
    let text: &[(&str, &[u8])] = &[("Content-Type", b"text/plain")];
    let s = split_request(&parts_of("POST", "/", text, Some(&big)), &config, 3, true);
    assert!(s.over_bytes);
    assert!(s.parts.iter().map(|p| p.value.len()).sum::<usize>() <= 2000);
}

fn placement_featurizer() -> Featurizer {
    let config = FeaturizerConfig {
        top_k: 200,
        max_input_bytes: 256,
        placements: Some(PlacementConfig::default()),
        ..Default::default()
    };
    let ua: &[(&str, &[u8])] = &[("User-Agent", b"Mozilla/5.0 ' or 1=1 -- <script>")];
    let docs = [
        parts_of("GET", "/a?x=1&y=' or 1=1--", ua, None),
        parts_of("GET", "/a?x=<script>alert(1)</script>", ua, None),
    ];
    Featurizer::fit(config, docs).unwrap()
}

#[test]
fn placement_features_carry_the_placement_and_round_trip() {
    let f = placement_featurizer();
    let vocab = f.vocabulary();
    assert!(
        vocab.iter().any(|t| t == "pl:hdr:user-agent=symbols"),
        "{vocab:?}"
    );
    assert!(vocab.iter().any(|t| t == "pl:query=digits"));
    assert!(vocab.iter().any(|t| t == "'"));
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(back.to_json(), f.to_json());
    // A header attack lights up the header's placement feature and the attack tokens.
    let ua: &[(&str, &[u8])] = &[("User-Agent", b"' or 1=1--")];
    let req = parts_of("GET", "/a", ua, None);
    let v = f.transform(&req);
    let names: Vec<&str> = v
        .indices
        .iter()
        .map(|&i| vocab[i as usize].as_str())
        .collect();
    assert!(
        names.contains(&"'") && names.contains(&"pl:hdr:user-agent=symbols"),
        "{names:?}"
    );
    // placement_vectors names it.
    let pv = f.placement_vectors(&req);
    assert!(pv
        .iter()
        .any(|(p, v)| *p == Placement::HdrUserAgent && !v.is_empty()));
}

#[test]
fn an_artifact_without_placements_never_mentions_them_and_rejects_placement_entries() {
    let plain =
        Featurizer::fit(FeaturizerConfig::default(), [RequestParts::get("/a?x=1")]).unwrap();
    let json = String::from_utf8(plain.to_json()).unwrap();
    assert!(!json.contains("placements"));
    // Headers do not change the seeds' features.
    let h: &[(&str, &[u8])] = &[("User-Agent", b"' or 1=1")];
    assert_eq!(
        plain.transform(&RequestParts::get("/a?x=1")),
        plain.transform(&parts_of("GET", "/a?x=1", h, None))
    );
    let f = placement_featurizer();
    let tampered = String::from_utf8(f.to_json())
        .unwrap()
        .replace("\"placements\"", "\"placements_off\"");
    assert!(Featurizer::from_json(tampered.as_bytes()).is_err());
}

#[test]
fn windows_cover_the_tail_of_a_long_body() {
    let f = placement_featurizer();
    let form: &[(&str, &[u8])] = &[("Content-Type", b"application/x-www-form-urlencoded")];
    let mut body = b"pad=".to_vec();
    body.extend(std::iter::repeat_n(b'a', 9000));
    body.extend_from_slice(b"&q=' or 1=1--");
    let req = parts_of("POST", "/a", form, Some(&body));
    let first = f.transform(&req);
    assert!(first.truncated);
    let mut windows = Vec::new();
    f.transform_windows(&req, &mut windows);
    assert!(windows.len() > 2, "{}", windows.len());
    assert_eq!(windows[0], first);
    let quote = f.vocabulary().iter().position(|t| t == "'").unwrap() as u32;
    assert!(!first.indices.contains(&quote));
    assert!(windows.last().unwrap().indices.contains(&quote));

    // A single long value cut at a window boundary is whole in the overlapping window.
    let mut body = vec![b'a'; 250];
    body.extend_from_slice(b" ' or 1=1-- ");
    body.extend(vec![b'b'; 400]);
    let text: &[(&str, &[u8])] = &[("Content-Type", b"text/plain")];
    let req = parts_of("POST", "/a", text, Some(&body));
    f.transform_windows(&req, &mut windows);
    assert!(windows.iter().any(|w| w.indices.contains(&quote)));
}

#[test]
fn parts_alone_scores_an_attack_among_many_distinct_pairs_on_its_own() {
    let fit = |parts_alone: bool| {
        let config = FeaturizerConfig {
            top_k: 200,
            placements: Some(PlacementConfig {
                parts_alone,
                ..PlacementConfig::default()
            }),
            ..Default::default()
        };
        let docs = [
            parts_of("GET", "/a?x=1&y=' or 1=1--", &[], None),
            parts_of("GET", "/a?x=2&z=3", &[], None),
        ];
        Featurizer::fit(config, docs).unwrap()
    };
    // 40 distinct benign pairs and the attack, all in one window.
    let pad: String = (0..40).map(|i| format!("k{i}=v{i}&")).collect();
    let target = format!("/a?{pad}y=%27+or+1%3D1--");
    let req = parts_of("GET", &target, &[], None);
    let (off, on) = (fit(false), fit(true));
    // The off artifact is written without the field (older artifacts keep their hash); the on
    // one round-trips with it.
    assert!(!String::from_utf8(off.to_json())
        .unwrap()
        .contains("parts_alone"));
    let back = Featurizer::from_json(&on.to_json()).unwrap();
    assert!(back.config().placements.as_ref().unwrap().parts_alone);
    let quote = on.vocabulary().iter().position(|t| t == "'").unwrap() as u32;
    let weight = |v: &featurizer::SparseVector| {
        v.indices
            .iter()
            .position(|&i| i == quote)
            .map_or(0.0, |k| v.values[k])
    };
    let mut windows = Vec::new();
    off.transform_windows(&req, &mut windows);
    assert_eq!(windows.len(), 1);
    let diluted = weight(&windows[0]);
    on.transform_windows(&req, &mut windows);
    // The window, then each of its 43 parts (method, path, 41 pairs) alone.
    assert_eq!(windows.len(), 1 + 43, "{}", windows.len());
    assert_eq!(weight(&windows[0]), diluted);
    let alone = windows.iter().map(weight).fold(0.0f32, f32::max);
    assert!(
        alone > 5.0 * diluted,
        "alone {alone} vs in the window {diluted}"
    );
}

#[test]
fn a_base64_path_segment_is_decoded_too() {
    let req = parts_of("GET", "/shop/JyB1bmlvbiBzZWxlY3QgMS0t/item", &[], None);
    let p = split(&req);
    assert!(has(&p, "path", "' union select 1--"), "{p:?}");
    assert!(has(&p, "path", "/shop/jyb1bmlvbibzzwxly3qgms0t/item"));
}

#[test]
fn repeated_parts_do_not_use_up_the_parts_bound() {
    let config = PlacementConfig {
        max_parts: 10,
        ..PlacementConfig::default()
    };
    let target = format!("/a?{}q=%27+or+1%3D1", "x=1&".repeat(1000));
    let s = split_request(&parts_of("GET", &target, &[], None), &config, 3, true);
    assert!(!s.over_parts, "{:?}", s.parts);
    assert!(s.parts.iter().any(|p| p.value == "' or 1=1"));
    // A Referer's query pairs are parts too (Base64 decoded).
    let h: &[(&str, &[u8])] = &[("Referer", b"http://x/p?a=JyBvciAxPTEtLQ%3D%3D")];
    let p = split(&parts_of("GET", "/", h, None));
    assert!(has(&p, "hdr:referer", "' or 1=1--"), "{p:?}");
}

#[test]
fn referer_as_url_reads_authority_and_path_then_each_query_pair() {
    let on = PlacementConfig {
        referer_as_url: true,
        ..PlacementConfig::default()
    };
    let referer = |value: &'static [u8], config: &PlacementConfig| -> Vec<String> {
        let headers: &[(&str, &[u8])] = &[("Referer", value)];
        split_request(&parts_of("GET", "/a", headers, None), config, 3, true)
            .parts
            .into_iter()
            .filter(|p| p.placement == Placement::HdrReferer)
            .map(|p| p.value)
            .collect()
    };
    let url = b"HTTPS://www.example.com/search?q=%27+or+1%3D1--&lang=es";
    // Off (the default, and every older artifact): the URL as sent, then its query's pairs.
    assert_eq!(
        referer(url, &PlacementConfig::default()),
        [
            "https://www.example.com/search?q='+or+1=1--&lang=es",
            "' or 1=1--",
            "es"
        ]
    );
    // On: authority and path without scheme or query, then every pair of the query as before.
    assert_eq!(
        referer(url, &on),
        ["www.example.com/search", "' or 1=1--", "es"]
    );
    // An attack in the authority or the path is still read; one in the query, pair by pair.
    assert_eq!(
        referer(b"http://<script>alert(1)</script>/", &on),
        ["<script>alert(1)</script>/"]
    );
    assert_eq!(
        referer(b"http://x/?<script>alert(1)</script>", &on),
        ["x/", "<script>alert(1)</script>"]
    );
    // Not a URL: read whole.
    assert_eq!(referer(b"' or 1=1--", &on), ["' or 1=1--"]);
    // Off is not written into the artifact (older artifacts keep their hash); on round-trips.
    let fit = |placements: PlacementConfig| {
        let config = FeaturizerConfig {
            top_k: 50,
            placements: Some(placements),
            ..Default::default()
        };
        Featurizer::fit(config, [parts_of("GET", "/a?x=1", &[], None)]).unwrap()
    };
    let off_json = fit(PlacementConfig::default()).to_json();
    assert!(!String::from_utf8(off_json)
        .unwrap()
        .contains("referer_as_url"));
    let back = Featurizer::from_json(&fit(on).to_json()).unwrap();
    assert!(back.config().placements.as_ref().unwrap().referer_as_url);
}

#[test]
fn opaque_tokens_are_read_as_their_name_and_a_token_mark_only() {
    use featurizer::placement::is_opaque_token;
    assert!(is_opaque_token("1f767f17239c9b670a39e9b10c3825f4"));
    assert!(is_opaque_token("123e4567-e89b-12d3-a456-426614174000"));
    assert!(!is_opaque_token("administratoradministrator")); // no digit
    assert!(!is_opaque_token("8784759528812572")); // no letter
    assert!(!is_opaque_token("1f767f17239c9b6")); // too short
    assert!(!is_opaque_token("1f767f17239c9b670a39' or 1=1--")); // an attack is never a token

    let fit = |opaque_tokens: bool| {
        let config = FeaturizerConfig {
            top_k: 2000,
            char_ngrams: Some([3, 3]),
            placements: Some(PlacementConfig {
                opaque_tokens,
                ..Default::default()
            }),
            ..Default::default()
        };
        let cookies: Vec<Vec<u8>> = [
            "1f767f17239c9b670a39e9b10c3825f4",
            "8af6b635aebcd053b136669662597271",
        ]
        .iter()
        .map(|id| format!("JSESSIONID={id}").into_bytes())
        .collect();
        let headers: Vec<[(&str, &[u8]); 1]> =
            cookies.iter().map(|c| [("Cookie", c.as_slice())]).collect();
        let docs: Vec<RequestParts> = headers
            .iter()
            .map(|h| parts_of("GET", "/a?x=1", h, None))
            .collect();
        Featurizer::fit(config, docs).unwrap()
    };
    let on = fit(true);
    let vocab = on.vocabulary();
    assert!(
        vocab.iter().any(|t| t == "pl:hdr:cookie=token"),
        "{vocab:?}"
    );
    assert!(
        vocab.iter().any(|t| t == "c:ses"),
        "the name is read: {vocab:?}"
    );
    assert!(
        !vocab.iter().any(|t| t == "c:f76"),
        "the value is not: {vocab:?}"
    );
    let off = fit(false);
    assert!(off.vocabulary().iter().any(|t| t == "c:f76"));
    assert!(!off.vocabulary().iter().any(|t| t.ends_with("=token")));
    // Off, the option is not written (older artifacts keep their hash); on, it round-trips.
    assert!(!String::from_utf8(off.to_json())
        .unwrap()
        .contains("opaque_tokens"));
    let back = Featurizer::from_json(&on.to_json()).unwrap();
    assert_eq!(back.to_json(), on.to_json());
    // The token's value is not read; an attack in the cookie is read whole.
    let token: &[(&str, &[u8])] = &[("Cookie", b"JSESSIONID=1F767F17239C9B670A39E9B10C3825F4")];
    let t = on.explain(&parts_of("GET", "/a?x=1", token, None));
    assert!(t.normalized.contains("jsessionid=\n"), "{}", t.normalized);
    assert!(t.weights.iter().any(|w| w.token == "pl:hdr:cookie=token"));
    let attack: &[(&str, &[u8])] = &[("Cookie", b"JSESSIONID=1f767f17' or 1=1--")];
    let t = on.explain(&parts_of("GET", "/a?x=1", attack, None));
    assert!(
        t.normalized.contains("jsessionid=1f767f17' or 1=1--"),
        "{}",
        t.normalized
    );
    assert!(!t.weights.iter().any(|w| w.token == "pl:hdr:cookie=token"));
}

#[test]
fn request_line_whole_reads_the_seeds_text_as_one_part_and_still_decodes_and_windows() {
    let config = |request_line_whole: bool| FeaturizerConfig {
        top_k: 5000,
        max_input_bytes: 512,
        char_ngrams: Some([1, 3]),
        libinjection: true,
        placements: Some(PlacementConfig {
            request_line_whole,
            ..Default::default()
        }),
        ..Default::default()
    };
    let ua = USER_AGENT;
    let docs = shop_gets();
    let whole = Featurizer::fit(config(true), docs).unwrap();
    let pairs = Featurizer::fit(config(false), docs).unwrap();
    // The request line is the seeds' normalized text, one part, first.
    let seeds = featurizer::normalize(&FeaturizerConfig::default(), &docs[0]).0;
    let text = whole.explain(&docs[0]).normalized;
    assert!(
        text.starts_with(&format!("{seeds}\n")),
        "{text:?} vs {seeds:?}"
    );
    assert!(!pairs.explain(&docs[0]).normalized.contains(&seeds));
    // Its n-grams cross the pairs' boundaries, as the seeds' do; the header is still a part.
    assert!(
        whole.vocabulary().iter().any(|t| t == "c:2&n"),
        "{:?}",
        whole.vocabulary()
    );
    assert!(!pairs.vocabulary().iter().any(|t| t == "c:2&n"));
    assert!(whole
        .vocabulary()
        .iter()
        .any(|t| t.starts_with("pl:hdr:user-agent=")));
    // libinjection still looks at each pair.
    let sqli = whole
        .vocabulary()
        .iter()
        .position(|t| t == "pl:li:sqli")
        .unwrap() as u32;
    assert!(whole.transform(&docs[1]).indices.contains(&sqli));
    assert!(!whole.transform(&docs[0]).indices.contains(&sqli));
    // A pair that needs more than percent-decoding is read decoded on its own too.
    let entity = parts_of("GET", "/shop/a.jsp?id=3&q=%26%2339%3B+or+1%3D1--", ua, None);
    let text = whole.explain(&entity).normalized;
    assert!(text.contains("?q=' or 1=1--"), "{text:?}");
    assert!(whole.transform(&entity).indices.contains(&sqli));
    // No tail bypass: a query longer than a window is read in windows to its end.
    let long = format!("/shop/a.jsp?pad={}&q=%27+or+1%3D1--", "a".repeat(3000));
    let req = parts_of("GET", &long, ua, None);
    let mut windows = Vec::new();
    whole.transform_windows(&req, &mut windows);
    let quote = whole.vocabulary().iter().position(|t| t == "c:'").unwrap() as u32;
    assert!(windows.len() > 4, "{}", windows.len());
    assert!(!windows[0].indices.contains(&quote));
    assert!(windows.iter().any(|w| w.indices.contains(&quote)));
    // Off, the option is not written; on, it round-trips.
    assert!(!String::from_utf8(pairs.to_json())
        .unwrap()
        .contains("request_line_whole"));
    let back = Featurizer::from_json(&whole.to_json()).unwrap();
    assert_eq!(back.transform(&docs[1]), whole.transform(&docs[1]));
}

#[test]
fn known_header_values_are_read_as_their_name_only_and_an_attack_is_not_known() {
    let config = |known_header_permille: Option<u32>| FeaturizerConfig {
        top_k: 5000,
        char_ngrams: Some([3, 3]),
        libinjection: true,
        placements: Some(PlacementConfig {
            known_header_permille,
            ..Default::default()
        }),
        ..Default::default()
    };
    let common: &[(&str, &[u8])] = &[("User-Agent", b"Konqueror/3.5"), ("Accept", b"text/html")];
    let rare: &[(&str, &[u8])] = &[("User-Agent", b"Lynx/2.8"), ("Accept", b"text/html")];
    // The Konqueror string on 9 of 10 requests, Lynx on 1 (10 %).
    let mut docs: Vec<RequestParts> = (0..9)
        .map(|_| parts_of("GET", "/a?x=1", common, None))
        .collect();
    docs.push(parts_of("GET", "/a?x=1", rare, None));
    let f = Featurizer::fit(config(Some(500)), docs.clone()).unwrap();
    let vocab = f.vocabulary();
    assert!(
        vocab.iter().any(|t| t == "pl:hdr:user-agent=known"),
        "{vocab:?}"
    );
    assert!(vocab.iter().any(|t| t == "pl:hdr:other=known"));
    assert!(
        !vocab.iter().any(|t| t == "c:kon"),
        "a known value's n-grams: {vocab:?}"
    );
    assert!(
        vocab.iter().any(|t| t == "c:lyn"),
        "an unknown value is read: {vocab:?}"
    );
    // At 10 % or more, Lynx is known too; off, nothing is.
    let all = Featurizer::fit(config(Some(100)), docs.clone()).unwrap();
    assert!(!all.vocabulary().iter().any(|t| t == "c:lyn"));
    let off = Featurizer::fit(config(None), docs).unwrap();
    assert!(off.vocabulary().iter().any(|t| t == "c:kon"));
    assert!(!String::from_utf8(off.to_json()).unwrap().contains("known"));
    // The table is part of the artifact (and its hash).
    let json = String::from_utf8(f.to_json()).unwrap();
    assert!(json.contains("known_header_values"), "{json}");
    assert!(Featurizer::from_json(json.replace("konqueror", "konqueroR").as_bytes()).is_err());
    let back = Featurizer::from_json(json.as_bytes()).unwrap();
    // An attack in the header is not the known value: read whole, libinjection sees it.
    let attack: &[(&str, &[u8])] = &[
        ("User-Agent", b"Konqueror/3.5' or 1=1--"),
        ("Accept", b"text/html"),
    ];
    let req = parts_of("GET", "/a?x=1", attack, None);
    let text = back.explain(&req).normalized;
    assert!(
        text.contains("user-agent=konqueror/3.5' or 1=1--"),
        "{text}"
    );
    let known = back
        .explain(&parts_of("GET", "/a?x=1", common, None))
        .normalized;
    assert!(
        known.contains("user-agent=\n") && !known.contains("konqueror"),
        "{known}"
    );
    // A known value that libinjection calls SQL injection (a scanner's header on most requests)
    // still fires it: the table keeps what libinjection says of each known value.
    let probe: &[(&str, &[u8])] = &[("X-Probe", b"1' or '1'='1")];
    let probed: Vec<RequestParts> = (0..10)
        .map(|i| parts_of("GET", "/a?x=1", if i < 9 { probe } else { common }, None))
        .collect();
    let f = Featurizer::fit(config(Some(500)), probed.clone()).unwrap();
    let text = f.explain(&probed[0]).normalized;
    assert!(
        text.contains("x-probe=\n") && !text.contains("or '1'"),
        "known: {text}"
    );
    let sqli = f
        .vocabulary()
        .iter()
        .position(|t| t == "pl:li:sqli")
        .unwrap() as u32;
    assert!(f.transform(&probed[0]).indices.contains(&sqli));
    assert!(!f.transform(&probed[9]).indices.contains(&sqli));
    // Bad settings are clear errors.
    let err = Featurizer::fit(config(Some(0)), [RequestParts::get("/a")]).unwrap_err();
    assert!(err.to_string().contains("known_header_permille"), "{err}");
}

/// Header values known from public data (`fit_with_known_headers`: real browsers' headers the
/// site's requests never carry) are read as their name only; with `known_digit_runs` also with
/// other version numbers, but not with anything else changed, nor with a long run of digits.
#[test]
fn known_headers_from_public_data_and_other_version_numbers() {
    use featurizer::placement::collapse_digit_runs;
    assert_eq!(
        collapse_digit_runs("Chrome/131.0.6778.86 x"),
        "Chrome/0.0.0.0 x"
    );
    assert_eq!(collapse_digit_runs("no digits"), "no digits");
    assert_eq!(collapse_digit_runs("a123456789b"), "a0b");
    assert_eq!(
        collapse_digit_runs("a12345678901234567b"),
        "a12345678901234567b"
    );
    assert_eq!(collapse_digit_runs("é1ü22"), "é0ü0");
    let config = |known_digit_runs: bool| FeaturizerConfig {
        top_k: 5000,
        char_ngrams: Some([3, 3]),
        placements: Some(PlacementConfig {
            known_header_permille: Some(10),
            known_digit_runs,
            ..Default::default()
        }),
        ..Default::default()
    };
    let site: &[(&str, &[u8])] = &[("User-Agent", b"Konqueror/3.5")];
    let docs: Vec<RequestParts> = (0..10)
        .map(|_| parts_of("GET", "/a?x=1", site, None))
        .collect();
    let chrome = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    let browser: &[(&str, &[u8])] = &[
        ("User-Agent", chrome),
        ("Accept-Language", b"es-ES,es;q=0.9"),
    ];
    let known = [parts_of("GET", "/", browser, None)];
    let read = |f: &Featurizer, headers: &[(&str, &[u8])]| {
        f.explain(&parts_of("GET", "/a?x=1", headers, None))
            .normalized
    };
    let newer: &[(&str, &[u8])] = &[(
        "User-Agent",
        b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.7444.59 Safari/537.36",
    )];
    let tampered: &[(&str, &[u8])] = &[(
        "User-Agent",
        b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 ../../etc/passwd",
    )];
    let long_number: &[(&str, &[u8])] = &[(
        "User-Agent",
        b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.12345678901234567 Safari/537.36",
    )];
    // Without known data the browser is read whole.
    let plain = Featurizer::fit(config(true), docs.clone()).unwrap();
    assert!(read(&plain, browser).contains("applewebkit"));
    let f = Featurizer::fit_with_known_headers(config(true), docs.clone(), known).unwrap();
    let text = read(&f, browser);
    assert!(
        !text.contains("applewebkit") && !text.contains("es-es"),
        "{text}"
    );
    assert!(
        !read(&f, newer).contains("applewebkit"),
        "other version numbers"
    );
    assert!(
        read(&f, tampered).contains("etc/passwd"),
        "anything else changed is read"
    );
    assert!(
        read(&f, long_number).contains("123456789"),
        "a long number is read"
    );
    // The known data are not part of the corpus: no vocabulary from them.
    assert!(!f
        .vocabulary()
        .iter()
        .any(|t| t.contains("mozilla") || t == "c:moz"));
    // Without known_digit_runs only the exact value is known.
    let exact = Featurizer::fit_with_known_headers(config(false), docs, known).unwrap();
    assert!(!read(&exact, browser).contains("applewebkit"));
    assert!(read(&exact, newer).contains("applewebkit"));
    // The setting and the values travel in the artifact.
    let back = Featurizer::from_json(&f.to_json()).unwrap();
    assert_eq!(read(&back, newer), read(&f, newer));
    assert!(String::from_utf8(f.to_json())
        .unwrap()
        .contains("known_digit_runs"));
    assert!(!String::from_utf8(exact.to_json())
        .unwrap()
        .contains("known_digit_runs"));
}

/// With `request_line_whole` and the parameter families, the request line is normalized once
/// (the parameter view's text stands for the `request` part): the vectors equal those of a
/// featurizer that cannot reuse it (`max_bytes` below `max_input_bytes`) on requests short
/// enough for both to read whole.
#[test]
fn the_request_part_reuses_the_parameter_view_without_changing_a_vector() {
    let fit = |max_bytes: usize| {
        let config = FeaturizerConfig {
            top_k: 5000,
            max_input_bytes: 1024,
            char_ngrams: Some([1, 3]),
            params: true,
            rarity_min_count: Some(1),
            libinjection: true,
            placements: Some(PlacementConfig {
                request_line_whole: true,
                max_bytes,
                ..Default::default()
            }),
            ..Default::default()
        };
        Featurizer::fit(config, shop_gets()).unwrap()
    };
    let (reuse, fresh) = (fit(256 * 1024), fit(1000));
    assert_eq!(reuse.vocabulary(), fresh.vocabulary());
    let form: &[(&str, &[u8])] = &[("Content-Type", b"application/x-www-form-urlencoded")];
    for req in [
        parts_of(
            "GET",
            "/shop/a.jsp?id=7&q=%26%2339%3B+or+1%3D1--",
            &[],
            None,
        ),
        parts_of(
            "POST",
            "/shop/a.jsp?id=7",
            form,
            Some(b"nombre=Queso&q=<script>"),
        ),
    ] {
        assert_eq!(reuse.transform(&req), fresh.transform(&req), "{req:?}");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        reuse.transform_windows(&req, &mut a);
        fresh.transform_windows(&req, &mut b);
        assert_eq!(a, b, "{req:?}");
    }
}

/// `transform_parts`: one vector per part alone, pair by pair even where the request line is
/// read whole; an attack pair's vector is the same among 40 other pairs as alone (nothing
/// shares its norm), whatever the window holds; a part without a feature of the vocabulary
/// gives none; without placements, nothing.
#[test]
fn transform_parts_gives_each_part_alone_undiluted() {
    let fit = |placements: Option<PlacementConfig>| {
        let config = FeaturizerConfig {
            top_k: 200,
            placements,
            ..Default::default()
        };
        let docs = [
            parts_of("GET", "/a?x=1&y=' or 1=1--", &[("Host", b"h")], None),
            parts_of("GET", "/a?x=2&z=3", &[("Host", b"h")], None),
        ];
        Featurizer::fit(config, docs).unwrap()
    };
    let whole = fit(Some(PlacementConfig {
        request_line_whole: true,
        ..PlacementConfig::default()
    }));
    let pad: String = (0..40).map(|i| format!("k{i}=v{i}&")).collect();
    let crowded = format!("/a?{pad}y=%27+or+1%3D1--");
    let mut parts = Vec::new();
    whole.transform_parts(
        &parts_of("GET", &crowded, &[("Host", b"h")], None),
        &mut parts,
    );
    let mut alone = Vec::new();
    whole.transform_parts(
        &parts_of("GET", "/a?y=%27+or+1%3D1--", &[], None),
        &mut alone,
    );
    // The method, the path, 41 pairs and the Host header; no part is empty.
    assert_eq!(parts.len(), 44, "{parts:?}");
    assert!(parts.iter().all(|p| !p.indices.is_empty()));
    let quote = whole.vocabulary().iter().position(|t| t == "'").unwrap() as u32;
    let attack: Vec<_> = parts
        .iter()
        .filter(|p| p.indices.contains(&quote))
        .collect();
    assert_eq!(attack.len(), 1);
    assert!(
        alone.contains(attack[0]),
        "{:?} not in {alone:?}",
        attack[0]
    );
    // The window (the request line whole) holds the quote too, diluted by the 40 pairs.
    let window = whole.transform(&parts_of("GET", &crowded, &[], None));
    let weight = |v: &featurizer::SparseVector| {
        v.indices
            .iter()
            .position(|&i| i == quote)
            .map_or(0.0, |k| v.values[k])
    };
    assert!(weight(&window) < weight(attack[0]) / 2.0);
    // A pair of characters the vocabulary never saw gives no vector.
    let mut none = Vec::new();
    whole.transform_parts(&parts_of("GET", "/a?%C3%A9=%C3%A9", &[], None), &mut none);
    assert!(none.iter().all(|p| !p.indices.is_empty()));
    let plain = fit(None);
    plain.transform_parts(&parts_of("GET", &crowded, &[], None), &mut parts);
    assert!(parts.is_empty());
}

/// `part_values_only`: in the view of single parts a named part is read by its value alone —
/// the same value under any parameter, header or cookie name (a search engine's `sig2=`, the
/// `q=` of a form) gives the same part vector, where without it the names differ; the name
/// still reaches the whole-request view; the placement mark stays; windows and parts read
/// together (`windows_and_parts`) give the same parts; and an artifact without the key reads
/// names (older bundles score as before).
#[test]
fn part_values_only_reads_a_named_part_by_its_value() {
    let fit = |values_only: bool| {
        let config = FeaturizerConfig {
            top_k: 500,
            char_ngrams: Some([1, 3]),
            placements: Some(PlacementConfig {
                request_line_whole: true,
                referer_as_url: true,
                part_values_only: values_only,
                ..PlacementConfig::default()
            }),
            ..Default::default()
        };
        let docs = [
            parts_of(
                "GET",
                "/a?q=hello&sig2=abc",
                &[("Referer", b"http://g.com/u?sig2=x&q=y")],
                None,
            ),
            parts_of(
                "GET",
                "/b?zz=hello&id=2",
                &[("Cookie", b"zz=hello; q=1")],
                None,
            ),
        ];
        Featurizer::fit(config, docs).unwrap()
    };
    let query = |name: &str| format!("/a?{name}=hello+world");
    let referer = |name: &str| format!("http://g.com/u?{name}=wm-dvex");
    let part = |f: &Featurizer, target: &str, header: (&str, &[u8]), placement: Placement| {
        let headers = [header];
        let req = parts_of("GET", target, &headers, None);
        let all = f.part_vectors(&req);
        let (mut windows, mut both) = (Vec::new(), Vec::new());
        f.windows_and_parts(&req, &mut windows, &mut both);
        assert_eq!(both, all);
        let mine: Vec<featurizer::SparseVector> = all
            .into_iter()
            .filter(|(p, _)| *p == placement)
            .map(|(_, v)| v)
            .collect();
        assert!(!mine.is_empty(), "{placement}");
        (mine, f.transform(&req))
    };
    let (values, names) = (fit(true), fit(false));
    for (a, b) in [("q", "sig2"), ("zz", "q"), ("id", "unknown_name")] {
        let (ra, rb) = (referer(a), referer(b));
        for f in [&values, &names] {
            let (qa, wa) = part(f, &query(a), ("Referer", ra.as_bytes()), Placement::Query);
            let (qb, wb) = part(f, &query(b), ("Referer", ra.as_bytes()), Placement::Query);
            let (ha, _) = part(f, "/a", ("Referer", ra.as_bytes()), Placement::HdrReferer);
            let (hb, _) = part(f, "/a", ("Referer", rb.as_bytes()), Placement::HdrReferer);
            let cookie = |n: &str| format!("{n}=hello");
            let (ca, _) = part(
                f,
                "/a",
                ("Cookie", cookie(a).as_bytes()),
                Placement::HdrCookie,
            );
            let (cb, _) = part(
                f,
                "/a",
                ("Cookie", cookie(b).as_bytes()),
                Placement::HdrCookie,
            );
            let same = std::ptr::eq(f, &values);
            assert_eq!(qa == qb, same, "{a} vs {b}: {qa:?} {qb:?}");
            assert_eq!(ha == hb, same, "{a} vs {b}: {ha:?} {hb:?}");
            assert_eq!(ca == cb, same, "{a} vs {b}: {ca:?} {cb:?}");
            // The whole request reads the names either way.
            assert_ne!(wa, wb, "{a} vs {b}");
        }
    }
    // The placement mark is still read (the whole view of the fit read the Referer's marks).
    let vocabulary = values.vocabulary();
    let marked = |v: &featurizer::SparseVector| {
        v.indices.iter().any(|&i| {
            vocabulary[i as usize]
                .starts_with(&format!("{}hdr:referer=", featurizer::PLACEMENT_PREFIX))
        })
    };
    let (r, _) = part(
        &values,
        "/a",
        ("Referer", referer("q").as_bytes()),
        Placement::HdrReferer,
    );
    assert!(r.iter().all(marked), "{r:?}");
    // The Host header (the site's own name) is not a part of the view; the whole request reads it.
    let ip: &[(&str, &[u8])] = &[("Host", b"127.0.0.1:8080")];
    let name: &[(&str, &[u8])] = &[("Host", b"h")];
    let host_parts = |f: &Featurizer| {
        let parts = f.part_vectors(&parts_of("GET", "/a?q=1", ip, None));
        parts
            .iter()
            .filter(|(p, _)| *p == Placement::HdrOther)
            .count()
    };
    assert_eq!(host_parts(&values), 0);
    assert_eq!(host_parts(&names), 1);
    assert_ne!(
        values.transform(&parts_of("GET", "/a?q=1", ip, None)),
        values.transform(&parts_of("GET", "/a?q=1", name, None))
    );
    // The key is written only when on, so an artifact without it reads names; a saved
    // artifact reads back with the same view.
    let text = |f: &Featurizer| String::from_utf8(f.to_json()).unwrap();
    assert!(!text(&names).contains("part_values_only"));
    assert!(text(&values).contains("\"part_values_only\": true"));
    let back = Featurizer::from_json(&values.to_json()).unwrap();
    let (a, _) = part(&back, &query("q"), ("Host", b"h"), Placement::Query);
    let (b, _) = part(&back, &query("sig2"), ("Host", b"h"), Placement::Query);
    assert_eq!(a, b);
}
