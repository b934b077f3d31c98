//! Helpers shared by the line-based loaders: line splitting, error rendering, origin form.
use std::path::Path;

use crate::DatasetError;

/// Lines of a file without their terminator (`\n` or `\r\n`), with 1-based numbers. A final
/// line without a terminator counts; the empty string after a final newline does not.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let empty = bytes.is_empty();
    body.split(|&b| b == b'\n')
        .filter(move |_| !empty)
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .enumerate()
        .map(|(i, l)| (i + 1, l))
}

/// A short, escaped rendering of some bytes for error messages.
pub(crate) fn show(bytes: &[u8]) -> String {
    const MAX: usize = 80;
    let cut = bytes.len() > MAX;
    let mut s: String = bytes[..bytes.len().min(MAX)].escape_ascii().to_string();
    if cut {
        s.push('…');
    }
    format!("\"{s}\"")
}

pub(crate) fn parse_error(
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
