//! The bundle directory: `model.onnx`, `featurizer.json` and `bundle.yaml` (the manifest), written
//! atomically and loaded with every hash checked.
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use featurizer::Featurizer;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::onnx::{decode_onnx, encode_onnx, Mlp, IR_VERSION, OPSET_VERSION};
use crate::{BundleError, ModelProblem, PartOffsets};

/// Version of the bundle layout and of `bundle.yaml`; [`Bundle::load`] rejects any other.
/// Version 2: the `privacy:` section is the typed whitelist [`PublishedPrivacy`] (version 1 held
/// the whole run report, with unnoised functions of the private data).
pub const FORMAT_VERSION: u32 = 2;
/// File name of the ONNX model inside a bundle.
pub const MODEL_FILE: &str = "model.onnx";
/// File name of the featurizer artifact inside a bundle.
pub const FEATURIZER_FILE: &str = "featurizer.json";
/// File name of the optional model of single parts inside a bundle ([`Manifest::part_model`]).
pub const PART_MODEL_FILE: &str = "part_model.onnx";
/// File name of the manifest inside a bundle.
pub const MANIFEST_FILE: &str = "bundle.yaml";

/// Shape of the exported network, for humans and dashboards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// Widths from input to output, e.g. `[500, 512, 128, 1]`.
    pub widths: Vec<usize>,
    /// Number of weights and biases.
    pub parameters: usize,
    /// ONNX IR version of `model.onnx`.
    pub onnx_ir_version: i64,
    /// ONNX default-domain opset of `model.onnx`.
    pub onnx_opset: i64,
}

impl ModelSummary {
    /// The summary of `mlp` as [`encode_onnx`] writes it.
    pub fn of(mlp: &Mlp) -> ModelSummary {
        let mut widths = vec![mlp.input_dim()];
        widths.extend(mlp.layers.iter().map(|l| l.out_dim));
        ModelSummary {
            widths,
            parameters: mlp.parameter_count(),
            onnx_ir_version: IR_VERSION,
            onnx_opset: OPSET_VERSION,
        }
    }
}

/// `bundle.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Layout version ([`FORMAT_VERSION`]).
    pub format_version: u32,
    /// Identity of the model: by default the first 16 hex digits of `model.onnx`'s sha256.
    pub model_version: String,
    /// Creation time, RFC 3339 UTC (`2026-11-22T12:34:56Z`).
    pub created: String,
    /// Decision threshold on the probability: a score at or above it is malicious ([`is_block`]).
    pub threshold: f32,
    /// The threshold for a score of content alone — the featurizer without the site's format
    /// checks ([`Featurizer::without_format_checks`]), as pate-proxy scores where
    /// `format_checks: false` and `pate-trainer score --no-format-checks` — when the trainer
    /// chose one (`student.public_examples.content_only_validation`); absent: `threshold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_only_threshold: Option<f32>,
    /// Whether the trainer recommends scoring with the site's format checks: `false` for a
    /// bundle whose format model was counted on unlabelled traffic that drifts (`site:`: new
    /// pages and parameters would be flagged), scored on content alone at
    /// `content_only_threshold`. pate-proxy follows it where its config sets no
    /// `format_checks`. Absent: `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_checks: Option<bool>,
    /// Width of the model input, equal to the featurizer's dimension.
    pub input_dim: usize,
    /// The featurizer's own content hash (as in `featurizer.json`).
    pub featurizer_content_hash: String,
    /// Shape of the network.
    pub model: ModelSummary,
    /// Shape of the model of single parts (`part_model.onnx`), when the trainer made one
    /// (`student.public_examples.part_model`): trained on public values alone, it scores every
    /// part of a request on its own where content alone is scored (format checks off), beside
    /// the student's windows, judged at `content_only_threshold`. Absent: no such model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_model: Option<ModelSummary>,
    /// Per placement, the shift of the part model's scores in logit units
    /// ([`PartOffsets`]: a threshold per placement for the parts under the one
    /// `content_only_threshold`), when the trainer chose them; only with `part_model`.
    #[serde(default, skip_serializing_if = "PartOffsets::is_empty")]
    pub part_model_offsets: PartOffsets,
    /// The privacy whitelist ([`PublishedPrivacy`]): mechanism and parameters, δ, answered
    /// queries, rng and featurizer provenance, one published ε and its kind. Absent (null) for a
    /// bundle exported without a privacy report (then nothing is claimed).
    pub privacy: Option<PublishedPrivacy>,
    /// Test metrics of the STUDENT (TPR, TNR, AUC, ...) on the public test data, as the trainer
    /// wrote them.
    pub metrics: serde_json::Value,
    /// sha256 (hex) of every other file of the bundle, by file name.
    pub files: BTreeMap<String, String>,
    /// Where the thresholds come from when `pate-trainer calibrate` re-picked them from the
    /// site's own unlabelled traffic (counts only, never the traffic); absent: the trainer's
    /// validation data chose them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_source: Option<ThresholdSource>,
}

