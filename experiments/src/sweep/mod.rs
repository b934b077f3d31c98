//! `pate-experiments sweep`: the evaluation grids of issue 6 (the seeds' Table 4.2 grid of teachers ×
//! student noise ρ, mechanisms at matched ε, baselines, learning curve, cross-dataset), resumable.
//!
//! A cell is a `RunConfig` — the base config with the cell's teacher count, query count, ρ and
//! mechanism — computed by the stages of `pate-trainer run` (`trainer::stages`), so every `run`
//! option applies. Efficiency: each distinct dataset list is loaded, split and featurized once
//! (`stages::featurize::shared`); each teacher count is trained once per dataset list with the
//! `teach` stage (teachers saved under `DIR/work/`, reused on a rerun). Per student: the `split`
//! plan (queries, validation samples), the student side's features, privatize + vote,
//! aggregate + account (appended to the teachers' ledger), the student, the evaluation on the
//! test split. Repeat 0 uses the sweep's seed, as the teachers do, so it is `run` of the cell's
//! config with that seed; repeat r > 0 a seed derived from (seed, r). Each student's result is
//! one small JSON file written atomically under `DIR/cells/`; a rerun skips the files that exist
//! and rebuilds the tables from all of them.
pub mod config;
pub mod report;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use privacy::accountant::{AccountOptions, Mechanism as Accounted};
use privacy::aggregate::{ConfidentGnmax, Gnmax, Lnmax};
use privacy::VoteMatrix;
use sha2::{Digest, Sha256};
use tch::Device;

use crate::error::{Error, Result, SweepProblem};
use config::{ExperimentKind, MechanismSpec, SplitName, SweepConfig, SweepDataset};
use report::{EpsilonPoint, ResultRow, SplitTable, SplitTableFile, SplitTableRow};
use trainer::config::RunConfig;
use trainer::metrics::{roc_curve, Metrics};
use trainer::rng::RunRng;
use trainer::stages;
use trainer::stages::split::RunData;

/// What a sweep did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepOutcome {
    /// Results computed by this invocation.
    pub computed: usize,
    /// Results found on disk and reused.
    pub reused: usize,
}

/// A resolved aggregation mechanism.
#[derive(Debug, Clone)]
struct ResolvedMechanism {
    /// The spec's label (the cell id part).
    label: String,
    /// Effective parameters for the tables.
    parameters: String,
    mechanism: Accounted,
}

impl ResolvedMechanism {
    fn name(&self) -> &'static str {
        self.mechanism.name()
    }
}

/// The account of `votes` under `m` (Confident-GNMax charged for the answered queries only).
fn account(
    votes: &VoteMatrix,
    m: &Accounted,
    answered: Option<&[bool]>,
    delta: f64,
) -> Result<privacy::accountant::EpsilonReport> {
    let options = AccountOptions {
        delta,
        orders: None,
        answered: matches!(m, Accounted::ConfidentGnmax(_))
            .then(|| answered.map(<[bool]>::to_vec))
            .flatten(),
    };
    Ok(privacy::accountant::account(votes, m, &options)?)
}

/// Data-independent ε of `queries` queries under `m`, every query charged.
fn data_independent_epsilon(
    m: &Accounted,
    teachers: usize,
    queries: usize,
    delta: f64,
) -> Result<f64> {
    let votes = VoteMatrix::from_rows(&vec![[teachers as u64, 0]; queries])?;
    Ok(account(&votes, m, None, delta)?.data_independent_epsilon)
}

/// Solves σ (GNMax) or σ₂ (Confident-GNMax) by bisection on log σ so that the data-independent ε
/// of `queries` queries equals `target` (ε decreases in σ: Papernot et al. 2018, Proposition 8,
/// RDP α/σ² per query).
fn match_sigma(
    target: f64,
    make: &dyn Fn(f64) -> Accounted,
    teachers: usize,
    queries: usize,
    delta: f64,
) -> Result<f64> {
    let (mut lo, mut hi) = (1e-2f64.ln(), 9999f64.ln());
    let eps =
        |ln_sigma: f64| data_independent_epsilon(&make(ln_sigma.exp()), teachers, queries, delta);
    if eps(hi)? > target {
        return Err(Error::Sweep(SweepProblem::NoMatchingSigma {
            queries,
            target,
        }));
    }
    if eps(lo)? < target {
        return Ok(lo.exp());
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if eps(mid)? > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi.exp())
}

/// Resolves a mechanism spec for a cell; `matched` parameters are solved against `reference`.
fn resolve_mechanism(
    spec: &MechanismSpec,
    reference: Option<&ResolvedMechanism>,
    teachers: usize,
    queries: usize,
    delta: f64,
) -> Result<ResolvedMechanism> {
    let target = || -> Result<f64> {
        let r = reference.ok_or(Error::Sweep(SweepProblem::NoReference))?;
        data_independent_epsilon(&r.mechanism, teachers, queries, delta)
    };
    let (mechanism, parameters) = match spec {
        MechanismSpec::Lnmax { gamma } => (
            Accounted::Lnmax(Lnmax { gamma: *gamma }),
            format!("γ = {gamma}"),
        ),
        MechanismSpec::Gnmax { sigma, head } => {
            let make = |sigma: f64| Accounted::Gnmax(Gnmax { sigma, head: *head });
            let s = match sigma.value() {
                Some(s) => s,
                None => match_sigma(target()?, &make, teachers, queries, delta)?,
            };
            let matched = if sigma.value().is_none() {
                " (matched)"
            } else {
                ""
            };
            let head = head.map_or(String::new(), |h| {
                format!(", head: first {} queries at σ = {}", h.queries, h.sigma)
            });
            (make(s), format!("σ = {s:.2}{matched}{head}"))
        }
        MechanismSpec::ConfidentGnmax {
            threshold_share,
            sigma1,
            sigma2,
        } => {
            let threshold = (threshold_share * teachers as f64).round();
            let make = |s2: f64| {
                Accounted::ConfidentGnmax(ConfidentGnmax {
                    threshold,
                    sigma1: *sigma1,
                    sigma2: s2,
                    max_answered: None,
                })
            };
            let s2 = match sigma2.value() {
                Some(s) => s,
                None => match_sigma(target()?, &make, teachers, queries, delta)?,
            };
            let matched = if sigma2.value().is_none() {
                " (matched)"
            } else {
                ""
            };
            (
                make(s2),
                format!("T = {threshold}, σ₁ = {sigma1}, σ₂ = {s2:.2}{matched}"),
            )
        }
        MechanismSpec::ModelAverage { sigma, clip_norm } => (
            Accounted::ModelAverage(privacy::average::ModelAverage {
                sigma: *sigma,
                clip_norm: *clip_norm,
            }),
            format!("σ = {sigma}, clip norm {clip_norm}, one release"),
        ),
    };
    Ok(ResolvedMechanism {
        label: spec.label(),
        parameters,
        mechanism,
    })
}

