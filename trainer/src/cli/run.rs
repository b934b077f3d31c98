//! `pate-trainer run --config configs/train.yaml --out RUN_DIR`: the whole pipeline.
//!
//! load datasets → split by request hash → fit the featurizer (public side by default) →
//! featurize → teach (batched ensemble) → privatize the queries (Lap(1/ρ), optional) → vote →
//! noisy aggregation → accounting → student on the ORIGINAL query features with the aggregated
//! labels → evaluate on the test split → export the ONNX bundle → `report.json` and `roc.svg`.
use std::path::PathBuf;
use std::time::Instant;

use privacy::accountant::AccountOptions;

use crate::config::{FitOn, Mechanism, QuerySelection, RunConfig};
use crate::dense::DenseMatrix;
use crate::device::{self, DeviceChoice};
use crate::ensemble::{LabeledRows, Mode};
use crate::error::{Error, Result};
use crate::metrics::{roc_svg, Metrics};
use crate::model_file::{load_teachers, ModelFile};
use crate::pipeline::{self, RunRng, TeachJob};
use crate::rundir::{sets, RunDir, RunManifest};

/// Arguments of `pate-trainer run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The YAML configuration (see configs/train.yaml); dataset paths are relative to its directory.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The run directory to write (created; an existing one is reused, and teachers already
    /// trained on the same data are kept).
    #[arg(long, value_name = "RUN_DIR")]
    pub out: PathBuf,
    /// `auto`, `cpu`, `cuda` or `cuda:<i>` (overrides the config's `device`).
    #[arg(long, value_parser = parse_device)]
    pub device: Option<DeviceChoice>,
    /// Teacher training mode (overrides `teachers.mode`).
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// libtorch CPU threads (overrides the config's `threads`).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// clap parser for `--device`.
pub fn parse_device(s: &str) -> std::result::Result<DeviceChoice, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

/// The warning put in the report when the featurizer was fitted on the private data.
pub const PRIVATE_FEATURIZER_WARNING: &str = "WARNING: the featurizer's vocabulary and IDF were fitted on the \
teachers' PRIVATE data (featurizer.fit_on: private). The vocabulary reveals which tokens the private requests \
contain and no PATE bound covers that: the epsilons below do NOT account for it. Fit on the public side \
(fit_on: public, the default) for the stated guarantee to hold.";

/// Runs `pate-trainer run`.
pub fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let mut config = RunConfig::load(&args.config)?;
    if let Some(d) = args.device {
        config.device = d;
    }
    if args.threads.is_some() {
        config.threads = args.threads;
    }
    if let Some(m) = args.mode {
        config.teachers.mode = m;
    }
    let report = run_pipeline(&config, &RunDir::new(&args.out), started)?;
    eprintln!(
        "run: done in {:.1} s; student TPR {} TNR {}; report {}",
        started.elapsed().as_secs_f64(),
        fmt_rate(report["metrics"]["tpr"].as_f64()),
        fmt_rate(report["metrics"]["tnr"].as_f64()),
        args.out.join("report.json").display()
    );
    Ok(())
}

fn fmt_rate(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.4}"))
}

fn stage(name: &str, started: Instant) {
    eprintln!("[{:>7.1} s] == {name}", started.elapsed().as_secs_f64());
}

