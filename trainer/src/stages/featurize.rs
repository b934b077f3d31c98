//! Stage 2, `featurize`: fit the featurizer (on the public side by default) and turn every
//! record a later stage reads into dense features.
use std::path::PathBuf;
use std::sync::Arc;

use featurizer::Featurizer;

use crate::config::{FitOn, RunConfig};
use crate::dense::DenseMatrix;
use crate::ensemble::LabeledRows;
use crate::error::{Error, Result};
use crate::pipeline::{self, RunData, Splits};
use crate::rundir::{sets, RunDir, PUBLIC_POOL_SET};

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
    /// The queries (original features).
    pub queries_x: DenseMatrix,
    /// The queries' public-side labels where known (diagnostic only; never trained on).
    pub queries_y: Vec<Option<bool>>,
    /// The unlabelled public pool (only with self-training).
    pub pool_x: Option<DenseMatrix>,
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

/// Fits the featurizer of `config` on `records[rows]` (warning loudly when the rows are private).
pub fn fit(config: &RunConfig, records: &[datasets::Record], rows: &[usize]) -> Result<Featurizer> {
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
            })
            .collect(),
    };
    if !browsers.is_empty() {
        tracing::info!(
            "featurizer: the headers of {} real browsers are known values",
            browsers.len()
        );
    }
    Ok(Featurizer::fit_with_known_headers(
        config.featurizer.config.clone(),
        rows.iter().map(|&i| records[i].parts()),
        browsers.iter().map(|r| r.parts()),
    )?)
}

fn labelled(f: &Featurizer, records: &[datasets::Record], rows: &[usize]) -> Result<LabeledRows> {
    Ok(LabeledRows {
        x: pipeline::featurize_rows(f, records, rows),
        y: pipeline::labels_of(records, rows)?,
    })
}

/// Featurizes the teachers' private rows and the test split.
pub fn shared(config: &RunConfig, featurizer: Featurizer, data: &RunData) -> Result<Shared> {
    let records = &data.records;
    let private_rows =
        pipeline::teacher_rows(records, &data.splits.private, config.teachers.weighting());
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
    let validation = labelled(featurizer, records, &plan.validation_rows)?;
    // The public role's labels are never read for training: the queries may be unlabelled. Where
    // they are labelled, the labels only feed the report's agreement diagnostic.
    let queries_x = pipeline::featurize_rows(featurizer, records, &plan.query_rows);
    let queries_y = plan
        .query_rows
        .iter()
        .map(|&i| records[i].label.map(|l| l == datasets::Label::Malicious))
        .collect();
    let pool_x = (config.student.self_training.rounds > 0)
        .then(|| pipeline::featurize_rows(featurizer, records, &plan.pool_rows));
    Ok(Features {
        shared,
        validation,
        queries_x,
        queries_y,
        pool_x,
    })
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
        pipeline::write_matrix(&run.features(set), &rows.x)?;
        let labels: Vec<Option<bool>> = rows.y.iter().map(|&l| Some(l)).collect();
        pipeline::write_labels(&run.labels(set), &labels)?;
        written.extend([run.features(set), run.labels(set)]);
    }
    pipeline::write_matrix(&run.features(sets::QUERIES), &f.queries_x)?;
    pipeline::write_labels(&run.labels(sets::QUERIES), &f.queries_y)?;
    written.extend([run.features(sets::QUERIES), run.labels(sets::QUERIES)]);
    if let Some(x) = &f.pool_x {
        pipeline::write_matrix(&run.features(PUBLIC_POOL_SET), x)?;
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
