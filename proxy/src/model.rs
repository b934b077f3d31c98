//! The serving model: a verified bundle, its featurizer and a pool of warmed ONNX Runtime
//! sessions, behind a slot that hot reload swaps atomically.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use bundle::{is_block, Bundle, Scorer};
use featurizer::{Featurizer, RequestParts, SparseVector};

use crate::audit::TokenWeight;
use crate::error::ProxyError;

/// A bundle loaded, verified and warmed up, ready to score requests.
pub struct ServingModel {
    /// Directory it was loaded from.
    pub dir: PathBuf,
    /// The featurizer the student was trained with (from the bundle).
    pub featurizer: Featurizer,
    /// Threshold in force: the configuration's override, else the bundle's.
    pub threshold: f32,
    /// The bundle's threshold (for `pate-trainer score` parity and the logs).
    pub bundle_threshold: f32,
    /// `model_version` from `bundle.yaml`.
    pub version: String,
    /// Publishable ε as text (`"unknown"` when the report has none), for `patewaf_model_info`.
    pub epsilon: String,
    /// δ as text, for `patewaf_model_info`.
    pub delta: String,
    /// Aggregation mechanism, for `patewaf_model_info`.
    pub mechanism: String,
    /// ONNX Runtime sessions; `Session::run` needs `&mut`, so requests take one at a time.
    scorers: Vec<Mutex<Scorer>>,
    next: AtomicUsize,
}

/// A score and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Probability that the request is malicious.
    pub score: f32,
    /// `score >= threshold` ([`bundle::is_block`]).
    pub malicious: bool,
    /// Featurize + ONNX Runtime time, seconds.
    pub seconds: f64,
    /// The feature vector that was scored (the audit log's top tokens come from it, so an audited
    /// request is featurized once).
    pub features: SparseVector,
}

/// The request used to warm up the featurizer and every session at load time.
const WARM_UP_TARGET: &[u8] = b"/index.jsp?id=1&name=warm-up";

fn label(value: Option<f64>) -> String {
    value.map_or_else(|| "unknown".to_string(), |v| v.to_string())
}

impl ServingModel {
    /// Loads `dir` (every hash and version checked by [`Bundle::load`]), creates `sessions`
    /// ONNX Runtime sessions and scores a warm-up request on each, so that the first client
    /// request does not pay for ORT's first-run planning.
    pub fn load(
        dir: &Path,
        threshold_override: Option<f32>,
        sessions: usize,
    ) -> Result<Self, ProxyError> {
        let fail = |message: String| ProxyError::Bundle {
            path: dir.to_path_buf(),
            message,
        };
        let bundle = Bundle::load(dir).map_err(|e| fail(e.to_string()))?;
        if bundle.featurizer.dim() != bundle.manifest.input_dim {
            return Err(fail(format!(
                "featurizer dimension {} differs from the model's input dimension {}",
                bundle.featurizer.dim(),
                bundle.manifest.input_dim
            )));
        }
        let mut scorers = Vec::with_capacity(sessions.max(1));
        for _ in 0..sessions.max(1) {
            scorers.push(Mutex::new(
                Scorer::new(&bundle).map_err(|e| fail(e.to_string()))?,
            ));
        }
        let summary = bundle.manifest.privacy_summary();
        let model = ServingModel {
            dir: dir.to_path_buf(),
            threshold: threshold_override.unwrap_or(bundle.manifest.threshold),
            bundle_threshold: bundle.manifest.threshold,
            version: bundle.manifest.model_version.clone(),
            epsilon: label(summary.epsilon),
            delta: label(summary.delta),
            mechanism: summary.mechanism.unwrap_or_else(|| "unknown".to_string()),
            featurizer: bundle.featurizer,
            scorers,
            next: AtomicUsize::new(0),
        };
        let warm = RequestParts {
            method: "GET",
            target: WARM_UP_TARGET,
            body: None,
        };
        for _ in 0..model.scorers.len() {
            let scored = model
                .score(&warm)
                .map_err(|e| fail(format!("warm-up: {e}")))?;
            if !(0.0..=1.0).contains(&scored.score) {
                return Err(fail(format!(
                    "warm-up score {} is not a probability",
                    scored.score
                )));
            }
        }
        Ok(model)
    }

    /// Number of ONNX Runtime sessions.
    pub fn sessions(&self) -> usize {
        self.scorers.len()
    }

    /// Featurizes and scores one request.
    pub fn score(&self, req: &RequestParts) -> Result<Scored, ProxyError> {
        let started = Instant::now();
        let features = self.featurizer.transform(req);
        let score = {
            // Round-robin start, then the first free session; block on the start one only when
            // every session is busy (there are as many sessions as worker threads).
            let start = self.next.fetch_add(1, Ordering::Relaxed) % self.scorers.len();
            let mut scorer = None;
            for k in 0..self.scorers.len() {
                if let Ok(guard) = self.scorers[(start + k) % self.scorers.len()].try_lock() {
                    scorer = Some(guard);
                    break;
                }
            }
            let mut guard = match scorer {
                Some(guard) => guard,
                None => self.scorers[start]
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            };
            guard
                .score_sparse(&features.indices, &features.values)
                .map_err(|e| ProxyError::Scoring(e.to_string()))?
        };
        if !score.is_finite() {
            return Err(ProxyError::Scoring(format!("the model returned {score}")));
        }
        Ok(Scored {
            score,
            malicious: is_block(score, self.threshold),
            seconds: started.elapsed().as_secs_f64(),
            features,
        })
    }

    /// The `n` tokens of a scored feature vector with the largest TF-IDF weight, heaviest first.
    pub fn top_tokens(&self, features: &SparseVector, n: usize) -> Vec<TokenWeight> {
        let vocabulary = self.featurizer.vocabulary();
        let mut weights: Vec<(&str, f32)> = features
            .indices
            .iter()
            .zip(&features.values)
            .filter_map(|(&i, &w)| vocabulary.get(i as usize).map(|t| (t.as_str(), w)))
            .collect();
        weights.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        weights
            .into_iter()
            .take(n)
            .map(|(token, weight)| TokenWeight {
                token: token.to_owned(),
                weight,
            })
            .collect()
    }
}

/// The currently serving model; readers clone the `Arc`, so a swap never disturbs a request
/// that is being scored (it finishes on the model it started with).
#[derive(Default)]
pub struct ModelSlot {
    current: RwLock<Option<Arc<ServingModel>>>,
}

impl ModelSlot {
    /// The serving model, if one is loaded.
    pub fn get(&self) -> Option<Arc<ServingModel>> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Replaces the serving model; returns the previous one.
    pub fn swap(&self, model: Arc<ServingModel>) -> Option<Arc<ServingModel>> {
        let mut guard = self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard.replace(model)
    }
}
