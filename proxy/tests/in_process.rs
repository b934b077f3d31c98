//! The request path in process, without Apache (pingora's own `server_utils.rs` pattern): the
//! pate-proxy server (`server::load` + `server::build`, the same services `pate-proxy` runs, with
//! ONNX Runtime scoring the fixture bundle of `test_support`) runs on a thread of its own in
//! front of a tokio upstream on a free port that records every request it receives. Raw HTTP/1.1
//! requests check the answer, what reached the upstream and `patewaf_requests_total{verdict}`.
//!
//! One server serves every test of this file; the tests take turns ([`serial`]) so that each
//! can assert exact counter deltas.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use proxy::state::Shared;
use proxy::{Config, Mode};
use test_support::{write_fixture_bundle, ATTACK_REQUESTS, NORMAL_REQUESTS};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A request the upstream received: target and body.
type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

struct Harness {
    shared: Arc<Shared>,
    listen: SocketAddr,
    seen: Seen,
}

/// A port nothing listens on now (the OS picks it; the listener is closed at once), never the
/// same one twice in this process (the kernel may hand a released port out again, and `listen`
/// and `admin_listen` must differ).
fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
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

/// The upstream: a tokio server that records each request (head parsed for its target and
/// `Content-Length`, then the body) and answers `200 upstream`, one request per connection.
fn start_upstream() -> (SocketAddr, Seen) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the upstream");
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let (mut conn, _) = listener.accept().await.unwrap();
                let record = record.clone();
                tokio::spawn(async move {
                    let mut data = Vec::new();
                    let mut buf = [0u8; 4096];
                    let head_end = loop {
                        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => data.extend_from_slice(&buf[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
                    let target = head.split(' ').nth(1).unwrap_or_default().to_string();
                    let length = head
                        .lines()
                        .find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case("content-length")
                                .then(|| value.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    while data.len() < head_end + length {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => data.extend_from_slice(&buf[..n]),
                        }
                    }
                    record
                        .lock()
                        .unwrap()
                        .push((target, data[head_end..].to_vec()));
                    let _ = conn
                        .write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nupstream",
                        )
                        .await;
                });
            }
        });
    });
    (addr, seen)
}

/// Block mode (header fields at most 20 and 2 KiB), except a detect route for the page of `ATTACK_REQUESTS[1]`; small protocol limits
/// and client timeouts (1 s for a head, 1 s for a scored body) so that refusals are cheap to
/// provoke. Every other test sends its whole request in one write right after connecting.
fn config(dir: &Path, upstream: SocketAddr) -> Config {
    let yaml = format!(
        "listen: \"127.0.0.1:{}\"\nupstream: \"{upstream}\"\nadmin_listen: \"127.0.0.1:{}\"\n\
         bundle: \"{}\"\nmode: block\naudit_log: \"{}\"\nthreads: 1\n\
         uri_limit_bytes: 512\nheader_count_limit: 20\nheader_limit_bytes: 2048\nbody_limit_bytes: 256\nbody_over_limit: reject\n\
         client_header_timeout_ms: 1000\nclient_body_timeout_ms: 1000\n\
         routes:\n  - path: \"/tienda1/publico/caracteristicas.jsp\"\n    mode: detect\n",
        free_port(),
        free_port(),
        dir.join("bundle").display(),
        dir.join("audit.jsonl").display(),
    );
    Config::from_yaml(&yaml, &dir.join("proxy.yaml")).expect("the test config parses")
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("in_process-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_fixture_bundle(&dir.join("bundle"), None, 0.5, "v1").expect("fixture bundle");
        let (upstream, seen) = start_upstream();
        let config = config(&dir, upstream);
        assert_eq!(config.mode, Mode::Block);
        let listen = config.listen;
        let shared = proxy::server::load(config).expect("ONNX Runtime and the bundle load");
        let server = proxy::server::build(shared.clone(), false).expect("the server builds");
        std::thread::spawn(move || server.run(pingora::server::RunArgs::default()));
        // Readiness poll (not a timing assertion): the listener is up within a few seconds.
        let up = (0..200).any(|_| {
            TcpStream::connect(listen).is_ok() || {
                std::thread::sleep(Duration::from_millis(50));
                false
            }
        });
        assert!(up, "the proxy listens on {listen}");
        Harness {
            shared,
            listen,
            seen,
        }
    })
}