/// What one result is.
#[derive(Debug, Clone)]
enum UnitKind {
    Pate {
        teachers: usize,
        queries: usize,
        rho: Option<f64>,
        mechanism: ResolvedMechanism,
        epsilon_curve: Vec<usize>,
    },
    Ensemble {
        teachers: usize,
    },
    Majority {
        teachers: usize,
        queries: usize,
    },
    NonPrivate {
        training: trainer::ensemble::TrainConfig,
    },
}

impl UnitKind {
    fn teachers(&self) -> Option<usize> {
        match self {
            UnitKind::Pate { teachers, .. }
            | UnitKind::Ensemble { teachers }
            | UnitKind::Majority { teachers, .. } => Some(*teachers),
            UnitKind::NonPrivate { .. } => None,
        }
    }
    fn queries(&self) -> Option<usize> {
        match self {
            UnitKind::Pate { queries, .. } | UnitKind::Majority { queries, .. } => Some(*queries),
            _ => None,
        }
    }
}

/// One result to compute (one student, or one baseline model).
#[derive(Debug, Clone)]
struct Unit {
    experiment: String,
    data: usize,
    cell: String,
    repeat: usize,
    kind: UnitKind,
    path: PathBuf,
}

/// A distinct list of datasets.
struct DataSpec {
    label: String,
    key: String,
    datasets: Vec<SweepDataset>,
}

/// A loaded, split and featurized dataset list.
struct Context {
    /// The records and their roles.
    data: RunData,
    /// The featurizer, the teachers' private data and the test split.
    shared: Arc<stages::featurize::Shared>,
    /// How many distinct public requests there are (the most queries a cell can ask).
    distinct_public: usize,
    /// Rows of the test split holding each distinct test request once.
    test_distinct: Vec<usize>,
}

/// A trained teacher set: the `teach` stage's teachers, with the privacy ledger beside them
/// (every cell's noisy aggregation spends privacy of the same private records: the teachers are
/// shared by every cell and kept across reruns).
struct TeacherSet {
    files: Vec<trainer::model_file::ModelFile>,
    ledger: PathBuf,
}

fn derive_seed(seed: Option<u64>, purpose: &str) -> Option<u64> {
    seed.map(|s| {
        let d = Sha256::new()
            .chain_update(s.to_le_bytes())
            .chain_update(purpose.as_bytes())
            .finalize();
        u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
    })
}

fn short_hash(value: &impl serde::Serialize) -> String {
    let json = serde_json::to_vec(value).expect("serializable");
    hex::encode(&Sha256::digest(&json)[..6])
}

fn fmt_rho(rho: Option<f64>) -> String {
    rho.map_or("none".into(), |r| format!("{r}"))
}

/// Runs the sweep into `out`. `jobs` students train at the same time.
pub fn run_sweep(
    config: &SweepConfig,
    base: &RunConfig,
    out: &Path,
    jobs: usize,
) -> Result<SweepOutcome> {
    run_sweep_with(config, base, out, jobs, false)
}

/// [`run_sweep`], or with `report_only` only the tables and plots of the results already in
/// `out` (missing ones left out; e.g. while a long sweep is still running).
pub fn run_sweep_with(
    config: &SweepConfig,
    base: &RunConfig,
    out: &Path,
    jobs: usize,
    report_only: bool,
) -> Result<SweepOutcome> {
    let started = Instant::now();
    if let Some(t) = config.threads.or(base.threads) {
        tch::set_num_threads(t as i32);
    }
    let device = trainer::device::resolve(base.device)?;
    prepare_out(config, base, out, report_only)?;
    let (specs, units) = plan_units(config, base, out, base.privacy.delta)?;
    if report_only {
        return report_present(out, &units, config);
    }

    // ---- what is left to do
    let pending: Vec<&Unit> = units
        .iter()
        .filter(|u| read_result(&u.path).is_none())
        .collect();
    let reused = units.len() - pending.len();
    tracing::info!("sweep: {} results in {} experiments; {reused} already done, {} to compute ({jobs} at a time)", units.len(), config.experiments.len(), pending.len());
    let settings = Settings {
        base,
        seed: config.seed,
        device,
    };
    compute_pending(&pending, &specs, config, out, settings, jobs)?;

    // ---- tables and plots from every result of this config
    let rows: Vec<ResultRow> = units
        .iter()
        .map(|u| {
            read_result(&u.path).ok_or_else(|| Error::MissingResult {
                path: u.path.clone(),
            })
        })
        .collect::<Result<_>>()?;
    write_outputs(out, &rows, config)?;
    tracing::info!(
        "sweep: done in {:.0} s; {} computed, {reused} reused; tables in {}",
        started.elapsed().as_secs_f64(),
        pending.len(),
        out.display()
    );
    Ok(SweepOutcome {
        computed: pending.len(),
        reused,
    })
}

/// Creates `out` with its `.gitignore` and, unless `report_only`, `sweep.json` (the sweep and
/// its base config as run).
fn prepare_out(
    config: &SweepConfig,
    base: &RunConfig,
    out: &Path,
    report_only: bool,
) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|source| Error::Io {
        path: out.to_owned(),
        source,
    })?;
    trainer::io::write_file(
        &out.join(".gitignore"),
        b"# models, features and matrices: large, rebuilt on demand\nwork/\n",
    )?;
    if !report_only {
        trainer::io::write_json(
            &out.join("sweep.json"),
            &SweepSnapshot {
                sweep: config,
                base,
            },
        )?;
    }
    Ok(())
}

/// `--report-only`: the tables and plots of the results of `units` present in `out`.
fn report_present(out: &Path, units: &[Unit], config: &SweepConfig) -> Result<SweepOutcome> {
    let rows: Vec<ResultRow> = units.iter().filter_map(|u| read_result(&u.path)).collect();
    tracing::info!(
        "sweep: report only: {} of {} results present",
        rows.len(),
        units.len()
    );
    write_outputs(out, &rows, config)?;
    Ok(SweepOutcome {
        computed: 0,
        reused: rows.len(),
    })
}

/// What every unit of a sweep is computed with.
#[derive(Clone, Copy)]
struct Settings<'a> {
    /// The base config, which each cell's config modifies.
    base: &'a RunConfig,
    /// The sweep's seed (see [`repeat_seed`]).
    seed: Option<u64>,
    device: Device,
}

