//! Stage 2, `featurize`: fit the featurizer (on the public side by default) and turn every
//! record a later stage reads into dense features.
use std::path::PathBuf;
use std::sync::Arc;

use featurizer::Featurizer;

use crate::config::{FitOn, RarityOn, RunConfig};
use crate::dense::DenseMatrix;
use crate::ensemble::LabeledRows;
use crate::error::{Error, Result};
use crate::rundir::{sets, RunDir, PUBLIC_POOL_SET};
use crate::stages::split::{RunData, Splits};

use super::split::QueryPlan;

/// The warning put in the report when the featurizer was fitted on the private data.
pub const PRIVATE_FEATURIZER_WARNING: &str = "WARNING: the featurizer's vocabulary and IDF were fitted on the \
teachers' PRIVATE data (featurizer.fit_on: private). The vocabulary reveals which tokens the private requests \
contain and no PATE bound covers that: the epsilons below do NOT account for it. Fit on the public side \
(fit_on: public, the default) for the stated guarantee to hold.";

/// The featurized sets that do not depend on the student's draws: the featurizer, the teachers'
/// private data and the test split (shared by every sweep cell on the same data).
pub struct Shared {
    /// The fitted featurizer.
    pub featurizer: Featurizer,
    /// Its content hash (recorded in every model).
    pub hash: String,
    /// The private records the teachers learn from (`teachers.multiplicity`), record indices;
    /// row k of `private` is record `private_rows[k]`.
    pub private_rows: Vec<usize>,
    /// The teachers' private data.
    pub private: LabeledRows,
    /// The test split.
    pub test: LabeledRows,
}

/// The featurized sets of a run: [`Shared`] (also reachable through `Deref`) and the student's
/// side.
pub struct Features {
    /// The featurizer, the private data and the test split.
    pub shared: Arc<Shared>,
    /// The student's validation samples.
    pub validation: LabeledRows,
    /// Each validation sample's copies in the traffic the thresholds' budgets are a share of:
    /// `plan.validation_traffic`, and 0 for a request of the site's traffic a public detector
    /// calls an attack (`site.threshold_without_known_attacks`).
    pub validation_traffic: Vec<usize>,
    /// Each validation sample of the site's traffic a public detector calls an attack (with
    /// `site.threshold_without_known_attacks`; all false otherwise): not a template of the
    /// placed examples.
    pub validation_known_attack: Vec<bool>,
    /// The queries (original features).
    pub queries_x: DenseMatrix,
    /// The queries' public-side labels where known (diagnostic only; never trained on).
    pub queries_y: Vec<Option<bool>>,
    /// The unlabelled public pool (only with self-training).
    pub pool_x: Option<DenseMatrix>,
    /// With `featurizer.rarity_on: validation_benign`, the featurizers the validation samples
    /// were featurized with (each its fold's); `None` otherwise.
    pub validation_folds: Option<ValidationFolds>,
}

impl std::ops::Deref for Features {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// The rows the featurizer is fitted on (`featurizer.fit_on`).
pub fn fit_rows<'a>(config: &RunConfig, splits: &'a Splits) -> &'a [usize] {
    match config.featurizer.fit_on {
        FitOn::Public => &splits.public,
        FitOn::Private => &splits.private,
    }
}

/// The banner of the fit.
pub fn fit_banner(config: &RunConfig, rows: usize) -> String {
    format!(
        "fit the featurizer on {rows} {} requests",
        match config.featurizer.fit_on {
            FitOn::Public => "public",
            FitOn::Private => "PRIVATE",
        }
    )
}

