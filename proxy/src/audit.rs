//! The audit log: one JSON object per line for every flagged, blocked or failed request.
//!
//! Every value goes through `serde_json`, so the line is valid JSON whatever bytes the client sent
//! (invalid UTF-8 is replaced by U+FFFD first). The file is opened in append mode and can be
//! reopened (SIGHUP, `POST /reload`) so that logrotate's `create`/`move` scheme works.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use bundle::Explanation;
use featurizer::Placement;
use serde::Serialize;

use crate::error::ProxyError;

/// The most features an audit line's explanation lists, whatever `audit_top_features` says.
pub const MAX_AUDIT_FEATURES: usize = 32;

/// One audit record (one line).
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord<'a> {
    /// RFC 3339 UTC time with milliseconds.
    pub time: String,
    /// The id also sent to the client (403 body, `X-Request-Id`).
    pub request_id: &'a str,
    /// Client IP and port.
    pub client: String,
    /// HTTP method.
    pub method: &'a str,
    /// Path and query, possibly redacted, truncated to `audit_target_max_bytes`.
    pub target: String,
    /// Whether `target` was cut.
    pub target_truncated: bool,
    /// Scored body prefix (urlencoded POST/PUT), possibly redacted and truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Student probability; `None` when scoring failed.
    pub score: Option<f32>,
    /// Threshold in force.
    pub threshold: Option<f32>,
    /// `block`, `flag`, `refused` or `error`; `allow` only on a line written because the
    /// shadow model disagreed.
    pub verdict: &'a str,
    /// Mode in force for this request (global or route override).
    pub mode: &'a str,
    /// Serving model version.
    pub model_version: Option<&'a str>,
    /// Why the model scored what it did ([`bundle::Explanation`], cut by [`for_the_audit`]),
    /// for a scored request that is audited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    /// Why, when it is not the score (e.g. `scoring_error: ...`, `body_over_limit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The shadow model's verdict, only where it differs from `verdict` (`shadow_bundle`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow_verdict: Option<&'a str>,
    /// The shadow model's probability (with `shadow_verdict`; `None` when its scoring failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow_score: Option<f32>,
    /// The shadow model's version (with `shadow_verdict`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow_model_version: Option<&'a str>,
    /// The placement whose parts alone score highest (`query`, `hdr:user-agent`, `json:value`,
    /// ...; `request` for a featurizer without placements), for scored requests at or above the
    /// threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<&'static str>,
    /// `false` when the request was scored without the site's format checks (`format_checks:
    /// false`, global or its route's); not written when they were on.
    #[serde(skip_serializing_if = "is_true")]
    pub format_checks: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Append-only JSON-lines writer that can reopen its file.
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<File>,
}

fn open_append(path: &Path) -> Result<File, ProxyError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| ProxyError::Io {
            path: path.to_path_buf(),
            source: e,
        })
}

impl AuditLog {
    /// Opens (creates) `path` for appending.
    pub fn open(path: &Path) -> Result<Self, ProxyError> {
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(open_append(path)?),
        })
    }

    /// The file this log writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reopens the file (after rotation); on failure the old handle stays.
    pub fn reopen(&self) -> Result<(), ProxyError> {
        let fresh = open_append(&self.path)?;
        let mut guard = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *guard = fresh;
        Ok(())
    }

    /// Writes one record as one line. One `write_all` of the whole line on an `O_APPEND` file, so
    /// concurrent writers (and a rotated file) never interleave partial lines.
    pub fn write(&self, record: &AuditRecord<'_>) -> Result<(), ProxyError> {
        let mut line = serde_json::to_vec(record).map_err(|e| ProxyError::Io {
            path: self.path.clone(),
            source: e.into(),
        })?;
        line.push(b'\n');
        let mut guard = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.write_all(&line).map_err(|e| ProxyError::Io {
            path: self.path.clone(),
            source: e,
        })
    }
}