/// Computes the `pending` units batch by batch ([`batches`]), loading each data list and
/// training (or reusing) each teacher set when its first batch comes.
fn compute_pending(
    pending: &[&Unit],
    specs: &[DataSpec],
    config: &SweepConfig,
    out: &Path,
    settings: Settings,
    jobs: usize,
) -> Result<()> {
    let groups = batches(pending, config);
    let mut contexts: HashMap<usize, Context> = HashMap::new();
    let mut teacher_sets: HashMap<(usize, usize), TeacherSet> = HashMap::new();
    let total = pending.len();
    let progress = Progress {
        done: AtomicUsize::new(0),
        total,
        started: Instant::now(),
        bar: trainer::log::Progress::new(total as u64),
    };
    for ((data, teachers), group) in groups {
        if let std::collections::hash_map::Entry::Vacant(v) = contexts.entry(data) {
            let ctx = build_context(&specs[data], settings.base, out)?;
            check_queries(pending, data, &specs[data], &ctx)?;
            v.insert(ctx);
        }
        let ctx = &contexts[&data];
        if let Some(n) = teachers {
            if let std::collections::hash_map::Entry::Vacant(e) = teacher_sets.entry((data, n)) {
                e.insert(teacher_set(&specs[data], ctx, n, out, settings)?);
            }
        }
        let set = teachers.map(|n| &teacher_sets[&(data, n)]);
        compute_group(&group, specs, ctx, set, settings, jobs, &progress)?;
    }
    Ok(())
}

/// Refuses a pending unit of data set `data` that asks for more queries than its public split
/// has distinct requests.
fn check_queries(pending: &[&Unit], data: usize, spec: &DataSpec, ctx: &Context) -> Result<()> {
    for u in pending.iter().filter(|u| u.data == data) {
        if let Some(q) = u.kind.queries() {
            if q > ctx.distinct_public {
                return Err(Error::Sweep(SweepProblem::TooManyQueries {
                    experiment: u.experiment.clone(),
                    queries: q,
                    data: spec.label.clone(),
                    distinct: ctx.distinct_public,
                }));
            }
        }
    }
    Ok(())
}

/// (data set, teacher count) of a batch of units.
type TeacherSetKey = (usize, Option<usize>);

/// The pending units in the order they are computed, in batches sharing data and teachers.
fn batches<'a>(pending: &[&'a Unit], config: &SweepConfig) -> Vec<(TeacherSetKey, Vec<&'a Unit>)> {
    // Round-robin over repeats (every cell of every experiment gets its first model, then its
    // second, ...), so an interrupted sweep has every cell with a few models rather than some
    // cells complete and others empty. Consecutive units sharing data and teachers form a batch
    // the workers share.
    let mut order: Vec<&Unit> = pending.to_vec();
    let experiment_index = |u: &Unit| {
        config
            .experiments
            .iter()
            .position(|e| e.name == u.experiment)
            .unwrap_or(0)
    };
    order.sort_by_key(|u| (u.repeat, experiment_index(u)));
    // (data set, teacher count) → the units that share that teacher set, in order.
    let mut groups: Vec<(TeacherSetKey, Vec<&Unit>)> = Vec::new();
    for u in order {
        let key = (u.data, u.kind.teachers());
        match groups.last_mut() {
            Some((k, g)) if *k == key => g.push(u),
            _ => groups.push((key, vec![u])),
        }
    }
    groups
}

/// How far the computation is, shared by the workers.
struct Progress {
    done: AtomicUsize,
    total: usize,
    started: Instant,
    /// The cells done, as a bar on a terminal (each cell's result line is logged above it).
    bar: trainer::log::Progress,
}

