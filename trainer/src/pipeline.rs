//! Building blocks the stages (`crate::stages`) share: the run's randomness, the teacher
//! partition and the teaching job, votes, the student's training, scores and thresholds, and the
//! artifact files. The data and split functions live in `stages::split`, the featurization of
//! rows in `stages::featurize`; they are re-exported here.
//!
//! PATE (Papernot et al. 2017, "Semi-supervised Knowledge Transfer for Deep Learning from Private
//! Training Data", §2): teachers trained on disjoint partitions of the private data label public
//! queries through a noisy aggregation; a student trained on those labels is what gets published.
use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use tch::Device;

use crate::dense::DenseMatrix;
use crate::ensemble::{self, Ensemble, LabeledRows, MemberData, Mode, TrainConfig};
use crate::error::{Error, Result, VoteProblem};
use crate::metrics::{roc_curve, RocPoint};
use crate::model_file::{teacher_file_name, ModelFile, ModelInfo, ModelRole, MODEL_FILE_VERSION};
use crate::report::AppliedThresholdRule;
pub use crate::stages::evaluate::{evaluate_scores, model_scores, tpr_at_fpr};
pub use crate::stages::featurize::{featurize_rows, labels_of};
pub use crate::stages::split::{
    distinct, drop_unread_headers, head_then_uniform, load_datasets, load_run_data, load_sources,
    multiplicities, record_key, request_hash, shuffled, split_by_record, split_unit,
    weighted_sample, RunData, Splits,
};
pub use crate::stages::vote::{ensemble_vote_fraction, vote};

/// Where every random choice of a run comes from: 256 bits from the OS (the default) or, for
/// experiments only, a recorded seed. Each purpose (shards, teacher k, student, ...) gets its own
/// ChaCha20 stream derived as sha256(master ‖ purpose), so teacher k's initialization and batch
/// order do not depend on how many teachers train beside it.
pub struct RunRng {
    master: [u8; 32],
    seed: Option<u64>,
}

impl RunRng {
    /// Fresh OS randomness unless `seed` is given.
    pub fn new(seed: Option<u64>) -> Result<Self> {
        let master = match seed {
            Some(s) => {
                Sha256::digest([b"pate-waf experiment seed ".as_slice(), &s.to_le_bytes()].concat())
                    .into()
            }
            None => {
                let mut rng =
                    ChaCha20Rng::try_from_rng(&mut rand::rngs::SysRng).map_err(Error::Entropy)?;
                let mut master = [0u8; 32];
                rand::Rng::fill_bytes(&mut rng, &mut master);
                master
            }
        };
        Ok(RunRng { master, seed })
    }

    /// The random stream for `purpose`.
    pub fn stream(&self, purpose: &str) -> ChaCha20Rng {
        let digest: [u8; 32] = Sha256::new()
            .chain_update(self.master)
            .chain_update(purpose.as_bytes())
            .finalize()
            .into();
        ChaCha20Rng::from_seed(digest)
    }

    /// A child generator for a sub-task that itself calls [`RunRng::stream`] with fixed purposes
    /// (e.g. each self-training round's student): master = sha256(master ‖ "derived:" ‖ purpose),
    /// same provenance.
    pub fn derived(parent: &RunRng, purpose: &str) -> RunRng {
        let master: [u8; 32] = Sha256::new()
            .chain_update(parent.master)
            .chain_update(b"derived:")
            .chain_update(purpose.as_bytes())
            .finalize()
            .into();
        RunRng {
            master,
            seed: parent.seed,
        }
    }

    /// The privacy noise generator (the privacy crate's CSPRNG; seeded only when the run is).
    pub fn noise(&self) -> Result<privacy::NoiseRng> {
        Ok(privacy::NoiseRng::from_option(self.seed)?)
    }

    /// `{"rng": "os"}` or `{"rng": "seeded", "seed": N}`.
    pub fn provenance(&self) -> privacy::RngProvenance {
        match self.seed {
            Some(seed) => privacy::RngProvenance::Seeded { seed },
            None => privacy::RngProvenance::Os,
        }
    }
}

/// Partitions the private rows (`private[j]` indexes `records`) into `count` disjoint shards: the
/// k-th record (in `private`'s order, k from 0) with a given content — request AND label,
/// [`record_key`] — goes to teacher `u64(sha256(record_key ‖ k)[..8]) mod count`. It depends only on the data, so separate
/// `teach --shard i/N` processes (one per Kubernetes index, say) agree on the same disjoint shards
/// without sharing any state or seed, and the copies of a frequent request spread over the
/// teachers. Returns positions into `private`, each shard ordered by its records' keys (then
/// position), so that a teacher's rows come in an order fixed by its multiset of records.
///
/// Why this rule: PATE's guarantee (Papernot et al. 2017, §3.1 and the sensitivity argument of
/// the aggregator) needs neighbouring private data sets — one record added or removed — to differ
/// in exactly one teacher's data. Here they do: records with the same key are identical, so
/// adding or removing one only adds or removes that key's last copy index, and the one teacher
/// `H(key ‖ m−1)` gains or loses one identical record; no other record moves (tests/splits.rs
/// checks it, with copies of one request under both labels). Dealing
/// hash-sorted positions round-robin, as this did before, moved every later record to another
/// teacher when one record was added or removed. The price is shard sizes that are multinomial
/// (about ±√(n/count)) instead of equal.
pub fn hash_partition(
    records: &[datasets::Record],
    private: &[usize],
    count: usize,
) -> Vec<Vec<usize>> {
    partition_by_copy_hash(records, private, count, false)
}

/// The teacher of the `copy`-th record of the request hashing to `hash` (see [`hash_partition`]).
fn teacher_of(hash: &[u8; 32], copy: u64, count: usize) -> usize {
    let mut h = Sha256::new();
    h.update(hash);
    h.update(copy.to_le_bytes());
    let digest = h.finalize();
    let v = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
    (v % count.max(1) as u64) as usize
}

/// [`hash_partition`], or with `all_copies_together` every record of a request on the teacher of
/// its first copy.
fn partition_by_copy_hash(
    records: &[datasets::Record],
    rows: &[usize],
    count: usize,
    all_copies_together: bool,
) -> Vec<Vec<usize>> {
    let mut shards = vec![Vec::with_capacity(rows.len() / count.max(1) + 1); count];
    let mut copies_seen: std::collections::HashMap<[u8; 32], u64> =
        std::collections::HashMap::new();
    for (j, &i) in rows.iter().enumerate() {
        let hash = record_key(&records[i]);
        let seen = copies_seen.entry(hash).or_insert(0);
        let copy = if all_copies_together { 0 } else { *seen };
        *seen += 1;
        shards[teacher_of(&hash, copy, count)].push(j);
    }
    // Each shard in the order of its records' keys (then position): the order a teacher trains
    // in then depends on its multiset of records alone. Removing a copy of a repeated request
    // renumbers the later copies, which keeps every other teacher's multiset but moved rows
    // within it, and a different order changes floating-point sums (and minibatches).
    for shard in &mut shards {
        shard.sort_by_cached_key(|&j| (record_key(&records[rows[j]]), j));
    }
    shards
}

