//! Dense row-major f32 feature matrices (one row per request, K = featurizer dimension columns).
use crate::error::{Error, Result};

/// A row-major `rows × cols` matrix of f32.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DenseMatrix {
    /// Number of rows (requests).
    pub rows: usize,
    /// Number of columns (features).
    pub cols: usize,
    /// `rows * cols` values, row after row.
    pub values: Vec<f32>,
}

impl DenseMatrix {
    /// Wraps `values` as a `rows × cols` matrix, checking the length.
    pub fn new(rows: usize, cols: usize, values: Vec<f32>) -> Result<Self> {
        if values.len() != rows * cols {
            return Err(Error::Invalid(format!(
                "a {rows}x{cols} matrix needs {} values, got {}",
                rows * cols,
                values.len()
            )));
        }
        Ok(DenseMatrix { rows, cols, values })
    }

    /// An empty matrix with `cols` columns.
    pub fn empty(cols: usize) -> Self {
        DenseMatrix {
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
                return Err(Error::Invalid(format!(
                    "row {i} has {} values, expected {cols}",
                    row.len()
                )));
            }
            values.extend_from_slice(&row);
            n += 1;
        }
        Ok(DenseMatrix {
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
    pub fn select_rows(&self, indices: &[usize]) -> DenseMatrix {
        let mut values = Vec::with_capacity(indices.len() * self.cols);
        for &i in indices {
            values.extend_from_slice(self.row(i));
        }
        DenseMatrix {
            rows: indices.len(),
            cols: self.cols,
            values,
        }
    }
}
