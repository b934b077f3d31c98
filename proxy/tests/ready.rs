//! `/ready` and `patewaf_ready` wait for the proxy's listener (issue 44): a proxy whose listen
//! address is still held by another socket loads its model and serves its admin address, but
//! is not ready until pingora has bound the address (it retries every second while the address
//! is in use); then it is.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use proxy::Config;
use test_support::write_fixture_bundle;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `GET path` on `addr`: status and body, or `None` while nothing answers there.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut conn = TcpStream::connect(addr).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    conn.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .ok()?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer).ok()?;
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// The value of the sample `name` in the exposition at `admin`.
fn metric(admin: SocketAddr, name: &str) -> f64 {
    let (_, text) = get(admin, "/metrics").expect("the admin address answers");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in\n{text}"))
}

/// Polls `f` every 50 ms for at most `limit` (a readiness poll, not a timing assertion).
fn eventually<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn not_ready_while_the_listen_address_is_taken_ready_once_bound() {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ready-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    write_fixture_bundle(&dir.join("bundle"), None, 0.5, "v1").expect("fixture bundle");
    // Another process's socket on the proxy's address (listening: pingora cannot bind it).
    let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = squatter.local_addr().unwrap();
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let yaml = format!(
        "listen: \"{listen}\"\nupstream: \"127.0.0.1:{}\"\nadmin_listen: \"{admin}\"\n\
         bundle: \"{}\"\naudit_log: \"{}\"\nthreads: 1\ngrace_period_seconds: 1\n",
        free_port(),
        dir.join("bundle").display(),
        dir.join("audit.jsonl").display(),
    );
    let config = Config::from_yaml(&yaml, &dir.join("proxy.yaml")).unwrap();
    let shared = proxy::server::load(config).expect("ONNX Runtime and the bundle load");
    let server = proxy::server::build(shared.clone(), false).expect("the server builds");
    std::thread::spawn(move || server.run(pingora::server::RunArgs::default()));

    let (status, body) = eventually(Duration::from_secs(10), || get(admin, "/ready"))
        .expect("the admin address answers");
    assert!(shared.model().is_some(), "the model is loaded");
    assert_eq!(status, 503, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["ready"], false);
    assert_eq!(body["listening"], false);
    assert_eq!(body["model_version"], "v1");
    assert_eq!(metric(admin, "patewaf_ready"), 0.0);
    // Still not ready after pingora's next bind attempts (one a second).
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(get(admin, "/ready").map(|(s, _)| s), Some(503));
    assert!(!shared.is_ready());

    // The address is free: pingora binds it at its next try, and only then is the proxy ready.
    drop(squatter);
    let (status, body) = eventually(Duration::from_secs(15), || {
        get(admin, "/ready").filter(|(s, _)| *s == 200)
    })
    .expect("ready once the listener is bound");
    assert_eq!(status, 200);
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["ready"], true);
    assert_eq!(body["model_version"], "v1");
    assert_eq!(metric(admin, "patewaf_ready"), 1.0);
    // And the proxy answers on its address (the upstream is down: 502).
    assert_eq!(get(listen, "/tienda1/index.jsp").map(|(s, _)| s), Some(502));
}