/// The private rows the teachers train on under `weighting` (see
/// [`crate::config::TeacherMultiplicity`]): `traffic` returns `private` unchanged; the others
/// keep, for each distinct request occurring m times among `private`, its first
/// `weighting.copies(m)` records (so every row is still a different private record), grouped by
/// content. "Request" here is the record's content, request and label ([`record_key`]), so that
/// one record more or less changes the kept rows by at most one identical record.
pub fn teacher_rows(
    records: &[datasets::Record],
    private: &[usize],
    weighting: crate::config::TeacherMultiplicity,
) -> Vec<usize> {
    if weighting == crate::config::TeacherMultiplicity::Traffic {
        return private.to_vec();
    }
    let multiplicity: std::collections::HashMap<[u8; 32], usize> = {
        let mut m = std::collections::HashMap::new();
        for &i in private {
            *m.entry(record_key(&records[i])).or_insert(0usize) += 1;
        }
        m
    };
    let mut order: Vec<[u8; 32]> = Vec::new();
    let mut kept: std::collections::HashMap<[u8; 32], Vec<usize>> =
        std::collections::HashMap::new();
    for &i in private {
        let h = record_key(&records[i]);
        let rows = kept.entry(h).or_insert_with(|| {
            order.push(h);
            Vec::new()
        });
        if rows.len() < weighting.copies(multiplicity[&h]) {
            rows.push(i);
        }
    }
    order.iter().flat_map(|h| kept[h].iter().copied()).collect()
}

/// The teachers' shards of `rows` (from [`teacher_rows`]), as positions into `rows`.
/// `copies_on_one_teacher: false` is [`hash_partition`] (each private record on its own, as in
/// `traffic` mode: the copies of a request repeated m times spread over the teachers, so a static
/// page with m ≫ teachers copies is seen by nearly every teacher). `true` puts every record of a
/// request on the teacher of its first copy (a request-level partition; on distinct rows it is
/// exactly [`hash_partition`]). Both keep neighbouring data sets one teacher apart.
pub fn teacher_shards(
    records: &[datasets::Record],
    rows: &[usize],
    count: usize,
    copies_on_one_teacher: bool,
) -> Vec<Vec<usize>> {
    partition_by_copy_hash(records, rows, count, copies_on_one_teacher)
}

/// Splits one teacher's shard into training and held-out samples: the held-out share is
/// `fraction` of the shard, at most `max`, at least 1 (and at least one training sample is left).
pub fn teacher_member_data(
    x: &DenseMatrix,
    y: &[bool],
    fraction: f64,
    max: usize,
    rng: &mut impl rand::Rng,
) -> Result<MemberData> {
    let n = y.len();
    // `fraction == 0`: no held-out samples (fixed-epoch training, threshold 0.5).
    let minimum = if fraction == 0.0 { 1 } else { 2 };
    if n < minimum {
        return Err(Error::ShardTooSmall { samples: n });
    }
    let holdout = if fraction == 0.0 {
        0
    } else {
        ((n as f64 * fraction).round() as usize)
            .clamp(1, max.max(1))
            .min(n - 1)
    };
    let perm = shuffled(n, rng);
    let (h, t) = perm.split_at(holdout);
    let pick = |idx: &[usize]| LabeledRows {
        x: x.select_rows(idx),
        y: idx.iter().map(|&i| y[i]).collect(),
    };
    Ok(MemberData {
        train: pick(t),
        holdout: pick(h),
        train_weights: None,
    })
}

/// What a teacher is trained on, hashed: a saved teacher is reused only when this matches.
pub fn shard_hash(
    featurizer_hash: &str,
    x: &DenseMatrix,
    y: &[bool],
    training: &serde_json::Value,
) -> String {
    let mut h = Sha256::new();
    h.update(featurizer_hash.as_bytes());
    h.update(training.to_string().as_bytes());
    h.update((x.rows as u64).to_le_bytes());
    h.update((x.cols as u64).to_le_bytes());
    for v in &x.values {
        h.update(v.to_le_bytes());
    }
    h.update(y.iter().map(|&b| b as u8).collect::<Vec<_>>());
    hex::encode(h.finalize())
}

/// Everything a teaching stage needs.
pub struct TeachJob<'a> {
    /// One `(features, labels)` per shard to train; `None` for shards this job does not train.
    pub shards: Vec<Option<(DenseMatrix, Vec<bool>)>>,
    /// Held-out fraction and cap per teacher.
    pub holdout_fraction: f64,
    /// Held-out cap.
    pub holdout_max: usize,
    /// Network and optimizer.
    pub training: &'a TrainConfig,
    /// The featurizer's content hash (recorded in every teacher).
    pub featurizer_hash: String,
    /// Where `teacher-*.safetensors` go.
    pub out_dir: &'a Path,
    /// Training device.
    pub device: Device,
}

