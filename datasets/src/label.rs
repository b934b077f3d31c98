//! The class of a request: [`Label`].
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The class of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Label {
    /// Normal traffic (class 0).
    Benign,
    /// An attack (class 1).
    Malicious,
}

impl Label {
    /// The class index used by the models: benign 0, malicious 1.
    pub fn class(self) -> usize {
        match self {
            Label::Benign => 0,
            Label::Malicious => 1,
        }
    }

    /// The label of class index 0 or 1.
    pub fn from_class(class: usize) -> Option<Label> {
        match class {
            0 => Some(Label::Benign),
            1 => Some(Label::Malicious),
            _ => None,
        }
    }

    /// Parses the spellings found in datasets (case-insensitive): `benign|malicious`, `0|1`,
    /// `norm|anom`, `normal|anomalous`, `good|bad`.
    pub fn parse(s: &str) -> Option<Label> {
        match s.trim().to_ascii_lowercase().as_str() {
            "benign" | "0" | "norm" | "normal" | "good" => Some(Label::Benign),
            "malicious" | "1" | "anom" | "anomalous" | "bad" => Some(Label::Malicious),
            _ => None,
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Label::Benign => "benign",
            Label::Malicious => "malicious",
        })
    }
}

impl FromStr for Label {
    type Err = crate::DatasetError;
    fn from_str(s: &str) -> Result<Self, crate::DatasetError> {
        Label::parse(s).ok_or_else(|| crate::DatasetError::UnknownName {
            what: "label",
            found: s.to_string(),
            expected: "benign|malicious, 0|1, norm|anom",
        })
    }
}
