//! `fwaf`: Fwaf query lists, one path + query per line.

use crate::{lines, Label, Record};

pub(crate) fn parse_fwaf(bytes: &[u8], label: Option<Label>) -> Vec<Record> {
    lines(bytes)
        .filter(|(_, l)| !l.is_empty())
        .map(|(no, l)| Record {
            method: "GET".into(),
            target: l.to_vec(),
            body: None,
            headers: Vec::new(),
            label,
            line: no,
            client: None,
        })
        .collect()
}