/// Trains the teachers of `job` that are not already saved in `job.out_dir` with a matching
/// shard hash (finished teachers are kept and skipped, so an interrupted run resumes), writing
/// one file per teacher. Returns how many were trained and how many reused.
pub fn teach(job: &TeachJob, rng: &RunRng) -> Result<(usize, usize)> {
    let count = job.shards.len();
    std::fs::create_dir_all(job.out_dir).map_err(|source| Error::Io {
        path: job.out_dir.to_owned(),
        source,
    })?;
    let training_json = serde_json::json!({
        "training": job.training,
        "holdout_fraction": job.holdout_fraction,
        "holdout_max": job.holdout_max,
    });
    let mut todo = Vec::new();
    let mut reused = 0;
    for (k, shard) in job.shards.iter().enumerate() {
        let Some((x, y)) = shard else { continue };
        let hash = shard_hash(&job.featurizer_hash, x, y, &training_json);
        let path = job.out_dir.join(teacher_file_name(k));
        if path.exists() {
            match ModelFile::load(&path) {
                Ok(saved) if saved.info.data_hash == hash && saved.info.shards == Some(count) => {
                    reused += 1;
                    continue;
                }
                Ok(_) => tracing::warn!(
                    "teach: {} was trained on other data; training it again",
                    path.display()
                ),
                Err(e) => tracing::warn!("teach: {e}; training it again"),
            }
        }
        todo.push((k, hash));
    }
    if todo.is_empty() {
        tracing::info!(
            "teach: all {reused} teacher(s) already trained in {}",
            job.out_dir.display()
        );
        return Ok((0, reused));
    }
    let dims = job.training.dims(
        job.shards
            .iter()
            .flatten()
            .next()
            .map_or(0, |(x, _)| x.cols),
    );
    let mut rngs: Vec<ChaCha20Rng> = todo
        .iter()
        .map(|(k, _)| rng.stream(&format!("teacher/{k}")))
        .collect();
    let mut data = Vec::with_capacity(todo.len());
    for ((k, _), r) in todo.iter().zip(rngs.iter_mut()) {
        let (x, y) = job.shards[*k].as_ref().expect("listed shards exist");
        data.push(
            teacher_member_data(x, y, job.holdout_fraction, job.holdout_max, r).map_err(|e| {
                Error::Teacher {
                    teacher: *k,
                    source: Box::new(e),
                }
            })?,
        );
    }
    let init = ensemble::init_members(&dims, &mut rngs);
    tracing::info!(
        "teach: training {} teacher(s) ({} reused) of widths {dims:?}, ~{} samples per shard",
        todo.len(),
        reused,
        data.iter()
            .map(|d| d.train.y.len() + d.holdout.y.len())
            .sum::<usize>()
            / data.len()
    );
    let model = Ensemble::from_members(&init, job.device)?;
    // One teacher after the other, each with its own shard's shapes: a teacher's computation is
    // then a function of its shard, its random stream and the config alone, bit for bit — the
    // premise of every mechanism's analysis (one record changes one teacher). Batched training
    // pads every member to the largest shard, so one record there changed the others' rounding.
    let (model, reports) = ensemble::train(
        model,
        &data,
        job.training,
        &mut rngs,
        Mode::Sequential,
        "teach",
    )?;
    for (((k, hash), weights), report) in todo.iter().zip(model.members()?).zip(reports) {
        let file = ModelFile {
            weights,
            info: ModelInfo {
                format_version: MODEL_FILE_VERSION,
                role: ModelRole::Teacher,
                shard: Some(*k),
                shards: Some(count),
                data_hash: hash.clone(),
                featurizer_hash: job.featurizer_hash.clone(),
                threshold: report.threshold,
                training: report,
                rng: rng.provenance(),
                trainer_version: env!("CARGO_PKG_VERSION").into(),
                content_only_threshold: None,
                part_model_offsets: Default::default(),
            },
        };
        file.save(&job.out_dir.join(teacher_file_name(*k)))?;
    }
    Ok((todo.len(), reused))
}

/// Trains the student on `queries` with their (noisily aggregated) labels; early stopping and the
/// Youden threshold on the labelled validation samples.
pub fn train_student(
    train: LabeledRows,
    validation: LabeledRows,
    config: &TrainConfig,
    featurizer_hash: &str,
    rng: &RunRng,
    device: Device,
) -> Result<ModelFile> {
    train_student_weighted(
        train,
        None,
        validation,
        config,
        featurizer_hash,
        rng,
        device,
    )
}

/// [`train_student`] with a weight per training row (`MemberData::train_weights`: a row of
/// weight w counts as w copies; the data hash covers the weights).
pub fn train_student_weighted(
    train: LabeledRows,
    train_weights: Option<Vec<f32>>,
    validation: LabeledRows,
    config: &TrainConfig,
    featurizer_hash: &str,
    rng: &RunRng,
    device: Device,
) -> Result<ModelFile> {
    let dims = config.dims(train.x.cols);
    let mut rngs = vec![rng.stream("student")];
    let init = ensemble::init_members(&dims, &mut rngs);
    let data_hash = shard_hash(
        featurizer_hash,
        &train.x,
        &train.y,
        &match &train_weights {
            // Unweighted: the hash as before weights existed.
            None => serde_json::json!({"training": config}),
            Some(w) => serde_json::json!({"training": config, "weights": w}),
        },
    );
    tracing::info!(
        "student: {} labelled queries ({} malicious), {} validation samples, widths {dims:?}",
        train.y.len(),
        train.y.iter().filter(|&&y| y).count(),
        validation.y.len()
    );
    let model = Ensemble::from_members(&init, device)?;
    let (model, mut reports) = ensemble::train(
        model,
        &[MemberData {
            train,
            holdout: validation,
            train_weights,
        }],
        config,
        &mut rngs,
        Mode::Batched,
        "student",
    )?;
    let report = reports.remove(0);
    Ok(ModelFile {
        weights: model.members()?.remove(0),
        info: ModelInfo {
            format_version: MODEL_FILE_VERSION,
            role: ModelRole::Student,
            shard: None,
            shards: None,
            data_hash,
            featurizer_hash: featurizer_hash.into(),
            threshold: report.threshold,
            training: report,
            rng: rng.provenance(),
            trainer_version: env!("CARGO_PKG_VERSION").into(),
            content_only_threshold: None,
            part_model_offsets: Default::default(),
        },
    })
}

/// Reads a labels file (privacy format: one class index per line, `-` for no answer) as
/// `Option<bool>` (true = malicious).
pub fn read_labels(path: &Path) -> Result<Vec<Option<bool>>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let labels = privacy::aggregate::parse_labels(&text, path)?;
    labels
        .into_iter()
        .enumerate()
        .map(|(i, l)| match l {
            None => Ok(None),
            Some(0) => Ok(Some(false)),
            Some(1) => Ok(Some(true)),
            Some(c) => Err(Error::Label {
                path: path.to_owned(),
                line: i + 1,
                found: format!("class {c}"),
                expected: "0 = benign or 1 = malicious",
            }),
        })
        .collect()
}

/// Reads a labels file in which every line must be a label (no `-`): validation or test labels.
/// `expected` says so in the error of an unlabelled line.
pub fn read_full_labels(path: &Path, expected: &'static str) -> Result<Vec<bool>> {
    read_labels(path)?
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            l.ok_or_else(|| Error::Label {
                path: path.to_owned(),
                line: i + 1,
                found: "no label".into(),
                expected,
            })
        })
        .collect()
}

/// Writes labels (true = malicious) in the privacy crate's label-file format, atomically.
pub fn write_labels(path: &Path, labels: &[Option<bool>]) -> Result<()> {
    let classes: Vec<Option<usize>> = labels.iter().map(|l| l.map(usize::from)).collect();
    write_file(path, privacy::aggregate::format_labels(&classes).as_bytes())
}

