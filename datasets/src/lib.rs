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
//! - `apache`: Apache access logs in common or combined format, unlabelled. A label file (one
//!   label per log line, see [`LoadOptions::label_file`]) may label them. Entries without a
//!   request line (`"-"`, or bytes that are not `METHOD TARGET [HTTP/x.y]`, such as TLS
//!   handshakes sent to the plain-HTTP port) are skipped.
//!
//! Errors name the file, the line and what was expected.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The class of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Label {
    /// Normal traffic (class 0).
    Benign,
    /// An attack (class 1).
    Malicious,
}

impl Label {
    /// The class index used by the models: benign 0, malicious 1.
    pub fn class(self) -> usize {
        match self {
            Label::Benign => 0,
            Label::Malicious => 1,
        }
    }

    /// The label of class index 0 or 1.
    pub fn from_class(class: usize) -> Option<Label> {
        match class {
            0 => Some(Label::Benign),
            1 => Some(Label::Malicious),
            _ => None,
        }
    }

    /// Parses the spellings found in datasets (case-insensitive): `benign|malicious`, `0|1`,
    /// `norm|anom`, `normal|anomalous`, `good|bad`.
    pub fn parse(s: &str) -> Option<Label> {
        match s.trim().to_ascii_lowercase().as_str() {
            "benign" | "0" | "norm" | "normal" | "good" => Some(Label::Benign),
            "malicious" | "1" | "anom" | "anomalous" | "bad" => Some(Label::Malicious),
            _ => None,
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Label::Benign => "benign",
            Label::Malicious => "malicious",
        })
    }
}

impl FromStr for Label {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Label::parse(s).ok_or_else(|| {
            format!("unknown label {s:?} (expected benign|malicious, 0|1, norm|anom)")
        })
    }
}

/// One request of a dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Request method (`GET` where the format has none).
    pub method: String,
    /// Origin-form target (path + optional query), as in the file (still encoded).
    pub target: Vec<u8>,
    /// Request body, when the request has a non-empty one.
    pub body: Option<Vec<u8>>,
    /// Request headers (name, value) in order, where the format has them (CSIC); empty
    /// otherwise. The featurizer reads them only with its `placements` setting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, Vec<u8>)>,
    /// The label, when the file gives one.
    pub label: Option<Label>,
    /// 1-based line of the file where the request starts.
    pub line: usize,
}

impl Record {
    /// The view the featurizer reads.
    pub fn parts(&self) -> featurizer::RequestParts<'_> {
        featurizer::RequestParts {
            method: &self.method,
            target: &self.target,
            body: self.body.as_deref(),
            headers: featurizer::Headers::Owned(&self.headers),
        }
    }
}

/// A dataset format (names as on the command line: `csic|fwaf|httpparams|csv|apache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// CSIC 2010 raw HTTP requests.
    Csic,
    /// Fwaf query lists, one path + query per line.
    Fwaf,
    /// HttpParamsDataset CSV (`payload,length,attack_type,label`).
    Httpparams,
    /// Generic `target,label` CSV or TSV.
    Csv,
    /// Apache access log, common or combined format.
    Apache,
}

impl Format {
    /// All formats.
    pub const ALL: [Format; 5] = [
        Format::Csic,
        Format::Fwaf,
        Format::Httpparams,
        Format::Csv,
        Format::Apache,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csic => "csic",
            Format::Fwaf => "fwaf",
            Format::Httpparams => "httpparams",
            Format::Csv => "csv",
            Format::Apache => "apache",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!("unknown dataset format {s:?} (expected csic|fwaf|httpparams|csv|apache)")
            })
    }
}

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
    /// A label file does not match its data file.
    #[error("{label_file}: {message}")]
    LabelFile {
        /// The label file.
        label_file: PathBuf,
        /// What does not match.
        message: String,
    },
}

/// Options of [`load_with`].
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Give every record this label, whatever the file name or file says.
    pub label: Option<Label>,
    /// Apache format only: a file with one label per line of the log (same line numbers; blank
    /// or `-` for unlabelled; lines of skipped log entries are ignored).
    pub label_file: Option<PathBuf>,
}

/// Counts per label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelCounts {
    /// Benign records.
    pub benign: usize,
    /// Malicious records.
    pub malicious: usize,
    /// Records without a label.
    pub unlabeled: usize,
}

/// What `pate-trainer data stats` prints: `{"records": N, "by_label": {...}}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of records.
    pub records: usize,
    /// Records per label.
    pub by_label: LabelCounts,
}

impl Stats {
    /// Adds the counts of `records`.
    pub fn add(&mut self, records: &[Record]) {
        for r in records {
            self.records += 1;
            match r.label {
                Some(Label::Benign) => self.by_label.benign += 1,
                Some(Label::Malicious) => self.by_label.malicious += 1,
                None => self.by_label.unlabeled += 1,
            }
        }
    }
}

