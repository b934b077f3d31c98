//! The apache loader on access logs written by a real Apache httpd (common and combined
//! formats, with Apache's own escaping of `"`, `\` and non-printable bytes in the request line).
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use datasets::{load, Format};

const APACHE: &str = "/usr/sbin/apache2";
const MODULES: &str = "/usr/lib/apache2/modules";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn send(port: u16, raw: &[u8]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw).unwrap();
    let mut response = Vec::new();
    let _ = s.read_to_end(&mut response);
    assert!(
        response.starts_with(b"HTTP/1."),
        "no HTTP response to {:?}",
        String::from_utf8_lossy(raw)
    );
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops the server however the test ends.
struct StopOnDrop(std::path::PathBuf);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = Command::new(APACHE)
            .arg("-f")
            .arg(&self.0)
            .args(["-k", "stop"])
            .status();
    }
}

fn count_lines(p: &Path) -> usize {
    std::fs::read(p)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

#[test]
fn loads_logs_written_by_apache() {
    assert!(
        Path::new(APACHE).exists(),
        "{APACHE} is missing: run scripts/setup.sh (installs apache2)"
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let port = free_port();
    std::fs::create_dir(dir.path().join("htdocs")).unwrap();
    let conf = format!(
        r#"ServerRoot "{d}"
ServerName localhost
Listen 127.0.0.1:{port}
LoadModule mpm_event_module {MODULES}/mod_mpm_event.so
LoadModule authz_core_module {MODULES}/mod_authz_core.so
DefaultRuntimeDir "{d}"
PidFile "{d}/httpd.pid"
Mutex file:{d} default
ErrorLog "{d}/error.log"
DocumentRoot "{d}/htdocs"
<Directory "{d}/htdocs">
    Require all granted
</Directory>
LogFormat "%h %l %u %t \"%r\" %>s %b \"%{{Referer}}i\" \"%{{User-Agent}}i\"" combined
LogFormat "%h %l %u %t \"%r\" %>s %b" common
CustomLog "{d}/combined.log" combined
CustomLog "{d}/common.log" common
"#
    );
    let conf_path = dir.path().join("httpd.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let status = Command::new(APACHE)
        .arg("-f")
        .arg(&conf_path)
        .args(["-k", "start"])
        .status()
        .unwrap();
    assert!(
        status.success(),
        "apache2 did not start: {}",
        std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
    );
    let server = StopOnDrop(conf_path.clone());
    wait_until("apache to listen", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    // The probe connection above may or may not be logged (as a 408 without a request line);
    // the loader skips such entries either way.

    let requests: [&[u8]; 5] = [
        b"GET /tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&B1=A%F1adir HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test \"agent\"\r\nConnection: close\r\n\r\n",
        b"POST /tienda1/publico/autenticar.jsp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\nConnection: close\r\n\r\nlogin=a",
        b"GET /q?x=\"1\"&y=a\\b HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        b"GET /raw/\xff\xfe?z=1 HTTP/1.0\r\n\r\n",
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\r\n\r\n",
    ];
    for r in requests {
        send(port, r);
    }
    let combined = dir.path().join("combined.log");
    let common = dir.path().join("common.log");
    wait_until("the access logs", || {
        count_lines(&combined) >= 5 && count_lines(&common) >= 5
    });
    drop(server);

    let expected: Vec<(&str, &[u8])> = vec![
        (
            "GET",
            b"/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&B1=A%F1adir",
        ),
        ("POST", b"/tienda1/publico/autenticar.jsp"),
        ("GET", b"/q?x=\"1\"&y=a\\b"),
        ("GET", b"/raw/\xff\xfe?z=1"),
    ];
    for log in [&combined, &common] {
        let text = String::from_utf8_lossy(&std::fs::read(log).unwrap()).into_owned();
        let records = load(Format::Apache, log).unwrap();
        let got: Vec<(&str, &[u8])> = records
            .iter()
            .map(|r| (r.method.as_str(), &r.target[..]))
            .collect();
        assert_eq!(got, expected, "{}:\n{text}", log.display());
        assert!(records
            .iter()
            .all(|r| r.label.is_none() && r.body.is_none()));
        // The combined log's User-Agent (the first request's, quote escaped by Apache) is a
        // header; the common log has none.
        let agents: Vec<&[u8]> = records
            .iter()
            .flat_map(|r| &r.headers)
            .filter(|(n, _)| n == "User-Agent")
            .map(|(_, v)| &v[..])
            .collect();
        if log == &combined {
            assert_eq!(agents, vec![&b"test \"agent\""[..]], "{text}");
        } else {
            assert!(records.iter().all(|r| r.headers.is_empty()), "{text}");
        }
        // Apache escaped the quote and the raw bytes, so the loader really undid escapes.
        assert!(
            text.contains(r#"/q?x=\"1\"&y=a\\b"#) && text.contains(r"/raw/\xff\xfe"),
            "{text}"
        );
    }
}