/// Fits the featurizer of `config` on its [`fit_rows`] of `data` (warning loudly when the rows
/// are private), its rarity table counted where `featurizer.rarity_on` says.
pub fn fit(config: &RunConfig, data: &RunData) -> Result<Featurizer> {
    let (records, rows) = (&data.records, fit_rows(config, &data.splits));
    if matches!(config.featurizer.fit_on, FitOn::Private) {
        tracing::warn!("\n{PRIVATE_FEATURIZER_WARNING}\n");
    }
    // `featurizer.known_browsers`: one request per browser carrying every header it may send.
    let browsers: Vec<datasets::Record> = match &config.featurizer.known_browsers {
        None => Vec::new(),
        Some(path) => crate::public_examples::load_user_agents(path)?
            .iter()
            .filter(|ua| crate::public_examples::is_known_browser(ua))
            .map(|ua| datasets::Record {
                method: "GET".into(),
                target: b"/".to_vec(),
                body: None,
                headers: crate::public_examples::browser_headers(ua),
                label: None,
                line: 0,
                client: None,
            })
            .collect(),
    };
    if !browsers.is_empty() {
        tracing::info!(
            "featurizer: the headers of {} real browsers are known values",
            browsers.len()
        );
    }
    let fitted = Featurizer::fit_with_known_headers(
        config.featurizer.config.clone(),
        rows.iter().map(|&i| records[i].parts()),
        browsers.iter().map(|r| r.parts()),
    )?;
    match config.featurizer.rarity_on {
        RarityOn::FitOn => Ok(fitted),
        RarityOn::ValidationBenign => {
            let benign = validation_benign(data);
            if benign.is_empty() {
                return Err(Error::key(
                    "featurizer.rarity_on",
                    "validation_benign: the validation split holds no benign request to count"
                        .to_string(),
                ));
            }
            tracing::info!(
                "featurizer: the rarity table counts the {} benign validation requests",
                benign.len()
            );
            Ok(fitted.with_rarity_by_client(
                benign.iter().map(|(_, r)| (r.parts(), r.client.as_deref())),
                config.requests_per_client(),
            )?)
        }
    }
}

fn labelled(f: &Featurizer, records: &[datasets::Record], rows: &[usize]) -> Result<LabeledRows> {
    Ok(LabeledRows {
        x: crate::stages::featurize::featurize_rows(f, records, rows),
        y: crate::stages::featurize::labels_of(records, rows)?,
    })
}

/// Featurizes the teachers' private rows and the test split.
pub fn shared(config: &RunConfig, featurizer: Featurizer, data: &RunData) -> Result<Shared> {
    let records = &data.records;
    let private_rows =
        crate::teachers::teacher_rows(records, &data.splits.private, config.teachers.weighting());
    let private = labelled(&featurizer, records, &private_rows)?;
    let test = labelled(&featurizer, records, &data.splits.test)?;
    Ok(Shared {
        hash: featurizer.content_hash().to_string(),
        featurizer,
        private_rows,
        private,
        test,
    })
}

/// Featurizes the student's side of `plan`: the validation samples, the queries and (with
/// self-training) the unlabelled public pool.
pub fn student_side(
    config: &RunConfig,
    shared: Arc<Shared>,
    data: &RunData,
    plan: &QueryPlan,
) -> Result<Features> {
    let records = &data.records;
    let featurizer = &shared.featurizer;
    let validation_folds = ValidationFolds::new(config, featurizer, data)?;
    let validation = match &validation_folds {
        None => labelled(featurizer, records, &plan.validation_rows)?,
        Some(folds) => LabeledRows {
            x: folds.featurize(records, &plan.validation_rows),
            y: crate::stages::featurize::labels_of(records, &plan.validation_rows)?,
        },
    };
    // The public role's labels are never read for training: the queries may be unlabelled. Where
    // they are labelled, the labels only feed the report's agreement diagnostic.
    let queries_x = crate::stages::featurize::featurize_rows(featurizer, records, &plan.query_rows);
    let queries_y = plan
        .query_rows
        .iter()
        .map(|&i| records[i].label.map(|l| l == datasets::Label::Malicious))
        .collect();
    let pool_x = (config.student.self_training.rounds > 0)
        .then(|| crate::stages::featurize::featurize_rows(featurizer, records, &plan.pool_rows));
    let validation_known_attack = known_attacks(config, featurizer, (data, plan), &validation.x);
    let validation_traffic = threshold_traffic(&plan.validation_traffic, &validation_known_attack);
    Ok(Features {
        shared,
        validation,
        validation_traffic,
        validation_known_attack,
        queries_x,
        queries_y,
        pool_x,
        validation_folds,
    })
}

/// How many folds the validation split's records are dealt into with `featurizer.rarity_on:
/// validation_benign`: each validation request is scored with the table of the other nine tenths,
/// close to the served table's counts (with five folds by request, one fresh CSIC run's threshold
/// stood at 0.60 and caught 96.5 % of the test attacks at 0.75 % FPR where its ROC gave 98.3 % at
/// FPR ≤ 1 %; EVALUATION.md, "The rarity table on known-benign requests").
pub const VALIDATION_FOLDS: usize = 10;

