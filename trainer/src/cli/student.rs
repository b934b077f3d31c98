//! `pate-trainer student`: trains the student on the ORIGINAL features of the answered queries
//! with their noisy labels (unanswered queries, `-`, are left out); early stopping and the Youden
//! threshold on the labelled student-validation samples, or the `student:` options of the config:
//! `threshold_rule: target_fpr` and `self_training` (pseudo-labels on the unlabelled public pool,
//! `--pool`).
use std::path::{Path, PathBuf};

use crate::config::RunConfig;
use crate::dense::DenseMatrix;
use crate::ensemble::LabeledRows;
use crate::error::{Error, Result, UsageProblem};
use crate::rng::RunRng;
use crate::rundir::PUBLIC_POOL_SET;
use crate::rundir::{resolve_path, sets, RunDir};

/// Arguments of `pate-trainer student`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run directory: defaults every file below to its place in RUN_DIR (queries.f32,
    /// aggregate.labels, student_validation.f32/.labels, config.yaml, featurizer.json,
    /// student.safetensors).
    #[arg(long, value_name = "RUN_DIR")]
    pub run: Option<PathBuf>,
    /// Query features as sent by the student BEFORE privatization (f32 matrix).
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    /// Noisy labels of the queries (`pate-trainer aggregate` output: 0, 1 or `-` per line).
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// Validation features (f32 matrix).
    #[arg(long, value_name = "FILE")]
    pub validation: Option<PathBuf>,
    /// Validation labels (0 or 1 per line).
    #[arg(long, value_name = "FILE")]
    pub validation_labels: Option<PathBuf>,
    /// Unlabelled public pool features for `student.self_training` (f32 matrix; default
    /// RUN_DIR/features/public_pool.f32, which `run` writes when self-training is on).
    #[arg(long, value_name = "FILE")]
    pub pool: Option<PathBuf>,
    /// Run configuration (its `student` section; default RUN_DIR/config.yaml, else
    /// the defaults).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The featurizer the features came from (its hash is recorded in the student).
    #[arg(long, value_name = "FILE")]
    pub featurizer: Option<PathBuf>,
    /// Student model file to write.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// `--device`, `--threads`.
    #[command(flatten)]
    pub compute: super::DeviceArgs,
}

/// Runs `pate-trainer student`.
pub fn run(args: Args) -> Result<()> {
    let run = args.run.as_ref().map(RunDir::new);
    let pick = |given: &Option<PathBuf>, default: &dyn Fn(&RunDir) -> PathBuf, flag: &str| {
        resolve_path(given, run.as_ref(), default, "student", flag)
    };
    let queries_path = pick(&args.queries, &|r| r.features(sets::QUERIES), "queries")?;
    let labels_path = pick(&args.labels, &|r| r.aggregate_labels(), "labels")?;
    let validation_path = pick(
        &args.validation,
        &|r| r.features(sets::STUDENT_VALIDATION),
        "validation",
    )?;
    let validation_labels_path = pick(
        &args.validation_labels,
        &|r| r.labels(sets::STUDENT_VALIDATION),
        "validation-labels",
    )?;
    let featurizer_path = pick(&args.featurizer, &|r| r.featurizer(), "featurizer")?;
    let out = pick(&args.out, &|r| r.student(), "out")?;
    let config = stage_config(&args, run.as_ref())?;
    let device = args.compute.apply(config.threads)?;
    let rng = RunRng::new(config.seed)?;
    let featurizer = featurizer::Featurizer::load(&featurizer_path)?;

    let (queries, labels, answered) = read_answered_queries(&queries_path, &labels_path)?;
    let validation = crate::io::read_matrix(&validation_path)?;
    let validation_labels = crate::io::read_full_labels(
        &validation_labels_path,
        "validation labels must all be 0 or 1",
    )?;
    let check_width = |path: &Path, m: &DenseMatrix| {
        check_featurizer_width(path, m, &featurizer_path, featurizer.dim())
    };
    check_width(&queries_path, &queries)?;
    check_width(&validation_path, &validation)?;
    if config.student.multiplicity_cap.is_some() {
        return Err(Error::ConfigKey {
            key: "student.multiplicity_cap".into(),
            reason:
                "needs each request's multiplicity in its split, which only `pate-trainer run` \
                     has; set it to null for the student stage"
                    .into(),
        });
    }
    if config.student.validation_labels {
        return Err(Error::ConfigKey {
            key: "student.validation_labels".into(),
            reason: "needs the validation split's requests, which only `pate-trainer run` has; \
                     set it to false for the student stage"
                .into(),
        });
    }
    let pool = if config.student.self_training.rounds > 0 {
        let pool_path = pick(&args.pool, &|r| r.features(PUBLIC_POOL_SET), "pool")?;
        let m = crate::io::read_matrix(&pool_path)?;
        check_width(&pool_path, &m)?;
        Some(m)
    } else {
        None
    };
    let (student, extras) = crate::stages::student::from_labels(
        &config,
        &queries,
        &labels,
        LabeledRows {
            x: validation,
            y: validation_labels,
        },
        pool.as_ref(),
        crate::student::StudentEnv {
            featurizer_hash: featurizer.content_hash(),
            rng: &rng,
            device,
        },
    )?;
    student.save(&out)?;
    let summary = StudentSummary {
        student: out.clone(),
        answered: answered.len(),
        threshold: student.info.threshold,
        training: student.info.training.clone(),
        options: extras,
    };
    println!(
        "{}",
        serde_json::to_string(&summary).expect("a summary serializes")
    );
    Ok(())
}

