//! The serving model: a verified bundle, its featurizer and its network; hot reload puts it in
//! force together with its configuration ([`crate::state::Snapshot`]).
//!
//! By default (`scorer: auto`) a linear student is scored natively (below) and a network with
//! hidden layers through ONNX Runtime. With `scorer: onnxruntime` every request is scored
//! through ONNX Runtime: a pool of
//! sessions (one per worker thread) of the bundle's network with a sparse first layer
//! ([`Scorer::score_sparse`]: Gather of the used rows of W1, then the remaining layers, built in
//! memory from `model.onnx`). A request takes the first free session (round-robin start), so
//! workers only wait for each other when every session is busy; there is no global lock.
//!
//! `scorer: native`: [`bundle::SparseMlp`], a native forward pass of the same
//! network, which avoids ORT's per-call cost (2.6 µs floor, 4.9 µs for a typical request of
//! configs/train.yaml's featurizer, measured by `cargo bench -p proxy --bench score`).
//!
//! Whichever scorer serves, every load checks it against ONNX Runtime running the bundle's own
//! dense graph (as `pate-trainer score` and Python onnxruntime run it) on every unit feature
//! vector, the empty vector and a real request before the model may serve.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bundle::{
    explain_vector_segmented, is_block, score_request_and_parts, score_request_segmented, Bundle,
    Explanation, PartOffsets, ScoredVector, Scorer, SparseMlp,
};
use featurizer::{Featurizer, Placement, RequestParts, RequestSegments, SparseVector};

use crate::config::ScorerKind;
use crate::error::ProxyError;

/// A bundle loaded, verified and warmed up, ready to score requests.
pub struct ServingModel {
    /// Directory it was loaded from.
    pub dir: PathBuf,
    /// The featurizer the student was trained with (from the bundle).
    pub featurizer: Featurizer,
    /// The same without the site's format checks ([`Featurizer::without_format_checks`]), for
    /// `format_checks: false` (global or a route's); `None` when the bundle's featurizer has no
    /// format checks to leave out.
    content_only: Option<Featurizer>,
    /// Threshold in force: the configuration's override, else the bundle's.
    pub threshold: f32,
    /// Threshold in force for content alone (`format_checks: false`): the configuration's
    /// override, else the bundle's `content_only_threshold`, else its `threshold`.
    pub content_only_threshold: f32,
    /// The bundle's threshold (for `pate-trainer score` parity and the logs).
    pub bundle_threshold: f32,
    /// `model_version` from `bundle.yaml`.
    pub version: String,
    /// The trainer's recommendation for the format checks (bundle.yaml `format_checks`).
    pub format_checks: Option<bool>,
    /// Publishable ε as text (`"unknown"` when the report has none), for `patewaf_model_info`.
    pub epsilon: String,
    /// δ as text, for `patewaf_model_info`.
    pub delta: String,
    /// Aggregation mechanism, for `patewaf_model_info`.
    pub mechanism: String,
    /// sha256 of every file of the bundle (`bundle.yaml`'s `files`, checked at load): what
    /// identifies the bundle's content, e.g. to promote only the shadow that was observed.
    pub files: BTreeMap<String, String>,
    /// sha256 of the `files` listing (`"{sha256}  {name}\n"` per file, in name order, as
    /// `sha256sum` prints it): one digest that names the bundle's whole content (the capture
    /// file's `bundle_sha256`).
    pub bundle_sha256: String,
    /// What scores the feature vectors.
    network: Network,
    /// The bundle's model of single parts (`part_model.onnx`), scored beside the windows where
    /// content alone is scored. Always the native scorer: a small network over a part's
    /// handful of features, no session to lock; checked against ONNX Runtime at load like the
    /// student.
    part_model: Option<SparseMlp>,
    /// The part model's offsets per placement (bundle.yaml `part_model_offsets`): each part's
    /// score is shifted by its placement's before the highest is taken (an operator's
    /// `threshold:` then judges the shifted scores, as the bundle's does).
    part_model_offsets: PartOffsets,
    /// `unseen:path`'s index in the featurizer with the format checks
    /// ([`Featurizer::unseen_path_index`]), looked up once.
    unseen_path: Option<u32>,
}