/// Lossy UTF-8 of `bytes`, cut to at most `max_bytes` bytes at a character boundary.
/// Returns the text and whether it was cut.
pub fn truncate_text(bytes: &[u8], max_bytes: usize) -> (String, bool) {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= max_bytes {
        return (text.into_owned(), false);
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_string(), true)
}

/// Replaces the value of every `name=value` pair of a query string or urlencoded body by
/// `REDACTED` (names stay: they say what was sent without saying the secret).
pub fn redact_pairs(pairs: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pairs.len());
    for (i, pair) in pairs.split(|&b| b == b'&').enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        match pair.iter().position(|&b| b == b'=') {
            Some(eq) => {
                out.extend_from_slice(&pair[..=eq]);
                if eq + 1 < pair.len() {
                    out.extend_from_slice(b"REDACTED");
                }
            }
            None => out.extend_from_slice(pair),
        }
    }
    out
}

/// Redacts the query part of a request target (`/path?a=1` → `/path?a=REDACTED`).
pub fn redact_target(target: &[u8]) -> Vec<u8> {
    match target.iter().position(|&b| b == b'?') {
        Some(q) => {
            let mut out = target[..=q].to_vec();
            out.extend(redact_pairs(&target[q + 1..]));
            out
        }
        None => target.to_vec(),
    }
}

/// What an audit line may show of an explanation. A snippet of a part's decoded value is kept
/// only for the parts the line shows anyway: the method, the path and the query, and a body's
/// parts with `audit_body`; never a header's or a cookie's (no other field of the line shows
/// them), and none at all with `redact_values`. With `redact_values`, a feature that is a word
/// of the vocabulary (a token or character n-gram, possibly a value seen in training) is listed
/// only where `shown` (the redacted target and body, lower-cased) holds it; the placement,
/// shape, parameter and format features name no value and stay. A feature left out counts in
/// `others`.
pub fn for_the_audit(
    mut explanation: Explanation,
    redact_values: bool,
    audit_body: bool,
    shown: &str,
) -> Explanation {
    let shows_value = |placement: &str| {
        !redact_values
            && match Placement::from_name(placement) {
                Some(Placement::Method | Placement::Path | Placement::Query) => true,
                Some(p) => audit_body && !p.is_header(),
                None => false,
            }
    };
    for c in &mut explanation.top {
        if !c.placement.is_some_and(shows_value) {
            c.snippet = None;
        }
    }
    if let Some(part) = &mut explanation.part {
        if !shows_value(part.placement) {
            part.snippet = None;
        }
    }
    if redact_values {
        let (kept, dropped): (Vec<_>, Vec<_>) = explanation.top.into_iter().partition(|c| {
            let structural = c.feature.starts_with(featurizer::PLACEMENT_PREFIX)
                || c.feature.starts_with(featurizer::PARAM_PREFIX);
            let word = c.feature.rsplit(':').next().unwrap_or_default();
            structural || !word.chars().any(char::is_alphanumeric) || shown.contains(word)
        });
        explanation.others += dropped.iter().map(|c| c.contribution).sum::<f32>();
        explanation.top = kept;
    }
    explanation
}

