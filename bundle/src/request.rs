//! Scoring one whole request: the one function that `pate-proxy` and `pate-trainer score` both
//! call, so that a request gets the same score (and verdict) from either.
//!
//! Without the featurizer's `placements` a request is one vector ([`Featurizer::transform`]:
//! the seeds' view, the first `max_input_bytes` of target and form body). With `placements`
//! every window of the request is scored ([`Featurizer::transform_windows`]: windows of
//! `max_input_bytes` of decoded text covering everything read, up to the placement bound) and
//! the highest score is the request's: an attack after any amount of padding is in some window.
use featurizer::{Featurizer, RequestParts, SparseVector};

use crate::{BundleError, Scorer};

/// What scoring a whole request gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestScore {
    /// The request's score: the highest of its windows' scores.
    pub score: f32,
    /// The feature vector that scored highest (the first of equal scores).
    pub features: SparseVector,
    /// The featurizer could not read all of the request: a `placements` bound cut it, or (without
    /// `placements`) the input was longer than `max_input_bytes`.
    pub truncated: bool,
    /// Number of vectors scored (1 without `placements`).
    pub windows: usize,
}

/// Scores `req` with `featurizer` and `score` (the network on one sparse vector): one vector
/// without `placements`, else the maximum over every window (see the module documentation).
/// An error of `score` is returned as is.
pub fn score_request<E>(
    featurizer: &Featurizer,
    req: &RequestParts,
    mut score: impl FnMut(&SparseVector) -> Result<f32, E>,
) -> Result<RequestScore, E> {
    if featurizer.config().placements.is_none() {
        // The proxy's hot path: `transform` reuses a per-thread scratch.
        let features = featurizer.transform(req);
        let s = score(&features)?;
        return Ok(RequestScore {
            score: s,
            truncated: features.truncated,
            features,
            windows: 1,
        });
    }
    let mut windows = Vec::new();
    featurizer.transform_windows(req, &mut windows);
    // The last window is flagged exactly when a bound of `placements` cut the input.
    let truncated = windows.last().is_some_and(|w| w.truncated);
    let count = windows.len();
    let mut best: Option<(f32, SparseVector)> = None;
    for window in windows {
        let s = score(&window)?;
        // `>` keeps the first of equal scores; a NaN never replaces a number (the caller's
        // `score` is expected to refuse NaN).
        if best.as_ref().is_none_or(|(b, _)| s > *b) {
            best = Some((s, window));
        }
    }
    let (score, features) = best.unwrap_or_default();
    Ok(RequestScore {
        score,
        features,
        truncated,
        windows: count,
    })
}

/// [`score_request`] with a second model of single parts: the highest of the windows' scores
/// (`score`) and of every part alone ([`Featurizer::transform_parts`]) scored by `score_part`.
/// How a bundle with a part model scores content alone: a linear model of whole windows weighs
/// an attack in one field of a long form against every other field in the window (they share
/// its norm); the part model reads the field alone. `features` is the vector that scored
/// highest, a window or a part; `windows` counts both.
pub fn score_request_and_parts<E>(
    featurizer: &Featurizer,
    req: &RequestParts,
    score: impl FnMut(&SparseVector) -> Result<f32, E>,
    mut score_part: impl FnMut(&SparseVector) -> Result<f32, E>,
) -> Result<RequestScore, E> {
    let mut scored = score_request(featurizer, req, score)?;
    let mut parts = Vec::new();
    featurizer.transform_parts(req, &mut parts);
    scored.windows += parts.len();
    for part in parts {
        let s = score_part(&part)?;
        if s > scored.score {
            scored.score = s;
            scored.features = part;
        }
    }
    Ok(scored)
}

impl Scorer {
    /// [`score_request`] through this ONNX Runtime session's sparse-input graph
    /// ([`Scorer::score_sparse`]), as `pate-proxy` scores with `scorer: onnxruntime` (its
    /// default): the same featurizer, the same windows, the same graph and inputs, so the same
    /// score. A score that is not a finite number is an error, as in the proxy.
    pub fn score_request(
        &mut self,
        featurizer: &Featurizer,
        req: &RequestParts,
    ) -> Result<RequestScore, BundleError> {
        score_request(featurizer, req, |v| {
            let s = self.score_sparse(&v.indices, &v.values)?;
            if s.is_finite() {
                Ok(s)
            } else {
                Err(BundleError::NonFiniteScore(s))
            }
        })
    }

