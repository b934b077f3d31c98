//! `httpparams`: HttpParamsDataset CSV (`payload,length,attack_type,label`).
use std::path::Path;

use crate::{csv_error, parse_error, CsvLines, DatasetError, Label, Record};

pub(crate) fn parse_httpparams(path: &Path, bytes: &[u8]) -> Result<Vec<Record>, DatasetError> {
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
            client: None,
        });
    }
    Ok(records)
}
