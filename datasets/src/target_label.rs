//! `csv`: the generic `target,label` CSV/TSV.
use std::path::Path;

use crate::{csv_error, parse_error, CsvLines, DatasetError, Label, Record};

pub(crate) fn parse_target_label_csv(
    path: &Path,
    bytes: &[u8],
) -> Result<Vec<Record>, DatasetError> {
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
            client: None,
        });
    }
    Ok(records)
}
