//! The whole request, end to end: Apache, pate-proxy in block mode and a fixture bundle whose
//! featurizer reads every placement (`placements`; `test_support::write_placement_fixture_bundle`:
//! the hand-set model on SQL-injection/XSS tokens). For each placement a known attack is blocked
//! (403) and a benign value passes (not 403, reaches Apache); an attack after more than 8 KiB of
//! padding and attacks hidden by Base64, `\u` escapes and XML entities are blocked; the audit
//! line and `patewaf_detections_total` name the placement.
//!
//! Why a fixture bundle and not one trained per test run: three fresh runs of
//! `configs/whole-request.yaml` (2026-11-23, these requests replayed through the proxy) blocked
//! both attacks in all 13 placements, but at the bundle's own threshold the benign value
//! "Queso Manchego" was blocked in 3, 13 and 2 of the 13 placements; with a threshold chosen on
//! a public validation split (EVALUATION.md) one run still blocked it everywhere (it scored
//! 0.98–0.99, the attacks 0.99–1.0). A per-placement pass/block test on a fresh-trained bundle
//! would fail in most runs; the config also needs `../shared/datasets` (public examples).

use e2e::{json_lines, proxy_config, raw_request, Apache, Proxy, ProxyPorts};
use test_support::write_placement_fixture_bundle;

