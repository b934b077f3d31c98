//! Scoring through ONNX Runtime (`ort`, loaded dynamically from `libonnxruntime.so`).
//!
//! `ort` panics (or, in some versions, aborts inside `dlopen`) when the library is missing, so
//! [`init_onnxruntime`] checks the path first and returns an error that says how to fix it.
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;
use ort::memory::Allocator;
use ort::session::{HasSelectedOutputs, OutputSelector, RunOptions, Session};
use ort::value::{Tensor, TensorRef};

use crate::onnx::{
    decode_onnx, encode_sparse_onnx, INPUT_NAME, OUTPUT_NAME, SPARSE_INDICES_NAME,
    SPARSE_VALUES_NAME,
};
use crate::{Bundle, BundleError, InputProblem, ModelProblem};

/// The environment variable naming the ONNX Runtime library.
pub const ORT_DYLIB_ENV: &str = "ORT_DYLIB_PATH";

/// The ONNX Runtime environment of this process with the library it was loaded from. `ort`
/// allows one environment per process and one library, so the first successful
/// [`init_onnxruntime`] wins.
static ENVIRONMENT: Mutex<Option<(Environment, PathBuf)>> = Mutex::new(None);

/// Where the ONNX Runtime library comes from: the argument, else `$ORT_DYLIB_PATH` at run time,
/// else the `ORT_DYLIB_PATH` that `.cargo/config.toml` set when this crate was compiled.
pub fn resolve_library_path(explicit: Option<&Path>) -> Result<PathBuf, BundleError> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os(ORT_DYLIB_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    if let Some(path) = option_env!("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    Err(BundleError::OrtLibrary {
        path: PathBuf::new(),
        reason: format!(
            "no ONNX Runtime library given: pass its path or set {ORT_DYLIB_ENV}=/path/to/libonnxruntime.so \
             (scripts/setup.sh makes .deps/libonnxruntime.so)"
        ),
    })
}

/// Checks that `path` is a readable regular file, before `ort` would try (and panic) to load it.
pub fn check_library_path(path: &Path) -> Result<(), BundleError> {
    let hint = format!(
        "set {ORT_DYLIB_ENV} (or the proxy's configuration) to the path of ONNX Runtime's shared library, \
         e.g. .deps/libonnxruntime.so made by scripts/setup.sh"
    );
    let fail = |what: String| {
        Err(BundleError::OrtLibrary {
            path: path.to_path_buf(),
            reason: format!("{what}; {hint}"),
        })
    };
    match std::fs::metadata(path) {
        Err(e) => fail(format!("cannot access the ONNX Runtime library: {e}")),
        Ok(meta) if !meta.is_file() => {
            fail("the ONNX Runtime library path is not a regular file".into())
        }
        Ok(_) => match std::fs::File::open(path) {
            Err(e) => fail(format!("cannot read the ONNX Runtime library: {e}")),
            Ok(_) => Ok(()),
        },
    }
}

/// Loads ONNX Runtime once per process (later calls return the library already in use, whatever
/// path they pass) and returns the library's path. See [`resolve_library_path`] for where the
/// path comes from.
pub fn init_onnxruntime(path: Option<&Path>) -> Result<PathBuf, BundleError> {
    environment(path).map(|(_, p)| p)
}

fn environment(path: Option<&Path>) -> Result<(Environment, PathBuf), BundleError> {
    let mut guard = ENVIRONMENT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((env, loaded)) = guard.as_ref() {
        return Ok((env.clone(), loaded.clone()));
    }
    let library = resolve_library_path(path)?;
    check_library_path(&library)?;
    let ort_error = |e: String| BundleError::OrtLibrary {
        path: library.clone(),
        reason: e,
    };
    let env = ort::init_from(&library)
        .map_err(|e| ort_error(e.to_string()))?
        .with_name("pate-waf")
        .build()
        .map_err(|e| ort_error(e.to_string()))?;
    *guard = Some((env.clone(), library.clone()));
    Ok((env, library))
}

/// An ONNX Runtime session of a bundle's model.
///
/// `ort`'s `Session::run` takes `&mut self`, so scoring does too: share a `Scorer` between threads
/// behind a `Mutex`, or keep one per worker (it is `Send`; sessions of the same model are cheap,
/// a 500→512→128→1 network is 1.3 MB).
pub struct Scorer {
    /// The bundle's graph as written: dense input `features` float[N, K].
    session: Session,
    /// The same network with a sparse first layer ([`encode_sparse_onnx`]), built in memory from
    /// the dense graph; `None` for a graph [`decode_onnx`] does not read (then
    /// [`Scorer::score_sparse`] densifies and runs the dense graph).
    sparse: Option<Session>,
    /// The sparse session's run options, with its `[1, 1]` output preallocated once (ORT writes
    /// into it instead of allocating an output value per call: −0.4 µs of a 4.8 µs call).
    sparse_run: RunOptions<HasSelectedOutputs>,
    input_dim: usize,
    /// Reused dense row for [`Scorer::score_sparse`] without a sparse session.
    dense: Vec<f32>,
    /// Reused sparse inputs (int64 indices, float values) of the sparse session.
    sparse_indices: Vec<i64>,
    sparse_values: Vec<f32>,
}