/// Writes a file atomically.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    featurizer::write_atomic(path, bytes).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// Writes pretty JSON atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(Error::serialize(path.display()))?;
    bytes.push(b'\n');
    write_file(path, &bytes)
}

/// Reads a feature matrix (the privacy crate's little-endian f32 matrix file).
pub fn read_matrix(path: &Path) -> Result<DenseMatrix> {
    Ok(privacy::matrix::read_f32_matrix(path)?)
}

/// Writes a feature matrix atomically (the privacy crate's f32 matrix file).
pub fn write_matrix(path: &Path, m: &DenseMatrix) -> Result<()> {
    privacy::matrix::write_f32_matrix(path, m)?;
    Ok(())
}

/// sha256 hex of a file's bytes.
pub fn file_sha256(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// The threshold of the highest-TPR point of the ROC of `scores` whose FPR is at most
/// `target_fpr` (ties: the highest threshold). `None` when a class is absent.
pub fn target_fpr_threshold(scores: &[f32], labels: &[bool], target_fpr: f64) -> Option<f32> {
    let curve = roc_curve(scores, labels);
    best_threshold_within(&curve, scores, |p| p.fpr <= target_fpr)
}

/// The threshold of the highest-TPR point of `curve` (the ROC of `scores`) that `within` accepts
/// (ties: the highest threshold). `None` when the curve is empty (a class is absent).
fn best_threshold_within(
    curve: &[RocPoint],
    scores: &[f32],
    within: impl Fn(&RocPoint) -> bool,
) -> Option<f32> {
    let mut best: Option<&RocPoint> = None;
    // Skip the +inf point unless nothing else is within (then nothing is flagged).
    for p in curve.iter().skip(1).filter(|p| within(p)) {
        if best.is_none_or(|b| p.tpr > b.tpr) {
            best = Some(p);
        }
    }
    match best {
        Some(p) => Some(p.threshold),
        // Nothing is within: flag nothing seen, with a threshold that is still a probability
        // (a bundle refuses +inf): just above the highest score, at most 1.
        None if !curve.is_empty() => {
            let highest = scores.iter().copied().fold(0.0f32, f32::max);
            Some(next_up(highest).min(1.0))
        }
        None => None,
    }
}

/// How many times [`confident_target_fpr_threshold`] resamples the validation traffic.
pub const THRESHOLD_REPLICATES: usize = 400;

/// [`target_fpr_threshold`] with its budget held at `confidence`: the highest-TPR point of the
/// ROC at which, over [`THRESHOLD_REPLICATES`] resamplings of the benign rows (each row counted
/// Poisson(1) times: the split draws the traffic record by record), the `confidence` quantile of
/// the share of benign rows flagged is at most `target_fpr`. A point estimate of a 1 % rate rests
/// on the ~30 benign requests above the threshold; chosen at the estimate, the rate on new traffic
/// is above the budget about half the time. `None` when a class is absent.
pub fn confident_target_fpr_threshold(
    scores: &[f32],
    labels: &[bool],
    target_fpr: f64,
    confidence: f64,
    rng: &mut impl rand::Rng,
) -> Option<f32> {
    let curve = roc_curve(scores, labels);
    if curve.is_empty() {
        return None;
    }
    let benign = highest_first(
        scores
            .iter()
            .zip(labels)
            .filter(|(_, &malicious)| !malicious)
            .map(|(&s, _)| s)
            .collect(),
    );
    let allowed_rows = confident_allowance(&benign, target_fpr, confidence, rng);
    let benign_rows = benign.len() as f64;
    best_threshold_within(&curve, scores, |p| {
        (p.fpr * benign_rows).round() as usize <= allowed_rows
    })
}

/// `scores` sorted highest first, NaN last (as `roc_curve` orders them).
fn highest_first(mut scores: Vec<f32>) -> Vec<f32> {
    scores.sort_by(|a, b| {
        b.partial_cmp(a)
            .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
    });
    scores
}

/// The lowest threshold at which at most a share `target_fpr` of the `benign` scores is at or
/// above it — held at `confidence` over resamplings as [`confident_target_fpr_threshold`] does
/// when given. A rate of benign values alone (no attack score decides where in a gap between
/// attack scores it falls). `None` when `benign` is empty.
pub fn lowest_benign_threshold(
    benign: &[f32],
    target_fpr: f64,
    confidence: Option<f64>,
    rng: &mut impl rand::Rng,
) -> Option<f32> {
    if benign.is_empty() {
        return None;
    }
    let allowed = benign_allowance(benign, target_fpr, confidence, rng);
    let benign = highest_first(benign.to_vec());
    // Flag the `allowed` highest rows at most: just above the next row's score (a row tied with
    // it stays below too).
    Some(match benign.get(allowed) {
        None => 0.0,
        Some(&next) => next_up(next).min(1.0),
    })
}

/// How many of the `benign` scores a threshold may flag with at most a share `target_fpr` of
/// them flagged — at `confidence` over resamplings as [`lowest_benign_threshold`] holds it when
/// given, whole groups of tied scores only.
pub fn benign_allowance(
    benign: &[f32],
    target_fpr: f64,
    confidence: Option<f64>,
    rng: &mut impl rand::Rng,
) -> usize {
    let benign = highest_first(benign.to_vec());
    match confidence {
        Some(c) => confident_allowance(&benign, target_fpr, c, rng),
        None => (target_fpr * benign.len() as f64).floor() as usize,
    }
}

/// How many of the `benign` rows (highest first) a threshold may flag with the share flagged
/// at most `target_fpr` at `confidence` over [`THRESHOLD_REPLICATES`] Poisson(1) resamplings;
/// whole groups of tied rows only.
fn confident_allowance(
    benign: &[f32],
    target_fpr: f64,
    confidence: f64,
    rng: &mut impl rand::Rng,
) -> usize {
    use rand_distr::Distribution;
    // Rows of equal score (the copies of one request, mostly) go together: a threshold cannot
    // split them, and their Poisson(1) counts sum to one Poisson(rows) count, so memory grows
    // with the distinct scores, not the traffic.
    let mut groups: Vec<usize> = Vec::new();
    for (k, s) in benign.iter().enumerate() {
        let tied = k > 0 && (benign[k - 1] == *s || (s.is_nan() && benign[k - 1].is_nan()));
        match groups.last_mut() {
            Some(rows) if tied => *rows += 1,
            _ => groups.push(1),
        }
    }
    let laws: Vec<rand_distr::Poisson<f64>> = groups
        .iter()
        .map(|&rows| rand_distr::Poisson::new(rows as f64).expect("a positive rate is valid"))
        .collect();
    // cumulative[b][g]: the copies of the benign rows of the g highest groups in replicate b.
    let cumulative: Vec<Vec<u32>> = (0..THRESHOLD_REPLICATES)
        .map(|_| {
            let mut total = 0u32;
            std::iter::once(0)
                .chain(laws.iter().map(|law| {
                    total = total.saturating_add(law.sample(rng) as u32);
                    total
                }))
                .collect()
        })
        .collect();
    let g = groups.len();
    let rank = ((confidence * THRESHOLD_REPLICATES as f64).ceil() as usize)
        .clamp(1, THRESHOLD_REPLICATES)
        - 1;
    let within_budget = |k: usize| {
        let mut shares: Vec<f64> = cumulative
            .iter()
            .map(|c| f64::from(c[k]) / f64::from(c[g].max(1)))
            .collect();
        shares.sort_by(f64::total_cmp);
        shares[rank] <= target_fpr
    };
    // The share grows with k in every replicate, so its quantile does: the most groups within
    // the budget by bisection (none always is).
    let (mut allowed, mut above) = (0usize, g + 1);
    while above - allowed > 1 {
        let mid = (allowed + above) / 2;
        if within_budget(mid) {
            allowed = mid;
        } else {
            above = mid;
        }
    }
    groups[..allowed].iter().sum()
}

/// The constant added to the malicious count by calibrated aggregation
/// ([`crate::config::AggregationConfig`]): c = round(N · (1 − 2s)) for `teachers` = N and vote
/// share s. A function of the configuration only: the same for every vote matrix (a test checks
/// it), which is what keeps the noisy-max analyses valid.
pub fn vote_share_shift(share: f64, teachers: usize) -> i64 {
    (teachers as f64 * (1.0 - 2.0 * share)).round() as i64
}

/// The vote counts the noisy aggregation sees under calibrated aggregation: (benign,
/// malicious + c) for c ≥ 0, (benign − c, malicious) for c < 0, with c = [`vote_share_shift`].
/// Adding a constant vector does not change how one teacher's vote can move the counts (the
/// sensitivity), so GNMax/LNMax/Confident-GNMax on the shifted counts keep their guarantees.
pub fn shift_votes(
    votes: &privacy::votes::VoteMatrix,
    share: f64,
    teachers: usize,
) -> Result<privacy::votes::VoteMatrix> {
    let c = vote_share_shift(share, teachers);
    if votes.classes() != 2 {
        return Err(Error::Votes(VoteProblem::Classes(votes.classes())));
    }
    let rows: Vec<[u64; 2]> = votes
        .rows()
        .map(|r| {
            if c >= 0 {
                [r[0], r[1] + c as u64]
            } else {
                [r[0] + c.unsigned_abs(), r[1]]
            }
        })
        .collect();
    Ok(privacy::votes::VoteMatrix::from_rows(&rows)?)
}

/// The threshold above which a share of at most `max_share` of the weighted benign mass lies: the
/// smallest score t such that Σ{w : score > t} ≤ max_share · Σw (ties: all rows at t are below).
/// `None` without rows.
pub fn weighted_quantile_threshold(
    scores: &[f32],
    weights: &[usize],
    max_share: f64,
) -> Option<f32> {
    if scores.is_empty() {
        return None;
    }
    let mut rows: Vec<(f32, usize)> = scores
        .iter()
        .copied()
        .zip(weights.iter().copied().chain(std::iter::repeat(1)))
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    let total: f64 = rows.iter().map(|r| r.1.max(1) as f64).sum();
    let allowed = max_share * total;
    let mut above = 0.0f64;
    let mut k = 0;
    // Walk groups of equal scores from the top; a group can go above the threshold only whole.
    while k < rows.len() {
        let score = rows[k].0;
        let mut group = 0.0;
        let mut j = k;
        while j < rows.len() && rows[j].0 == score {
            group += rows[j].1.max(1) as f64;
            j += 1;
        }
        if above + group > allowed {
            // Scores strictly above `score` are flagged; a threshold just above it.
            return Some(next_up(score));
        }
        above += group;
        k = j;
    }
    // Everything fits under the allowance: flag all (threshold at the lowest score).
    Some(rows[rows.len() - 1].0)
}

fn next_up(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let bits = x.to_bits();
    f32::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

/// What [`train_student_full`] did beyond training.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct StudentExtras {
    /// Per self-training round: pseudo-labels added (malicious, benign).
    pub pseudo_labels: Vec<(usize, usize)>,
    /// The threshold rule used (the Youden threshold stays in `training`).
    pub threshold_rule: crate::report::AppliedThresholdRule,
    /// Validation ROC operating point of the chosen threshold: (FPR, TPR).
    pub validation_operating_point: Option<(f64, f64)>,
    /// The student's ROC AUC on its (distinct, labelled, public-side) validation requests: what
    /// a recipe is chosen on — never the test split.
    pub validation_roc_auc: Option<f64>,
    /// The best TPR at FPR ≤ 1 % on the same validation ROC.
    pub validation_tpr_at_1pct_fpr: Option<f64>,
    /// The best TPR at FPR ≤ 1 % on the validation ROC with every request counted as often as
    /// it occurs in the validation split (uncapped): what the traffic-weighted test figure is
    /// the held-out image of. Set by the run (which knows the multiplicities).
    pub validation_traffic_tpr_at_1pct_fpr: Option<f64>,
    /// Set when the threshold was chosen on the validation requests scored as served.
    pub served: Option<crate::report::ServedThreshold>,
    /// The content-only threshold and its validation figures
    /// (`student.public_examples.content_only_validation`).
    pub content_only: Option<crate::report::ContentOnlyThreshold>,
}

/// [`train_student`] plus the `student:` options of the run configuration: self-training on
/// `pool` (unlabelled public features; needed when `student.self_training.rounds` > 0) and the
/// threshold rule (`answered_benign` needs `answered_benign`: the features of the answered
/// queries labelled benign and their public multiplicities).
#[allow(clippy::too_many_arguments)]
pub fn train_student_full(
    train: LabeledRows,
    validation: LabeledRows,
    copies: Option<(&[usize], &[usize])>,
    pool: Option<&DenseMatrix>,
    answered_benign: Option<(&DenseMatrix, &[usize])>,
    student: &crate::config::StudentConfig,
    featurizer_hash: &str,
    rng: &RunRng,
    device: Device,
) -> Result<(ModelFile, StudentExtras)> {
    let mut extras = StudentExtras::default();
    // Traffic weighting by repetition (a row with weight w appears w times): the same gradient
    // in expectation as a per-sample weight, and the ROC of the repeated validation rows is the
    // traffic-weighted ROC.
    let (train, validation) = match copies {
        None => (train, validation),
        Some((train_copies, validation_copies)) => (
            repeat_rows(train, train_copies, "answered queries")?,
            repeat_rows(validation, validation_copies, "validation")?,
        ),
    };
    let mut model = train_student(
        train.clone(),
        validation.clone(),
        &student.training,
        featurizer_hash,
        rng,
        device,
    )?;
    if student.self_training.rounds > 0 {
        model = self_train(
            model,
            &train,
            &validation,
            pool,
            student,
            featurizer_hash,
            rng,
            device,
            &mut extras,
        )?;
    }
    extras.threshold_rule = apply_threshold_rule(
        &mut model,
        &validation,
        answered_benign,
        student,
        rng,
        device,
    )?;
    let scores = model_scores(&model, &validation.x, device)?;
    let (m, roc) = evaluate_scores(&scores, &validation.y, model.info.threshold);
    extras.validation_operating_point = m.fpr.zip(m.tpr);
    extras.validation_roc_auc = m.roc_auc;
    extras.validation_tpr_at_1pct_fpr = tpr_at_fpr(&roc, 0.01);
    Ok((model, extras))
}

/// Which rows of `train` to keep after cross-validated label cleaning
/// ([`crate::config::LabelCleaningConfig`]): each fold is scored by a student trained (with
/// `training`, its rows repeated by `copies` when given) on the other folds; a row whose label the
/// out-of-fold score contradicts with at least `cleaning.confidence` is not kept. The folds are
/// drawn from the stream `label-cleaning` of `rng`.
#[allow(clippy::too_many_arguments)]
pub fn clean_labels(
    train: &LabeledRows,
    copies: Option<&[usize]>,
    validation: &LabeledRows,
    cleaning: &crate::config::LabelCleaningConfig,
    training: &TrainConfig,
    featurizer_hash: &str,
    rng: &RunRng,
    device: Device,
) -> Result<Vec<bool>> {
    let n = train.y.len();
    let folds = cleaning.folds.max(2);
    let mut fold = vec![0usize; n];
    for (position, &row) in shuffled(n, &mut rng.stream("label-cleaning"))
        .iter()
        .enumerate()
    {
        fold[row] = position % folds;
    }
    let mut keep = vec![true; n];
    for f in 0..folds {
        let (inside, outside): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| fold[i] != f);
        if outside.is_empty() {
            continue;
        }
        let rows = train.select(&inside);
        let rows = match copies {
            Some(c) => {
                let c: Vec<usize> = inside.iter().map(|&i| c[i]).collect();
                repeat_rows(rows, &c, "answered queries")?
            }
            None => rows,
        };
        let model = train_student(
            rows,
            validation.clone(),
            training,
            featurizer_hash,
            rng,
            device,
        )?;
        let scores = model_scores(&model, &train.x.select_rows(&outside), device)?;
        for (&i, &score) in outside.iter().zip(&scores) {
            let score = f64::from(score);
            let contradicted = if train.y[i] {
                score <= 1.0 - cleaning.confidence
            } else {
                score >= cleaning.confidence
            };
            keep[i] = !contradicted;
        }
    }
    Ok(keep)
}