/// Sends one raw HTTP/1.1 request (`Connection: close`) and returns the status and body.
fn send(
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> (u16, Vec<u8>) {
    let mut request =
        format!("{method} {target} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    send_raw(&bytes, b"")
}

/// Sends `bytes` at once, then `trickle` one byte every 100 ms (from a thread of its own, until
/// the proxy closes the connection), and returns the status and body of the answer.
fn send_raw(bytes: &[u8], trickle: &'static [u8]) -> (u16, Vec<u8>) {
    let mut conn = TcpStream::connect(harness().listen).expect("connect to the proxy");
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    conn.write_all(bytes).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let mut conn = conn.try_clone().unwrap();
        let done = done.clone();
        std::thread::spawn(move || {
            for byte in trickle {
                std::thread::sleep(Duration::from_millis(100));
                if done.load(std::sync::atomic::Ordering::Relaxed)
                    || conn.write_all(&[*byte]).is_err()
                {
                    break;
                }
            }
        })
    };
    let mut answer = Vec::new();
    // The proxy may close after a refusal before reading the whole request; what it answered
    // before that is what counts.
    let _ = conn.read_to_end(&mut answer);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or(Vec::new(), |(_, b)| b.as_bytes().to_vec());
    (status, body)
}

/// Held for the whole of a test: counters move only by that test's requests.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn malformed(reason: &str) -> u64 {
    harness()
        .shared
        .metrics
        .malformed
        .with_label_values(&[reason])
        .get()
}

fn count(verdict: &str) -> u64 {
    harness()
        .shared
        .metrics
        .requests
        .with_label_values(&[verdict])
        .get()
}

fn upstream_saw(target: &str) -> Option<Vec<u8>> {
    harness()
        .seen
        .lock()
        .unwrap()
        .iter()
        .find(|(t, _)| t == target)
        .map(|(_, body)| body.clone())
}

#[test]
fn block_mode_forwards_normal_traffic_and_answers_attacks_403_without_the_upstream() {
    let _turn = serial();
    let (allow, block) = (count("allow"), count("block"));

    let (_, normal_get, _) = NORMAL_REQUESTS[3];
    let (status, body) = send("GET", normal_get, &[], None);
    assert_eq!((status, body.as_slice()), (200, &b"upstream"[..]));
    assert_eq!(upstream_saw(normal_get), Some(Vec::new()));

    let (_, post_target, Some(post_body)) = NORMAL_REQUESTS[7] else {
        panic!("NORMAL_REQUESTS[7] is a POST")
    };
    let (status, _) = send("POST", post_target, &[], Some(post_body.as_bytes()));
    assert_eq!(status, 200);
    assert_eq!(
        upstream_saw(post_target).as_deref(),
        Some(post_body.as_bytes()),
        "the scored body reaches the upstream whole"
    );

    for attack in [ATTACK_REQUESTS[0].1, ATTACK_REQUESTS[3].1] {
        let (status, body) = send("GET", attack, &[], None);
        assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
        assert_eq!(
            upstream_saw(attack),
            None,
            "a blocked request never reaches the upstream"
        );
    }
    assert_eq!(count("allow") - allow, 2);
    assert_eq!(count("block") - block, 2);
}

