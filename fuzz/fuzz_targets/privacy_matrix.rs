//! Feature-matrix decoding (`privacy::matrix::decode_f32_matrix`, dense `PATEF32` and
//! compressed-row `PATESPF` layouts) on arbitrary bytes.
//!
//! Property: never panics; an accepted matrix has rows·cols finite values and survives
//! `encode_f32_matrix` → `decode_f32_matrix` bit for bit. A compressed-row header may claim a
//! matrix far larger than its bytes (the format allows it, and the decoder reserves fallibly);
//! inputs that claim more than 2^22 values are skipped so that the fuzzer's memory limit is not
//! what it finds.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use privacy::matrix::{decode_f32_matrix, encode_f32_matrix, SPARSE_MAGIC};

fuzz_target!(|data: &[u8]| {
    if data.len() >= 24 && &data[..8] == SPARSE_MAGIC {
        let rows = u64::from_le_bytes(data[8..16].try_into().unwrap());
        let cols = u64::from_le_bytes(data[16..24].try_into().unwrap());
        if rows.checked_mul(cols).is_none_or(|n| n > 1 << 22) {
            return;
        }
    }
    let path = Path::new("fuzz/matrix.f32");
    let Ok(m) = decode_f32_matrix(data, path) else { return };
    assert_eq!(m.values.len(), m.rows * m.cols);
    assert!(m.values.iter().all(|v| v.is_finite()));
    let again = decode_f32_matrix(&encode_f32_matrix(&m), path).expect("re-reading what this build wrote");
    assert_eq!((again.rows, again.cols), (m.rows, m.cols));
    assert!(again.values.iter().zip(&m.values).all(|(a, b)| a.to_bits() == b.to_bits()));
});