/// `rows` with row i repeated `copies[i]` times (at least once).
fn repeat_rows(rows: LabeledRows, copies: &[usize], what: &'static str) -> Result<LabeledRows> {
    if copies.len() != rows.y.len() {
        return Err(Error::Multiplicities {
            what,
            found: copies.len(),
            rows: rows.y.len(),
        });
    }
    let idx: Vec<usize> = copies
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| std::iter::repeat_n(i, c.max(1)))
        .collect();
    Ok(rows.select(&idx))
}

/// `student.self_training.rounds` (> 0) rounds of self-training from `model`: each round the
/// latest model pseudo-labels the confident rows of `pool`, and a fresh student trains on `train`
/// plus them. Returns the last round's model; each round's pseudo-label counts go to `extras`.
#[allow(clippy::too_many_arguments)]
fn self_train(
    mut model: ModelFile,
    train: &LabeledRows,
    validation: &LabeledRows,
    pool: Option<&DenseMatrix>,
    student: &crate::config::StudentConfig,
    featurizer_hash: &str,
    rng: &RunRng,
    device: Device,
    extras: &mut StudentExtras,
) -> Result<ModelFile> {
    let rounds = student.self_training.rounds;
    let pool = pool.ok_or_else(|| {
        Error::key(
            "student.self_training.rounds",
            "> 0 needs the unlabelled public pool's features",
        )
    })?;
    if pool.cols != train.x.cols {
        return Err(Error::FeatureWidth {
            what: "the unlabelled pool".into(),
            found: pool.cols,
            of: "the queries".into(),
            expected: train.x.cols,
        });
    }
    let c = student.self_training.confidence as f32;
    for round in 1..=rounds {
        let scores = model_scores(&model, pool, device)?;
        let mut x = train.x.values.clone();
        let mut y = train.y.clone();
        let (mut malicious, mut benign) = (0usize, 0usize);
        for (r, &s) in scores.iter().enumerate() {
            let label = if s >= c {
                malicious += 1;
                true
            } else if s <= 1.0 - c {
                benign += 1;
                false
            } else {
                continue;
            };
            x.extend_from_slice(pool.row(r));
            y.push(label);
        }
        tracing::info!(
            "student: self-training round {round}/{rounds}: {malicious} malicious and {benign} benign pseudo-labels from {} unlabelled public requests",
            pool.rows
        );
        extras.pseudo_labels.push((malicious, benign));
        let rows = y.len();
        let augmented = LabeledRows {
            x: DenseMatrix::new(rows, train.x.cols, x)?,
            y,
        };
        let round_rng = RunRng::derived(rng, &format!("self-training-{round}"));
        model = train_student(
            augmented,
            validation.clone(),
            &student.training,
            featurizer_hash,
            &round_rng,
            device,
        )?;
    }
    Ok(model)
}

