//! Dense f32 matrix file (student features before/after privatization).
//!
//! Layout, all little-endian:
//! ```text
//! offset 0   8 bytes  magic "PATEF32\0"
//! offset 8   u64      rows
//! offset 16  u64      cols
//! offset 24  rows·cols f32, row-major
//! ```
//! The file length must be exactly 24 + 4·rows·cols; NaN and ±inf are rejected on read.
use crate::{PrivacyError, Result};
use std::path::Path;

/// The 8-byte magic at the start of a feature-matrix file.
pub const MAGIC: &[u8; 8] = b"PATEF32\0";
const HEADER: usize = 24;

/// A dense row-major f32 matrix: the one feature-matrix type of the workspace (one row per
/// request, K = featurizer dimension columns), used by the trainer and by the matrix files.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct F32Matrix {
    /// Number of rows (records).
    pub rows: usize,
    /// Number of columns (features).
    pub cols: usize,
    /// `rows × cols` values, row-major.
    pub values: Vec<f32>,
}

impl F32Matrix {
    /// Builds a matrix, checking `values.len() == rows·cols`.
    pub fn new(rows: usize, cols: usize, values: Vec<f32>) -> Result<Self> {
        if rows.checked_mul(cols) != Some(values.len()) {
            return Err(PrivacyError::MatrixSize {
                rows,
                cols,
                values: values.len(),
            });
        }
        Ok(F32Matrix { rows, cols, values })
    }

    /// An empty matrix with `cols` columns.
    pub fn empty(cols: usize) -> Self {
        F32Matrix {
            rows: 0,
            cols,
            values: Vec::new(),
        }
    }

    /// Builds a matrix from equally long rows.
    pub fn from_rows(cols: usize, rows: impl IntoIterator<Item = Vec<f32>>) -> Result<Self> {
        let mut values = Vec::new();
        let mut n = 0;
        for (i, row) in rows.into_iter().enumerate() {
            if row.len() != cols {
                return Err(PrivacyError::RowLength {
                    row: i,
                    found: row.len(),
                    expected: cols,
                });
            }
            values.extend_from_slice(&row);
            n += 1;
        }
        Ok(F32Matrix {
            rows: n,
            cols,
            values,
        })
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.values[i * self.cols..(i + 1) * self.cols]
    }

    /// The rows at `indices`, in that order.
    pub fn select_rows(&self, indices: &[usize]) -> F32Matrix {
        let mut values = Vec::with_capacity(indices.len() * self.cols);
        for &i in indices {
            values.extend_from_slice(self.row(i));
        }
        F32Matrix {
            rows: indices.len(),
            cols: self.cols,
            values,
        }
    }
}

/// Encodes a matrix in the file format.
pub fn encode_f32_matrix(m: &F32Matrix) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + 4 * m.values.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(m.rows as u64).to_le_bytes());
    out.extend_from_slice(&(m.cols as u64).to_le_bytes());
    for v in &m.values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Decodes the file format; `path` is only used in error messages.
pub fn decode_f32_matrix(bytes: &[u8], path: &Path) -> Result<F32Matrix> {
    let err = |message: String| PrivacyError::Format {
        path: path.to_path_buf(),
        message,
    };
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(err(
            "not a feature-matrix file: expected the magic \"PATEF32\\0\" and a 24-byte header"
                .into(),
        ));
    }
    let rows = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let cols = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
    let expected = rows
        .checked_mul(cols)
        .and_then(|n| n.checked_mul(4))
        .and_then(|n| n.checked_add(HEADER as u64));
    if expected != Some(bytes.len() as u64) {
        return Err(err(format!(
            "header says {rows}×{cols} f32 values ({} bytes with the header) but the file has {} bytes",
            expected.map(|e| e.to_string()).unwrap_or_else(|| "overflowing".into()),
            bytes.len()
        )));
    }
    let (rows, cols) = (rows as usize, cols as usize);
    let mut data = Vec::with_capacity(rows * cols);
    for (i, chunk) in bytes[HEADER..].chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes(chunk.try_into().expect("4 bytes"));
        if !v.is_finite() {
            return Err(err(format!(
                "value at row {}, column {} is {v}; expected a finite number",
                i / cols.max(1),
                i % cols.max(1)
            )));
        }
        data.push(v);
    }
    Ok(F32Matrix {
        rows,
        cols,
        values: data,
    })
}

/// Reads a feature-matrix file.
pub fn read_f32_matrix(path: &Path) -> Result<F32Matrix> {
    let bytes = std::fs::read(path).map_err(|source| PrivacyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode_f32_matrix(&bytes, path)
}

/// Writes a feature-matrix file atomically.
pub fn write_f32_matrix(path: &Path, m: &F32Matrix) -> Result<()> {
    crate::write_atomic(path, &encode_f32_matrix(m))
}
