//! The `capture` format (pate-proxy's capture file): bytes read back losslessly, errors naming
//! file and line, and the bundle-version checks a caller uses to refuse another bundle's capture.
use std::path::{Path, PathBuf};

use datasets::capture::{read, read_expecting, read_with_version};
use datasets::{load, DatasetError, Format};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// One capture line as pate-proxy writes it, with `version` and `target`.
fn line(version: &str, target: &str) -> String {
    format!(
        "{{\"capture\":1,\"time\":\"2026-11-22T12:34:56.789Z\",\"request_id\":\"a-1\",\
         \"client\":\"127.0.0.1:5\",\"method\":\"GET\",\"target\":\"{target}\",\
         \"http_version\":\"HTTP/1.1\",\"headers\":[[\"host\",\"shop.test\"]],\
         \"score\":0.1,\"threshold\":0.5,\"verdict\":\"allow\",\"mode\":\"detect\",\
         \"bundle_version\":\"{version}\",\"bundle_sha256\":\"00\"}}\n"
    )
}

#[test]
fn capture_lines_read_back_headers_body_and_base64_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\n{}",
        line("v1", "/a?b=1"),
        r#"{"capture":1,"method":"POST","target":{"b64":"L3g/bj3p"},"headers":[["host","shop.test"],["x-raw",{"b64":"/wA="}]],"body":"id=3&x=%27","body_truncated":false,"score":null,"verdict":"error","bundle_version":null,"future_field":[1]}"#
    );
    let path = write(dir.path(), "capture.jsonl", &text);
    let capture = read(&path).unwrap();
    let r = &capture.records;
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].method.as_str(), &r[0].target[..]),
        ("GET", &b"/a?b=1"[..])
    );
    assert_eq!(
        r[0].headers,
        vec![("host".to_string(), b"shop.test".to_vec())]
    );
    assert_eq!(
        (r[0].body.as_deref(), r[0].label, r[0].line),
        (None, None, 1)
    );
    assert_eq!(r[1].target, b"/x?n=\xe9", "base64 target decoded");
    assert_eq!(r[1].headers[1], ("x-raw".to_string(), vec![0xff, 0x00]));
    assert_eq!(r[1].body.as_deref(), Some(&b"id=3&x=%27"[..]));
    assert_eq!(r[1].line, 3, "the blank line is skipped but counted");
    // The client is the address without its port; a line without one has none.
    assert_eq!(
        (r[0].client.as_deref(), r[1].client.as_deref()),
        (Some("127.0.0.1"), None)
    );
    assert_eq!(capture.bundle_versions.len(), 1);
    assert_eq!(capture.bundle_versions[0].version, "v1");
    // The generic loader gives the same records.
    assert_eq!(load(Format::Capture, &path).unwrap(), capture.records);
    assert_eq!("capture".parse::<Format>().unwrap(), Format::Capture);
}

#[test]
fn a_malformed_capture_line_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    for (bad, says) in [
        ("not json", "capture line"),
        (r#"{"capture":1,"target":"/x"}"#, "method"),
        (
            r#"{"capture":2,"method":"GET","target":"/x"}"#,
            "capture format version 2",
        ),
        (
            r#"{"capture":1,"method":"GET","target":{"b64":"***"}}"#,
            "base64",
        ),
        (
            r#"{"capture":1,"method":"GET","target":"/","headers":[["a",{"b64":"%"}]]}"#,
            "header \"a\"",
        ),
    ] {
        let path = write(
            dir.path(),
            "bad.jsonl",
            &format!("{}{bad}\n", line("v1", "/")),
        );
        let err = read(&path).unwrap_err();
        let msg = err.to_string();
        match err {
            DatasetError::Parse { path: p, line, .. } => {
                assert_eq!((p, line), (path.clone(), 2), "{msg}");
            }
            other => panic!("expected a parse error, got {other}"),
        }
        assert!(
            msg.contains("bad.jsonl:2:") && msg.contains(says),
            "{bad}: {msg}"
        );
    }
}

#[test]
fn another_bundle_versions_capture_is_refused_with_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let one = write(
        dir.path(),
        "one.jsonl",
        &(line("v1", "/a") + &line("v1", "/b")),
    );
    let (records, version) = read_with_version(&one).unwrap();
    assert_eq!((records.len(), version.as_deref()), (2, Some("v1")));
    assert_eq!(read_expecting(&one, "v1").unwrap().len(), 2);

    let err = read_expecting(&one, "v2").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1: capture from bundle version \"v1\", expected \"v2\"",
            one.display()
        )
    );
    assert!(matches!(err, DatasetError::CaptureVersion { line: 1, .. }));

    let mixed = write(
        dir.path(),
        "mixed.jsonl",
        &(line("v1", "/a") + &line("v1", "/b") + &line("v2", "/c")),
    );
    match read_with_version(&mixed).unwrap_err() {
        DatasetError::CaptureVersion {
            path,
            line,
            found,
            expected,
        } => assert_eq!(
            (path, line, found.as_str(), expected.as_str()),
            (mixed, 3, "v2", "v1")
        ),
        other => panic!("expected a version error, got {other}"),
    }
    let empty = write(dir.path(), "empty.jsonl", "");
    assert_eq!(read_with_version(&empty).unwrap(), (Vec::new(), None));
}
