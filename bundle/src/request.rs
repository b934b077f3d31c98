//! Scoring one whole request: the one function that `pate-proxy` and `pate-trainer score` both
//! call, so that a request gets the same score (and verdict) from either.
//!
//! Without the featurizer's `placements` a request is one vector ([`Featurizer::transform`]:
//! the seeds' view, the first `max_input_bytes` of target and form body). With `placements`
//! every window of the request is scored ([`Featurizer::transform_windows`]: windows of
//! `max_input_bytes` of decoded text covering everything read, up to the placement bound) and
//! the highest score is the request's: an attack after any amount of padding is in some window.
use std::collections::BTreeMap;

use featurizer::{Featurizer, Placement, RequestParts, RequestSegments, SparseVector};
use serde::{Deserialize, Serialize};

use crate::{BundleError, Scorer};

/// Per placement, a shift of the part model's scores in logit units (bundle.yaml
/// `part_model_offsets`, chosen by the trainer): a part of placement `p` scoring `s` alone counts
/// as `sigmoid(logit(s) + offset[p])`, so one threshold (`content_only_threshold`) is in effect a
/// threshold per placement for the parts. Why: generic benign values score higher alone in a
/// path or a header than in a query or form field, and one threshold held where they score
/// highest leaves the query, form and body placements' budget unspent. A placement without an
/// offset (or an empty set) is not shifted. Offsets are finite and in `[0, MAX]`: they only ever
/// raise a part's score.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "BTreeMap<String, f32>", into = "BTreeMap<String, f32>")]
pub struct PartOffsets(BTreeMap<Placement, f32>);

impl PartOffsets {
    /// The largest offset accepted (a factor of e^20 on the odds: any part of the placement
    /// would score ~1).
    pub const MAX: f32 = 20.0;

    /// The offsets `offsets` (an offset of 0 is no offset: left out); an error names the first
    /// one not finite or outside `[0, MAX]`.
    pub fn new(mut offsets: BTreeMap<Placement, f32>) -> Result<Self, String> {
        for (p, &d) in &offsets {
            if !(d.is_finite() && (0.0..=Self::MAX).contains(&d)) {
                return Err(format!(
                    "part_model_offsets: {} is {d}, expected a number in [0, {}]",
                    p.as_str(),
                    Self::MAX
                ));
            }
        }
        offsets.retain(|_, d| *d != 0.0);
        Ok(PartOffsets(offsets))
    }

    /// Whether no placement is shifted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The offset of `placement` (0 when it has none).
    pub fn get(&self, placement: Placement) -> f32 {
        self.0.get(&placement).copied().unwrap_or(0.0)
    }

    /// Every placement with its offset, in [`Placement`] order.
    pub fn iter(&self) -> impl Iterator<Item = (Placement, f32)> + '_ {
        self.0.iter().map(|(&p, &d)| (p, d))
    }

    /// The part model's score `score` of a part of `placement`, shifted by its offset:
    /// `sigmoid(logit(score) + offset)`. 0 and 1 (and NaN) stay as they are; monotone in `score`.
    pub fn shift(&self, placement: Placement, score: f32) -> f32 {
        let d = f64::from(self.get(placement));
        if d == 0.0 || !(score > 0.0 && score < 1.0) {
            return score;
        }
        let s = f64::from(score);
        let logit = (s / (1.0 - s)).ln() + d;
        (1.0 / (1.0 + (-logit).exp())) as f32
    }
}

impl TryFrom<BTreeMap<String, f32>> for PartOffsets {
    type Error = String;

    fn try_from(named: BTreeMap<String, f32>) -> Result<Self, String> {
        let mut offsets = BTreeMap::new();
        for (name, d) in named {
            let p = Placement::from_name(&name).ok_or_else(|| {
                format!(
                    "part_model_offsets: `{name}` is not a placement (expected one of {})",
                    Placement::ALL.map(Placement::as_str).join(", ")
                )
            })?;
            offsets.insert(p, d);
        }
        PartOffsets::new(offsets)
    }
}

impl From<PartOffsets> for BTreeMap<String, f32> {
    fn from(offsets: PartOffsets) -> Self {
        offsets
            .0
            .into_iter()
            .map(|(p, d)| (p.as_str().to_string(), d))
            .collect()
    }
}

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
    /// `Some(placement)` when `features` is a part alone that the model of single parts scored
    /// ([`score_request_and_parts`]); `None` for a window of the student.
    pub part: Option<Placement>,
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
            part: None,
        });
    }
    let mut windows = Vec::new();
    featurizer.transform_windows(req, &mut windows);
    best_window(windows, score)
}

/// [`score_request`], with the request's segments as the featurizer split them (with
/// `placements`; `None` without), for [`Featurizer::placement_vectors_segmented`]: the same
/// score, vector and flags.
pub fn score_request_segmented<E>(
    featurizer: &Featurizer,
    req: &RequestParts,
    score: impl FnMut(&SparseVector) -> Result<f32, E>,
) -> Result<(RequestScore, Option<RequestSegments>), E> {
    if featurizer.config().placements.is_none() {
        return Ok((score_request(featurizer, req, score)?, None));
    }
    let mut windows = Vec::new();
    let segments = featurizer.transform_windows_segmented(req, &mut windows);
    Ok((best_window(windows, score)?, segments))
}

/// The highest-scoring of a request's windows ([`Featurizer::transform_windows`]).
fn best_window<E>(
    windows: Vec<SparseVector>,
    mut score: impl FnMut(&SparseVector) -> Result<f32, E>,
) -> Result<RequestScore, E> {
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
        part: None,
    })
}

