//! The `pate-proxy` binary's process-log flags (issue 44): `-v`/`-q` step the config's
//! `log_level:`, `--log-format json` writes one JSON object per stderr line, and text has no
//! ANSI colour codes when stderr is not a terminal (here a file). Each proxy runs without a
//! model (`start_without_model` with a missing bundle: an error and an info line at start-up)
//! until its admin address answers, then is killed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Writes a config (`extra` appended) to `dir` and returns its path and admin address.
fn config(dir: &Path, extra: &str) -> (std::path::PathBuf, SocketAddr) {
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let yaml = format!(
        "listen: \"127.0.0.1:{}\"\nupstream: \"127.0.0.1:{}\"\nadmin_listen: \"{admin}\"\n\
         bundle: \"{}\"\naudit_log: \"{}\"\n{}threads: 1\n\
         grace_period_seconds: 1\n{extra}",
        free_port(),
        free_port(),
        dir.join("no-such-bundle").display(),
        dir.join("audit.jsonl").display(),
        if extra.contains("start_without_model") {
            ""
        } else {
            "start_without_model: true\n"
        },
    );
    let path = dir.join("proxy.yaml");
    std::fs::write(&path, yaml).unwrap();
    (path, admin)
}

fn live(admin: SocketAddr) -> bool {
    let Ok(mut conn) = TcpStream::connect(admin) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut answer = String::new();
    conn.write_all(b"GET /live HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .is_ok()
        && conn.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

/// Runs `pate-proxy ARGS --config CONFIG` with stderr in a file until its admin address
/// answers (then kills it) or it exits; returns its exit code (`None`: it was running) and
/// its stderr.
fn run(args: &[&str], extra_config: &str) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let (path, admin) = config(tmp.path(), extra_config);
    let stderr = tmp.path().join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pate-proxy"))
        .args(args)
        .arg("--config")
        .arg(&path)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("pate-proxy starts");
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if live(admin) || start.elapsed() > Duration::from_secs(30) {
            // The start-up lines are written before the services start.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (code, std::fs::read_to_string(&stderr).unwrap())
}

const ERROR_LINE: &str = "starting without a model";
const INFO_LINE: &str = "pate-proxy starting";

#[test]
fn text_log_on_stderr_has_no_colour_codes_when_stderr_is_a_file() {
    let (code, stderr) = run(&[], "");
    assert_eq!(code, None, "{stderr}");
    assert!(stderr.contains(ERROR_LINE), "{stderr}");
    assert!(stderr.contains(INFO_LINE), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "ANSI escape in {stderr:?}");
    // The same with the text format named.
    let (_, named) = run(&["--log-format", "text"], "");
    assert!(
        named.contains(INFO_LINE) && !named.contains('\u{1b}'),
        "{named:?}"
    );
}

#[test]
fn quiet_and_verbose_step_the_configured_log_level() {
    // -q: warnings and errors only.
    let (code, stderr) = run(&["-q"], "");
    assert_eq!(code, None, "-q is accepted: {stderr}");
    assert!(stderr.contains(ERROR_LINE), "{stderr}");
    assert!(!stderr.contains(INFO_LINE), "-q hides info: {stderr}");
    // -qq (and the long form): errors only, which still shows the error.
    for args in [&["-qq"][..], &["--quiet", "--quiet"]] {
        let (code, stderr) = run(args, "");
        assert_eq!(code, None, "{args:?}: {stderr}");
        assert!(stderr.contains(ERROR_LINE), "{args:?}: {stderr}");
        assert!(!stderr.contains(INFO_LINE), "{args:?}: {stderr}");
    }
    // -v on `log_level: warn`: one step more, info shows again.
    let (_, warn_only) = run(&[], "log_level: warn\n");
    assert!(!warn_only.contains(INFO_LINE), "{warn_only}");
    let (code, stderr) = run(&["-v"], "log_level: warn\n");
    assert_eq!(code, None, "-v is accepted: {stderr}");
    assert!(stderr.contains(INFO_LINE), "-v shows info: {stderr}");
    // Both at once is a usage error, as for pate-trainer.
    let (code, stderr) = run(&["-v", "-q"], "");
    assert_eq!(code, Some(2), "{stderr}");
}

#[test]
fn json_log_format_writes_one_object_per_line() {
    let (code, stderr) = run(&["--log-format", "json"], "");
    assert_eq!(code, None, "{stderr}");
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let starting = events
        .iter()
        .find(|e| e["message"] == INFO_LINE)
        .unwrap_or_else(|| panic!("no {INFO_LINE:?} event in {stderr}"));
    assert_eq!(starting["level"], "INFO");
    assert_eq!(
        starting["mode"], "detect",
        "fields at the top level: {starting}"
    );
    assert!(starting["timestamp"].is_string(), "{starting}");
    assert!(
        events
            .iter()
            .any(|e| e["level"] == "ERROR"
                && e["message"].as_str().unwrap_or("").contains(ERROR_LINE)),
        "{stderr}"
    );

    // A fatal error after start-up (the bundle is required here) is a JSON line too.
    let (code, stderr) = run(&["--log-format", "json"], "start_without_model: false\n");
    assert_eq!(code, Some(1), "{stderr}");
    for line in stderr.lines() {
        let event: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        assert!(event["level"].is_string(), "{line}");
    }
    assert!(stderr.contains("\"level\":\"ERROR\""), "{stderr}");
}