/// What thresholds re-picked from a site's unlabelled traffic rest on ([`Manifest::threshold_source`]):
/// counts and the rule's parameters, nothing of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdSource {
    /// Requests of the traffic scored.
    pub traffic_requests: usize,
    /// Distinct clients that sent them.
    pub distinct_clients: usize,
    /// The largest share of the traffic a threshold may flag.
    pub target_share: f64,
    /// The confidence at which that share is held.
    pub confidence: f64,
    /// Requests of the traffic flagged at `threshold`.
    pub flagged_requests: usize,
    /// Requests of the traffic flagged at `content_only_threshold`, scored on content alone,
    /// when that threshold was re-picked too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_only_flagged_requests: Option<usize>,
}

/// New thresholds for a bundle ([`write_recalibrated`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Recalibration {
    /// The new `threshold`, in [0, 1].
    pub threshold: f32,
    /// The new `content_only_threshold` (`None`: the bundle's is kept).
    pub content_only_threshold: Option<f32>,
    /// What they rest on.
    pub source: ThresholdSource,
}

/// The suffix [`write_recalibrated`] adds to a model version.
const RECALIBRATED_MARK: &str = "+cal.";

pub use privacy::PublishedPrivacy;

/// The dashboard's labels for a bundle's privacy (`patewaf_model_info{epsilon, delta, mechanism}`).
#[derive(Debug, Clone, PartialEq)]
pub struct PrivacyLabels {
    /// The published ε, `none (not private: ...)`, or `none (no privacy report)`.
    pub epsilon: String,
    /// δ, or `none`.
    pub delta: String,
    /// `lnmax`, `gnmax`, `confident-gnmax`, or `none`.
    pub mechanism: String,
}

/// `true` when `score` is at or above `threshold`: the request is judged malicious (blocked in
/// block mode). One definition, shared by `pate-trainer score` and `pate-proxy`.
pub fn is_block(score: f32, threshold: f32) -> bool {
    score >= threshold
}

impl Manifest {
    /// The threshold for scores of the featurizer with (`format_checks`) or without the site's
    /// format checks: [`Manifest::content_only_threshold`] for the latter where the bundle has
    /// one, else [`Manifest::threshold`].
    pub fn threshold_for(&self, format_checks: bool) -> f32 {
        match self.content_only_threshold {
            Some(t) if !format_checks => t,
            _ => self.threshold,
        }
    }

    /// The labels `patewaf_model_info` shows, from the typed privacy section.
    pub fn privacy_labels(&self) -> PrivacyLabels {
        match &self.privacy {
            Some(p) => PrivacyLabels {
                epsilon: p.epsilon_label(),
                delta: format!("{}", p.delta),
                mechanism: p.mechanism.name().to_string(),
            },
            None => PrivacyLabels {
                epsilon: "none (no privacy report)".into(),
                delta: "none".into(),
                mechanism: "none".into(),
            },
        }
    }
}

/// What [`write_bundle`] writes.
#[derive(Debug, Clone)]
pub struct BundleContents<'a> {
    /// The student network.
    pub mlp: &'a Mlp,
    /// The featurizer it was trained with.
    pub featurizer: &'a Featurizer,
    /// Decision threshold on the probability, in [0, 1].
    pub threshold: f32,
    /// The threshold for content alone ([`Manifest::content_only_threshold`]), in [0, 1].
    pub content_only_threshold: Option<f32>,
    /// The model of single parts ([`Manifest::part_model`]), of the featurizer's width.
    pub part_model: Option<&'a Mlp>,
    /// Its offsets per placement ([`Manifest::part_model_offsets`]); only with `part_model`.
    pub part_model_offsets: PartOffsets,
    /// The privacy whitelist (`None`: no privacy report, nothing claimed).
    pub privacy: Option<PublishedPrivacy>,
    /// Test metrics (any JSON; `Null` when there are none).
    pub metrics: serde_json::Value,
    /// Model version; `None` = derived from the model's hash.
    pub model_version: Option<String>,
    /// The trainer's recommendation for the format checks ([`Manifest::format_checks`]).
    pub format_checks: Option<bool>,
}

