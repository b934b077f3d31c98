//! Stage 1, `split`: load the data, give every record its role (private, public, student
//! validation, test), and draw the student's queries and validation samples.
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::config::{DatasetSource, QuerySelection, RunConfig, SplitConfig};
use crate::error::{Error, Result};
use crate::io::file_sha256;
use crate::report::{SplitCounts, SplitLines, SplitsReport};
use crate::rng::RunRng;
use crate::rundir::RunDir;

/// The student's side of the split: which distinct public requests the teachers are asked about,
/// which are left as the unlabelled pool, and which validation samples the student sees.
#[derive(Debug, Clone)]
pub struct QueryPlan {
    /// Each distinct public request once (record indices).
    pub distinct_public: Vec<usize>,
    /// The draw over `distinct_public` (indices into it): the queries first, then the requests
    /// of the draw's first part that `validation_known` labels, then the rest.
    pub query_order: Vec<usize>,
    /// The queries (record indices): the first `student.queries` of the draw that the
    /// validation samples do not label (with `student.validation_labels`; else simply the first).
    pub query_rows: Vec<usize>,
    /// The unlabelled public pool for self-training: every distinct public request neither
    /// queried nor labelled by the validation samples.
    pub pool_rows: Vec<usize>,
    /// How many distinct student-validation requests there are.
    pub distinct_validation: usize,
    /// The student's validation samples (record indices).
    pub validation_rows: Vec<usize>,
    /// `student.validation_labels`: the requests the draw reached before its last query that the
    /// validation samples hold (positions in `validation_rows`): never asked, the student trains
    /// on them with the validation label. Empty when off.
    pub validation_known: Vec<usize>,
    /// Traffic weight (public copies, capped) of each `validation_known` request.
    pub validation_known_copies: Vec<usize>,
    /// Copies in the public split of each `distinct_public` request.
    pub public_multiplicity: Vec<usize>,
    /// Traffic weight (copies, capped by `student.multiplicity_cap`) of each query.
    pub query_copies: Vec<usize>,
    /// Traffic weight of each validation sample.
    pub validation_copies: Vec<usize>,
    /// Copies in the student-validation split of each validation sample, uncapped: the
    /// traffic-weighted validation figures, the public-side image of the test's traffic-weighted
    /// ones, are read with these whatever `student.multiplicity_cap` is.
    pub validation_traffic: Vec<usize>,
}

impl QueryPlan {
    /// Each drawn request the validation samples label (`student.validation_labels`), in draw
    /// order: (its public copy, the validation sample that labels it), record indices.
    pub fn validation_known_pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let asked = self.query_rows.len();
        self.validation_known
            .iter()
            .enumerate()
            .map(move |(k, &position)| {
                (
                    self.distinct_public[self.query_order[asked + k]],
                    self.validation_rows[position],
                )
            })
    }
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
pub fn load(config: &RunConfig, rng: &RunRng, started: Instant) -> Result<RunData> {
    super::banner(
        roles_name(
            config,
            "load datasets and SIMULATE the roles (split record by record)",
            "load the private, public, validation and test datasets",
        ),
        started,
    );
    if config.site.is_some() {
        check_site_logs(config)?;
    }
    let mut data = crate::stages::split::load_run_data(config)?;
    if let Some(site) = &config.site {
        derive_site_data(config, site, &mut data, rng)?;
    }
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
        return Err(Error::ConfigKey {
            key: roles_name(config, "split.simulate_from", "datasets").to_string(),
            reason: format!("no requests in {}", files()),
        });
    }
    let has = |label: datasets::Label| {
        splits
            .private
            .iter()
            .any(|&i| records[i].label == Some(label))
    };
    if !has(datasets::Label::Benign) || !has(datasets::Label::Malicious) {
        return Err(Error::ConfigKey {
            key: roles_name(config, "split.simulate_from", "private").to_string(),
            reason: format!(
                "the private data needs both benign and malicious requests, {} has only {}",
                files(),
                if has(datasets::Label::Benign) {
                    "benign ones"
                } else if has(datasets::Label::Malicious) {
                    "malicious ones"
                } else {
                    "unlabelled ones"
                }
            ),
        });
    }
    tracing::info!(
        "{}: {} private, {} public, {} student validation, {} test",
        roles_name(config, "simulated split", "roles"),
        splits.private.len(),
        splits.public.len(),
        splits.student_validation.len(),
        splits.test.len()
    );
    let teachers = config.teachers.count;
    if splits.private.len() < 2 * teachers {
        return Err(Error::key(
            "teachers.count",
            format!(
                "{teachers} teachers need at least {} private requests, the split has {}",
                2 * teachers,
                splits.private.len()
            ),
        ));
    }
    Ok(data)
}

