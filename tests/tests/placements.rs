//! The whole request, end to end: Apache and pate-proxy in block mode with a bundle TRAINED by
//! `pate-trainer run --config configs/whole-request.yaml --seed 1` (the in-repo CSIC sample, PATE,
//! the featurizer's `placements` and public attacks placed into the site's request shapes;
//! trained once per test binary). For each placement a known attack is blocked
//! (403) and a benign value of the site passes (neither 403 nor 400) in the site's own request
//! (`anadir.jsp` with its parameters); an attack after more than 8 KiB of padding and attacks
//! hidden by Base64, `\u` escapes, XML entities, double percent-encoding, a `;` inside a quoted
//! multipart file name, a multipart part after the closing delimiter, an XML processing
//! instruction or single-quoted JSON are blocked; the audit
//! line and `patewaf_detections_total` name the placement.
//!
//! Why a seed: with fresh OS randomness this demo-sized recipe (10 teachers, ~30 % of its 280
//! PATE labels wrong) gets every case right in about nine trainings of ten, not every one
//! (2026-11-26, `bench/placements/e2e_reliability.sh`: 18 of 20; in the others the site's own
//! request scored above the threshold in one or every placement, which failed a CI run; variants
//! tried in EVALUATION.md, "The whole request"). The test checks what the proxy does with a
//! trained bundle in every placement, so it trains one reproducible bundle (seed 1, at
//! 9be2ee7: threshold 0.67, the benign value at most 0.21, the attacks at least 0.999 on these
//! requests; the bundle changes with the featurizer); the
//! reliability of fresh trainings is the bench script's measurement, not this test's. A seeded
//! bundle says it is not private (`privacy.published_epsilon_kind`). The comparison of
//! `pate-trainer score` with the proxy after distinct padding keeps the hand-weighted fixture
//! bundle (`test_support::write_placement_fixture_bundle`): its many-distinct-pairs case needs
//! `parts_alone`, which `configs/whole-request.yaml` leaves off.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use e2e::{
    json_lines, proxy_config, raw_request, release_binary, repo_root, Apache, Proxy, ProxyPorts,
};
use test_support::{write_part_model_fixture_bundle, write_placement_fixture_bundle};

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

const P: &str = "/tienda1/publico/anadir.jsp";

/// The site's own parameters (CSIC's `anadir.jsp`, as its shop sends them) with `nombre` set.
fn fields(nombre: &str) -> Vec<(&'static str, String)> {
    vec![
        ("id", "2".into()),
        ("nombre", nombre.into()),
        ("precio", "100".into()),
        ("cantidad", "28".into()),
        ("B1", "Añadir al carrito".into()),
    ]
}

/// The site's query string (or form body) as its shop sends it, with `nombre` set (encoded).
fn site_query(nombre: &str) -> String {
    format!(
        "id=2&nombre={}&precio=100&cantidad=28&B1=A%F1adir+al+carrito",
        enc(nombre)
    )
}

/// The site's own GET with its usual parameters.
fn site_get() -> String {
    format!("{P}?id=2&nombre=Queso+Manchego&precio=100&cantidad=28&B1=A%F1adir+al+carrito")
}

/// A multipart body of the site's fields (`nombre` set) plus `extra` parts.
fn multipart(nombre: &str, extra: &str) -> String {
    let mut b: String = fields(nombre)
        .iter()
        .map(|(n, v)| {
            format!("--XyZ\r\nContent-Disposition: form-data; name=\"{n}\"\r\n\r\n{v}\r\n")
        })
        .collect();
    b.push_str(extra);
    b.push_str("--XyZ--\r\n");
    b
}

