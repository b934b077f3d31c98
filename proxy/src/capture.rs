//! The capture file (`capture:`): every scored request appended as one JSON line, the
//! operator's own traffic for training a bundle for the site (`pate-trainer run --public FILE
//! --public-format capture`, read by `datasets::capture`).
//!
//! The request path never waits for the file: it hands an [`Entry`] to a bounded queue
//! (`try_send`; a full queue drops the entry and counts it) and one writer thread serializes,
//! writes and rotates. A file that cannot be opened, rotated or written loses the line, counts
//! it in `patewaf_capture_errors_total{reason="write"}` and logs (at most once a minute); the
//! next line tries again. Each line is one `write` on an `O_APPEND` file created with mode 0600
//! (it holds cookies and personal data); a failed write is cut back off the file, so the file
//! never holds half a line. Rotation is by rename: `PATH.(N-1)` → `PATH.N` (the oldest dropped),
//! ..., `PATH` → `PATH.1`, then a new `PATH`.
//!
//! Line format version 1 (see `datasets/src/capture.rs`, which reads it): `capture` (1),
//! `time`, `request_id`, `client`, `method`, `target`, `http_version`, `headers` (`[name,
//! value]` pairs, names lowercase), `body` (absent where no body was read), `body_truncated`,
//! `score` (null when scoring failed), `threshold`, `verdict`, `mode`, `bundle_version`,
//! `bundle_sha256` (null with no model loaded). Bytes (`target`, header values, `body`) are a
//! JSON string where they are UTF-8, else `{"b64": "…"}` (standard base64).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Serialize;

use crate::config::CaptureConfig;
use crate::error::ProxyError;
use crate::metrics::CaptureMetrics;

/// Entries waiting for the writer; beyond this the request path drops them (counted).
const QUEUE: usize = 1024;

/// How often a failing file is logged (every failure is counted).
const LOG_EVERY: Duration = Duration::from_secs(60);

/// One scored request, as the request path hands it to the writer.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// RFC 3339 UTC time with milliseconds.
    pub time: String,
    /// The request's id (`X-Request-Id`, audit log).
    pub request_id: String,
    /// Client IP and port (empty when unknown).
    pub client: String,
    /// HTTP method.
    pub method: String,
    /// Path and query as sent.
    pub target: Vec<u8>,
    /// `HTTP/1.1` or `HTTP/1.0`.
    pub http_version: &'static str,
    /// Every header field as received (names lowercase), in the order pingora keeps them.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body that was scored, cut to `body_max_bytes`; `None` when no body was read.
    pub body: Option<Vec<u8>>,
    /// Whether `body` was cut.
    pub body_truncated: bool,
    /// The active model's score; `None` when scoring failed.
    pub score: Option<f32>,
    /// The threshold the score was judged at.
    pub threshold: Option<f32>,
    /// `allow`, `block`, `flag` or `error`.
    pub verdict: &'static str,
    /// The mode in force for the request.
    pub mode: &'static str,
    /// The serving bundle's `model_version` (`None`: no model loaded).
    pub bundle_version: Option<String>,
    /// The serving bundle's digest ([`crate::model::files_digest`]).
    pub bundle_sha256: Option<String>,
}

/// Bytes on a line: a string where they are UTF-8, else `{"b64": "…"}`.
#[derive(Serialize)]
#[serde(untagged)]
enum LineBytes<'a> {
    Text(&'a str),
    Base64 { b64: String },
}

impl<'a> From<&'a [u8]> for LineBytes<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) => LineBytes::Text(text),
            Err(_) => LineBytes::Base64 {
                b64: base64::engine::general_purpose::STANDARD.encode(bytes),
            },
        }
    }
}

/// One line of the file (format version 1).
#[derive(Serialize)]
struct Line<'a> {
    capture: u32,
    time: &'a str,
    request_id: &'a str,
    client: &'a str,
    method: &'a str,
    target: LineBytes<'a>,
    http_version: &'a str,
    headers: Vec<(&'a str, LineBytes<'a>)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<LineBytes<'a>>,
    body_truncated: bool,
    score: Option<f32>,
    threshold: Option<f32>,
    verdict: &'a str,
    mode: &'a str,
    bundle_version: Option<&'a str>,
    bundle_sha256: Option<&'a str>,
}