/// The scorer of a [`ServingModel`].
enum Network {
    /// ONNX Runtime sessions (sparse-input graph); `Session::run` needs `&mut`, so each request
    /// holds one session for the duration of its call.
    OnnxRuntime {
        sessions: Vec<Mutex<Scorer>>,
        next: AtomicUsize,
        /// The same network laid out natively, read only to explain flagged requests.
        explainer: SparseMlp,
    },
    /// The network of `model.onnx` laid out for sparse input; `&self` scoring, no lock.
    Native(SparseMlp),
}

impl Network {
    fn kind(&self) -> ScorerKind {
        match self {
            Network::OnnxRuntime { .. } => ScorerKind::Onnxruntime,
            Network::Native(_) => ScorerKind::Native,
        }
    }

    /// The network as [`SparseMlp`], for explanations.
    fn native(&self) -> &SparseMlp {
        match self {
            Network::Native(mlp) => mlp,
            Network::OnnxRuntime { explainer, .. } => explainer,
        }
    }

    fn score(&self, indices: &[u32], values: &[f32]) -> Result<f32, bundle::BundleError> {
        match self {
            Network::Native(mlp) => mlp.score(indices, values),
            Network::OnnxRuntime { sessions, next, .. } => {
                // Round-robin start, then the first free session; block on the start one only
                // when every session is busy (there are as many sessions as worker threads).
                let start = next.fetch_add(1, Ordering::Relaxed) % sessions.len();
                let free = (0..sessions.len())
                    .find_map(|k| sessions[(start + k) % sessions.len()].try_lock().ok());
                let mut session = match free {
                    Some(guard) => guard,
                    None => sessions[start]
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner()),
                };
                session.score_sparse(indices, values)
            }
        }
    }
}

/// A scorer's result as the proxy takes it: a finite number, else an error.
fn finite(score: Result<f32, bundle::BundleError>) -> Result<f32, ProxyError> {
    let score = score.map_err(|e| ProxyError::Scoring(Box::new(e)))?;
    if !score.is_finite() {
        return Err(ProxyError::NonFiniteScore(score));
    }
    Ok(score)
}

/// A serving scorer (`serve`: native or ORT's sparse graph) against ONNX Runtime's dense graph
/// of the same network (`reference`, of `file` in the bundle at `dir`): `extra` (e.g. the
/// warm-up request's vector), the empty vector and each unit vector `e_i` (which isolates column
/// `i` of the first layer) must score the same to [`SCORER_VS_ORT_TOLERANCE`], else the bundle
/// is refused.
fn check_against_ort(
    dir: &Path,
    file: &str,
    kind: &str,
    dim: usize,
    serve: impl Fn(&[u32], &[f32]) -> Result<f32, bundle::BundleError>,
    reference: &mut Scorer,
    extra: Option<(&str, &SparseVector)>,
) -> Result<(), ProxyError> {
    let mut dense = vec![0.0f32; dim];
    let mut compare =
        |what: &dyn Fn() -> String, indices: &[u32], values: &[f32]| -> Result<(), ProxyError> {
            dense.iter_mut().for_each(|x| *x = 0.0);
            for (&i, &v) in indices.iter().zip(values) {
                dense[i as usize] += v;
            }
            let load_error = |check: String| {
                move |source| ProxyError::BundleLoad {
                    path: dir.to_path_buf(),
                    what: format!("{check}, {}: ", what()),
                    source: Box::new(source),
                }
            };
            let ort = reference
                .score(&dense)
                .map_err(load_error(format!("ONNX Runtime check of {file}")))?;
            let serving = serve(indices, values)
                .map_err(load_error(format!("{kind} scorer check of {file}")))?;
            if (ort - serving).abs() > SCORER_VS_ORT_TOLERANCE || !serving.is_finite() {
                return Err(ProxyError::Bundle {
                    path: dir.to_path_buf(),
                    message: format!(
                        "the {kind} scorer gives {serving} but ONNX Runtime's dense graph of \
                         {file} {ort} for {} ({file} is not the network the proxy would run)",
                        what()
                    ),
                });
            }
            Ok(())
        };
    if let Some((what, v)) = extra {
        compare(&|| what.to_string(), &v.indices, &v.values)?;
    }
    compare(&|| "the empty feature vector".to_string(), &[], &[])?;
    for i in 0..dim as u32 {
        compare(&|| format!("unit feature vector {i}"), &[i], &[1.0])?;
    }
    Ok(())
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
    /// The feature vector that was scored — with the featurizer's `placements`, the window that
    /// scored highest (the audit log's top tokens come from it, so an audited request is
    /// featurized once).
    pub features: SparseVector,
    /// The featurizer could not read all of the request (a `placements` bound, or more than one
    /// window for the seeds' featurizer).
    pub truncated: bool,
    /// Scored with the site's format checks, the scored vector carries `unseen:path`: the
    /// request's path is one the bundle's public pool does not hold
    /// ([`Featurizer::unseen_path_index`]). Every window carries the request's parameter
    /// features, so this is the request's path; with `placements.parts_alone` the highest
    /// vector may be a part alone, which carries none (then false).
    pub unseen_path: bool,
    /// `Some(placement)` when `features` is a part alone whose score by the bundle's model of
    /// single parts was the request's (content alone scored); `None` for a window.
    pub part: Option<Placement>,
    /// The request's segments as scoring split them (with the featurizer's `placements`,
    /// windows scored), so that [`ServingModel::worst_placement`] does not split it again for
    /// an audited request; `None` otherwise.
    pub segments: Option<RequestSegments>,
}

