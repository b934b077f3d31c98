//! The serving model: a verified bundle, its featurizer and its network laid out for sparse
//! scoring, behind a slot that hot reload swaps atomically.
//!
//! Requests are scored by [`bundle::SparseMlp`], a native forward pass over the featurizer's
//! sparse vector, not by an ONNX Runtime call: ORT's per-call floor (4–5.5 µs measured by
//! `cargo bench -p proxy --bench score`) alone exceeded the 5 µs budget of featurize + score.
//! The network is the one in `model.onnx`, and every load checks it against ONNX Runtime (the
//! bundle's own graph, as `pate-trainer score` and Python onnxruntime run it) on every unit
//! feature vector and a real request before the model may serve.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use bundle::{is_block, Bundle, Scorer, SparseMlp};
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
    /// The network of `model.onnx`, laid out for sparse input; `&self` scoring, no lock.
    network: SparseMlp,
}

/// A score and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Probability that the request is malicious.
    pub score: f32,
    /// `score >= threshold` ([`bundle::is_block`]).
    pub malicious: bool,
    /// Featurize + score time, seconds.
    pub seconds: f64,
    /// The feature vector that was scored (the audit log's top tokens come from it, so an audited
    /// request is featurized once).
    pub features: SparseVector,
}

/// The request used to warm up the featurizer and to check the native scorer at load time.
const WARM_UP_TARGET: &[u8] = b"/index.jsp?id=1&name=warm-up";

/// Largest difference allowed between the native scorer and ONNX Runtime at load time. Both
/// compute the same float sums in another order (≈1e-7 apart on featurizer-sized inputs, see
/// `bundle/tests/onnx_scores.rs`); anything near 1e-5 means another network.
const NATIVE_VS_ORT_TOLERANCE: f32 = 1e-5;

fn label(value: Option<f64>) -> String {
    value.map_or_else(|| "unknown".to_string(), |v| v.to_string())
}

impl ServingModel {
    /// Loads `dir` (every hash and version checked by [`Bundle::load`]), lays its network out
    /// for sparse scoring and checks that layout against ONNX Runtime running `model.onnx`
    /// (one session, dropped afterwards): every unit feature vector, the empty vector and a
    /// warm-up request must score the same to [`NATIVE_VS_ORT_TOLERANCE`], else the bundle is
    /// refused. `_worker_threads` is no longer used (scoring takes no lock and needs no session
    /// per thread); it stays so that callers do not change.
    pub fn load(
        dir: &Path,
        threshold_override: Option<f32>,
        _worker_threads: usize,
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
        let mlp = bundle.mlp().map_err(|e| fail(e.to_string()))?;
        let network = SparseMlp::new(&mlp).map_err(|e| fail(e.to_string()))?;
        let mut reference = Scorer::new(&bundle).map_err(|e| fail(e.to_string()))?;
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
            network,
        };
        let warm = RequestParts {
            method: "GET",
            target: WARM_UP_TARGET,
            body: None,
        };
        let scored = model
            .score(&warm)
            .map_err(|e| fail(format!("warm-up: {e}")))?;
        if !(0.0..=1.0).contains(&scored.score) {
            return Err(fail(format!(
                "warm-up score {} is not a probability",
                scored.score
            )));
        }
        model.check_against_onnxruntime(&mut reference, &scored.features)?;
        Ok(model)
    }

    /// The native scorer against ONNX Runtime's dense graph: the warm-up vector, the empty vector
    /// and each unit vector `e_i` (which isolates column `i` of the first layer).
    fn check_against_onnxruntime(
        &self,
        reference: &mut Scorer,
        warm_up: &SparseVector,
    ) -> Result<(), ProxyError> {
        let fail = |message: String| ProxyError::Bundle {
            path: self.dir.clone(),
            message,
        };
        let dim = self.featurizer.dim();
        let mut dense = vec![0.0f32; dim];
        let mut compare = |what: &dyn Fn() -> String,
                           indices: &[u32],
                           values: &[f32]|
         -> Result<(), ProxyError> {
            dense.iter_mut().for_each(|x| *x = 0.0);
            for (&i, &v) in indices.iter().zip(values) {
                dense[i as usize] += v;
            }
            let ort = reference
                .score(&dense)
                .map_err(|e| fail(format!("ONNX Runtime check, {}: {e}", what())))?;
            let native = self
                .network
                .score(indices, values)
                .map_err(|e| fail(format!("native scorer check, {}: {e}", what())))?;
            if (ort - native).abs() > NATIVE_VS_ORT_TOLERANCE || !native.is_finite() {
                return Err(fail(format!(
                    "the native scorer gives {native} but ONNX Runtime {ort} for {} \
                     (model.onnx is not the network the proxy would run)",
                    what()
                )));
            }
            Ok(())
        };
        compare(
            &|| "the warm-up request".to_string(),
            &warm_up.indices,
            &warm_up.values,
        )?;
        compare(&|| "the empty feature vector".to_string(), &[], &[])?;
        for i in 0..dim as u32 {
            compare(&|| format!("unit feature vector {i}"), &[i], &[1.0])?;
        }
        Ok(())
    }

    /// Featurizes and scores one request.
    pub fn score(&self, req: &RequestParts) -> Result<Scored, ProxyError> {
        let started = Instant::now();
        let features = self.featurizer.transform(req);
        let score = self
            .network
            .score(&features.indices, &features.values)
            .map_err(|e| ProxyError::Scoring(e.to_string()))?;
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