/// Counts records per label.
pub fn stats(records: &[Record]) -> Stats {
    let mut s = Stats::default();
    s.add(records);
    s
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

/// Lines of a file without their terminator (`\n` or `\r\n`), with 1-based numbers. A final
/// line without a terminator counts; the empty string after a final newline does not.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let empty = bytes.is_empty();
    body.split(|&b| b == b'\n')
        .filter(move |_| !empty)
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .enumerate()
        .map(|(i, l)| (i + 1, l))
}

/// A short, escaped rendering of some bytes for error messages.
fn show(bytes: &[u8]) -> String {
    const MAX: usize = 80;
    let cut = bytes.len() > MAX;
    let mut s: String = bytes[..bytes.len().min(MAX)].escape_ascii().to_string();
    if cut {
        s.push('…');
    }
    format!("\"{s}\"")
}

fn parse_error(
    path: &Path,
    line: usize,
    expected: impl Into<String>,
    found: &[u8],
) -> DatasetError {
    DatasetError::Parse {
        path: path.to_owned(),
        line,
        expected: expected.into(),
        found: show(found),
    }
}

/// Turns an absolute-form URL (`http://host:port/path?q`) into origin form (`/path?q`); any other
/// target is returned unchanged.
pub fn origin_form(target: &[u8]) -> &[u8] {
    let lower_starts =
        |p: &[u8]| target.len() >= p.len() && target[..p.len()].eq_ignore_ascii_case(p);
    let rest = if lower_starts(b"http://") {
        &target[7..]
    } else if lower_starts(b"https://") {
        &target[8..]
    } else {
        return target;
    };
    match rest.iter().position(|&b| b == b'/' || b == b'?') {
        Some(p) if rest[p] == b'/' => &rest[p..],
        // `http://host?q`: the path is empty; keep the query (the caller sees `?q`).
        Some(p) => &rest[p..],
        None => b"/",
    }
}

const CSIC_METHODS: [&[u8]; 3] = [b"GET ", b"POST ", b"PUT "];

fn parse_csic(
    path: &Path,
    bytes: &[u8],
    label: Option<Label>,
) -> Result<Vec<Record>, DatasetError> {
    enum State {
        BeforeFirst,
        Headers,
        Body,
    }
    let mut records: Vec<Record> = Vec::new();
    let mut body: Vec<u8> = Vec::new();
    let mut state = State::BeforeFirst;
    let finish = |records: &mut Vec<Record>, body: &mut Vec<u8>| {
        if let Some(r) = records.last_mut() {
            if !body.is_empty() {
                r.body = Some(std::mem::take(body));
            }
        }
    };
    for (no, line) in lines(bytes) {
        if CSIC_METHODS.iter().any(|m| line.starts_with(m)) {
            finish(&mut records, &mut body);
            let sp1 = line.iter().position(|&b| b == b' ').unwrap_or(0);
            let sp2 = line.iter().rposition(|&b| b == b' ').unwrap_or(0);
            let version = &line[sp2 + 1..];
            if sp2 <= sp1 || !version.starts_with(b"HTTP/") {
                return Err(parse_error(
                    path,
                    no,
                    "a request line `METHOD URL HTTP/1.x`",
                    line,
                ));
            }
            let target = origin_form(&line[sp1 + 1..sp2]);
            if target.is_empty() {
                return Err(parse_error(
                    path,
                    no,
                    "a request target after the method",
                    line,
                ));
            }
            records.push(Record {
                method: String::from_utf8_lossy(&line[..sp1]).into_owned(),
                target: target.to_vec(),
                body: None,
                headers: Vec::new(),
                label,
                line: no,
            });
            state = State::Headers;
            continue;
        }
        match state {
            State::BeforeFirst if line.iter().all(u8::is_ascii_whitespace) => {}
            State::BeforeFirst => {
                return Err(parse_error(
                    path,
                    no,
                    "a request line starting with GET, POST or PUT",
                    line,
                ))
            }
            State::Headers if line.is_empty() => state = State::Body,
            State::Headers if line.contains(&b':') => {
                if let (Some(r), Some(colon)) =
                    (records.last_mut(), line.iter().position(|&b| b == b':'))
                {
                    let name = String::from_utf8_lossy(&line[..colon]).trim().to_string();
                    let value = line[colon + 1..].trim_ascii().to_vec();
                    r.headers.push((name, value));
                }
            }
            State::Headers => {
                return Err(parse_error(
                    path,
                    no,
                    "a header line `Name: value` or a blank line",
                    line,
                ))
            }
            State::Body if line.is_empty() => {}
            State::Body => {
                if !body.is_empty() {
                    body.push(b'\n');
                }
                body.extend_from_slice(line);
            }
        }
    }
    finish(&mut records, &mut body);
    Ok(records)
}

