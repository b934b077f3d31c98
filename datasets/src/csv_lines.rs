//! The CSV reader shared by `httpparams` and `csv`, with line numbers for errors.
use std::path::Path;

use crate::DatasetError;

/// Line numbers of CSV records from their byte offsets. (The csv crate's own line count is off by
/// one after CRLF line ends, and its byte offset may point at the `\n` of the previous CRLF or at
/// skipped blank lines, so both are corrected here.)
pub(crate) struct CsvLines<'a> {
    bytes: &'a [u8],
    offset: usize,
    line: usize,
}

impl<'a> CsvLines<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        CsvLines {
            bytes,
            offset: 0,
            line: 1,
        }
    }

    /// 1-based line of the record that starts at byte `pos` (calls in increasing order).
    pub(crate) fn line_at(&mut self, pos: Option<&csv::Position>) -> usize {
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

pub(crate) fn csv_error(path: &Path, lines: &mut CsvLines, e: csv::Error) -> DatasetError {
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