/// Computes the units of `group` (one data list and teacher set), `jobs` at a time, writing each
/// result as soon as it is done; the first failure stops the group.
fn compute_group(
    group: &[&Unit],
    specs: &[DataSpec],
    ctx: &Context,
    set: Option<&TeacherSet>,
    settings: Settings,
    jobs: usize,
    progress: &Progress,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let worker = || loop {
        if failure.lock().map(|f| f.is_some()).unwrap_or(true) {
            return;
        }
        let i = next.fetch_add(1, Ordering::SeqCst);
        let Some(u) = group.get(i) else { return };
        let t0 = Instant::now();
        let result = compute(u, &specs[u.data].label, ctx, set, settings).and_then(|mut row| {
            row.seconds = t0.elapsed().as_secs_f64();
            write_json_in(&u.path, &row)?;
            Ok(row)
        });
        match result {
            Ok(row) => {
                let n = progress.done.fetch_add(1, Ordering::SeqCst) + 1;
                let elapsed = progress.started.elapsed().as_secs_f64();
                let (total, eta) = (
                    progress.total,
                    elapsed / n as f64 * (progress.total - n) as f64,
                );
                let pct = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{:.1}%", 100.0 * v));
                tracing::info!(
                    "sweep: [{n}/{total}] {} r{}: TPR {} TNR {} ε(dd) {} ({:.1} s; elapsed {:.0} s, ETA {:.0} s)",
                    u.cell, u.repeat, pct(row.tpr), pct(row.tnr),
                    row.data_dependent_epsilon.map_or("–".into(), |e| format!("{e:.2}")),
                    row.seconds, elapsed, eta
                );
                progress.bar.set_position(n as u64);
            }
            Err(e) => {
                if let Ok(mut f) = failure.lock() {
                    f.get_or_insert(Error::Cell {
                        cell: u.cell.clone(),
                        repeat: u.repeat,
                        source: Box::new(e),
                    });
                }
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..jobs.min(group.len()) {
            s.spawn(worker);
        }
        worker();
    });
    match failure.into_inner().ok().flatten() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The data lists and the results (units) of every experiment of `config`.
fn plan_units(
    config: &SweepConfig,
    base: &RunConfig,
    out: &Path,
    delta: f64,
) -> Result<(Vec<DataSpec>, Vec<Unit>)> {
    let mut specs: Vec<DataSpec> = Vec::new();
    let mut units: Vec<Unit> = Vec::new();
    for e in &config.experiments {
        let datasets = e.datasets.clone().unwrap_or_else(|| {
            base.split
                .iter()
                .flat_map(|s| s.simulate_from.iter())
                .map(SweepDataset::from_source)
                .collect()
        });
        let key = short_hash(&(
            &datasets,
            &base.split.as_ref().map(|s| s.fractions()),
            &base.featurizer,
            &base.teachers,
            e.datasets.is_none(),
        ));
        let data = match specs.iter().position(|s| s.key == key) {
            Some(i) => i,
            None => {
                let label = if e.datasets.is_none() {
                    "base".to_string()
                } else {
                    e.name.clone()
                };
                specs.push(DataSpec {
                    label,
                    key,
                    datasets,
                });
                specs.len() - 1
            }
        };
        let queries = e
            .queries
            .clone()
            .unwrap_or_else(|| vec![base.student.queries]);
        for (cell, repeats, kind) in experiment_cells(e, &queries, base, delta)? {
            // Every cell runs `pate-trainer run`'s pipeline on its own config: refuse the sweep
            // before anything trains if one of them is a config `run` would refuse.
            cell_config(base, &kind)
                .validate()
                .map_err(|source| Error::CellConfig {
                    experiment: e.name.clone(),
                    cell: cell.clone(),
                    source: Box::new(source),
                })?;
            for repeat in 0..repeats {
                units.push(Unit {
                    experiment: e.name.clone(),
                    data,
                    path: out
                        .join("cells")
                        .join(&cell)
                        .join(format!("r{repeat:02}.json")),
                    cell: cell.clone(),
                    repeat,
                    kind: kind.clone(),
                });
            }
        }
    }
    Ok((specs, units))
}

/// The cells of experiment `e` with their repeat counts: PATE cells (teachers × queries × ρ ×
/// mechanisms, `matched` parameters solved against the first mechanism) or the baselines.
fn experiment_cells(
    e: &config::Experiment,
    queries: &[usize],
    base: &RunConfig,
    delta: f64,
) -> Result<Vec<(String, usize, UnitKind)>> {
    let mut cells: Vec<(String, usize, UnitKind)> = Vec::new();
    let mut push = |cell: String, repeats: usize, kind: UnitKind| cells.push((cell, repeats, kind));
    match e.kind {
        ExperimentKind::Pate => {
            let rhos = e.rho.clone().unwrap_or_else(|| vec![None]);
            for &t in &e.teachers {
                for &q in queries {
                    let reference = resolve_mechanism(&e.mechanisms[0], None, t, q, delta)?;
                    for &rho in &rhos {
                        for spec in &e.mechanisms {
                            let mechanism = resolve_mechanism(spec, Some(&reference), t, q, delta)
                                .map_err(|err| Error::CellMechanism {
                                    experiment: e.name.clone(),
                                    mechanism: spec.label(),
                                    teachers: t,
                                    queries: q,
                                    source: Box::new(err),
                                })?;
                            let cell = format!(
                                "{}/t{t}-q{q}-rho{}-{}",
                                e.name,
                                fmt_rho(rho),
                                mechanism.label
                            );
                            let epsilon_curve = e
                                .epsilon_curve
                                .iter()
                                .copied()
                                .filter(|&n| n <= q)
                                .collect();
                            push(
                                cell,
                                e.repeats,
                                UnitKind::Pate {
                                    teachers: t,
                                    queries: q,
                                    rho,
                                    mechanism,
                                    epsilon_curve,
                                },
                            );
                        }
                    }
                }
            }
        }
        ExperimentKind::Baselines => {
            let training = e
                .non_private_training
                .clone()
                .unwrap_or_else(|| base.student.training.clone());
            push(
                format!("{}/non-private", e.name),
                e.repeats,
                UnitKind::NonPrivate { training },
            );
            for &t in &e.teachers {
                push(
                    format!("{}/t{t}-ensemble", e.name),
                    1,
                    UnitKind::Ensemble { teachers: t },
                );
                for &q in queries {
                    push(
                        format!("{}/t{t}-q{q}-majority", e.name),
                        e.repeats,
                        UnitKind::Majority {
                            teachers: t,
                            queries: q,
                        },
                    );
                }
            }
        }
    }
    Ok(cells)
}

/// Writes pretty JSON atomically, creating the parent directory.
fn write_json_in(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
    }
    Ok(trainer::io::write_json(path, value)?)
}

fn read_result(path: &Path) -> Option<ResultRow> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Loads and splits a dataset list (with each file's split restriction); writes its split table
/// to `out/splits/<label>.json`.
fn load_data(spec: &DataSpec, base: &RunConfig, out: &Path) -> Result<RunData> {
    let mut records = Vec::new();
    let mut allowed: Vec<Option<Vec<SplitName>>> = Vec::new();
    let mut files = Vec::new();
    for d in &spec.datasets {
        let r = trainer::stages::split::load_datasets(std::slice::from_ref(&d.source))?;
        allowed.extend(std::iter::repeat_n(d.splits.clone(), r.len()));
        files.extend(std::iter::repeat_n(d.source.path.clone(), r.len()));
        records.extend(r);
    }
    let fractions = base
        .split
        .as_ref()
        .map(|s| s.fractions())
        .ok_or(Error::Sweep(SweepProblem::BaseNotSimulation))?;
    trainer::stages::split::drop_unread_headers(&mut records, &base.featurizer.config);
    let s = trainer::stages::split::split_by_record(&records, &fractions);
    let keep = |rows: Vec<usize>, split: SplitName| -> Vec<usize> {
        rows.into_iter()
            .filter(|&i| allowed[i].as_ref().is_none_or(|a| a.contains(&split)))
            .collect()
    };
    let splits = trainer::stages::split::Splits {
        private: keep(s.private, SplitName::Private),
        public: keep(s.public, SplitName::Public),
        student_validation: keep(s.student_validation, SplitName::StudentValidation),
        test: keep(s.test, SplitName::Test),
    };
    // The split table: requests and distinct requests of each label per split.
    let mut table = Vec::new();
    let roles = [
        &splits.private,
        &splits.public,
        &splits.student_validation,
        &splits.test,
    ];
    for (split, rows) in SplitName::ALL.iter().zip(roles) {
        let distinct = trainer::stages::split::distinct(&records, rows);
        let count = |rows: &[usize], l: datasets::Label| {
            rows.iter()
                .filter(|&&i| records[i].label == Some(l))
                .count()
        };
        table.push(SplitTableRow {
            split: *split,
            benign: count(rows, datasets::Label::Benign),
            malicious: count(rows, datasets::Label::Malicious),
            distinct_benign: count(&distinct, datasets::Label::Benign),
            distinct_malicious: count(&distinct, datasets::Label::Malicious),
        });
    }
    let file_list = spec
        .datasets
        .iter()
        .map(|d| SplitTableFile {
            path: d.source.path.clone(),
            format: d.source.format,
            label: d.source.label,
            limit: d.source.limit,
            splits: d.splits.clone(),
        })
        .collect();
    write_json_in(
        &out.join("splits").join(format!("{}.json", spec.label)),
        &SplitTable {
            data: spec.label.clone(),
            fractions,
            files: file_list,
            splits: table,
        },
    )?;
    if roles.iter().any(|r| r.is_empty()) {
        return Err(Error::Sweep(SweepProblem::EmptySplit {
            data: spec.label.clone(),
            private: splits.private.len(),
            public: splits.public.len(),
            validation: splits.student_validation.len(),
            test: splits.test.len(),
        }));
    }
    Ok(RunData {
        records,
        files,
        splits,
        simulation: true,
        held_out_attacks: Vec::new(),
    })
}

/// Loads, splits and featurizes a dataset list with the `split` and `featurize` stages (the
/// featurizer is saved under `out/work/<key>/`).
fn build_context(spec: &DataSpec, base: &RunConfig, out: &Path) -> Result<Context> {
    tracing::info!("sweep: data `{}`: load, split, featurize", spec.label);
    let data = load_data(spec, base, out)?;
    let featurizer = stages::featurize::fit(base, &data)?;
    let work = out.join("work").join(&spec.key);
    std::fs::create_dir_all(&work).map_err(|source| Error::Io {
        path: work.clone(),
        source,
    })?;
    featurizer
        .save(&work.join("featurizer.json"))
        .map_err(trainer::Error::from)?;
    let shared = stages::featurize::shared(base, featurizer, &data)?;
    let records = &data.records;
    let validation_y = trainer::stages::featurize::labels_of(
        records,
        &trainer::stages::split::distinct_labelled(records, &data.splits.student_validation),
    )?;
    for (what, y) in [
        ("student validation", &validation_y),
        ("test", &shared.test.y),
        ("private", &shared.private.y),
    ] {
        if !y.contains(&true) || !y.contains(&false) {
            return Err(Error::Sweep(SweepProblem::SplitClasses {
                data: spec.label.clone(),
                split: what,
            }));
        }
    }
    let distinct_public = trainer::stages::split::distinct(records, &data.splits.public).len();
    let first_of: std::collections::HashSet<usize> =
        trainer::stages::split::distinct_labelled(records, &data.splits.test)
            .into_iter()
            .collect();
    let test_distinct: Vec<usize> = (data.splits.test.iter().enumerate())
        .filter(|(_, i)| first_of.contains(i))
        .map(|(r, _)| r)
        .collect();
    tracing::info!(
        "sweep: data `{}`: {} private, {distinct_public} distinct public (query pool), {} distinct validation, {} test requests",
        spec.label, shared.private.x.rows, validation_y.len(), shared.test.x.rows
    );
    Ok(Context {
        data,
        shared: Arc::new(shared),
        distinct_public,
        test_distinct,
    })
}

/// Trains (or reuses from `out/work/`) the `count` teachers of a dataset list with the `teach`
/// stage and loads them. Their randomness is the sweep seed's, as in `run` with that seed.
fn teacher_set(
    spec: &DataSpec,
    ctx: &Context,
    count: usize,
    out: &Path,
    settings: Settings,
) -> Result<TeacherSet> {
    let private_rows = &ctx.shared.private_rows;
    if private_rows.len() < 2 * count {
        return Err(Error::Sweep(SweepProblem::TooFewPrivate {
            teachers: count,
            needed: 2 * count,
            data: spec.label.clone(),
            found: private_rows.len(),
        }));
    }
    let mut config = settings.base.clone();
    config.teachers.count = count;
    let shards = stages::teach::shards(&config, &ctx.data.records, private_rows)?;
    let dir = out
        .join("work")
        .join(&spec.key)
        .join(format!("teachers-{count}"));
    let rng = RunRng::new(settings.seed)?;
    tracing::info!("sweep: data `{}`: {count} teachers", spec.label);
    let mut data: Vec<_> = stages::teach::shard_data(&ctx.shared.private, &shards)
        .into_iter()
        .map(Some)
        .collect();
    stages::teach::add_tamperings(
        &mut data,
        &shards,
        private_rows,
        &ctx.data.records,
        &ctx.shared.featurizer,
        config.teachers.tamperings,
        &rng,
    );
    stages::teach::train(&config, data, &ctx.shared.hash, &dir, &rng, settings.device)?;
    Ok(TeacherSet {
        files: stages::teach::load(&dir, count)?,
        ledger: dir.join(trainer::rundir::LEDGER_FILE),
    })
}

/// The seed of repeat `repeat`: the sweep's seed itself for the first (so the first repeat of a
/// cell is `pate-trainer run` of the cell's config with that seed), one derived from it for the
/// others.
fn repeat_seed(seed: Option<u64>, repeat: usize) -> Option<u64> {
    if repeat == 0 {
        seed
    } else {
        derive_seed(seed, &format!("repeat/{repeat}"))
    }
}

/// The run configuration of a unit: the base config with the cell's settings.
fn cell_config(base: &RunConfig, kind: &UnitKind) -> RunConfig {
    let mut config = base.clone();
    if let Some(t) = kind.teachers() {
        config.teachers.count = t;
    }
    if let Some(q) = kind.queries() {
        config.student.queries = q;
    }
    if let UnitKind::Pate { rho, mechanism, .. } = kind {
        config.privacy.rho = *rho;
        config.privacy.mechanism = mechanism.mechanism;
    }
    config
}

fn empty_row(u: &Unit, data: &str, ctx: &Context, rng: &RunRng) -> ResultRow {
    ResultRow {
        experiment: u.experiment.clone(),
        cell: u.cell.clone(),
        data: data.to_string(),
        model: String::new(),
        teachers: u.kind.teachers(),
        queries: u.kind.queries(),
        rho: None,
        local_epsilon: None,
        mechanism: String::new(),
        mechanism_parameters: String::new(),
        repeat: u.repeat,
        answered: None,
        label_agreement: None,
        data_independent_epsilon: None,
        data_dependent_epsilon: None,
        tpr: None,
        tnr: None,
        fpr: None,
        auc: None,
        tpr_at_1pct_fpr: None,
        tpr_distinct: None,
        tnr_distinct: None,
        threshold: None,
        test_samples: ctx.shared.test.y.len(),
        seconds: 0.0,
        rng: rng.provenance(),
        epsilon_curve: Vec::new(),
    }
}

/// Evaluates `student` with the `evaluate` stage (without the teacher ensemble) into `row`.
fn score_student(
    row: &mut ResultRow,
    config: &RunConfig,
    student: &trainer::model_file::ModelFile,
    features: &stages::featurize::Features,
    ctx: &Context,
    env: &stages::Env,
) -> Result<()> {
    let e = stages::evaluate::run(config, student, &[], features, &ctx.data, env)?;
    let m = &e.evaluation.report.student;
    row.tpr = m.tpr;
    row.tnr = m.tnr;
    row.fpr = m.fpr;
    row.auc = m.roc_auc;
    row.threshold = Some(student.info.threshold);
    row.tpr_at_1pct_fpr = e
        .evaluation
        .report
        .student_tpr_at_fpr
        .and_then(|t| t.fpr_0_01);
    row.tpr_distinct = e.distinct.metrics.tpr;
    row.tnr_distinct = e.distinct.metrics.tnr;
    Ok(())
}

/// Trains and evaluates the model of one unit through the stages of `run`: a PATE cell is `run`
/// of the base config with the cell's teachers, queries, ρ and mechanism.
fn compute(
    u: &Unit,
    data: &str,
    ctx: &Context,
    set: Option<&TeacherSet>,
    settings: Settings,
) -> Result<ResultRow> {
    let Settings { base, seed, device } = settings;
    let config = cell_config(base, &u.kind);
    let env = stages::Env {
        rng: RunRng::new(repeat_seed(seed, u.repeat))?,
        device,
        started: Instant::now(),
    };
    let mut row = empty_row(u, data, ctx, &env.rng);
    let plan = stages::split::plan(&config, &ctx.data, &env.rng)?;
    let features = stages::featurize::student_side(&config, ctx.shared.clone(), &ctx.data, &plan)?;
    let set_of = || set.ok_or(Error::Internal("a teacher-based result without teachers"));
    match &u.kind {
        UnitKind::NonPrivate { training } => {
            row.model = "non-private".into();
            row.mechanism = "none (labels known)".into();
            row.mechanism_parameters = format!(
                "{} private requests, batch {}",
                ctx.shared.private.y.len(),
                training.batch_size
            );
            let student = trainer::student::train_student(
                ctx.shared.private.clone(),
                None,
                features.validation.clone(),
                training,
                &ctx.shared.hash,
                &env.rng,
                device,
            )?;
            score_student(&mut row, &config, &student, &features, ctx, &env)?;
        }
        UnitKind::Ensemble { teachers } => {
            ensemble_row(&mut row, &config, ctx, set_of()?, &env)?;
            row.mechanism_parameters = format!("{teachers} teachers");
        }
        UnitKind::Majority { .. } => {
            row.model = "majority-vote-student".into();
            row.mechanism = "plain majority vote (no noise)".into();
            let votes = stages::vote::vote(&set_of()?.files, &features.queries_x, device)?;
            // Ties go to benign, as the noisy argmax breaks ties to the lowest class.
            let labels: Vec<Option<bool>> = votes.rows().map(|v| Some(v[1] > v[0])).collect();
            row.answered = Some(labels.len());
            row.label_agreement = stages::student::label_agreement(&labels, &features.queries_y);
            let student =
                stages::student::run(&config, &ctx.data, &plan, &features, &labels, &[], &env)?;
            score_student(&mut row, &config, &student.model, &features, ctx, &env)?;
        }
        UnitKind::Pate { .. } => {
            let student_side = StudentSide {
                plan: &plan,
                features: &features,
            };
            pate_row(&mut row, u, &config, ctx, set_of()?, student_side, &env)?;
        }
    }
    Ok(row)
}

/// The noiseless teacher ensemble (vote share ≥ 0.5) on the test split.
fn ensemble_row(
    row: &mut ResultRow,
    config: &RunConfig,
    ctx: &Context,
    set: &TeacherSet,
    env: &stages::Env,
) -> Result<()> {
    row.model = "teacher-ensemble".into();
    row.mechanism = "noiseless vote share ≥ 0.5".into();
    let test = &ctx.shared.test;
    let rows: Vec<usize> = stages::evaluate::ensemble_rows(config, test.x.rows, env)
        .unwrap_or_else(|| (0..test.x.rows).collect());
    let share = trainer::stages::vote::ensemble_vote_fraction(
        &set.files,
        &test.x.select_rows(&rows),
        env.device,
    )?;
    let y: Vec<bool> = rows.iter().map(|&r| test.y[r]).collect();
    set_metrics(row, &share, &y, 0.5);
    row.test_samples = y.len();
    // The distinct test requests (also at most ensemble_max of them).
    let distinct: Vec<usize> = ctx
        .test_distinct
        .iter()
        .copied()
        .take(config.evaluation.ensemble_max.unwrap_or(usize::MAX))
        .collect();
    let share = trainer::stages::vote::ensemble_vote_fraction(
        &set.files,
        &test.x.select_rows(&distinct),
        env.device,
    )?;
    let y: Vec<bool> = distinct.iter().map(|&r| test.y[r]).collect();
    let m = Metrics::compute(&share, &y, 0.5);
    row.tpr_distinct = m.tpr;
    row.tnr_distinct = m.tnr;
    Ok(())
}

/// The student side of a cell: which public requests it queries and validates on, and their
/// features.
#[derive(Clone, Copy)]
struct StudentSide<'a> {
    plan: &'a stages::split::QueryPlan,
    features: &'a stages::featurize::Features,
}

/// A PATE cell: the `vote`, `aggregate`, `student` and `evaluate` stages of `run`, with the ε
/// curve over query prefixes and the aggregation appended to the teachers' ledger.
fn pate_row(
    row: &mut ResultRow,
    u: &Unit,
    config: &RunConfig,
    ctx: &Context,
    set: &TeacherSet,
    student_side: StudentSide,
    env: &stages::Env,
) -> Result<()> {
    let StudentSide { plan, features } = student_side;
    let UnitKind::Pate {
        mechanism,
        epsilon_curve,
        ..
    } = &u.kind
    else {
        return Err(Error::Internal("not a PATE cell"));
    };
    row.model = "pate-student".into();
    row.mechanism = mechanism.name().into();
    row.mechanism_parameters = mechanism.parameters.clone();
    row.rho = config.privacy.rho;
    row.local_epsilon = config.privacy.rho.map(privacy::privatize::local_epsilon);
    let mut noise = env.rng.noise()?;
    let votes = stages::vote::run(config, &set.files, &features.queries_x, &mut noise, env)?;
    let aggregation = stages::aggregate::run(
        config,
        votes.votes,
        &set.files,
        features,
        ctx.data.splits.private.len(),
        &mut noise,
        env.started,
    )?;
    let by = format!("sweep cell {} repeat {}", u.cell, u.repeat);
    stages::aggregate::record_in_ledger(&set.ledger, &by, config, &aggregation)?;
    row.data_independent_epsilon = Some(aggregation.epsilon.data_independent_epsilon);
    row.data_dependent_epsilon = Some(aggregation.epsilon.data_dependent_epsilon);
    let labels = &aggregation.labels;
    for &n in epsilon_curve {
        let prefix: Vec<[u64; 2]> = (aggregation.votes.rows().take(n))
            .map(|r| [r[0], r[1]])
            .collect();
        let prefix = VoteMatrix::from_rows(&prefix)?;
        let r = stages::aggregate::account(
            &prefix,
            &labels[..n],
            &config.privacy.mechanism,
            config.privacy.delta,
        )?;
        row.epsilon_curve.push(EpsilonPoint {
            queries: n,
            answered: labels[..n].iter().filter(|l| l.is_some()).count(),
            data_independent: r.data_independent_epsilon,
            data_dependent: r.data_dependent_epsilon,
        });
    }
    let answered = aggregation.answered();
    row.answered = Some(answered.len());
    let student_labels: Vec<bool> = answered.iter().filter_map(|&i| labels[i]).collect();
    if answered.is_empty() {
        tracing::info!(
            "sweep: {} r{}: no query answered; no student",
            u.cell,
            u.repeat
        );
        return Ok(());
    }
    row.label_agreement = stages::student::label_agreement(labels, &features.queries_y);
    if !student_labels.contains(&true) || !student_labels.contains(&false) {
        // One class only: a student would predict a constant. Record it as such (every
        // request malicious or every request benign), which is what it would do.
        let constant = if student_labels[0] { 1.0 } else { 0.0 };
        let scores = vec![constant; ctx.shared.test.y.len()];
        set_metrics(row, &scores, &ctx.shared.test.y, 0.5);
        set_distinct(row, &scores, ctx, 0.5);
        return Ok(());
    }
    let student = stages::student::run(config, &ctx.data, plan, features, labels, &[], env)?;
    score_student(row, config, &student.model, features, ctx, env)
}

/// TPR and TNR over the distinct test requests, from the scores of every test row.
fn set_distinct(row: &mut ResultRow, scores: &[f32], ctx: &Context, threshold: f32) {
    let s: Vec<f32> = ctx.test_distinct.iter().map(|&r| scores[r]).collect();
    let y: Vec<bool> = (ctx.test_distinct.iter())
        .map(|&r| ctx.shared.test.y[r])
        .collect();
    let m = Metrics::compute(&s, &y, threshold);
    row.tpr_distinct = m.tpr;
    row.tnr_distinct = m.tnr;
}

fn set_metrics(row: &mut ResultRow, scores: &[f32], labels: &[bool], threshold: f32) {
    let m = Metrics::compute(scores, labels, threshold);
    row.tpr = m.tpr;
    row.tnr = m.tnr;
    row.fpr = m.fpr;
    row.auc = m.roc_auc;
    row.threshold = Some(threshold);
    row.tpr_at_1pct_fpr = roc_curve(scores, labels)
        .iter()
        .filter(|p| p.fpr <= 0.01)
        .map(|p| p.tpr)
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.max(t))));
}