/// Runs every stage into `run` and returns the report (also written to `report.json`).
pub fn run_pipeline(
    config: &RunConfig,
    run: &RunDir,
    started: Instant,
) -> Result<serde_json::Value> {
    let rng = RunRng::new(config.seed)?;
    if config.seed.is_some() {
        eprintln!(
            "run: SEEDED randomness (seed: {:?}) — reproducible, not private; for experiments only",
            config.seed
        );
    }
    if let Some(t) = config.threads {
        tch::set_num_threads(t as i32);
    }
    let device = device::resolve(config.device)?;

    // ---- data and splits
    stage(
        if config.is_simulation() {
            "load datasets and SIMULATE the roles (split record by record)"
        } else {
            "load the private, public, validation and test datasets"
        },
        started,
    );
    let data = pipeline::load_run_data(config)?;
    let records = data.records;
    let splits = data.splits;
    // A data set that cannot train a detector (one class only, e.g. a benign-only file) is
    // refused before anything is written, naming the files; the per-split check after
    // featurization still catches a split that the hash left without one class.
    let files = || -> String {
        let names: Vec<String> = config
            .sources()
            .iter()
            .map(|d| d.path.display().to_string())
            .collect();
        names.join(", ")
    };
    if records.is_empty() {
        return Err(Error::Config(format!(
            "{}: no requests in {}",
            if config.is_simulation() {
                "split.simulate_from"
            } else {
                "datasets"
            },
            files()
        )));
    }
    let has = |label: datasets::Label| {
        splits
            .private
            .iter()
            .any(|&i| records[i].label == Some(label))
    };
    if !has(datasets::Label::Benign) || !has(datasets::Label::Malicious) {
        return Err(Error::Config(format!(
            "{}: the private data needs both benign and malicious requests, {} has only {}",
            if config.is_simulation() {
                "split.simulate_from"
            } else {
                "private"
            },
            files(),
            if has(datasets::Label::Benign) {
                "benign ones"
            } else if has(datasets::Label::Malicious) {
                "malicious ones"
            } else {
                "unlabelled ones"
            }
        )));
    }
    eprintln!(
        "{}: {} private, {} public, {} student validation, {} test",
        if config.is_simulation() {
            "simulated split"
        } else {
            "roles"
        },
        splits.private.len(),
        splits.public.len(),
        splits.student_validation.len(),
        splits.test.len()
    );
    let teachers = config.teachers.count;
    if splits.private.len() < 2 * teachers {
        return Err(Error::Config(format!(
            "teachers.count: {teachers} teachers need at least {} private requests, the split has {}",
            2 * teachers,
            splits.private.len()
        )));
    }
    // Queries and validation samples are DISTINCT requests: asking the teachers the same request
    // again costs privacy budget and teaches the student nothing new (CSIC repeats some requests
    // hundreds of times, and the hash split keeps all copies in one split).
    let distinct_public = pipeline::distinct(&records, &splits.public);
    if distinct_public.len() < config.student.queries {
        return Err(Error::Config(format!(
            "student.queries: {} queries asked but the public split has only {} distinct requests",
            config.student.queries,
            distinct_public.len()
        )));
    }
    // Only now, with the config and the data valid and the device usable, does the run
    // directory appear (a bad data file leaves no half-written run directory behind).
    run.create()?;
    let config_yaml = serde_yaml::to_string(config).map_err(|e| Error::Config(e.to_string()))?;
    pipeline::write_file(&run.config(), config_yaml.as_bytes())?;
    let config_json = serde_json::to_value(config).map_err(|e| Error::Config(e.to_string()))?;
    let mut manifest = RunManifest::new(rng.provenance(), device::name(device), config_json);
    manifest.record(run, "config", &[run.config()])?;

    let mut query_rng = rng.stream("queries");
    let query_order: Vec<usize> = match config.student.query_selection {
        QuerySelection::Distinct => pipeline::shuffled(distinct_public.len(), &mut query_rng),
        QuerySelection::Traffic => pipeline::weighted_sample(
            &pipeline::multiplicities(&records, &splits.public),
            distinct_public.len(),
            &mut query_rng,
        ),
        QuerySelection::Head => pipeline::head_then_uniform(
            &pipeline::multiplicities(&records, &splits.public),
            (config.student.head_share * config.student.queries as f64).round() as usize,
            &mut query_rng,
        ),
    };
    let query_rows: Vec<usize> = query_order
        .iter()
        .take(config.student.queries)
        .map(|&i| distinct_public[i])
        .collect();
    // The unlabelled public pool for self-training: every distinct public request not queried.
    let pool_rows: Vec<usize> = query_order
        .iter()
        .skip(config.student.queries)
        .map(|&i| distinct_public[i])
        .collect();
    let distinct_validation = pipeline::distinct(&records, &splits.student_validation);
    let mut validation_rng = rng.stream("student-validation");
    let validation_order: Vec<usize> =
        pipeline::shuffled(distinct_validation.len(), &mut validation_rng)
            .into_iter()
            .take(config.student.validation_max)
            .collect();
    let validation_rows: Vec<usize> = validation_order
        .iter()
        .map(|&i| distinct_validation[i])
        .collect();
    // Traffic weights (student.multiplicity_cap): copies of each answered query / validation row.
    let public_multiplicity = pipeline::multiplicities(&records, &splits.public);
    let validation_multiplicity = pipeline::multiplicities(&records, &splits.student_validation);
    let cap = config.student.multiplicity_cap.unwrap_or(1);
    let query_copies: Vec<usize> = query_order
        .iter()
        .take(config.student.queries)
        .map(|&i| public_multiplicity[i].min(cap))
        .collect();
    let validation_copies: Vec<usize> = validation_order
        .iter()
        .map(|&i| validation_multiplicity[i].min(cap))
        .collect();
    let where_from = |idx: &[usize]| -> Vec<serde_json::Value> {
        idx.iter()
            .map(|&i| serde_json::json!([records[i].line]))
            .collect()
    };
    pipeline::write_json(
        &run.path("splits.json"),
        &serde_json::json!({
            "method": if config.is_simulation() {
                "SIMULATION: the k-th copy of a (request, label) → sha256(\"split\", record key, k) → [0,1) against the cumulative fractions"
            } else {
                "roles: the files under private:, public:, validation: and test:"
            },
            "simulation": config.is_simulation(),
            "fractions": config.split.as_ref().map(|s| s.fractions()),
            "counts": {
                "private": splits.private.len(), "public": splits.public.len(),
                "student_validation": splits.student_validation.len(), "test": splits.test.len(),
                "queries": query_rows.len(), "student_validation_used": validation_rows.len(),
                "public_distinct": distinct_public.len(), "student_validation_distinct": distinct_validation.len(),
            },
            "lines": {
                "private": where_from(&splits.private), "queries": where_from(&query_rows),
                "student_validation": where_from(&validation_rows), "test": where_from(&splits.test),
            },
        }),
    )?;
    manifest.record(run, "split", &[run.path("splits.json")])?;

    // ---- featurizer
    let fit_rows = match config.featurizer.fit_on {
        FitOn::Public => &splits.public,
        FitOn::Private => {
            eprintln!("\n{PRIVATE_FEATURIZER_WARNING}\n");
            &splits.private
        }
    };
    stage(
        &format!(
            "fit the featurizer on {} {} requests",
            fit_rows.len(),
            match config.featurizer.fit_on {
                FitOn::Public => "public",
                FitOn::Private => "PRIVATE",
            }
        ),
        started,
    );
    let featurizer = featurizer::Featurizer::fit(
        config.featurizer.config.clone(),
        fit_rows.iter().map(|&i| records[i].parts()),
    )?;
    featurizer.save(&run.featurizer())?;
    let fhash = featurizer.content_hash().to_string();

    stage("featurize", started);
    let mut written = vec![run.featurizer()];
    let mut feature_set =
        |set: &str, rows: &[usize]| -> Result<(crate::dense::DenseMatrix, Vec<bool>)> {
            let x = pipeline::featurize_rows(&featurizer, &records, rows);
            let y = pipeline::labels_of(&records, rows)?;
            pipeline::write_matrix(&run.features(set), &x)?;
            pipeline::write_labels(
                &run.labels(set),
                &y.iter().map(|&l| Some(l)).collect::<Vec<_>>(),
            )?;
            written.push(run.features(set));
            written.push(run.labels(set));
            Ok((x, y))
        };
    let private_rows =
        pipeline::teacher_rows(&records, &splits.private, config.teachers.weighting());
    let (private_x, private_y) = feature_set(sets::PRIVATE, &private_rows)?;
    let (validation_x, validation_y) = feature_set(sets::STUDENT_VALIDATION, &validation_rows)?;
    let (test_x, test_y) = feature_set(sets::TEST, &splits.test)?;
    // The public role's labels are never read for training: the queries may be unlabelled. Where
    // they are labelled, the labels only feed the report's agreement diagnostic.
    let query_x = pipeline::featurize_rows(&featurizer, &records, &query_rows);
    let query_y: Vec<Option<bool>> = query_rows
        .iter()
        .map(|&i| records[i].label.map(|l| l == datasets::Label::Malicious))
        .collect();
    pipeline::write_matrix(&run.features(sets::QUERIES), &query_x)?;
    pipeline::write_labels(&run.labels(sets::QUERIES), &query_y)?;
    written.push(run.features(sets::QUERIES));
    written.push(run.labels(sets::QUERIES));
    let pool_x = if config.student.self_training.rounds > 0 {
        let x = pipeline::featurize_rows(&featurizer, &records, &pool_rows);
        pipeline::write_matrix(&run.features(PUBLIC_POOL_SET), &x)?;
        written.push(run.features(PUBLIC_POOL_SET));
        Some(x)
    } else {
        None
    };
    for (what, y) in [("student validation", &validation_y), ("test", &test_y)] {
        if !y.contains(&true) || !y.contains(&false) {
            return Err(Error::Config(format!("the {what} split needs both benign and malicious requests; add data or change split")));
        }
    }
    manifest.record(run, "featurize", &written)?;

    // ---- teachers
    stage(&format!("teach {teachers} teachers"), started);
    let shards = pipeline::teacher_shards(
        &records,
        &private_rows,
        teachers,
        config.teachers.copies_on_one_teacher,
    );
    if let Some(k) = shards.iter().position(|s| s.len() < 2) {
        return Err(Error::Config(format!(
            "teachers.count: shard {k} of {teachers} has {} private requests (at least 2 needed); use fewer teachers",
            shards[k].len()
        )));
    }
    pipeline::write_json(&run.shards(), &shards)?;
    let job = TeachJob {
        shards: shards
            .iter()
            .map(|s| {
                Some((
                    private_x.select_rows(s),
                    s.iter().map(|&i| private_y[i]).collect(),
                ))
            })
            .collect(),
        holdout_fraction: config.teachers.holdout_fraction,
        holdout_max: config.teachers.holdout_max,
        training: &config.teachers.training,
        mode: config.teachers.mode,
        featurizer_hash: fhash.clone(),
        out_dir: &run.teachers(),
        device,
    };
    let teach_started = Instant::now();
    let (trained, reused) = pipeline::teach(&job, &rng)?;
    let teach_seconds = teach_started.elapsed().as_secs_f64();
    drop(job);
    let teacher_files = load_teachers(&run.teachers())?;
    if teacher_files.len() != teachers {
        return Err(Error::Invalid(format!(
            "{}: {} teacher files, expected {teachers} (remove stale files)",
            run.teachers().display(),
            teacher_files.len()
        )));
    }
    manifest.record(run, "teach", &[run.shards(), run.teachers()])?;

    // ---- privatize + vote
    let mut noise = rng.noise()?;
    let mut sent = query_x.clone();
    if let Some(rho) = config.privacy.rho {
        stage(
            &format!("privatize {} queries with Lap(1/ρ), ρ = {rho}", sent.rows),
            started,
        );
        privacy::privatize::laplace_rows(&mut sent.values, sent.cols, rho, &mut noise)?;
    }
    pipeline::write_matrix(&run.features(sets::QUERIES_SENT), &sent)?;
    stage(
        &format!(
            "vote: {} teachers on {} queries",
            teacher_files.len(),
            sent.rows
        ),
        started,
    );
    let votes = pipeline::vote(&teacher_files, &sent, device)?;
    privacy::votes::write_vote_file(&run.votes(), &votes)?;
    manifest.record(
        run,
        "vote",
        &[run.features(sets::QUERIES_SENT), run.votes()],
    )?;

    // ---- aggregate + account
    let p = &config.privacy;
    let mechanism = p.mechanism;
    // Calibrated aggregation: a constant, data-independent shift of the counts (see
    // `config::AggregationConfig`); the accountant below is given the same shifted counts.
    let share = config.aggregation.malicious_vote_share;
    let votes = if share == 0.5 {
        votes
    } else {
        pipeline::shift_votes(&votes, share, teacher_files.len())?
    };
    stage(
        &format!(
            "aggregate with {} (malicious at a vote share of {share}: +{} on the malicious count)",
            mechanism.name(),
            pipeline::vote_share_shift(share, teacher_files.len())
        ),
        started,
    );
    let noisy_labels = mechanism.aggregate(&votes, &mut noise)?;
    let labels: Vec<Option<bool>> = noisy_labels.iter().map(|l| l.map(|c| c == 1)).collect();
    pipeline::write_labels(&run.aggregate_labels(), &labels)?;
    stage("account", started);
    let answered_flags: Vec<bool> = labels.iter().map(Option::is_some).collect();
    let options = AccountOptions {
        delta: p.delta,
        orders: None,
        answered: matches!(p.mechanism, Mechanism::ConfidentGnmax(_))
            .then(|| answered_flags.clone()),
    };
    let epsilon = privacy::accountant::account(&votes, &mechanism, &options)?;
    let delta_warning = privacy::accountant::delta_warning(p.delta, splits.private.len());
    // The privacy ledger beside the teachers: teachers kept across runs into this directory spend
    // privacy of the same records every time.
    let ledger_path = run.path(LEDGER_FILE);
    privacy::ledger::append(
        &ledger_path,
        &privacy::ledger::LedgerEntry {
            time: bundle::rfc3339_utc(std::time::SystemTime::now()),
            by: "run".into(),
            mechanism,
            queries: votes.queries(),
            answered: answered_flags.iter().filter(|a| **a).count(),
        },
    )?;
    let ledger = privacy::ledger::read(&ledger_path)?;
    let (ledger_epsilon, ledger_order) = privacy::ledger::composed_epsilon(&ledger, p.delta)?;
    if let Some(w) = &delta_warning {
        eprintln!("run: WARNING: {w}");
    }
    pipeline::write_json(&run.privacy(), &epsilon)?;
    manifest.record(
        run,
        "aggregate+account",
        &[run.aggregate_labels(), run.privacy()],
    )?;

    // ---- student
    let answered: Vec<usize> = (0..labels.len()).filter(|&i| labels[i].is_some()).collect();
    if answered.is_empty() {
        return Err(Error::Invalid(
            "the aggregator answered no query: nothing to train the student on".into(),
        ));
    }
    let student_labels: Vec<bool> = answered
        .iter()
        .map(|&i| labels[i].expect("answered"))
        .collect();
    let labelled_answered: Vec<usize> = answered
        .iter()
        .copied()
        .filter(|&i| query_y[i].is_some())
        .collect();
    let label_agreement = (!labelled_answered.is_empty()).then(|| {
        labelled_answered
            .iter()
            .filter(|&&i| labels[i] == query_y[i])
            .count() as f64
            / labelled_answered.len() as f64
    });
    stage(
        &format!(
            "student on {} answered queries (original features)",
            answered.len()
        ),
        started,
    );
    // The answered queries labelled benign with their public multiplicities
    // (threshold_rule: answered_benign).
    let benign_answered: Vec<usize> = answered
        .iter()
        .copied()
        .filter(|&i| labels[i] == Some(false))
        .collect();
    let benign_answered_x = query_x.select_rows(&benign_answered);
    let benign_answered_weights: Vec<usize> = benign_answered
        .iter()
        .map(|&i| public_multiplicity[query_order[i]])
        .collect();
    // Public labelled examples placed into the site's request shapes: public data, no ε.
    let mut student_x = query_x.select_rows(&answered);
    let mut student_y = student_labels;
    let mut public_examples_made = 0usize;
    if let Some(pe) = &config.student.public_examples {
        let mut malicious = Vec::new();
        for source in &pe.files {
            let options = datasets::LoadOptions {
                label: source.label,
                label_file: None,
            };
            let mut public = datasets::load_with(source.format, &source.path, &options)?;
            if let Some(limit) = source.limit {
                public.truncate(limit);
            }
            for r in &public {
                match r.label {
                    Some(datasets::Label::Malicious) => {
                        malicious.push(crate::public_examples::public_value(r))
                    }
                    // Public benign values are not placed (see public_examples::synthesize).
                    Some(datasets::Label::Benign) | None => {}
                }
            }
        }
        let templates: Vec<&datasets::Record> =
            distinct_public.iter().map(|&i| &records[i]).collect();
        // The queries the teachers labelled benign (post-processing of the private labels).
        let benign_templates: Vec<&datasets::Record> = benign_answered
            .iter()
            .map(|&i| &records[query_rows[i]])
            .collect();
        let mut stream = rng.stream("public-examples");
        let examples = crate::public_examples::synthesize(
            &templates,
            &benign_templates,
            &malicious,
            pe.count,
            &mut stream,
        );
        let rows: Vec<usize> = (0..examples.len()).collect();
        let x = pipeline::featurize_rows(&featurizer, &examples, &rows);
        student_x = DenseMatrix::new(
            student_x.rows + x.rows,
            student_x.cols,
            [student_x.values, x.values].concat(),
        )?;
        student_y.extend(
            examples
                .iter()
                .map(|r| r.label == Some(datasets::Label::Malicious)),
        );
        public_examples_made = examples.len();
        eprintln!(
            "student: {} public labelled examples: public attacks ({} values) placed into {} public requests of the site, and {} requests the teachers labelled benign re-shaped with their own values (no privacy cost)",
            examples.len(),
            malicious.len(),
            templates.len(),
            benign_templates.len()
        );
    }
    let (student, student_extras) = pipeline::train_student_full(
        LabeledRows {
            x: student_x,
            y: student_y,
        },
        LabeledRows {
            x: validation_x,
            y: validation_y,
        },
        config
            .student
            .multiplicity_cap
            .map(|_| {
                (
                    answered
                        .iter()
                        .map(|&i| query_copies[i])
                        .chain(std::iter::repeat_n(1, public_examples_made))
                        .collect::<Vec<_>>(),
                    validation_copies.clone(),
                )
            })
            .as_ref()
            .map(|(a, v)| (a.as_slice(), v.as_slice())),
        pool_x.as_ref(),
        Some((&benign_answered_x, &benign_answered_weights)),
        &config.student,
        &fhash,
        &rng,
        device,
    )?;
    student.save(&run.student())?;
    manifest.record(run, "student", &[run.student()])?;

    // ---- evaluate
    stage(
        &format!("evaluate on {} test requests", test_x.rows),
        started,
    );
    let ensemble_rows: Option<Vec<usize>> = config
        .evaluation
        .ensemble_max
        .filter(|&m| m < test_x.rows)
        .map(|m| {
            let mut rows: Vec<usize> =
                pipeline::shuffled(test_x.rows, &mut rng.stream("ensemble-evaluation"))
                    .into_iter()
                    .take(m)
                    .collect();
            rows.sort_unstable();
            rows
        });
    let evaluation = evaluate(
        &student,
        &teacher_files,
        &test_x,
        &test_y,
        ensemble_rows.as_deref(),
        device,
    )?;
    // The same student on each DISTINCT test request once: the traffic-weighted test split is
    // dominated by a few requests repeated thousands of times (CSIC: 8 static pages are most of
    // the benign test traffic), so its rates move in large steps; this view does not.
    let distinct_test: Vec<usize> = {
        let rows = pipeline::distinct(&records, &splits.test);
        let position: std::collections::HashMap<usize, usize> = splits
            .test
            .iter()
            .enumerate()
            .map(|(k, &r)| (r, k))
            .collect();
        rows.iter()
            .filter_map(|r| position.get(r).copied())
            .collect()
    };
    let distinct_scores =
        pipeline::model_scores(&student, &test_x.select_rows(&distinct_test), device)?;
    let distinct_y: Vec<bool> = distinct_test.iter().map(|&k| test_y[k]).collect();
    let (distinct_metrics, distinct_roc) =
        pipeline::evaluate_scores(&distinct_scores, &distinct_y, student.info.threshold);
    let distinct_evaluation = serde_json::json!({
        "metrics": distinct_metrics,
        "tpr_at_fpr": tpr_at_fprs(&distinct_roc),
    });
    // "Novel" test requests: those whose request never occurs in the public split (traffic-
    // weighted among themselves). Recurring requests can be learnt from the public pool; these
    // cannot, so they show how the detector generalizes.
    let novel_test: Vec<usize> = {
        let public_hashes: std::collections::HashSet<[u8; 32]> = splits
            .public
            .iter()
            .map(|&i| pipeline::request_hash(&records[i]))
            .collect();
        (0..splits.test.len())
            .filter(|&k| !public_hashes.contains(&pipeline::request_hash(&records[splits.test[k]])))
            .collect()
    };
    let novel_evaluation = if novel_test.is_empty() {
        serde_json::Value::Null
    } else {
        let scores = pipeline::model_scores(&student, &test_x.select_rows(&novel_test), device)?;
        let y: Vec<bool> = novel_test.iter().map(|&k| test_y[k]).collect();
        let (m, roc) = pipeline::evaluate_scores(&scores, &y, student.info.threshold);
        serde_json::json!({
            "samples": novel_test.len(),
            "metrics": m,
            "tpr_at_fpr": tpr_at_fprs(&roc),
        })
    };
    pipeline::write_file(&run.path("roc.svg"), evaluation.svg.as_bytes())?;
    pipeline::write_json(&run.path("evaluation.json"), &evaluation.json)?;
    manifest.record(
        run,
        "evaluate",
        &[run.path("evaluation.json"), run.path("roc.svg")],
    )?;

    // ---- report
    let mut report = serde_json::json!({
        "teachers": teachers,
        "teacher_multiplicity": String::from(config.teachers.weighting()),
        "teacher_private_rows": private_rows.len(),
        "teacher_copies_on_one_teacher": config.teachers.copies_on_one_teacher,
        "queries": query_rows.len(),
        "answered": answered.len(),
        "public_examples": public_examples_made,
        "mechanism": mechanism.name(),
        "mechanism_parameters": mechanism,
        "simulation": config.is_simulation(),
        "delta": p.delta,
        "data_independent_epsilon": epsilon.data_independent_epsilon,
        "data_independent_epsilon_label": epsilon.data_independent_label,
        "data_dependent_epsilon": epsilon.data_dependent_epsilon,
        "data_dependent_epsilon_label": epsilon.data_dependent_label,
        "student_local_epsilon": p.rho.map(privacy::privatize::local_epsilon),
        "rho": p.rho,
        "rng": rng.provenance(),
        "featurizer": {
            "fit_on": config.featurizer.fit_on,
            "content_hash": fhash,
            "dim": featurizer.dim(),
            "warning": matches!(config.featurizer.fit_on, FitOn::Private).then_some(PRIVATE_FEATURIZER_WARNING),
        },
        "threshold": student.info.threshold,
        "metrics": evaluation.student,
        "student_tpr_at_fpr": evaluation.student_tpr_at_fpr,
        "student_distinct_test": distinct_evaluation,
        "student_novel_test": novel_evaluation,
        "malicious_vote_share": share,
        "vote_shift": pipeline::vote_share_shift(share, teachers),
        "teacher_ensemble_metrics": evaluation.ensemble,
        "teacher_ensemble_tpr_at_fpr": evaluation.ensemble_tpr_at_fpr,
        "student_options": {
            "query_selection": config.student.query_selection,
            "threshold_rule": student_extras.threshold_rule,
            "validation_operating_point_fpr_tpr": student_extras.validation_operating_point,
            "self_training": config.student.self_training,
            "multiplicity_cap": config.student.multiplicity_cap,
            "answered_rows_after_weighting": config.student.multiplicity_cap.map(|_| answered.iter().map(|&i| query_copies[i]).sum::<usize>()),
            "pseudo_labels_malicious_benign_per_round": student_extras.pseudo_labels,
            "unlabelled_pool": pool_rows.len(),
        },
        "aggregated_label_agreement": label_agreement,
        "aggregated_label_agreement_note": "share of answered queries whose noisy label equals the query's true label (public-side labels; diagnostic only)",
        "splits": {
            "private": splits.private.len(), "public": splits.public.len(),
            "student_validation": splits.student_validation.len(), "test": splits.test.len(),
        },
        "training": {
            "device": device::name(device),
            "teacher_mode": config.teachers.mode,
            "teachers_trained": trained,
            "teachers_reused": reused,
            "teach_seconds": teach_seconds,
            "teacher_widths": config.teachers.training.dims(featurizer.dim()),
            "student_widths": config.student.training.dims(featurizer.dim()),
            "student": student.info.training,
        },
        "privacy_report": epsilon,
    });
    let privacy_report = privacy::PrivacyReport {
        simulation: config.is_simulation(),
        mechanism,
        delta: p.delta,
        queries: query_rows.len(),
        answered_queries: answered.len(),
        rng: noise.provenance(),
        rho: p.rho,
        student_local_epsilon: p.rho.map(privacy::privatize::local_epsilon),
        featurizer: privacy::FeaturizerProvenance {
            fit_on: match config.featurizer.fit_on {
                FitOn::Public => privacy::FitSide::Public,
                FitOn::Private => privacy::FitSide::Private,
            },
            content_hash: fhash.clone(),
        },
        accountant: epsilon.clone(),
        delta_warning: delta_warning.clone(),
    };
    report[crate::cli::export::REPORT_PRIVACY_KEY] =
        serde_json::to_value(&privacy_report).map_err(|e| Error::Invalid(e.to_string()))?;
    if let Some(w) = delta_warning {
        report["delta_warning"] = serde_json::Value::String(w);
    }
    report["ledger"] = serde_json::json!({
        "file": LEDGER_FILE,
        "aggregations": ledger.len(),
        "composed_data_independent_epsilon": ledger_epsilon,
        "rdp_order": ledger_order,
        "delta": p.delta,
    });
    if matches!(config.featurizer.fit_on, FitOn::Private) {
        report["WARNING"] = serde_json::Value::String(PRIVATE_FEATURIZER_WARNING.into());
    }

    // ---- export
    stage("export the ONNX bundle", started);
    // The run's own bundle: a run whose ε does not hold is exported as not private (the
    // `export` command refuses such a run unless --not-private).
    let published = privacy_report
        .published(true)
        .map_err(|e| Error::Invalid(format!("privacy whitelist: {e}")))?;
    if published.published_epsilon.is_none() {
        eprintln!(
            "run: the bundle claims no ε: {}",
            published.published_epsilon_kind
        );
    }
    let metrics_part = crate::cli::export::report_metrics(&report);
    let bundle_dir = run.path(crate::cli::export::RUN_BUNDLE_DIR);
    crate::cli::export::export_bundle(
        &bundle_dir,
        &student.weights,
        &featurizer,
        student.info.threshold,
        Some(published),
        metrics_part,
    )?;
    report["bundle"] = serde_json::Value::String(bundle_dir.display().to_string());
    report["seconds"] = serde_json::json!(started.elapsed().as_secs_f64());
    pipeline::write_json(&run.path(crate::cli::export::RUN_REPORT_FILE), &report)?;
    manifest.record(
        run,
        "export+report",
        &[bundle_dir, run.path(crate::cli::export::RUN_REPORT_FILE)],
    )?;
    Ok(report)
}

