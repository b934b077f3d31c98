//! Body fields left out by name (`RequestParts::excluded_fields`, the proxy's
//! `exclude_parts: {param: NAME}`): JSON keys at any depth, multipart fields, XML elements and
//! attributes are not read, everything else is; and a request without exclusions is split
//! exactly as before they existed (`data/body_splits.jsonl`, written by the featurizer before
//! exclusions were added), so trained bundles score the same.

use featurizer::placement::split_request;
use featurizer::{ExcludedFields, Headers, PlacementConfig, RequestParts, Split};

/// (Content-Type, body): every body reader, well formed and not, bounds included.
const BODIES: &[(&str, &str)] = &[
    ("application/json", r#"{"q":"' union select 1--","a":{"q":["x",{"b":"y"}],"c":"z"},"d":[1,true,null,"w"]}"#),
    ("application/json", r#"[{"user":"bob","pw":"\u0027 or 1=1"},{"user":"eve"}]"#),
    ("application/json", r#"{"q" : { "deep" : [ [ [ "v" ] ] ] } , "r" : -1.5e3 , "s":"t"}"#),
    ("application/json", r#"{'q': '<script>', x: bare} tail"#),
    ("application/json", r#"{"q":"unterminated"#),
    ("application/json", r#"{"q":,"r":"after"}"#),
    ("application/json", r#""just a string""#),
    ("application/json", "not json at all"),
    ("application/vnd.api+json", r#"{"data":{"attributes":{"q":"a%27b","name":"&lt;x&gt;"}}}"#),
    ("multipart/form-data; boundary=XyZ", "pre\r\n--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n' union select 1--\r\n--XyZ\r\nContent-Disposition: form-data; filename=\"a;b.php\"; name=\"file\"\r\nContent-Type: text/plain\r\n\r\n<?php system($_GET[c]); ?>\r\n--XyZ\r\nContent-Disposition: form-data; name=\"r\"\r\n\r\nplain\r\n--XyZ--\r\nepilogue\r\n--XyZ\r\nContent-Disposition: form-data; name=\"late\"\r\n\r\nafter close\r\n"),
    ("multipart/form-data; boundary=b", "--b\nContent-Disposition: form-data; name=q; filename*=UTF-8''%27x.txt\n\nbare LF\n--b--"),
    ("multipart/form-data", "no boundary: read as text"),
    ("multipart/form-data; boundary=zz", "no delimiter in the body"),
    ("application/xml", r#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e "x">]><r a="1" q="attr"><q>text &lt;b&gt;<i>inner</i> tail</q><s:q xmlns:s="u">ns</s:q><x/><y q="v"/><![CDATA[cdata]]><!-- comment --><?php echo 1; ?>after</r>"#),
    ("text/xml", "<a><b><c><d>deep</d></c></b></a><e>unclosed"),
    ("application/soap+xml", "<q>unclosed excluded <r>inner</r> more"),
    ("application/x-www-form-urlencoded", "q=%27+or+1%3D1&r=2"),
    ("text/plain", "q=not a form"),
];

fn request<'a>(content_type: &'a [u8], body: &'a str) -> (Vec<(&'static str, &'a [u8])>, &'a [u8]) {
    (vec![("Content-Type", content_type)], body.as_bytes())
}

fn parts<'a>(headers: &'a [(&'static str, &'a [u8])], body: &'a [u8]) -> RequestParts<'a> {
    RequestParts {
        method: "POST",
        target: b"/api?x=1",
        body: Some(body),
        headers: Headers::Pairs(headers),
        excluded_fields: Default::default(),
    }
}

/// The default bounds, and small ones that the bodies above reach.
fn bounds() -> [PlacementConfig; 2] {
    [
        PlacementConfig::default(),
        PlacementConfig {
            max_parts: 9,
            max_depth: 2,
            max_bytes: 300,
            ..PlacementConfig::default()
        },
    ]
}

/// Each body's split under each of [`bounds`], one JSON line each.
fn splits(split: impl Fn(&RequestParts, &PlacementConfig) -> Split) -> String {
    let mut lines = String::new();
    for pc in bounds() {
        for (content_type, body) in BODIES {
            let (headers, body) = request(content_type.as_bytes(), body);
            let line = serde_json::to_string(&split(&parts(&headers, body), &pc)).unwrap();
            lines.push_str(&line);
            lines.push('\n');
        }
    }
    lines
}

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/body_splits.jsonl");

/// Without exclusions every body is split as the featurizer split it before they existed. The
/// file is only rewritten (`PATE_WRITE_BODY_SPLITS=1`) for a deliberate change of reading,
/// which needs a new featurizer version.
#[test]
fn without_exclusions_bodies_split_as_before() {
    let now = splits(|req, pc| split_request(req, pc, 3, true));
    if std::env::var_os("PATE_WRITE_BODY_SPLITS").is_some() {
        std::fs::write(GOLDEN, &now).unwrap();
    }
    let golden = std::fs::read_to_string(GOLDEN).unwrap();
    for (k, (now, was)) in now.lines().zip(golden.lines()).enumerate() {
        assert_eq!(now, was, "split {k} of a body without exclusions changed");
    }
    assert_eq!(now.lines().count(), golden.lines().count());
}

/// Excluding names that no body has changes nothing either.
#[test]
fn excluding_absent_names_splits_as_without() {
    let names = ["absent".to_string(), "Q".to_string(), "s:".to_string()];
    let with = splits(|req, pc| {
        let req = RequestParts {
            excluded_fields: ExcludedFields::new(&names),
            ..*req
        };
        split_request(&req, pc, 3, true)
    });
    let without = splits(|req, pc| split_request(req, pc, 3, true));
    assert_eq!(with, without);
}

/// (placement, name, value) of every body part of body `k` of [`BODIES`] with `names`
/// excluded (the request line and the Content-Type header left out).
fn body_parts(k: usize, names: &[&str]) -> Vec<(String, String, String)> {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let (content_type, body) = BODIES[k];
    let (headers, body) = request(content_type.as_bytes(), body);
    let req = RequestParts {
        excluded_fields: ExcludedFields::new(&names),
        ..parts(&headers, body)
    };
    split_request(&req, &PlacementConfig::default(), 3, true)
        .parts
        .into_iter()
        .skip(4)
        .map(|p| (p.placement.as_str().to_string(), p.name, p.value))
        .collect()
}

fn part(placement: &str, name: &str, value: &str) -> (String, String, String) {
    (placement.to_string(), name.to_string(), value.to_string())
}

#[test]
fn an_excluded_json_key_drops_its_whole_value_at_any_depth() {
    let kept = body_parts(0, &["q"]);
    assert_eq!(
        kept,
        [
            part("json:key", "", "a"),
            part("json:key", "", "c"),
            part("json:value", "c", "z"),
            part("json:key", "", "d"),
            part("json:value", "", "w"),
        ]
    );
    // Array elements and objects of several members each go whole; the next member is read.
    assert_eq!(
        body_parts(1, &["pw"]).len(),
        3,
        "{:?}",
        body_parts(1, &["pw"])
    );
    assert!(!body_parts(1, &["pw"])
        .iter()
        .any(|p| p.2.contains("or 1=1")));
    assert_eq!(
        body_parts(2, &["q"]),
        [
            part("json:key", "", "r"),
            part("json:key", "", "s"),
            part("json:value", "s", "t")
        ]
    );
    // A value missing or never closed ends the skip where the member or the body ends.
    assert_eq!(
        body_parts(5, &["q"]),
        [part("json:key", "", "r"), part("json:value", "r", "after")]
    );
    assert_eq!(body_parts(4, &["q"]), []);
    // A key's escapes are undone before it is compared, and names are case-sensitive.
    assert!(body_parts(0, &["Q"])
        .iter()
        .any(|p| p.2 == "' union select 1--"));
    // Not strict JSON: read whole as text too, the excluded member included.
    let lenient = body_parts(3, &["q"]);
    assert!(
        lenient
            .iter()
            .any(|p| p.0 == "text" && p.2.contains("<script>")),
        "{lenient:?}"
    );
}

#[test]
fn an_excluded_multipart_field_drops_its_value_and_file_name() {
    let all = body_parts(9, &[]);
    let kept = body_parts(9, &["q"]);
    assert!(all.contains(&part("mp:field", "q", "' union select 1--")));
    assert_eq!(kept.len(), all.len() - 1);
    assert!(!kept.iter().any(|p| p.1 == "q"));
    let kept = body_parts(9, &["file"]);
    assert_eq!(kept.len(), all.len() - 2, "{kept:?}");
    assert!(!kept.iter().any(|p| p.0 == "mp:filename" || p.1 == "file"));
    assert!(kept.contains(&part("mp:field", "q", "' union select 1--")));
    assert!(kept.contains(&part("mp:field", "late", "after close")));
}

#[test]
fn an_excluded_xml_element_drops_its_content_and_an_attribute_its_value() {
    let kept = body_parts(13, &["q"]);
    let values: Vec<&str> = kept.iter().map(|p| p.2.as_str()).collect();
    // `q` as an attribute, an element (nested `<i>` and text after it included) and with a
    // namespace prefix (with its attributes) goes; the rest of the document stays.
    for gone in ["attr", "text <b>", "inner", "tail", "ns", "u", "v"] {
        assert!(!values.contains(&gone), "{gone} in {kept:?}");
    }
    for stays in ["1", "cdata", " comment ", "php echo 1; ", "after"] {
        assert!(values.contains(&stays), "{stays} not in {kept:?}");
    }
    // An excluded element never closed runs to the end of the body.
    assert_eq!(body_parts(15, &["q"]), []);
    assert_eq!(
        body_parts(15, &["r"]).len(),
        2,
        "{:?}",
        body_parts(15, &["r"])
    );
}