    /// [`score_request_and_parts`] through this session (the windows) and `part_model`'s (the
    /// parts alone), as pate-proxy scores content alone with a bundle's part model.
    pub fn score_request_and_parts(
        &mut self,
        part_model: &mut Scorer,
        featurizer: &Featurizer,
        req: &RequestParts,
    ) -> Result<RequestScore, BundleError> {
        let finite = |s: f32| {
            if s.is_finite() {
                Ok(s)
            } else {
                Err(BundleError::NonFiniteScore(s))
            }
        };
        score_request_and_parts(
            featurizer,
            req,
            |v| finite(self.score_sparse(&v.indices, &v.values)?),
            |v| finite(part_model.score_sparse(&v.indices, &v.values)?),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use featurizer::{FeaturizerConfig, Headers, PlacementConfig};

    fn fit(placements: bool) -> Featurizer {
        let config = FeaturizerConfig {
            top_k: 100,
            max_input_bytes: 64,
            placements: placements.then(PlacementConfig::default),
            ..FeaturizerConfig::default()
        };
        let docs = [
            RequestParts::get("/a?q=' or 1=1--"),
            RequestParts::get("/a?q=hello+world"),
        ];
        Featurizer::fit(config, docs).unwrap()
    }

    /// The weight of the `'` token: a stand-in network that only sees the attack.
    fn quote_weight(f: &Featurizer) -> impl Fn(&SparseVector) -> Result<f32, String> + '_ {
        let quote = f.vocabulary().iter().position(|t| t == "'").unwrap() as u32;
        move |v: &SparseVector| {
            Ok(v.indices
                .iter()
                .position(|&i| i == quote)
                .map_or(0.0, |k| v.values[k]))
        }
    }

    #[test]
    fn the_attack_after_the_first_window_scores_with_placements_only() {
        let text: &[(&str, &[u8])] = &[("Content-Type", b"text/plain")];
        let mut body = "hello world ".repeat(20).into_bytes();
        body.extend_from_slice(b"' or 1=1--");
        let req = RequestParts {
            method: "POST",
            target: b"/a",
            body: Some(&body),
            headers: Headers::Pairs(text),
        };
        let whole = fit(true);
        let scored = score_request(&whole, &req, quote_weight(&whole)).unwrap();
        assert!(scored.windows > 1, "{}", scored.windows);
        assert!(scored.score > 0.0);
        assert!(!scored.truncated, "windows cut nothing");
        // The first window alone (what `transform` reads) misses it.
        assert_eq!(quote_weight(&whole)(&whole.transform(&req)).unwrap(), 0.0);
        let prefix = fit(false);
        let scored = score_request(&prefix, &req, quote_weight(&prefix)).unwrap();
        assert_eq!((scored.windows, scored.score), (1, 0.0));
        assert!(scored.truncated);
    }

    /// `score_request_and_parts`: the highest of the windows' and the parts' scores, the vector
    /// that scored it, every vector counted; the windows' score when no part beats it; a part
    /// scorer's error returned as is.
    #[test]
    fn the_request_scores_the_highest_of_its_windows_and_its_parts() {
        let config = FeaturizerConfig {
            top_k: 200,
            placements: Some(PlacementConfig::default()),
            ..FeaturizerConfig::default()
        };
        let docs = [
            RequestParts::get("/a?x=1&y=' or 1=1--"),
            RequestParts::get("/a?k0=v0&k1=v1&k2=v2"),
        ];
        let f = Featurizer::fit(config, docs).unwrap();
        // Forty benign pairs dilute the quote in the window; alone, its pair is mostly quote.
        let pad: String = (0..40).map(|i| format!("k{i}=v{i}&")).collect();
        let target = format!("/a?{pad}q=%27+or+1%3D1--");
        let req = RequestParts::get(&target);
        let windows = score_request(&f, &req, quote_weight(&f)).unwrap();
        let mut parts = Vec::new();
        f.transform_parts(&req, &mut parts);
        let best_part = parts
            .iter()
            .map(|p| quote_weight(&f)(p).unwrap())
            .fold(0.0f32, f32::max);
        assert!(
            best_part > windows.score,
            "{best_part} vs {}",
            windows.score
        );
        let both = score_request_and_parts(&f, &req, quote_weight(&f), quote_weight(&f)).unwrap();
        assert_eq!(both.score, best_part);
        assert_eq!(quote_weight(&f)(&both.features).unwrap(), best_part);
        assert_eq!(both.windows, windows.windows + parts.len());
        // A part model that scores nothing leaves the windows' score and vector.
        let zero = |_: &SparseVector| Ok::<f32, String>(0.0);
        let same = score_request_and_parts(&f, &req, quote_weight(&f), zero).unwrap();
        assert_eq!(
            (same.score, &same.features),
            (windows.score, &windows.features)
        );
        let err = score_request_and_parts(&f, &req, quote_weight(&f), |_| {
            Err::<f32, _>("no part model".to_string())
        });
        assert_eq!(err.unwrap_err(), "no part model");
    }

    #[test]
    fn a_scoring_error_is_returned() {
        let f = fit(true);
        let err = score_request(&f, &RequestParts::get("/a?q=1"), |_| {
            Err::<f32, _>("no model".to_string())
        });
        assert_eq!(err.unwrap_err(), "no model");
    }
}
