//! Vote-file parsing (`privacy::votes::parse_votes`) on arbitrary text.
//!
//! Property: never panics; an accepted file has at least one query and one class, rows of equal
//! width, and survives `format_votes` → `parse_votes` unchanged.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use privacy::votes::{format_votes, parse_votes};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("fuzz/votes.csv");
    let Ok(votes) = parse_votes(text, path) else { return };
    assert!(votes.rows().all(|row| row.len() == votes.classes()));
    let _ = votes.max_teachers();
    let again = parse_votes(&format_votes(&votes), path).expect("re-reading votes this build wrote");
    assert_eq!(again.queries(), votes.queries());
    assert!(again.rows().zip(votes.rows()).all(|(a, b)| a == b));
});