/// A loaded, verified bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// Directory it was loaded from.
    pub dir: PathBuf,
    /// `bundle.yaml`.
    pub manifest: Manifest,
    /// The bytes of `model.onnx` (hash-checked).
    pub model_onnx: Vec<u8>,
    /// The bytes of `part_model.onnx` (hash-checked), when the manifest has a `part_model`.
    pub part_model_onnx: Option<Vec<u8>>,
    /// The featurizer (hash-checked).
    pub featurizer: Featurizer,
}

/// sha256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Writes a bundle into `dir` (e.g. `RUN_DIR/bundle`): all files go into a temporary directory
/// beside `dir`, which is then renamed into place. An existing bundle is renamed away first and
/// removed after, so a reader sees the old bundle or the new one, and on error the old one stays.
/// Returns the manifest written.
pub fn write_bundle(dir: &Path, contents: &BundleContents) -> Result<Manifest, BundleError> {
    let BundleContents {
        mlp,
        featurizer,
        threshold,
        ..
    } = *contents;
    for t in std::iter::once(threshold).chain(contents.content_only_threshold) {
        if !(t.is_finite() && (0.0..=1.0).contains(&t)) {
            return Err(BundleError::InvalidModel(ModelProblem::Threshold(t)));
        }
    }
    if contents.part_model.is_none() && !contents.part_model_offsets.is_empty() {
        return Err(BundleError::InvalidModel(
            ModelProblem::OffsetsWithoutPartModel,
        ));
    }
    for m in std::iter::once(mlp).chain(contents.part_model) {
        if featurizer.dim() != m.input_dim() {
            return Err(BundleError::InvalidModel(ModelProblem::Dimension {
                featurizer: featurizer.dim(),
                model: m.input_dim(),
            }));
        }
    }
    let model_bytes = encode_onnx(mlp)?;
    let part_model_bytes = contents.part_model.map(encode_onnx).transpose()?;
    let featurizer_bytes = featurizer.to_json();
    let model_hash = sha256_hex(&model_bytes);
    let mut files = BTreeMap::from([
        (MODEL_FILE.to_string(), model_hash.clone()),
        (FEATURIZER_FILE.to_string(), sha256_hex(&featurizer_bytes)),
    ]);
    if let Some(bytes) = &part_model_bytes {
        files.insert(PART_MODEL_FILE.to_string(), sha256_hex(bytes));
    }
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        model_version: contents
            .model_version
            .clone()
            .unwrap_or_else(|| model_hash[..16].to_string()),
        created: rfc3339_utc(std::time::SystemTime::now()),
        threshold,
        content_only_threshold: contents.content_only_threshold,
        format_checks: contents.format_checks,
        input_dim: mlp.input_dim(),
        featurizer_content_hash: featurizer.content_hash().to_string(),
        model: ModelSummary::of(mlp),
        part_model: contents.part_model.map(ModelSummary::of),
        part_model_offsets: contents.part_model_offsets.clone(),
        privacy: contents.privacy.clone(),
        metrics: contents.metrics.clone(),
        files,
        threshold_source: None,
    };
    let manifest_bytes = serde_yaml::to_string(&manifest).map_err(|e| BundleError::Manifest {
        path: dir.join(MANIFEST_FILE),
        message: e.to_string(),
    })?;

    let part_model = part_model_bytes
        .as_deref()
        .map(|bytes| (PART_MODEL_FILE, bytes));
    let written: Vec<(&str, &[u8])> = [
        (MODEL_FILE, model_bytes.as_slice()),
        (FEATURIZER_FILE, featurizer_bytes.as_slice()),
        (MANIFEST_FILE, manifest_bytes.as_bytes()),
    ]
    .into_iter()
    .chain(part_model)
    .collect();
    write_dir_atomically(dir, &written)?;
    Ok(manifest)
}