/// results.csv, summary.csv, summary.md, splits.csv, splits.md and plots/.
fn write_outputs(out: &Path, rows: &[ResultRow], config: &SweepConfig) -> Result<()> {
    trainer::io::write_file(
        &out.join("results.csv"),
        report::results_csv(rows).as_bytes(),
    )?;
    let cells = report::summarize(rows);
    trainer::io::write_file(
        &out.join("summary.csv"),
        report::summary_csv(&cells).as_bytes(),
    )?;
    let header = "## Sweep summary\n\nPer cell: median [first–third quartile] over its students, on the test split. ε: δ of the base config; the data-dependent ε is a function of the private votes (not private to publish); the local ε = 2ρ is the per-query guarantee of the student-side Laplace noise (`privacy::privatize`). Written by `pate-experiments sweep`.";
    trainer::io::write_file(
        &out.join("summary.md"),
        report::summary_md(&cells, header).as_bytes(),
    )?;
    write_split_tables(out)?;
    write_plots(out, &cells, rows, config)
}

/// `DIR/sweep.json`: the sweep and its base config as run.
#[derive(serde::Serialize)]
struct SweepSnapshot<'a> {
    sweep: &'a SweepConfig,
    base: &'a RunConfig,
}

fn write_split_tables(out: &Path) -> Result<()> {
    let dir = out.join("splits");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut csv = String::from("data,split,benign,malicious,distinct_benign,distinct_malicious\n");
    let mut md = String::from("| data | split | benign | malicious | distinct benign | distinct malicious |\n|---|---|---:|---:|---:|---:|\n");
    for p in paths {
        let t: SplitTable = trainer::report::read(&p)?;
        for s in &t.splits {
            let row = format!(
                "{},{},{},{},{}",
                s.split.name(),
                s.benign,
                s.malicious,
                s.distinct_benign,
                s.distinct_malicious
            );
            csv += &format!("{},{row}\n", t.data);
            md += &format!("| {} | {} |\n", t.data, row.replace(',', " | "));
        }
    }
    trainer::io::write_file(&out.join("splits.csv"), csv.as_bytes())?;
    Ok(trainer::io::write_file(
        &out.join("splits.md"),
        md.as_bytes(),
    )?)
}