/// Sets `model`'s threshold by `student.threshold_rule` (Youden's, from training, is kept as is)
/// and returns the rule as reported.
fn apply_threshold_rule(
    model: &mut ModelFile,
    validation: &LabeledRows,
    answered_benign: Option<(&DenseMatrix, &[usize])>,
    student: &crate::config::StudentConfig,
    rng: &RunRng,
    device: Device,
) -> Result<AppliedThresholdRule> {
    match student.threshold_rule {
        crate::config::ThresholdRule::Youden => Ok(AppliedThresholdRule::Youden),
        crate::config::ThresholdRule::TargetFpr => {
            let scores = model_scores(model, &validation.x, device)?;
            let t = match student.target_fpr_confidence {
                None => target_fpr_threshold(&scores, &validation.y, student.target_fpr),
                Some(confidence) => confident_target_fpr_threshold(
                    &scores,
                    &validation.y,
                    student.target_fpr,
                    confidence,
                    &mut rng.stream("threshold-confidence"),
                ),
            }
            .ok_or(Error::Threshold(
                "the student validation samples need both classes",
            ))?;
            model.info.threshold = t;
            Ok(AppliedThresholdRule::TargetFpr(student.target_fpr))
        }
        crate::config::ThresholdRule::AnsweredBenign => {
            let (x, weights) = answered_benign.ok_or_else(|| {
                Error::key(
                    "student.threshold_rule",
                    "answered_benign needs the answered queries labelled benign",
                )
            })?;
            let scores = model_scores(model, x, device)?;
            let t = weighted_quantile_threshold(&scores, weights, student.target_fpr)
                .ok_or(Error::Threshold("no answered query was labelled benign"))?;
            model.info.threshold = t;
            Ok(AppliedThresholdRule::AnsweredBenign(student.target_fpr))
        }
    }
}

