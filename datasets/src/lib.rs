//! Loaders for labelled and unlabelled web-request datasets.
//!
//! Every loader turns a file into [`Record`]s (method, target, optional form body, optional
//! label, line number) that [`Record::parts`] hands to the featurizer. Formats ([`Format`]):
//!
//! - `csic`: CSIC 2010 HTTP dataset (Giménez, Pérez Villegas, Álvarez Marañón, "HTTP data set
//!   CSIC 2010", CSIC 2010): raw HTTP/1.1 requests one after another. Requests are split on
//!   request-line starts (`^(GET|POST|PUT) `), not on blank lines; CRLF and bare LF both end a
//!   line. The absolute-form URL `http://localhost:8080/path?q` becomes the origin-form target
//!   `/path?q`; the line(s) after the header block are the form body. The label comes from the
//!   file name (`anomalous…` → malicious, `normal…` → benign, otherwise unlabelled).
//! - `fwaf`: Fwaf query lists (faizann24/fsecurify, 2017): one path + query per line; blank lines
//!   are skipped. `bad…` files → malicious, `good…` files → benign.
//! - `httpparams`: HttpParamsDataset (Morzeux, 2016, MIT): CSV with header
//!   `payload,length,attack_type,label`; `label` is `norm` (benign) or `anom` (malicious). The
//!   payload is one decoded parameter value; it becomes the target as is.
//! - `csv`: a generic `target,label` CSV (or TSV: `.tsv`/`.tab` files, or a first line with a tab
//!   and no comma), optional header `target,label`; the label column may be missing or empty
//!   (unlabelled). Labels: `benign|malicious`, `0|1`, `norm|anom`, `normal|anomalous`, `good|bad`.
//! - `apache`: Apache access logs in common or combined format, unlabelled: the request line,
//!   and the combined format's Referer and User-Agent as headers. A label file (one
//!   label per log line, see [`LoadOptions::label_file`]) may label them. Entries without a
//!   request line (`"-"`, or bytes that are not `METHOD TARGET [HTTP/x.y]`, such as TLS
//!   handshakes sent to the plain-HTTP port) are skipped.
//! - `capture`: pate-proxy's capture file (its `capture:` setting): one JSON object per request
//!   it scored, with every header and the body, unlabelled; [`capture`] reads it together with
//!   the bundle version(s) that scored it.
//!
//! A site's own traffic ([`read_site_logs`]) comes with a [`SiteLogSummary`] (requests, entries
//! without a request, distinct clients, the busiest client's share) whose
//! [`SiteLogSummary::check`] refuses one client's traffic or too little of it.
//!
//! Errors name the file, the line and what was expected.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

mod apache;
pub mod capture;
mod csic;
mod csv_lines;
mod error;
mod format;
mod fwaf;
mod httpparams;
mod label;
mod record;
mod site_log;
mod stats;
mod target_label;
mod text;

use apache::{apply_label_file, parse_apache};
use csic::parse_csic;
pub use csic::write_csic;
pub(crate) use csv_lines::{csv_error, CsvLines};
pub use error::DatasetError;
pub use format::Format;
use fwaf::parse_fwaf;
use httpparams::parse_httpparams;
pub use label::Label;
pub use record::Record;
pub use site_log::{
    read_site_logs, SiteLog, SiteLogSummary, CLIENT_CHECK_MIN_REQUESTS, MAX_TOP_CLIENT_SHARE,
};
pub use stats::{stats, LabelCounts, Stats};
use target_label::parse_target_label_csv;
pub use text::origin_form;
pub(crate) use text::{lines, parse_error};

/// Options of [`load_with`].
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Give every record this label, whatever the file name or file says.
    pub label: Option<Label>,
    /// Apache format only: a file with one label per line of the log (same line numbers; blank
    /// or `-` for unlabelled; lines of skipped log entries are ignored).
    pub label_file: Option<PathBuf>,
}

/// Loads a dataset file; the label comes from the file (name or content) where the format says so.
pub fn load(format: Format, path: &Path) -> Result<Vec<Record>, DatasetError> {
    load_with(format, path, &LoadOptions::default())
}

/// Loads several files of one format, concatenated in order.
pub fn load_all(
    format: Format,
    paths: &[PathBuf],
    options: &LoadOptions,
) -> Result<Vec<Record>, DatasetError> {
    let mut all = Vec::new();
    for p in paths {
        all.extend(load_with(format, p, options)?);
    }
    Ok(all)
}

/// [`load`] with a label override or a label file.
pub fn load_with(
    format: Format,
    path: &Path,
    options: &LoadOptions,
) -> Result<Vec<Record>, DatasetError> {
    let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut records = parse(format, path, &bytes)?;
    if let Some(label_file) = &options.label_file {
        if format != Format::Apache {
            return Err(DatasetError::LabelFile {
                label_file: label_file.clone(),
                message: format!("a label file is only read for the apache format, not {format} (use a label override)"),
            });
        }
        apply_label_file(path, &bytes, label_file, &mut records)?;
    }
    if let Some(label) = options.label {
        for r in &mut records {
            r.label = Some(label);
        }
    }
    Ok(records)
}

/// Parses the bytes of a dataset file (`path` names it in errors and decides file-name labels).
pub fn parse(format: Format, path: &Path, bytes: &[u8]) -> Result<Vec<Record>, DatasetError> {
    match format {
        Format::Csic => parse_csic(path, bytes, label_from_file_name(format, path)),
        Format::Fwaf => Ok(parse_fwaf(bytes, label_from_file_name(format, path))),
        Format::Httpparams => parse_httpparams(path, bytes),
        Format::Csv => parse_target_label_csv(path, bytes),
        Format::Apache => parse_apache(path, bytes),
        Format::Capture => Ok(capture::parse_capture(path, bytes)?.records),
    }
}

/// The label a file name implies for formats that label by file: CSIC `anomalous…`/`normal…`,
/// Fwaf `bad…`/`good…` (case-insensitive, anywhere in the file name).
pub fn label_from_file_name(format: Format, path: &Path) -> Option<Label> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    match format {
        Format::Csic if name.contains("anomalous") => Some(Label::Malicious),
        Format::Csic if name.contains("normal") => Some(Label::Benign),
        Format::Fwaf if name.contains("bad") => Some(Label::Malicious),
        Format::Fwaf if name.contains("good") => Some(Label::Benign),
        _ => None,
    }
}