/// `config` with `student.queries` lowered to the public pool's distinct requests under
/// `privacy.mechanism: model_average`, whose labels cost no ε per query (a site's log of unknown
/// size then needs no tuning); other mechanisms keep the count, and [`plan`] refuses too many.
pub fn fit_queries(config: &RunConfig, data: &RunData) -> RunConfig {
    let mut fitted = config.clone();
    let distinct = distinct(&data.records, &data.splits.public).len();
    let free = matches!(
        config.privacy.mechanism,
        privacy::Mechanism::ModelAverage(_)
    );
    if free && distinct < config.student.queries {
        tracing::info!(
            "student.queries: {} asked, the public pool has {distinct} distinct requests: all \
             of them are labelled (model_average: no ε per query)",
            config.student.queries
        );
        fitted.student.queries = distinct;
    }
    fitted
}

/// Draws the queries (`student.query_selection`) and the validation samples from the streams
/// `queries` and `student-validation` of `rng`.
pub fn plan(config: &RunConfig, data: &RunData, rng: &RunRng) -> Result<QueryPlan> {
    let (records, splits) = (&data.records, &data.splits);
    let student = &config.student;
    // Queries and validation samples are DISTINCT requests: asking the teachers the same request
    // again costs privacy budget and teaches the student nothing new (CSIC repeats some requests
    // hundreds of times, and the hash split keeps all copies in one split).
    let distinct_public = crate::stages::split::distinct(records, &splits.public);
    if distinct_public.len() < student.queries {
        return Err(Error::key(
            "student.queries",
            format!(
                "{} queries asked but the public split has only {} distinct requests",
                student.queries,
                distinct_public.len()
            ),
        ));
    }
    let public_multiplicity = crate::stages::split::multiplicities(records, &splits.public);
    // The validation samples first (their own stream): with `student.validation_labels` the
    // draw's requests they hold are labelled by them instead of asked.
    let distinct_validation =
        crate::stages::split::distinct_labelled(records, &splits.student_validation);
    let validation_order: Vec<usize> = crate::rng::shuffled(
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
    let draw = query_draw(student, &public_multiplicity, &mut rng.stream("queries"));
    let validation_position = validation_positions(student, records, &validation_rows);
    let DrawnQueries {
        order: query_order,
        asked,
        known: validation_known,
    } = ask_unknown(&draw, student.queries, |i| {
        validation_position
            .get(&request_hash(&records[distinct_public[i]]))
            .copied()
    });
    if asked < student.queries {
        return Err(Error::key(
            "student.queries",
            format!(
                "{} queries asked but the public split has only {asked} distinct requests the \
                 validation split does not label (student.validation_labels)",
                student.queries
            ),
        ));
    }
    let skipped = asked + validation_known.len();
    let query_rows: Vec<usize> = query_order[..asked]
        .iter()
        .map(|&i| distinct_public[i])
        .collect();
    let pool_rows: Vec<usize> = query_order[skipped..]
        .iter()
        .map(|&i| distinct_public[i])
        .collect();
    // Traffic weights (student.multiplicity_cap): copies of each answered query / validation row.
    let validation_multiplicity =
        crate::stages::split::multiplicities_labelled(records, &splits.student_validation);
    let cap = student.multiplicity_cap.unwrap_or(1);
    let query_copies: Vec<usize> = query_order[..asked]
        .iter()
        .map(|&i| public_multiplicity[i].min(cap))
        .collect();
    let validation_known_copies: Vec<usize> = query_order[asked..skipped]
        .iter()
        .map(|&i| public_multiplicity[i].min(cap))
        .collect();
    let validation_copies: Vec<usize> = validation_order
        .iter()
        .map(|&i| validation_multiplicity[i].min(cap))
        .collect();
    let validation_traffic: Vec<usize> = validation_order
        .iter()
        .map(|&i| validation_multiplicity[i])
        .collect();
    Ok(QueryPlan {
        distinct_public,
        query_order,
        query_rows,
        pool_rows,
        distinct_validation: distinct_validation.len(),
        validation_rows,
        validation_known,
        validation_known_copies,
        public_multiplicity,
        query_copies,
        validation_copies,
        validation_traffic,
    })
}

/// The order the distinct public requests (with these multiplicities) are drawn in, by
/// `student.query_selection`.
fn query_draw(
    student: &crate::config::StudentConfig,
    public_multiplicity: &[usize],
    rng: &mut impl rand::Rng,
) -> Vec<usize> {
    let n = public_multiplicity.len();
    match student.query_selection {
        QuerySelection::Distinct => crate::rng::shuffled(n, rng),
        QuerySelection::Traffic => weighted_sample(public_multiplicity, n, rng),
        QuerySelection::Head => head_then_uniform(
            public_multiplicity,
            (student.head_share * student.queries as f64).round() as usize,
            rng,
        ),
    }
}

/// With `student.validation_labels`, each validation sample's position by its request: a drawn
/// request is known when the validation samples hold the same request — matched by
/// [`request_hash`], the key the draw and the samples are made distinct by. Not by
/// [`record_key`]: that also holds the label, which public traffic in deployment does not have,
/// and the headers, where CSIC gives every copy its own session cookie; either made nothing
/// match. The student trains on the validation sample itself. Empty without the option.
fn validation_positions(
    student: &crate::config::StudentConfig,
    records: &[datasets::Record],
    validation_rows: &[usize],
) -> std::collections::HashMap<[u8; 32], usize> {
    if !student.validation_labels {
        return std::collections::HashMap::new();
    }
    validation_rows
        .iter()
        .enumerate()
        .map(|(position, &i)| (request_hash(&records[i]), position))
        .collect()
}

/// A draw split by [`ask_unknown`].
#[derive(Debug, PartialEq)]
struct DrawnQueries {
    /// The draw reordered: the asked requests, then the known ones, then the rest.
    order: Vec<usize>,
    /// How many are asked (at most `queries`).
    asked: usize,
    /// Each known request's label source (what `known` returned), in draw order.
    known: Vec<usize>,
}

/// Walks `draw` until `queries` requests are to be asked: a request `known` returns a label
/// source for is not asked (no privacy spent on what public data already says) and the walk goes
/// on past it.
fn ask_unknown(
    draw: &[usize],
    queries: usize,
    known: impl Fn(usize) -> Option<usize>,
) -> DrawnQueries {
    let (mut asked, mut known_draws, mut sources, mut rest) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &i in draw {
        if asked.len() == queries {
            rest.push(i);
        } else if let Some(source) = known(i) {
            known_draws.push(i);
            sources.push(source);
        } else {
            asked.push(i);
        }
    }
    let n = asked.len();
    asked.extend(known_draws);
    asked.extend(rest);
    DrawnQueries {
        order: asked,
        asked: n,
        known: sources,
    }
}

/// Writes `splits.json`: the method, the counts and the line of every request in each role.
pub fn write(run: &RunDir, config: &RunConfig, data: &RunData, plan: &QueryPlan) -> Result<()> {
    let (records, splits) = (&data.records, &data.splits);
    let where_from =
        |idx: &[usize]| -> Vec<[usize; 1]> { idx.iter().map(|&i| [records[i].line]).collect() };
    let method = if config.is_simulation() {
        "SIMULATION: the k-th copy of a (request, label) → sha256(\"split\", record key, k) → [0,1) against the cumulative fractions"
    } else {
        "roles: the files under private:, public:, validation: and test:"
    };
    let report = SplitsReport {
        method: method.into(),
        simulation: config.is_simulation(),
        fractions: config.split.as_ref().map(|s| s.fractions()),
        counts: SplitCounts {
            private: splits.private.len(),
            public: splits.public.len(),
            student_validation: splits.student_validation.len(),
            test: splits.test.len(),
            queries: plan.query_rows.len(),
            student_validation_used: plan.validation_rows.len(),
            public_distinct: plan.distinct_public.len(),
            student_validation_distinct: plan.distinct_validation,
        },
        lines: SplitLines {
            private: where_from(&splits.private),
            queries: where_from(&plan.query_rows),
            student_validation: where_from(&plan.validation_rows),
            test: where_from(&splits.test),
        },
    };
    crate::io::write_json(&run.splits(), &report)
}

/// `site:` the validation (and, without a labelled test role, the test) data held out of the
/// site's traffic, taken as benign, with public attack values placed into copies of their
/// requests (`crate::site_traffic`). Public data only.
fn derive_site_data(
    config: &RunConfig,
    site: &crate::config::SiteConfig,
    data: &mut RunData,
    rng: &RunRng,
) -> Result<()> {
    let labelled_test = !data.splits.test.is_empty();
    let dealt = deal_site_traffic(site, data, labelled_test)?;
    let pe = config
        .student
        .public_examples
        .as_ref()
        .expect("validated: site needs public_examples");
    let validation_values: Vec<Vec<u8>> = attack_values(&pe.files)?
        .into_iter()
        .filter(|v| crate::part_model::held_out(v))
        .collect();
    let test_values = attack_values(&site.test_attack_files)?;
    let (held_validation, held_test) = (dealt.validation.len(), dealt.test.len());
    let test = hold_out_traffic(data, dealt);
    add_placed_attacks(
        data,
        Role::Validation,
        (&validation_values, site.validation_attacks),
        &mut rng.stream("site-validation-attacks"),
        &pe.files[0].path,
    );
    if !labelled_test {
        data.splits.test = test;
        add_placed_attacks(
            data,
            Role::Test,
            (&test_values, site.test_attacks),
            &mut rng.stream("site-test-attacks"),
            &site.test_attack_files[0].path,
        );
    }
    tracing::info!(
        "site: {held_validation} requests of the site's traffic held out for validation (+ {} \
         placed attacks from {} held-out attack values), {held_test} for the test, {} stay \
         public",
        data.splits.student_validation.len() - held_validation,
        validation_values.len(),
        data.splits.public.len()
    );
    Ok(())
}

/// Deals the site's traffic (the public split) into what stays public and the held-out
/// validation and test traffic (no test share when the test role is `labelled_test`); too
/// little traffic to hold out from is an error. A simulation logs how many attacks the
/// validation traffic holds.
fn deal_site_traffic(
    site: &crate::config::SiteConfig,
    data: &RunData,
    labelled_test: bool,
) -> Result<crate::site_traffic::Dealt> {
    let test_share = if labelled_test { 0.0 } else { site.test };
    let dealt = match site.holdout {
        crate::config::SiteHoldout::Last => {
            crate::site_traffic::deal_last(&data.splits.public, site.validation, test_share)
        }
        crate::config::SiteHoldout::Hash => crate::site_traffic::deal(
            &data.records,
            record_key,
            &data.splits.public,
            site.validation,
            test_share,
        ),
    };
    if dealt.validation.is_empty() || (!labelled_test && dealt.test.is_empty()) {
        return Err(Error::key(
            "site",
            format!(
                "the site's traffic ({} requests) is too small to hold out validation and test \
                 traffic from",
                data.splits.public.len()
            ),
        ));
    }
    if data.simulation {
        tracing::info!(
            "site: simulation: {} of the {} held-out validation requests are attacks (taken as \
             benign, as in real traffic; the labels are not read)",
            malicious_rows(data, &dealt.validation).len(),
            dealt.validation.len()
        );
    }
    Ok(dealt)
}

/// Moves the `dealt` validation traffic out of the public split into the student's validation
/// split, it and the test traffic relabelled benign (a simulation keeps which validation
/// requests were attacks, `held_out_attacks`); returns the test traffic's rows.
fn hold_out_traffic(data: &mut RunData, dealt: crate::site_traffic::Dealt) -> Vec<usize> {
    if data.simulation {
        data.held_out_attacks = malicious_rows(data, &dealt.validation);
        data.held_out_attacks.sort_unstable();
    }
    for &i in dealt.validation.iter().chain(&dealt.test) {
        data.records[i].label = Some(datasets::Label::Benign);
    }
    data.splits.public = dealt.public;
    data.splits.student_validation = dealt.validation;
    dealt.test
}

/// The rows of `rows` labelled malicious, in the same order.
fn malicious_rows(data: &RunData, rows: &[usize]) -> Vec<usize> {
    rows.iter()
        .copied()
        .filter(|&i| data.records[i].label == Some(datasets::Label::Malicious))
        .collect()
}

/// `count` attacks with values from `values`, each placed into a copy of a request of `rows`.
fn placed_attacks(
    data: &RunData,
    rows: &[usize],
    values: &[Vec<u8>],
    count: usize,
    rng: &mut impl rand::Rng,
) -> Vec<datasets::Record> {
    let templates: Vec<&datasets::Record> = rows.iter().map(|&i| &data.records[i]).collect();
    crate::site_traffic::placed_attacks(&templates, values, count, rng)
}

/// `site:` the site's logs (`public:`, Apache access logs or pate-proxy captures) must stand for
/// its visitors: a file without a request, or one client sending most of the requests, is
/// refused (`datasets::SiteLogSummary::check`); too few requests for the threshold's budget at
/// its confidence is a warning (the threshold then flags none of the held-out traffic).
fn check_site_logs(config: &RunConfig) -> Result<()> {
    for format in [datasets::Format::Apache, datasets::Format::Capture] {
        let paths: Vec<std::path::PathBuf> = config
            .public
            .iter()
            .filter(|d| d.format == format)
            .map(|d| d.path.clone())
            .collect();
        if paths.is_empty() {
            continue;
        }
        let log = datasets::read_site_logs(format, &paths, None)?;
        log.summary.check(0, "")?;
        let student = &config.student;
        let share = config.site.as_ref().map_or(1.0, |s| s.validation);
        let needed = crate::calibrate::min_requests_for_share(
            student.target_fpr,
            student.target_fpr_confidence.unwrap_or(0.5),
        );
        let held_out = (log.summary.requests as f64 * share) as usize;
        if held_out < needed {
            tracing::warn!(
                "site: about {held_out} requests of {} held out for the threshold, fewer than the \
                 {needed} a share of {} at confidence {} needs: the threshold will flag none of \
                 them; give a longer log",
                log.summary.requests,
                student.target_fpr,
                student.target_fpr_confidence.unwrap_or(0.5)
            );
        }
    }
    Ok(())
}

/// Which derived role records join.
enum Role {
    Validation,
    Test,
}

/// `count` of `values` placed into copies of `role`'s requests, added to that split as records
/// of `file`.
fn add_placed_attacks(
    data: &mut RunData,
    role: Role,
    (values, count): (&[Vec<u8>], usize),
    rng: &mut impl rand::Rng,
    file: &std::path::Path,
) {
    let rows = match role {
        Role::Validation => &data.splits.student_validation,
        Role::Test => &data.splits.test,
    };
    let attacks = placed_attacks(data, rows, values, count, rng);
    push_records(data, attacks, file, role);
}

fn push_records(
    data: &mut RunData,
    records: Vec<datasets::Record>,
    file: &std::path::Path,
    role: Role,
) {
    let start = data.records.len();
    data.files
        .extend(std::iter::repeat_n(file.to_owned(), records.len()));
    data.records.extend(records);
    let rows = start..data.records.len();
    match role {
        Role::Validation => data.splits.student_validation.extend(rows),
        Role::Test => data.splits.test.extend(rows),
    }
}

/// The distinct attack values (decoded) of public labelled files.
fn attack_values(sources: &[DatasetSource]) -> Result<Vec<Vec<u8>>> {
    let mut values: Vec<Vec<u8>> = load_datasets(sources)?
        .iter()
        .filter(|r| r.label == Some(datasets::Label::Malicious))
        .map(crate::public_examples::public_value)
        .collect();
    values.sort();
    values.dedup();
    Ok(values)
}

/// Loads every dataset of the config (label override and limit applied). Errors name the file
/// and line; a request without a label is an error (every split needs labels somewhere: the
/// private side for training, validation and test for evaluation).
pub fn load_datasets(sources: &[DatasetSource]) -> Result<Vec<datasets::Record>> {
    load_sources(sources, true)
}

/// [`load_datasets`], with unlabelled requests allowed when `require_labels` is false (the
/// public role: its labels are never read for training).
pub fn load_sources(
    sources: &[DatasetSource],
    require_labels: bool,
) -> Result<Vec<datasets::Record>> {
    let mut all = Vec::new();
    for source in sources {
        let options = datasets::LoadOptions {
            label: source.label,
            label_file: None,
        };
        let mut records = datasets::load_with(source.format, &source.path, &options)?;
        if let Some(limit) = source.limit {
            records.truncate(limit);
        }
        if let Some(r) = records.iter().find(|r| require_labels && r.label.is_none()) {
            return Err(Error::Unlabelled {
                path: source.path.clone(),
                line: r.line,
            });
        }
        tracing::info!(
            "data: {} requests from {} ({})",
            records.len(),
            source.path.display(),
            source.format.name()
        );
        all.extend(records);
    }
    Ok(all)
}

/// sha256 of a request's method, target and body: identical requests hash identically.
pub fn request_hash(r: &datasets::Record) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(r.method.as_bytes());
    h.update([0]);
    h.update(&r.target);
    match &r.body {
        Some(b) => {
            h.update([1]);
            h.update(b);
        }
        None => h.update([0]),
    }
    h.finalize().into()
}