/// With `featurizer.rarity_on: validation_benign` the rarity table counts the validation split's
/// benign requests, and a validation request scored with it would be counted in the very table
/// that judges its formats (its own value never rare): the threshold, chosen on those scores,
/// would be lower than new traffic needs. So each validation request is scored with the table
/// counted WITHOUT its fold. The folds deal RECORDS, as the split does (its k-th copy by
/// position in the split): a test request is judged by a table that holds the other copies of a
/// page the site serves often but never the request itself when it is new, and a validation
/// request so too — its record's fold left out, its other copies mostly counted. Folds by
/// request left every copy of a frequent page out of its own table.
pub struct ValidationFolds {
    /// Per fold, the featurizer whose table counts every other fold's benign records.
    featurizers: Vec<Featurizer>,
    /// The fold of each validation record (record index → fold).
    fold_of: std::collections::HashMap<usize, usize>,
}

impl ValidationFolds {
    /// The folds of `config`'s validation split (`None` unless `featurizer.rarity_on` is
    /// `validation_benign`); `featurizer` is the run's (its vocabulary is kept).
    pub fn new(
        config: &RunConfig,
        featurizer: &Featurizer,
        data: &RunData,
    ) -> Result<Option<Self>> {
        if config.featurizer.rarity_on != RarityOn::ValidationBenign {
            return Ok(None);
        }
        let fold_of: std::collections::HashMap<usize, usize> = data
            .splits
            .student_validation
            .iter()
            .enumerate()
            .map(|(position, &i)| (i, position % VALIDATION_FOLDS))
            .collect();
        let benign = validation_benign(data);
        let featurizers = (0..VALIDATION_FOLDS)
            .map(|k| {
                let others: Vec<&datasets::Record> = benign
                    .iter()
                    .filter(|&&(i, _)| fold_of[&i] != k)
                    .map(|&(_, r)| r)
                    .collect();
                if others.is_empty() {
                    // Every benign validation record is in this fold (a tiny split): its
                    // requests are scored with the served table, as the rest is.
                    return Ok(featurizer.clone());
                }
                Ok(featurizer.with_rarity_by_client(
                    others.iter().map(|r| (r.parts(), r.client.as_deref())),
                    config.requests_per_client(),
                )?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(ValidationFolds {
            featurizers,
            fold_of,
        }))
    }

    /// The fold of validation record `i` (a record index; 0 for a record outside the split).
    pub fn fold(&self, i: usize) -> usize {
        self.fold_of.get(&i).copied().unwrap_or(0)
    }

    /// The featurizer fold `k`'s records are scored with.
    pub fn featurizer(&self, k: usize) -> &Featurizer {
        &self.featurizers[k]
    }

    /// The dense features of `records[indices]` (validation records), each with its fold's
    /// featurizer.
    pub fn featurize(&self, records: &[datasets::Record], indices: &[usize]) -> DenseMatrix {
        let dim = self.featurizers[0].dim();
        let mut values = vec![0f32; indices.len() * dim];
        for (row, &i) in indices.iter().enumerate() {
            self.featurizers[self.fold(i)]
                .transform(&records[i].parts())
                .write_dense(&mut values[row * dim..(row + 1) * dim]);
        }
        DenseMatrix {
            rows: indices.len(),
            cols: dim,
            values,
        }
    }
}

/// The validation split's benign records (what `rarity_on: validation_benign` counts).
/// (record index, record) of each.
fn validation_benign(data: &RunData) -> Vec<(usize, &datasets::Record)> {
    data.splits
        .student_validation
        .iter()
        .map(|&i| (i, &data.records[i]))
        .filter(|(_, r)| r.label == Some(datasets::Label::Benign))
        .collect()
}

/// Featurizes every set of a run ([`shared`] and [`student_side`]).
pub fn featurize(
    config: &RunConfig,
    featurizer: Featurizer,
    data: &RunData,
    plan: &QueryPlan,
) -> Result<Features> {
    let shared = Arc::new(shared(config, featurizer, data)?);
    student_side(config, shared, data, plan)
}

/// [`Features::validation_known_attack`]: the site's validation requests a public detector
/// calls an attack (in any part, as the featurizer reads it: its libinjection and signature
/// features in `validation_x`, one row per `plan.validation_rows`), with
/// `site.threshold_without_known_attacks`. They leave the thresholds' traffic
/// ([`Features::validation_traffic`]) and the placed examples' templates. Public knowledge, no ε:
/// a scanner's burst in the log would otherwise spend the budget and lift the threshold above the
/// attacks it is made of.
fn known_attacks(
    config: &RunConfig,
    featurizer: &Featurizer,
    (data, plan): (&RunData, &QueryPlan),
    validation_x: &DenseMatrix,
) -> Vec<bool> {
    let on = config
        .site
        .as_ref()
        .is_some_and(|s| s.threshold_without_known_attacks);
    let detectors: Vec<usize> = featurizer::LIBINJECTION_FEATURES
        .iter()
        .chain(&featurizer::SIGNATURE_FEATURES)
        .filter_map(|body| {
            let name = format!("{}{body}", featurizer::PLACEMENT_PREFIX);
            featurizer.vocabulary().iter().position(|t| *t == name)
        })
        .collect();
    plan.validation_rows
        .iter()
        .enumerate()
        .map(|(r, &i)| {
            on && data.records[i].label == Some(datasets::Label::Benign)
                && detectors.iter().any(|&k| validation_x.row(r)[k] != 0.0)
        })
        .collect()
}

/// [`Features::validation_traffic`]: `traffic` (copies per validation row) without the rows
/// `known` calls attacks (logged).
fn threshold_traffic(traffic: &[usize], known: &[bool]) -> Vec<usize> {
    let kept: Vec<usize> = traffic
        .iter()
        .zip(known)
        .map(|(&copies, &k)| if k { 0 } else { copies })
        .collect();
    if known.contains(&true) {
        tracing::info!(
            "site: {} validation requests libinjection or a signature calls an attack are left \
             out of the thresholds' traffic",
            traffic.iter().sum::<usize>() - kept.iter().sum::<usize>()
        );
    }
    kept
}

impl Features {
    /// The student's validation samples and the test split need both classes.
    pub fn check_evaluation_classes(&self) -> Result<()> {
        for (what, y) in [
            ("student validation", &self.validation.y),
            ("test", &self.test.y),
        ] {
            if !y.contains(&true) || !y.contains(&false) {
                return Err(Error::SplitClasses { split: what });
            }
        }
        Ok(())
    }
}

/// Writes `features/*.f32` and `features/*.labels`; returns the files written.
pub fn write(run: &RunDir, f: &Features) -> Result<Vec<PathBuf>> {
    let mut written = vec![run.featurizer()];
    for (set, rows) in [
        (sets::PRIVATE, &f.private),
        (sets::STUDENT_VALIDATION, &f.validation),
        (sets::TEST, &f.test),
    ] {
        crate::io::write_matrix(&run.features(set), &rows.x)?;
        let labels: Vec<Option<bool>> = rows.y.iter().map(|&l| Some(l)).collect();
        crate::io::write_labels(&run.labels(set), &labels)?;
        written.extend([run.features(set), run.labels(set)]);
    }
    crate::io::write_matrix(&run.features(sets::QUERIES), &f.queries_x)?;
    crate::io::write_labels(&run.labels(sets::QUERIES), &f.queries_y)?;
    written.extend([run.features(sets::QUERIES), run.labels(sets::QUERIES)]);
    if let Some(x) = &f.pool_x {
        crate::io::write_matrix(&run.features(PUBLIC_POOL_SET), x)?;
        written.push(run.features(PUBLIC_POOL_SET));
    }
    Ok(written)
}

/// The dense features of `records[indices]`.
pub fn featurize_rows(
    f: &featurizer::Featurizer,
    records: &[datasets::Record],
    indices: &[usize],
) -> DenseMatrix {
    let dim = f.dim();
    let mut values = vec![0f32; indices.len() * dim];
    for (row, &i) in indices.iter().enumerate() {
        f.transform(&records[i].parts())
            .write_dense(&mut values[row * dim..(row + 1) * dim]);
    }
    DenseMatrix {
        rows: indices.len(),
        cols: dim,
        values,
    }
}

/// Labels of `records[indices]` (true = malicious); an unlabelled record is an error.
pub fn labels_of(records: &[datasets::Record], indices: &[usize]) -> Result<Vec<bool>> {
    indices
        .iter()
        .map(|&i| match records[i].label {
            Some(l) => Ok(l == datasets::Label::Malicious),
            None => Err(Error::UnlabelledRecord {
                line: records[i].line,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::split::Splits;

    fn record(target: &str, label: datasets::Label) -> datasets::Record {
        datasets::Record::get(target, Some(label))
    }

    /// A site run's config: CSIC-format private logs, an Apache log as the site's traffic, with
    /// `site` and `featurizer` the settings given.
    fn site_config(site: &str, featurizer: &str) -> RunConfig {
        RunConfig::parse(&format!(
            "private: [{{path: a.txt, format: csic, label: benign}}]\n\
             public: [{{path: b.log, format: apache}}]\n\
             student: {{public_examples: {{files: [{{path: p.csv, format: httpparams}}]}}}}\n\
             site: {{{site}, test_attack_files: [{{path: t.csv, format: httpparams}}]}}\n\
             featurizer: {featurizer}\n"
        ))
        .unwrap()
    }

    /// A site run's data: `records` of one log, split as `splits`.
    fn site_data(records: Vec<datasets::Record>, splits: Splits) -> RunData {
        RunData {
            files: vec![std::path::PathBuf::from("b.log"); records.len()],
            records,
            splits,
            simulation: false,
            held_out_attacks: Vec::new(),
        }
    }

    /// `rarity_on: validation_benign`: the served table counts the validation split's benign
    /// records — not the public pool, not the private split, not a validation attack — and each validation record is
    /// featurized with the table of the other folds: a request seen once is unseen there, one
    /// the split holds in many copies is still counted (its other copies).
    #[test]
    fn the_validation_benign_table_never_counts_a_validation_record_for_its_own_score() {
        let config = RunConfig::parse(
            "split: {simulate_from: [{path: a.txt, format: csic}]}\n\
             featurizer: {fit_on: public, rarity_on: validation_benign, \
             config: {params: true, rarity_min_count: 3, top_k: 500}}\n",
        )
        .unwrap();
        let mut records = Vec::new();
        let mut splits = Splits::default();
        let mut add = |target: &str, label, copies: usize, to: &mut Vec<usize>| {
            for _ in 0..copies {
                to.push(records.len());
                records.push(record(target, label));
            }
        };
        use datasets::Label::{Benign, Malicious};
        // A frequent page (30 copies) and 20 pages seen 3 times each, interleaved as traffic.
        for p in 0..20 {
            add("/index", Benign, 1, &mut splits.student_validation);
            add(&format!("/p{p}"), Benign, 3, &mut splits.student_validation);
        }
        add("/index", Benign, 10, &mut splits.student_validation);
        add("/evil", Malicious, 3, &mut splits.student_validation);
        add("/pub", Benign, 3, &mut splits.public);
        add("/private", Benign, 3, &mut splits.private);
        let data = RunData {
            files: vec![std::path::PathBuf::from("a.txt"); records.len()],
            records,
            splits,
            simulation: true,
            held_out_attacks: Vec::new(),
        };
        let served = fit(&config, &data).unwrap();
        let unseen = served.unseen_path_index().expect("format checks");
        let is_unseen = |f: &Featurizer, target: &str| {
            f.transform(&record(target, Benign).parts())
                .indices
                .contains(&unseen)
        };
        assert!(!is_unseen(&served, "/p0"));
        assert!(!is_unseen(&served, "/index"));
        assert!(is_unseen(&served, "/pub"), "the public pool is not counted");
        assert!(
            is_unseen(&served, "/private"),
            "the private split is never counted (the table travels in the bundle)"
        );
        assert!(
            is_unseen(&served, "/evil"),
            "a validation attack is not counted"
        );
        let folds = ValidationFolds::new(&config, &served, &data)
            .unwrap()
            .expect("folds");
        let validation = &data.splits.student_validation;
        for &i in validation {
            let target = String::from_utf8(data.records[i].target.clone()).unwrap();
            let f = folds.featurizer(folds.fold(i));
            // Its own record is never counted: a path the table holds only 3 times (this record
            // among them) is < 3 without it; the frequent page keeps its other copies.
            match target.as_str() {
                "/index" => assert!(!is_unseen(f, "/index")),
                "/evil" => {}
                t => {
                    let copies_elsewhere = validation
                        .iter()
                        .filter(|&&j| j != i && data.records[j].target == data.records[i].target)
                        .filter(|&&j| folds.fold(j) != folds.fold(i))
                        .count();
                    assert_eq!(is_unseen(f, t), copies_elsewhere < 3, "{t}");
                    assert!(is_unseen(f, t), "{t}: 3 copies, one of them its own");
                }
            }
        }
        // The featurized validation rows are each its fold's.
        let first_p0 = validation[1];
        let x = folds.featurize(&data.records, &[first_p0]);
        assert!(x.values[unseen as usize] > 0.0);
        // Off: no folds.
        let off = RunConfig::parse(
            "split: {simulate_from: [{path: a.txt, format: csic}]}\n\
             featurizer: {rarity_on: fit_on, config: {params: true, rarity_min_count: 3, top_k: 500}}\n",
        )
        .unwrap();
        assert!(ValidationFolds::new(&off, &served, &data)
            .unwrap()
            .is_none());
    }

    /// `site.threshold_without_known_attacks`: a request of the site's validation traffic that
    /// libinjection calls SQL injection or XSS, or a signature calls a path traversal (in a
    /// query value, a header...), leaves the thresholds' traffic; an ordinary one and a placed
    /// attack (labelled malicious) keep their copies; off, nothing leaves.
    #[test]
    fn the_site_traffic_a_public_detector_calls_an_attack_leaves_the_thresholds_traffic() {
        use datasets::Label::{Benign, Malicious};
        let config = |on: bool| {
            site_config(
                &format!("threshold_without_known_attacks: {on}"),
                "{config: {placements: {}, libinjection: true, signatures: true, top_k: 500}}",
            )
        };
        let records = vec![
            record("/blog/post.html?page=2", Benign),
            record("/?page=1%27%20or%201%3D1--", Benign),
            record("/?q=%3Cscript%3Ealert(1)%3C/script%3E", Benign),
            record("/?page=1%27%20or%202%3D2--", Malicious),
            record("/about", Benign),
            record("/?file=..%2F..%2F..%2Fetc%2Fhosts", Benign),
        ];
        let splits = Splits {
            public: vec![0, 4],
            student_validation: vec![0, 1, 2, 3, 5],
            ..Default::default()
        };
        let data = site_data(records, splits);
        let plan = QueryPlan {
            distinct_public: Vec::new(),
            query_order: Vec::new(),
            query_rows: Vec::new(),
            pool_rows: Vec::new(),
            distinct_validation: 5,
            validation_rows: vec![0, 1, 2, 3, 5],
            validation_known: Vec::new(),
            validation_known_copies: Vec::new(),
            public_multiplicity: Vec::new(),
            query_copies: Vec::new(),
            validation_copies: vec![1; 5],
            validation_traffic: vec![3, 2, 1, 1, 2],
        };
        let featurizer = Featurizer::fit(
            config(true).featurizer.config.clone(),
            data.records.iter().map(|r| r.parts()),
        )
        .unwrap();
        let x = featurize_rows(&featurizer, &data.records, &plan.validation_rows);
        let known = known_attacks(&config(true), &featurizer, (&data, &plan), &x);
        assert_eq!(known, [false, true, true, false, true]);
        assert_eq!(
            threshold_traffic(&plan.validation_traffic, &known),
            [3, 0, 0, 1, 0]
        );
        let off = known_attacks(&config(false), &featurizer, (&data, &plan), &x);
        assert_eq!(
            threshold_traffic(&plan.validation_traffic, &off),
            [3, 2, 1, 1, 2]
        );
    }

    /// `site.requests_per_client`: the site's format model counts the validation traffic by
    /// client, each at most k times per path or value: a scanner's path it requested 10 times is
    /// still unseen at k = 2 (needs 3), seen when every request counts; a path 3 clients asked
    /// for is seen either way.
    #[test]
    fn the_site_format_model_counts_each_client_a_few_times() {
        use datasets::Label::Benign;
        let config = |k: &str| {
            site_config(
                &format!("requests_per_client: {k}"),
                "{rarity_on: validation_benign, \
                 config: {params: true, rarity_min_count: 3, top_k: 500}}",
            )
        };
        let from = |target: &str, client: &str| datasets::Record {
            client: Some(client.to_owned()),
            ..record(target, Benign)
        };
        let mut records: Vec<datasets::Record> =
            (0..10).map(|_| from("/admin.bak", "scanner")).collect();
        records.extend(["a", "b", "c"].map(|c| from("/index", c)));
        records.push(from("/pub", "a"));
        let splits = Splits {
            public: vec![records.len() - 1],
            student_validation: (0..records.len() - 1).collect(),
            ..Default::default()
        };
        let data = site_data(records, splits);
        let unseen = |k: &str, target: &str| {
            let f = fit(&config(k), &data).unwrap();
            let unseen = f.unseen_path_index().expect("format checks");
            f.transform(&record(target, Benign).parts())
                .indices
                .contains(&unseen)
        };
        assert!(unseen("2", "/admin.bak"));
        assert!(!unseen("null", "/admin.bak"));
        assert!(!unseen("2", "/index") && !unseen("null", "/index"));
    }
}
