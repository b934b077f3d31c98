//! `pate-trainer vote --teachers DIR --queries FILE`: every teacher votes on every query (its
//! malicious probability against its own threshold); writes the privacy core's vote file, one line
//! per query with the counts `benign,malicious`.
use std::path::PathBuf;

use crate::cli::run::parse_device;
use crate::device::{self, DeviceChoice};
use crate::error::{Error, Result};
use crate::model_file::load_teachers;
use crate::pipeline;
use crate::rundir::{resolve_path, sets, RunDir};

/// Arguments of `pate-trainer vote`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run directory: defaults --teachers to RUN_DIR/teachers, --queries to
    /// RUN_DIR/features/queries.sent.f32 and --out to RUN_DIR/votes.csv.
    #[arg(long, value_name = "RUN_DIR")]
    pub run: Option<PathBuf>,
    /// Directory of teacher-*.safetensors files.
    #[arg(long, value_name = "DIR")]
    pub teachers: Option<PathBuf>,
    /// The (optionally privatized) query features: an f32 matrix file (`pate-trainer privatize`).
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    /// The vote file to write.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// `auto`, `cpu`, `cuda` or `cuda:<i>`.
    #[arg(long, value_parser = parse_device, default_value = "auto")]
    pub device: DeviceChoice,
    /// libtorch CPU threads.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs `pate-trainer vote`.
pub fn run(args: Args) -> Result<()> {
    let run = args.run.as_ref().map(RunDir::new);
    let pick = |given: &Option<PathBuf>, default: fn(&RunDir) -> PathBuf, flag: &str| {
        resolve_path(given, run.as_ref(), default, "vote", flag)
    };
    let teachers_dir = pick(&args.teachers, |r| r.teachers(), "teachers")?;
    let queries_path = pick(&args.queries, |r| r.features(sets::QUERIES_SENT), "queries")?;
    let out = pick(&args.out, |r| r.votes(), "out")?;
    if let Some(t) = args.threads {
        tch::set_num_threads(t as i32);
    }
    let device = device::resolve(args.device)?;
    let teachers = load_teachers(&teachers_dir)?;
    let queries = pipeline::read_matrix(&queries_path)?;
    let input = teachers[0].weights.dims()[0];
    if queries.cols != input {
        return Err(Error::Invalid(format!(
            "{}: {} features per query, the teachers in {} take {input}",
            queries_path.display(),
            queries.cols,
            teachers_dir.display()
        )));
    }
    let votes = pipeline::vote(&teachers, &queries, device)?;
    privacy::votes::write_vote_file(&out, &votes)?;
    println!(
        "{}",
        serde_json::json!({"teachers": teachers.len(), "queries": votes.queries(), "votes": out.display().to_string()})
    );
    Ok(())
}