impl std::fmt::Debug for Scorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scorer")
            .field("input_dim", &self.input_dim)
            .finish_non_exhaustive()
    }
}

const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Scorer>();
};

impl Scorer {
    /// A session for the bundle's model (ONNX Runtime must load: this calls [`init_onnxruntime`]
    /// with no path if nobody did), one intra-op thread, warmed up with one run.
    pub fn new(bundle: &Bundle) -> Result<Self, BundleError> {
        Self::from_onnx(&bundle.model_onnx, bundle.manifest.input_dim)
    }

    /// A session for serialized ONNX bytes with input `features` float[N, `input_dim`] and output
    /// `score` float[N, 1] (what [`crate::onnx::encode_onnx`] writes).
    ///
    /// When the bytes are a graph this crate writes (the bundle's), a second session runs the
    /// same network with a sparse first layer ([`encode_sparse_onnx`]) for
    /// [`Scorer::score_sparse`], the proxy's per-request path.
    pub fn from_onnx(model: &[u8], input_dim: usize) -> Result<Self, BundleError> {
        let session = session_from_memory(model)?;
        let sparse = match decode_onnx(model) {
            Ok(mlp) if mlp.input_dim() == input_dim => {
                Some(session_from_memory(&encode_sparse_onnx(&mlp)?)?)
            }
            _ => None,
        };
        let names_ok = session.inputs().len() == 1
            && session.inputs()[0].name() == INPUT_NAME
            && session.outputs().len() == 1
            && session.outputs()[0].name() == OUTPUT_NAME;
        if !names_ok {
            return Err(BundleError::InvalidModel(ModelProblem::SessionNames {
                input: INPUT_NAME,
                output: OUTPUT_NAME,
            }));
        }
        let ort_error = |source: ort::Error| BundleError::Ort {
            what: "creating the run options".into(),
            source,
        };
        let output = Tensor::<f32>::new(&Allocator::default(), [1usize, 1]).map_err(ort_error)?;
        let sparse_run = RunOptions::new()
            .map_err(ort_error)?
            .with_outputs(OutputSelector::default().preallocate(OUTPUT_NAME, output));
        let mut scorer = Scorer {
            session,
            sparse,
            sparse_run,
            input_dim,
            dense: vec![0.0; input_dim],
            sparse_indices: Vec::new(),
            sparse_values: Vec::new(),
        };
        // The first run allocates and plans; do it now rather than on the first request.
        let warm = scorer.score(&vec![0.0; input_dim])?;
        if !warm.is_finite() {
            return Err(BundleError::InvalidModel(ModelProblem::WarmUp(warm)));
        }
        if scorer.sparse.is_some() {
            let warm_sparse = scorer.score_sparse(&[], &[])?;
            // The zero vector through both graphs: b1 → … → sigmoid, the same sums.
            if (warm_sparse - warm).abs() > 1e-6 {
                return Err(BundleError::InvalidModel(ModelProblem::SparseDense {
                    sparse: warm_sparse,
                    dense: warm,
                }));
            }
        }
        Ok(scorer)
    }

    /// Whether [`Scorer::score_sparse`] runs the sparse-input graph (else it densifies).
    pub fn has_sparse_session(&self) -> bool {
        self.sparse.is_some()
    }

    /// Width of the model's input.
    pub fn input_dim(&self) -> usize {
        self.input_dim
    }

    /// Malicious probability of one dense feature row.
    pub fn score(&mut self, dense: &[f32]) -> Result<f32, BundleError> {
        let scores = self.score_flat(dense)?;
        Ok(scores[0])
    }

