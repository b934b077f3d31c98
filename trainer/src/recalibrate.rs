//! A bundle's thresholds re-picked from the protected site's own unlabelled traffic
//! (`pate-trainer calibrate`, "learning mode"): every request scored as pate-proxy scores it
//! ([`ServedScorer`]), then the lowest threshold that flags at most a share of that traffic, held
//! at a confidence ([`crate::calibrate::traffic_threshold`]). The traffic is nearly all benign, so
//! the share flagged bounds the false-positive rate from above. Only counts reach the bundle
//! ([`bundle::ThresholdSource`]).
use std::path::Path;

use bundle::{Bundle, Manifest, Recalibration, ThresholdSource};
use datasets::SiteLog;
use rand::SeedableRng;

use crate::calibrate::traffic_threshold;
use crate::error::{Error, Result};
use crate::served::ServedScorer;

/// The seed of the resampling that holds the share at the confidence: fixed, so the same
/// traffic gives the same threshold (nothing private is drawn).
const RESAMPLING_SEED: u64 = 0;

/// What the chosen threshold must hold on the traffic.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TrafficBudget {
    /// The largest share of the traffic flagged, in (0, 1).
    pub target_share: f64,
    /// The confidence at which it is held, in (0, 1).
    pub confidence: f64,
}

/// One threshold before and after, with the traffic it flags.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ThresholdChange {
    /// The bundle's threshold.
    pub before: f32,
    /// The new one.
    pub after: f32,
    /// Requests flagged at `before`.
    pub flagged_before: usize,
    /// Requests flagged at `after`.
    pub flagged_after: usize,
    /// Their share of the traffic at `before`.
    pub share_flagged_before: f64,
    /// Their share at `after`.
    pub share_flagged_after: f64,
}

/// What [`recalibrate`] chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalibrated {
    /// `threshold` (scores with the site's format checks, the proxy's default).
    pub threshold: ThresholdChange,
    /// `content_only_threshold` (content alone, `format_checks: false`); `None` when the bundle
    /// has none (content alone is then judged at `threshold`).
    pub content_only: Option<ThresholdChange>,
    /// What goes into the new bundle.
    pub recalibration: Recalibration,
}

/// Scores `traffic` with `bundle` in both of the proxy's modes it has a threshold for and picks
/// each threshold within `budget`.
pub fn recalibrate(
    bundle: &Bundle,
    traffic: &SiteLog,
    budget: TrafficBudget,
) -> Result<Recalibrated> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(RESAMPLING_SEED);
    let scores = score_traffic(bundle, traffic, true)?;
    let threshold = pick(bundle, &scores, bundle.manifest.threshold, budget, &mut rng)?;
    let content_only = match bundle.manifest.content_only_threshold {
        Some(before) => {
            let scores = score_traffic(bundle, traffic, false)?;
            Some(pick(bundle, &scores, before, budget, &mut rng)?)
        }
        None => None,
    };
    let source = ThresholdSource {
        traffic_requests: traffic.records.len(),
        distinct_clients: traffic.summary.distinct_clients(),
        target_share: budget.target_share,
        confidence: budget.confidence,
        flagged_requests: threshold.flagged_after,
        content_only_flagged_requests: content_only.as_ref().map(|c| c.flagged_after),
    };
    let recalibration = Recalibration {
        threshold: threshold.after,
        content_only_threshold: content_only.as_ref().map(|c| c.after),
        source,
    };
    Ok(Recalibrated {
        threshold,
        content_only,
        recalibration,
    })
}

/// The score pate-proxy gives each request of `traffic`, with or without the format checks.
fn score_traffic(bundle: &Bundle, traffic: &SiteLog, format_checks: bool) -> Result<Vec<f32>> {
    let mut scorer = ServedScorer::new(bundle, format_checks)?;
    traffic
        .records
        .iter()
        .map(|r| scorer.score(&r.parts()))
        .collect()
}

/// The lowest threshold within `budget` on `scores`, and what it flags against `before`'s.
fn pick(
    bundle: &Bundle,
    scores: &[f32],
    before: f32,
    budget: TrafficBudget,
    rng: &mut impl rand::Rng,
) -> Result<ThresholdChange> {
    let problem = |problem: String| Error::Calibrate {
        bundle: bundle.dir.clone(),
        problem,
    };
    let after = traffic_threshold(scores, budget.target_share, budget.confidence, rng)
        .ok_or_else(|| problem("no request to score".into()))?;
    let flagged = |t: f32| scores.iter().filter(|&&s| bundle::is_block(s, t)).count();
    let share = |n: usize| n as f64 / scores.len() as f64;
    let (flagged_before, flagged_after) = (flagged(before), flagged(after));
    if share(flagged_after) > budget.target_share {
        // Only scores of exactly 1 stay flagged at every threshold in [0, 1].
        return Err(problem(format!(
            "{flagged_after} of {} requests score {}, at or above every threshold: no threshold \
             flags at most a share of {}",
            scores.len(),
            after,
            budget.target_share
        )));
    }
    Ok(ThresholdChange {
        before,
        after,
        flagged_before,
        flagged_after,
        share_flagged_before: share(flagged_before),
        share_flagged_after: share(flagged_after),
    })
}

/// Writes the recalibrated copy of `bundle` into `out` (which may be `bundle.dir`) atomically,
/// loads it back (hashes, versions) and returns its manifest.
pub fn write(bundle: &Bundle, out: &Path, recalibration: &Recalibration) -> Result<Manifest> {
    let written = bundle::write_recalibrated(bundle, out, recalibration)?;
    let loaded = Bundle::load(out)?;
    if loaded.manifest != written {
        return Err(Error::Export {
            dir: out.to_owned(),
            problem: "bundle.yaml read back differs from what was written".into(),
        });
    }
    Ok(written)
}