/// sha256 of a private RECORD's whole content: [`request_hash`], every header in order (the
/// featurizer reads them with `placements`) and the label. The teacher partition and the
/// simulated split key on this: the k-th copy of a record goes where `(record_key, k)` says, so
/// only records identical in everything a teacher can see may share a key. Keying copies that
/// differ in their label (issue 13, point 3) or only in a header (a per-session `Cookie`) together
/// let the removal of one copy renumber the others and move several teachers' data.
pub fn record_key(r: &datasets::Record) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"record\0");
    h.update(request_hash(r));
    // Length-prefixed, so that no two header lists hash alike by shifting bytes between fields.
    h.update((r.headers.len() as u64).to_le_bytes());
    for (name, value) in &r.headers {
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value);
    }
    h.update([match r.label {
        None => 0u8,
        Some(datasets::Label::Benign) => 1,
        Some(datasets::Label::Malicious) => 2,
    }]);
    h.finalize().into()
}

/// The key the rows of a labelled split (the student's validation samples, the test's distinct
/// view) are distinct by: a benign request by its request ([`request_hash`]; its copies are
/// traffic and count as copies), an attack whole ([`record_key`]: headers and label too). An
/// attack placed into a header or cookie of a site request keeps that request's line; keyed by
/// request it merged into the benign template's row, one more copy of it in the threshold's
/// traffic, and was missing as an attack.
pub fn labelled_key(r: &datasets::Record) -> [u8; 32] {
    match r.label {
        Some(datasets::Label::Malicious) => record_key(r),
        _ => request_hash(r),
    }
}

