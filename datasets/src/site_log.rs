//! A site's own traffic logs, read as a sample of its visitors: [`read_site_logs`] returns the
//! requests with a [`SiteLogSummary`] (lines, requests, entries without a request, distinct
//! clients, the busiest client's share), and [`SiteLogSummary::check`] refuses traffic that
//! cannot stand for the site's visitors (one client's, or too little of it).
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::apache::parse_apache_line;
use crate::text::show;
use crate::{lines, DatasetError, Format, Record};

/// The fewest requests for which [`SiteLogSummary::check`] looks at the busiest client's share.
pub const CLIENT_CHECK_MIN_REQUESTS: usize = 50;
/// The largest share of the requests one client may send ([`SiteLogSummary::check`]).
pub const MAX_TOP_CLIENT_SHARE: f64 = 0.5;

/// Counts of one or several site logs. The client addresses are kept in memory only, to count
/// them; nothing of the summary names a request.
#[derive(Debug, Clone, Default)]
pub struct SiteLogSummary {
    /// The files read, in order.
    pub files: Vec<PathBuf>,
    /// Non-blank lines.
    pub lines: usize,
    /// Requests read (parsed lines).
    pub requests: usize,
    /// Log entries without an HTTP request line (`"-"`, TLS bytes sent to the HTTP port), skipped.
    pub without_request: usize,
    /// Requests per client (an access log's first field, the remote host).
    clients: HashMap<String, usize>,
}

/// The requests of site logs and their [`SiteLogSummary`].
#[derive(Debug, Clone, Default)]
pub struct SiteLog {
    /// Every request, file after file.
    pub records: Vec<Record>,
    /// Their counts.
    pub summary: SiteLogSummary,
}

/// Reads site logs of `format`: `apache` access logs, or pate-proxy `capture` files (with
/// `bundle_version`, a capture line scored by another bundle version is
/// [`DatasetError::CaptureVersion`]). A line that is not a log entry is an error naming its file
/// and line, as [`crate::load`] reports it; so is a file without a single request (it names the
/// file and shows its first line).
pub fn read_site_logs(
    format: Format,
    paths: &[PathBuf],
    bundle_version: Option<&str>,
) -> Result<SiteLog, DatasetError> {
    let mut log = SiteLog::default();
    for path in paths {
        let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
            path: path.clone(),
            source,
        })?;
        let before = log.summary.requests;
        match format {
            Format::Apache => read_apache(path, &bytes, &mut log)?,
            Format::Capture => read_capture(path, &bytes, bundle_version, &mut log)?,
            other => {
                return Err(DatasetError::NotSiteLog {
                    path: path.clone(),
                    format: other,
                })
            }
        }
        if log.summary.requests == before {
            return Err(no_requests(path, &bytes));
        }
        log.summary.files.push(path.clone());
    }
    Ok(log)
}

fn read_apache(path: &Path, bytes: &[u8], log: &mut SiteLog) -> Result<(), DatasetError> {
    for (no, line) in lines(bytes) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        log.summary.lines += 1;
        match parse_apache_line(path, no, line)? {
            Some(record) => {
                log.summary.count_client(record.client.as_deref());
                log.summary.requests += 1;
                log.records.push(record);
            }
            None => log.summary.without_request += 1,
        }
    }
    Ok(())
}

fn read_capture(
    path: &Path,
    bytes: &[u8],
    bundle_version: Option<&str>,
    log: &mut SiteLog,
) -> Result<(), DatasetError> {
    for (no, line) in lines(bytes) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        log.summary.lines += 1;
        let captured = crate::capture::parse_captured(path, no, line)?;
        if let (Some(expected), Some(found)) = (bundle_version, &captured.bundle_version) {
            if found != expected {
                return Err(DatasetError::CaptureVersion {
                    path: path.to_owned(),
                    line: no,
                    found: found.clone(),
                    expected: expected.to_string(),
                });
            }
        }
        log.summary.count_client(captured.record.client.as_deref());
        log.summary.requests += 1;
        log.records.push(captured.record);
    }
    Ok(())
}

fn no_requests(path: &Path, bytes: &[u8]) -> DatasetError {
    let first = lines(bytes).find(|(_, l)| !l.iter().all(u8::is_ascii_whitespace));
    DatasetError::NoRequests {
        path: path.to_owned(),
        found: match first {
            None => "the file is empty".into(),
            Some((no, line)) => format!(
                "no line holds an HTTP request line (`METHOD TARGET HTTP/x.y`); line {no} is {}",
                show(line)
            ),
        },
    }
}