const SQLI: &str = "' union select password from usuarios where '1'='1";
const XSS: &str = "<script>alert(document.cookie)</script>";
const BENIGN: &str = "Queso Manchego";

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn b64(s: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let v = s.as_bytes();
    let mut out = String::new();
    for c in v.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            out.push(if k <= c.len() {
                A[((n >> (18 - 6 * k)) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

fn json_u(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\u{:04x}", c as u32)
            }
        })
        .collect()
}

fn xml_esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&#39;")
        .replace('"', "&quot;")
}

/// A raw request: `GET`/`POST` `target` with extra header lines and an optional typed body.
fn request(
    method: &str,
    target: &str,
    headers: &[(&str, String)],
    body: Option<(&str, String)>,
) -> Vec<u8> {
    let mut r =
        format!("{method} {target} HTTP/1.1\r\nHost: localhost:8080\r\nConnection: close\r\n");
    for (n, v) in headers {
        r.push_str(&format!("{n}: {v}\r\n"));
    }
    if let Some((ct, b)) = &body {
        r.push_str(&format!(
            "Content-Type: {ct}\r\nContent-Length: {}\r\n\r\n{b}",
            b.len()
        ));
    } else {
        r.push_str("\r\n");
    }
    r.into_bytes()
}

/// Builds the raw request that carries a value in one placement.
type RequestBuilder = Box<dyn Fn(&str) -> Vec<u8>>;

/// (placement the proxy should name, request builder for a value).
fn cases() -> Vec<(&'static str, RequestBuilder)> {
    const P: &str = "/tienda1/publico/anadir.jsp";
    let form = "application/x-www-form-urlencoded";
    vec![
        (
            "query",
            Box::new(|v: &str| request("GET", &format!("{P}?id=2&nombre={}", enc(v)), &[], None)),
        ),
        (
            "form",
            Box::new(move |v: &str| {
                request(
                    "POST",
                    P,
                    &[],
                    Some((form, format!("id=2&nombre={}&precio=39", enc(v)))),
                )
            }),
        ),
        (
            "path",
            Box::new(|v: &str| {
                request(
                    "GET",
                    &format!("/tienda1/publico/{}/anadir.jsp", enc(v)),
                    &[],
                    None,
                )
            }),
        ),
        (
            "hdr:user-agent",
            Box::new(|v: &str| request("GET", P, &[("User-Agent", v.to_string())], None)),
        ),
        (
            "hdr:referer",
            Box::new(|v: &str| {
                request(
                    "GET",
                    P,
                    &[(
                        "Referer",
                        format!("http://localhost:8080/tienda1/?q={}", enc(v)),
                    )],
                    None,
                )
            }),
        ),
        (
            "hdr:cookie",
            Box::new(|v: &str| {
                request(
                    "GET",
                    P,
                    &[("Cookie", format!("JSESSIONID=ABC123; pref={}", enc(v)))],
                    None,
                )
            }),
        ),
        (
            "hdr:x-forwarded",
            Box::new(|v: &str| request("GET", P, &[("X-Forwarded-For", v.to_string())], None)),
        ),
        (
            "hdr:other",
            Box::new(|v: &str| request("GET", P, &[("X-Search", v.to_string())], None)),
        ),
        (
            "json:value",
            Box::new(|v: &str| {
                request(
                    "POST",
                    P,
                    &[],
                    Some((
                        "application/json",
                        format!("{{\"id\": 2, \"nombre\": \"{}\"}}", json_u(v)),
                    )),
                )
            }),
        ),
        (
            "xml:text",
            Box::new(|v: &str| {
                request("POST", P, &[], Some(("text/xml", format!("<?xml version=\"1.0\"?><soap:Envelope><soap:Body><nombre>{}</nombre></soap:Body></soap:Envelope>", xml_esc(v)))))
            }),
        ),
        (
            "mp:field",
            Box::new(|v: &str| {
                request("POST", P, &[], Some(("multipart/form-data; boundary=XyZ", format!("--XyZ\r\nContent-Disposition: form-data; name=\"nombre\"\r\n\r\n{v}\r\n--XyZ--\r\n"))))
            }),
        ),
        (
            "mp:filename",
            Box::new(|v: &str| {
                request("POST", P, &[], Some(("multipart/form-data; boundary=XyZ", format!("--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{}\"\r\n\r\nhello\r\n--XyZ--\r\n", v.replace('"', "%22")))))
            }),
        ),
        (
            "text",
            Box::new(|v: &str| request("POST", P, &[], Some(("text/plain", v.to_string())))),
        ),
    ]
}

fn start() -> (Proxy, Apache, std::path::PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let apache = Apache::start(&tmp.path().join("apache"));
    let bundle = tmp.path().join("bundle");
    write_placement_fixture_bundle(&bundle, 0.5).unwrap();
    let audit = tmp.path().join("audit.jsonl");
    let config = proxy_config(
        &ProxyPorts::free(),
        apache.port,
        &bundle,
        "block",
        &audit,
        "",
    );
    let proxy = Proxy::start(tmp.path(), &config);
    (proxy, apache, audit, tmp)
}

#[test]
fn every_placement_blocks_an_attack_and_passes_a_benign_value() {
    let (proxy, _apache, audit, _tmp) = start();
    let mut failures = Vec::new();
    for (placement, build) in cases() {
        for attack in [SQLI, XSS] {
            let r = raw_request(proxy.listen, &build(attack)).unwrap();
            if r.status != 403 {
                failures.push(format!("{placement}: attack {attack:?} got {}", r.status));
            }
        }
        let r = raw_request(proxy.listen, &build(BENIGN)).unwrap();
        if r.status == 403 || r.status == 400 {
            failures.push(format!("{placement}: benign value got {}", r.status));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // The audit lines name the placement that scored highest, and so does the metric.
    let lines = json_lines(&audit);
    for (placement, _) in cases() {
        assert!(
            lines.iter().any(|l| l["placement"] == placement),
            "no audit line names {placement}: {:?}",
            lines
                .iter()
                .map(|l| l["placement"].clone())
                .collect::<Vec<_>>()
        );
        let metric =
            format!("patewaf_detections_total{{placement=\"{placement}\",verdict=\"block\"}}");
        assert!(proxy.metric(&metric) >= 1.0, "{metric}");
    }
}

#[test]
fn padding_and_encodings_do_not_hide_an_attack() {
    let (proxy, _apache, _audit, _tmp) = start();
    const P: &str = "/tienda1/publico/anadir.jsp";
    let form = "application/x-www-form-urlencoded";
    // An attack after 9 KiB of benign padding in a form body, and in a text body.
    let padding = "precio=39&".repeat(920);
    let padded = request(
        "POST",
        P,
        &[],
        Some((form, format!("{padding}nombre={}", enc(SQLI)))),
    );
    let padded_text = request(
        "POST",
        P,
        &[],
        Some(("text/plain", format!("{} {XSS}", "a ".repeat(5000)))),
    );
    // Base64 in a query value and in a header; \u escapes in JSON; entities in XML.
    let base64_query = request("GET", &format!("{P}?data={}", enc(&b64(SQLI))), &[], None);
    let base64_header = request("GET", P, &[("X-Data", b64(XSS))], None);
    let json = request(
        "POST",
        P,
        &[],
        Some((
            "application/json",
            format!("{{\"q\": \"{}\"}}", json_u(SQLI)),
        )),
    );
    let xml = request(
        "POST",
        P,
        &[],
        Some(("application/soap+xml", format!("<q>{}</q>", xml_esc(XSS)))),
    );
    let double = request("GET", &format!("{P}?q={}", enc(&enc(SQLI))), &[], None);
    for (what, req) in [
        ("padded form", padded),
        ("padded text", padded_text),
        ("base64 query", base64_query),
        ("base64 header", base64_header),
        ("json \\u", json),
        ("xml entities", xml),
        ("double percent", double),
    ] {
        let r = raw_request(proxy.listen, &req).unwrap();
        assert_eq!(r.status, 403, "{what}");
    }
    // The same padding with a benign tail passes.
    let benign = request(
        "POST",
        P,
        &[],
        Some((form, format!("{padding}nombre={}", enc(BENIGN)))),
    );
    let r = raw_request(proxy.listen, &benign).unwrap();
    assert_ne!(r.status, 403, "padded benign form");
}

/// `pate-trainer score --target` with the headers, body and method of a request as the proxy
/// sees them; returns (score, verdict).
fn trainer_score(
    bundle: &std::path::Path,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (f32, String) {
    let trainer = e2e::release_binary("pate-trainer", "PATE_TRAINER_BIN");
    let mut cmd = std::process::Command::new(&trainer);
    cmd.args(["score", "--bundle"])
        .arg(bundle)
        .args(["--method", method, "--target", target, "--body", body]);
    for (n, v) in headers {
        cmd.arg("--header").arg(format!("{n}: {v}"));
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "pate-trainer score failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["score"].as_f64().unwrap() as f32,
        v["verdict"].as_str().unwrap().to_string(),
    )
}

/// Padding that no copy-collapsing undoes: every word distinct and benign-looking (products and
/// quantities), `bytes` of it; `+` between words for a form value, spaces for a text body.
fn distinct_padding(sep: char, bytes: usize) -> String {
    const WORDS: [&str; 8] = [
        "queso", "jamon", "vino", "aceite", "pan", "miel", "cafe", "arroz",
    ];
    let mut out = String::new();
    let mut i = 0usize;
    while out.len() < bytes {
        out.push_str(&format!(
            "{}{i}{sep}unidad{}{sep}",
            WORDS[i % WORDS.len()],
            i * 7 + 3
        ));
        i += 1;
    }
    out
}

/// Distinct benign form pairs (`queso0=unidad3&jamon1=unidad10&…`), `bytes` of them.
fn distinct_pairs(bytes: usize) -> String {
    let padding = distinct_padding(' ', bytes);
    let words: Vec<&str> = padding.split(' ').collect();
    let mut out = String::new();
    for pair in words.chunks(2) {
        if let [name, value] = pair {
            if !name.is_empty() {
                out.push_str(&format!("{name}={value}&"));
            }
        }
    }
    out
}

/// `pate-trainer score` scores a request the way the proxy does (every window, the highest score
/// kept, through the one function `bundle::score_request`): an attack after more than
/// `max_input_bytes` of distinct benign padding (one long field, a text body, or hundreds of
/// distinct pairs) is an attack for both, with the same score, and the same padding with a
/// benign tail passes both.
#[test]
fn pate_trainer_score_equals_the_proxy_after_distinct_padding() {
    let (proxy, _apache, audit, tmp) = start();
    let bundle = tmp.path().join("bundle");
    let max_input = bundle::Bundle::load(&bundle)
        .unwrap()
        .featurizer
        .config()
        .max_input_bytes;
    const P: &str = "/tienda1/publico/anadir.jsp";
    let form = "application/x-www-form-urlencoded";
    // A form with a long comment field of distinct words before the attack's field, and a text
    // body of distinct words with the attack at its end: more than a window of padding either way.
    let cases = [
        (
            form,
            format!(
                "id=2&comentario={}&",
                distinct_padding('+', max_input + 1024)
            ),
            true,
        ),
        ("text/plain", distinct_padding(' ', max_input + 1024), false),
        // Hundreds of distinct pairs: the attack's window is full of them, but the fixture's
        // featurizer scores every part of a shared window alone too (`parts_alone`).
        (form, distinct_pairs(max_input + 512), true),
    ];
    let mut blocked = 0usize;
    for (content_type, padding, is_form) in cases {
        assert!(padding.len() > max_input);
        for (tail, attack) in [(SQLI, true), (BENIGN, false)] {
            let body = if is_form {
                format!("{padding}nombre={}", enc(tail))
            } else {
                format!("{padding}{tail}")
            };
            let what = format!("{content_type} padded, attack {attack}");
            let sum_before = proxy.metric("patewaf_score_sum");
            let r = raw_request(
                proxy.listen,
                &request("POST", P, &[], Some((content_type, body.clone()))),
            )
            .unwrap();
            let proxy_score = proxy.metric("patewaf_score_sum") - sum_before;
            // The headers the proxy passes to the featurizer (framing headers are not read).
            let headers = [
                ("Host", "localhost:8080"),
                ("Connection", "close"),
                ("Content-Type", content_type),
                ("Content-Length", &body.len().to_string()),
            ];
            let (score, verdict) = trainer_score(&bundle, "POST", P, &headers, &body);
            assert_eq!(verdict == "block", attack, "{what}: trainer {score}");
            assert_eq!(r.status == 403, attack, "{what}: proxy {}", r.status);
            assert!(
                (proxy_score - f64::from(score)).abs() <= 1e-6,
                "{what}: proxy {proxy_score} vs trainer {score}"
            );
            if attack {
                blocked += 1;
                // The audit line holds the proxy's f32 score: the same number.
                assert!(e2e::eventually(std::time::Duration::from_secs(5), || {
                    json_lines(&audit).len() >= blocked
                }));
                let lines = json_lines(&audit);
                let last = lines.last().unwrap();
                assert_eq!(last["score"].as_f64().unwrap() as f32, score, "{what}");
            }
        }
    }
    assert_eq!(blocked, 3);
}
