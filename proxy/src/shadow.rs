//! The shadow model on the request path: a second bundle (`shadow_bundle`) scores every request
//! the active model scores and never decides anything. What it would have decided is counted
//! beside the active verdict (`patewaf_shadow_requests_total{active_verdict, shadow_verdict}`,
//! `patewaf_shadow_score`) and, where the two differ, written into the request's audit line; so
//! an operator sees how a newly trained model would treat live traffic before `POST /promote`
//! lets it block anything.
//!
//! The shadow is scored with its own featurizer (a new bundle may tokenize differently), the
//! same threshold overrides (global and the route's) and scorer as the active model, and the request's mode (global or
//! route), so its verdict is the one it would give once promoted. A shadow scoring failure is
//! its verdict `error`: it never changes the request's outcome.

use std::sync::Arc;

use featurizer::RequestParts;

use crate::config::Mode;
use crate::metrics::Metrics;
use crate::model::ServingModel;
use crate::verdict::Verdict;

/// What the shadow model made of one request.
pub struct ShadowJudgement {
    /// The verdict it would have given (`allow`, `block`/`flag` by mode, or `error`).
    pub verdict: Verdict,
    /// Its probability; `None` when its scoring failed.
    pub score: Option<f32>,
    /// The shadow model that scored it.
    pub model: Arc<ServingModel>,
}

/// The verdict for a request scored at or above the threshold under `mode` (`off` scores
/// nothing, so never gets here; were it to, the request is forwarded, as a flag is).
pub fn malicious_verdict(mode: Mode) -> Verdict {
    match mode {
        Mode::Block => Verdict::Block,
        Mode::Detect | Mode::Off => Verdict::Flag,
    }
}

/// Scores `parts` with the request's shadow model (`shadow`, of the request's snapshot), if one
/// is loaded (with or without the site's format checks, and at the route's threshold where it
/// has one, as the active model was), and counts the pair (`active`, the shadow's verdict).
/// `None` when no shadow is loaded.
pub fn judge(
    metrics: &Metrics,
    shadow: Option<&Arc<ServingModel>>,
    parts: &RequestParts<'_>,
    (active, mode): (Verdict, Mode),
    (format_checks, route_threshold): (bool, Option<f32>),
) -> Option<ShadowJudgement> {
    let model = shadow?.clone();
    let (verdict, score) = match model.score_at(parts, format_checks, route_threshold) {
        Ok(scored) => {
            metrics.shadow_score.observe(f64::from(scored.score));
            let verdict = if scored.malicious {
                malicious_verdict(mode)
            } else {
                Verdict::Allow
            };
            (verdict, Some(scored.score))
        }
        Err(e) => {
            tracing::warn!(shadow = %model.version, "shadow model: {e}");
            (Verdict::Error, None)
        }
    };
    metrics.count_shadow(active, verdict);
    Some(ShadowJudgement {
        verdict,
        score,
        model,
    })
}