#[cfg(test)]
mod lever_tests {
    use super::*;
    use privacy::votes::VoteMatrix;

    #[test]
    fn the_vote_share_shift_depends_on_the_configuration_only() {
        // Two very different vote matrices of 250 teachers: the same constant is added.
        let a = VoteMatrix::from_rows(&[[250u64, 0], [0, 250], [125, 125]]).unwrap();
        let b = VoteMatrix::from_rows(&[[1u64, 249], [200, 50]]).unwrap();
        let c = vote_share_shift(0.3, 250);
        assert_eq!(c, 100);
        for m in [&a, &b] {
            let shifted = shift_votes(m, 0.3, 250).unwrap();
            for (r, s) in m.rows().zip(shifted.rows()) {
                assert_eq!((s[0], s[1]), (r[0], r[1] + 100));
            }
        }
        // Without noise, argmax of the shifted counts = "at least 30 % vote malicious".
        for malicious in 0..=250u64 {
            let m = VoteMatrix::from_rows(&[[250 - malicious, malicious]]).unwrap();
            let s = shift_votes(&m, 0.3, 250).unwrap();
            let r = s.row(0);
            assert_eq!(r[1] > r[0], malicious * 10 > 750, "{malicious}");
        }
        // 0.5 is plurality (no shift); above 0.5 the benign count is raised.
        assert_eq!(vote_share_shift(0.5, 250), 0);
        let s = shift_votes(&a, 0.6, 250).unwrap();
        assert_eq!(s.row(1), &[50, 250]);
    }

    #[test]
    fn head_selection_asks_the_most_frequent_requests_first_then_every_other_once() {
        let multiplicities = [1, 50, 3, 1000, 1, 7, 1, 1];
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let order = head_then_uniform(&multiplicities, 3, &mut rng);
        assert_eq!(&order[..3], &[3, 1, 5]);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..multiplicities.len()).collect::<Vec<_>>());
    }

    #[test]
    fn the_weighted_quantile_threshold_keeps_the_benign_traffic_above_it_under_the_share() {
        // One page of weight 1000 scoring 0.1, ten rows of weight 1 scoring 0.5..0.95.
        let mut scores = vec![0.1f32];
        let mut weights = vec![1000usize];
        for k in 0..10 {
            scores.push(0.5 + 0.05 * k as f32);
            weights.push(1);
        }
        let t = weighted_quantile_threshold(&scores, &weights, 0.01).unwrap();
        let above: usize = scores
            .iter()
            .zip(&weights)
            .filter(|(s, _)| **s >= t)
            .map(|(_, w)| w)
            .sum();
        assert!(above as f64 <= 0.01 * 1010.0, "{above} above {t}");
        assert!(t > 0.1 && t <= 0.95, "{t}");
        // Heavy page at the top: it must stay below the threshold.
        let t = weighted_quantile_threshold(&[0.9, 0.2], &[1000, 10], 0.01).unwrap();
        assert!(t > 0.9);
        assert_eq!(weighted_quantile_threshold(&[], &[], 0.01), None);
    }
}

#[cfg(test)]
mod teacher_weighting_tests {
    use super::*;
    use crate::config::TeacherMultiplicity;

    fn record(target: &str) -> datasets::Record {
        datasets::Record {
            method: "GET".into(),
            target: target.as_bytes().to_vec(),
            body: None,
            headers: Vec::new(),
            label: Some(datasets::Label::Benign),
            line: 1,
        }
    }

    #[test]
    fn weighted_rows_keep_the_first_copies_and_deal_them_per_record_or_per_request() {
        // "/a" 1000 times, "/b" twice, 40 distinct others once.
        let mut records: Vec<datasets::Record> = (0..1000).map(|_| record("/a")).collect();
        records.extend([record("/b"), record("/b")]);
        records.extend((0..40).map(|i| record(&format!("/p?id={i}"))));
        let private: Vec<usize> = (0..records.len()).collect();
        let count_of = |rows: &[usize], t: &str| {
            rows.iter()
                .filter(|&&i| records[i].target == t.as_bytes())
                .count()
        };

        let traffic = teacher_rows(&records, &private, TeacherMultiplicity::Traffic);
        assert_eq!(traffic, private);
        let log = teacher_rows(&records, &private, TeacherMultiplicity::Log);
        assert_eq!(
            (count_of(&log, "/a"), count_of(&log, "/b"), log.len()),
            (8, 2, 8 + 2 + 40)
        );
        let cap = teacher_rows(&records, &private, TeacherMultiplicity::Cap(5));
        assert_eq!(
            (count_of(&cap, "/a"), count_of(&cap, "/b"), cap.len()),
            (5, 2, 5 + 2 + 40)
        );
        let distinct_rows = teacher_rows(&records, &private, TeacherMultiplicity::Distinct);
        assert_eq!(distinct_rows, distinct(&records, &private));

        // Every kept row is a different record.
        for rows in [&log, &cap] {
            let unique: std::collections::HashSet<usize> = rows.iter().copied().collect();
            assert_eq!(unique.len(), rows.len());
        }
        for grouped in [true, false] {
            let shards = teacher_shards(&records, &cap, 7, grouped);
            assert_eq!(shards.iter().map(Vec::len).sum::<usize>(), cap.len());
            let holding = |target: &str| {
                shards
                    .iter()
                    .filter(|s| {
                        s.iter()
                            .any(|&j| records[cap[j]].target == target.as_bytes())
                    })
                    .count()
            };
            // Grouped: all copies on one teacher; per record: the 5 copies spread by hash (the
            // teachers of copies 0..5 of "/a" under this rule: more than one).
            if grouped {
                assert_eq!(holding("/a"), 1);
            } else {
                assert!(
                    holding("/a") > 1,
                    "5 copies on {} teacher(s)",
                    holding("/a")
                );
            }
        }
        // On distinct rows the grouped partition is the hash partition.
        assert_eq!(
            teacher_shards(&records, &distinct_rows, 7, true),
            hash_partition(&records, &distinct_rows, 7)
        );
    }
}