/// The stage's config: `--config`, else the run directory's `config.yaml` when there is one, else
/// the defaults.
fn stage_config(args: &Args, run: Option<&RunDir>) -> Result<RunConfig> {
    if let Some(p) = &args.config {
        return RunConfig::load(p);
    }
    match run.filter(|r| r.config().exists()) {
        Some(r) => {
            let version = crate::rundir::format_version(r)?;
            if version < crate::rundir::RUN_FORMAT_VERSION {
                return Err(Error::Usage {
                    command: "student",
                    problem: UsageProblem::OldRunConfig {
                        config: r.config(),
                        version,
                    },
                });
            }
            RunConfig::load(&r.config())
        }
        None => Ok(RunConfig::without_datasets()),
    }
}

/// The query features and their aggregated labels (one per row, `None` = unanswered) and the
/// answered rows; refuses a label file of another length or without a single answer.
fn read_answered_queries(
    queries_path: &Path,
    labels_path: &Path,
) -> Result<(DenseMatrix, Vec<Option<bool>>, Vec<usize>)> {
    let queries = crate::io::read_matrix(queries_path)?;
    let labels = crate::io::read_labels(labels_path)?;
    if labels.len() != queries.rows {
        return Err(Error::RowCount {
            path: labels_path.to_owned(),
            what: "labels",
            found: labels.len(),
            other: queries_path.to_owned(),
            expected: queries.rows,
        });
    }
    let answered: Vec<usize> = (0..labels.len()).filter(|&i| labels[i].is_some()).collect();
    if answered.is_empty() {
        return Err(Error::Empty {
            what: labels_path.display().to_string(),
            missing: "no answered query",
        });
    }
    Ok((queries, labels, answered))
}

/// Refuses a feature matrix that is not as wide as the featurizer's output.
fn check_featurizer_width(
    path: &Path,
    m: &DenseMatrix,
    featurizer_path: &Path,
    dim: usize,
) -> Result<()> {
    if m.cols != dim {
        return Err(Error::FeatureWidth {
            what: path.display().to_string(),
            found: m.cols,
            of: format!("the featurizer {}", featurizer_path.display()),
            expected: dim,
        });
    }
    Ok(())
}

/// What `student` did (printed as one JSON line).
#[derive(Debug, Clone, serde::Serialize)]
pub struct StudentSummary {
    /// The student file.
    pub student: PathBuf,
    /// Answered queries it trained on.
    pub answered: usize,
    /// Its threshold.
    pub threshold: f32,
    /// Its training.
    pub training: crate::ensemble::MemberReport,
    /// What the `student:` options did.
    pub options: crate::student::StudentExtras,
}
