//! The capture file (`capture:`) and `patewaf_route_requests_total`, in process (the pattern of
//! `in_process.rs`: the pate-proxy server on a thread of its own, ONNX Runtime scoring the
//! fixture bundle, a tokio upstream on a free port). One proxy captures into a temporary
//! directory (detect mode, a block route, a small `max_bytes` so that it rotates); another has
//! its capture file in a directory that does not exist. The lines are read back with the
//! trainer's reader, `datasets::capture`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use datasets::Record;
use proxy::state::Shared;
use proxy::Config;
use test_support::{write_fixture_bundle, ATTACK_REQUESTS, NORMAL_REQUESTS};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `capture.max_bytes` of the capturing proxy.
const MAX_BYTES: u64 = 4096;
/// `capture.body_max_bytes` of the capturing proxy.
const BODY_MAX: usize = 40;

/// A port nothing listens on now, never the same one twice in this process.
fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// An upstream that reads each request's head and declared body and answers `200 upstream`.
fn upstream() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the upstream");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let (conn, _) = listener.accept().await.unwrap();
                    tokio::spawn(answer(conn));
                }
            });
        });
        addr
    })
}

async fn answer(mut conn: tokio::net::TcpStream) {
    let (mut data, mut buf) = (Vec::new(), [0u8; 4096]);
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:")?.trim().parse().ok())
        .unwrap_or(0usize);
    while data.len() < head_end + length {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
    let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nupstream";
    let _ = conn.write_all(reply).await;
}

struct Proxy {
    shared: Arc<Shared>,
    listen: SocketAddr,
    capture: PathBuf,
}

/// A proxy in detect mode (a block route under `/blocked/`) whose capture file is `capture`.
fn start(name: &str, capture: impl Fn(&Path) -> PathBuf) -> Proxy {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("capture-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write_fixture_bundle(&dir.join("bundle"), None, 0.5, "v1").expect("fixture bundle");
    let capture = capture(&dir);
    let yaml = format!(
        "listen: \"127.0.0.1:{}\"\nupstream: \"{}\"\nadmin_listen: \"127.0.0.1:{}\"\n\
         bundle: \"{}\"\nmode: detect\naudit_log: \"{}\"\nthreads: 1\n\
         capture:\n  path: \"{}\"\n  max_bytes: {MAX_BYTES}\n  max_files: 2\n  body_max_bytes: {BODY_MAX}\n\
         routes:\n  - prefix: \"/blocked/\"\n    mode: block\n",
        free_port(),
        upstream(),
        free_port(),
        dir.join("bundle").display(),
        dir.join("audit.jsonl").display(),
        capture.display(),
    );
    let config = Config::from_yaml(&yaml, &dir.join("proxy.yaml")).expect("the config parses");
    let listen = config.listen;
    let shared = proxy::server::load(config).expect("ONNX Runtime and the bundle load");
    let server = proxy::server::build(shared.clone(), false).expect("the server builds");
    std::thread::spawn(move || server.run(pingora::server::RunArgs::default()));
    // Readiness poll (not a timing assertion).
    let up = (0..200).any(|_| {
        TcpStream::connect(listen).is_ok() || {
            std::thread::sleep(Duration::from_millis(50));
            false
        }
    });
    assert!(up, "the proxy listens on {listen}");
    Proxy {
        shared,
        listen,
        capture,
    }
}

fn capturing() -> &'static Proxy {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    PROXY.get_or_init(|| start("ok", |dir| dir.join("capture.jsonl")))
}

fn unwritable() -> &'static Proxy {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    PROXY.get_or_init(|| start("missing", |dir| dir.join("no-such-dir/capture.jsonl")))
}

/// The head fields of a request: `(name, raw value)`.
type Fields<'a> = &'a [(&'a str, &'a [u8])];