#[cfg(test)]
mod threshold_tests {
    use super::*;
    use rand::RngExt;

    /// One validation draw: `benign` scores uniform on [0, 1) (so a threshold t flags 1 − t of
    /// new benign traffic) and as many attacks uniform on [0.9, 1) (every lower threshold
    /// catches more of them, so the rule goes as low as its budget lets it).
    fn draw(benign: usize, rng: &mut ChaCha20Rng) -> (Vec<f32>, Vec<bool>) {
        let mut scores: Vec<f32> = (0..benign).map(|_| rng.random::<f32>()).collect();
        let mut labels = vec![false; benign];
        scores.extend((0..benign).map(|_| 0.9 + 0.1 * rng.random::<f32>()));
        labels.extend(std::iter::repeat_n(true, benign));
        (scores, labels)
    }

    /// The claim of `target_fpr_confidence`: at the point estimate a 1 % budget is exceeded on
    /// new traffic about half the time; held at confidence 0.95, seldom — at a small cost.
    #[test]
    fn a_budget_held_at_confidence_is_seldom_exceeded_on_new_traffic() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let trials = 60;
        let (mut point_over, mut confident_over) = (0, 0);
        let (mut point_fpr, mut confident_fpr) = (0.0, 0.0);
        for _ in 0..trials {
            let (scores, labels) = draw(2000, &mut rng);
            let point = target_fpr_threshold(&scores, &labels, 0.01).unwrap();
            let confident =
                confident_target_fpr_threshold(&scores, &labels, 0.01, 0.95, &mut rng).unwrap();
            // The validation rows themselves: never more than the budget either way.
            let flagged = |t: f32| {
                let benign = labels.iter().filter(|&&l| !l).count() as f64;
                scores
                    .iter()
                    .zip(&labels)
                    .filter(|&(&s, &l)| !l && s >= t)
                    .count() as f64
                    / benign
            };
            assert!(flagged(point) <= 0.01 && flagged(confident) <= 0.01);
            assert!(confident >= point, "{confident} < {point}");
            let (p, c) = (1.0 - f64::from(point), 1.0 - f64::from(confident));
            point_over += usize::from(p > 0.01);
            confident_over += usize::from(c > 0.01);
            point_fpr += p / trials as f64;
            confident_fpr += c / trials as f64;
        }
        assert!(
            (15..=45).contains(&point_over),
            "point estimate over the budget in {point_over} of {trials}"
        );
        assert!(
            confident_over <= 6,
            "held at 0.95, over the budget in {confident_over} of {trials}"
        );
        // The price: a lower rate than the budget, not a collapse.
        assert!(
            (0.005..0.01).contains(&confident_fpr) && point_fpr > confident_fpr,
            "mean new-traffic FPR {point_fpr} (point), {confident_fpr} (0.95)"
        );
    }

    /// `lowest_benign_threshold`: the lowest threshold at which at most the budget's share of the
    /// benign scores is at or above it (a tie stays on one side), at confidence at least as
    /// high; nothing to hold: none; a budget of all: 0.
    #[test]
    fn the_lowest_benign_threshold_holds_its_budget_and_no_lower_one_does() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let benign: Vec<f32> = (0..100).map(|k| k as f32 / 100.0).collect();
        let flagged = |t: f32| benign.iter().filter(|&&s| s >= t).count();
        let t = lowest_benign_threshold(&benign, 0.05, None, &mut rng).unwrap();
        assert_eq!(flagged(t), 5, "{t}");
        assert_eq!(flagged(0.94), 6, "0.94 is the next score down");
        assert!(t > 0.94 && t <= 0.95, "{t}");
        let confident = lowest_benign_threshold(&benign, 0.05, Some(0.95), &mut rng).unwrap();
        assert!(confident >= t && flagged(confident) < 5, "{confident}");
        let mut tied = vec![0.5f32; 10];
        tied.extend([0.1; 90]);
        let t = lowest_benign_threshold(&tied, 0.05, None, &mut rng).unwrap();
        assert_eq!(
            flagged_in(&tied, t),
            0,
            "ten tied rows cannot be split: {t}"
        );
        assert_eq!(lowest_benign_threshold(&[], 0.05, None, &mut rng), None);
        assert_eq!(
            lowest_benign_threshold(&[0.3, 0.4], 1.0, None, &mut rng),
            Some(0.0)
        );
    }

    fn flagged_in(scores: &[f32], t: f32) -> usize {
        scores.iter().filter(|&&s| s >= t).count()
    }

    /// Ties, one class, and a budget nothing meets behave as `target_fpr_threshold`'s.
    #[test]
    fn confident_threshold_edge_cases() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        assert_eq!(
            confident_target_fpr_threshold(&[0.1, 0.2], &[false, false], 0.01, 0.9, &mut rng),
            None
        );
        // Every benign row above every attack: nothing may be flagged, so nothing is.
        let t = confident_target_fpr_threshold(
            &[0.9, 0.8, 0.1],
            &[false, false, true],
            0.01,
            0.9,
            &mut rng,
        )
        .unwrap();
        assert!(t > 0.9 && t <= 1.0, "{t}");
        // Attacks above every benign row: the lowest attack score, at any confidence.
        let t = confident_target_fpr_threshold(
            &[0.2, 0.1, 0.7, 0.8, 0.8],
            &[false, false, true, true, true],
            0.01,
            0.99,
            &mut rng,
        )
        .unwrap();
        assert_eq!(t, 0.7);
        // Copies of one request score alike and go together: a benign page of 20 copies (2 % of
        // the benign traffic) above an attack is never flagged within a 1 % budget.
        let mut scores = vec![0.1f32; 980];
        scores.extend([0.8; 20]);
        scores.extend([0.5, 0.9]);
        let mut labels = vec![false; 1000];
        labels.extend([true, true]);
        let t = confident_target_fpr_threshold(&scores, &labels, 0.01, 0.5, &mut rng).unwrap();
        assert_eq!(t, 0.9);
    }
}