/// A short mechanism label for plot axes: `GNMax σ=12.3*` (* = matched).
fn short_mechanism(r: &ResultRow) -> String {
    let name = match r.mechanism.as_str() {
        "lnmax" => "LNMax",
        "gnmax" => "GNMax",
        "confident-gnmax" => "C-GNMax",
        other => other,
    };
    let params = r
        .mechanism_parameters
        .replace(" = ", "=")
        .replace(" (matched)", "*");
    format!("{name} {params}")
}

fn write_plots(
    out: &Path,
    cells: &[report::CellSummary],
    rows: &[ResultRow],
    config: &SweepConfig,
) -> Result<()> {
    let dir = out.join("plots");
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    for e in &config.experiments {
        let ecells: Vec<&report::CellSummary> = cells
            .iter()
            .filter(|c| c.first.experiment == e.name)
            .collect();
        // Baselines: one plot of every model; PATE experiments: one per teacher count.
        let baselines = e.kind == ExperimentKind::Baselines;
        let mut teacher_counts: Vec<Option<usize>> = Vec::new();
        for c in &ecells {
            let t = if baselines { None } else { c.first.teachers };
            if !teacher_counts.contains(&t) {
                teacher_counts.push(t);
            }
        }
        for t in teacher_counts {
            let tcells: Vec<&&report::CellSummary> = ecells
                .iter()
                .filter(|c| baselines || c.first.teachers == t)
                .collect();
            plot_cells(&dir, e, t, &tcells, rows, baselines)?;
        }
        plot_epsilon_curve(&dir, e, &ecells, rows)?;
    }
    Ok(())
}