/// Sends one request with `fields` after `Host` and `Connection: close` (and the body's
/// Content-Type and Content-Length), returns the status.
fn send(proxy: &Proxy, method: &str, target: &str, fields: Fields, body: Option<&[u8]>) -> u16 {
    let mut request =
        format!("{method} {target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n")
            .into_bytes();
    for (name, value) in fields {
        request.extend_from_slice(format!("{name}: ").as_bytes());
        request.extend_from_slice(value);
        request.extend_from_slice(b"\r\n");
    }
    if let Some(body) = body {
        request.extend_from_slice(
            format!(
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
                body.len()
            )
            .as_bytes(),
        );
    }
    request.extend_from_slice(b"\r\n");
    request.extend_from_slice(body.unwrap_or_default());
    let mut conn = TcpStream::connect(proxy.listen).expect("connect to the proxy");
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn.write_all(&request).unwrap();
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"))
}

/// Waits (a poll, not a timing assertion) until `counter` reaches `at_least`.
fn wait_for(what: &str, at_least: u64, counter: impl Fn() -> u64) {
    let reached = (0..400).any(|_| {
        counter() >= at_least || {
            std::thread::sleep(Duration::from_millis(25));
            false
        }
    });
    assert!(reached, "{what}: {} < {at_least}", counter());
}

/// Every line of the capture file and its rotated files, oldest first, read by the datasets
/// reader (which checks every line was scored by the bundle `v1`).
fn captured(path: &Path) -> Vec<Record> {
    let mut all = Vec::new();
    for file in [
        path.with_extension("jsonl.2"),
        path.with_extension("jsonl.1"),
        path.to_path_buf(),
    ] {
        if file.exists() {
            let (records, version) = datasets::capture::read_with_version(&file).unwrap();
            assert_eq!(version.as_deref(), Some("v1"), "{}", file.display());
            all.extend(records);
        }
    }
    all
}

