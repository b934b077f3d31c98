//! `pate-trainer vote`: teachers vote on every query (each its malicious probability against its
//! own threshold); writes the privacy core's vote file, one line per query with the counts
//! `benign,malicious`.
//!
//! * `--teachers DIR`: every `teacher-*.safetensors` of a directory (one party holds them all).
//! * `--teacher FILE`: ONE teacher, the multi-organization flow: each organization runs this on
//!   its own machine with its own teacher and sends only the vote file; `aggregate` merges them.
//! * `--noise-share-sigma S --organizations N` (with `--teacher`): distributed noise: the
//!   organization adds its own share N_ℤ(0, S²/N) to its counts (OS-seeded CSPRNG) and writes a
//!   noisy share file instead, so that the aggregator never sees its clean votes
//!   (`privacy::shares`; docs/privacy.md, "Several organizations").
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::model_file::{load_teachers, ModelFile};
use crate::report::MechanismName;
use crate::rundir::{resolve_path, sets, RunDir};

/// Arguments of `pate-trainer vote`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run directory: defaults --teachers to RUN_DIR/teachers, --queries to
    /// RUN_DIR/features/queries.sent.f32 and --out to RUN_DIR/votes.csv.
    #[arg(long, value_name = "RUN_DIR")]
    pub run: Option<PathBuf>,
    /// Directory of teacher-*.safetensors files.
    #[arg(long, value_name = "DIR", conflicts_with = "teacher")]
    pub teachers: Option<PathBuf>,
    /// One teacher file (one organization's teacher): its votes alone.
    #[arg(long, value_name = "FILE")]
    pub teacher: Option<PathBuf>,
    /// The (optionally privatized) query features: an f32 matrix file (`pate-trainer privatize`).
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    /// The vote file to write.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Distributed GNMax noise: σ of the WHOLE noise; this organization adds its share
    /// N_ℤ(0, σ²/N). Needs --teacher and --organizations.
    #[arg(
        long,
        value_name = "SIGMA",
        requires = "organizations",
        requires = "teacher"
    )]
    pub noise_share_sigma: Option<f64>,
    /// Distributed noise: N, the number of organizations whose shares sum to the noise.
    #[arg(long, value_name = "N", requires = "noise_share_sigma")]
    pub organizations: Option<usize>,
    /// EXPERIMENTS ONLY: fixed seed for the noise share (recorded; then NOT private).
    #[arg(long, requires = "noise_share_sigma")]
    pub seed: Option<u64>,
    /// `--device`, `--threads`.
    #[command(flatten)]
    pub compute: super::DeviceArgs,
}

/// Runs `pate-trainer vote`.
pub fn run(args: Args) -> Result<()> {
    let run = args.run.as_ref().map(RunDir::new);
    let pick = |given: &Option<PathBuf>, default: fn(&RunDir) -> PathBuf, flag: &str| {
        resolve_path(given, run.as_ref(), default, "vote", flag)
    };
    let queries_path = pick(&args.queries, |r| r.features(sets::QUERIES_SENT), "queries")?;
    let out = pick(&args.out, |r| r.votes(), "out")?;
    let device = args.compute.apply(None)?;
    let (teachers, source) = match &args.teacher {
        Some(file) => (vec![ModelFile::load(file)?], file.clone()),
        None => {
            let dir = pick(&args.teachers, |r| r.teachers(), "teachers")?;
            (load_teachers(&dir)?, dir)
        }
    };
    let queries = crate::io::read_matrix(&queries_path)?;
    let input = teachers[0].weights.dims()[0];
    if queries.cols != input {
        return Err(Error::FeatureWidth {
            what: queries_path.display().to_string(),
            found: queries.cols,
            of: format!("the teachers in {}", source.display()),
            expected: input,
        });
    }
    let votes = crate::stages::vote::vote(&teachers, &queries, device)?;
    let summary = match (args.noise_share_sigma, args.organizations) {
        (Some(sigma), Some(organizations)) => {
            let mut rng = privacy::NoiseRng::from_option(args.seed)?;
            let share = privacy::shares::noisy_share(&votes, sigma, organizations, &mut rng)?;
            privacy::write_atomic(&out, privacy::shares::format_share(&share).as_bytes())?;
            VoteSummary {
                teachers: teachers.len(),
                queries: votes.queries(),
                noise_share: Some(NoiseShare {
                    mechanism: MechanismName::Gnmax,
                    sigma,
                    organizations,
                    share_sigma: sigma / (organizations as f64).sqrt(),
                }),
                rng: Some(rng.provenance()),
                votes: out.clone(),
            }
        }
        _ => {
            privacy::votes::write_vote_file(&out, &votes)?;
            VoteSummary {
                teachers: teachers.len(),
                queries: votes.queries(),
                noise_share: None,
                rng: None,
                votes: out.clone(),
            }
        }
    };
    println!(
        "{}",
        serde_json::to_string(&summary).expect("a summary serializes")
    );
    Ok(())
}

/// What `vote` did (printed as one JSON line).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VoteSummary {
    /// Teachers that voted.
    pub teachers: usize,
    /// Queries.
    pub queries: usize,
    /// With --noise-share-sigma: this organization's noise share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_share: Option<NoiseShare>,
    /// With a noise share: its randomness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rng: Option<privacy::RngProvenance>,
    /// The vote file written.
    pub votes: PathBuf,
}

/// One organization's share of distributed GNMax noise.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoiseShare {
    /// Always GNMax.
    pub mechanism: MechanismName,
    /// σ of the summed noise.
    pub sigma: f64,
    /// Organizations adding a share.
    pub organizations: usize,
    /// σ of this share (σ/√organizations).
    pub share_sigma: f64,
}
