//! f32 matrix files (features of every set of a run, the student's features before and after
//! privatization), in one of two layouts, all little-endian:
//! ```text
//! dense                                   sparse (compressed rows)
//! offset 0   8 bytes  magic "PATEF32\0"   offset 0   8 bytes  magic "PATESPF\0"
//! offset 8   u64      rows                offset 8   u64      rows
//! offset 16  u64      cols                offset 16  u64      cols
//! offset 24  rows·cols f32, row-major     offset 24  u64      nnz (stored values)
//!                                         offset 32  rows+1 u64: row r's values are
//!                                                    [ptr[r], ptr[r+1]); ptr[0] = 0, ptr[rows] = nnz
//!                                         then nnz u32 columns (increasing within a row)
//!                                         then nnz f32 values
//! ```
//! [`encode_f32_matrix`] writes whichever is smaller: a run's TF-IDF features are ~99 % zeros
//! (train.yaml's 41,558 private rows × 10,000 columns: 1.66 GB dense), privatized features
//! (noise everywhere) are dense. Stored values are those whose bits are not 0 (so -0.0 keeps its
//! sign); [`decode_f32_matrix`] reads both layouts into the same dense [`F32Matrix`]. The file
//! length must match its header exactly; NaN and ±inf, a column out of range or out of order and
//! a row pointer that goes back are rejected on read, naming the row and column.
use crate::{PrivacyError, Result};
use std::path::Path;

/// The 8-byte magic at the start of a dense feature-matrix file.
pub const MAGIC: &[u8; 8] = b"PATEF32\0";
/// The 8-byte magic at the start of a sparse (compressed-row) feature-matrix file.
pub const SPARSE_MAGIC: &[u8; 8] = b"PATESPF\0";
const HEADER: usize = 24;
const SPARSE_HEADER: usize = 32;

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

/// Encodes a matrix in the file format: sparse when that is smaller than dense.
pub fn encode_f32_matrix(m: &F32Matrix) -> Vec<u8> {
    let nnz = m.values.iter().filter(|v| v.to_bits() != 0).count();
    let dense_len = HEADER + 4 * m.values.len();
    let sparse_len = SPARSE_HEADER + 8 * (m.rows + 1) + 8 * nnz;
    if sparse_len < dense_len {
        return encode_sparse(m, nnz);
    }
    let mut out = Vec::with_capacity(dense_len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(m.rows as u64).to_le_bytes());
    out.extend_from_slice(&(m.cols as u64).to_le_bytes());
    for v in &m.values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn encode_sparse(m: &F32Matrix, nnz: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(SPARSE_HEADER + 8 * (m.rows + 1) + 8 * nnz);
    out.extend_from_slice(SPARSE_MAGIC);
    for n in [m.rows, m.cols, nnz] {
        out.extend_from_slice(&(n as u64).to_le_bytes());
    }
    let mut ptr = 0u64;
    out.extend_from_slice(&ptr.to_le_bytes());
    for r in 0..m.rows {
        ptr += m.row(r).iter().filter(|v| v.to_bits() != 0).count() as u64;
        out.extend_from_slice(&ptr.to_le_bytes());
    }
    for r in 0..m.rows {
        for (c, v) in m.row(r).iter().enumerate() {
            if v.to_bits() != 0 {
                out.extend_from_slice(&(c as u32).to_le_bytes());
            }
        }
    }
    for v in m.values.iter().filter(|v| v.to_bits() != 0) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Decodes the file format (either layout); `path` is only used in error messages.
pub fn decode_f32_matrix(bytes: &[u8], path: &Path) -> Result<F32Matrix> {
    let err = |message: String| PrivacyError::Format {
        path: path.to_path_buf(),
        message,
    };
    if bytes.len() >= 8 && &bytes[..8] == SPARSE_MAGIC {
        return decode_sparse(bytes, path);
    }
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(err(
            "not a feature-matrix file: expected the magic \"PATEF32\\0\" and a 24-byte header (or \"PATESPF\\0\" and a 32-byte one)"
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

fn decode_sparse(bytes: &[u8], path: &Path) -> Result<F32Matrix> {
    let err = |message: String| PrivacyError::Format {
        path: path.to_path_buf(),
        message,
    };
    if bytes.len() < SPARSE_HEADER {
        return Err(err(format!(
            "sparse feature-matrix file of {} bytes: expected a 32-byte header",
            bytes.len()
        )));
    }
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let (rows, cols, nnz) = (u64_at(8), u64_at(16), u64_at(24));
    let expected = rows
        .checked_add(1)
        .and_then(|n| n.checked_mul(8))
        .and_then(|n| n.checked_add(nnz.checked_mul(8)?))
        .and_then(|n| n.checked_add(SPARSE_HEADER as u64));
    if expected != Some(bytes.len() as u64) {
        return Err(err(format!(
            "header says {rows}×{cols} with {nnz} stored values ({} bytes with the header) but the file has {} bytes",
            expected.map(|e| e.to_string()).unwrap_or_else(|| "overflowing".into()),
            bytes.len()
        )));
    }
    let dense = rows
        .checked_mul(cols)
        .filter(|&n| n <= isize::MAX as u64 / 4);
    let Some(dense) = dense else {
        return Err(err(format!("{rows}×{cols} values do not fit in memory")));
    };
    let (rows, cols, nnz) = (rows as usize, cols as usize, nnz as usize);
    let ptr_at = SPARSE_HEADER;
    let col_at = ptr_at + 8 * (rows + 1);
    let val_at = col_at + 4 * nnz;
    // A small file can claim a large matrix: reserve fallibly, so that a claim beyond memory is
    // an error here, not an abort.
    let mut values: Vec<f32> = Vec::new();
    if values.try_reserve_exact(dense as usize).is_err() {
        return Err(err(format!(
            "{rows}×{cols} values ({} bytes dense) do not fit in memory",
            4 * dense
        )));
    }
    values.resize(dense as usize, 0.0);
    let mut start = u64_at(ptr_at);
    if start != 0 {
        return Err(err(format!(
            "row 0 starts at stored value {start}; expected 0"
        )));
    }
    for r in 0..rows {
        let end = u64_at(ptr_at + 8 * (r + 1));
        if end < start || end > nnz as u64 {
            return Err(err(format!(
                "row {r} ends at stored value {end}: expected from {start} to {nnz}"
            )));
        }
        let mut last: Option<usize> = None;
        for k in start as usize..end as usize {
            let c = u32::from_le_bytes(
                bytes[col_at + 4 * k..col_at + 4 * k + 4]
                    .try_into()
                    .expect("4 bytes"),
            ) as usize;
            if c >= cols || last.is_some_and(|l| c <= l) {
                return Err(err(format!(
                    "row {r}: column {c} after {last:?}; expected increasing columns below {cols}"
                )));
            }
            let v = f32::from_le_bytes(
                bytes[val_at + 4 * k..val_at + 4 * k + 4]
                    .try_into()
                    .expect("4 bytes"),
            );
            if !v.is_finite() {
                return Err(err(format!(
                    "value at row {r}, column {c} is {v}; expected a finite number"
                )));
            }
            values[r * cols + c] = v;
            last = Some(c);
        }
        start = end;
    }
    if start != nnz as u64 {
        return Err(err(format!(
            "the last row ends at stored value {start}; expected {nnz}"
        )));
    }
    Ok(F32Matrix { rows, cols, values })
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