/// The box plots (TPR, TNR, ε) of the cells of one teacher count of experiment `e` (every
/// cell for baselines), and the accuracy-vs-queries plot where the query count varies.
fn plot_cells(
    dir: &Path,
    e: &config::Experiment,
    t: Option<usize>,
    tcells: &[&&report::CellSummary],
    rows: &[ResultRow],
    baselines: bool,
) -> Result<()> {
    let values = |cell: &str, f: &dyn Fn(&ResultRow) -> Option<f64>| -> Vec<f64> {
        rows.iter()
            .filter(|r| r.cell == cell)
            .filter_map(f)
            .collect()
    };
    let varies = |f: &dyn Fn(&ResultRow) -> String| {
        tcells
            .iter()
            .map(|c| f(c.first))
            .collect::<std::collections::HashSet<_>>()
            .len()
            > 1
    };
    let (vq, vr, vm) = (
        varies(&|r| format!("{:?}", r.queries)),
        varies(&|r| format!("{:?}", r.rho)),
        varies(&|r| r.mechanism_parameters.clone() + &r.model),
    );
    let label = |r: &ResultRow| {
        let mut parts = Vec::new();
        if baselines {
            parts.push(match r.teachers {
                Some(t) if r.model != "non-private" => format!("{} ({t})", r.model),
                _ => r.model.clone(),
            });
        } else if vm || (!vq && !vr) {
            parts.push(short_mechanism(r));
        }
        if vq {
            parts.push(format!(
                "q={}",
                r.queries.map_or("–".into(), |q| q.to_string())
            ));
        }
        if vr {
            parts.push(format!("ρ={}", fmt_rho(r.rho)));
        }
        parts.join(" ")
    };
    let tname = t.map_or("all".into(), |t| t.to_string());
    let suffix = t.map_or(String::new(), |t| format!(", {t} teachers"));
    let group = |f: &dyn Fn(&ResultRow) -> Option<f64>| -> Vec<(String, Vec<f64>)> {
        tcells
            .iter()
            .map(|c| (label(c.first), values(&c.first.cell, f)))
            .collect()
    };
    for (measure, title, f, y_max) in [
        (
            "tpr",
            "TPR",
            &(|r: &ResultRow| r.tpr) as &dyn Fn(&ResultRow) -> Option<f64>,
            Some(1.0),
        ),
        ("tnr", "TNR", &|r: &ResultRow| r.tnr, Some(1.0)),
        (
            "epsilon",
            "data-dependent ε",
            &|r: &ResultRow| r.data_dependent_epsilon,
            None,
        ),
    ] {
        let g = group(f);
        if g.iter().all(|(_, v)| v.is_empty()) {
            continue;
        }
        let plot = report::box_plot(&format!("{}: {title}{suffix}", e.name), title, &g, y_max)?;
        let stem = format!("{}-t{tname}-{measure}", e.name);
        plot.write(
            &dir.join(format!("{stem}.svg")),
            &dir.join(format!("{stem}.png")),
        )?;
    }
    if vq && !baselines {
        plot_accuracy_vs_queries(dir, e, &tname, &suffix, tcells)?;
    }
    Ok(())
}

