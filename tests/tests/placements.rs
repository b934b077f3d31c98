//! The whole request, end to end: Apache, pate-proxy in block mode and a fixture bundle whose
//! featurizer reads every placement (`placements`; `proxy::fixture::write_placement_fixture_bundle`:
//! the hand-set model on SQL-injection/XSS tokens). For each placement a known attack is blocked
//! (403) and a benign value passes (not 403, reaches Apache); an attack after more than 8 KiB of
//! padding and attacks hidden by Base64, `\u` escapes and XML entities are blocked; the audit
//! line and `patewaf_detections_total` name the placement.

use e2e::{json_lines, proxy_config, raw_request, Apache, Proxy, ProxyPorts};
use proxy::fixture::write_placement_fixture_bundle;

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