fn parse_fwaf(bytes: &[u8], label: Option<Label>) -> Vec<Record> {
    lines(bytes)
        .filter(|(_, l)| !l.is_empty())
        .map(|(no, l)| Record {
            method: "GET".into(),
            target: l.to_vec(),
            body: None,
            headers: Vec::new(),
            label,
            line: no,
        })
        .collect()
}

/// Line numbers of CSV records from their byte offsets. (The csv crate's own line count is off by
/// one after CRLF line ends, and its byte offset may point at the `\n` of the previous CRLF or at
/// skipped blank lines, so both are corrected here.)
struct CsvLines<'a> {
    bytes: &'a [u8],
    offset: usize,
    line: usize,
}

impl<'a> CsvLines<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        CsvLines {
            bytes,
            offset: 0,
            line: 1,
        }
    }

    /// 1-based line of the record that starts at byte `pos` (calls in increasing order).
    fn line_at(&mut self, pos: Option<&csv::Position>) -> usize {
        let Some(pos) = pos else { return 0 };
        let mut at = (pos.byte() as usize).min(self.bytes.len());
        while at < self.bytes.len() && matches!(self.bytes[at], b'\r' | b'\n') {
            at += 1;
        }
        if at >= self.offset {
            self.line += self.bytes[self.offset..at]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.offset = at;
        }
        self.line
    }
}

fn csv_error(path: &Path, lines: &mut CsvLines, e: csv::Error) -> DatasetError {
    let line = lines.line_at(e.position());
    let expected = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            return DatasetError::Parse {
                path: path.to_owned(),
                line,
                expected: format!("{expected_len} fields"),
                found: format!("{len} fields"),
            }
        }
        _ => "a well-formed CSV record".to_string(),
    };
    DatasetError::Parse {
        path: path.to_owned(),
        line,
        expected,
        found: e.to_string(),
    }
}

fn parse_httpparams(path: &Path, bytes: &[u8]) -> Result<Vec<Record>, DatasetError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let mut csv_lines = CsvLines::new(bytes);
    let header = reader
        .byte_headers()
        .map_err(|e| csv_error(path, &mut csv_lines, e))?
        .clone();
    let expected_header: [&[u8]; 4] = [b"payload", b"length", b"attack_type", b"label"];
    if header.len() != 4 || header.iter().zip(expected_header).any(|(a, b)| a != b) {
        let found: Vec<String> = header
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        return Err(DatasetError::Parse {
            path: path.to_owned(),
            line: 1,
            expected: "the header payload,length,attack_type,label".into(),
            found: found.join(","),
        });
    }
    let mut records = Vec::new();
    for row in reader.byte_records() {
        let row = row.map_err(|e| csv_error(path, &mut csv_lines, e))?;
        let line = csv_lines.line_at(row.position());
        let label = match &row[3] {
            b"norm" => Label::Benign,
            b"anom" => Label::Malicious,
            other => {
                return Err(parse_error(
                    path,
                    line,
                    "label `norm` or `anom` in column 4",
                    other,
                ))
            }
        };
        records.push(Record {
            method: "GET".into(),
            target: row[0].to_vec(),
            body: None,
            headers: Vec::new(),
            label: Some(label),
            line,
        });
    }
    Ok(records)
}

fn parse_target_label_csv(path: &Path, bytes: &[u8]) -> Result<Vec<Record>, DatasetError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let first_line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let tab = match ext.as_deref() {
        Some("tsv") | Some("tab") => true,
        Some("csv") => false,
        _ => first_line.contains(&b'\t') && !first_line.contains(&b','),
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(if tab { b'\t' } else { b',' })
        .from_reader(bytes);
    let mut csv_lines = CsvLines::new(bytes);
    let mut records = Vec::new();
    for (i, row) in reader.byte_records().enumerate() {
        let row = row.map_err(|e| csv_error(path, &mut csv_lines, e))?;
        let line = csv_lines.line_at(row.position());
        if i == 0
            && row
                .get(0)
                .is_some_and(|f| f.eq_ignore_ascii_case(b"target"))
        {
            continue; // header
        }
        let label = match row.len() {
            1 => None,
            2 => {
                let raw = &row[1];
                let text = String::from_utf8_lossy(raw);
                if text.trim().is_empty() {
                    None
                } else {
                    Some(Label::parse(&text).ok_or_else(|| {
                        parse_error(
                            path,
                            line,
                            "a label (benign|malicious, 0|1, norm|anom) in column 2",
                            raw,
                        )
                    })?)
                }
            }
            n => {
                return Err(DatasetError::Parse {
                    path: path.to_owned(),
                    line,
                    expected: "`target,label` (2 fields) or `target` (1 field)".into(),
                    found: format!("{n} fields"),
                })
            }
        };
        if row[0].is_empty() && row.len() == 1 {
            continue; // blank line
        }
        records.push(Record {
            method: "GET".into(),
            target: row[0].to_vec(),
            body: None,
            headers: Vec::new(),
            label,
            line,
        });
    }
    Ok(records)
}

