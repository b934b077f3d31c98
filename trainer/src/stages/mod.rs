//! The PATE stages as a library, one module per stage, in the order the data flows:
//!
//! ```text
//! split → featurize → teach → vote → aggregate (+ account) → student → evaluate → export
//! ```
//!
//! Each stage is a function that takes typed inputs and returns a typed artifact
//! ([`split::QueryPlan`], [`featurize::Features`], [`teach::Teachers`], [`aggregate::Aggregation`],
//! [`student::Student`], [`evaluate::Evaluated`], the report); writing an artifact into the run
//! directory is a separate function of the same module, and [`RunDir`] owns every file name.
//! [`run`] (`pate-trainer run`) calls the stages in order; the stage subcommands (`cli/`) and the
//! sweep (`experiments::sweep`, `pate-experiments sweep`) call the same functions.
pub mod aggregate;
pub mod evaluate;
pub mod export;
pub mod featurize;
pub mod split;
pub mod student;
pub mod teach;
pub mod vote;

use std::time::Instant;

use tch::Device;

use crate::config::RunConfig;
use crate::device;
use crate::error::{Error, Result};
use crate::report::Report;
use crate::rng::RunRng;
use crate::rundir::{RunDir, RunManifest};

/// Prints a stage banner with the time since the run started.
pub fn banner(name: &str, started: Instant) {
    tracing::info!("[{:>7.1} s] == {name}", started.elapsed().as_secs_f64());
}

/// Where a run's randomness and compute come from, with the run's start time for the banners.
pub struct Env {
    /// Every random choice of the run (streams by purpose, and the privacy noise).
    pub rng: RunRng,
    /// The libtorch device.
    pub device: Device,
    /// When the run started.
    pub started: Instant,
}

impl Env {
    /// The run's randomness (seeded only when the config says so), threads and device.
    pub fn new(config: &RunConfig, started: Instant) -> Result<Env> {
        let rng = RunRng::new(config.seed)?;
        if config.seed.is_some() {
            tracing::warn!(
                "run: SEEDED randomness (seed: {:?}) — reproducible, not private; for experiments only",
                config.seed
            );
        }
        if let Some(t) = config.threads {
            tch::set_num_threads(t as i32);
        }
        let device = device::resolve(config.device)?;
        Ok(Env {
            rng,
            device,
            started,
        })
    }
}

/// Writes the effective configuration (`config.yaml`) and starts the run's manifest with it.
fn write_config(config: &RunConfig, run: &RunDir, env: &Env) -> Result<RunManifest> {
    let config_yaml = serde_yaml::to_string(config).map_err(|source| Error::SerializeYaml {
        what: run.config().display().to_string(),
        source,
    })?;
    crate::io::write_file(&run.config(), config_yaml.as_bytes())?;
    let config_json =
        serde_json::to_value(config).map_err(Error::serialize("the configuration"))?;
    let mut manifest =
        RunManifest::new(env.rng.provenance(), device::name(env.device), config_json);
    manifest.record(run, "config", &[run.config()])?;
    Ok(manifest)
}

/// Runs every stage of `config` into `run` and returns the report (also written to
/// `report.json`). The run directory appears only once the config and the data are valid.
pub fn run(config: &RunConfig, run: &RunDir, started: Instant) -> Result<Report> {
    let env = Env::new(config, started)?;
    let data = split::load(config, &env.rng, started)?;
    let config = &split::fit_queries(config, &data);
    let plan = split::plan(config, &data, &env.rng)?;
    // Only now, with the config and the data valid and the device usable, does the run
    // directory appear (a bad data file leaves no half-written run directory behind).
    run.create()?;
    let mut manifest = write_config(config, run, &env)?;
    split::write(run, config, &data, &plan)?;
    manifest.record(run, "split", &[run.splits()])?;

    let mut pipeline = Pipeline {
        config,
        data: &data,
        plan: &plan,
        env: &env,
        run,
        manifest,
    };
    let features = pipeline.featurize()?;
    let teachers = pipeline.teach(&features)?;
    let mut noise = env.rng.noise()?;
    let (aggregation, ledger) = pipeline.vote_and_aggregate(&features, &teachers, &mut noise)?;
    let student = pipeline.student(&features, &aggregation)?;
    let evaluated = pipeline.evaluate(&features, &teachers, &student)?;

    let parts = export::Parts {
        config,
        data: &data,
        plan: &plan,
        features: &features,
        teachers: &teachers,
        aggregation: &aggregation,
        ledger: &ledger,
        noise: &noise,
        student: &student,
        evaluated: &evaluated,
        env: &env,
    };
    export::run(run, &parts, &mut pipeline.manifest)
}

