//! `pate-trainer sweep`: the evaluation grids of issue 6 (the seeds' Table 4.2 grid of teachers ×
//! student noise ρ, mechanisms at matched ε, baselines, learning curve, cross-dataset), resumable.
//!
//! Efficiency: each distinct dataset list is loaded, split and featurized once; each teacher count
//! is trained once per dataset list (teachers saved under `DIR/work/`, reused by `pipeline::teach`
//! on a rerun); the teachers' noiseless votes on the whole distinct public pool are computed once
//! per teacher set, so a student without student-side noise only selects its queries' rows. Per
//! student: draw the queries, privatize them (Lap(1/ρ), fresh noise), vote (only when privatized),
//! aggregate (fresh noise), account, train the student on the original features, evaluate on the
//! test split. Each student's result is one small JSON file written atomically under
//! `DIR/cells/`; a rerun skips the files that exist and rebuilds the tables from all of them.
pub mod config;
pub mod report;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use privacy::accountant::{AccountOptions, Mechanism as Accounted};
use privacy::aggregate::{Aggregator, ConfidentGnmax, Gnmax, Lnmax};
use privacy::VoteMatrix;
use sha2::{Digest, Sha256};
use tch::Device;

use crate::config::{FitOn, RunConfig};
use crate::dense::DenseMatrix;
use crate::ensemble::{count_votes, Ensemble, LabeledRows};
use crate::error::{Error, Result};
use crate::metrics::{roc_curve, Metrics};
use crate::model_file::load_teachers;
use crate::pipeline::{self, RunRng, TeachJob};
use config::{ExperimentKind, MechanismSpec, SplitName, SweepConfig, SweepDataset};
use report::{EpsilonPoint, ResultRow};

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
    fn aggregate(
        &self,
        votes: &VoteMatrix,
        rng: &mut privacy::NoiseRng,
    ) -> Result<Vec<Option<usize>>> {
        Ok(match self.mechanism {
            Accounted::Lnmax(m) => m.aggregate(votes, rng)?,
            Accounted::Gnmax(m) => m.aggregate(votes, rng)?,
            Accounted::ConfidentGnmax(m) => m.aggregate(votes, rng)?,
        })
    }
    fn name(&self) -> &'static str {
        match self.mechanism {
            Accounted::Lnmax(_) => "lnmax",
            Accounted::Gnmax(_) => "gnmax",
            Accounted::ConfidentGnmax(_) => "confident-gnmax",
        }
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
        return Err(Error::Config(format!(
            "no σ ≤ 1e4 brings the data-independent ε of {queries} queries down to the reference's {target:.4} (for Confident-GNMax: σ₁'s threshold check alone costs more; raise σ₁)"
        )));
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
        let r = reference.ok_or_else(|| {
            Error::Config("`matched` needs a reference mechanism first in the list".into())
        })?;
        data_independent_epsilon(&r.mechanism, teachers, queries, delta)
    };
    let (mechanism, parameters) = match spec {
        MechanismSpec::Lnmax { gamma } => (
            Accounted::Lnmax(Lnmax { gamma: *gamma }),
            format!("γ = {gamma}"),
        ),
        MechanismSpec::Gnmax { sigma } => {
            let s = match sigma.value() {
                Some(s) => s,
                None => match_sigma(
                    target()?,
                    &|s| Accounted::Gnmax(Gnmax { sigma: s }),
                    teachers,
                    queries,
                    delta,
                )?,
            };
            let matched = if sigma.value().is_none() {
                " (matched)"
            } else {
                ""
            };
            (
                Accounted::Gnmax(Gnmax { sigma: s }),
                format!("σ = {s:.2}{matched}"),
            )
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
        training: crate::ensemble::TrainConfig,
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

/// A featurized dataset list.
struct Context {
    records: Vec<datasets::Record>,
    featurizer_hash: String,
    private_rows: Vec<usize>,
    private_x: DenseMatrix,
    private_y: Vec<bool>,
    pool_x: DenseMatrix,
    pool_y: Vec<bool>,
    validation_x: DenseMatrix,
    validation_y: Vec<bool>,
    test_x: DenseMatrix,
    test_y: Vec<bool>,
    /// Rows of `test_x` holding each distinct test request once.
    test_distinct: Vec<usize>,
}

/// A trained teacher set in memory.
struct TeacherSet {
    count: usize,
    model: Mutex<Ensemble>,
    thresholds: Vec<f32>,
    pool_votes: OnceLock<Vec<[u64; 2]>>,
    /// The privacy ledger beside the teachers: every cell's noisy aggregation spends privacy of
    /// the same private records (the teachers are shared by every cell and kept across reruns).
    ledger: PathBuf,
}

impl TeacherSet {
    fn votes(&self, x: &DenseMatrix) -> Result<Vec<[u64; 2]>> {
        let scores = self
            .model
            .lock()
            .map_err(|_| Error::Invalid("a sweep worker panicked".into()))?
            .scores(x)?;
        Ok(count_votes(&scores, &self.thresholds)
            .iter()
            .map(|v| [v[0] as u64, v[1] as u64])
            .collect())
    }
    fn pool_votes(&self, pool: &DenseMatrix) -> Result<&[[u64; 2]]> {
        if let Some(v) = self.pool_votes.get() {
            return Ok(v);
        }
        eprintln!(
            "sweep: {} teachers vote on the {} distinct public requests (once)",
            self.count, pool.rows
        );
        let v = self.votes(pool)?;
        Ok(self.pool_votes.get_or_init(|| v))
    }
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
    let device = crate::device::resolve(base.device)?;
    let delta = base.privacy.delta;
    std::fs::create_dir_all(out).map_err(|source| Error::Io {
        path: out.to_owned(),
        source,
    })?;
    pipeline::write_file(
        &out.join(".gitignore"),
        b"# models, features and matrices: large, rebuilt on demand\nwork/\n",
    )?;
    if !report_only {
        pipeline::write_json(
            &out.join("sweep.json"),
            &serde_json::json!({"sweep": config, "base": base}),
        )?;
    }

    // ---- the data specs and the units
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
        let mut push = |cell: String, repeats: usize, kind: UnitKind| {
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
        };
        match e.kind {
            ExperimentKind::Pate => {
                let rhos = e.rho.clone().unwrap_or_else(|| vec![None]);
                for &t in &e.teachers {
                    for &q in &queries {
                        let reference = resolve_mechanism(&e.mechanisms[0], None, t, q, delta)?;
                        for &rho in &rhos {
                            for spec in &e.mechanisms {
                                let mechanism =
                                    resolve_mechanism(spec, Some(&reference), t, q, delta)
                                        .map_err(|err| {
                                            Error::Config(format!(
                                        "experiments {}: {} with {t} teachers, {q} queries: {err}",
                                        e.name,
                                        spec.label()
                                    ))
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
                    for &q in &queries {
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
    }

    if report_only {
        let rows: Vec<ResultRow> = units.iter().filter_map(|u| read_result(&u.path)).collect();
        eprintln!(
            "sweep: report only: {} of {} results present",
            rows.len(),
            units.len()
        );
        write_outputs(out, &rows, config)?;
        return Ok(SweepOutcome {
            computed: 0,
            reused: rows.len(),
        });
    }

    // ---- what is left to do
    let pending: Vec<&Unit> = units
        .iter()
        .filter(|u| read_result(&u.path).is_none())
        .collect();
    let reused = units.len() - pending.len();
    eprintln!("sweep: {} results in {} experiments; {reused} already done, {} to compute ({jobs} at a time)", units.len(), config.experiments.len(), pending.len());

    // Round-robin over repeats (every cell of every experiment gets its first model, then its
    // second, ...), so an interrupted sweep has every cell with a few models rather than some
    // cells complete and others empty. Consecutive units sharing data and teachers form a batch
    // the workers share.
    let mut order: Vec<&Unit> = pending.clone();
    let experiment_index = |u: &Unit| {
        config
            .experiments
            .iter()
            .position(|e| e.name == u.experiment)
            .unwrap_or(0)
    };
    order.sort_by_key(|u| (u.repeat, experiment_index(u)));
    // (data set, teacher count) → the units that share that teacher set, in order.
    type TeacherSetKey = (usize, Option<usize>);
    let mut groups: Vec<(TeacherSetKey, Vec<&Unit>)> = Vec::new();
    for u in order {
        let key = (u.data, u.kind.teachers());
        match groups.last_mut() {
            Some((k, g)) if *k == key => g.push(u),
            _ => groups.push((key, vec![u])),
        }
    }
    let mut contexts: HashMap<usize, Context> = HashMap::new();
    let mut teacher_sets: HashMap<(usize, usize), TeacherSet> = HashMap::new();
    let done = AtomicUsize::new(0);
    let compute_started = Instant::now();
    let total = pending.len();
    for ((data, teachers), group) in groups {
        if let std::collections::hash_map::Entry::Vacant(v) = contexts.entry(data) {
            let ctx = build_context(&specs[data], base, out)?;
            for u in pending.iter().filter(|u| u.data == data) {
                if let Some(q) = u.kind.queries() {
                    if q > ctx.pool_x.rows {
                        return Err(Error::Config(format!(
                            "experiment {}: {q} queries asked but the public split of data `{}` has only {} distinct requests",
                            u.experiment, specs[data].label, ctx.pool_x.rows
                        )));
                    }
                }
            }
            v.insert(ctx);
        }
        let ctx = &contexts[&data];
        if let Some(n) = teachers {
            if let std::collections::hash_map::Entry::Vacant(e) = teacher_sets.entry((data, n)) {
                let set = teacher_set(&specs[data], ctx, base, n, config.seed, out, device)?;
                e.insert(set);
            }
        }
        let set = teachers.map(|n| &teacher_sets[&(data, n)]);
        let next = AtomicUsize::new(0);
        let failure: Mutex<Option<Error>> = Mutex::new(None);
        let worker = || loop {
            if failure.lock().map(|f| f.is_some()).unwrap_or(true) {
                return;
            }
            let i = next.fetch_add(1, Ordering::SeqCst);
            let Some(u) = group.get(i) else { return };
            let t0 = Instant::now();
            let result = compute(u, &specs[u.data].label, ctx, set, base, config.seed, device)
                .and_then(|mut row| {
                    row.seconds = t0.elapsed().as_secs_f64();
                    write_json_in(&u.path, &row)?;
                    Ok(row)
                });
            match result {
                Ok(row) => {
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    let elapsed = compute_started.elapsed().as_secs_f64();
                    let eta = elapsed / n as f64 * (total - n) as f64;
                    let pct =
                        |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{:.1}%", 100.0 * v));
                    eprintln!(
                        "sweep: [{n}/{total}] {} r{}: TPR {} TNR {} ε(dd) {} ({:.1} s; elapsed {:.0} s, ETA {:.0} s)",
                        u.cell, u.repeat, pct(row.tpr), pct(row.tnr),
                        row.data_dependent_epsilon.map_or("–".into(), |e| format!("{e:.2}")),
                        row.seconds, elapsed, eta
                    );
                }
                Err(e) => {
                    if let Ok(mut f) = failure.lock() {
                        f.get_or_insert(Error::Invalid(format!(
                            "{} repeat {}: {e}",
                            u.cell, u.repeat
                        )));
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
        if let Some(e) = failure.into_inner().ok().flatten() {
            return Err(e);
        }
    }

    // ---- tables and plots from every result of this config
    let rows: Vec<ResultRow> = units
        .iter()
        .map(|u| {
            read_result(&u.path).ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: missing or unreadable result",
                    u.path.display()
                ))
            })
        })
        .collect::<Result<_>>()?;
    write_outputs(out, &rows, config)?;
    eprintln!(
        "sweep: done in {:.0} s; {} computed, {reused} reused; tables in {}",
        started.elapsed().as_secs_f64(),
        total,
        out.display()
    );
    Ok(SweepOutcome {
        computed: total,
        reused,
    })
}

/// Writes pretty JSON atomically, creating the parent directory.
fn write_json_in(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
    }
    pipeline::write_json(path, value)
}

fn read_result(path: &Path) -> Option<ResultRow> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Loads, splits (with each file's split restriction) and featurizes a dataset list; writes its
/// split table to `out/splits/<label>.json`.
fn build_context(spec: &DataSpec, base: &RunConfig, out: &Path) -> Result<Context> {
    eprintln!("sweep: data `{}`: load, split, featurize", spec.label);
    let mut records = Vec::new();
    let mut allowed: Vec<Option<Vec<SplitName>>> = Vec::new();
    for d in &spec.datasets {
        let r = pipeline::load_datasets(std::slice::from_ref(&d.source()))?;
        allowed.extend(std::iter::repeat_n(d.splits.clone(), r.len()));
        records.extend(r);
    }
    let fractions = base.split.as_ref().map(|s| s.fractions()).ok_or_else(|| {
        Error::Config(
            "the sweep's base config must be a simulation (split: {simulate_from: [...]})".into(),
        )
    })?;
    pipeline::drop_unread_headers(&mut records, &base.featurizer.config);
    let s = pipeline::split_by_record(&records, &fractions);
    let keep = |rows: Vec<usize>, split: SplitName| -> Vec<usize> {
        rows.into_iter()
            .filter(|&i| allowed[i].as_ref().is_none_or(|a| a.contains(&split)))
            .collect()
    };
    let splits = [
        keep(s.private, SplitName::Private),
        keep(s.public, SplitName::Public),
        keep(s.student_validation, SplitName::StudentValidation),
        keep(s.test, SplitName::Test),
    ];
    // The split table: requests and distinct requests of each label per split.
    let mut table = Vec::new();
    for (split, rows) in SplitName::ALL.iter().zip(&splits) {
        let distinct = pipeline::distinct(&records, rows);
        let count = |rows: &[usize], l: datasets::Label| {
            rows.iter()
                .filter(|&&i| records[i].label == Some(l))
                .count()
        };
        table.push(serde_json::json!({
            "split": split.name(),
            "benign": count(rows, datasets::Label::Benign),
            "malicious": count(rows, datasets::Label::Malicious),
            "distinct_benign": count(&distinct, datasets::Label::Benign),
            "distinct_malicious": count(&distinct, datasets::Label::Malicious),
        }));
    }
    let files: Vec<serde_json::Value> = spec
        .datasets
        .iter()
        .map(|d| serde_json::json!({"path": d.path.display().to_string(), "format": d.format.name(), "label": d.label, "limit": d.limit, "splits": d.splits}))
        .collect();
    write_json_in(
        &out.join("splits").join(format!("{}.json", spec.label)),
        &serde_json::json!({"data": spec.label, "fractions": fractions, "files": files, "splits": table}),
    )?;
    let [private, public, validation, test] = splits;
    if private.is_empty() || public.is_empty() || validation.is_empty() || test.is_empty() {
        return Err(Error::Config(format!(
            "data `{}`: a split is empty ({} private, {} public, {} student validation, {} test)",
            spec.label,
            private.len(),
            public.len(),
            validation.len(),
            test.len()
        )));
    }
    let fit_rows = match base.featurizer.fit_on {
        FitOn::Public => &public,
        FitOn::Private => {
            eprintln!("\n{}\n", crate::stages::featurize::PRIVATE_FEATURIZER_WARNING);
            &private
        }
    };
    let featurizer = featurizer::Featurizer::fit(
        base.featurizer.config.clone(),
        fit_rows.iter().map(|&i| records[i].parts()),
    )?;
    let work = out.join("work").join(&spec.key);
    std::fs::create_dir_all(&work).map_err(|source| Error::Io {
        path: work.clone(),
        source,
    })?;
    featurizer.save(&work.join("featurizer.json"))?;
    // `teacher_rows` keeps one copy per RECORD (request, headers, label), as `run` does:
    // `pipeline::distinct` keys on the request alone, so removing one labelled copy could let
    // another label's copy in on another teacher (two teachers changed; independent review).
    let private_rows = pipeline::teacher_rows(&records, &private, base.teachers.weighting());
    let pool = pipeline::distinct(&records, &public);
    let validation = pipeline::distinct(&records, &validation);
    let set = |rows: &[usize]| -> Result<(DenseMatrix, Vec<bool>)> {
        Ok((
            pipeline::featurize_rows(&featurizer, &records, rows),
            pipeline::labels_of(&records, rows)?,
        ))
    };
    let (private_x, private_y) = set(&private_rows)?;
    let (pool_x, pool_y) = set(&pool)?;
    let (validation_x, validation_y) = set(&validation)?;
    let (test_x, test_y) = set(&test)?;
    let first_of: std::collections::HashSet<usize> =
        pipeline::distinct(&records, &test).into_iter().collect();
    let test_distinct: Vec<usize> = test
        .iter()
        .enumerate()
        .filter(|(_, i)| first_of.contains(i))
        .map(|(r, _)| r)
        .collect();
    for (what, y) in [
        ("student validation", &validation_y),
        ("test", &test_y),
        ("private", &private_y),
    ] {
        if !y.contains(&true) || !y.contains(&false) {
            return Err(Error::Config(format!(
                "data `{}`: the {what} split needs both benign and malicious requests",
                spec.label
            )));
        }
    }
    eprintln!(
        "sweep: data `{}`: {} private, {} distinct public (query pool), {} distinct validation, {} test requests",
        spec.label, private_x.rows, pool_x.rows, validation_x.rows, test_x.rows
    );
    Ok(Context {
        records,
        featurizer_hash: featurizer.content_hash().to_string(),
        private_rows,
        private_x,
        private_y,
        pool_x,
        pool_y,
        validation_x,
        validation_y,
        test_x,
        test_y,
        test_distinct,
    })
}

/// Trains (or reuses from `out/work/`) the `count` teachers of a dataset list and loads them.
fn teacher_set(
    spec: &DataSpec,
    ctx: &Context,
    base: &RunConfig,
    count: usize,
    seed: Option<u64>,
    out: &Path,
    device: Device,
) -> Result<TeacherSet> {
    if ctx.private_rows.len() < 2 * count {
        return Err(Error::Config(format!(
            "{count} teachers need at least {} private requests, data `{}` has {}",
            2 * count,
            spec.label,
            ctx.private_rows.len()
        )));
    }
    let shards = pipeline::hash_partition(&ctx.records, &ctx.private_rows, count);
    let dir = out
        .join("work")
        .join(&spec.key)
        .join(format!("teachers-{count}"));
    let job = TeachJob {
        shards: shards
            .iter()
            .map(|s| {
                Some((
                    ctx.private_x.select_rows(s),
                    s.iter().map(|&i| ctx.private_y[i]).collect(),
                ))
            })
            .collect(),
        holdout_fraction: base.teachers.holdout_fraction,
        holdout_max: base.teachers.holdout_max,
        training: &base.teachers.training,
        mode: base.teachers.mode,
        featurizer_hash: ctx.featurizer_hash.clone(),
        out_dir: &dir,
        device,
    };
    let rng = RunRng::new(derive_seed(seed, &format!("teachers/{}/{count}", spec.key)))?;
    eprintln!("sweep: data `{}`: {count} teachers", spec.label);
    pipeline::teach(&job, &rng)?;
    drop(job);
    let files = load_teachers(&dir)?;
    if files.len() != count {
        return Err(Error::Invalid(format!(
            "{}: {} teacher files, expected {count}",
            dir.display(),
            files.len()
        )));
    }
    let thresholds = files.iter().map(|f| f.info.threshold).collect();
    let weights: Vec<_> = files.into_iter().map(|f| f.weights).collect();
    Ok(TeacherSet {
        count,
        model: Mutex::new(Ensemble::from_members(&weights, device)?),
        thresholds,
        pool_votes: OnceLock::new(),
        ledger: dir.join(crate::rundir::LEDGER_FILE),
    })
}

/// Trains and evaluates the model of one unit.
fn compute(
    u: &Unit,
    data: &str,
    ctx: &Context,
    set: Option<&TeacherSet>,
    base: &RunConfig,
    seed: Option<u64>,
    device: Device,
) -> Result<ResultRow> {
    let rng = RunRng::new(derive_seed(seed, &format!("{}/{}", u.cell, u.repeat)))?;
    let mut row = ResultRow {
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
        test_samples: ctx.test_y.len(),
        seconds: 0.0,
        rng: rng.provenance(),
        epsilon_curve: Vec::new(),
    };
    let set_of = || {
        set.ok_or_else(|| {
            Error::Invalid("internal: a teacher-based result without teachers".into())
        })
    };
    // The student's validation samples: at most validation_max distinct ones, drawn per student.
    let validation = || {
        let rows: Vec<usize> =
            pipeline::shuffled(ctx.validation_x.rows, &mut rng.stream("student-validation"))
                .into_iter()
                .take(base.student.validation_max)
                .collect();
        LabeledRows {
            x: ctx.validation_x.select_rows(&rows),
            y: rows.iter().map(|&i| ctx.validation_y[i]).collect(),
        }
    };
    let query_rows = |q: usize| -> Vec<usize> {
        pipeline::shuffled(ctx.pool_x.rows, &mut rng.stream("queries"))
            .into_iter()
            .take(q)
            .collect()
    };
    let train_and_score = |row: &mut ResultRow, train: LabeledRows| -> Result<()> {
        let student = pipeline::train_student(
            train,
            validation(),
            &base.student.training,
            &ctx.featurizer_hash,
            &rng,
            device,
        )?;
        let scores = pipeline::model_scores(&student, &ctx.test_x, device)?;
        set_metrics(row, &scores, &ctx.test_y, student.info.threshold);
        set_distinct(row, &scores, ctx, student.info.threshold);
        Ok(())
    };
    match &u.kind {
        UnitKind::NonPrivate { training } => {
            row.model = "non-private".into();
            row.mechanism = "none (labels known)".into();
            row.mechanism_parameters = format!(
                "{} private requests, batch {}",
                ctx.private_y.len(),
                training.batch_size
            );
            let train = LabeledRows {
                x: ctx.private_x.clone(),
                y: ctx.private_y.clone(),
            };
            let student = pipeline::train_student(
                train,
                validation(),
                training,
                &ctx.featurizer_hash,
                &rng,
                device,
            )?;
            let scores = pipeline::model_scores(&student, &ctx.test_x, device)?;
            set_metrics(&mut row, &scores, &ctx.test_y, student.info.threshold);
            set_distinct(&mut row, &scores, ctx, student.info.threshold);
        }
        UnitKind::Ensemble { teachers } => {
            row.model = "teacher-ensemble".into();
            row.mechanism = "noiseless vote share ≥ 0.5".into();
            let set = set_of()?;
            let rows: Vec<usize> = match base.evaluation.ensemble_max {
                Some(m) if m < ctx.test_x.rows => {
                    let mut r: Vec<usize> =
                        pipeline::shuffled(ctx.test_x.rows, &mut rng.stream("ensemble-evaluation"))
                            .into_iter()
                            .take(m)
                            .collect();
                    r.sort_unstable();
                    r
                }
                _ => (0..ctx.test_x.rows).collect(),
            };
            let votes = set.votes(&ctx.test_x.select_rows(&rows))?;
            let share: Vec<f32> = votes
                .iter()
                .map(|v| v[1] as f32 / (v[0] + v[1]).max(1) as f32)
                .collect();
            let y: Vec<bool> = rows.iter().map(|&r| ctx.test_y[r]).collect();
            set_metrics(&mut row, &share, &y, 0.5);
            row.test_samples = y.len();
            // The distinct test requests (also at most ensemble_max of them).
            let distinct: Vec<usize> = ctx
                .test_distinct
                .iter()
                .copied()
                .take(base.evaluation.ensemble_max.unwrap_or(usize::MAX))
                .collect();
            let votes = set.votes(&ctx.test_x.select_rows(&distinct))?;
            let share: Vec<f32> = votes
                .iter()
                .map(|v| v[1] as f32 / (v[0] + v[1]).max(1) as f32)
                .collect();
            let m = Metrics::compute(
                &share,
                &distinct.iter().map(|&r| ctx.test_y[r]).collect::<Vec<_>>(),
                0.5,
            );
            row.tpr_distinct = m.tpr;
            row.tnr_distinct = m.tnr;
            row.mechanism_parameters = format!("{teachers} teachers");
        }
        UnitKind::Majority { queries, .. } => {
            row.model = "majority-vote-student".into();
            row.mechanism = "plain majority vote (no noise)".into();
            let pool_votes = set_of()?.pool_votes(&ctx.pool_x)?;
            let q = query_rows(*queries);
            // Ties go to benign, as the noisy argmax breaks ties to the lowest class.
            let labels: Vec<bool> = q
                .iter()
                .map(|&i| pool_votes[i][1] > pool_votes[i][0])
                .collect();
            row.answered = Some(q.len());
            row.label_agreement = Some(agreement(
                &q,
                &labels.iter().map(|&l| Some(l)).collect::<Vec<_>>(),
                &ctx.pool_y,
            ));
            train_and_score(
                &mut row,
                LabeledRows {
                    x: ctx.pool_x.select_rows(&q),
                    y: labels,
                },
            )?;
        }
        UnitKind::Pate {
            queries,
            rho,
            mechanism,
            epsilon_curve,
            ..
        } => {
            row.model = "pate-student".into();
            row.mechanism = mechanism.name().into();
            row.mechanism_parameters = mechanism.parameters.clone();
            row.rho = *rho;
            row.local_epsilon = rho.map(privacy::privatize::local_epsilon);
            let set = set_of()?;
            let q = query_rows(*queries);
            let x = ctx.pool_x.select_rows(&q);
            let mut noise = rng.noise()?;
            let vote_rows: Vec<[u64; 2]> = match rho {
                None => {
                    let pool_votes = set.pool_votes(&ctx.pool_x)?;
                    q.iter().map(|&i| pool_votes[i]).collect()
                }
                Some(rho) => {
                    // Local DP on the student side: the teachers see x + Lap(1/ρ), the student
                    // trains on x (Yovine et al. 2021, "Trusted Curator B").
                    let mut sent = x.clone();
                    privacy::privatize::laplace_rows(
                        &mut sent.values,
                        sent.cols,
                        *rho,
                        &mut noise,
                    )?;
                    set.votes(&sent)?
                }
            };
            let votes = VoteMatrix::from_rows(&vote_rows)?;
            let labels: Vec<Option<bool>> = mechanism
                .aggregate(&votes, &mut noise)?
                .into_iter()
                .map(|l| l.map(|c| c == 1))
                .collect();
            let answered_flags: Vec<bool> = labels.iter().map(Option::is_some).collect();
            privacy::ledger::append(
                &set.ledger,
                &privacy::ledger::LedgerEntry {
                    time: bundle::rfc3339_utc(std::time::SystemTime::now()),
                    by: format!("sweep cell {} repeat {}", u.cell, u.repeat),
                    mechanism: mechanism.mechanism,
                    queries: votes.queries(),
                    answered: answered_flags.iter().filter(|&&a| a).count(),
                },
            )?;
            let report = account(
                &votes,
                &mechanism.mechanism,
                Some(&answered_flags),
                base.privacy.delta,
            )?;
            row.data_independent_epsilon = Some(report.data_independent_epsilon);
            row.data_dependent_epsilon = Some(report.data_dependent_epsilon);
            for &n in epsilon_curve {
                let prefix = VoteMatrix::from_rows(&vote_rows[..n])?;
                let r = account(
                    &prefix,
                    &mechanism.mechanism,
                    Some(&answered_flags[..n]),
                    base.privacy.delta,
                )?;
                row.epsilon_curve.push(EpsilonPoint {
                    queries: n,
                    answered: answered_flags[..n].iter().filter(|&&a| a).count(),
                    data_independent: r.data_independent_epsilon,
                    data_dependent: r.data_dependent_epsilon,
                });
            }
            let answered: Vec<usize> = (0..labels.len()).filter(|&i| labels[i].is_some()).collect();
            row.answered = Some(answered.len());
            let student_labels: Vec<bool> = answered
                .iter()
                .map(|&i| labels[i].expect("answered"))
                .collect();
            if answered.is_empty() {
                eprintln!(
                    "sweep: {} r{}: no query answered; no student",
                    u.cell, u.repeat
                );
            } else if !student_labels.contains(&true) || !student_labels.contains(&false) {
                // One class only: a student would predict a constant. Record it as such (every
                // request malicious or every request benign), which is what it would do.
                row.label_agreement = Some(agreement(&q, &labels, &ctx.pool_y));
                let constant = if student_labels[0] { 1.0 } else { 0.0 };
                let scores = vec![constant; ctx.test_y.len()];
                set_metrics(&mut row, &scores, &ctx.test_y, 0.5);
                set_distinct(&mut row, &scores, ctx, 0.5);
            } else {
                row.label_agreement = Some(agreement(&q, &labels, &ctx.pool_y));
                train_and_score(
                    &mut row,
                    LabeledRows {
                        x: x.select_rows(&answered),
                        y: student_labels,
                    },
                )?;
            }
        }
    }
    Ok(row)
}

/// Share of answered queries whose label equals the query's true label.
fn agreement(rows: &[usize], labels: &[Option<bool>], truth: &[bool]) -> f64 {
    let answered: Vec<(usize, bool)> = rows
        .iter()
        .zip(labels)
        .filter_map(|(&r, l)| l.map(|l| (r, l)))
        .collect();
    answered.iter().filter(|(r, l)| truth[*r] == *l).count() as f64 / answered.len().max(1) as f64
}

/// TPR and TNR over the distinct test requests, from the scores of every test row.
fn set_distinct(row: &mut ResultRow, scores: &[f32], ctx: &Context, threshold: f32) {
    let s: Vec<f32> = ctx.test_distinct.iter().map(|&r| scores[r]).collect();
    let y: Vec<bool> = ctx.test_distinct.iter().map(|&r| ctx.test_y[r]).collect();
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
    pipeline::write_file(
        &out.join("results.csv"),
        report::results_csv(rows).as_bytes(),
    )?;
    let cells = report::summarize(rows);
    pipeline::write_file(
        &out.join("summary.csv"),
        report::summary_csv(&cells).as_bytes(),
    )?;
    let header = "## Sweep summary\n\nPer cell: median [first–third quartile] over its students, on the test split. ε: δ of the base config; the data-dependent ε is a function of the private votes (not private to publish); the local ε = 2ρ is the per-query guarantee of the student-side Laplace noise (`privacy::privatize`). Written by `pate-trainer sweep`.";
    pipeline::write_file(
        &out.join("summary.md"),
        report::summary_md(&cells, header).as_bytes(),
    )?;
    write_split_tables(out)?;
    write_plots(out, &cells, rows, config)
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
        let bytes = std::fs::read(&p).map_err(|source| Error::Io {
            path: p.clone(),
            source,
        })?;
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Invalid(format!("{}: {e}", p.display())))?;
        let data = v["data"].as_str().unwrap_or("?");
        for s in v["splits"].as_array().into_iter().flatten() {
            let n = |k: &str| s[k].as_u64().unwrap_or(0);
            csv += &format!(
                "{data},{},{},{},{},{}\n",
                s["split"].as_str().unwrap_or("?"),
                n("benign"),
                n("malicious"),
                n("distinct_benign"),
                n("distinct_malicious")
            );
            md += &format!(
                "| {data} | {} | {} | {} | {} | {} |\n",
                s["split"].as_str().unwrap_or("?"),
                n("benign"),
                n("malicious"),
                n("distinct_benign"),
                n("distinct_malicious")
            );
        }
    }
    pipeline::write_file(&out.join("splits.csv"), csv.as_bytes())?;
    pipeline::write_file(&out.join("splits.md"), md.as_bytes())
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
    let values = |cell: &str, f: &dyn Fn(&ResultRow) -> Option<f64>| -> Vec<f64> {
        rows.iter()
            .filter(|r| r.cell == cell)
            .filter_map(f)
            .collect()
    };
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
                let svg =
                    report::box_plot(&format!("{}: {title}{suffix}", e.name), title, &g, y_max);
                pipeline::write_file(
                    &dir.join(format!("{}-t{tname}-{measure}.svg", e.name)),
                    svg.as_bytes(),
                )?;
            }
            // Accuracy against answered queries, with the ε each point costs in the table.
            if vq && !baselines {
                let mut series: Vec<report::Series> = Vec::new();
                let mut keys: Vec<String> = Vec::new();
                for c in &tcells {
                    let k = format!(
                        "{} ρ={} {}",
                        c.first.mechanism,
                        fmt_rho(c.first.rho),
                        c.first.model
                    );
                    if !keys.contains(&k) {
                        keys.push(k.clone());
                    }
                }
                for k in keys {
                    let mut pts: Vec<(f64, f64)> = tcells
                        .iter()
                        .filter(|c| {
                            format!(
                                "{} ρ={} {}",
                                c.first.mechanism,
                                fmt_rho(c.first.rho),
                                c.first.model
                            ) == k
                        })
                        .filter_map(|c| Some((c.answered?.median, c.tpr?.median)))
                        .collect();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    series.push(report::Series {
                        name: format!("TPR, {k}"),
                        points: pts.clone(),
                        dashed: false,
                    });
                    let tnr: Vec<(f64, f64)> = tcells
                        .iter()
                        .filter(|c| {
                            format!(
                                "{} ρ={} {}",
                                c.first.mechanism,
                                fmt_rho(c.first.rho),
                                c.first.model
                            ) == k
                        })
                        .filter_map(|c| Some((c.answered?.median, c.tnr?.median)))
                        .collect();
                    series.push(report::Series {
                        name: format!("TNR, {k}"),
                        points: tnr,
                        dashed: true,
                    });
                }
                let svg = report::line_plot(
                    &format!("{}: student accuracy vs answered queries{suffix}", e.name),
                    "answered queries (median)",
                    "median rate",
                    &series,
                );
                pipeline::write_file(
                    &dir.join(format!("{}-t{tname}-accuracy-vs-queries.svg", e.name)),
                    svg.as_bytes(),
                )?;
            }
        }
        // ε against answered queries (the accountant after each prefix of the queries).
        if !e.epsilon_curve.is_empty() {
            let mut series = Vec::new();
            let mut independent_done: Vec<String> = Vec::new();
            for c in &ecells {
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
                let svg = report::line_plot(
                    &format!(
                        "{}: ε (δ = base δ) vs answered queries, median over students",
                        e.name
                    ),
                    "answered queries",
                    "ε",
                    &series,
                );
                pipeline::write_file(
                    &dir.join(format!("{}-epsilon-vs-queries.svg", e.name)),
                    svg.as_bytes(),
                )?;
            }
        }
    }
    Ok(())
}
