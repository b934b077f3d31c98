//! The run's artifact files: labels, matrices, JSON and raw bytes, written atomically; file
//! hashes.
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::dense::DenseMatrix;
use crate::error::{Error, Result};

/// Reads a labels file (privacy format: one class index per line, `-` for no answer) as
/// `Option<bool>` (true = malicious).
pub fn read_labels(path: &Path) -> Result<Vec<Option<bool>>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let labels = privacy::aggregate::parse_labels(&text, path)?;
    labels
        .into_iter()
        .enumerate()
        .map(|(i, l)| match l {
            None => Ok(None),
            Some(0) => Ok(Some(false)),
            Some(1) => Ok(Some(true)),
            Some(c) => Err(Error::Label {
                path: path.to_owned(),
                line: i + 1,
                found: format!("class {c}"),
                expected: "0 = benign or 1 = malicious",
            }),
        })
        .collect()
}

/// Reads a labels file in which every line must be a label (no `-`): validation or test labels.
/// `expected` says so in the error of an unlabelled line.
pub fn read_full_labels(path: &Path, expected: &'static str) -> Result<Vec<bool>> {
    read_labels(path)?
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            l.ok_or_else(|| Error::Label {
                path: path.to_owned(),
                line: i + 1,
                found: "no label".into(),
                expected,
            })
        })
        .collect()
}

/// Writes labels (true = malicious) in the privacy crate's label-file format, atomically.
pub fn write_labels(path: &Path, labels: &[Option<bool>]) -> Result<()> {
    let classes: Vec<Option<usize>> = labels.iter().map(|l| l.map(usize::from)).collect();
    write_file(path, privacy::aggregate::format_labels(&classes).as_bytes())
}

/// Writes a file atomically.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    featurizer::write_atomic(path, bytes).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// Writes pretty JSON atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(Error::serialize(path.display()))?;
    bytes.push(b'\n');
    write_file(path, &bytes)
}

/// Reads a feature matrix (the privacy crate's little-endian f32 matrix file).
pub fn read_matrix(path: &Path) -> Result<DenseMatrix> {
    Ok(privacy::matrix::read_f32_matrix(path)?)
}

/// Writes a feature matrix atomically (the privacy crate's f32 matrix file).
pub fn write_matrix(path: &Path, m: &DenseMatrix) -> Result<()> {
    privacy::matrix::write_f32_matrix(path, m)?;
    Ok(())
}

/// sha256 hex of a file's bytes.
pub fn file_sha256(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}