impl SiteLogSummary {
    /// Counts one request of `client` (`-` when the line names none).
    fn count_client(&mut self, client: Option<&str>) {
        let client = client.unwrap_or("-");
        match self.clients.get_mut(client) {
            Some(n) => *n += 1,
            None => {
                self.clients.insert(client.to_owned(), 1);
            }
        }
    }

    /// Distinct clients.
    pub fn distinct_clients(&self) -> usize {
        self.clients.len()
    }

    /// The busiest client's requests (0 without requests).
    pub fn top_client_requests(&self) -> usize {
        self.clients.values().copied().max().unwrap_or(0)
    }

    /// The busiest client's share of the requests (0 without requests).
    pub fn top_client_share(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        self.top_client_requests() as f64 / self.requests as f64
    }

    /// Refuses traffic that cannot stand for the site's visitors: no request; one client sending
    /// more than [`MAX_TOP_CLIENT_SHARE`] of [`CLIENT_CHECK_MIN_REQUESTS`] requests or more (a
    /// monitor, a crawler, a test run); fewer than `needed` requests (`why` says what needs
    /// them, e.g. `for 0 flagged to hold a share of 0.01 at confidence 0.95`).
    pub fn check(&self, needed: usize, why: &str) -> Result<(), DatasetError> {
        let files = self.files_shown();
        if self.requests == 0 {
            return Err(DatasetError::NoRequests {
                path: PathBuf::from(files),
                found: "no request was read".into(),
            });
        }
        let share = self.top_client_share();
        if self.requests >= CLIENT_CHECK_MIN_REQUESTS && share > MAX_TOP_CLIENT_SHARE {
            return Err(DatasetError::OneClient {
                files,
                share,
                requests: self.requests,
                clients: self.distinct_clients(),
            });
        }
        if self.requests < needed {
            return Err(DatasetError::TooFewRequests {
                files,
                requests: self.requests,
                needed,
                why: why.to_string(),
            });
        }
        Ok(())
    }

    fn files_shown(&self) -> String {
        let names: Vec<String> = self.files.iter().map(|p| p.display().to_string()).collect();
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(text: &str) -> Result<SiteLog, DatasetError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        std::fs::write(&path, text).unwrap();
        read_site_logs(Format::Apache, &[path], None)
    }

    fn entry(client: &str, request: &str) -> String {
        format!("{client} - - [10/Oct/2000:13:55:36 -0700] \"{request}\" 200 2326 \"-\" \"curl\"\n")
    }

    #[test]
    fn counts_requests_entries_without_one_and_clients() {
        let mut text = String::new();
        for k in 0..60 {
            text += &entry(&format!("10.0.0.{}", k % 3), "GET /a?x=1 HTTP/1.1");
        }
        text += &entry("10.0.0.9", "-");
        text += "\n";
        let log = log(&text).unwrap();
        let s = &log.summary;
        assert_eq!((s.lines, s.requests, s.without_request), (61, 60, 1));
        assert_eq!((s.distinct_clients(), s.top_client_requests()), (3, 20));
        assert_eq!(log.records.len(), 60);
        assert!(s.check(60, "").is_ok());
        let few = s.check(299, "for 0 flagged to hold 0.01").unwrap_err();
        assert!(few.to_string().contains("60 requests") && few.to_string().contains("299"));
    }

    #[test]
    fn refuses_one_client_and_logs_without_requests() {
        let mut text = entry("10.0.0.2", "GET / HTTP/1.1");
        for _ in 0..59 {
            text += &entry("10.0.0.1", "GET / HTTP/1.1");
        }
        let err = log(&text).unwrap().summary.check(1, "").unwrap_err();
        assert!(err.to_string().contains("98 %"), "{err}");
        let err = log(&entry("10.0.0.1", "-")).unwrap_err().to_string();
        assert!(
            err.contains("access.log") && err.contains("line 1 is"),
            "{err}"
        );
        let err = log("").unwrap_err().to_string();
        assert!(err.contains("empty"), "{err}");
        let err = log("{\"json\": 1}\n").unwrap_err().to_string();
        assert!(
            err.contains("access.log:1: expected an access-log line"),
            "{err}"
        );
    }
}
