//! Stage 3, `teach`: partition the private rows into one shard per teacher and train the
//! teachers (batched ensemble), each saved as `teachers/teacher-NNNNN.safetensors`.
use std::path::Path;
use std::time::Instant;

use tch::Device;

use crate::config::RunConfig;
use crate::dense::DenseMatrix;
use crate::ensemble::LabeledRows;
use crate::error::{Error, Result, TeacherProblem};
use crate::model_file::{load_teachers, ModelFile};
use crate::pipeline::{self, RunRng, TeachJob};
use crate::rundir::RunDir;

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
    let shards = pipeline::teacher_shards(
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
    pipeline::teach(&job, rng)
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
    let shards = shards(config, records, &features.private_rows)?;
    pipeline::write_json(&run.shards(), &shards)?;
    let data = shard_data(&features.private, &shards)
        .into_iter()
        .map(Some)
        .collect();
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
        seconds,
    })
}
