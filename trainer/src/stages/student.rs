//! Stage 6, `student`: train the student on the ORIGINAL features of the answered queries with
//! their noisy labels (plus, optionally, public labelled examples, self-training on the
//! unlabelled public pool, traffic weights and a threshold rule: the `student:` options).
use crate::config::RunConfig;
use crate::dense::DenseMatrix;
use crate::ensemble::LabeledRows;
use crate::error::{Error, Result};
use crate::model_file::ModelFile;
use crate::pipeline::{self, RunData, RunRng, StudentExtras};

use super::featurize::Features;
use super::split::QueryPlan;
use super::Env;

/// The trained student and what went into it.
pub struct Student {
    /// The student.
    pub model: ModelFile,
    /// What the `student:` options did.
    pub extras: StudentExtras,
    /// The answered queries (indices into the queries).
    pub answered: Vec<usize>,
    /// Share of answered labelled queries whose noisy label equals the public-side label.
    pub label_agreement: Option<f64>,
    /// Public labelled examples added (`student.public_examples`).
    pub public_examples: usize,
}

/// Share of the answered queries with a known label whose noisy label equals it.
pub fn label_agreement(labels: &[Option<bool>], truth: &[Option<bool>]) -> Option<f64> {
    let known: Vec<usize> = (0..labels.len())
        .filter(|&i| labels[i].is_some() && truth[i].is_some())
        .collect();
    (!known.is_empty()).then(|| {
        known.iter().filter(|&&i| labels[i] == truth[i]).count() as f64 / known.len() as f64
    })
}

/// `student.public_examples`: public attacks placed into the site's public request shapes and
/// the queries the teachers labelled benign (public data and post-processing: no ε). Returns
/// their features and labels.
fn public_examples(
    config: &RunConfig,
    data: &RunData,
    plan: &QueryPlan,
    features: &Features,
    benign_answered: &[usize],
    rng: &RunRng,
) -> Result<Option<LabeledRows>> {
    let Some(pe) = &config.student.public_examples else {
        return Ok(None);
    };
    let records = &data.records;
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
        plan.distinct_public.iter().map(|&i| &records[i]).collect();
    // The queries the teachers labelled benign (post-processing of the private labels).
    let benign_templates: Vec<&datasets::Record> = benign_answered
        .iter()
        .map(|&i| &records[plan.query_rows[i]])
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
    tracing::info!(
        "student: {} public labelled examples: public attacks ({} values) placed into {} public requests of the site, and {} requests the teachers labelled benign re-shaped with their own values (no privacy cost)",
        examples.len(),
        malicious.len(),
        templates.len(),
        benign_templates.len()
    );
    Ok(Some(LabeledRows {
        x: pipeline::featurize_rows(&features.featurizer, &examples, &rows),
        y: examples
            .iter()
            .map(|r| r.label == Some(datasets::Label::Malicious))
            .collect(),
    }))
}

/// Trains the student of a run on the answered queries' original features and their noisy
/// `labels` (one per query), with the run's `student:` options.
pub fn run(
    config: &RunConfig,
    data: &RunData,
    plan: &QueryPlan,
    features: &Features,
    labels: &[Option<bool>],
    env: &Env,
) -> Result<Student> {
    let answered: Vec<usize> = (0..labels.len()).filter(|&i| labels[i].is_some()).collect();
    if answered.is_empty() {
        return Err(Error::Empty {
            what: "the aggregation".into(),
            missing: "no query answered: nothing to train the student on",
        });
    }
    let label_agreement = label_agreement(labels, &features.queries_y);
    super::banner(
        &format!(
            "student on {} answered queries (original features)",
            answered.len()
        ),
        env.started,
    );
    // The answered queries labelled benign with their public multiplicities
    // (threshold_rule: answered_benign).
    let benign_answered: Vec<usize> = answered
        .iter()
        .copied()
        .filter(|&i| labels[i] == Some(false))
        .collect();
    let benign_answered_x = features.queries_x.select_rows(&benign_answered);
    let benign_answered_weights: Vec<usize> = benign_answered
        .iter()
        .map(|&i| plan.public_multiplicity[plan.query_order[i]])
        .collect();
    let mut train = LabeledRows {
        x: features.queries_x.select_rows(&answered),
        y: answered
            .iter()
            .map(|&i| labels[i].expect("answered"))
            .collect(),
    };
    let examples = public_examples(config, data, plan, features, &benign_answered, &env.rng)?;
    let public_examples = examples.as_ref().map_or(0, |e| e.y.len());
    if let Some(e) = examples {
        train = LabeledRows {
            x: DenseMatrix::new(
                train.x.rows + e.x.rows,
                train.x.cols,
                [train.x.values, e.x.values].concat(),
            )?,
            y: [train.y, e.y].concat(),
        };
    }
    let copies = config.student.multiplicity_cap.map(|_| {
        (
            answered
                .iter()
                .map(|&i| plan.query_copies[i])
                .chain(std::iter::repeat_n(1, public_examples))
                .collect::<Vec<_>>(),
            plan.validation_copies.clone(),
        )
    });
    let (model, extras) = pipeline::train_student_full(
        train,
        features.validation.clone(),
        copies.as_ref().map(|(a, v)| (a.as_slice(), v.as_slice())),
        features.pool_x.as_ref(),
        Some((&benign_answered_x, &benign_answered_weights)),
        &config.student,
        &features.hash,
        &env.rng,
        env.device,
    )?;
    Ok(Student {
        model,
        extras,
        answered,
        label_agreement,
        public_examples,
    })
}

/// The student from the queries' features and their noisy labels alone (the `student`
/// subcommand: no split, so no traffic weights, and each answered query labelled benign counts
/// once for `threshold_rule: answered_benign`).
#[allow(clippy::too_many_arguments)]
pub fn from_labels(
    config: &RunConfig,
    queries: &DenseMatrix,
    labels: &[Option<bool>],
    validation: LabeledRows,
    pool: Option<&DenseMatrix>,
    featurizer_hash: &str,
    rng: &RunRng,
    device: tch::Device,
) -> Result<(ModelFile, StudentExtras)> {
    let answered: Vec<usize> = (0..labels.len()).filter(|&i| labels[i].is_some()).collect();
    let benign_rows: Vec<usize> = answered
        .iter()
        .copied()
        .filter(|&i| labels[i] == Some(false))
        .collect();
    let benign_x = queries.select_rows(&benign_rows);
    let benign_weights = vec![1usize; benign_rows.len()];
    pipeline::train_student_full(
        LabeledRows {
            x: queries.select_rows(&answered),
            y: answered.iter().filter_map(|&i| labels[i]).collect(),
        },
        validation,
        None,
        pool,
        Some((&benign_x, &benign_weights)),
        &config.student,
        featurizer_hash,
        rng,
        device,
    )
}