#[test]
fn a_detect_route_forwards_an_attack_and_counts_it_as_flag() {
    let _turn = serial();
    let (flag, block) = (count("flag"), count("block"));
    let (_, attack, _) = ATTACK_REQUESTS[1];
    assert!(attack.starts_with("/tienda1/publico/caracteristicas.jsp?"));
    let (status, body) = send("GET", attack, &[], None);
    assert_eq!((status, body.as_slice()), (200, &b"upstream"[..]));
    assert!(upstream_saw(attack).is_some(), "detect forwards");
    assert_eq!(count("flag") - flag, 1);
    assert_eq!(count("block"), block);
}

#[test]
fn protocol_limit_refusals_are_counted_as_refused_not_block() {
    let _turn = serial();
    let (refused, block) = (count("refused"), count("block"));
    let long = format!("/tienda1/index.jsp?q={}", "a".repeat(600));
    assert_eq!(send("GET", &long, &[], None).0, 414);
    let many: Vec<(String, String)> = (0..30)
        .map(|i| (format!("X-Extra-{i}"), "1".to_string()))
        .collect();
    let crowded = "/tienda1/global/menum.jsp?crowded=1";
    assert_eq!(send("GET", crowded, &many, None).0, 431);
    let big = format!("id=3&nombre={}", "a".repeat(1000));
    let post = "/tienda1/publico/anadir.jsp?big=1";
    assert_eq!(send("POST", post, &[], Some(big.as_bytes())).0, 413);
    for target in [long.as_str(), crowded, post] {
        assert_eq!(
            upstream_saw(target),
            None,
            "{target} was refused before the upstream"
        );
    }
    assert_eq!(count("refused") - refused, 3);
    assert_eq!(count("block"), block, "a refusal is not a model block");
}

/// 300 bytes of a header value: trickled a byte every 100 ms, 30 s, far past any deadline here.
const SLOW: &[u8] = b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";

#[test]
fn a_head_slower_than_client_header_timeout_is_answered_408_and_counted_refused() {
    let _turn = serial();
    let (refused, block, allow) = (count("refused"), count("block"), count("allow"));
    // Each read is quick (a byte every 100 ms), the head as a whole is not.
    let target = "/tienda1/global/menum.jsp?slow=head";
    let head = format!("GET {target} HTTP/1.1\r\nHost: shop.test\r\nX-Slow: ");
    let (status, body) = send_raw(head.as_bytes(), SLOW);
    assert_eq!(status, 408, "{}", String::from_utf8_lossy(&body));
    assert_eq!(upstream_saw(target), None);
    assert_eq!(count("refused") - refused, 1);
    assert_eq!(count("block"), block, "a refusal is not a model block");

    // A connection that sends nothing carried no request: closed at the deadline, no answer,
    // not counted.
    let mut idle = TcpStream::connect(harness().listen).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut answer = Vec::new();
    let _ = idle.read_to_end(&mut answer);
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    assert_eq!(count("refused") - refused, 1);
    assert_eq!(count("allow"), allow);
}

#[test]
fn a_body_slower_than_client_body_timeout_is_answered_408_and_counted_refused() {
    let _turn = serial();
    let (refused, block) = (count("refused"), count("block"));
    let target = "/tienda1/publico/anadir.jsp?slow=body";
    let head = format!(
        "POST {target} HTTP/1.1\r\nHost: shop.test\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: 200\r\nConnection: close\r\n\r\nid=3&nombre="
    );
    let (status, body) = send_raw(head.as_bytes(), &SLOW[..180]);
    assert_eq!(status, 408, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        upstream_saw(target),
        None,
        "a timed-out body is not forwarded"
    );
    assert_eq!(count("refused") - refused, 1);
    assert_eq!(count("block"), block, "a refusal is not a model block");
}

