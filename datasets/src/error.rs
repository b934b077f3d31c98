//! Every error of the loaders: [`DatasetError`] (file, line, what was expected).
use std::path::PathBuf;

/// Errors of the datasets crate.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line is not what the format says it should be.
    #[error("{path}:{line}: expected {expected}, found {found}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the format expects there.
        expected: String,
        /// What is there (shortened, escaped).
        found: String,
    },
    /// A record that CSIC's format cannot carry so that it reads back the same.
    #[error("record of line {line}: {problem}")]
    NotWritable {
        /// The record's line in its source file.
        line: usize,
        /// What cannot be written.
        problem: &'static str,
    },
    /// A format or label name that is not one of the known ones.
    #[error("unknown {what} {found:?} (expected {expected})")]
    UnknownName {
        /// `dataset format` or `label`.
        what: &'static str,
        /// The name given.
        found: String,
        /// The names accepted.
        expected: &'static str,
    },
    /// A capture file (`capture` format) was scored by another bundle than the one expected.
    #[error("{path}:{line}: capture from bundle version {found:?}, expected {expected:?}")]
    CaptureVersion {
        /// The capture file.
        path: PathBuf,
        /// 1-based line where the other version first appears.
        line: usize,
        /// The version on that line.
        found: String,
        /// The version expected (the caller's, or the file's first).
        expected: String,
    },
    /// A label file does not match its data file.
    #[error("{label_file}: {message}")]
    LabelFile {
        /// The label file.
        label_file: PathBuf,
        /// What does not match.
        message: String,
    },
    /// A site log (`read_site_logs`) without a single request.
    #[error("{path}: no request to read: {found}")]
    NoRequests {
        /// The file.
        path: PathBuf,
        /// What it holds instead (its first line, shortened and escaped).
        found: String,
    },
    /// A format that holds no site traffic with its clients.
    #[error(
        "{path}: a site log must be an access log (apache) or a pate-proxy capture, not {format}"
    )]
    NotSiteLog {
        /// The file.
        path: PathBuf,
        /// The format given.
        format: crate::Format,
    },
    /// Site traffic that comes mostly from one client.
    #[error(
        "{files}: {pct:.0} % of the {requests} requests come from one client ({clients} clients in \
         all): this is not a sample of the site's visitors (a monitor, a crawler, a test?); give \
         the logs of several days, with many clients",
        pct = share * 100.0
    )]
    OneClient {
        /// The files, comma-separated.
        files: String,
        /// The busiest client's share of the requests.
        share: f64,
        /// Requests read.
        requests: usize,
        /// Distinct clients.
        clients: usize,
    },
    /// Too little site traffic for what it is read for.
    #[error(
        "{files}: {requests} requests, but at least {needed} are needed {why}; give the logs of \
         more days"
    )]
    TooFewRequests {
        /// The files, comma-separated.
        files: String,
        /// Requests read.
        requests: usize,
        /// Requests needed.
        needed: usize,
        /// What needs them.
        why: String,
    },
}
