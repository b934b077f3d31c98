//! Distributed noise for multi-organization PATE (an option beyond standard PATE).
//!
//! In standard PATE the aggregator sums the organizations' clean vote counts and adds the noise
//! itself: it sees clean counts. Here each of the n organizations adds its own share of the
//! GNMax noise to its votes before sending them: counts + N_ℤ(0, σ²/n) on every class, drawn
//! from its own OS-seeded CSPRNG. The aggregator sums the n noisy vote files and takes the argmax
//! (ties to the lowest class), adding nothing: the sum carries noise of total variance σ², so the
//! aggregate is the GNMax(σ) release and the accounting is unchanged (the accountant's σ² is
//! rounded up from the requested σ; each share's σ²/n is rounded up too, so the shares sum to at
//! least that σ²).
//!
//! Exactness: a sum of independent discrete Gaussians is not exactly a discrete Gaussian; its
//! distance to N_ℤ(0, σ²) is exponentially small in the shares' variance (Kairouz, Liu & Steinke
//! 2021, "The Distributed Discrete Gaussian Mechanism for Federated Learning with Secure
//! Aggregation", §4). Shares are therefore required to have σ/√n ≥ [`MIN_SHARE_SIGMA`] = 2, where
//! the terms of that bound are below e^{−39}.
//!
//! Threat model (docs/privacy.md, "Several organizations"): the aggregator never sees a clean
//! count. k colluding organizations can subtract their own k shares from the sum, leaving noise of
//! variance σ²·(n − k)/n against the others' votes: the ε the other organizations get from
//! the aggregator's view is that of GNMax(σ·√((n − k)/n)), not GNMax(σ). Only GNMax is offered:
//! LNMax's Laplace noise is not a sum of discrete shares of the same family, and
//! Confident-GNMax's threshold test needs the maximum count plus one scalar noise, which no
//! organization can compute alone.
use std::path::{Path, PathBuf};

use crate::noise::DiscreteGaussian;
use crate::rng::NoiseRng;
use crate::votes::VoteMatrix;
use crate::{PrivacyError, Result};

/// Smallest share standard deviation σ/√n accepted.
pub const MIN_SHARE_SIGMA: f64 = 2.0;

/// First line of a noisy share file.
pub const HEADER: &str = "# pate-waf noisy vote share";

/// One organization's noisy votes: its counts plus its share of the GNMax noise.
#[derive(Debug, Clone, PartialEq)]
pub struct NoisyShare {
    /// σ of the whole GNMax noise (each share is N_ℤ(0, σ²/n)).
    pub sigma: f64,
    /// n, the number of organizations whose shares sum to the noise.
    pub organizations: usize,
    /// One row per query, one noisy count per class.
    pub rows: Vec<Vec<i64>>,
}

fn share_distribution(sigma: f64, organizations: usize) -> Result<DiscreteGaussian> {
    if organizations < 1 {
        return Err(PrivacyError::Parameter {
            name: "the number of organizations",
            reason: "must be at least 1".into(),
        });
    }
    let share = sigma / (organizations as f64).sqrt();
    if share.is_nan() || share < MIN_SHARE_SIGMA {
        return Err(PrivacyError::Parameter {
            name: "sigma / sqrt(organizations)",
            reason: format!(
                "= {share} is below {MIN_SHARE_SIGMA}: the shares would \
             not sum to a discrete Gaussian closely enough; use a larger sigma"
            ),
        });
    }
    DiscreteGaussian::new(share)
}

/// Adds one organization's noise share N_ℤ(0, σ²/n) to every count of `votes`.
pub fn noisy_share(
    votes: &VoteMatrix,
    sigma: f64,
    organizations: usize,
    rng: &mut NoiseRng,
) -> Result<NoisyShare> {
    DiscreteGaussian::new(sigma)?;
    let d = share_distribution(sigma, organizations)?;
    let rows = votes
        .rows()
        .map(|r| {
            r.iter()
                .map(|&c| {
                    (c as i128 + d.sample(rng)).clamp(i64::MIN as i128, i64::MAX as i128) as i64
                })
                .collect()
        })
        .collect();
    Ok(NoisyShare {
        sigma,
        organizations,
        rows,
    })
}