/// Writes a copy of `source` into `dir` (which may be `source.dir` itself) with the thresholds
/// of `recalibration`, as [`write_bundle`] writes: a temporary directory beside `dir`, renamed
/// into place. Every file listed in `files` is copied byte for byte (checked against its
/// sha256 again); `bundle.yaml` gets the new thresholds, `threshold_source`, the time, and a new
/// `model_version`: the previous one without an earlier `+cal.` suffix, then `+cal.` and the
/// first 8 hex digits of the sha256 of the thresholds and their source. Returns the manifest.
pub fn write_recalibrated(
    source: &Bundle,
    dir: &Path,
    recalibration: &Recalibration,
) -> Result<Manifest, BundleError> {
    let mut manifest = source.manifest.clone();
    let manifest_path = dir.join(MANIFEST_FILE);
    for t in std::iter::once(recalibration.threshold).chain(recalibration.content_only_threshold) {
        if !(t.is_finite() && (0.0..=1.0).contains(&t)) {
            return Err(BundleError::InvalidModel(ModelProblem::Threshold(t)));
        }
    }
    if recalibration.content_only_threshold.is_some() && manifest.content_only_threshold.is_none() {
        return Err(BundleError::Manifest {
            path: source.dir.join(MANIFEST_FILE),
            message: "has no content_only_threshold to re-pick".into(),
        });
    }
    let mut files = Vec::new();
    for (file, expected) in &source.manifest.files {
        let path = source.dir.join(file);
        let bytes = std::fs::read(&path).map_err(|e| BundleError::Io {
            path: path.clone(),
            source: e,
        })?;
        if !sha256_hex(&bytes).eq_ignore_ascii_case(expected) {
            return Err(BundleError::Manifest {
                path: source.dir.join(MANIFEST_FILE),
                message: format!("{file} changed since the bundle was loaded"),
            });
        }
        files.push((file.as_str(), bytes));
    }
    manifest.threshold = recalibration.threshold;
    if let Some(t) = recalibration.content_only_threshold {
        manifest.content_only_threshold = Some(t);
    }
    manifest.threshold_source = Some(recalibration.source.clone());
    manifest.created = rfc3339_utc(std::time::SystemTime::now());
    manifest.model_version = recalibrated_version(&source.manifest.model_version, &manifest)
        .map_err(|message| BundleError::Manifest {
            path: manifest_path.clone(),
            message,
        })?;
    let manifest_bytes = serde_yaml::to_string(&manifest).map_err(|e| BundleError::Manifest {
        path: manifest_path.clone(),
        message: e.to_string(),
    })?;
    let mut written: Vec<(&str, &[u8])> = files.iter().map(|(f, b)| (*f, b.as_slice())).collect();
    written.push((MANIFEST_FILE, manifest_bytes.as_bytes()));
    write_dir_atomically(dir, &written)?;
    Ok(manifest)
}

/// `previous` without an earlier [`RECALIBRATED_MARK`] suffix, then the mark and the first 8 hex
/// digits of the sha256 of `manifest`'s thresholds and threshold source.
fn recalibrated_version(previous: &str, manifest: &Manifest) -> Result<String, String> {
    let base = previous
        .split_once(RECALIBRATED_MARK)
        .map_or(previous, |(base, _)| base);
    let key = serde_yaml::to_string(&(
        manifest.threshold,
        manifest.content_only_threshold,
        &manifest.threshold_source,
    ))
    .map_err(|e| e.to_string())?;
    Ok(format!(
        "{base}{RECALIBRATED_MARK}{}",
        &sha256_hex(key.as_bytes())[..8]
    ))
}

