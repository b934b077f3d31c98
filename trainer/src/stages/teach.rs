//! Stage 3, `teach`: partition the private rows into one shard per teacher and train the
//! teachers (one at a time, each on its own shard), each saved as
//! `teachers/teacher-NNNNN.safetensors`.
use std::path::Path;
use std::time::Instant;

use tch::Device;

use crate::config::RunConfig;
use crate::dense::DenseMatrix;
use crate::ensemble::LabeledRows;
use crate::error::{Error, Result, TeacherProblem};
use crate::model_file::{load_teachers, ModelFile};
use crate::rng::RunRng;
use crate::rundir::RunDir;
use crate::teachers::TeachJob;

use super::featurize::Features;
use super::Env;

/// The trained teachers of a run.
pub struct Teachers {
    /// Rows of the private features per teacher.
    pub shards: Vec<Vec<usize>>,
    /// The teachers, in shard order.
    pub files: Vec<ModelFile>,
    /// Teachers trained by this run.
    pub trained: usize,
    /// Teachers found already trained on the same data and kept.
    pub reused: usize,
    /// Tampered requests added to the shards (`teachers.tamperings`), all teachers together.
    pub tampered_rows: usize,
    /// Seconds spent training.
    pub seconds: f64,
}

/// The teacher partition of the private rows `private_rows` (indices into `records`): one shard
/// per teacher of rows of `private_rows`, every copy of a record on one teacher unless
/// `teachers.copies_on_one_teacher` is off. Each shard needs at least two requests.
pub fn shards(
    config: &RunConfig,
    records: &[datasets::Record],
    private_rows: &[usize],
) -> Result<Vec<Vec<usize>>> {
    let count = config.teachers.count;
    let shards = crate::teachers::teacher_shards(
        records,
        private_rows,
        count,
        config.teachers.copies_on_one_teacher,
    );
    if let Some(k) = shards.iter().position(|s| s.len() < 2) {
        return Err(Error::key(
            "teachers.count",
            format!(
                "shard {k} of {count} has {} private requests (at least 2 needed); use fewer teachers",
                shards[k].len()
            ),
        ));
    }
    Ok(shards)
}

/// One teacher's training data: features and labels (true = malicious).
pub type ShardData = (DenseMatrix, Vec<bool>);

/// The teachers' partition and training data.
pub struct ShardSets {
    /// Each shard's positions into the private rows.
    pub partition: Vec<Vec<usize>>,
    /// Each shard's training data (`None`: a shard this call does not train).
    pub data: Vec<Option<ShardData>>,
    /// Tampered requests added, all shards together.
    pub tampered: usize,
}

/// The partition of `private_rows` (indices into `records`) and each shard's training data:
/// `rows_of(k, positions of shard k)` (`None`: a shard this call does not train), with the
/// shard's own tampered requests added (`teachers.tamperings`).
pub fn shard_sets(
    config: &RunConfig,
    records: &[datasets::Record],
    private_rows: &[usize],
    featurizer: &featurizer::Featurizer,
    mut rows_of: impl FnMut(usize, &[usize]) -> Result<Option<ShardData>>,
    rng: &RunRng,
) -> Result<ShardSets> {
    let partition = shards(config, records, private_rows)?;
    let mut data = partition
        .iter()
        .enumerate()
        .map(|(k, shard)| rows_of(k, shard))
        .collect::<Result<Vec<_>>>()?;
    let tampered = add_tamperings(
        &mut data,
        &partition,
        private_rows,
        records,
        featurizer,
        config.teachers.tamperings,
        rng,
    );
    Ok(ShardSets {
        partition,
        data,
        tampered,
    })
}

/// The training data of each shard.
pub fn shard_data(private: &LabeledRows, shards: &[Vec<usize>]) -> Vec<(DenseMatrix, Vec<bool>)> {
    shards
        .iter()
        .map(|s| {
            (
                private.x.select_rows(s),
                s.iter().map(|&i| private.y[i]).collect(),
            )
        })
        .collect()
}