/// [`score_request`] with a second model of single parts: the highest of the windows' scores
/// (`score`) and of every part alone ([`Featurizer::part_vectors`]) scored by `score_part` and
/// shifted by its placement's offset ([`PartOffsets::shift`]). How a bundle with a part model
/// scores content alone: a linear model of whole windows weighs an attack in one field of a long
/// form against every other field in the window (they share its norm); the part model reads the
/// field alone. `features` is the vector that scored highest, a window or a part; `windows`
/// counts both.
pub fn score_request_and_parts<E>(
    featurizer: &Featurizer,
    req: &RequestParts,
    offsets: &PartOffsets,
    score: impl FnMut(&SparseVector) -> Result<f32, E>,
    mut score_part: impl FnMut(&SparseVector) -> Result<f32, E>,
) -> Result<RequestScore, E> {
    if featurizer.config().placements.is_none() {
        // One vector, and no parts.
        return score_request(featurizer, req, score);
    }
    // Split once for both views (`part_vectors` would split and decode the request again).
    let (mut windows, mut parts) = (Vec::new(), Vec::new());
    featurizer.windows_and_parts(req, &mut windows, &mut parts);
    let mut scored = best_window(windows, score)?;
    scored.windows += parts.len();
    for (placement, part) in parts {
        let s = offsets.shift(placement, score_part(&part)?);
        if s > scored.score {
            scored.score = s;
            scored.features = part;
            scored.part = Some(placement);
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
    /// parts alone, shifted by `offsets`), as pate-proxy scores content alone with a bundle's
    /// part model.
    pub fn score_request_and_parts(
        &mut self,
        part_model: &mut Scorer,
        offsets: &PartOffsets,
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
            offsets,
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
            excluded_fields: Default::default(),
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
        let none = PartOffsets::default();
        let both =
            score_request_and_parts(&f, &req, &none, quote_weight(&f), quote_weight(&f)).unwrap();
        assert_eq!(both.score, best_part);
        assert_eq!(quote_weight(&f)(&both.features).unwrap(), best_part);
        assert_eq!(both.windows, windows.windows + parts.len());
        // A part model that scores nothing leaves the windows' score and vector.
        let zero = |_: &SparseVector| Ok::<f32, String>(0.0);
        let same = score_request_and_parts(&f, &req, &none, quote_weight(&f), zero).unwrap();
        assert_eq!(
            (same.score, &same.features),
            (windows.score, &windows.features)
        );
        let err = score_request_and_parts(&f, &req, &none, quote_weight(&f), |_| {
            Err::<f32, _>("no part model".to_string())
        });
        assert_eq!(err.unwrap_err(), "no part model");
        // An offset on the query's placement lifts its parts above the attack's raw score; one
        // on a placement the request does not have changes nothing.
        let shifted = |p: Placement| PartOffsets::new(BTreeMap::from([(p, 3.0)])).unwrap();
        let up = score_request_and_parts(
            &f,
            &req,
            &shifted(Placement::Query),
            quote_weight(&f),
            quote_weight(&f),
        )
        .unwrap();
        assert_eq!(
            up.score,
            shifted(Placement::Query).shift(Placement::Query, best_part)
        );
        assert!(up.score > best_part, "{} vs {best_part}", up.score);
        let other = score_request_and_parts(
            &f,
            &req,
            &shifted(Placement::JsonValue),
            quote_weight(&f),
            quote_weight(&f),
        )
        .unwrap();
        assert_eq!(other.score, best_part);
    }

    /// `shift`: sigmoid(logit(s) + d), monotone, 0 and 1 fixed, no offset = the score; offsets
    /// outside [0, MAX], not finite, or of an unknown placement name are refused, naming it.
    #[test]
    fn an_offset_shifts_a_placements_part_scores_in_logit_units() {
        let offsets = PartOffsets::new(BTreeMap::from([(Placement::Form, 1.0)])).unwrap();
        let s = offsets.shift(Placement::Form, 0.5);
        assert!((s - 1.0 / (1.0 + (-1.0f32).exp())).abs() < 1e-6, "{s}");
        assert_eq!(offsets.shift(Placement::Query, 0.5), 0.5);
        assert_eq!(offsets.shift(Placement::Form, 0.0), 0.0);
        assert_eq!(offsets.shift(Placement::Form, 1.0), 1.0);
        let mut last = 0.0;
        for k in 1..100 {
            let shifted = offsets.shift(Placement::Form, k as f32 / 100.0);
            assert!(
                shifted > last && shifted > k as f32 / 100.0,
                "{k}: {shifted}"
            );
            last = shifted;
        }
        for bad in [-0.5, f32::NAN, PartOffsets::MAX + 1.0] {
            let err = PartOffsets::new(BTreeMap::from([(Placement::Path, bad)])).unwrap_err();
            assert!(err.contains("path"), "{err}");
        }
        // An offset of 0 is none: the set with only one is empty and equal to no set.
        let zero = PartOffsets::new(BTreeMap::from([(Placement::Query, 0.0)])).unwrap();
        assert!(zero.is_empty());
        assert_eq!(zero, PartOffsets::default());
        let named = BTreeMap::from([("hdr:user-agent".to_string(), 2.0)]);
        let read = PartOffsets::try_from(named.clone()).unwrap();
        assert_eq!(read.get(Placement::HdrUserAgent), 2.0);
        assert_eq!(BTreeMap::from(read), named);
        let err = PartOffsets::try_from(BTreeMap::from([("querry".to_string(), 1.0)])).unwrap_err();
        assert!(err.contains("`querry` is not a placement"), "{err}");
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