/// Writes `files` (name, bytes) into a new temporary directory beside `dir`, each created new
/// and synced, then renames it to `dir` ([`swap_into_place`]); on error `dir` is as it was.
fn write_dir_atomically(dir: &Path, files: &[(&str, &[u8])]) -> Result<(), BundleError> {
    let name = dir
        .file_name()
        .ok_or_else(|| BundleError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a directory name"),
        })?
        .to_string_lossy()
        .into_owned();
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BundleError::Io { path, source }
    };
    std::fs::create_dir_all(&parent).map_err(io(&parent))?;
    let unique = format!("{}.{}", std::process::id(), unique_counter());
    let tmp = parent.join(format!(".{name}.tmp.{unique}"));
    std::fs::create_dir(&tmp).map_err(io(&tmp))?;
    let written = (|| {
        for &(file, bytes) in files {
            let path = tmp.join(file);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(io(&path))?;
            f.write_all(bytes)
                .and_then(|()| f.sync_all())
                .map_err(io(&path))?;
        }
        sync_dir(&tmp);
        swap_into_place(&tmp, dir, &parent.join(format!(".{name}.old.{unique}")))
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    written?;
    sync_dir(&parent);
    Ok(())
}

fn unique_counter() -> u64 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Best effort: persist a directory's entries (renames) on filesystems that need it.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Renames `new` to `dir`; an existing `dir` is first renamed to `old` (restored on failure) and
/// removed afterwards. POSIX cannot atomically exchange two directories, so between the two
/// renames `dir` is briefly absent; a reader retries or keeps its previous bundle.
fn swap_into_place(new: &Path, dir: &Path, old: &Path) -> Result<(), BundleError> {
    let io = |path: &Path, source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    };
    if std::fs::symlink_metadata(dir).is_err() {
        return std::fs::rename(new, dir).map_err(|e| io(dir, e));
    }
    std::fs::rename(dir, old).map_err(|e| io(dir, e))?;
    if let Err(e) = std::fs::rename(new, dir) {
        let _ = std::fs::rename(old, dir);
        return Err(io(dir, e));
    }
    let _ = std::fs::remove_dir_all(old).or_else(|_| std::fs::remove_file(old));
    Ok(())
}

/// Only the version, read first so that a bundle of another version gets a version error rather
/// than a "missing field" one.
#[derive(Deserialize)]
struct ManifestHeader {
    format_version: Option<serde_yaml::Value>,
}

impl Bundle {
    /// Loads `dir`, checking the format version, the sha256 of every file listed in
    /// `bundle.yaml` (both `model.onnx` and `featurizer.json` must be listed), that the model is
    /// the graph [`encode_onnx`] writes, and that its input width equals the featurizer's
    /// dimension and the manifest's `input_dim`.
    pub fn load(dir: &Path) -> Result<Bundle, BundleError> {
        let manifest_path = dir.join(MANIFEST_FILE);
        let bad = |message: String| manifest_error(&manifest_path, message);
        let manifest = parse_manifest(&read_file(&manifest_path)?).map_err(bad)?;
        let mut contents = read_listed_files(dir, &manifest)?;
        let model_onnx = contents.remove(MODEL_FILE).unwrap_or_default();
        let part_model_onnx = contents.remove(PART_MODEL_FILE);
        check_part_model_listing(&manifest, part_model_onnx.is_some()).map_err(bad)?;
        let featurizer_bytes = contents.remove(FEATURIZER_FILE).unwrap_or_default();
        let featurizer =
            Featurizer::from_json(&featurizer_bytes).map_err(|source| BundleError::Featurizer {
                path: dir.join(FEATURIZER_FILE),
                source,
            })?;
        if featurizer.content_hash() != manifest.featurizer_content_hash {
            return Err(bad(format!(
                "featurizer_content_hash is {} but featurizer.json's content hash is {}",
                manifest.featurizer_content_hash,
                featurizer.content_hash()
            )));
        }
        check_model_widths(
            dir,
            &manifest,
            featurizer.dim(),
            &model_onnx,
            part_model_onnx.as_deref(),
        )?;
        Ok(Bundle {
            dir: dir.to_path_buf(),
            manifest,
            model_onnx,
            part_model_onnx,
            featurizer,
        })
    }

    /// The network stored in `model.onnx`.
    pub fn mlp(&self) -> Result<Mlp, BundleError> {
        decode_onnx(&self.model_onnx)
    }