/// `teachers.tamperings`: appends to each shard's training data (`data[k]`, `None`: a shard this
/// call does not train) tampered copies of benign requests **of that shard**
/// ([`crate::public_examples::tamper`]: another method or one parameter name edited, labelled
/// malicious), `tamperings` × the shard's benign rows of them (stochastically rounded), templates
/// drawn with replacement. `shards` holds rows of `private_rows`, which are indices into
/// `records`. Shard k's rows come from shard k's requests and the stream `teacher-tamperings/k`
/// alone, so a private record still reaches one teacher only (the partition's guarantee, which
/// the aggregation's analysis rests on). Returns the rows added.
pub fn add_tamperings(
    data: &mut [Option<(DenseMatrix, Vec<bool>)>],
    shards: &[Vec<usize>],
    private_rows: &[usize],
    records: &[datasets::Record],
    featurizer: &featurizer::Featurizer,
    tamperings: f64,
    rng: &RunRng,
) -> usize {
    use rand::RngExt;
    if tamperings <= 0.0 {
        return 0;
    }
    let mut added = 0;
    for (k, (slot, shard)) in data.iter_mut().zip(shards).enumerate() {
        let Some((x, y)) = slot else { continue };
        let benign: Vec<&datasets::Record> = shard
            .iter()
            .map(|&j| &records[private_rows[j]])
            .filter(|r| r.label == Some(datasets::Label::Benign))
            .collect();
        if benign.is_empty() {
            continue;
        }
        let mut stream = rng.stream(&format!("teacher-tamperings/{k}"));
        let expected = tamperings * benign.len() as f64;
        let count = expected.floor() as usize
            + usize::from(stream.random_range(0.0..1.0) < expected.fract());
        let tampered: Vec<datasets::Record> = (0..count)
            .map(|_| {
                let template = benign[stream.random_range(0..benign.len())];
                crate::public_examples::tamper(template, &mut stream)
            })
            .collect();
        let rows: Vec<usize> = (0..tampered.len()).collect();
        let extra = crate::stages::featurize::featurize_rows(featurizer, &tampered, &rows);
        x.values.extend_from_slice(&extra.values);
        x.rows += extra.rows;
        y.extend(std::iter::repeat_n(true, extra.rows));
        added += extra.rows;
    }
    added
}

/// Trains the teachers of `shards` (`None`: a shard this call does not train) into `dir` with
/// `config.teachers`; teachers already trained there on the same data are kept. Returns how many
/// were trained and how many reused.
pub fn train(
    config: &RunConfig,
    shards: Vec<Option<(DenseMatrix, Vec<bool>)>>,
    featurizer_hash: &str,
    dir: &Path,
    rng: &RunRng,
    device: Device,
) -> Result<(usize, usize)> {
    let job = TeachJob {
        shards,
        holdout_fraction: config.teachers.holdout_fraction,
        holdout_max: config.teachers.holdout_max,
        training: &config.teachers.training,
        featurizer_hash: featurizer_hash.to_string(),
        out_dir: dir,
        device,
    };
    crate::teachers::teach(&job, rng)
}

/// Loads the `count` teachers of `dir`, refusing a directory holding another number.
pub fn load(dir: &Path, count: usize) -> Result<Vec<ModelFile>> {
    let files = load_teachers(dir)?;
    if files.len() != count {
        return Err(Error::Teachers {
            path: dir.to_owned(),
            problem: TeacherProblem::Count {
                found: files.len(),
                expected: count,
            },
        });
    }
    Ok(files)
}