    /// Malicious probability of one sparse feature vector (the featurizer's output): the value
    /// at position `indices[j]` is `values[j]`, every other feature is 0 (a repeated index adds
    /// its values). Runs the sparse-input graph when there is one: the first layer then costs
    /// nnz·H1 multiply-adds instead of K·H1.
    pub fn score_sparse(&mut self, indices: &[u32], values: &[f32]) -> Result<f32, BundleError> {
        if indices.len() != values.len() {
            return Err(BundleError::Input(InputProblem::IndexValueCount {
                indices: indices.len(),
                values: values.len(),
            }));
        }
        if let Some(&i) = indices.iter().find(|&&i| i as usize >= self.input_dim) {
            return Err(BundleError::Input(InputProblem::FeatureIndex {
                index: i,
                dim: self.input_dim,
            }));
        }
        if let Some(session) = self.sparse.as_mut() {
            self.sparse_indices.clear();
            self.sparse_values.clear();
            self.sparse_indices
                .extend(indices.iter().map(|&i| i64::from(i)));
            self.sparse_values.extend_from_slice(values);
            if indices.is_empty() {
                // The graph needs nnz ≥ 1; feature 0 with value 0 adds exactly 0 (weights are finite).
                self.sparse_indices.push(0);
                self.sparse_values.push(0.0);
            }
            let nnz = self.sparse_indices.len();
            let run_error = |source: ort::Error| BundleError::Ort {
                what: format!("scoring a sparse row of {nnz} non-zeros"),
                source,
            };
            let index_tensor = TensorRef::from_array_view(([nnz], self.sparse_indices.as_slice()))
                .map_err(run_error)?;
            let value_tensor =
                TensorRef::from_array_view(([1, nnz], self.sparse_values.as_slice()))
                    .map_err(run_error)?;
            let outputs = session
                .run_with_options(
                    ort::inputs![SPARSE_INDICES_NAME => index_tensor, SPARSE_VALUES_NAME => value_tensor],
                    &self.sparse_run,
                )
                .map_err(run_error)?;
            let (shape, scores) = outputs[OUTPUT_NAME]
                .try_extract_tensor::<f32>()
                .map_err(run_error)?;
            return match scores {
                [score] => Ok(*score),
                _ => Err(BundleError::OutputShape {
                    output: OUTPUT_NAME,
                    graph: " of the sparse graph",
                    shape: format!("{shape:?}"),
                    expected: "[1, 1]".into(),
                }),
            };
        }
        let mut dense = std::mem::take(&mut self.dense);
        dense.clear();
        dense.resize(self.input_dim, 0.0);
        let mut result = Ok(());
        for (&i, &v) in indices.iter().zip(values) {
            match dense.get_mut(i as usize) {
                Some(slot) => *slot += v,
                None => {
                    result = Err(BundleError::Input(InputProblem::FeatureIndex {
                        index: i,
                        dim: self.input_dim,
                    }));
                    break;
                }
            }
        }
        let score = result.and_then(|()| self.score(&dense));
        self.dense = dense;
        score
    }

    /// Malicious probabilities of several dense rows (one ONNX Runtime run).
    pub fn score_batch(&mut self, rows: &[Vec<f32>]) -> Result<Vec<f32>, BundleError> {
        if let Some((i, row)) = rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.len() != self.input_dim)
        {
            return Err(BundleError::Input(InputProblem::Width {
                what: format!("row {i}"),
                found: row.len(),
                expected: self.input_dim,
            }));
        }
        self.score_flat(&rows.concat())
    }

    /// Malicious probabilities of rows stored back to back (row-major `[n][input_dim]`).
    pub fn score_flat(&mut self, flat: &[f32]) -> Result<Vec<f32>, BundleError> {
        let rows = flat.len().checked_div(self.input_dim).unwrap_or(0);
        if rows == 0 || rows * self.input_dim != flat.len() {
            return Err(BundleError::Input(InputProblem::NotRows {
                values: flat.len(),
                width: self.input_dim,
            }));
        }
        let run_error = |source: ort::Error| BundleError::Ort {
            what: format!("scoring {rows} row(s)"),
            source,
        };
        let input =
            TensorRef::from_array_view(([rows, self.input_dim], flat)).map_err(run_error)?;
        let outputs = self
            .session
            .run(ort::inputs![INPUT_NAME => input])
            .map_err(run_error)?;
        let (shape, scores) = outputs[OUTPUT_NAME]
            .try_extract_tensor::<f32>()
            .map_err(run_error)?;
        if scores.len() != rows {
            return Err(BundleError::OutputShape {
                output: OUTPUT_NAME,
                graph: "",
                shape: format!("{shape:?}"),
                expected: format!("[{rows}, 1]"),
            });
        }
        Ok(scores.to_vec())
    }
}

/// A session configured for inline use: one intra-op and one inter-op thread, no spinning, the
/// sequential executor (requests are scored one at a time on the proxy's worker threads, so ONNX
/// Runtime's own thread pools would only add hand-offs and spin), and no memory-pattern planning
/// (it is cached per input shape, and the sparse graph's shape is the request's non-zero count,
/// which changes with every request).
fn session_from_memory(model: &[u8]) -> Result<Session, BundleError> {
    let (env, _) = environment(None)?;
    let ort_error = |source: ort::Error| BundleError::Ort {
        what: "creating the session".into(),
        source,
    };
    Session::builder(&env)
        .map_err(ort_error)?
        .with_intra_threads(1)
        .map_err(|e| ort_error(e.into()))?
        .with_inter_threads(1)
        .map_err(|e| ort_error(e.into()))?
        .with_intra_op_spinning(false)
        .map_err(|e| ort_error(e.into()))?
        .with_inter_op_spinning(false)
        .map_err(|e| ort_error(e.into()))?
        .with_parallel_execution(false)
        .map_err(|e| ort_error(e.into()))?
        .with_memory_pattern(false)
        .map_err(|e| ort_error(e.into()))?
        .commit_from_memory(model)
        .map_err(ort_error)
}
