//! Counts per label: [`stats`].

use serde::{Deserialize, Serialize};

use crate::{Label, Record};

/// Counts per label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelCounts {
    /// Benign records.
    pub benign: usize,
    /// Malicious records.
    pub malicious: usize,
    /// Records without a label.
    pub unlabeled: usize,
}

/// What `pate-trainer data stats` prints: `{"records": N, "by_label": {...}}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of records.
    pub records: usize,
    /// Records per label.
    pub by_label: LabelCounts,
}

impl Stats {
    /// Adds the counts of `records`.
    pub fn add(&mut self, records: &[Record]) {
        for r in records {
            self.records += 1;
            match r.label {
                Some(Label::Benign) => self.by_label.benign += 1,
                Some(Label::Malicious) => self.by_label.malicious += 1,
                None => self.by_label.unlabeled += 1,
            }
        }
    }
}

/// Counts records per label.
pub fn stats(records: &[Record]) -> Stats {
    let mut s = Stats::default();
    s.add(records);
    s
}