fn sorted(mut headers: Vec<(String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    headers.sort();
    headers
}

fn route(proxy: &Proxy, route: &str, verdict: &str) -> u64 {
    let metrics = &proxy.shared.metrics;
    metrics
        .route_requests
        .with_label_values(&[route, verdict])
        .get()
}

#[test]
fn captured_requests_read_back_as_sent_and_the_file_rotates_at_max_bytes() {
    let proxy = capturing();
    let lines = || proxy.shared.metrics.capture.lines.get();
    let (_, post_target, Some(post_body)) = NORMAL_REQUESTS[7] else {
        panic!("NORMAL_REQUESTS[7] is a POST")
    };
    let short_body = b"id=3&x=%27";
    let raw: &[u8] = b"caf\xe9 \xff";
    assert_eq!(
        send(
            proxy,
            "POST",
            "/tienda1/short.jsp?a=1",
            &[("X-Raw", raw)],
            Some(short_body)
        ),
        200
    );
    assert_eq!(
        send(proxy, "POST", post_target, &[], Some(post_body.as_bytes())),
        200
    );
    let attack = ATTACK_REQUESTS[3].1;
    assert_eq!(
        send(proxy, "GET", attack, &[], None),
        200,
        "detect mode forwards"
    );
    let blocked = format!("/blocked/x?{}", attack.split_once('?').unwrap().1);
    assert_eq!(
        send(proxy, "GET", &blocked, &[], None),
        403,
        "the block route blocks"
    );
    wait_for("capture lines", 4, lines);

    let records = captured(&proxy.capture);
    let find = |target: &str| {
        records
            .iter()
            .find(|r| r.target == target.as_bytes())
            .unwrap_or_else(|| panic!("{target} captured: {records:?}"))
    };
    let short = find("/tienda1/short.jsp?a=1");
    assert_eq!((short.method.as_str(), short.label), ("POST", None));
    assert_eq!(short.body.as_deref(), Some(&short_body[..]));
    let expected = [
        ("host", &b"shop.test"[..]),
        ("connection", b"close"),
        ("x-raw", raw),
        ("content-type", b"application/x-www-form-urlencoded"),
        ("content-length", b"10"),
    ];
    let expected = expected
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_vec()))
        .collect();
    assert_eq!(
        sorted(short.headers.clone()),
        sorted(expected),
        "every header, bytes as sent"
    );
    let long = find(post_target);
    assert_eq!(
        long.body.as_deref(),
        Some(&post_body.as_bytes()[..BODY_MAX]),
        "cut to body_max_bytes"
    );
    assert_eq!(find(attack).method, "GET");
    find(&blocked);

    // The raw lines: verdicts, scores, truncation marks, the bundle's digest.
    let text = std::fs::read_to_string(&proxy.capture).unwrap();
    let json: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let line = |target: &str| json.iter().find(|v| v["target"] == target).unwrap();
    assert_eq!(line(attack)["verdict"], "flag");
    assert_eq!(line(&blocked)["verdict"], "block");
    assert_eq!(line(&blocked)["mode"], "block");
    assert_eq!(line(post_target)["body_truncated"], true);
    assert_eq!(line("/tienda1/short.jsp?a=1")["verdict"], "allow");
    let headers = line("/tienda1/short.jsp?a=1")["headers"]
        .as_array()
        .unwrap();
    let raw_header = headers.iter().find(|h| h[0] == "x-raw").unwrap();
    assert_eq!(
        raw_header[1],
        serde_json::json!({"b64": "Y2Fm6SD/"}),
        "not UTF-8: base64"
    );
    let model = proxy.shared.model().unwrap();
    assert_eq!(line(attack)["bundle_sha256"], model.bundle_sha256.as_str());
    assert!(line(attack)["score"].as_f64().unwrap() >= 0.5);

    // Per route, detect mode only: the share above the threshold of `/tienda1`.
    assert!(route(proxy, "/tienda1", "flag") >= 1);
    assert!(route(proxy, "/tienda1", "allow") >= 2);
    assert_eq!(
        route(proxy, "/blocked", "block"),
        0,
        "block mode is not counted per route"
    );

    // Rotation: about 400 bytes a line; 16 more lines pass MAX_BYTES, and stay within the
    // current file and the two rotated ones.
    let before = lines();
    for i in 0..16 {
        assert_eq!(
            send(
                proxy,
                "GET",
                &format!("/tienda1/index.jsp?page={i}"),
                &[],
                None
            ),
            200
        );
    }
    wait_for("capture lines", before + 16, lines);
    let rotated = proxy.capture.with_extension("jsonl.1");
    assert!(rotated.exists(), "rotated to {}", rotated.display());
    assert!(!proxy.capture.with_extension("jsonl.3").exists());
    for file in [&proxy.capture, &rotated] {
        let size = std::fs::metadata(file).unwrap().len();
        assert!(size <= MAX_BYTES, "{}: {size} bytes", file.display());
    }
    let records = captured(&proxy.capture);
    assert_eq!(records.len() as u64, lines(), "no line lost in rotation");
    for i in 0..16 {
        let target = format!("/tienda1/index.jsp?page={i}");
        assert!(
            records.iter().any(|r| r.target == target.as_bytes()),
            "{target}"
        );
    }
    assert_eq!(proxy.shared.metrics.capture.write_errors.get(), 0);
}

#[test]
fn a_capture_file_that_cannot_be_written_fails_no_request() {
    let proxy = unwritable();
    let errors = || proxy.shared.metrics.capture.write_errors.get();
    let before = errors();
    for (method, target, body) in [NORMAL_REQUESTS[0], NORMAL_REQUESTS[7], ATTACK_REQUESTS[1]] {
        let status = send(proxy, method, target, &[], body.map(str::as_bytes));
        assert_eq!(status, 200, "{method} {target}");
    }
    let blocked = "/blocked/x?id=1+UNION+SELECT+password+FROM+usuarios--";
    assert_eq!(send(proxy, "GET", blocked, &[], None), 403);
    wait_for("capture write errors", before + 4, errors);
    assert_eq!(proxy.shared.metrics.capture.lines.get(), 0);
    assert!(!proxy.capture.exists());
    let text = String::from_utf8(proxy.shared.metrics.render()).unwrap();
    assert!(
        text.contains(&format!(
            "patewaf_capture_errors_total{{reason=\"write\"}} {}",
            errors()
        )),
        "{text}"
    );
}
