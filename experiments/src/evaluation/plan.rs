//! The runs behind EVALUATION.md's tables: which config, how it differs, how many fresh runs,
//! where each lands under the output folder, and how each is made (the `pate-trainer` binary,
//! `bench/site/site_eval.py`, `bench/placements/run.sh`). A run whose result is already there
//! is kept, so an interrupted evaluation resumes.
use std::path::{Path, PathBuf};
use std::process::Command;

use trainer::config::{LabelsFrom, RunConfig};

use crate::error::{Error, Result};

/// A part of the evaluation: one question, one table of EVALUATION.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Part {
    /// The second real site (a blog) onboarded from its unlabelled log: `configs/site.yaml`.
    Site,
    /// CSIC 2010 with no labels of the site: `configs/csic-site.yaml`.
    CsicSite,
    /// CSIC 2010's test split with the labelled validation split: `configs/train.yaml`.
    CsicTest,
    /// The generic replay through pate-proxy + Apache on the `csic-test` bundles.
    Replay,
}

impl Part {
    /// Every part, in the order they run.
    pub const ALL: [Part; 4] = [Part::Site, Part::CsicSite, Part::CsicTest, Part::Replay];

    /// The part's folder under the output folder.
    pub fn dir(self) -> &'static str {
        match self {
            Part::Site => "site",
            Part::CsicSite => "csic-site",
            Part::CsicTest => "csic-test",
            Part::Replay => "replay",
        }
    }
}

/// How a recipe's config differs from the file it is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The file as it is.
    AsIs,
    /// `student.labels_from: assume_benign`: no teachers, the no-private-data baseline.
    NoTeachers,
    /// `site.review: N`: an operator's review of N held-out requests (student-side labels).
    Review(usize),
    /// Both.
    NoTeachersReview(usize),
}

/// One recipe of the evaluation: a config, its variant and where its runs go.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    /// The part (table) it belongs to.
    pub part: Part,
    /// Its runs' folder names: `NAME-1`, `NAME-2`, ...
    pub name: &'static str,
    /// The config, relative to the repository root.
    pub config: &'static str,
    /// How the run's config differs from it.
    pub variant: Variant,
    /// `--public FILE` for the run (the site's log), relative to the repository root.
    pub public: Option<&'static str>,
    /// A baseline (run `--baseline-runs` times) rather than the recipe under test (`--runs`).
    pub baseline: bool,
}

const SITE_LOG: &str = "data/sites/semicomplete/access.log";

/// Every recipe, in the order they run.
pub const RECIPES: &[Recipe] = &[
    Recipe {
        part: Part::Site,
        name: "pate",
        config: "configs/site.yaml",
        variant: Variant::AsIs,
        public: Some(SITE_LOG),
        baseline: false,
    },
    Recipe {
        part: Part::Site,
        name: "no-teachers",
        config: "configs/site.yaml",
        variant: Variant::NoTeachers,
        public: Some(SITE_LOG),
        baseline: true,
    },
    Recipe {
        part: Part::CsicSite,
        name: "pate",
        config: "configs/csic-site.yaml",
        variant: Variant::AsIs,
        public: None,
        baseline: false,
    },
    Recipe {
        part: Part::CsicSite,
        name: "review-200",
        config: "configs/csic-site.yaml",
        variant: Variant::Review(200),
        public: None,
        baseline: true,
    },
    Recipe {
        part: Part::CsicSite,
        name: "no-teachers",
        config: "configs/csic-site.yaml",
        variant: Variant::NoTeachers,
        public: None,
        baseline: true,
    },
    Recipe {
        part: Part::CsicSite,
        name: "no-teachers-review-200",
        config: "configs/csic-site.yaml",
        variant: Variant::NoTeachersReview(200),
        public: None,
        baseline: true,
    },
    Recipe {
        part: Part::CsicTest,
        name: "pate",
        config: "configs/train.yaml",
        variant: Variant::AsIs,
        public: None,
        baseline: false,
    },
];

/// The recipe of `part` named `name` (a bug if absent: the names are this file's).
pub fn recipe(part: Part, name: &str) -> Result<&'static Recipe> {
    RECIPES
        .iter()
        .find(|r| r.part == part && r.name == name)
        .ok_or(Error::Internal("evaluation: unknown recipe"))
}

/// How many runs of each kind, and where they go.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The output folder (`runs/evaluation`).
    pub out: PathBuf,
    /// Fresh runs of each recipe under test.
    pub runs: usize,
    /// Fresh runs of each baseline.
    pub baseline_runs: usize,
}

impl Layout {
    /// How many runs `recipe` gets.
    pub fn count(&self, recipe: &Recipe) -> usize {
        if recipe.baseline {
            self.baseline_runs
        } else {
            self.runs
        }
    }

    /// The run folder of run `i` (from 1) of `recipe`.
    pub fn run_dir(&self, recipe: &Recipe, i: usize) -> PathBuf {
        self.out
            .join(recipe.part.dir())
            .join(format!("{}-{i}", recipe.name))
    }

    /// The run folders of `recipe`, in run order.
    pub fn run_dirs(&self, recipe: &Recipe) -> Vec<PathBuf> {
        (1..=self.count(recipe))
            .map(|i| self.run_dir(recipe, i))
            .collect()
    }

    /// The replay's result of the `csic-test` bundle `i`: content only or with format checks.
    pub fn replay_result(&self, i: usize, format_checks: bool) -> PathBuf {
        let suffix = if format_checks { "" } else { "-nofc" };
        self.out
            .join(Part::Replay.dir())
            .join(format!("pate-{i}{suffix}.json"))
    }
}