/// sha256 of `files` listed as `sha256sum` prints them (`"{sha256}  {name}\n"`, in name order).
pub fn files_digest(files: &BTreeMap<String, String>) -> String {
    let listing: String = files
        .iter()
        .map(|(name, sha)| format!("{sha}  {name}\n"))
        .collect();
    bundle::sha256_hex(listing.as_bytes())
}

/// The request used to warm up the featurizer and to check the native scorer at load time.
const WARM_UP_TARGET: &[u8] = b"/index.jsp?id=1&name=warm-up";

/// Largest difference allowed at load time between the serving scorer (native or ORT's sparse
/// graph) and ORT's dense graph of `model.onnx`. Both compute the same float sums in another
/// order (≈1e-7 apart on featurizer-sized inputs, see `bundle/tests/onnx_scores.rs`); anything
/// near 1e-5 means another network.
const SCORER_VS_ORT_TOLERANCE: f32 = 1e-5;

impl ServingModel {
    /// Loads `dir` with the default scorer, [`ScorerKind::Auto`] ([`ServingModel::load_with_scorer`]).
    pub fn load(
        dir: &Path,
        threshold_override: Option<f32>,
        worker_threads: usize,
    ) -> Result<Self, ProxyError> {
        Self::load_with_scorer(dir, threshold_override, worker_threads, ScorerKind::Auto)
    }

    /// The scorer `scorer` names for a network: [`ScorerKind::Auto`] is native for a linear one
    /// (one layer), ONNX Runtime for one with hidden layers.
    fn resolved(scorer: ScorerKind, linear: bool) -> ScorerKind {
        match scorer {
            ScorerKind::Auto if linear => ScorerKind::Native,
            ScorerKind::Auto => ScorerKind::Onnxruntime,
            kind => kind,
        }
    }

