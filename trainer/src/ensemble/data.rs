//! What each member trains and is early-stopped on.
use crate::dense::DenseMatrix;

/// Labelled feature rows (label true = malicious).
#[derive(Debug, Clone, Default)]
pub struct LabeledRows {
    /// One row per sample.
    pub x: DenseMatrix,
    /// One label per row.
    pub y: Vec<bool>,
}

impl LabeledRows {
    /// The rows `rows` (in that order, repeats allowed) with their labels.
    pub fn select(&self, rows: &[usize]) -> LabeledRows {
        LabeledRows {
            x: self.x.select_rows(rows),
            y: rows.iter().map(|&i| self.y[i]).collect(),
        }
    }
}

/// One member's data: what it trains on and what it is early-stopped and thresholded on.
#[derive(Debug, Clone, Default)]
pub struct MemberData {
    /// Training samples.
    pub train: LabeledRows,
    /// Held-out samples (early stopping and the Youden threshold).
    pub holdout: LabeledRows,
    /// A weight per training row (None: 1 each): a row of weight w counts as w copies of it in
    /// the loss (and in `class_balance: pos_weight`'s class counts), so that distinct rows repeated
    /// many times train as one row each. Finite and positive.
    pub train_weights: Option<Vec<f32>>,
}
