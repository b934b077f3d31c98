//! The typed privacy report of a run ([`PrivacyReport`], kept in the run directory with every
//! detail) and the whitelist that may leave it ([`PublishedPrivacy`], the bundle's `privacy:`
//! section).
//!
//! Why a whitelist: everything computed from the private data without noise (the data-dependent
//! ε and its orders, the count of queries where it beat the data-independent bound, exact private
//! record counts, the noiseless teacher-ensemble metrics) is a function of the private data that
//! no ε covers; under add/remove-one neighbours an exact private count alone reveals membership.
//! [`PublishedPrivacy`] holds only the mechanism and its parameters, δ, the number of answered
//! queries (an output of the noisy mechanism), the noise provenance, the featurizer provenance and
//! exactly one published ε with its kind.
use serde::{Deserialize, Serialize};

use crate::accountant::{EpsilonReport, Mechanism};
use crate::rng::RngProvenance;

/// Which data the featurizer's vocabulary and IDF were fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitSide {
    /// The public role (no privacy cost).
    Public,
    /// The private role: the vocabulary reveals tokens of the private data; no ε covers it.
    Private,
}

/// Where the featurizer came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeaturizerProvenance {
    /// The data it was fitted on.
    pub fit_on: FitSide,
    /// Its content hash (as in `featurizer.json`).
    pub content_hash: String,
}

/// What kind of number `published_epsilon` is.
pub mod kind {
    /// The data-independent bound (a function of the parameters, δ and the query count only).
    pub const DATA_INDEPENDENT: &str = "data-independent";
    /// Prefix of the kind of a run that is not private: `none (not private: <reasons>)`.
    pub const NOT_PRIVATE_PREFIX: &str = "none (not private: ";
}

/// The bundle's `privacy:` section: the whitelist of what may leave the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedPrivacy {
    /// The aggregation mechanism and its parameters.
    pub mechanism: Mechanism,
    /// δ of the published ε.
    pub delta: f64,
    /// Number of queries the aggregator answered (an output of the noisy mechanism).
    pub answered_queries: usize,
    /// Where the noise came from.
    pub rng: RngProvenance,
    /// Where the featurizer came from.
    pub featurizer: FeaturizerProvenance,
    /// The one published ε; `None` for a run exported as not private.
    pub published_epsilon: Option<f64>,
    /// [`kind::DATA_INDEPENDENT`], or `none (not private: <reasons>)`.
    pub published_epsilon_kind: String,
}

impl PublishedPrivacy {
    /// The dashboard's `epsilon` label: the published ε, or the kind when there is none.
    pub fn epsilon_label(&self) -> String {
        match self.published_epsilon {
            Some(e) => format!("{e}"),
            None => self.published_epsilon_kind.clone(),
        }
    }
}

/// The privacy part of a run's `report.json`: every detail, for the people who may see the
/// private data. NOT to be copied out of the run directory; [`PrivacyReport::published`] is what
/// may leave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyReport {
    /// True when the roles were simulated from one labelled pool (an evaluation, not a deployment).
    pub simulation: bool,
    /// The aggregation mechanism and its parameters.
    pub mechanism: Mechanism,
    /// δ.
    pub delta: f64,
    /// Queries sent to the teachers.
    pub queries: usize,
    /// Queries answered.
    pub answered_queries: usize,
    /// Where the noise came from.
    pub rng: RngProvenance,
    /// ρ of the query privatization (None: off).
    pub rho: Option<f64>,
    /// 2ρ, the local ε of each privatized query (None: off).
    pub student_local_epsilon: Option<f64>,
    /// Where the featurizer came from.
    pub featurizer: FeaturizerProvenance,
    /// The accountant's full report (data-independent AND data-dependent: private detail).
    pub accountant: EpsilonReport,
    /// Set when δ ≥ 1/n for n private records.
    pub delta_warning: Option<String>,
}

/// Why a run's ε does not hold ([`PrivacyReport::not_private_reasons`]); displayed as the
/// reasons joined by `, `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .reasons.join(", "))]
pub struct NotPrivate {
    /// Seeded noise, a featurizer fitted on private data.
    pub reasons: Vec<&'static str>,
}

impl PrivacyReport {
    /// Why this run's ε does not hold (empty when it does): seeded noise, a featurizer fitted on
    /// the private data.
    pub fn not_private_reasons(&self) -> Vec<&'static str> {
        let mut reasons = Vec::new();
        if self.rng.is_seeded() {
            reasons.push("seeded noise");
        }
        if self.featurizer.fit_on == FitSide::Private {
            reasons.push("featurizer fitted on private data");
        }
        reasons
    }

    /// The whitelist for the bundle. `Err(reasons)` when the run is not private and
    /// `allow_not_private` is false; with `allow_not_private` such a run gets no ε and the kind
    /// `none (not private: <reasons>)`. A private run publishes its data-independent ε.
    pub fn published(&self, allow_not_private: bool) -> Result<PublishedPrivacy, NotPrivate> {
        let reasons = self.not_private_reasons();
        let (published_epsilon, published_epsilon_kind) = if reasons.is_empty() {
            (
                Some(self.accountant.data_independent_epsilon),
                kind::DATA_INDEPENDENT.to_string(),
            )
        } else if allow_not_private {
            (
                None,
                format!("{}{})", kind::NOT_PRIVATE_PREFIX, reasons.join(", ")),
            )
        } else {
            return Err(NotPrivate { reasons });
        };
        Ok(PublishedPrivacy {
            mechanism: self.mechanism,
            delta: self.delta,
            answered_queries: self.answered_queries,
            rng: self.rng,
            featurizer: self.featurizer.clone(),
            published_epsilon,
            published_epsilon_kind,
        })
    }
}