    /// The network stored in `part_model.onnx`, when the bundle has one.
    pub fn part_mlp(&self) -> Result<Option<Mlp>, BundleError> {
        self.part_model_onnx.as_deref().map(decode_onnx).transpose()
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, BundleError> {
    std::fs::read(path).map_err(|source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn manifest_error(manifest_path: &Path, message: String) -> BundleError {
    BundleError::Manifest {
        path: manifest_path.to_path_buf(),
        message,
    }
}

/// Parses `bundle.yaml`'s text: its version first (see [`ManifestHeader`]), then the whole
/// manifest, then its thresholds, which must be probabilities.
fn parse_manifest(text: &[u8]) -> Result<Manifest, String> {
    let header: ManifestHeader = serde_yaml::from_slice(text).map_err(|e| e.to_string())?;
    match header
        .format_version
        .as_ref()
        .and_then(serde_yaml::Value::as_u64)
    {
        Some(v) if v == u64::from(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "format_version {v} is not supported (this build reads {FORMAT_VERSION})"
            ))
        }
        None => {
            return Err(format!(
                "format_version is missing or not an integer (expected {FORMAT_VERSION})"
            ))
        }
    }
    let manifest: Manifest = serde_yaml::from_slice(text).map_err(|e| e.to_string())?;
    for (key, t) in std::iter::once(("threshold", manifest.threshold)).chain(
        manifest
            .content_only_threshold
            .map(|t| ("content_only_threshold", t)),
    ) {
        if !(t.is_finite() && (0.0..=1.0).contains(&t)) {
            return Err(format!("{key} {t} is not a probability in [0, 1]"));
        }
    }
    Ok(manifest)
}

/// Reads every file `manifest` lists from `dir`, by name, each checked against its recorded
/// sha256; `model.onnx` and `featurizer.json` must be listed, and a name must be a plain file of
/// the bundle (no path, not the manifest itself).
fn read_listed_files(
    dir: &Path,
    manifest: &Manifest,
) -> Result<BTreeMap<String, Vec<u8>>, BundleError> {
    let manifest_path = dir.join(MANIFEST_FILE);
    let bad = |message: String| manifest_error(&manifest_path, message);
    let mut contents = BTreeMap::new();
    for required in [MODEL_FILE, FEATURIZER_FILE] {
        if !manifest.files.contains_key(required) {
            return Err(bad(format!("files: has no sha256 for {required}")));
        }
    }
    for (file, expected) in &manifest.files {
        if file.contains('/') || file.contains('\\') || file == ".." || file == MANIFEST_FILE {
            return Err(bad(format!("files: `{file}` is not a file of the bundle")));
        }
        let bytes = read_file(&dir.join(file))?;
        let actual = sha256_hex(&bytes);
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(bad(format!(
                "sha256 of {file} does not match: bundle.yaml records {expected}, the file has {actual} \
                 (the file was modified or the bundle is incomplete)"
            )));
        }
        contents.insert(file.clone(), bytes);
    }
    Ok(contents)
}

/// `part_model` and a listed `part_model.onnx` come together, and `part_model_offsets` only with
/// them.
fn check_part_model_listing(manifest: &Manifest, part_model_listed: bool) -> Result<(), String> {
    if part_model_listed != manifest.part_model.is_some() {
        return Err(format!(
            "part_model and files' {PART_MODEL_FILE} must come together (part_model: {}, \
             {PART_MODEL_FILE} listed: {})",
            manifest.part_model.is_some(),
            part_model_listed
        ));
    }
    if manifest.part_model.is_none() && !manifest.part_model_offsets.is_empty() {
        return Err(
            "part_model_offsets without a part_model: they shift the part model's scores".into(),
        );
    }
    Ok(())
}

/// Decodes `model.onnx` (and `part_model.onnx`, when there is one) and checks that each takes
/// the featurizer's `featurizer_dim` as its input width, as does the manifest's `input_dim`.
fn check_model_widths(
    dir: &Path,
    manifest: &Manifest,
    featurizer_dim: usize,
    model_onnx: &[u8],
    part_model_onnx: Option<&[u8]>,
) -> Result<(), BundleError> {
    let bad = |message: String| manifest_error(&dir.join(MANIFEST_FILE), message);
    let decode = |bytes: &[u8]| {
        decode_onnx(bytes).map_err(|e| BundleError::InBundle {
            dir: dir.to_path_buf(),
            source: Box::new(e),
        })
    };
    let mlp = decode(model_onnx)?;
    if featurizer_dim != mlp.input_dim() || manifest.input_dim != mlp.input_dim() {
        return Err(bad(format!(
            "dimensions disagree: featurizer.json has {}, model.onnx's input has {}, input_dim says {}",
            featurizer_dim,
            mlp.input_dim(),
            manifest.input_dim
        )));
    }
    if let Some(bytes) = part_model_onnx {
        let part = decode(bytes)?;
        if part.input_dim() != featurizer_dim {
            return Err(bad(format!(
                "dimensions disagree: featurizer.json has {}, {PART_MODEL_FILE}'s input has {}",
                featurizer_dim,
                part.input_dim()
            )));
        }
    }
    Ok(())
}

/// Formats a time as RFC 3339 in UTC with second precision (`YYYY-MM-DDTHH:MM:SSZ`), through
/// `humantime` (the one date formatter of the workspace).
pub fn rfc3339_utc(time: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        let at = |s: u64| rfc3339_utc(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_350_896), "2026-11-22T12:34:56Z");
    }
}