/// The file text: [`HEADER`] with `sigma=` and `organizations=`, then one line per query.
pub fn format_share(share: &NoisyShare) -> String {
    let mut s = format!(
        "{HEADER}: mechanism=gnmax sigma={} organizations={}\n",
        share.sigma, share.organizations
    );
    for r in &share.rows {
        let line: Vec<String> = r.iter().map(|v| v.to_string()).collect();
        s.push_str(&line.join(","));
        s.push('\n');
    }
    s
}

/// True when `text` starts with [`HEADER`] (a noisy share rather than a clean vote file).
pub fn is_share(text: &str) -> bool {
    text.starts_with(HEADER)
}

/// Parses a noisy share file; errors name the file and line.
pub fn parse_share(text: &str, path: &Path) -> Result<NoisyShare> {
    let bad = |line: usize, message: String| PrivacyError::Parse {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    let rest = header.strip_prefix(HEADER).ok_or_else(|| {
        bad(
            1,
            format!("expected the header {HEADER:?}: mechanism=gnmax sigma=S organizations=N"),
        )
    })?;
    let mut sigma = None;
    let mut organizations = None;
    for field in rest.trim_start_matches(':').split_whitespace() {
        match field.split_once('=') {
            Some(("mechanism", "gnmax")) => {}
            Some(("sigma", v)) => sigma = v.parse::<f64>().ok(),
            Some(("organizations", v)) => organizations = v.parse::<usize>().ok(),
            _ => return Err(bad(1, format!("unexpected header field {field:?}"))),
        }
    }
    let (Some(sigma), Some(organizations)) = (sigma, organizations) else {
        return Err(bad(
            1,
            "the header needs sigma=S and organizations=N".into(),
        ));
    };
    let mut rows: Vec<Vec<i64>> = Vec::new();
    for (i, raw) in lines.enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let row: Vec<i64> = line
            .split(',')
            .map(|v| v.trim().parse::<i64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| {
                bad(
                    i + 2,
                    format!("{line:?}: expected comma-separated integers"),
                )
            })?;
        if let Some(first) = rows.first() {
            if first.len() != row.len() {
                return Err(bad(
                    i + 2,
                    format!("{} classes, the first query has {}", row.len(), first.len()),
                ));
            }
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(bad(1, "no queries".into()));
    }
    Ok(NoisyShare {
        sigma,
        organizations,
        rows,
    })
}

/// Sums the organizations' shares: they must agree on σ and n, be exactly n files, and have the
/// same queries and classes. Errors name the files.
pub fn sum_shares(shares: &[(PathBuf, NoisyShare)]) -> Result<Vec<Vec<i64>>> {
    let Some((first_path, first)) = shares.first() else {
        return Err(PrivacyError::NoShares);
    };
    for (path, s) in shares {
        if s.sigma != first.sigma || s.organizations != first.organizations {
            return Err(PrivacyError::ShareParameters {
                path: path.clone(),
                sigma: s.sigma,
                organizations: s.organizations,
                first: first_path.clone(),
                first_sigma: first.sigma,
                first_organizations: first.organizations,
            });
        }
        if s.rows.len() != first.rows.len() {
            return Err(PrivacyError::ShareQueries {
                path: path.clone(),
                queries: s.rows.len(),
                first: first_path.clone(),
                first_queries: first.rows.len(),
            });
        }
        if s.rows[0].len() != first.rows[0].len() {
            return Err(PrivacyError::ShareClasses {
                path: path.clone(),
                classes: s.rows[0].len(),
                first: first_path.clone(),
                first_classes: first.rows[0].len(),
            });
        }
    }
    if shares.len() != first.organizations {
        return Err(PrivacyError::ShareCount {
            given: shares.len(),
            organizations: first.organizations,
        });
    }
    let mut sum = vec![vec![0i64; first.rows[0].len()]; first.rows.len()];
    for (_, s) in shares {
        for (acc, row) in sum.iter_mut().zip(&s.rows) {
            for (a, v) in acc.iter_mut().zip(row) {
                *a = a.saturating_add(*v);
            }
        }
    }
    Ok(sum)
}

/// The label of each query: the argmax of the summed noisy counts, ties to the lowest class
/// (post-processing: no privacy cost).
pub fn argmax_labels(sum: &[Vec<i64>]) -> Vec<Option<usize>> {
    sum.iter()
        .map(|row| {
            let mut best = 0;
            for (j, &v) in row.iter().enumerate() {
                if v > row[best] {
                    best = j;
                }
            }
            Some(best)
        })
        .collect()
}
