//! The teachers' side of PATE (Papernot et al. 2017, §2): the private rows partitioned into
//! disjoint shards, and the job that trains one teacher per shard. Everything a teacher computes
//! depends on its own shard alone (docs/privacy.md, "The premise").
use std::path::Path;

use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use tch::Device;

use crate::dense::DenseMatrix;
use crate::ensemble::{self, Ensemble, LabeledRows, MemberData, Mode, TrainConfig};
use crate::error::{Error, Result};
use crate::model_file::{teacher_file_name, ModelFile, ModelInfo, ModelRole};
use crate::rng::shuffled;
use crate::rng::RunRng;
use crate::stages::split::record_key;

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

/// How a teacher is trained beyond its config, in every teacher's data hash: a teacher saved by
/// batched training (padded to the largest shard, so not a function of its own shard) never
/// matches and is trained again.
pub const TEACHER_PROCEDURE: &str = "one teacher at a time, own shard's shapes";

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

/// The shards of `job` to train, each with its data hash, and how many teachers are already
/// saved in `job.out_dir` trained on the same data the same way (kept).
fn teachers_to_train(job: &TeachJob) -> (Vec<(usize, String)>, usize) {
    let count = job.shards.len();
    let training_json = serde_json::json!({
        "training": job.training,
        "holdout_fraction": job.holdout_fraction,
        "holdout_max": job.holdout_max,
        "procedure": TEACHER_PROCEDURE,
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
    (todo, reused)
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
    let (todo, reused) = teachers_to_train(job);
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
        ensemble::InputLayout::Auto,
    )?;
    for (((k, hash), weights), report) in todo.iter().zip(model.members()?).zip(reports) {
        let file = ModelFile {
            weights,
            info: ModelInfo {
                shard: Some(*k),
                shards: Some(count),
                ..ModelInfo::trained(
                    ModelRole::Teacher,
                    report,
                    hash.clone(),
                    job.featurizer_hash.clone(),
                    rng.provenance(),
                )
            },
        };
        file.save(&job.out_dir.join(teacher_file_name(*k)))?;
    }
    Ok((todo.len(), reused))
}
#[cfg(test)]
mod teacher_weighting_tests {
    use super::*;
    use crate::config::TeacherMultiplicity;
    use crate::stages::split::distinct;

    fn record(target: &str) -> datasets::Record {
        datasets::Record::get(target, Some(datasets::Label::Benign))
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
