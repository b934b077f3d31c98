//! `capture`: the JSON-lines capture file of pate-proxy (`capture:` in its configuration), the
//! operator's own traffic as the proxy received and scored it, unlabelled.
//!
//! One JSON object per line (format version 1, written by `proxy/src/capture.rs`; the two are
//! held together by `proxy/tests/capture.rs`, which reads the proxy's file back with this
//! reader):
//!
//! ```json
//! {"capture":1,"time":"2026-11-22T12:34:56.789Z","request_id":"…","client":"10.0.0.7:50312",
//!  "method":"POST","target":"/login?next=%2F","http_version":"HTTP/1.1",
//!  "headers":[["host","shop.example"],["x-raw",{"b64":"/w=="}]],
//!  "body":"user=a&pw=b","body_truncated":false,"score":0.0312,"threshold":0.5,
//!  "verdict":"allow","mode":"detect","bundle_version":"3f9c…","bundle_sha256":"…"}
//! ```
//!
//! `target`, every header value and `body` are a JSON string where the bytes are UTF-8, else
//! `{"b64": "…"}` (standard base64 with padding): lossless either way. `body` is absent (or
//! null) where the proxy read no body. `bundle_version` is null on a line scored with no model
//! loaded. Unknown fields are ignored (later proxies may add some); a `capture` version other
//! than 1 is refused.
use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;

use crate::{lines, origin_form, parse_error, DatasetError, Record};

/// The capture line format this reader reads (`"capture": 1`).
pub const CAPTURE_FORMAT_VERSION: u64 = 1;

/// What a capture file holds: its requests and the bundle versions that scored them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// One record per line, unlabelled, headers and body included.
    pub records: Vec<Record>,
    /// The distinct `bundle_version`s of the lines, in order of first appearance (lines scored
    /// without a model carry none).
    pub bundle_versions: Vec<SeenVersion>,
}

/// A bundle version named in a capture file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenVersion {
    /// The bundle's `model_version`.
    pub version: String,
    /// The 1-based line where it first appears.
    pub first_line: usize,
}

/// Bytes as the proxy writes them: a string (UTF-8) or `{"b64": "…"}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Bytes {
    Text(String),
    Base64 { b64: String },
}

impl Bytes {
    fn into_vec(self) -> Result<Vec<u8>, String> {
        match self {
            Bytes::Text(text) => Ok(text.into_bytes()),
            Bytes::Base64 { b64 } => base64::engine::general_purpose::STANDARD
                .decode(b64.as_bytes())
                .map_err(|e| format!("invalid base64 ({e})")),
        }
    }
}

/// The fields of a line this reader uses.
#[derive(Debug, Deserialize)]
struct Line {
    capture: u64,
    method: String,
    target: Bytes,
    #[serde(default)]
    headers: Vec<(String, Bytes)>,
    #[serde(default)]
    body: Option<Bytes>,
    #[serde(default)]
    bundle_version: Option<String>,
    #[serde(default)]
    client: Option<String>,
}

/// One parsed capture line: the request (with its client's address, without the port) and the
/// bundle version that scored it.
pub(crate) struct CapturedLine {
    pub(crate) record: Record,
    pub(crate) bundle_version: Option<String>,
}

const EXPECTED: &str =
    "a pate-proxy capture line (a JSON object with \"capture\": 1, method, target, headers, body)";

/// Parses one capture line into a record and the line's bundle version.
fn parse_line(
    path: &Path,
    no: usize,
    line: &[u8],
) -> Result<(Record, Option<String>), DatasetError> {
    parse_captured(path, no, line).map(|c| (c.record, c.bundle_version))
}

/// Parses one capture line (see [`CapturedLine`]).
pub(crate) fn parse_captured(
    path: &Path,
    no: usize,
    line: &[u8],
) -> Result<CapturedLine, DatasetError> {
    let bad = |what: String| parse_error(path, no, format!("{EXPECTED}: {what}"), line);
    let parsed: Line = serde_json::from_slice(line).map_err(|e| bad(e.to_string()))?;
    if parsed.capture != CAPTURE_FORMAT_VERSION {
        return Err(bad(format!(
            "capture format version {} is not supported (this build reads {CAPTURE_FORMAT_VERSION})",
            parsed.capture
        )));
    }
    let target = parsed
        .target
        .into_vec()
        .map_err(|e| bad(format!("target: {e}")))?;
    let mut headers = Vec::with_capacity(parsed.headers.len());
    for (name, value) in parsed.headers {
        let value = value
            .into_vec()
            .map_err(|e| bad(format!("header {name:?}: {e}")))?;
        headers.push((name, value));
    }
    let body = match parsed.body {
        Some(b) => Some(b.into_vec().map_err(|e| bad(format!("body: {e}")))?),
        None => None,
    };
    // `ip:port`, `[v6]:port` or a bare address: the client is the address.
    let client = parsed.client.map(|client| match client.rsplit_once(':') {
        Some((addr, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !addr.is_empty() => {
            addr.to_string()
        }
        _ => client,
    });
    let record = Record {
        method: parsed.method,
        target: origin_form(&target).to_vec(),
        body: body.filter(|b| !b.is_empty()),
        headers,
        label: None,
        line: no,
        client,
    };
    Ok(CapturedLine {
        record,
        bundle_version: parsed.bundle_version,
    })
}

/// Parses the bytes of a capture file (blank lines skipped).
pub fn parse_capture(path: &Path, bytes: &[u8]) -> Result<Capture, DatasetError> {
    let mut capture = Capture {
        records: Vec::new(),
        bundle_versions: Vec::new(),
    };
    for (no, line) in lines(bytes) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let (record, version) = parse_line(path, no, line)?;
        if let Some(version) = version {
            if !capture.bundle_versions.iter().any(|s| s.version == version) {
                capture.bundle_versions.push(SeenVersion {
                    version,
                    first_line: no,
                });
            }
        }
        capture.records.push(record);
    }
    Ok(capture)
}

/// Reads a capture file.
pub fn read(path: &Path) -> Result<Capture, DatasetError> {
    let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse_capture(path, &bytes)
}

/// Reads a capture file scored by one bundle: its records and that bundle's version (`None`
/// when no line names one, e.g. an empty file). A line of another version than the first one
/// named is [`DatasetError::CaptureVersion`] (file, line, both versions).
pub fn read_with_version(path: &Path) -> Result<(Vec<Record>, Option<String>), DatasetError> {
    let capture = read(path)?;
    let mut versions = capture.bundle_versions.into_iter();
    let first = versions.next();
    if let (Some(first), Some(other)) = (&first, versions.next()) {
        return Err(version_error(path, &other, &first.version));
    }
    Ok((capture.records, first.map(|s| s.version)))
}

/// Reads a capture file whose every line was scored by bundle version `expected` (lines scored
/// without a model are accepted); the first line of another version is
/// [`DatasetError::CaptureVersion`].
pub fn read_expecting(path: &Path, expected: &str) -> Result<Vec<Record>, DatasetError> {
    let capture = read(path)?;
    // In order of first appearance: the first other version is on the first line that differs.
    match capture
        .bundle_versions
        .iter()
        .find(|s| s.version != expected)
    {
        Some(other) => Err(version_error(path, other, expected)),
        None => Ok(capture.records),
    }
}

fn version_error(path: &Path, found: &SeenVersion, expected: &str) -> DatasetError {
    DatasetError::CaptureVersion {
        path: path.to_owned(),
        line: found.first_line,
        found: found.version.clone(),
        expected: expected.to_string(),
    }
}