/// (placement the proxy should name, request builder for a value): the value in one placement
/// of a request the site itself sends.
fn cases() -> Vec<(&'static str, RequestBuilder)> {
    let form = "application/x-www-form-urlencoded";
    let mp = "multipart/form-data; boundary=XyZ";
    let header = |name: &'static str, value: fn(&str) -> String| -> RequestBuilder {
        Box::new(move |v: &str| request("GET", &site_get(), &[(name, value(v))], None))
    };
    vec![
        (
            "query",
            Box::new(|v: &str| request("GET", &format!("{P}?{}", site_query(v)), &[], None)),
        ),
        (
            "form",
            Box::new(move |v: &str| request("POST", P, &[], Some((form, site_query(v))))),
        ),
        (
            "path",
            Box::new(|v: &str| {
                let target = format!(
                    "/tienda1/publico/{}/anadir.jsp?{}",
                    enc(v),
                    site_query(BENIGN)
                );
                request("GET", &target, &[], None)
            }),
        ),
        ("hdr:user-agent", header("User-Agent", |v| v.to_string())),
        (
            "hdr:referer",
            header("Referer", |v| {
                format!("http://localhost:8080/tienda1/?q={}", enc(v))
            }),
        ),
        (
            "hdr:cookie",
            header("Cookie", |v| format!("JSESSIONID=ABC123; pref={}", enc(v))),
        ),
        (
            "hdr:x-forwarded",
            header("X-Forwarded-For", |v| v.to_string()),
        ),
        ("hdr:other", header("X-Search", |v| v.to_string())),
        (
            "json:value",
            Box::new(|v: &str| {
                let body: Vec<String> = fields(v)
                    .iter()
                    .map(|(n, x)| format!("\"{n}\": \"{}\"", json_u(x)))
                    .collect();
                request(
                    "POST",
                    P,
                    &[],
                    Some(("application/json", format!("{{{}}}", body.join(", ")))),
                )
            }),
        ),
        (
            "xml:text",
            Box::new(|v: &str| {
                let body: String = fields(v)
                    .iter()
                    .map(|(n, x)| format!("<{n}>{}</{n}>", xml_esc(x)))
                    .collect();
                request("POST", P, &[], Some(("text/xml", format!("<?xml version=\"1.0\"?><soap:Envelope><soap:Body>{body}</soap:Body></soap:Envelope>"))))
            }),
        ),
        (
            "mp:field",
            Box::new(move |v: &str| request("POST", P, &[], Some((mp, multipart(v, ""))))),
        ),
        (
            "mp:filename",
            Box::new(move |v: &str| {
                let file = format!("--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{}\"\r\n\r\nhello\r\n", v.replace('"', "%22"));
                request("POST", P, &[], Some((mp, multipart(BENIGN, &file))))
            }),
        ),
        (
            "text",
            Box::new(|v: &str| request("POST", P, &[], Some(("text/plain", v.to_string())))),
        ),
    ]
}

/// `configs/whole-request.yaml` trained once for this test binary with seed 1 (reproducible;
/// see the module comment); its bundle directory. The run directory is under Cargo's target tmp
/// dir.
fn trained_bundle() -> &'static Path {
    static BUNDLE: OnceLock<PathBuf> = OnceLock::new();
    BUNDLE.get_or_init(|| {
        let run = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("placements-run-{}", std::process::id()));
        // A run directory left by an earlier process with the same id would be resumed.
        let _ = std::fs::remove_dir_all(&run);
        let out = Command::new(release_binary("pate-trainer", "PATE_TRAINER_BIN"))
            .args(["run", "-q", "--seed", "1", "--config"])
            .arg(repo_root().join("configs/whole-request.yaml"))
            .arg("--out")
            .arg(&run)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pate-trainer run --config configs/whole-request.yaml failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The threshold was chosen the way the proxy scores (the highest window of each
        // validation request), on the validation requests and placed public examples.
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("report.json")).unwrap()).unwrap();
        let served = &report["student_options"]["threshold_scored_as_served"];
        assert_eq!(served["placed_public_examples"], 600, "{served}");
        assert!(
            served["validation_requests"].as_u64().unwrap_or(0) > 600,
            "{served}"
        );
        run.join("bundle")
    })
}