    /// Loads `dir` (every hash and version checked by [`Bundle::load`]) and builds the `scorer`:
    /// for [`ScorerKind::Onnxruntime`] `worker_threads` sessions (at least one), each warmed up
    /// on a request; for [`ScorerKind::Native`] the network laid out for sparse scoring. Then
    /// checks the scorer against ONNX Runtime running `model.onnx`'s dense graph (one more
    /// session, dropped afterwards): every unit feature vector, the empty vector and a warm-up
    /// request must score the same to [`SCORER_VS_ORT_TOLERANCE`], else the bundle is refused.
    pub fn load_with_scorer(
        dir: &Path,
        threshold_override: Option<f32>,
        worker_threads: usize,
        scorer: ScorerKind,
    ) -> Result<Self, ProxyError> {
        let fail = |message: String| ProxyError::Bundle {
            path: dir.to_path_buf(),
            message,
        };
        let load = |what: &str| load_error(dir, what);
        let bundle = Bundle::load(dir).map_err(load(""))?;
        if bundle.featurizer.dim() != bundle.manifest.input_dim {
            return Err(fail(format!(
                "featurizer dimension {} differs from the model's input dimension {}",
                bundle.featurizer.dim(),
                bundle.manifest.input_dim
            )));
        }
        let mlp = bundle.mlp().map_err(load(""))?;
        let linear = mlp.layers.len() == 1;
        let native = SparseMlp::new(&mlp).map_err(load("the native scorer: "))?;
        let network = match Self::resolved(scorer, linear) {
            ScorerKind::Native | ScorerKind::Auto => Network::Native(native),
            ScorerKind::Onnxruntime => Network::OnnxRuntime {
                sessions: ort_sessions(dir, &bundle, worker_threads)?,
                next: AtomicUsize::new(0),
                explainer: native,
            },
        };
        let mut reference = Scorer::new(&bundle).map_err(load("ONNX Runtime session: "))?;
        let part_model = checked_part_model(dir, &bundle)?;
        let privacy = bundle.manifest.privacy_labels();
        let unseen_path = bundle.featurizer.unseen_path_index();
        let model = ServingModel {
            dir: dir.to_path_buf(),
            threshold: threshold_override.unwrap_or(bundle.manifest.threshold),
            content_only_threshold: threshold_override
                .unwrap_or(bundle.manifest.threshold_for(false)),
            bundle_threshold: bundle.manifest.threshold,
            version: bundle.manifest.model_version.clone(),
            format_checks: bundle.manifest.format_checks,
            epsilon: privacy.epsilon,
            delta: privacy.delta,
            mechanism: privacy.mechanism,
            files: bundle.manifest.files.clone(),
            bundle_sha256: files_digest(&bundle.manifest.files),
            content_only: bundle
                .featurizer
                .format_checks()
                .then(|| bundle.featurizer.clone().without_format_checks()),
            featurizer: bundle.featurizer,
            network,
            part_model,
            part_model_offsets: bundle.manifest.part_model_offsets.clone(),
            unseen_path,
        };
        let features = model.warm_up()?;
        model.check_against_onnxruntime(&mut reference, &features)?;
        Ok(model)
    }

    /// One warm-up request per session (round-robin visits each), so that no client request
    /// pays for a session's first sparse run; returns the warm-up request's features.
    fn warm_up(&self) -> Result<SparseVector, ProxyError> {
        let warm = RequestParts {
            method: "GET",
            target: WARM_UP_TARGET,
            body: None,
            headers: Default::default(),
            excluded_fields: Default::default(),
        };
        let mut features = None;
        for _ in 0..self.sessions().max(1) {
            let scored = self.score(&warm).map_err(|e| ProxyError::WarmUp {
                path: self.dir.clone(),
                source: Box::new(e),
            })?;
            if !(0.0..=1.0).contains(&scored.score) {
                return Err(ProxyError::Bundle {
                    path: self.dir.clone(),
                    message: format!("warm-up score {} is not a probability", scored.score),
                });
            }
            features = Some(scored.features);
        }
        Ok(features.unwrap_or_default())
    }

    /// The serving scorer against ONNX Runtime's dense graph: the warm-up vector, the empty
    /// vector and each unit vector `e_i` (which isolates column `i` of the first layer).
    fn check_against_onnxruntime(
        &self,
        reference: &mut Scorer,
        warm_up: &SparseVector,
    ) -> Result<(), ProxyError> {
        check_against_ort(
            &self.dir,
            bundle::MODEL_FILE,
            self.network.kind().as_str(),
            self.featurizer.dim(),
            |indices, values| self.network.score(indices, values),
            reference,
            Some(("the warm-up request", warm_up)),
        )
    }

    /// Which scorer serves requests.
    pub fn scorer(&self) -> ScorerKind {
        self.network.kind()
    }

    /// Number of ONNX Runtime sessions serving requests (0 with the native scorer).
    pub fn sessions(&self) -> usize {
        match &self.network {
            Network::OnnxRuntime { sessions, .. } => sessions.len(),
            Network::Native(_) => 0,
        }
    }

