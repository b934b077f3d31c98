//! Vote files: one line per query, the per-class vote counts as non-negative integers separated by
//! commas, no header; lines starting with `#` are comments (blank lines are ignored). Every line
//! has the same number of classes (at least 2). A bad line is an error naming file and line.
use crate::{PrivacyError, Result};
use std::path::Path;

/// Per-query vote counts of the teacher ensemble (row-major, `queries × classes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteMatrix {
    classes: usize,
    counts: Vec<u64>,
}

impl VoteMatrix {
    /// Builds a matrix from rows; every row must have the same length ≥ 2.
    pub fn from_rows<R: AsRef<[u64]>>(rows: &[R]) -> Result<Self> {
        let classes = rows.first().map(|r| r.as_ref().len()).unwrap_or(2);
        if classes < 2 {
            return Err(PrivacyError::TooFewClasses(classes));
        }
        let mut counts = Vec::with_capacity(rows.len() * classes);
        for (i, r) in rows.iter().enumerate() {
            let r = r.as_ref();
            if r.len() != classes {
                return Err(PrivacyError::RowClasses {
                    row: i,
                    found: r.len(),
                    expected: classes,
                });
            }
            counts.extend_from_slice(r);
        }
        Ok(VoteMatrix { classes, counts })
    }
    /// Number of queries (rows).
    pub fn queries(&self) -> usize {
        self.counts.len() / self.classes
    }
    /// Number of classes (columns).
    pub fn classes(&self) -> usize {
        self.classes
    }
    /// Vote counts of query `i`.
    pub fn row(&self, i: usize) -> &[u64] {
        &self.counts[i * self.classes..(i + 1) * self.classes]
    }
    /// All rows in order.
    pub fn rows(&self) -> impl Iterator<Item = &[u64]> {
        self.counts.chunks_exact(self.classes)
    }
    /// The largest number of votes cast on one query (the number of teachers N when every
    /// teacher votes on every query).
    pub fn max_teachers(&self) -> u64 {
        // Saturating: a matrix built with from_rows may hold counts whose sum exceeds u64.
        self.rows()
            .map(|r| r.iter().fold(0u64, |sum, &v| sum.saturating_add(v)))
            .max()
            .unwrap_or(0)
    }
}

/// Parses vote-file text; `path` is only used in error messages.
pub fn parse_votes(text: &str, path: &Path) -> Result<VoteMatrix> {
    let err = |line: usize, message: String| PrivacyError::Parse {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut classes: Option<(usize, usize)> = None; // (classes, first data line)
    let mut counts = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut n = 0usize;
        // A row's votes are summed (max_teachers, the sensitivity of the counts): refuse rows
        // whose sum does not fit in u64 rather than overflow later (found by fuzz/privacy_votes).
        let mut row_sum: u64 = 0;
        for field in line.split(',') {
            let field = field.trim();
            let value: u64 = field.parse().map_err(|_| {
                err(
                    line_no,
                    format!(
                        "field {} is {field:?}; expected a non-negative integer vote count",
                        n + 1
                    ),
                )
            })?;
            row_sum = row_sum.checked_add(value).ok_or_else(|| {
                err(line_no, format!("the vote counts of this line sum to more than {}; expected realistic counts", u64::MAX))
            })?;
            counts.push(value);
            n += 1;
        }
        match classes {
            None => {
                if n < 2 {
                    return Err(err(
                        line_no,
                        format!("{n} class count(s); expected at least 2 comma-separated counts"),
                    ));
                }
                classes = Some((n, line_no));
            }
            Some((c, first)) if c != n => {
                return Err(err(
                    line_no,
                    format!("{n} class counts; expected {c} like line {first}"),
                ));
            }
            Some(_) => {}
        }
    }
    let Some((classes, _)) = classes else {
        return Err(err(0, "no votes: the file has no data line".into()));
    };
    Ok(VoteMatrix { classes, counts })
}

/// Reads a vote file.
pub fn read_vote_file(path: &Path) -> Result<VoteMatrix> {
    let text = std::fs::read_to_string(path).map_err(|source| PrivacyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_votes(&text, path)
}

/// Renders a vote matrix in the vote-file format.
pub fn format_votes(votes: &VoteMatrix) -> String {
    let mut out = String::with_capacity(votes.queries() * (votes.classes() * 4));
    for row in votes.rows() {
        for (j, c) in row.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push_str(&c.to_string());
        }
        out.push('\n');
    }
    out
}

/// Writes a vote file atomically.
pub fn write_vote_file(path: &Path, votes: &VoteMatrix) -> Result<()> {
    crate::write_atomic(path, format_votes(votes).as_bytes())
}