impl Entry {
    /// The entry as one JSON line, newline included.
    pub fn to_line(&self) -> Vec<u8> {
        let line = Line {
            capture: 1,
            time: &self.time,
            request_id: &self.request_id,
            client: &self.client,
            method: &self.method,
            target: LineBytes::from(self.target.as_slice()),
            http_version: self.http_version,
            headers: self
                .headers
                .iter()
                .map(|(name, value)| (name.as_str(), LineBytes::from(value.as_slice())))
                .collect(),
            body: self.body.as_deref().map(LineBytes::from),
            body_truncated: self.body_truncated,
            score: self.score.filter(|s| s.is_finite()),
            threshold: self.threshold.filter(|t| t.is_finite()),
            verdict: self.verdict,
            mode: self.mode,
            bundle_version: self.bundle_version.as_deref(),
            bundle_sha256: self.bundle_sha256.as_deref(),
        };
        // Strings, numbers (finite), booleans and sequences only: serializing cannot fail.
        let mut out = serde_json::to_vec(&line).unwrap_or_default();
        out.push(b'\n');
        out
    }
}

/// The request path's handle on the capture file.
pub struct Capture {
    queue: SyncSender<Entry>,
    body_max_bytes: usize,
    metrics: CaptureMetrics,
}

impl Capture {
    /// Starts the writer thread for `config`. The file is opened by the writer (a file that
    /// cannot be opened is counted per line, never an error here).
    pub fn start(config: &CaptureConfig, metrics: CaptureMetrics) -> Result<Self, ProxyError> {
        let (queue, entries) = sync_channel(QUEUE);
        let writer = Writer {
            path: config.path.clone(),
            max_bytes: config.max_bytes,
            max_files: config.max_files,
            file: None,
            size: 0,
            metrics: metrics.clone(),
            last_logged: None,
        };
        std::thread::Builder::new()
            .name("pate-proxy capture".to_string())
            .spawn(move || writer.run(entries))
            .map_err(|e| ProxyError::Server(format!("capture writer thread: {e}")))?;
        Ok(Self {
            queue,
            body_max_bytes: config.body_max_bytes,
            metrics,
        })
    }

    /// `body` cut to `body_max_bytes`, and whether it was cut.
    pub fn cut_body(&self, body: Option<&[u8]>) -> (Option<Vec<u8>>, bool) {
        match body {
            Some(b) if b.len() > self.body_max_bytes => {
                (Some(b[..self.body_max_bytes].to_vec()), true)
            }
            Some(b) => (Some(b.to_vec()), false),
            None => (None, false),
        }
    }

    /// Queues `entry` for the writer; never waits (a full queue drops it, counted).
    pub fn record(&self, entry: Entry) {
        match self.queue.try_send(entry) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.metrics.dropped.inc(),
            Err(TrySendError::Disconnected(_)) => self.metrics.write_errors.inc(),
        }
    }
}

/// The writer thread's state.
struct Writer {
    path: PathBuf,
    max_bytes: u64,
    max_files: u32,
    file: Option<File>,
    /// Bytes in `file`.
    size: u64,
    metrics: CaptureMetrics,
    /// When a failure was last logged, and how many failed since.
    last_logged: Option<(Instant, u64)>,
}

impl Writer {
    fn run(mut self, entries: Receiver<Entry>) {
        while let Ok(entry) = entries.recv() {
            let line = entry.to_line();
            match self.append(&line) {
                Ok(()) => {
                    self.metrics.lines.inc();
                    self.last_logged = None;
                }
                Err(e) => {
                    self.metrics.write_errors.inc();
                    self.log_failure(&e);
                }
            }
        }
    }

