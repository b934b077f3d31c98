//! Every error of the loaders: [`DatasetError`] (file, line, what was expected).
use std::path::PathBuf;

/// Errors of the datasets crate.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line is not what the format says it should be.
    #[error("{path}:{line}: expected {expected}, found {found}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the format expects there.
        expected: String,
        /// What is there (shortened, escaped).
        found: String,
    },
    /// A record that CSIC's format cannot carry so that it reads back the same.
    #[error("record of line {line}: {problem}")]
    NotWritable {
        /// The record's line in its source file.
        line: usize,
        /// What cannot be written.
        problem: &'static str,
    },
    /// A format or label name that is not one of the known ones.
    #[error("unknown {what} {found:?} (expected {expected})")]
    UnknownName {
        /// `dataset format` or `label`.
        what: &'static str,
        /// The name given.
        found: String,
        /// The names accepted.
        expected: &'static str,
    },
    /// A capture file (`capture` format) was scored by another bundle than the one expected.
    #[error("{path}:{line}: capture from bundle version {found:?}, expected {expected:?}")]
    CaptureVersion {
        /// The capture file.
        path: PathBuf,
        /// 1-based line where the other version first appears.
        line: usize,
        /// The version on that line.
        found: String,
        /// The version expected (the caller's, or the file's first).
        expected: String,
    },
    /// A label file does not match its data file.
    #[error("{label_file}: {message}")]
    LabelFile {
        /// The label file.
        label_file: PathBuf,
        /// What does not match.
        message: String,
    },
}
