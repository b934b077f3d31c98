//! One request of a dataset: [`Record`].

use serde::{Deserialize, Serialize};

use crate::Label;

/// One request of a dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Request method (`GET` where the format has none).
    pub method: String,
    /// Origin-form target (path + optional query), as in the file (still encoded).
    pub target: Vec<u8>,
    /// Request body, when the request has a non-empty one.
    pub body: Option<Vec<u8>>,
    /// Request headers (name, value) in order, where the format has them (CSIC); empty
    /// otherwise. The featurizer reads them only with its `placements` setting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, Vec<u8>)>,
    /// The label, when the file gives one.
    pub label: Option<Label>,
    /// 1-based line of the file where the request starts.
    pub line: usize,
    /// The client that sent it, where the format names one (an access log's remote host, a
    /// capture's address without its port): the site's format model counts a client's requests
    /// at most a few times (`site.requests_per_client`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

impl Record {
    /// A `GET` of `target` with no headers or body, on line 1: the smallest request.
    pub fn get(target: &str, label: Option<Label>) -> Record {
        Record {
            method: "GET".into(),
            target: target.as_bytes().to_vec(),
            body: None,
            headers: Vec::new(),
            label,
            line: 1,
            client: None,
        }
    }

    /// The view the featurizer reads.
    pub fn parts(&self) -> featurizer::RequestParts<'_> {
        featurizer::RequestParts {
            method: &self.method,
            target: &self.target,
            body: self.body.as_deref(),
            headers: featurizer::Headers::Owned(&self.headers),
            excluded_fields: Default::default(),
        }
    }
}