#[test]
fn malformed_heads_are_answered_400_and_counted_refused_with_their_reason() {
    let _turn = serial();
    let cases: &[(&str, &[u8])] = &[
        (
            "target_space",
            b"GET /tienda1/index.jsp?q=1 union select password from users HTTP/1.1\r\nHost: a\r\n\r\n",
        ),
        ("request_line", b"GET /tienda1/index.jsp?v=0.9\r\n\r\n"),
        ("request_line", b"GET /tienda1/index.jsp?v=2 HTTP/2.0\r\nHost: a\r\n\r\n"),
        (
            "header_syntax",
            b"GET /tienda1/index.jsp?h=1 HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n",
        ),
        ("bare_lf", b"GET /tienda1/index.jsp?lf=1 HTTP/1.1\nHost: a\n\n"),
        (
            "cl_and_te",
            b"POST /tienda1/index.jsp?te=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
    ];
    let (refused, block, allow) = (count("refused"), count("block"), count("allow"));
    let before: Vec<u64> = cases.iter().map(|(why, _)| malformed(why)).collect();
    let forwarded = harness().seen.lock().unwrap().len();
    for (why, request) in cases {
        let (status, body) = send_raw(request, b"");
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 400, "{why}: {body}");
        assert!(
            body.contains(why),
            "{why}: the answer names the reason: {body}"
        );
    }
    for ((why, _), before) in cases.iter().zip(before) {
        let same = cases.iter().filter(|(w, _)| w == why).count() as u64;
        assert_eq!(malformed(why) - before, same, "{why}");
    }
    assert_eq!(
        harness().seen.lock().unwrap().len(),
        forwarded,
        "a malformed head never reaches the upstream"
    );
    assert_eq!(count("refused") - refused, cases.len() as u64);
    assert_eq!(count("block"), block, "a refusal is not a model block");
    assert_eq!(count("allow"), allow);
}

/// The audit lines written so far whose target starts with `prefix`.
fn audit_lines(prefix: &str) -> Vec<serde_json::Value> {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("in_process-{}", std::process::id()))
        .join("audit.jsonl");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["target"].as_str().is_some_and(|t| t.starts_with(prefix)))
        .collect()
}

fn unscored(why: proxy::verdict::Unscored) -> u64 {
    harness().shared.metrics.unscored(why)
}

/// A request the proxy cannot score: why, block mode's status, its target, and the answer.
type Unscorable = (proxy::verdict::Unscored, u16, String, (u16, Vec<u8>));

/// One request of each kind the proxy cannot score (issue 44): a target over `uri_limit_bytes`,
/// more header fields than `header_count_limit`, more header bytes than `header_limit_bytes`, a
/// `br` body; `page` is the path, `tag` marks the query.
fn unscorable(page: &str, tag: &str) -> Vec<Unscorable> {
    use proxy::verdict::Unscored;
    let long = format!("{page}?{tag}=uri&q={}", "a".repeat(600));
    let long_answer = send("GET", &long, &[], None);
    let many: Vec<(String, String)> = (0..30)
        .map(|i| (format!("X-Extra-{i}"), "1".to_string()))
        .collect();
    let crowded = format!("{page}?{tag}=headers");
    let crowded_answer = send("GET", &crowded, &many, None);
    let large = vec![("X-Large".to_string(), "b".repeat(3000))];
    let heavy = format!("{page}?{tag}=bytes");
    let heavy_answer = send("GET", &heavy, &large, None);
    let br = vec![("Content-Encoding".to_string(), "br".to_string())];
    let brotli = format!("{page}?{tag}=br");
    let brotli_answer = send("POST", &brotli, &br, Some(b"\x0b\x02\x80id=3\x03"));
    vec![
        (Unscored::UriTooLong, 414, long, long_answer),
        (Unscored::TooManyHeaders, 431, crowded, crowded_answer),
        (Unscored::HeadersTooLarge, 431, heavy, heavy_answer),
        (Unscored::UnsupportedEncoding, 415, brotli, brotli_answer),
    ]
}