/// The stage in a run: shards (written to `shards.json`), training into `teachers/`, loading.
pub fn run(
    config: &RunConfig,
    records: &[datasets::Record],
    features: &Features,
    run: &RunDir,
    env: &Env,
) -> Result<Teachers> {
    let count = config.teachers.count;
    super::banner(&format!("teach {count} teachers"), env.started);
    let ShardSets {
        partition: shards,
        data,
        tampered: tampered_rows,
    } = shard_sets(
        config,
        records,
        &features.private_rows,
        &features.featurizer,
        |_, shard| Ok(shard_data(&features.private, &[shard.to_vec()]).pop()),
        &env.rng,
    )?;
    crate::io::write_json(&run.shards(), &shards)?;
    if tampered_rows > 0 {
        tracing::info!(
            "teach: {tampered_rows} tampered requests of the shards' own benign ones added"
        );
    }
    let started = Instant::now();
    let (trained, reused) = train(
        config,
        data,
        &features.hash,
        &run.teachers(),
        &env.rng,
        env.device,
    )?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Teachers {
        shards,
        files: load(&run.teachers(), count)?,
        trained,
        reused,
        tampered_rows,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(method: &str, target: &str, label: datasets::Label) -> datasets::Record {
        datasets::Record {
            method: method.into(),
            ..datasets::Record::get(target, Some(label))
        }
    }

    fn shard_rows(
        records: &[datasets::Record],
        f: &featurizer::Featurizer,
        shard: &[usize],
    ) -> (DenseMatrix, Vec<bool>) {
        (
            crate::stages::featurize::featurize_rows(f, records, shard),
            crate::stages::featurize::labels_of(records, shard).unwrap(),
        )
    }

    /// Each shard gains `tamperings` × its benign requests of tampered copies of ITS OWN benign
    /// requests, labelled malicious; what a shard gains does not change when another shard's
    /// records change (the partition's one-record-one-teacher guarantee), and 0 adds nothing.
    #[test]
    fn tamperings_come_from_the_shards_own_benign_requests() {
        use datasets::Label::{Benign, Malicious};
        let mut records = Vec::new();
        for i in 0..40 {
            records.push(record("GET", &format!("/shop/a.jsp?id={i}&name=x"), Benign));
        }
        for i in 0..40 {
            records.push(record("POST", &format!("/admin/b.jsp?user={i}"), Benign));
        }
        records.push(record("GET", "/shop/a.jsp?id=' or 1=1--", Malicious));
        let config = featurizer::FeaturizerConfig {
            top_k: 200,
            params: true,
            ..featurizer::FeaturizerConfig::default()
        };
        let f = featurizer::Featurizer::fit(config, records.iter().map(|r| r.parts())).unwrap();
        let private_rows: Vec<usize> = (0..records.len()).collect();
        let shards = vec![(0..40).chain([80]).collect::<Vec<_>>(), (40..80).collect()];
        let rng = RunRng::new(Some(3)).unwrap();
        let data_of = |records: &[datasets::Record]| -> Vec<Option<(DenseMatrix, Vec<bool>)>> {
            shards
                .iter()
                .map(|s| Some(shard_rows(records, &f, s)))
                .collect()
        };

        let mut none = data_of(&records);
        assert_eq!(
            add_tamperings(&mut none, &shards, &private_rows, &records, &f, 0.0, &rng),
            0
        );
        assert_eq!(none[0].as_ref().unwrap().1.len(), 41);

        let mut data = data_of(&records);
        let added = add_tamperings(&mut data, &shards, &private_rows, &records, &f, 0.5, &rng);
        assert_eq!(added, 40, "0.5 × 40 benign requests per shard, two shards");
        for (k, slot) in data.iter().enumerate() {
            let (x, y) = slot.as_ref().unwrap();
            let own = shards[k].len();
            assert_eq!(x.rows, own + 20);
            assert_eq!(y.len(), own + 20);
            assert!(
                y[own..].iter().all(|&m| m),
                "tampered rows are labelled malicious"
            );
            // No tampered row is a copy of a request of the shard: each was changed.
            for r in own..x.rows {
                assert!((0..own).all(|o| x.row(o) != x.row(r)), "shard {k} row {r}");
            }
        }
        // A tampered copy of shard 1's POSTs to /admin never lands in shard 0 (and back): the
        // path token of the other shard's requests is absent from each shard's added rows.
        let admin = f.transform_dense(&records[40].parts());
        let shop = f.transform_dense(&records[0].parts());
        let shares = |row: &[f32], other: &[f32]| {
            row.iter()
                .zip(other)
                .filter(|(a, b)| **a > 0.0 && **b > 0.0)
                .count()
        };
        let (x0, _) = data[0].as_ref().unwrap();
        for r in 41..x0.rows {
            assert!(shares(x0.row(r), &shop) > shares(x0.row(r), &admin));
        }

        // Neighbouring data: one record of shard 1 changed; shard 0's added rows are the same.
        let mut neighbour = records.clone();
        neighbour[55] = record("GET", "/admin/c.jsp?other=1", Benign);
        let mut data2 = data_of(&neighbour);
        add_tamperings(
            &mut data2,
            &shards,
            &private_rows,
            &neighbour,
            &f,
            0.5,
            &rng,
        );
        assert_eq!(data2[0].as_ref().unwrap().0, data[0].as_ref().unwrap().0);
        assert_eq!(data2[0].as_ref().unwrap().1, data[0].as_ref().unwrap().1);

        // A shard this call does not train (None) gets nothing and draws nothing.
        let mut partial = data_of(&records);
        partial[1] = None;
        add_tamperings(
            &mut partial,
            &shards,
            &private_rows,
            &records,
            &f,
            0.5,
            &rng,
        );
        assert!(partial[1].is_none());
        assert_eq!(partial[0].as_ref().unwrap().0, data[0].as_ref().unwrap().0);
    }
}