/// The first occurrence of each distinct request (by [`request_hash`]) among `indices`, in order.
pub fn distinct(records: &[datasets::Record], indices: &[usize]) -> Vec<usize> {
    distinct_by(records, indices, request_hash)
}

/// [`distinct`] by [`labelled_key`]: the rows of a labelled split.
pub fn distinct_labelled(records: &[datasets::Record], indices: &[usize]) -> Vec<usize> {
    distinct_by(records, indices, labelled_key)
}

fn distinct_by(
    records: &[datasets::Record],
    indices: &[usize],
    key: fn(&datasets::Record) -> [u8; 32],
) -> Vec<usize> {
    let mut seen = std::collections::HashSet::new();
    indices
        .iter()
        .copied()
        .filter(|&i| seen.insert(key(&records[i])))
        .collect()
}

/// Indices of the records in each split.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Splits {
    /// Teachers' private data.
    pub private: Vec<usize>,
    /// Public side (featurizer corpus, student query pool).
    pub public: Vec<usize>,
    /// Labelled public samples for the student's early stopping and threshold.
    pub student_validation: Vec<usize>,
    /// Test samples.
    pub test: Vec<usize>,
}

/// The number in [0, 1) that places the `copy`-th record (k from 0, in load order) with content
/// `key` ([`record_key`]: request and label) in a simulated split: the first 8 bytes of
/// sha256("split" ‖ key ‖ k), little-endian, / 2⁶⁴.
pub fn split_unit(key: &[u8; 32], copy: u64) -> f64 {
    let digest = Sha256::new()
        .chain_update(b"split\0")
        .chain_update(key)
        .chain_update(copy.to_le_bytes())
        .finalize();
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes")) as f64 / 2f64.powi(64)
}

