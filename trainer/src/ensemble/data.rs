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

/// One member's data: what it trains on and what it is early-stopped and thresholded on.
#[derive(Debug, Clone, Default)]
pub struct MemberData {
    /// Training samples.
    pub train: LabeledRows,
    /// Held-out samples (early stopping and the Youden threshold).
    pub holdout: LabeledRows,
}