/// The programs the evaluation runs.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The repository root (configs, data and bench scripts are read relative to it).
    pub repo: PathBuf,
    /// The `pate-trainer` binary.
    pub trainer: PathBuf,
}

/// Runs every missing run of `parts`, in order.
pub fn run_parts(tools: &Tools, layout: &Layout, parts: &[Part]) -> Result<()> {
    for &part in parts {
        if part == Part::Replay {
            replay(tools, layout)?;
            continue;
        }
        for recipe in RECIPES.iter().filter(|r| r.part == part) {
            for dir in layout.run_dirs(recipe) {
                train(tools, recipe, &dir)?;
                if part == Part::Site {
                    site_eval(tools, &dir)?;
                }
            }
        }
    }
    Ok(())
}

/// The run's config: the recipe's file with its variant applied, written beside the run folder
/// (`NAME-i.config.yaml`) in `--print-config`'s form.
pub fn derived_config(tools: &Tools, recipe: &Recipe) -> Result<RunConfig> {
    let mut config = RunConfig::load(&tools.repo.join(recipe.config))?;
    let (no_teachers, review) = match recipe.variant {
        Variant::AsIs => (false, None),
        Variant::NoTeachers => (true, None),
        Variant::Review(n) => (false, Some(n)),
        Variant::NoTeachersReview(n) => (true, Some(n)),
    };
    if no_teachers {
        config.student.labels_from = LabelsFrom::AssumeBenign;
    }
    if let Some(n) = review {
        let site = config.site.as_mut().ok_or(Error::Internal(
            "evaluation: a review variant of a config without `site:`",
        ))?;
        site.review = n;
    }
    config.validate()?;
    Ok(config)
}

fn train(tools: &Tools, recipe: &Recipe, dir: &Path) -> Result<()> {
    if dir.join("report.json").is_file() {
        tracing::info!("evaluation: {} is done, kept", dir.display());
        return Ok(());
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
    }
    let config_path = dir.with_extension("config.yaml");
    let yaml = serde_yaml::to_string(&derived_config(tools, recipe)?)?;
    create_parent(&config_path)?;
    atomic_write::write_atomic(&config_path, yaml.as_bytes()).map_err(|source| Error::Io {
        path: config_path.clone(),
        source,
    })?;
    let mut cmd = Command::new(&tools.trainer);
    cmd.arg("run")
        .arg("--config")
        .arg(&config_path)
        .arg("--out")
        .arg(dir);
    if let Some(public) = recipe.public {
        cmd.arg("--public").arg(tools.repo.join(public));
    }
    step(tools, cmd, &dir.with_extension("log"))
}

fn site_eval(tools: &Tools, dir: &Path) -> Result<()> {
    let eval = dir.join("eval");
    if eval.join("summary.json").is_file() {
        return Ok(());
    }
    let mut cmd = Command::new("python3");
    cmd.arg("bench/site/site_eval.py")
        .arg("--trainer")
        .arg(&tools.trainer)
        .arg("--bundle")
        .arg(dir.join("bundle"))
        .arg("--out")
        .arg(&eval);
    step(tools, cmd, &dir.with_extension("eval.log"))
}

fn replay(tools: &Tools, layout: &Layout) -> Result<()> {
    let recipe = recipe(Part::CsicTest, "pate")?;
    for (i, dir) in layout.run_dirs(recipe).iter().enumerate() {
        let i = i + 1;
        let bundle = dir.join("bundle");
        if !bundle.join("bundle.yaml").is_file() {
            return Err(Error::MissingResult { path: bundle });
        }
        for format_checks in [false, true] {
            if layout.replay_result(i, format_checks).is_file() {
                continue;
            }
            let out = layout.out.join(Part::Replay.dir());
            let mut cmd = Command::new("bash");
            cmd.arg("bench/placements/run.sh")
                .args(["--levels", ""])
                .arg("--proxy-bundle")
                .arg(&bundle)
                .args(["--proxy-name", &format!("pate-{i}")])
                .arg("--out")
                .arg(&out);
            if !format_checks {
                cmd.arg("--no-format-checks");
            }
            let log = out.join(format!(
                "pate-{i}{}.log",
                if format_checks { "" } else { "-nofc" }
            ));
            step(tools, cmd, &log)?;
        }
    }
    Ok(())
}

/// Runs one step in the repository root, its output to `log`; a failure names the step and log.
fn step(tools: &Tools, mut cmd: Command, log: &Path) -> Result<()> {
    create_parent(log)?;
    let file = std::fs::File::create(log).map_err(|source| Error::Io {
        path: log.to_owned(),
        source,
    })?;
    let err = file.try_clone().map_err(|source| Error::Io {
        path: log.to_owned(),
        source,
    })?;
    let shown = format!("{cmd:?}");
    tracing::info!("evaluation: {shown} (log: {})", log.display());
    let status = cmd
        .current_dir(&tools.repo)
        .stdout(file)
        .stderr(err)
        .status()
        .map_err(|source| Error::Io {
            path: PathBuf::from(cmd.get_program()),
            source,
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::EvaluationStep {
            step: shown,
            status: status.to_string(),
            log: log.to_owned(),
        })
    }
}

fn create_parent(path: &Path) -> Result<()> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    std::fs::create_dir_all(parent).map_err(|source| Error::Io {
        path: parent.to_owned(),
        source,
    })
}