/// The SIMULATION split (`split: {simulate_from: ...}`), record by record: the k-th copy of a
/// (request, label) goes to the split where [`split_unit`] falls against the cumulative
/// fractions. Every record is in exactly one split (so the private role stays disjoint from the
/// others, record by record), the assignment depends only on the data (deterministic, the same in
/// every process), one record more or less moves no other record, and a recurring request — a
/// static page — is spread over private, public, validation and test in proportion, as recurring
/// requests are in real traffic (the earlier split by request text put all of a request's copies
/// in one split, so the test split never held a request the public pool had).
pub fn split_by_record(records: &[datasets::Record], config: &SplitConfig) -> Splits {
    let bounds = [
        config.private,
        config.private + config.public,
        config.private + config.public + config.validation,
    ];
    let mut s = Splits::default();
    let mut copies: std::collections::HashMap<[u8; 32], u64> = std::collections::HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let key = record_key(r);
        let k = copies.entry(key).or_insert(0);
        let u = split_unit(&key, *k);
        *k += 1;
        let bucket = if u < bounds[0] {
            &mut s.private
        } else if u < bounds[1] {
            &mut s.public
        } else if u < bounds[2] {
            &mut s.student_validation
        } else {
            &mut s.test
        };
        bucket.push(i);
    }
    s
}

