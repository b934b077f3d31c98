//! `csic`: CSIC 2010 raw HTTP requests (see the crate documentation).
use std::path::Path;

use crate::{lines, origin_form, parse_error, DatasetError, Label, Record};

pub(crate) const CSIC_METHODS: [&[u8]; 3] = [b"GET ", b"POST ", b"PUT "];

pub(crate) fn parse_csic(
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
                client: None,
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

/// `records` in CSIC 2010's format, so that `load_with(Format::Csic, ..)` reads them back equal
/// (but for `line` and `label`, which the file name gives): the request line with the origin-form
/// target, the headers, a blank line, the body's lines, a blank line; CRLF line ends as in CSIC's
/// files. A record whose request line, headers or body would read back otherwise (a line break in
/// the method, target or a header, a body with a blank line or a line starting like a request
/// line) is an error naming the record's line.
pub fn write_csic<'a>(
    records: impl IntoIterator<Item = &'a Record>,
) -> Result<Vec<u8>, DatasetError> {
    let mut out = Vec::new();
    for r in records {
        let bad = |problem| DatasetError::NotWritable {
            line: r.line,
            problem,
        };
        let broken = |b: &[u8]| b.iter().any(|&c| c == b'\n' || c == b'\r');
        if broken(r.method.as_bytes()) || r.method.contains(' ') || r.method.is_empty() {
            return Err(bad("the method is empty or holds a space or a line break"));
        }
        if r.target.is_empty() || broken(&r.target) || r.target.contains(&b' ') {
            return Err(bad("the target is empty or holds a space or a line break"));
        }
        if !CSIC_METHODS
            .iter()
            .any(|m| m.strip_suffix(b" ") == Some(r.method.as_bytes()))
        {
            return Err(bad(
                "the method is not one CSIC's format reads (GET, POST, PUT)",
            ));
        }
        out.extend_from_slice(r.method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(&r.target);
        out.extend_from_slice(b" HTTP/1.1\r\n");
        for (name, value) in &r.headers {
            if broken(name.as_bytes())
                || name.contains(':')
                || name.trim() != name
                || name.is_empty()
                || broken(value)
                || value.trim_ascii() != value.as_slice()
            {
                return Err(bad("a header does not read back as `Name: value`"));
            }
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        if let Some(body) = &r.body {
            if body.contains(&b'\r') {
                return Err(bad("the body holds a carriage return"));
            }
            for line in body.split(|&b| b == b'\n') {
                if line.is_empty() || CSIC_METHODS.iter().any(|m| line.starts_with(m)) {
                    return Err(bad(
                        "the body has a blank line or a line starting like a request line",
                    ));
                }
                out.extend_from_slice(line);
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(b"\r\n");
    }
    Ok(out)
}