/// Apache and the proxy in block mode with `bundle` (the fixture bundle, written into the
/// temporary directory, when `None`).
fn start(bundle: Option<&Path>) -> (Proxy, Apache, PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let apache = Apache::start(&tmp.path().join("apache"));
    let bundle = match bundle {
        Some(b) => b.to_path_buf(),
        None => {
            let b = tmp.path().join("bundle");
            write_placement_fixture_bundle(&b, 0.5).unwrap();
            b
        }
    };
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
    let (proxy, _apache, audit, _tmp) = start(Some(trained_bundle()));
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

/// Real browsers (User-Agents of `bench/browsers/held_out_uas.tsv`, a source the trainer never
/// read) with their family's Accept headers: the site's own page passes for each, and an attack
/// in the query with the same headers is blocked. The sample's clients all send one Konqueror
/// User-Agent; before `public_examples.user_agents` this bundle blocked 41 % of CSIC's normal
/// requests sent with a real browser's headers (bench/browsers/).
#[test]
fn real_browsers_pass_and_their_attacks_are_blocked() {
    let (proxy, _apache, _audit, _tmp) = start(Some(trained_bundle()));
    let html = "text/html,application/xhtml+xml,application/xml;q=0.9";
    let browsers = [
        ("Mozilla/5.0 (Android 16; Mobile; rv:156.0) Gecko/156.0 Firefox/156.0", format!("{html},*/*;q=0.8"), "de-DE,de;q=0.5"),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/151.0.0.0 Safari/537.36 Edg/151.0.0.0", format!("{html},image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"), "en-US,en;q=0.9"),
        ("Mozilla/5.0 (Linux; Android 6.0; Nexus 5 Build/MRA58N) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/51.0.5337.1007 Mobile Safari/537.36", format!("{html},image/webp,*/*;q=0.8"), "es-ES,es;q=0.9"),
        ("Mozilla/5.0 (iPhone; CPU iPhone OS 27_0_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/27.0.1 Mobile/15E148 Safari/604.1", format!("{html},*/*;q=0.8"), "en-US"),
        ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.7.2 Safari/605.1.15", format!("{html},*/*;q=0.8"), "fr-CA"),
    ];
    let mut failures = Vec::new();
    for (ua, accept, language) in browsers {
        let headers = [
            ("User-Agent", ua.to_string()),
            ("Accept", accept),
            ("Accept-Encoding", "gzip, deflate, br".to_string()),
            ("Accept-Language", language.to_string()),
        ];
        let page = raw_request(proxy.listen, &request("GET", &site_get(), &headers, None)).unwrap();
        if page.status == 403 || page.status == 400 {
            failures.push(format!("the site's page from {ua:?} got {}", page.status));
        }
        let attack = format!("{P}?{}", site_query(SQLI));
        let r = raw_request(proxy.listen, &request("GET", &attack, &headers, None)).unwrap();
        if r.status != 403 {
            failures.push(format!("an attack from {ua:?} got {}", r.status));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn padding_and_encodings_do_not_hide_an_attack() {
    let (proxy, _apache, _audit, _tmp) = start(Some(trained_bundle()));
    let form = "application/x-www-form-urlencoded";
    // An attack after 9 KiB of benign padding in a form body (copies of the site's own
    // parameters), and in a text body.
    let site = "id=2&nombre=Queso+Manchego&precio=100&cantidad=28&B1=A%F1adir+al+carrito&";
    let padding = site.repeat(9300 / site.len() + 1);
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
    // In the site's own GET: Base64 in an extra query value and in a header.
    let base64_query = request(
        "GET",
        &format!("{}&data={}", site_get(), enc(&b64(SQLI))),
        &[],
        None,
    );
    let base64_header = request("GET", &site_get(), &[("X-Data", b64(XSS))], None);
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
    let double = request("GET", &format!("{P}?{}", site_query(&enc(SQLI))), &[], None);
    // A `;` inside a quoted file name (the name the application reads is the whole string; the
    // featurizer used to stop at the `;` and see `report.pdf` only).
    let file_post = |filename: &str| {
        let file = format!("--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"{filename}\"\r\n\r\nhello\r\n");
        let body = multipart(BENIGN, &file);
        request(
            "POST",
            P,
            &[],
            Some(("multipart/form-data; boundary=XyZ", body)),
        )
    };
    let semicolon_filename = file_post(&format!("report.pdf;{SQLI}"));
    // A part after the multipart body's closing delimiter (parsers that do not stop there read
    // it).
    let after_close = request(
        "POST",
        P,
        &[],
        Some((
            "multipart/form-data; boundary=XyZ",
            multipart(BENIGN, "")
                + &format!("--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n{SQLI}\r\n--XyZ--\r\n"),
        )),
    );
    // PHP smuggled into an XML document as a processing instruction.
    let xml_pi = request(
        "POST",
        P,
        &[],
        Some((
            "text/xml",
            "<?xml version=\"1.0\"?><?php system($_GET['cmd']); ?><nombre>Queso Manchego</nombre>"
                .to_string(),
        )),
    );
    // Single-quoted JSON, which lenient readers (Gson by default) take: read as text too.
    let single_quoted_json = request(
        "POST",
        P,
        &[],
        Some(("application/json", format!("{{'nombre': '{XSS}'}}"))),
    );
    let plain_filename = file_post("report.pdf");
    for (what, req) in [
        ("file name with a ';'", semicolon_filename),
        ("single-quoted JSON", single_quoted_json),
        ("a part after the closing delimiter", after_close),
        ("an XML processing instruction", xml_pi),
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
    // What the old reading saw of the file name passes: the `;` case is blocked for its tail.
    let r = raw_request(proxy.listen, &plain_filename).unwrap();
    assert_ne!(r.status, 403, "benign file name");
}

/// A POST to the site's page with a body sent with `Content-Encoding: coding`.
fn encoded_post(content_type: &str, coding: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST {P} HTTP/1.1\r\nHost: localhost:8080\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// The same POST with the body sent `Transfer-Encoding: {codings}` in one chunk (`codings` ends
/// with `chunked`).
fn transfer_coded_post(content_type: &str, codings: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST {P} HTTP/1.1\r\nHost: localhost:8080\r\nConnection: close\r\nContent-Type: {content_type}\r\nTransfer-Encoding: {codings}\r\n\r\n{:x}\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r.extend_from_slice(b"\r\n0\r\n\r\n");
    r
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A compressed body is scored as the application reads it, inflated: an attack in a gzip form
/// body is blocked where the same body uncompressed would be, the site's own form passes; a
/// coding the proxy cannot undo gets 415, a stream that does not inflate 400, and a small body
/// that inflates past `body_limit_bytes` is scored up to the limit (and passes when benign)
/// without the proxy inflating it further; `pate-trainer score` gives the proxy's score. Apache
/// alone would forward all of them to the application.
#[test]
fn compressed_bodies_are_inflated_before_scoring() {
    let (proxy, _apache, audit, _tmp) = start(Some(trained_bundle()));
    let form = "application/x-www-form-urlencoded";
    let attack = gzip(site_query(SQLI).as_bytes());
    let r = raw_request(proxy.listen, &encoded_post(form, "gzip", &attack)).unwrap();
    assert_eq!(r.status, 403, "gzip form body with an SQLi");
    // The coding on a second Content-Encoding line counts too.
    let two_lines = "identity\r\nContent-Encoding: gzip";
    let r = raw_request(proxy.listen, &encoded_post(form, two_lines, &attack)).unwrap();
    assert_eq!(
        r.status, 403,
        "gzip named on a second Content-Encoding line"
    );
    let benign = gzip(site_query(BENIGN).as_bytes());
    let r = raw_request(proxy.listen, &encoded_post(form, "gzip", &benign)).unwrap();
    assert!(
        r.status != 403 && r.status != 400,
        "gzip benign form: {}",
        r.status
    );
    // Scored as compressed bytes the benign form is blocked: so it passing here shows the
    // second line was read.
    let r = raw_request(proxy.listen, &encoded_post(form, two_lines, &benign)).unwrap();
    assert!(
        r.status != 403 && r.status != 400,
        "two-line gzip benign form: {}",
        r.status
    );
    let r = raw_request(proxy.listen, &encoded_post(form, "br", b"\x1b\x03\x00")).unwrap();
    assert_eq!(r.status, 415, "brotli body");
    // A transfer coding before the final chunked compresses the body too (Apache alone accepts
    // `gzip, chunked` and hands the gzip bytes on): inflated and scored the same way.
    let sum_before = proxy.metric("patewaf_score_sum");
    let r = raw_request(
        proxy.listen,
        &transfer_coded_post(form, "gzip, chunked", &attack),
    )
    .unwrap();
    assert_eq!(
        r.status, 403,
        "Transfer-Encoding: gzip, chunked with an SQLi"
    );
    let te_score = proxy.metric("patewaf_score_sum") - sum_before;
    let r = raw_request(
        proxy.listen,
        &transfer_coded_post(form, "gzip, chunked", &benign),
    )
    .unwrap();
    assert!(
        r.status != 403 && r.status != 400,
        "Transfer-Encoding: gzip, chunked benign form: {}",
        r.status
    );
    let r = raw_request(
        proxy.listen,
        &transfer_coded_post(form, "br, chunked", b"\x1b\x03\x00"),
    )
    .unwrap();
    assert_eq!(r.status, 415, "Transfer-Encoding: br, chunked");
    // chunked applied twice (RFC 9112 §7.1 forbids it; Apache de-chunks once and hands the
    // application chunk framing): refused, not scored as something else than the app reads.
    let inner = format!(
        "{:x}\r\n{}\r\n0\r\n\r\n",
        site_query(SQLI).len(),
        site_query(SQLI)
    );
    let r = raw_request(
        proxy.listen,
        &transfer_coded_post(form, "chunked, chunked", inner.as_bytes()),
    )
    .unwrap();
    assert_eq!(r.status, 400, "Transfer-Encoding: chunked, chunked");
    let r = raw_request(proxy.listen, &encoded_post(form, "gzip", b"not gzip")).unwrap();
    assert_eq!(r.status, 400, "corrupt gzip body");
    // 5 MB of the site's own form inflated from ~17 KB: cut at the limit, scored, forwarded.
    let padding = site_query(BENIGN) + "&";
    let bomb = gzip(padding.repeat(5_000_000 / padding.len()).as_bytes());
    assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
    let r = raw_request(proxy.listen, &encoded_post(form, "gzip", &bomb)).unwrap();
    assert!(
        r.status != 403 && r.status != 400,
        "gzip bomb of the site's form: {}",
        r.status
    );
    assert!(
        proxy.metric("patewaf_over_limit_requests_total{action=\"pass\",limit=\"body\"}") >= 1.0
    );
    let lines = json_lines(&audit);
    let reasons: Vec<String> = lines
        .iter()
        .filter_map(|l| l["reason"].as_str().map(str::to_string))
        .collect();
    // `pate-trainer score` inflates the same body the same way: the score the proxy audited.
    let headers = [
        ("Host", "localhost:8080"),
        ("Content-Type", form),
        ("Content-Encoding", "gzip"),
    ];
    let (score, _) = trainer_score(trained_bundle(), "POST", P, &headers, &attack, &[]);
    let audited = lines[0]["score"].as_f64().unwrap();
    assert!(
        (f64::from(score) - audited).abs() < 1e-6,
        "pate-trainer score {score} vs the proxy's {audited}"
    );
    // And a transfer coding given to `pate-trainer score` (with the de-chunked body).
    let headers = [
        ("Host", "localhost:8080"),
        ("Content-Type", form),
        ("Transfer-Encoding", "gzip, chunked"),
    ];
    let (score, verdict) = trainer_score(trained_bundle(), "POST", P, &headers, &attack, &[]);
    assert!(
        verdict == "block" && (f64::from(score) - te_score).abs() < 1e-6,
        "pate-trainer score {score} ({verdict}) vs the proxy's {te_score}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("content_encoding: br"))
            && reasons
                .iter()
                .any(|r| r.starts_with("bad_content_encoding"))
            && reasons
                .iter()
                .any(|r| r.starts_with("bad_transfer_encoding")),
        "{reasons:?}"
    );
}

/// `pate-trainer score --target` with the headers, body (bytes, through `--body-file`) and
/// method of a request as the proxy sees them, and `extra` arguments; returns (score, verdict).
fn trainer_score(
    bundle: &std::path::Path,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    extra: &[&str],
) -> (f32, String) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), body).unwrap();
    let trainer = e2e::release_binary("pate-trainer", "PATE_TRAINER_BIN");
    let mut cmd = std::process::Command::new(&trainer);
    cmd.args(["score", "--bundle"])
        .arg(bundle)
        .args(["--method", method, "--target", target, "--body-file"])
        .arg(file.path());
    for (n, v) in headers {
        cmd.arg("--header").arg(format!("{n}: {v}"));
    }
    cmd.args(extra);
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
    let (proxy, _apache, audit, tmp) = start(None);
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
            let (score, verdict) =
                trainer_score(&bundle, "POST", P, &headers, body.as_bytes(), &[]);
            assert_eq!(verdict == "block", attack, "{what}: trainer {score}");
            assert_eq!(r.status == 403, attack, "{what}: proxy {}", r.status);
            assert!(
                (proxy_score - f64::from(score)).abs() <= 1e-6,
                "{what}: proxy {proxy_score} vs trainer {score}"
            );
            if attack {
                blocked += 1;
                // The audit line holds the proxy's f32 score: the trainer's to float rounding
                // (the proxy scores a linear student natively, `score` through ORT).
                assert!(e2e::eventually(std::time::Duration::from_secs(5), || {
                    json_lines(&audit).len() >= blocked
                }));
                let lines = json_lines(&audit);
                let last = lines.last().unwrap();
                let audited = last["score"].as_f64().unwrap();
                assert!(
                    (audited - f64::from(score)).abs() <= 1e-6,
                    "{what}: audit {audited} vs trainer {score}"
                );
            }
        }
    }
    assert_eq!(blocked, 3);
}

/// A bundle's model of single parts, end to end: an attack in one field of a long form of
/// distinct benign fields shares its window's norm with all of them, so the window alone scores
/// it below the threshold; the part model scores the field alone. Through Apache, pate-proxy
/// with `format_checks: false` (where it scores content alone, and so the part model) blocks it
/// and passes the same form with a benign value; with the checks on, or with the same bundle
/// without its part model, the window alone decides and the attack passes. `pate-trainer score
/// --no-format-checks` gives the proxy's verdict on each; `/ready` says whether the bundle has
/// a part model.
#[test]
fn the_part_model_finds_an_attack_in_one_field_of_a_long_form() {
    let tmp = tempfile::tempdir().unwrap();
    let apache = Apache::start(&tmp.path().join("apache"));
    const P: &str = "/tienda1/publico/registro.jsp";
    let form = |value: &str| -> Vec<u8> {
        let body = format!("{}comentario={}", distinct_pairs(600), enc(value));
        format!(
            "POST {P} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    let mut seen = Vec::new();
    for (with_part_model, format_checks, attack_blocked) in [
        (true, false, true),
        (true, true, false),
        (false, false, false),
    ] {
        let dir = tmp
            .path()
            .join(format!("run-{with_part_model}-{format_checks}"));
        std::fs::create_dir_all(&dir).unwrap();
        let bundle = dir.join("bundle");
        write_part_model_fixture_bundle(&bundle, 0.5, with_part_model).unwrap();
        let config = proxy_config(
            &ProxyPorts::free(),
            apache.port,
            &bundle,
            "block",
            &dir.join("audit.jsonl"),
            &format!("format_checks: {format_checks}\n"),
        );
        let proxy = Proxy::start(&dir, &config);
        let ready = e2e::http(proxy.admin, "GET", "/ready", &[], None).unwrap();
        let ready: serde_json::Value = serde_json::from_str(&ready.text()).unwrap();
        assert_eq!(ready["part_model"], with_part_model, "{ready}");
        for (value, malicious) in [(SQLI, true), (BENIGN, false)] {
            let r = raw_request(proxy.listen, &form(value)).unwrap();
            let blocked = malicious && attack_blocked;
            seen.push(format!(
                "part model {with_part_model}, format checks {format_checks}, {value:?}: {}",
                r.status
            ));
            assert_eq!(r.status == 403, blocked, "{seen:#?}");
            assert_ne!(r.status, 400, "{seen:#?}");
            let body = format!("{}comentario={}", distinct_pairs(600), enc(value));
            let headers = [
                ("Host", "localhost"),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ];
            let extra: &[&str] = if format_checks {
                &[]
            } else {
                &["--no-format-checks"]
            };
            let (score, verdict) =
                trainer_score(&bundle, "POST", P, &headers, body.as_bytes(), extra);
            assert_eq!(
                verdict == "block",
                blocked,
                "pate-trainer score: {verdict} ({score}); {seen:#?}"
            );
        }
    }
}
