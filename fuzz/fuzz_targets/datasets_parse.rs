//! The dataset parsers (`datasets::parse`) on arbitrary bytes, for every format.
//!
//! Input layout: byte 0 picks the format (mod the number of formats) and, with bit 4, a file name that carries a
//! label (`..._anomalous...`) or not; the rest is the file's content. Property: never panics, and
//! every record parsed turns into request parts.
#![no_main]

use std::path::Path;

use datasets::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let format = Format::ALL[usize::from(selector) % Format::ALL.len()];
    let path = if selector & 0x10 != 0 {
        Path::new("fuzz/normalTrafficTraining_anomalous.txt")
    } else {
        Path::new("fuzz/input.txt")
    };
    if let Ok(records) = datasets::parse(format, path, bytes) {
        for record in &records {
            let parts = record.parts();
            let _ = datasets::origin_form(parts.target);
        }
        let stats = datasets::stats(&records);
        let _ = format!("{stats:?}");
    }
});