#[test]
fn detect_mode_forwards_what_it_cannot_score_and_counts_it_block_mode_refuses_it() {
    use proxy::verdict::Unscored;
    let _turn = serial();
    let (refused, unscored_total) = (count("refused"), count("unscored"));
    let before: Vec<u64> = Unscored::ALL.iter().map(|w| unscored(*w)).collect();

    // The detect route: each one forwarded whole, counted by reason, audited as `unscored`.
    let detect_page = "/tienda1/publico/caracteristicas.jsp";
    for (why, _, target, (status, body)) in unscorable(detect_page, "unscored") {
        let what = why.as_str();
        assert_eq!(
            (status, body.as_slice()),
            (200, &b"upstream"[..]),
            "{what}: detect mode forwards it"
        );
        let seen = upstream_saw(&target);
        assert!(seen.is_some(), "{what}: the upstream received it");
        if why == Unscored::UnsupportedEncoding {
            assert_eq!(seen.unwrap(), b"\x0b\x02\x80id=3\x03", "the body as sent");
        }
        let lines = audit_lines(&target[..target.len().min(60)]);
        assert_eq!(lines.len(), 1, "{what}: one audit line: {lines:?}");
        assert_eq!(lines[0]["verdict"], "unscored", "{what}");
        assert_eq!(lines[0]["mode"], "detect", "{what}");
        assert!(lines[0]["score"].is_null(), "{what}");
        let reason = lines[0]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(&format!("{what}: ")),
            "{what}: audit reason {reason}"
        );
    }
    for (why, before) in Unscored::ALL.iter().zip(&before) {
        assert_eq!(unscored(*why) - before, 1, "{}", why.as_str());
    }
    assert_eq!(count("unscored") - unscored_total, 4);
    assert_eq!(count("refused"), refused, "detect mode refused nothing");

    // Block mode: the same requests refused as before, never forwarded, not counted unscored.
    for (why, refusal, target, (status, body)) in
        unscorable("/tienda1/publico/anadir.jsp", "refused")
    {
        let what = why.as_str();
        assert_eq!(
            status,
            refusal,
            "{what}: {}",
            String::from_utf8_lossy(&body)
        );
        assert_eq!(upstream_saw(&target), None, "{what}: not forwarded");
        let lines = audit_lines(&target[..target.len().min(60)]);
        assert_eq!(lines.len(), 1, "{what}: {lines:?}");
        assert_eq!(lines[0]["verdict"], "refused", "{what}");
    }
    for (why, before) in Unscored::ALL.iter().zip(&before) {
        assert_eq!(unscored(*why) - before, 1, "{}: block mode", why.as_str());
    }
    assert_eq!(count("refused") - refused, 4);
}

/// A blocked `UNION SELECT` leaves an audit line that explains the score: no `top_tokens`, the
/// SQL tokens that contributed most, placed in the query parameter `id` with a snippet of its
/// decoded value, each line valid JSON of bounded size.
#[test]
fn the_audit_line_of_a_blocked_union_select_explains_it_by_its_parameter() {
    let _turn = serial();
    let target = "/tienda1/publico/productos.jsp?id=7+UNION+SELECT+password+FROM+usuarios--";
    let (status, _) = send("GET", target, &[], None);
    assert_eq!(status, 403);
    let lines = audit_lines(target);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert!(line.get("top_tokens").is_none(), "{line}");
    let explanation = &line["explanation"];
    assert_eq!(explanation["model"], "student", "{line}");
    let top = explanation["top"].as_array().unwrap();
    assert!(!top.is_empty() && top.len() <= 5, "{line}");
    let features: Vec<&str> = top.iter().filter_map(|c| c["feature"].as_str()).collect();
    assert!(
        features.contains(&"union") && features.contains(&"select"),
        "{line}"
    );
    for c in top {
        assert_eq!(
            (c["placement"].as_str(), c["name"].as_str()),
            (Some("query"), Some("id"))
        );
        let snippet = c["snippet"].as_str().unwrap();
        assert!(
            snippet.contains("union select") && snippet.chars().count() <= 64,
            "{c}"
        );
    }
}