/// Writes the records `rows` of `data` in CSIC's format into `out` (created), one file per label:
/// `normal.txt`, `anomalous.txt` (the names CSIC's loader labels by) and `unlabeled.txt`, every
/// copy in load order; a label without records has no file (an earlier one is removed). A record
/// the format cannot carry is an error naming its file and line. Returns the count per file name.
pub fn write_csic_by_label(
    data: &RunData,
    rows: &[usize],
    out: &std::path::Path,
) -> Result<Vec<(&'static str, usize)>> {
    let io = |path: &std::path::Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let mut counts = Vec::new();
    for (name, label) in [
        ("normal", Some(datasets::Label::Benign)),
        ("anomalous", Some(datasets::Label::Malicious)),
        ("unlabeled", None),
    ] {
        let mut bytes = Vec::new();
        let mut written = 0usize;
        for &i in rows.iter().filter(|&&i| data.records[i].label == label) {
            // One record at a time, so that an error names the record's own file.
            match datasets::write_csic([&data.records[i]]) {
                Ok(b) => bytes.extend(b),
                Err(datasets::DatasetError::NotWritable { line, problem }) => {
                    return Err(datasets::DatasetError::Parse {
                        path: data.files[i].clone(),
                        line,
                        expected: "a request that CSIC's format can carry".into(),
                        found: problem.into(),
                    }
                    .into())
                }
                Err(e) => return Err(e.into()),
            }
            written += 1;
        }
        let path = out.join(format!("{name}.txt"));
        if written == 0 {
            // A file of an earlier call would otherwise be read as this role's.
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&path)(e)),
                _ => continue,
            }
        }
        crate::io::write_file(&path, &bytes)?;
        counts.push((name, written));
    }
    Ok(counts)
}