    /// Featurizes and scores one request through [`bundle::score_request`], the function
    /// `pate-trainer score` calls too: with the featurizer's `placements`, every window of the
    /// request is scored and the highest score is the request's (no tail bypass).
    pub fn score(&self, req: &RequestParts) -> Result<Scored, ProxyError> {
        self.score_checked(req, true)
    }

    /// The threshold in force for scores with (`format_checks`) or without the site's format
    /// checks.
    pub fn threshold_for(&self, format_checks: bool) -> f32 {
        if format_checks {
            self.threshold
        } else {
            self.content_only_threshold
        }
    }

    /// The threshold a score is judged at: `route_threshold` (a route's `threshold`) where set,
    /// else [`ServingModel::threshold_for`].
    pub fn threshold_in_force(&self, format_checks: bool, route_threshold: Option<f32>) -> f32 {
        route_threshold.unwrap_or_else(|| self.threshold_for(format_checks))
    }

    /// The featurizer that scores with (`format_checks`) or without the site's format checks.
    fn featurizer_for(&self, format_checks: bool) -> &Featurizer {
        match &self.content_only {
            Some(content_only) if !format_checks => content_only,
            _ => &self.featurizer,
        }
    }

    /// [`ServingModel::score`] with the site's format checks (`rare:*`, `unseen:path`, `odd:*`)
    /// or, `format_checks` false, content alone (the config's `format_checks`, global or per
    /// route).
    pub fn score_checked(
        &self,
        req: &RequestParts,
        format_checks: bool,
    ) -> Result<Scored, ProxyError> {
        self.score_at(req, format_checks, None)
    }

    /// [`ServingModel::score_checked`] judged at `route_threshold` where set
    /// ([`ServingModel::threshold_in_force`]).
    pub fn score_at(
        &self,
        req: &RequestParts,
        format_checks: bool,
        route_threshold: Option<f32>,
    ) -> Result<Scored, ProxyError> {
        let started = Instant::now();
        let featurizer = self.featurizer_for(format_checks);
        let (scored, segments) = match &self.part_model {
            Some(part) if !format_checks => (
                score_request_and_parts(
                    featurizer,
                    req,
                    &self.part_model_offsets,
                    |v| self.score_vector(v),
                    |v| finite(part.score(&v.indices, &v.values)),
                )?,
                None,
            ),
            _ => score_request_segmented(featurizer, req, |v| self.score_vector(v))?,
        };
        let unseen_path = format_checks
            && self
                .unseen_path
                .is_some_and(|i| scored.features.indices.contains(&i));
        Ok(Scored {
            score: scored.score,
            malicious: is_block(
                scored.score,
                self.threshold_in_force(format_checks, route_threshold),
            ),
            seconds: started.elapsed().as_secs_f64(),
            truncated: scored.truncated,
            features: scored.features,
            unseen_path,
            part: scored.part,
            segments,
        })
    }

    /// Why `scored` (this model's score of `req`, with or without the format checks) scored
    /// what it did: the `n` features that contributed most to the logit of the vector that
    /// scored, from the student's network or, where the part model's score was the request's,
    /// the part model's ([`bundle::explain_vector`]). Only for audited requests.
    pub fn explain(
        &self,
        req: &RequestParts,
        scored: &Scored,
        format_checks: bool,
        n: usize,
    ) -> Result<Explanation, ProxyError> {
        let network = match (&self.part_model, scored.part) {
            (Some(part_model), Some(_)) => part_model,
            _ => self.network.native(),
        };
        let vector = ScoredVector {
            features: &scored.features,
            part: scored.part,
        };
        // `scored.segments` are `req`'s under this featurizer (scored with `format_checks`).
        let featurizer = self.featurizer_for(format_checks);
        let segments = scored.segments.as_ref();
        explain_vector_segmented(featurizer, network, req, vector, n, segments)
            .map_err(|e| ProxyError::Scoring(Box::new(e)))
    }

    fn score_vector(&self, features: &SparseVector) -> Result<f32, ProxyError> {
        finite(self.network.score(&features.indices, &features.values))
    }

    /// Whether the bundle has a model of single parts (scored where content alone is).
    pub fn has_part_model(&self) -> bool {
        self.part_model.is_some()
    }