/// Accuracy against answered queries (median per cell), with the ε each point costs in the table.
fn plot_accuracy_vs_queries(
    dir: &Path,
    e: &config::Experiment,
    tname: &str,
    suffix: &str,
    tcells: &[&&report::CellSummary],
) -> Result<()> {
    let key = |c: &report::CellSummary| {
        format!(
            "{} ρ={} {}",
            c.first.mechanism,
            fmt_rho(c.first.rho),
            c.first.model
        )
    };
    let mut keys: Vec<String> = Vec::new();
    for c in tcells {
        let k = key(c);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut series: Vec<report::Series> = Vec::new();
    for k in keys {
        // The series of one key, in order of answered queries.
        let points = |measure: fn(&report::CellSummary) -> Option<f64>| {
            let mut points: Vec<(f64, f64)> = tcells
                .iter()
                .filter(|c| key(c) == k)
                .filter_map(|c| Some((c.answered?.median, measure(c)?)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            points
        };
        series.push(report::Series {
            name: format!("TPR, {k}"),
            points: points(|c| Some(c.tpr?.median)),
            dashed: false,
        });
        series.push(report::Series {
            name: format!("TNR, {k}"),
            points: points(|c| Some(c.tnr?.median)),
            dashed: true,
        });
    }
    let plot = report::line_plot(
        &format!("{}: student accuracy vs answered queries{suffix}", e.name),
        "answered queries (median)",
        "median rate",
        &series,
    )?;
    let stem = format!("{}-t{tname}-accuracy-vs-queries", e.name);
    plot.write(
        &dir.join(format!("{stem}.svg")),
        &dir.join(format!("{stem}.png")),
    )?;
    Ok(())
}

/// ε against answered queries (the accountant after each prefix of the queries).
fn plot_epsilon_curve(
    dir: &Path,
    e: &config::Experiment,
    ecells: &[&report::CellSummary],
    rows: &[ResultRow],
) -> Result<()> {
    if !e.epsilon_curve.is_empty() {
        let mut series = Vec::new();
        let mut independent_done: Vec<String> = Vec::new();
        for c in ecells {
            let r = c.first;
            if r.rho.is_some() && ecells.iter().any(|o| o.first.rho.is_none()) {
                continue;
            }
            let curves: Vec<&Vec<EpsilonPoint>> = rows
                .iter()
                .filter(|x| x.cell == r.cell)
                .map(|x| &x.epsilon_curve)
                .collect();
            let Some(first) = curves.first() else {
                continue;
            };
            let mut dd = Vec::new();
            let mut di = Vec::new();
            for (i, p) in first.iter().enumerate() {
                let at = |f: &dyn Fn(&EpsilonPoint) -> f64| {
                    report::quantile(
                        &curves
                            .iter()
                            .filter_map(|c| c.get(i))
                            .map(f)
                            .collect::<Vec<_>>(),
                        0.5,
                    )
                };
                if let (Some(a), Some(d), Some(n)) = (
                    at(&|p| p.answered as f64),
                    at(&|p| p.data_dependent),
                    at(&|p| p.data_independent),
                ) {
                    dd.push((a, d));
                    di.push((a, n));
                }
                let _ = p;
            }
            series.push(report::Series {
                name: format!(
                    "data-dependent, {} teachers, {}, ρ={}",
                    r.teachers.unwrap_or(0),
                    r.mechanism,
                    fmt_rho(r.rho)
                ),
                points: dd,
                dashed: false,
            });
            let k = format!("{} {}", r.mechanism, r.mechanism_parameters);
            if !independent_done.contains(&k) {
                independent_done.push(k.clone());
                series.push(report::Series {
                    name: format!("data-independent, {k}"),
                    points: di,
                    dashed: true,
                });
            }
        }
        if !series.is_empty() {
            let plot = report::line_plot(
                &format!(
                    "{}: ε (δ = base δ) vs answered queries, median over students",
                    e.name
                ),
                "answered queries",
                "ε",
                &series,
            )?;
            let stem = format!("{}-epsilon-vs-queries", e.name);
            plot.write(
                &dir.join(format!("{stem}.svg")),
                &dir.join(format!("{stem}.png")),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod mechanism_tests {
    use super::*;

    /// The recommended mechanism in a sweep: one release, the same ε for any query count, and a
    /// GNMax matched to it gets the σ that spends that ε on its queries.
    #[test]
    fn model_average_resolves_to_one_release_and_gnmax_matches_it() {
        let spec = MechanismSpec::ModelAverage {
            sigma: 4.1,
            clip_norm: 75.0,
        };
        assert_eq!(spec.label(), "avg-s4.1-c75");
        let reference = resolve_mechanism(&spec, None, 250, 100, 1e-5).unwrap();
        let eps = |q| data_independent_epsilon(&reference.mechanism, 250, q, 1e-5).unwrap();
        assert!((eps(100) - 0.985).abs() < 1e-3, "{}", eps(100));
        assert_eq!(eps(100), eps(4500));
        let matched = MechanismSpec::Gnmax {
            sigma: config::Sigma::Keyword("matched".into()),
            head: None,
        };
        let gnmax = resolve_mechanism(&matched, Some(&reference), 250, 1000, 1e-5).unwrap();
        let spent = data_independent_epsilon(&gnmax.mechanism, 250, 1000, 1e-5).unwrap();
        assert!((spent - eps(100)).abs() < 1e-3, "{spent}");
    }
}
