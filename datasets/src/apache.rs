//! `apache`: Apache access logs (common and combined), and label files for them.
use std::path::Path;

use crate::{lines, origin_form, parse_error, DatasetError, Label, Record};

/// Parses one access-log line. `Ok(None)`: a log entry without an HTTP request line (skipped).
pub(crate) fn parse_apache_line(
    path: &Path,
    no: usize,
    line: &[u8],
) -> Result<Option<Record>, DatasetError> {
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
    let Some((request, after)) = unquote(rest) else {
        return Err(parse_error(
            path,
            no,
            "a closing `\"` after the request line",
            line,
        ));
    };
    let after_request = &rest[after..];
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
    let client = line.split(|&b| b == b' ').next().unwrap_or_default();
    Ok(Some(Record {
        method: String::from_utf8_lossy(method).into_owned(),
        target: origin_form(target).to_vec(),
        body: None,
        headers: combined_headers(after_request),
        label: None,
        line: no,
        client: Some(String::from_utf8_lossy(client).into_owned()),
    }))
}

/// The combined format's `"referer" "user-agent"` after ` status bytes` as the request's
/// headers (none for the common format, `-` for a header the client did not send).
fn combined_headers(after_request: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut headers = Vec::new();
    let mut rest = after_request;
    for name in ["Referer", "User-Agent"] {
        let Some(open) = rest.iter().position(|&b| b == b'"') else {
            break;
        };
        let Some((value, after)) = unquote(&rest[open + 1..]) else {
            break;
        };
        if !value.is_empty() && value != b"-" {
            headers.push((name.to_string(), value));
        }
        rest = &rest[open + 1 + after..];
    }
    headers
}

/// The quoted string that `text` starts inside (after its opening `"`), with Apache's escapes
/// (`\"`, `\\`, `\xhh`) undone, and the offset just after its closing `"`; `None` when it does
/// not close.
fn unquote(text: &[u8]) -> Option<(Vec<u8>, usize)> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match (text[i], text.get(i + 1).copied()) {
            (b'"', _) => return Some((out, i + 1)),
            (b'\\', Some(b'"' | b'\\')) => {
                out.push(text[i + 1]);
                i += 2;
            }
            (b'\\', Some(b'x')) => match (text.get(i + 2), text.get(i + 3)) {
                (Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                    out.push((hex(h)? * 16 + hex(l)?) as u8);
                    i += 4;
                }
                _ => {
                    out.push(b'\\');
                    i += 1;
                }
            },
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

pub(crate) fn parse_apache(path: &Path, bytes: &[u8]) -> Result<Vec<Record>, DatasetError> {
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

pub(crate) fn apply_label_file(
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