/// What `evaluate` produces.
pub struct Evaluation {
    /// Student metrics at its threshold.
    pub student: Metrics,
    /// Teacher-ensemble metrics (score = share of teachers voting malicious, threshold 0.5).
    pub ensemble: Option<Metrics>,
    /// evaluation.json.
    pub json: serde_json::Value,
    /// roc.svg.
    pub svg: String,
    /// Best student TPR on the ROC at FPR ≤ 0, 0.5 %, 1 %, 2 % (operating points read off the
    /// test ROC, not the student's threshold): `{"0": .., "0.005": .., "0.01": .., "0.02": ..}`.
    pub student_tpr_at_fpr: serde_json::Value,
    /// The same for the teacher ensemble's vote share (null without teachers).
    pub ensemble_tpr_at_fpr: serde_json::Value,
}

/// The privacy ledger of the run's teacher set, beside `teachers/` (`privacy::ledger`).
pub const LEDGER_FILE: &str = "ledger.jsonl";

/// Name of the feature set of the unlabelled public pool (self-training), `features/public_pool.f32`.
pub const PUBLIC_POOL_SET: &str = "public_pool";

/// FPR levels at which the report reads TPR off the ROC.
const REPORTED_FPRS: [(&str, f64); 4] =
    [("0", 0.0), ("0.005", 0.005), ("0.01", 0.01), ("0.02", 0.02)];