/// The records of a run and the role of each.
#[derive(Debug, Clone)]
pub struct RunData {
    /// Every record of every file.
    pub records: Vec<datasets::Record>,
    /// The file of each record (same index as `records`).
    pub files: Vec<std::path::PathBuf>,
    /// Which records play which role.
    pub splits: Splits,
    /// True when the roles are simulated from one pool (`split.simulate_from`).
    pub simulation: bool,
    /// A simulation with `site:`: the held-out validation traffic's attacks (record indices,
    /// sorted), labelled benign there as real traffic is; read only by `site.review`.
    pub held_out_attacks: Vec<usize>,
}

/// Clears the headers of every record when the featurizer does not read them (no
/// `placements`): the teachers then see exactly (request, label), and [`record_key`] — which keys
/// the partition, the copy numbering and the simulated split on everything a record carries —
/// treats copies that differ only in an unread header (CSIC's per-session `Cookie`) as the copies
/// they are to the teachers. With `placements` the headers are read, kept, and keyed.
pub fn drop_unread_headers(
    records: &mut [datasets::Record],
    featurizer: &featurizer::FeaturizerConfig,
) {
    if featurizer.placements.is_none() {
        for r in records {
            r.headers = Vec::new();
        }
    }
}

/// Loads the data of a run: the four roles as configured, or the simulation split of the
/// `split.simulate_from` pool ([`split_by_record`]). Labels are required everywhere except in the
/// public role. The same file (path, or bytes) under `private:` and `public:` is an error naming
/// both entries and the first shared record's line: a record cannot be both protected and public.
pub fn load_run_data(config: &RunConfig) -> Result<RunData> {
    let mut data = RunData {
        records: Vec::new(),
        files: Vec::new(),
        splits: Splits::default(),
        simulation: config.is_simulation(),
        held_out_attacks: Vec::new(),
    };
    let mut add = |sources: &[DatasetSource], labelled: bool| -> Result<Vec<usize>> {
        let mut rows = Vec::new();
        for source in sources {
            let records = load_sources(std::slice::from_ref(source), labelled)?;
            rows.extend(data.records.len()..data.records.len() + records.len());
            data.files
                .extend(std::iter::repeat_n(source.path.clone(), records.len()));
            data.records.extend(records);
        }
        Ok(rows)
    };
    match &config.split {
        Some(simulation) => {
            add(&simulation.simulate_from, true)?;
            drop_unread_headers(&mut data.records, &config.featurizer.config);
            data.splits = split_by_record(&data.records, &simulation.fractions());
            if let Some(share) = simulation.public_attack_share {
                let dropped = crate::site_traffic::thin_attacks(
                    &data.records,
                    record_key,
                    &mut data.splits.public,
                    share,
                );
                tracing::info!(
                    "simulated traffic: {dropped} attacks dropped from the public pool, {:.2} % \
                     of its requests attacks (split.public_attack_share)",
                    100.0 * share
                );
            }
        }
        None => {
            check_roles_distinct(&[
                ("private", &config.private),
                ("public", &config.public),
                ("validation", &config.validation),
                ("test", &config.test),
            ])?;
            data.splits.private = add(&config.private, true)?;
            data.splits.public = add(&config.public, false)?;
            data.splits.student_validation = add(&config.validation, true)?;
            data.splits.test = add(&config.test, true)?;
            drop_unread_headers(&mut data.records, &config.featurizer.config);
        }
    }
    Ok(data)
}