/// Parses one access-log line. `Ok(None)`: a log entry without an HTTP request line (skipped).
fn parse_apache_line(path: &Path, no: usize, line: &[u8]) -> Result<Option<Record>, DatasetError> {
    const EXPECTED: &str =
        "an access-log line `host ident user [time] \"request\" status bytes ...`";
    // `[time]`, then ` "request"`.
    let open = line
        .iter()
        .position(|&b| b == b'[')
        .ok_or_else(|| parse_error(path, no, EXPECTED, line))?;
    let close = line[open..]
        .iter()
        .position(|&b| b == b']')
        .map(|p| p + open);
    let close = close.ok_or_else(|| parse_error(path, no, EXPECTED, line))?;
    let rest = &line[close + 1..];
    let rest = rest
        .strip_prefix(b" \"")
        .ok_or_else(|| parse_error(path, no, EXPECTED, line))?;
    // The request string, with Apache's escapes (`\"`, `\\`, `\xhh`) undone.
    let mut request = Vec::with_capacity(rest.len());
    let mut i = 0;
    let mut closed = false;
    while i < rest.len() {
        match rest[i] {
            b'"' => {
                closed = true;
                break;
            }
            b'\\' if i + 1 < rest.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match rest[i + 1] {
                    b'x' if i + 3 < rest.len() => match (hex(rest[i + 2]), hex(rest[i + 3])) {
                        (Some(h), Some(l)) => {
                            request.push((h * 16 + l) as u8);
                            i += 4;
                        }
                        _ => {
                            request.push(b'\\');
                            i += 1;
                        }
                    },
                    b'"' | b'\\' => {
                        request.push(rest[i + 1]);
                        i += 2;
                    }
                    _ => {
                        request.push(b'\\');
                        i += 1;
                    }
                }
            }
            b => {
                request.push(b);
                i += 1;
            }
        }
    }
    if !closed {
        return Err(parse_error(
            path,
            no,
            "a closing `\"` after the request line",
            line,
        ));
    }
    let mut parts = request.splitn(2, |&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    let Some(rest) = parts.next() else {
        return Ok(None);
    };
    if method.is_empty()
        || !method
            .iter()
            .all(|b| b.is_ascii_uppercase() || *b == b'-' || *b == b'_')
    {
        return Ok(None);
    }
    let target = match rest.iter().rposition(|&b| b == b' ') {
        Some(p) if rest[p + 1..].starts_with(b"HTTP/") => &rest[..p],
        _ => rest,
    };
    if target.is_empty() {
        return Ok(None);
    }
    Ok(Some(Record {
        method: String::from_utf8_lossy(method).into_owned(),
        target: origin_form(target).to_vec(),
        body: None,
        headers: Vec::new(),
        label: None,
        line: no,
    }))
}

fn parse_apache(path: &Path, bytes: &[u8]) -> Result<Vec<Record>, DatasetError> {
    let mut records = Vec::new();
    for (no, line) in lines(bytes) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(r) = parse_apache_line(path, no, line)? {
            records.push(r);
        }
    }
    Ok(records)
}

fn apply_label_file(
    data: &Path,
    data_bytes: &[u8],
    label_file: &Path,
    records: &mut [Record],
) -> Result<(), DatasetError> {
    let bytes = std::fs::read(label_file).map_err(|source| DatasetError::Io {
        path: label_file.to_owned(),
        source,
    })?;
    let mut labels: Vec<Option<Label>> = Vec::new();
    for (no, line) in lines(&bytes) {
        let text = String::from_utf8_lossy(line);
        let t = text.trim();
        labels.push(if t.is_empty() || t == "-" {
            None
        } else {
            Some(Label::parse(t).ok_or_else(|| {
                parse_error(
                    label_file,
                    no,
                    "a label (benign|malicious, 0|1, norm|anom) or `-`",
                    line,
                )
            })?)
        });
    }
    let data_lines = lines(data_bytes).count();
    if labels.len() != data_lines {
        return Err(DatasetError::LabelFile {
            label_file: label_file.to_owned(),
            message: format!(
                "{} labels for {} lines of {}",
                labels.len(),
                data_lines,
                data.display()
            ),
        });
    }
    for r in records {
        r.label = labels[r.line - 1];
    }
    Ok(())
}