fn tpr_at_fprs(roc: &[crate::metrics::RocPoint]) -> serde_json::Value {
    if roc.is_empty() {
        return serde_json::Value::Null;
    }
    REPORTED_FPRS
        .iter()
        .map(|&(k, f)| {
            (
                k.to_string(),
                serde_json::json!(pipeline::tpr_at_fpr(roc, f)),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Evaluates the student (and the teacher ensemble when given) on labelled rows.
pub fn evaluate(
    student: &ModelFile,
    teachers: &[ModelFile],
    x: &crate::dense::DenseMatrix,
    y: &[bool],
    ensemble_rows: Option<&[usize]>,
    device: tch::Device,
) -> Result<Evaluation> {
    let scores = pipeline::model_scores(student, x, device)?;
    let (student_metrics, student_roc) =
        pipeline::evaluate_scores(&scores, y, student.info.threshold);
    let (ensemble_metrics, ensemble_roc) = if teachers.is_empty() {
        (None, Vec::new())
    } else {
        let (fraction, labels) = match ensemble_rows {
            Some(rows) => (
                pipeline::ensemble_vote_fraction(teachers, &x.select_rows(rows), device)?,
                rows.iter().map(|&r| y[r]).collect::<Vec<bool>>(),
            ),
            None => (
                pipeline::ensemble_vote_fraction(teachers, x, device)?,
                y.to_vec(),
            ),
        };
        let (m, roc) = pipeline::evaluate_scores(&fraction, &labels, 0.5);
        (Some(m), roc)
    };
    let mut curves: Vec<(&str, &[crate::metrics::RocPoint])> = Vec::new();
    let ensemble_name = format!("{} teachers (noiseless vote share)", teachers.len());
    if !ensemble_roc.is_empty() {
        curves.push((&ensemble_name, &ensemble_roc));
    }
    curves.push(("student", &student_roc));
    let svg = roc_svg(&curves);
    let student_tpr_at_fpr = tpr_at_fprs(&student_roc);
    let ensemble_tpr_at_fpr = tpr_at_fprs(&ensemble_roc);
    let json = serde_json::json!({
        "samples": y.len(),
        "student": student_metrics,
        "student_tpr_at_fpr": student_tpr_at_fpr,
        "teacher_ensemble_tpr_at_fpr": ensemble_tpr_at_fpr,
        "teacher_ensemble": ensemble_metrics,
        "teacher_ensemble_score": "share of teachers voting malicious; malicious when >= 0.5",
        "teacher_ensemble_samples": ensemble_rows.map_or(y.len(), |r| r.len()),
    });
    Ok(Evaluation {
        student: student_metrics,
        ensemble: ensemble_metrics,
        json,
        svg,
        student_tpr_at_fpr,
        ensemble_tpr_at_fpr,
    })
}
