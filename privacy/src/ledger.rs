//! The privacy ledger of a teacher set: every noisy aggregation that used the teachers, one JSON
//! line each, in a file beside them (`teachers/ledger.jsonl`), and the ε composed over all of it.
//!
//! Why: a teacher set answers queries for every run that reuses it (a repeated `run` into the same
//! run directory keeps teachers trained on the same data; sweeps; several `aggregate` calls on
//! the same organizations' votes). Each aggregation spends privacy of the same private records,
//! and the spending adds up: Rényi DP composes additively at every order (Mironov 2017,
//! Proposition 1), so the total is min_α of Σₑ RDPₑ(α) converted at δ by
//! [`crate::accountant::rdp_epsilon`].
//!
//! Each entry's data-independent RDP curve, as in [`crate::accountant`]:
//! * LNMax(γ): its moments bound 2γ²λ(λ+1) is λ·RDP(λ+1), so RDP(α) = 2γ²α per query;
//! * GNMax(σ): α/σ² per query (a head of k queries at σ_h: k·α/σ_h² for those);
//! * Confident-GNMax(T, σ₁, σ₂): α/(2σ₁²) per query plus α/σ₂² for min(queries, max_answered)
//!   queries — every query without a cap: the number actually answered depends on the votes
//!   (see [`crate::accountant`]).
//!
//! Only data-independent values are composed: the ledger is meant to be read by whoever holds the
//! teachers, and its composed ε is publishable.
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::accountant::{default_rdp_orders, Mechanism};
use crate::noise::{DiscreteGaussian, DiscreteLaplace};
use crate::{PrivacyError, Result};

/// One aggregation that used the teacher set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    /// When (RFC 3339 UTC, or any text the writer chose).
    pub time: String,
    /// What ran it (e.g. `run RUN_DIR`, `aggregate --out labels.csv`).
    pub by: String,
    /// The mechanism and its parameters.
    pub mechanism: Mechanism,
    /// Queries asked of the teachers' votes.
    pub queries: usize,
    /// Queries answered (a record; the data-independent RDP never charges it: it depends on the
    /// votes).
    pub answered: usize,
}

impl LedgerEntry {
    /// Data-independent RDP of this aggregation at order α > 1.
    pub fn rdp(&self, alpha: f64) -> Result<f64> {
        Ok(match &self.mechanism {
            Mechanism::Lnmax(m) => {
                let gamma = DiscreteLaplace::new(m.gamma)?.gamma.to_f64();
                self.queries as f64 * 2.0 * gamma * gamma * alpha
            }
            Mechanism::Gnmax(m) => {
                let s2 = DiscreteGaussian::new(m.sigma)?.sigma2.to_f64();
                let k = m.head_queries(self.queries);
                let head = match m.head {
                    Some(h) => k as f64 * alpha / DiscreteGaussian::new(h.sigma)?.sigma2.to_f64(),
                    None => 0.0,
                };
                head + (self.queries - k) as f64 * alpha / s2
            }
            Mechanism::ConfidentGnmax(m) => {
                let s1 = DiscreteGaussian::new(m.sigma1)?.sigma2.to_f64();
                let s2 = DiscreteGaussian::new(m.sigma2)?.sigma2.to_f64();
                self.queries as f64 * alpha / (2.0 * s1)
                    + m.gnmax_steps_bound(self.queries) as f64 * alpha / s2
            }
            // One release, however many queries it labelled.
            Mechanism::ModelAverage(m) => {
                m.check()?;
                m.rdp(alpha)
            }
        })
    }
}

/// The ε of every entry composed, at δ, minimized over the RDP orders of
/// [`default_rdp_orders`] and a fine grid in (1, 1.25): `(ε, α)`.
pub fn composed_epsilon(entries: &[LedgerEntry], delta: f64) -> Result<(f64, f64)> {
    if !(delta > 0.0 && delta < 1.0) {
        return Err(PrivacyError::Parameter {
            name: "delta",
            reason: format!("must be in (0, 1), got {delta}"),
        });
    }
    let mut orders: Vec<f64> = (1..25).map(|i| 1.0 + i as f64 / 100.0).collect();
    orders.extend(default_rdp_orders());
    let mut best = (f64::INFINITY, orders[0]);
    for &alpha in &orders {
        let mut total = 0.0;
        for e in entries {
            total += e.rdp(alpha)?;
        }
        let eps = crate::accountant::rdp_epsilon(total, alpha, -delta.ln());
        if eps < best.0 {
            best = (eps, alpha);
        }
    }
    Ok(best)
}

/// Appends one entry to the ledger at `path` (created if absent), flushed and synced: a ledger
/// that loses entries would undercount the spending.
pub fn append(path: &Path, entry: &LedgerEntry) -> Result<()> {
    let io = |source| PrivacyError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut line = serde_json::to_string(entry).map_err(|source| PrivacyError::Serialize {
        what: "ledger entry",
        source,
    })?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    f.write_all(line.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)
}

/// Reads a ledger (absent file: no entries). Errors name the file and line.
pub fn read(path: &Path) -> Result<Vec<LedgerEntry>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(PrivacyError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| PrivacyError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                message: format!("not a ledger entry: {e}"),
            })
        })
        .collect()
}