/// Current time as RFC 3339 UTC with milliseconds, e.g. `2026-11-22T12:34:56.789Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bundle::explain::AttributionMethod;
    use bundle::Contribution;

    fn contribution(
        feature: &str,
        value: f32,
        placement: &'static str,
        name: &str,
    ) -> Contribution {
        Contribution {
            feature: feature.into(),
            contribution: value,
            placement: Some(placement),
            name: Some(name.into()),
            snippet: Some(format!("{name} value")),
        }
    }

    fn sample_explanation() -> Explanation {
        Explanation {
            model: "student",
            part: None,
            class: Some("sqli".into()),
            method: AttributionMethod::WeightTimesValue,
            logit: 2.0,
            baseline: -3.0,
            top: vec![
                contribution("union", 2.5, "query", "id"),
                contribution("grimshaw", 1.0, "query", "login"),
                contribution("pl:li:sqli", 0.5, "query", "id"),
                contribution("'", 0.5, "hdr:cookie", "session"),
                contribution("select", 0.25, "form", "q"),
            ],
            others: 0.25,
        }
    }

    /// Snippets only where the line shows the part anyway; with redaction none, and vocabulary
    /// words the redacted line does not show are left out (their share kept in `others`).
    #[test]
    fn the_audit_shows_snippets_of_shown_parts_and_redacts_words() {
        let plain = for_the_audit(sample_explanation(), false, false, "");
        let snippets: Vec<bool> = plain.top.iter().map(|c| c.snippet.is_some()).collect();
        assert_eq!(snippets, [true, true, true, false, false]);
        let with_body = for_the_audit(sample_explanation(), false, true, "");
        assert!(with_body.top[4].snippet.is_some());
        assert!(
            with_body.top[3].snippet.is_none(),
            "a cookie's value is never shown"
        );
        let shown = "/a?id=redacted&login=redacted union";
        let redacted = for_the_audit(sample_explanation(), true, true, shown);
        let features: Vec<&str> = redacted.top.iter().map(|c| c.feature.as_str()).collect();
        assert_eq!(features, ["union", "pl:li:sqli", "'"]);
        assert!(redacted.top.iter().all(|c| c.snippet.is_none()));
        assert_eq!(redacted.others, 0.25 + 1.0 + 0.25);
        let sum: f32 = redacted.top.iter().map(|c| c.contribution).sum();
        assert_eq!(redacted.baseline + sum + redacted.others, redacted.logit);
    }

    #[test]
    fn audit_time_is_rfc3339_utc_with_milliseconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), "2026-11-22T12:34:56.789Z".len(), "{t}");
        assert!(
            t.ends_with('Z') && t.as_bytes()[10] == b'T' && t.as_bytes()[19] == b'.',
            "{t}"
        );
    }

    #[test]
    fn truncation_keeps_utf8_boundaries() {
        assert_eq!(truncate_text(b"abc", 3), ("abc".to_string(), false));
        let (t, cut) = truncate_text("aé€".as_bytes(), 3);
        assert_eq!((t.as_str(), cut), ("aé", true));
        let (t, cut) = truncate_text(b"\xff\xfeok", 100);
        assert_eq!((t.as_str(), cut), ("\u{fffd}\u{fffd}ok", false));
    }

    #[test]
    fn redaction_keeps_names_drops_values() {
        assert_eq!(
            redact_target(b"/a/b?user=x&pw=secret&flag"),
            b"/a/b?user=REDACTED&pw=REDACTED&flag"
        );
        assert_eq!(redact_target(b"/no/query"), b"/no/query");
        assert_eq!(redact_pairs(b"a=&b=2"), b"a=&b=REDACTED");
    }

    #[test]
    fn lines_are_valid_json_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        let nasty = "\"quote\" \\ back\nnewline \u{0} nul </script>";
        let record = AuditRecord {
            time: now_rfc3339(),
            request_id: "id-1",
            client: "127.0.0.1:5".into(),
            method: "GET",
            target: nasty.into(),
            target_truncated: false,
            body: None,
            score: Some(0.9),
            threshold: Some(0.5),
            verdict: "block",
            mode: "block",
            model_version: Some("v1"),
            explanation: Some(sample_explanation()),
            reason: None,
            shadow_verdict: None,
            shadow_score: None,
            shadow_model_version: None,
            placement: Some("query"),
            format_checks: true,
        };
        log.write(&record).unwrap();
        std::fs::rename(&path, dir.path().join("audit.jsonl.1")).unwrap();
        log.reopen().unwrap();
        log.write(&record).unwrap();
        for file in [dir.path().join("audit.jsonl.1"), path] {
            let text = std::fs::read_to_string(file).unwrap();
            assert_eq!(text.lines().count(), 1);
            let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
            assert_eq!(v["target"], nasty);
            assert_eq!(v["verdict"], "block");
        }
    }
}
