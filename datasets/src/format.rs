//! The dataset formats: [`Format`].
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A dataset format (names as on the command line: `csic|fwaf|httpparams|csv|apache|capture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// CSIC 2010 raw HTTP requests.
    Csic,
    /// Fwaf query lists, one path + query per line.
    Fwaf,
    /// HttpParamsDataset CSV (`payload,length,attack_type,label`).
    Httpparams,
    /// Generic `target,label` CSV or TSV.
    Csv,
    /// Apache access log, common or combined format.
    Apache,
    /// pate-proxy's capture file (`capture:`): JSON lines of the requests it scored, headers
    /// and body included, unlabelled.
    Capture,
}

impl Format {
    /// All formats.
    pub const ALL: [Format; 6] = [
        Format::Csic,
        Format::Fwaf,
        Format::Httpparams,
        Format::Csv,
        Format::Apache,
        Format::Capture,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csic => "csic",
            Format::Fwaf => "fwaf",
            Format::Httpparams => "httpparams",
            Format::Csv => "csv",
            Format::Apache => "apache",
            Format::Capture => "capture",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = crate::DatasetError;
    fn from_str(s: &str) -> Result<Self, crate::DatasetError> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| crate::DatasetError::UnknownName {
                what: "dataset format",
                found: s.to_string(),
                expected: "csic|fwaf|httpparams|csv|apache|capture",
            })
    }
}
