//! Stage 1, `split`: load the data, give every record its role (private, public, student
//! validation, test), and draw the student's queries and validation samples.
use std::time::Instant;

use crate::config::{QuerySelection, RunConfig};
use crate::error::{Error, Result};
use crate::pipeline::{self, RunData, RunRng};
use crate::rundir::RunDir;

/// The student's side of the split: which distinct public requests the teachers are asked about,
/// which are left as the unlabelled pool, and which validation samples the student sees.
#[derive(Debug, Clone)]
pub struct QueryPlan {
    /// Each distinct public request once (record indices).
    pub distinct_public: Vec<usize>,
    /// The draw over `distinct_public` (indices into it), queries first.
    pub query_order: Vec<usize>,
    /// The queries (record indices): the first `student.queries` of the draw.
    pub query_rows: Vec<usize>,
    /// The unlabelled public pool for self-training: every distinct public request not queried.
    pub pool_rows: Vec<usize>,
    /// How many distinct student-validation requests there are.
    pub distinct_validation: usize,
    /// The student's validation samples (record indices).
    pub validation_rows: Vec<usize>,
    /// Copies in the public split of each `distinct_public` request.
    pub public_multiplicity: Vec<usize>,
    /// Traffic weight (copies, capped by `student.multiplicity_cap`) of each query.
    pub query_copies: Vec<usize>,
    /// Traffic weight of each validation sample.
    pub validation_copies: Vec<usize>,
}

fn roles_name(config: &RunConfig, simulated: &'static str, roles: &'static str) -> &'static str {
    if config.is_simulation() {
        simulated
    } else {
        roles
    }
}

/// Loads the data of `config` and gives each record its role; refuses data that cannot train a
/// detector (no requests, one class only on the private side, too few private requests for the
/// teachers) before anything is written, naming the files.
pub fn load(config: &RunConfig, started: Instant) -> Result<RunData> {
    super::banner(
        roles_name(
            config,
            "load datasets and SIMULATE the roles (split record by record)",
            "load the private, public, validation and test datasets",
        ),
        started,
    );
    let data = pipeline::load_run_data(config)?;
    let (records, splits) = (&data.records, &data.splits);
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
            roles_name(config, "split.simulate_from", "datasets"),
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
            roles_name(config, "split.simulate_from", "private"),
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
        roles_name(config, "simulated split", "roles"),
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
    Ok(data)
}

/// Draws the queries (`student.query_selection`) and the validation samples from the streams
/// `queries` and `student-validation` of `rng`.
pub fn plan(config: &RunConfig, data: &RunData, rng: &RunRng) -> Result<QueryPlan> {
    let (records, splits) = (&data.records, &data.splits);
    let student = &config.student;
    // Queries and validation samples are DISTINCT requests: asking the teachers the same request
    // again costs privacy budget and teaches the student nothing new (CSIC repeats some requests
    // hundreds of times, and the hash split keeps all copies in one split).
    let distinct_public = pipeline::distinct(records, &splits.public);
    if distinct_public.len() < student.queries {
        return Err(Error::Config(format!(
            "student.queries: {} queries asked but the public split has only {} distinct requests",
            student.queries,
            distinct_public.len()
        )));
    }
    let public_multiplicity = pipeline::multiplicities(records, &splits.public);
    let mut query_rng = rng.stream("queries");
    let query_order: Vec<usize> = match student.query_selection {
        QuerySelection::Distinct => pipeline::shuffled(distinct_public.len(), &mut query_rng),
        QuerySelection::Traffic => {
            pipeline::weighted_sample(&public_multiplicity, distinct_public.len(), &mut query_rng)
        }
        QuerySelection::Head => pipeline::head_then_uniform(
            &public_multiplicity,
            (student.head_share * student.queries as f64).round() as usize,
            &mut query_rng,
        ),
    };
    let query_rows: Vec<usize> = query_order
        .iter()
        .take(student.queries)
        .map(|&i| distinct_public[i])
        .collect();
    let pool_rows: Vec<usize> = query_order
        .iter()
        .skip(student.queries)
        .map(|&i| distinct_public[i])
        .collect();
    let distinct_validation = pipeline::distinct(records, &splits.student_validation);
    let validation_order: Vec<usize> = pipeline::shuffled(
        distinct_validation.len(),
        &mut rng.stream("student-validation"),
    )
    .into_iter()
    .take(student.validation_max)
    .collect();
    let validation_rows: Vec<usize> = validation_order
        .iter()
        .map(|&i| distinct_validation[i])
        .collect();
    // Traffic weights (student.multiplicity_cap): copies of each answered query / validation row.
    let validation_multiplicity = pipeline::multiplicities(records, &splits.student_validation);
    let cap = student.multiplicity_cap.unwrap_or(1);
    let query_copies: Vec<usize> = query_order
        .iter()
        .take(student.queries)
        .map(|&i| public_multiplicity[i].min(cap))
        .collect();
    let validation_copies: Vec<usize> = validation_order
        .iter()
        .map(|&i| validation_multiplicity[i].min(cap))
        .collect();
    Ok(QueryPlan {
        distinct_public,
        query_order,
        query_rows,
        pool_rows,
        distinct_validation: distinct_validation.len(),
        validation_rows,
        public_multiplicity,
        query_copies,
        validation_copies,
    })
}

/// Writes `splits.json`: the method, the counts and the line of every request in each role.
pub fn write(run: &RunDir, config: &RunConfig, data: &RunData, plan: &QueryPlan) -> Result<()> {
    let (records, splits) = (&data.records, &data.splits);
    let where_from = |idx: &[usize]| -> Vec<serde_json::Value> {
        idx.iter()
            .map(|&i| serde_json::json!([records[i].line]))
            .collect()
    };
    pipeline::write_json(
        &run.splits(),
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
                "queries": plan.query_rows.len(), "student_validation_used": plan.validation_rows.len(),
                "public_distinct": plan.distinct_public.len(), "student_validation_distinct": plan.distinct_validation,
            },
            "lines": {
                "private": where_from(&splits.private), "queries": where_from(&plan.query_rows),
                "student_validation": where_from(&plan.validation_rows), "test": where_from(&splits.test),
            },
        }),
    )
}