/// A file listed under two roles (by path, or by identical bytes under another name) is
/// refused, whichever two: a private record would be published (public, validation and test
/// data are used and shipped in the clear), and a validation or test record in another role
/// would be evaluated on what trained, or picked the threshold of, the student.
fn check_roles_distinct(roles: &[(&'static str, &Vec<DatasetSource>)]) -> Result<()> {
    let mut seen: Vec<(
        &'static str,
        &DatasetSource,
        Option<std::path::PathBuf>,
        String,
    )> = Vec::new();
    for &(role, sources) in roles {
        for source in sources.iter() {
            let path = std::fs::canonicalize(&source.path).ok();
            let hash = file_sha256(&source.path)?;
            let earlier = seen
                .iter()
                .find(|(r, _, p, h)| *r != role && (*h == hash || (path.is_some() && *p == path)));
            if let Some(&(first_role, first, _, _)) = earlier {
                let line = load_sources(std::slice::from_ref(source), false)?
                    .first()
                    .map_or(1, |r| r.line);
                return Err(Error::FileInTwoRoles {
                    first_role,
                    first: first.path.clone(),
                    second_role: role,
                    second: source.path.clone(),
                    line,
                });
            }
            seen.push((role, source, path, hash));
        }
    }
    Ok(())
}

/// How many times each distinct request (by [`request_hash`]) occurs among `indices`, in the
/// order of [`distinct`]`(records, indices)`.
pub fn multiplicities(records: &[datasets::Record], indices: &[usize]) -> Vec<usize> {
    multiplicities_by(records, indices, request_hash)
}

/// [`multiplicities`] by [`labelled_key`], in the order of [`distinct_labelled`].
pub fn multiplicities_labelled(records: &[datasets::Record], indices: &[usize]) -> Vec<usize> {
    multiplicities_by(records, indices, labelled_key)
}

fn multiplicities_by(
    records: &[datasets::Record],
    indices: &[usize],
    key: fn(&datasets::Record) -> [u8; 32],
) -> Vec<usize> {
    let mut position: std::collections::HashMap<[u8; 32], usize> = std::collections::HashMap::new();
    let mut counts: Vec<usize> = Vec::new();
    for &i in indices {
        let h = key(&records[i]);
        match position.get(&h) {
            Some(&k) => counts[k] += 1,
            None => {
                position.insert(h, counts.len());
                counts.push(1);
            }
        }
    }
    counts
}

/// Draws `k` of `weights.len()` items without replacement, each draw proportional to the weight
/// among the items not drawn yet (successive sampling, Efraimidis & Spirakis 2006, "Weighted
/// random sampling with a reservoir": key `u^(1/w)`, keep the `k` largest keys). Returns item
/// indices in draw order (largest key first).
pub fn weighted_sample(weights: &[usize], k: usize, rng: &mut impl rand::Rng) -> Vec<usize> {
    use rand::RngExt;
    let mut keyed: Vec<(f64, usize)> = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            // ln(u)/w orders like u^(1/w) and does not underflow; u in (0, 1].
            let u: f64 = 1.0 - rng.random_range(0.0..1.0);
            (u.ln() / w.max(1) as f64, i)
        })
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    keyed.into_iter().take(k).map(|(_, i)| i).collect()
}

/// A query order (a permutation of the distinct public requests) for `query_selection: head`:
/// the `head` requests with the highest public multiplicity first (ties in random order), then
/// every other request in uniformly random order. The multiplicities are public.
pub fn head_then_uniform(
    multiplicities: &[usize],
    head: usize,
    rng: &mut impl rand::Rng,
) -> Vec<usize> {
    let mut order = crate::rng::shuffled(multiplicities.len(), rng);
    // Stable sort of a random permutation: ties stay in random order.
    order.sort_by(|&a, &b| multiplicities[b].cmp(&multiplicities[a]));
    let head = head.min(order.len());
    let mut tail = order.split_off(head);
    let perm = crate::rng::shuffled(tail.len(), rng);
    let shuffled_tail: Vec<usize> = perm.iter().map(|&k| tail[k]).collect();
    tail.clear();
    order.extend(shuffled_tail);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `student.validation_labels`: a drawn request the validation samples hold is not asked
    /// and the walk goes on past it, so that as many queries are asked as without; known
    /// requests after the last query stay in the rest (the unlabelled pool).
    #[test]
    fn known_requests_are_not_asked_and_the_draw_goes_on() {
        // Draw 0..8; requests 1, 2 and 6 are known (label sources 10, 20, 60).
        let known = |i: usize| [1, 2, 6].contains(&i).then_some(i * 10);
        let drawn = ask_unknown(&[0, 1, 2, 3, 4, 5, 6, 7], 3, known);
        assert_eq!(
            drawn,
            DrawnQueries {
                order: vec![0, 3, 4, 1, 2, 5, 6, 7],
                asked: 3,
                known: vec![10, 20],
            }
        );
        // Nothing known: the draw as it was.
        let plain = ask_unknown(&[4, 2, 0], 2, |_| None);
        assert_eq!((plain.order, plain.asked), (vec![4, 2, 0], 2));
        // Too few unknown requests: fewer asked, the caller refuses.
        assert_eq!(ask_unknown(&[1, 2, 3], 2, known).asked, 1);
    }
}