    /// The placement whose parts alone score highest ([`Featurizer::placement_vectors`]; where
    /// content alone is scored with a part model, each part alone by it too,
    /// [`Featurizer::part_vectors`]), for audit lines and the `placement` metric label;
    /// [`Placement::Request`] for a featurizer without `placements`. Only called for requests
    /// at or above the threshold.
    pub fn worst_placement(&self, req: &RequestParts, format_checks: bool) -> Placement {
        self.worst_placement_of(req, format_checks, None)
    }

    /// [`ServingModel::worst_placement`] of `req` with `segments`, what scoring it with the same
    /// `format_checks` kept ([`Scored::segments`]): the same placement, without splitting the
    /// request again.
    pub fn worst_placement_of(
        &self,
        req: &RequestParts,
        format_checks: bool,
        segments: Option<&RequestSegments>,
    ) -> Placement {
        let featurizer = self.featurizer_for(format_checks);
        if featurizer.config().placements.is_none() {
            // One vector, the request's: nothing to compare (it was featurized and scored a
            // second time for every audited request before).
            return Placement::Request;
        }
        let vectors = match segments {
            Some(segments) => featurizer.placement_vectors_segmented(req, segments),
            None => featurizer.placement_vectors(req),
        };
        let mut best = (f32::NEG_INFINITY, Placement::Request);
        for (placement, v) in vectors {
            if let Ok(score) = self.score_vector(&v) {
                if score > best.0 {
                    best = (score, placement);
                }
            }
        }
        if let Some(part) = self.part_model.as_ref().filter(|_| !format_checks) {
            for (placement, v) in featurizer.part_vectors(req) {
                if let Ok(score) = finite(part.score(&v.indices, &v.values))
                    .map(|s| self.part_model_offsets.shift(placement, s))
                {
                    if score > best.0 {
                        best = (score, placement);
                    }
                }
            }
        }
        best.1
    }
}

/// A bundle file that did not load: `what` (e.g. `the part model: `) before the cause.
fn load_error(dir: &Path, what: &str) -> impl FnOnce(bundle::BundleError) -> ProxyError {
    let (path, what) = (dir.to_path_buf(), what.to_string());
    move |source| ProxyError::BundleLoad {
        path,
        what,
        source: Box::new(source),
    }
}

/// `worker_threads` (at least one) ONNX Runtime sessions of the sparse-input graph.
fn ort_sessions(
    dir: &Path,
    bundle: &Bundle,
    worker_threads: usize,
) -> Result<Vec<Mutex<Scorer>>, ProxyError> {
    let mut sessions = Vec::with_capacity(worker_threads.max(1));
    for _ in 0..worker_threads.max(1) {
        let session = Scorer::new(bundle).map_err(load_error(dir, "ONNX Runtime session: "))?;
        if !session.has_sparse_session() {
            // Not a graph `bundle` writes: score_sparse would densify and run the dense graph
            // per request, 3x slower; refuse rather than serve slowly.
            return Err(ProxyError::Bundle {
                path: dir.to_path_buf(),
                message: "model.onnx is not a graph the sparse-input ONNX Runtime scorer can be \
                          built from (re-export the bundle with pate-trainer export)"
                    .to_string(),
            });
        }
        sessions.push(Mutex::new(session));
    }
    Ok(sessions)
}

/// The bundle's part model scored natively, checked against ONNX Runtime on its own graph.
fn checked_part_model(dir: &Path, bundle: &Bundle) -> Result<Option<SparseMlp>, ProxyError> {
    let load = |what: &str| load_error(dir, what);
    let Some(mlp) = bundle.part_mlp().map_err(load(""))? else {
        return Ok(None);
    };
    let native = SparseMlp::new(&mlp).map_err(load("the part model: "))?;
    let onnx = bundle.part_model_onnx.as_deref().unwrap_or_default();
    let mut ort = Scorer::from_onnx(onnx, bundle.manifest.input_dim)
        .map_err(load("ONNX Runtime session of the part model: "))?;
    check_against_ort(
        dir,
        bundle::PART_MODEL_FILE,
        ScorerKind::Native.as_str(),
        native.input_dim(),
        |indices, values| native.score(indices, values),
        &mut ort,
        None,
    )?;
    Ok(Some(native))
}