    /// Appends one line, rotating first if it would take the file past `max_bytes`.
    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.file.is_none() {
            self.open()?;
        }
        if self.size > 0 && self.size + line.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Err(std::io::Error::other("capture file not open"));
        };
        if let Err(e) = file.write_all(line) {
            // Cut a partial line back off, so that the next line starts on a line of its own.
            if file.set_len(self.size).is_err() {
                self.file = None;
            }
            return Err(e);
        }
        self.size += line.len() as u64;
        Ok(())
    }

    fn open(&mut self) -> std::io::Result<()> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }

    /// `PATH.(N-1)` → `PATH.N` (replacing the oldest), ..., `PATH` → `PATH.1`, a new `PATH`.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.file = None;
        for i in (1..self.max_files).rev() {
            let from = rotated(&self.path, i);
            if from.exists() {
                std::fs::rename(&from, rotated(&self.path, i + 1))?;
            }
        }
        std::fs::rename(&self.path, rotated(&self.path, 1))?;
        self.open()
    }

    fn log_failure(&mut self, e: &std::io::Error) {
        let failed = self.last_logged.map_or(1, |(_, n)| n + 1);
        match self.last_logged {
            Some((at, _)) if at.elapsed() < LOG_EVERY => {
                self.last_logged = Some((at, failed));
            }
            _ => {
                tracing::error!(
                    path = %self.path.display(),
                    failed,
                    "capture file: {e} (lines are lost and counted in \
                     patewaf_capture_errors_total; requests are not affected)"
                );
                self.last_logged = Some((Instant::now(), 0));
            }
        }
    }
}

/// `PATH.i`.
pub fn rotated(path: &Path, i: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{i}"));
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(target: &[u8]) -> Entry {
        Entry {
            time: "2026-11-22T12:34:56.789Z".into(),
            request_id: "id-1".into(),
            client: "127.0.0.1:5".into(),
            method: "GET".into(),
            target: target.to_vec(),
            http_version: "HTTP/1.1",
            headers: vec![
                ("host".into(), b"shop.test".to_vec()),
                ("x-raw".into(), vec![0xff, b'a']),
            ],
            body: None,
            body_truncated: false,
            score: Some(0.25),
            threshold: Some(0.5),
            verdict: "allow",
            mode: "detect",
            bundle_version: Some("v1".into()),
            bundle_sha256: Some("00".into()),
        }
    }

    #[test]
    fn a_line_is_json_with_utf8_as_strings_and_other_bytes_as_base64() {
        let line = entry(b"/a?q=\"x\"").to_line();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["capture"], 1);
        assert_eq!(v["target"], "/a?q=\"x\"");
        assert_eq!(v["headers"][0], serde_json::json!(["host", "shop.test"]));
        assert_eq!(
            v["headers"][1],
            serde_json::json!(["x-raw", {"b64": "/2E="}])
        );
        assert!(v.get("body").is_none());
        assert_eq!(v["bundle_version"], "v1");
    }

    /// Rotation by rename keeps `max_files` older files, each at most `max_bytes`, and loses no
    /// line but those of the dropped oldest file.
    #[test]
    fn rotation_shifts_files_and_drops_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let line_len = entry(b"/00").to_line().len() as u64;
        let metrics = crate::metrics::Metrics::new().unwrap().capture;
        let mut writer = Writer {
            path: path.clone(),
            max_bytes: 3 * line_len,
            max_files: 2,
            file: None,
            size: 0,
            metrics,
            last_logged: None,
        };
        for i in 0..10 {
            writer
                .append(&entry(format!("/{i:02}").as_bytes()).to_line())
                .unwrap();
        }
        let targets = |p: &Path| -> Vec<String> {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["target"].to_string()
                })
                .collect()
        };
        assert_eq!(targets(&path), ["\"/09\""]);
        assert_eq!(
            targets(&rotated(&path, 1)),
            ["\"/06\"", "\"/07\"", "\"/08\""]
        );
        assert_eq!(
            targets(&rotated(&path, 2)),
            ["\"/03\"", "\"/04\"", "\"/05\""]
        );
        assert!(!rotated(&path, 3).exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the capture file is the owner's alone");
    }
}