/// A run past its split: what every later stage reads, and the run directory with the manifest
/// in which each stage records the files it wrote.
struct Pipeline<'a> {
    config: &'a RunConfig,
    data: &'a split::RunData,
    plan: &'a split::QueryPlan,
    env: &'a Env,
    run: &'a RunDir,
    manifest: RunManifest,
}

impl Pipeline<'_> {
    /// Fits the featurizer (saved) and featurizes every set.
    fn featurize(&mut self) -> Result<featurize::Features> {
        let (config, data, run, started) = (self.config, self.data, self.run, self.env.started);
        let fit_rows = featurize::fit_rows(config, &data.splits);
        banner(&featurize::fit_banner(config, fit_rows.len()), started);
        let featurizer = featurize::fit(config, data)?;
        featurizer.save(&run.featurizer())?;
        banner("featurize", started);
        let features = featurize::featurize(config, featurizer, data, self.plan)?;
        let written = featurize::write(run, &features)?;
        features.check_evaluation_classes()?;
        self.manifest.record(run, "featurize", &written)?;
        Ok(features)
    }

    fn teach(&mut self, features: &featurize::Features) -> Result<teach::Teachers> {
        let run = self.run;
        let teachers = teach::run(self.config, &self.data.records, features, run, self.env)?;
        self.manifest
            .record(run, "teach", &[run.shards(), run.teachers()])?;
        Ok(teachers)
    }

    /// The teachers' votes on the queries, their noisy aggregation and its ε, recorded in the
    /// privacy ledger (whose summary comes back with the aggregation).
    fn vote_and_aggregate(
        &mut self,
        features: &featurize::Features,
        teachers: &teach::Teachers,
        noise: &mut privacy::NoiseRng,
    ) -> Result<(aggregate::Aggregation, aggregate::LedgerSummary)> {
        let (config, run) = (self.config, self.run);
        let votes = vote::run(
            config,
            &teachers.files,
            &features.queries_x,
            noise,
            self.env,
        )?;
        vote::write(run, &votes)?;
        self.manifest.record(
            run,
            "vote",
            &[run.features(crate::rundir::sets::QUERIES_SENT), run.votes()],
        )?;
        let aggregation = aggregate::run(
            config,
            votes.votes,
            &teachers.files,
            features,
            self.data.splits.private.len(),
            noise,
            self.env.started,
        )?;
        let ledger = aggregate::record_in_ledger(&run.ledger(), "run", config, &aggregation)?;
        aggregate::write(run, &aggregation)?;
        self.manifest.record(
            run,
            "aggregate+account",
            &[run.aggregate_labels(), run.privacy()],
        )?;
        Ok((aggregation, ledger))
    }

    /// Trains the student on the aggregated labels; saves it, and its part model if any.
    fn student(
        &mut self,
        features: &featurize::Features,
        aggregation: &aggregate::Aggregation,
    ) -> Result<student::Student> {
        let run = self.run;
        let student = student::run(
            self.config,
            self.data,
            self.plan,
            features,
            &aggregation.labels,
            &aggregation.validation_flagged,
            self.env,
        )?;
        student.model.save(&run.student())?;
        let mut saved = vec![run.student()];
        if let Some(part) = &student.part_model {
            part.save(&run.part_model())?;
            saved.push(run.part_model());
        }
        self.manifest.record(run, "student", &saved)?;
        Ok(student)
    }

    fn evaluate(
        &mut self,
        features: &featurize::Features,
        teachers: &teach::Teachers,
        student: &student::Student,
    ) -> Result<evaluate::Evaluated> {
        let run = self.run;
        banner(
            &format!("evaluate on {} test requests", features.test.x.rows),
            self.env.started,
        );
        let evaluated = evaluate::run(
            self.config,
            &student.model,
            &teachers.files,
            features,
            self.data,
            self.env,
        )?;
        evaluate::write(run, &evaluated)?;
        self.manifest
            .record(run, "evaluate", &[run.evaluation(), run.roc()])?;
        Ok(evaluated)
    }
}
