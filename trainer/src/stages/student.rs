//! Stage 6, `student`: train the student on the ORIGINAL features of the answered queries with
//! their noisy labels (plus, optionally, public labelled examples, self-training on the
//! unlabelled public pool, traffic weights and a threshold rule: the `student:` options).
use std::borrow::Cow;

use crate::config::RunConfig;
use crate::dense::DenseMatrix;
use crate::ensemble::LabeledRows;
use crate::error::{Error, Result};
use crate::model_file::ModelFile;
use crate::public_examples::share_of_each_class;
use crate::rng::RunRng;
use crate::stages::split::RunData;
use crate::student::{StudentEnv, StudentExtras};

use crate::part_model::PartExamples;
use crate::public_examples::{Spot, Synthesis};
use crate::report::CleaningReport;

use super::featurize::{self, Features};
use super::split::QueryPlan;
use super::Env;

/// The trained student and what went into it.
pub struct Student {
    /// The student.
    pub model: ModelFile,
    /// The model of single parts (`student.public_examples.part_model`).
    pub part_model: Option<ModelFile>,
    /// What the `student:` options did.
    pub extras: StudentExtras,
    /// The answered queries (indices into the queries).
    pub answered: Vec<usize>,
    /// Share of answered labelled queries whose noisy label equals the public-side label.
    pub label_agreement: Option<f64>,
    /// Public labelled examples added (`student.public_examples`).
    pub public_examples: usize,
    /// What label cleaning left out (`student.label_cleaning`; None when off).
    pub cleaning: Option<CleaningReport>,
    /// Drawn requests labelled by the validation split instead of asked
    /// (`student.validation_labels`; None when off).
    pub validation_labels_known: Option<usize>,
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

/// What `student.public_examples` made: labelled rows for training and placed requests for
/// the validation samples.
struct PublicExamples {
    /// Training rows (features and labels).
    train: LabeledRows,
    /// Placed requests added to the validation samples (`public_examples.validation`).
    validation: Vec<datasets::Record>,
    /// Public benign and held-out attack values placed in every spot, for the content-only
    /// threshold (`public_examples.content_only_validation`; empty when 0).
    content_only_validation: Vec<(Spot, datasets::Record)>,
    /// The part model's training and validation parts (`public_examples.part_model`).
    part_model: Option<(PartExamples, PartExamples)>,
}

/// `student.public_examples`: public attacks placed into the site's public request shapes and
/// the requests labelled benign — by the teachers (queries) or by the validation split (drawn
/// requests it labels, `student.validation_labels`) — (public data and post-processing: no ε). With
/// `validation` > 0, a tenth of the public attack values is held out of training and placed into
/// the student's benign validation requests instead (beside those requests re-shaped with their
/// own values).
fn public_examples(
    inputs: StudentInputs,
    benign_answered: &[usize],
) -> Result<Option<PublicExamples>> {
    let StudentInputs {
        config,
        data,
        plan,
        features,
        ..
    } = inputs;
    let rng = &inputs.env.rng;
    let Some(pe) = &config.student.public_examples else {
        return Ok(None);
    };
    let records = &data.records;
    let values = PublicValues::load(pe, rng)?;
    let templates: Vec<&datasets::Record> =
        plan.distinct_public.iter().map(|&i| &records[i]).collect();
    // The queries the teachers labelled benign (post-processing of the private labels), and the
    // drawn requests the validation split labels benign (`student.validation_labels`: public
    // labels, no query). The site's frequent pages are among the latter, not the queries; left
    // out, the part model never saw them as a benign request's parts, scored the site's own
    // image paths as attacks, and the content-only threshold went to 0.997.
    let benign_templates = benign_templates(records, plan, benign_answered);
    let (examples, tampered) = crate::public_examples::synthesize(
        &templates,
        &benign_templates,
        &values.malicious,
        &Synthesis {
            count: pe.count,
            benign_spots: pe.benign_spots,
            tamperings: pe.tamperings,
        },
        &values.user_agents,
        &mut rng.stream("public-examples"),
    );
    let mut examples = examples;
    let pages: Vec<&[u8]> = benign_templates
        .iter()
        .map(|r| r.target.as_slice())
        .collect();
    let (forwarded, referred) = with_site_headers(
        &config.student,
        &pages,
        &mut examples,
        (
            &mut rng.stream("forwarding-headers-examples"),
            &mut rng.stream("site-referers-examples"),
        ),
    );
    tracing::info!(
        "student: {} public labelled examples: public attacks ({} values) placed into {} public requests of the site, and {} requests labelled benign (by the teachers, or the validation split) re-shaped with their own values (no privacy cost)",
        examples.len(),
        values.malicious.len(),
        templates.len(),
        benign_templates.len()
    );
    if forwarded + referred > 0 {
        tracing::info!(
            "student: {forwarded} of the public labelled examples carry a load balancer's headers, {referred} a Referer of the site's pages (the same share of each class)"
        );
    }
    if !values.user_agents.is_empty() {
        tracing::info!(
            "student: half the public labelled examples dressed as requests of {} real browsers ({} more for the validation examples)",
            values.user_agents.len(),
            values.held_out_user_agents.len()
        );
    }
    let benign_validation = validation_templates(
        records,
        &plan.validation_rows,
        &features.validation_known_attack,
    );
    let validation = placed_validation(pe, &benign_validation, &values, rng);
    let content_only_validation = content_only_validation(pe, &benign_validation, &values, rng)?;
    let train = example_rows(pe, features, &examples, &tampered)?;
    let part_model = pe.part_model.as_ref().map(|pm| {
        part_examples(
            pm,
            features,
            (&benign_templates, &benign_validation),
            &values,
            &config.student,
            rng,
        )
    });
    Ok(Some(PublicExamples {
        train,
        validation,
        content_only_validation,
        part_model,
    }))
}

/// The validation examples' templates: the student's benign validation requests, but not one a
/// public detector calls an attack (`known_attack`, one per `validation_rows`): benign values
/// placed into an attack would be examples of benign requests that are not.
fn validation_templates<'a>(
    records: &'a [datasets::Record],
    validation_rows: &[usize],
    known_attack: &[bool],
) -> Vec<&'a datasets::Record> {
    validation_rows
        .iter()
        .zip(known_attack)
        .filter(|&(_, &known)| !known)
        .map(|(&i, _)| &records[i])
        .filter(|r| r.label == Some(datasets::Label::Benign))
        .collect()
}

/// The placed validation examples: the held-out public attack values placed into the student's
/// benign validation requests (`benign_validation`), and those requests re-shaped with their own
/// values.
fn placed_validation(
    pe: &crate::config::PublicExamplesConfig,
    benign_validation: &[&datasets::Record],
    values: &PublicValues,
    rng: &RunRng,
) -> Vec<datasets::Record> {
    let validation = crate::public_examples::synthesize(
        benign_validation,
        benign_validation,
        &values.held_out,
        &Synthesis {
            count: pe.validation,
            benign_spots: pe.validation_benign_spots.unwrap_or(pe.benign_spots),
            tamperings: 0.0,
        },
        &values.held_out_user_agents,
        &mut rng.stream("public-examples-validation"),
    )
    .0;
    if pe.validation > 0 {
        tracing::info!(
            "student: {} placed validation examples: {} held-out public attack values and {} benign validation requests",
            validation.len(),
            values.held_out.len(),
            benign_validation.len()
        );
    }
    validation
}

/// Adds a load balancer's headers to a share (`student.forwarding_headers`) of each class of
/// `examples` and a Referer of one of the site's `pages` to another (`student.site_referers`),
/// each drawn from its own stream of `rngs` ([`crate::public_examples::share_of_each_class`]);
/// returns how many got each.
fn with_site_headers(
    student: &crate::config::StudentConfig,
    pages: &[&[u8]],
    examples: &mut [datasets::Record],
    rngs: (&mut impl rand::Rng, &mut impl rand::Rng),
) -> (usize, usize) {
    let (forwarding_rng, referer_rng) = rngs;
    let malicious = is_malicious(&*examples);
    let forwarded = share_of_each_class(&malicious, student.forwarding_headers, forwarding_rng);
    let referred = share_of_each_class(&malicious, student.site_referers, referer_rng);
    let mut counts = (0, 0);
    for (k, r) in examples.iter_mut().enumerate() {
        if forwarded[k] {
            crate::public_examples::add_forwarding_headers(r, forwarding_rng);
            counts.0 += 1;
        }
        if referred[k] && crate::public_examples::add_site_referer(r, pages, referer_rng) {
            counts.1 += 1;
        }
    }
    counts
}

/// The public values the examples place: the public files' attack and benign values, the
/// held-out ones, and the real browsers' User-Agents (a tenth held out for validation).
struct PublicValues {
    malicious: Vec<Vec<u8>>,
    benign: Vec<Vec<u8>>,
    held_out: Vec<Vec<u8>>,
    held_out_benign: Vec<Vec<u8>>,
    user_agents: Vec<String>,
    held_out_user_agents: Vec<String>,
}

impl PublicValues {
    fn load(pe: &crate::config::PublicExamplesConfig, rng: &RunRng) -> Result<Self> {
        let (mut malicious, mut benign) = (Vec::new(), Vec::new());
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
                    Some(datasets::Label::Malicious) if source.format == datasets::Format::Fwaf => {
                        malicious.extend(crate::public_examples::fwaf_attack_value(r))
                    }
                    Some(datasets::Label::Malicious) => {
                        malicious.push(crate::public_examples::public_value(r))
                    }
                    // Public benign values are not placed in training (see
                    // public_examples::synthesize); the content-only threshold's validation only.
                    Some(datasets::Label::Benign) => {
                        benign.push(crate::public_examples::public_value(r))
                    }
                    None => {}
                }
            }
        }
        let (held_out, held_out_benign) = hold_out(pe, &mut malicious, &mut benign, rng);
        let (user_agents, held_out_user_agents) = match &pe.user_agents {
            Some(path) => split_user_agents(pe, path, rng)?,
            None => (Vec::new(), Vec::new()),
        };
        Ok(PublicValues {
            malicious,
            benign,
            held_out,
            held_out_benign,
            user_agents,
            held_out_user_agents,
        })
    }
}

/// The held-out values, taken out of `malicious` and `benign`: every value of a random tenth
/// (distinct values, so none of them is also trained on); with the part model, the tenth
/// `part_model::held_out` calls so, benign values too (the part model trains on the others).
fn hold_out(
    pe: &crate::config::PublicExamplesConfig,
    malicious: &mut Vec<Vec<u8>>,
    benign: &mut Vec<Vec<u8>>,
    rng: &RunRng,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut held_out = Vec::new();
    let mut held_out_benign = Vec::new();
    if pe.part_model.is_some() {
        malicious.sort();
        malicious.dedup();
        benign.sort();
        benign.dedup();
        (held_out, *malicious) = std::mem::take(malicious)
            .into_iter()
            .partition(|v| crate::part_model::held_out(v));
        (held_out_benign, *benign) = std::mem::take(benign)
            .into_iter()
            .partition(|v| crate::part_model::held_out(v));
    } else if pe.validation > 0 {
        malicious.sort();
        malicious.dedup();
        let order =
            crate::rng::shuffled(malicious.len(), &mut rng.stream("public-examples-holdout"));
        let keep = malicious.len().div_ceil(10);
        let mut hold = vec![false; malicious.len()];
        for &i in order.iter().take(keep) {
            hold[i] = true;
        }
        let (h, t): (Vec<_>, Vec<_>) = std::mem::take(malicious)
            .into_iter()
            .zip(hold)
            .partition(|(_, held)| *held);
        held_out = h.into_iter().map(|(v, _)| v).collect();
        *malicious = t.into_iter().map(|(v, _)| v).collect();
    }
    (held_out, held_out_benign)
}

/// Real browsers' User-Agents: the ones to train with, and a tenth held out for the validation
/// examples (none without validation examples).
fn split_user_agents(
    pe: &crate::config::PublicExamplesConfig,
    path: &std::path::Path,
    rng: &RunRng,
) -> Result<(Vec<String>, Vec<String>)> {
    let all = crate::public_examples::load_user_agents(path)?;
    let order = crate::rng::shuffled(all.len(), &mut rng.stream("public-examples-user-agents"));
    let keep = if pe.validation > 0 {
        all.len().div_ceil(10).min(all.len() - 1)
    } else {
        0
    };
    let (mut user_agents, mut held_out) = (Vec::new(), Vec::new());
    for (k, &i) in order.iter().enumerate() {
        if k < keep {
            held_out.push(all[i].clone());
        } else {
            user_agents.push(all[i].clone());
        }
    }
    Ok((user_agents, held_out))
}

/// `public_examples.content_only_validation`: public benign and held-out attack values placed in
/// every spot of the benign validation requests (empty when 0).
fn content_only_validation(
    pe: &crate::config::PublicExamplesConfig,
    benign_validation: &[&datasets::Record],
    values: &PublicValues,
    rng: &RunRng,
) -> Result<Vec<(Spot, datasets::Record)>> {
    if pe.content_only_validation == 0 {
        return Ok(Vec::new());
    }
    let (benign, held_out) = (&values.benign, &values.held_out);
    if benign.is_empty() || held_out.is_empty() {
        return Err(Error::ConfigKey {
            key: "student.public_examples.content_only_validation".into(),
            reason: format!(
                "needs public benign values and held-out attack values; the files gave {} \
                 benign and {} held-out attack values",
                benign.len(),
                held_out.len()
            ),
        });
    }
    let validation_benign = if pe.part_model.is_some() {
        &values.held_out_benign
    } else {
        benign
    };
    let placed = crate::public_examples::placed_in_every_spot(
        benign_validation,
        validation_benign,
        held_out,
        pe.content_only_validation,
        &mut rng.stream("public-examples-content-only"),
    );
    tracing::info!(
        "student: {} placed examples for the content-only threshold: {} public benign and {} held-out attack values, {} of each class in each of {} placements",
        placed.len(),
        validation_benign.len(),
        held_out.len(),
        pe.content_only_validation,
        crate::public_examples::PLACEMENTS.len()
    );
    Ok(placed)
}

/// The examples' training rows, and with `content_only_copies` (and format checks on) the
/// untampered ones again without the site's format checks.
fn example_rows(
    pe: &crate::config::PublicExamplesConfig,
    features: &Features,
    examples: &[datasets::Record],
    tampered: &[bool],
) -> Result<LabeledRows> {
    let rows: Vec<usize> = (0..examples.len()).collect();
    let train = LabeledRows {
        x: crate::stages::featurize::featurize_rows(&features.featurizer, examples, &rows),
        y: is_malicious(examples),
    };
    if !(pe.content_only_copies && features.featurizer.format_checks()) {
        return Ok(train);
    }
    let copied: Vec<usize> = (0..examples.len()).filter(|&i| !tampered[i]).collect();
    let content_only = features.featurizer.clone().without_format_checks();
    tracing::info!(
        "student: {} of them also without the site's format checks (content_only_copies)",
        copied.len()
    );
    let copies = LabeledRows {
        x: crate::stages::featurize::featurize_rows(&content_only, examples, &copied),
        y: copied.iter().map(|&i| train.y[i]).collect(),
    };
    concat(train, copies)
}

/// The part model's training and held-out parts: public values placed into the requests
/// labelled benign (`templates.0`) and, held out, into the benign validation requests
/// (`templates.1`).
fn part_examples(
    pm: &crate::config::PartModelConfig,
    features: &Features,
    templates: (&[&datasets::Record], &[&datasets::Record]),
    values: &PublicValues,
    student: &crate::config::StudentConfig,
    rng: &RunRng,
) -> (PartExamples, PartExamples) {
    let (benign_templates, benign_validation) = templates;
    let content = features.featurizer.clone().without_format_checks();
    let dressing = |user_agents| crate::part_model::Dressing {
        user_agents,
        forwarding_headers: student.forwarding_headers,
        site_referers: student.site_referers,
    };
    // Held-out parts for the training's best-epoch choice only (the content-only threshold
    // is chosen on whole requests): a twentieth as many values is enough, and each part is
    // a dense row of the featurizer's width in training.
    let validation_config = crate::config::PartModelConfig {
        per_spot: pm.per_spot.div_ceil(20),
        ..pm.clone()
    };
    let [examples, validation] = [
        (
            (benign_templates, &values.benign, &values.malicious),
            (&values.user_agents, pm, "part-model-examples"),
        ),
        (
            (benign_validation, &values.held_out_benign, &values.held_out),
            (
                &values.held_out_user_agents,
                &validation_config,
                "part-model-validation",
            ),
        ),
    ]
    .map(
        |((templates, benign, malicious), (user_agents, config, stream))| {
            crate::part_model::examples(
                &content,
                templates,
                benign,
                malicious,
                &dressing(user_agents),
                config,
                &mut rng.stream(stream),
            )
        },
    );
    tracing::info!(
        "student: part model examples: {} distinct parts counted {} times ({} malicious) from {} benign and {} attack values placed into {} requests labelled benign (by the teachers, or the validation split); {} validation parts",
        examples.parts.len(),
        examples.weights.iter().sum::<f32>(),
        examples.malicious.iter().filter(|&&m| m).count(),
        values.benign.len(),
        values.malicious.len(),
        benign_templates.len(),
        validation.parts.len()
    );
    (examples, validation)
}

/// The requests labelled benign that public examples are made from: the answered queries the
/// teachers labelled benign (`benign_answered`, positions in `plan.query_rows`), then the public
/// copy of each drawn request the validation split labels benign (`student.validation_labels`).
fn benign_templates<'a>(
    records: &'a [datasets::Record],
    plan: &QueryPlan,
    benign_answered: &[usize],
) -> Vec<&'a datasets::Record> {
    benign_answered
        .iter()
        .map(|&i| &records[plan.query_rows[i]])
        .chain(
            plan.validation_known_pairs()
                .filter(|&(_, v)| records[v].label == Some(datasets::Label::Benign))
                .map(|(public, _)| &records[public]),
        )
        .collect()
}

/// Whether each record is labelled malicious.
fn is_malicious<'a>(records: impl IntoIterator<Item = &'a datasets::Record>) -> Vec<bool> {
    records
        .into_iter()
        .map(|r| r.label == Some(datasets::Label::Malicious))
        .collect()
}

/// `a` with the rows of `b` appended.
fn concat(a: LabeledRows, b: LabeledRows) -> Result<LabeledRows> {
    Ok(LabeledRows {
        x: DenseMatrix::new(
            a.x.rows + b.x.rows,
            a.x.cols,
            [a.x.values, b.x.values].concat(),
        )?,
        y: [a.y, b.y].concat(),
    })
}

/// The scores of `records` as pate-proxy and `pate-trainer score` compute them: through
/// `bundle::score_request`, the highest score over every window of the request, with the student
/// run by libtorch on the windows' dense vectors (the proxy runs the same network in ONNX Runtime;
/// the two agree to float rounding).
pub fn served_scores(
    model: &ModelFile,
    featurizer: &featurizer::Featurizer,
    records: &[&datasets::Record],
    device: tch::Device,
) -> Result<Vec<f32>> {
    Ok(served_pieces(model, None, featurizer, records, device)?
        .into_iter()
        .map(|p| p.windows)
        .collect())
}

/// What a request's served score is made of where content alone is scored: the highest score
/// of its windows (the student) and each part alone with its placement and the part model's
/// score, unshifted (no parts without a part model).
#[derive(Debug, Clone, PartialEq)]
pub struct ServedPieces {
    /// The highest score of the request's windows (`bundle::score_request`).
    pub windows: f32,
    /// Every part alone (`Featurizer::part_vectors`): its placement and the part model's score.
    pub parts: Vec<(featurizer::Placement, f32)>,
}

impl ServedPieces {
    /// The request's score with the parts shifted by `offsets`: the highest of the windows' and
    /// the shifted parts' scores, as `bundle::score_request_and_parts` takes it.
    pub fn score(&self, offsets: &bundle::PartOffsets) -> f32 {
        self.parts
            .iter()
            .map(|&(p, s)| offsets.shift(p, s))
            .fold(self.windows, |best, s| if s > best { s } else { best })
    }
}

/// The [`ServedPieces`] of `records`, a few hundred requests at a time (their windows and parts
/// as dense rows of the featurizer's width: 7,800 placed requests have ~100,000 parts, 4 GB at
/// once).
pub fn served_pieces(
    model: &ModelFile,
    part_model: Option<&ModelFile>,
    featurizer: &featurizer::Featurizer,
    records: &[&datasets::Record],
    device: tch::Device,
) -> Result<Vec<ServedPieces>> {
    const CHUNK: usize = 256;
    let mut out = Vec::with_capacity(records.len());
    for chunk in records.chunks(CHUNK) {
        out.extend(served_chunk(
            (model, part_model),
            featurizer,
            chunk,
            device,
        )?);
    }
    Ok(out)
}

/// [`served_pieces`] of one chunk of requests.
fn served_chunk(
    (model, part_model): (&ModelFile, Option<&ModelFile>),
    featurizer: &featurizer::Featurizer,
    records: &[&datasets::Record],
    device: tch::Device,
) -> Result<Vec<ServedPieces>> {
    // First pass: every window (through the proxy's scoring function) and every part, in order.
    let mut windows: Vec<featurizer::SparseVector> = Vec::new();
    let mut parts: Vec<Vec<(featurizer::Placement, featurizer::SparseVector)>> = Vec::new();
    for r in records {
        bundle::score_request(featurizer, &r.parts(), |v| {
            windows.push(v.clone());
            Ok::<f32, Error>(0.0)
        })?;
        parts.push(match part_model {
            Some(_) => featurizer.part_vectors(&r.parts()),
            None => Vec::new(),
        });
    }
    let dense = |vectors: &mut dyn Iterator<Item = &featurizer::SparseVector>, n: usize| {
        let dim = featurizer.dim();
        let mut values = vec![0f32; n * dim];
        for (k, w) in vectors.enumerate() {
            w.write_dense(&mut values[k * dim..(k + 1) * dim]);
        }
        DenseMatrix::new(n, dim, values)
    };
    let window_scores =
        super::evaluate::model_scores(model, &dense(&mut windows.iter(), windows.len())?, device)?;
    let part_count: usize = parts.iter().map(Vec::len).sum();
    let part_scores = match part_model {
        Some(m) if part_count > 0 => super::evaluate::model_scores(
            m,
            &dense(&mut parts.iter().flatten().map(|(_, v)| v), part_count)?,
            device,
        )?,
        _ => Vec::new(),
    };
    // Second pass: the same windows get their scores and the scoring keeps the highest.
    let (mut next_window, mut next_part) = (window_scores.into_iter(), part_scores.into_iter());
    let missing = || Error::Empty {
        what: "served scores".into(),
        missing: "a score for every window and part of the request",
    };
    let mut out = Vec::with_capacity(records.len());
    for (r, request_parts) in records.iter().zip(&parts) {
        let scored = bundle::score_request(featurizer, &r.parts(), |_| {
            next_window.next().ok_or_else(missing)
        })?;
        let parts = request_parts
            .iter()
            .map(|(p, _)| Ok((*p, next_part.next().ok_or_else(missing)?)))
            .collect::<Result<Vec<_>>>()?;
        out.push(ServedPieces {
            windows: scored.score,
            parts,
        });
    }
    Ok(out)
}

/// Trains the student of a run on the answered queries' original features and their noisy
/// `labels` (one per query), with the run's `student:` options.
pub fn run(
    config: &RunConfig,
    data: &RunData,
    plan: &QueryPlan,
    features: &Features,
    labels: &[Option<bool>],
    release_flagged: &[bool],
    env: &Env,
) -> Result<Student> {
    let inputs = StudentInputs {
        config,
        data,
        plan,
        features,
        env,
    };
    let labels = labels_to_train_on(config, labels);
    let labels = labels.as_ref();
    let answered = answered_queries(labels)?;
    // The mechanism's own labels are what the agreement diagnostic measures.
    let label_agreement = label_agreement(labels, &features.queries_y);
    let validation_labels_known = validation_labels_known(config, plan);
    super::banner(
        &format!(
            "student on {} answered queries (original features)",
            answered.len()
        ),
        env.started,
    );
    let benign_answered = BenignAnswered::of(&answered, labels, plan, features);
    let (trained, sets, cleaning) = student_sets(inputs, labels, &answered, &benign_answered)?;
    let public_examples = sets.public_examples;
    let (model, part_model, extras) =
        train_and_choose_thresholds(inputs, &trained, &benign_answered, sets, release_flagged)?;
    Ok(Student {
        model,
        part_model,
        extras,
        answered,
        label_agreement,
        public_examples,
        cleaning,
        validation_labels_known,
    })
}

/// What the student stage reads of its run.
#[derive(Clone, Copy)]
struct StudentInputs<'a> {
    config: &'a RunConfig,
    data: &'a RunData,
    plan: &'a QueryPlan,
    features: &'a Features,
    env: &'a Env,
}

/// The labels the student trains on: the release's `labels`, or with `labels_from:
/// assume_benign` every query benign.
fn labels_to_train_on<'a>(
    config: &RunConfig,
    labels: &'a [Option<bool>],
) -> Cow<'a, [Option<bool>]> {
    match config.student.labels_from {
        crate::config::LabelsFrom::Release => Cow::Borrowed(labels),
        crate::config::LabelsFrom::AssumeBenign => {
            tracing::warn!(
                "student: labels_from: assume_benign — every query labelled benign, the \
                 teachers' release unused (the no-private-data baseline)"
            );
            Cow::Owned(vec![Some(false); labels.len()])
        }
    }
}

/// The student's training and validation sets: the `answered` queries it trains on (returned
/// with their query indices and label cleaning's report), the drawn requests the validation
/// split labels, and the public examples.
fn student_sets(
    inputs: StudentInputs,
    labels: &[Option<bool>],
    answered: &[usize],
    benign_answered: &BenignAnswered,
) -> Result<(Vec<usize>, StudentSets, Option<CleaningReport>)> {
    let StudentInputs {
        config,
        plan,
        features,
        env,
        ..
    } = inputs;
    let (trained, mut train, cleaning) =
        answered_rows(config, plan, features, labels, answered, env)?;
    // `student.validation_labels`: the drawn requests the validation split labels, never asked,
    // train with that label (public labelled data in place of a query).
    if !plan.validation_known.is_empty() {
        train = concat(train, features.validation.select(&plan.validation_known))?;
    }
    let train = dressed_site_rows(inputs, &trained, train);
    let examples = public_examples(inputs, &benign_answered.queries)?;
    let mut sets = StudentSets {
        public_examples: examples.as_ref().map_or(0, |e| e.train.y.len()),
        train,
        validation: features.validation.clone(),
        placed_validation: Vec::new(),
        content_only_validation: Vec::new(),
        part_examples: None,
    };
    if let Some(e) = examples {
        sets = sets.with_examples(e, features)?;
    }
    Ok((trained, sets, cleaning))
}

/// `student.forwarding_headers` and `student.site_referers`: the site's training rows (`train`:
/// the `trained` queries', then the validation-labelled drawn requests') of which those shares
/// of each class are featurized again from their request with a load balancer's headers
/// ([`crate::public_examples::add_forwarding_headers`]) or a Referer of a page of the rows
/// labelled benign ([`crate::public_examples::add_site_referer`]) added, the label kept. The
/// teachers' queries and inputs are not touched: only the student's copy of a row.
fn dressed_site_rows(
    inputs: StudentInputs,
    trained: &[usize],
    mut train: LabeledRows,
) -> LabeledRows {
    let StudentInputs {
        data, plan, env, ..
    } = inputs;
    let student = &inputs.config.student;
    if student.forwarding_headers <= 0.0 && student.site_referers <= 0.0 {
        return train;
    }
    let records: Vec<usize> = trained
        .iter()
        .map(|&i| plan.query_rows[i])
        .chain(
            plan.validation_known
                .iter()
                .map(|&p| plan.validation_rows[p]),
        )
        .collect();
    if records.len() != train.y.len() {
        // One request per training row is how `student_sets` builds `train`; were it not, the
        // rows could not be matched to their requests: train without the headers.
        tracing::warn!(
            "student: forwarding_headers and site_referers skipped: {} requests for {} training rows",
            records.len(),
            train.y.len()
        );
        return train;
    }
    let pages: Vec<&[u8]> = records
        .iter()
        .zip(&train.y)
        .filter(|(_, &malicious)| !malicious)
        .map(|(&i, _)| data.records[i].target.as_slice())
        .collect();
    let mut forwarding_rng = env.rng.stream("forwarding-headers");
    let mut referer_rng = env.rng.stream("site-referers");
    let forwarded = share_of_each_class(&train.y, student.forwarding_headers, &mut forwarding_rng);
    let referred = share_of_each_class(&train.y, student.site_referers, &mut referer_rng);
    let rows: Vec<usize> = (0..records.len())
        .filter(|&k| forwarded[k] || referred[k])
        .collect();
    let mut with_referer = 0;
    let mut dressed = Vec::with_capacity(rows.len());
    for &k in &rows {
        let mut r = data.records[records[k]].clone();
        if forwarded[k] {
            crate::public_examples::add_forwarding_headers(&mut r, &mut forwarding_rng);
        }
        if referred[k] && crate::public_examples::add_site_referer(&mut r, &pages, &mut referer_rng)
        {
            with_referer += 1;
        }
        dressed.push(r);
    }
    let all: Vec<usize> = (0..dressed.len()).collect();
    let x = crate::stages::featurize::featurize_rows(&inputs.features.featurizer, &dressed, &all);
    let cols = train.x.cols;
    for (j, &k) in rows.iter().enumerate() {
        train.x.values[k * cols..(k + 1) * cols].copy_from_slice(x.row(j));
    }
    tracing::info!(
        "student: of {} site training rows, {} carry a load balancer's X-Forwarded-For and X-Forwarded-Proto (forwarding_headers {}), {} a Referer of the site's pages (site_referers {}); labels kept, teachers untouched",
        records.len(),
        forwarded.iter().filter(|&&f| f).count(),
        student.forwarding_headers,
        with_referer,
        student.site_referers
    );
    train
}

/// Trains the student network on `sets` (`trained`: the query of each answered training row),
/// chooses its thresholds and trains the part model; returns the network, the part model and
/// what the options did.
fn train_and_choose_thresholds(
    inputs: StudentInputs,
    trained: &[usize],
    benign_answered: &BenignAnswered,
    sets: StudentSets,
    release_flagged: &[bool],
) -> Result<(ModelFile, Option<ModelFile>, StudentExtras)> {
    let StudentInputs {
        config,
        data,
        plan,
        features,
        env,
    } = inputs;
    let copies = training_copies(config, plan, trained, &sets);
    // Without placements the threshold is chosen again below on these rows' model scores.
    let rechoose = features.featurizer.config().placements.is_none()
        && config.student.threshold_rule == crate::config::ThresholdRule::TargetFpr
        && config.student.multiplicity_cap.is_some();
    let validation_rows = rechoose.then(|| sets.validation.clone());
    let (mut model, mut extras) = crate::student::train_student_full(
        sets.train,
        sets.validation,
        copies.as_ref().map(|(a, v)| (a.as_slice(), v.as_slice())),
        features.pool_x.as_ref(),
        Some((&benign_answered.x, &benign_answered.weights)),
        &config.student,
        student_env(features, env),
    )?;
    let excluded = excluded_traffic(config, release_flagged, data, plan);
    let cx = ThresholdContext {
        config,
        data,
        plan,
        features,
        env,
        excluded: &excluded,
    };
    let validation_scores = validation_scores(
        cx,
        &sets.placed_validation,
        &benign_answered.queries,
        validation_rows,
        (&mut model, &mut extras),
    )?;
    let part_model = train_part_model(config, features, sets.part_examples, env)?;
    if !sets.content_only_validation.is_empty() {
        content_only_threshold(
            &cx,
            (&sets.content_only_validation, part_model.as_ref()),
            (&mut model, &mut extras),
        )?;
    }
    extras.validation_traffic_tpr_at_1pct_fpr =
        traffic_validation_tpr(&model, &validation_scores, &features.validation.y, plan);
    Ok((model, part_model, extras))
}

/// The answered queries labelled benign with their public multiplicities (for
/// `threshold_rule: answered_benign`, and the templates of the public examples).
struct BenignAnswered {
    queries: Vec<usize>,
    x: DenseMatrix,
    weights: Vec<usize>,
}

impl BenignAnswered {
    fn of(
        answered: &[usize],
        labels: &[Option<bool>],
        plan: &QueryPlan,
        features: &Features,
    ) -> BenignAnswered {
        let queries: Vec<usize> = answered
            .iter()
            .copied()
            .filter(|&i| labels[i] == Some(false))
            .collect();
        BenignAnswered {
            x: features.queries_x.select_rows(&queries),
            weights: queries
                .iter()
                .map(|&i| plan.public_multiplicity[plan.query_order[i]])
                .collect(),
            queries,
        }
    }
}

/// With `student.validation_labels`: how many drawn requests the validation split labels (not
/// asked), logged.
fn validation_labels_known(config: &RunConfig, plan: &QueryPlan) -> Option<usize> {
    let known = config
        .student
        .validation_labels
        .then_some(plan.validation_known.len());
    if let Some(known) = known {
        tracing::info!(
            "student: {known} drawn requests labelled by the validation split, not asked"
        );
    }
    known
}

/// The run's [`StudentEnv`].
fn student_env<'a>(features: &'a Features, env: &'a Env) -> StudentEnv<'a> {
    StudentEnv {
        featurizer_hash: &features.hash,
        rng: &env.rng,
        device: env.device,
    }
}

/// The queries the aggregation answered; none is an error (nothing to train on).
fn answered_queries(labels: &[Option<bool>]) -> Result<Vec<usize>> {
    let answered: Vec<usize> = (0..labels.len()).filter(|&i| labels[i].is_some()).collect();
    if answered.is_empty() {
        return Err(Error::Empty {
            what: "the aggregation".into(),
            missing: "no query answered: nothing to train the student on",
        });
    }
    Ok(answered)
}

/// What the student trains and is validated on, beyond the answered queries: the public
/// examples and the placed requests scored for the threshold.
struct StudentSets {
    /// How many training rows the public examples added.
    public_examples: usize,
    train: LabeledRows,
    /// The validation split's rows, then the placed validation requests' rows.
    validation: LabeledRows,
    placed_validation: Vec<datasets::Record>,
    content_only_validation: Vec<(Spot, datasets::Record)>,
    part_examples: Option<(PartExamples, PartExamples)>,
}

impl StudentSets {
    /// Adds the public examples: their training rows, their placed validation requests (also
    /// featurized into the validation rows), the content-only validation and the part examples.
    fn with_examples(mut self, e: PublicExamples, features: &Features) -> Result<Self> {
        self.content_only_validation = e.content_only_validation;
        self.part_examples = e.part_model;
        self.train = concat(self.train, e.train)?;
        let rows: Vec<usize> = (0..e.validation.len()).collect();
        self.validation = concat(
            self.validation,
            LabeledRows {
                x: crate::stages::featurize::featurize_rows(
                    &features.featurizer,
                    &e.validation,
                    &rows,
                ),
                y: is_malicious(&e.validation),
            },
        )?;
        self.placed_validation = e.validation;
        Ok(self)
    }
}

/// The answered queries the student trains on: every one, or those label cleaning keeps (with
/// its report). Returns their query indices and rows.
fn answered_rows(
    config: &RunConfig,
    plan: &QueryPlan,
    features: &Features,
    labels: &[Option<bool>],
    answered: &[usize],
    env: &Env,
) -> Result<(Vec<usize>, LabeledRows, Option<CleaningReport>)> {
    let answered_rows = LabeledRows {
        x: features.queries_x.select_rows(answered),
        y: answered
            .iter()
            .map(|&i| labels[i].expect("answered"))
            .collect(),
    };
    let Some(cleaning) = &config.student.label_cleaning else {
        return Ok((answered.to_vec(), answered_rows, None));
    };
    super::banner(
        &format!(
            "label cleaning: {} folds, confidence {}",
            cleaning.folds, cleaning.confidence
        ),
        env.started,
    );
    let copies: Option<Vec<usize>> = config
        .student
        .multiplicity_cap
        .map(|_| answered.iter().map(|&i| plan.query_copies[i]).collect());
    let keep = crate::student::clean_labels(
        &answered_rows,
        copies.as_deref(),
        &features.validation,
        cleaning,
        &config.student.training,
        student_env(features, env),
    )?;
    let dropped: Vec<usize> = (0..answered.len())
        .filter(|&k| !keep[k])
        .map(|k| answered[k])
        .collect();
    let report = CleaningReport {
        dropped_malicious: dropped.iter().filter(|&&i| labels[i] == Some(true)).count(),
        dropped_benign: dropped
            .iter()
            .filter(|&&i| labels[i] == Some(false))
            .count(),
        dropped_wrong: features.queries_y.iter().any(Option::is_some).then(|| {
            dropped
                .iter()
                .filter(|&&i| features.queries_y[i].is_some_and(|t| Some(t) != labels[i]))
                .count()
        }),
    };
    tracing::info!(
        "label cleaning: left out {} malicious and {} benign labels",
        report.dropped_malicious,
        report.dropped_benign
    );
    let kept: Vec<usize> = (0..answered.len()).filter(|&k| keep[k]).collect();
    Ok((
        kept.iter().map(|&k| answered[k]).collect(),
        answered_rows.select(&kept),
        Some(report),
    ))
}

/// With `student.multiplicity_cap`: each training row's copies (the trained queries', the
/// validation-labelled drawn requests', one per public example) and each validation row's.
fn training_copies(
    config: &RunConfig,
    plan: &QueryPlan,
    trained: &[usize],
    sets: &StudentSets,
) -> Option<(Vec<usize>, Vec<usize>)> {
    config.student.multiplicity_cap.map(|_| {
        (
            trained
                .iter()
                .map(|&i| plan.query_copies[i])
                .chain(plan.validation_known_copies.iter().copied())
                .chain(std::iter::repeat_n(1, sets.public_examples))
                .collect::<Vec<_>>(),
            plan.validation_copies
                .iter()
                .copied()
                .chain(std::iter::repeat_n(1, sets.placed_validation.len()))
                .collect::<Vec<_>>(),
        )
    })
}

/// What choosing the thresholds reads.
#[derive(Clone, Copy)]
struct ThresholdContext<'a> {
    config: &'a RunConfig,
    data: &'a RunData,
    plan: &'a QueryPlan,
    features: &'a Features,
    env: &'a Env,
    /// The validation samples left out of the threshold's traffic (see [`excluded_traffic`]).
    excluded: &'a [bool],
}

impl ThresholdContext<'_> {
    /// The student's validation requests (`plan.validation_rows`), in order.
    fn validation_records(&self) -> impl Iterator<Item = &datasets::Record> {
        self.plan
            .validation_rows
            .iter()
            .map(|&i| &self.data.records[i])
    }
}

/// With `site.threshold_without_release_flagged` and labels from the release: the site's
/// validation traffic the release labels malicious (likely its attacks) is left out of the
/// traffic the threshold's budget is a share of. Post-processing of the release; nothing when
/// the release is unused or the flags are absent.
fn excluded_traffic(
    config: &RunConfig,
    release_flagged: &[bool],
    data: &RunData,
    plan: &QueryPlan,
) -> Vec<bool> {
    let on = config
        .site
        .as_ref()
        .is_some_and(|s| s.threshold_without_release_flagged)
        && config.student.labels_from == crate::config::LabelsFrom::Release
        && release_flagged.len() == plan.validation_rows.len();
    if !on {
        return Vec::new();
    }
    let excluded: Vec<bool> = plan
        .validation_rows
        .iter()
        .zip(release_flagged)
        .map(|(&i, &flagged)| flagged && data.records[i].label == Some(datasets::Label::Benign))
        .collect();
    tracing::info!(
        "student: {} of the {} validation requests of the site's traffic labelled malicious by \
         the release are left out of the threshold's traffic",
        excluded.iter().filter(|&&e| e).count(),
        excluded.len()
    );
    excluded
}

/// The validation split's scores the traffic diagnostic reads, after choosing the threshold
/// where the rule needs scores the training did not see: with placements, the validation
/// requests' scores as served (`served_threshold`); without, with `validation_rows` (the
/// traffic-counted target-FPR rule), the model's scores on them; else the model's scores.
fn validation_scores(
    cx: ThresholdContext,
    placed_validation: &[datasets::Record],
    benign_answered: &[usize],
    validation_rows: Option<LabeledRows>,
    (model, extras): (&mut ModelFile, &mut StudentExtras),
) -> Result<Vec<f32>> {
    let (student, plan, features, env) = (&cx.config.student, cx.plan, cx.features, cx.env);
    // The threshold holds its FPR budget on the validation requests counted with ALL their
    // copies (their traffic), not the training weights' `multiplicity_cap`: the budget is a rate
    // of the site's traffic. (Capped, the rare benign requests weighed up to ten times more than
    // on the traffic: a 1 % budget held 0.2-0.3 % on the test traffic, at 75-80 % TPR instead
    // of 93 %; EVALUATION.md.)
    let traffic = (student.multiplicity_cap.is_some() || !cx.excluded.is_empty()).then(|| {
        let site = features
            .validation_traffic
            .iter()
            .enumerate()
            .map(|(r, &c)| match student.multiplicity_cap {
                _ if cx.excluded.get(r) == Some(&true) => 0,
                Some(_) => c,
                // Each distinct request once, unless it left the traffic.
                None => usize::from(c > 0),
            });
        site.chain(std::iter::repeat_n(1, placed_validation.len()))
            .collect::<Vec<_>>()
    });
    if features.featurizer.config().placements.is_some() {
        return served_threshold(
            &cx,
            placed_validation,
            benign_answered,
            traffic.as_deref(),
            (model, extras),
        );
    }
    let (Some(validation), Some(traffic)) = (validation_rows, traffic.as_deref()) else {
        return super::evaluate::model_scores(model, &features.validation.x, env.device);
    };
    // `train_student_full` chose it on the capped copies: again on the traffic.
    let scores = super::evaluate::model_scores(model, &validation.x, env.device)?;
    let site = plan.validation_rows.len();
    let site_scores = scores[..site].to_vec();
    let reviewed = reviewed_copies(&cx, &scores, site, Some(traffic));
    choose_threshold(
        ThresholdInputs {
            scores,
            labels: validation.y,
            site_rows: site,
            copies: Some(reviewed.as_deref().unwrap_or(traffic)),
            spend_budget: cx.config.site.is_some(),
        },
        student,
        &env.rng,
        None,
        (model, extras),
    )?;
    tracing::info!(
        "student: threshold {} ({}{}) on {} validation requests counted with their traffic",
        model.info.threshold,
        extras.threshold_rule,
        confidence_note(student),
        site
    );
    Ok(site_scores)
}

/// The part model (`student.public_examples.part_model`), trained on the public parts.
fn train_part_model(
    config: &RunConfig,
    features: &Features,
    part_examples: Option<(PartExamples, PartExamples)>,
    env: &Env,
) -> Result<Option<ModelFile>> {
    let (Some((train, validation)), Some(pe)) =
        (part_examples, config.student.public_examples.as_ref())
    else {
        return Ok(None);
    };
    let training = &pe.part_model.as_ref().expect("part examples made").training;
    super::banner(
        &format!("part model on {} public parts", train.parts.len()),
        env.started,
    );
    let dim = features.featurizer.dim();
    // Each distinct benign part is one row weighted by its count: the same loss as its
    // copies (`MemberData::train_weights`) in a third of the rows. The held-out parts
    // (the best epoch's choice) count once each.
    let mut part = crate::student::train_student(
        train.rows(dim),
        Some(train.weights.clone()),
        validation.rows(dim),
        training,
        &features.hash,
        &env.rng,
        env.device,
    )?;
    part.info.role = crate::model_file::ModelRole::PartModel;
    Ok(Some(part))
}

/// TPR at FPR ≤ 1 % on the validation requests (`scores`, `labels`: one per
/// `plan.validation_rows`), each counted as often as it occurs in the student-validation split
/// (public data).
fn traffic_validation_tpr(
    model: &ModelFile,
    scores: &[f32],
    labels: &[bool],
    plan: &QueryPlan,
) -> Option<f64> {
    let (scores, labels): (Vec<f32>, Vec<bool>) = scores
        .iter()
        .zip(labels)
        .zip(&plan.validation_traffic)
        .flat_map(|((&s, &l), &c)| std::iter::repeat_n((s, l), c.max(1)))
        .unzip();
    let (_, roc) = super::evaluate::evaluate_scores(&scores, &labels, model.info.threshold);
    super::evaluate::tpr_at_fpr(&roc, 0.01)
}

/// `site.review` (a simulation): the `review` highest-scoring distinct requests of the site's
/// validation traffic still counted (not the attacks placed into it) are reviewed, and those
/// that are attacks (the simulation's labels) leave the traffic: `copies` (one per score: the
/// site's `site_rows`, then the placed examples) with theirs at 0. `None` without a review.
fn reviewed_copies(
    cx: &ThresholdContext,
    scores: &[f32],
    site_rows: usize,
    copies: Option<&[usize]>,
) -> Option<Vec<usize>> {
    let review = cx.config.site.as_ref().map_or(0, |s| s.review);
    if review == 0 {
        return None;
    }
    let rows = &cx.plan.validation_rows;
    let mut copies = copies.map_or_else(|| vec![1; scores.len()], <[usize]>::to_vec);
    // The traffic's requests only: the site's rows labelled malicious are placed attacks.
    let traffic = |r: usize| {
        copies[r] > 0 && cx.data.records[rows[r]].label != Some(datasets::Label::Malicious)
    };
    let mut order: Vec<usize> = (0..site_rows).filter(|&r| traffic(r)).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut attacks = 0;
    for &r in order.iter().take(review) {
        if cx.data.held_out_attacks.binary_search(&rows[r]).is_ok() {
            copies[r] = 0;
            attacks += 1;
        }
    }
    tracing::info!(
        "student: site.review: {attacks} of the {} highest-scoring validation requests of the \
         site's traffic are attacks (the simulation's labels, as an operator's review) and leave \
         the threshold's traffic",
        review.min(order.len())
    );
    Some(copies)
}

/// With the featurizer's `placements` the proxy scores a request by the highest score of its
/// windows, so the threshold is chosen again on the validation requests (and the placed
/// validation examples) scored that way ([`served_scores`]), by the same `threshold_rule`
/// (`answered_benign`: the answered queries labelled benign, scored that way); the validation
/// figures of `extras` are recomputed on those scores. Public data only: never the test split.
/// `validation_copies`: how often each validation request (then each placed example) counts.
/// Returns the served scores of the validation requests (one per `plan.validation_rows`).
fn served_threshold(
    cx: &ThresholdContext,
    placed_validation: &[datasets::Record],
    benign_answered: &[usize],
    validation_copies: Option<&[usize]>,
    (model, extras): (&mut ModelFile, &mut StudentExtras),
) -> Result<Vec<f32>> {
    let ThresholdContext {
        config,
        plan,
        features,
        env,
        ..
    } = *cx;
    let device = env.device;
    let records: Vec<&datasets::Record> =
        cx.validation_records().chain(placed_validation).collect();
    let site_rows = plan.validation_rows.len();
    let mut scores = served_scores(model, &features.featurizer, &records, device)?;
    if let Some(folds) = &features.validation_folds {
        // `featurizer.rarity_on: validation_benign`: each validation request with the table
        // its own fold is not counted in (the placed examples, public values in the site's
        // benign requests, with the served one).
        for fold in 0..featurize::VALIDATION_FOLDS {
            let rows: Vec<usize> = (0..site_rows)
                .filter(|&r| folds.fold(plan.validation_rows[r]) == fold)
                .collect();
            let fold_records: Vec<&datasets::Record> = rows.iter().map(|&r| records[r]).collect();
            let fold_scores = served_scores(model, folds.featurizer(fold), &fold_records, device)?;
            for (&r, s) in rows.iter().zip(fold_scores) {
                scores[r] = s;
            }
        }
    }
    let labels: Vec<bool> = records
        .iter()
        .map(|r| r.label == Some(datasets::Label::Malicious))
        .collect();
    let validation_scores = scores[..site_rows].to_vec();
    let reviewed = reviewed_copies(cx, &scores, site_rows, validation_copies);
    let validation_copies = reviewed.as_deref().or(validation_copies);
    let answered_benign = match config.student.threshold_rule {
        crate::config::ThresholdRule::AnsweredBenign => {
            let benign: Vec<&datasets::Record> = benign_answered
                .iter()
                .map(|&i| &cx.data.records[plan.query_rows[i]])
                .collect();
            let weights: Vec<usize> = benign_answered
                .iter()
                .map(|&i| plan.public_multiplicity[plan.query_order[i]])
                .collect();
            Some((
                served_scores(model, &features.featurizer, &benign, device)?,
                weights,
            ))
        }
        _ => None,
    };
    choose_threshold(
        ThresholdInputs {
            scores,
            labels,
            site_rows,
            copies: validation_copies,
            spend_budget: config.site.is_some(),
        },
        &config.student,
        &env.rng,
        answered_benign,
        (model, extras),
    )?;
    extras.served = Some(crate::report::ServedThreshold {
        validation_requests: records.len(),
        placed_public_examples: placed_validation.len(),
    });
    tracing::info!(
        "student: threshold {} ({}{}) on {} validation requests ({} placed public examples) scored as pate-proxy scores them (highest window)",
        model.info.threshold,
        extras.threshold_rule,
        confidence_note(&config.student),
        records.len(),
        placed_validation.len()
    );
    Ok(validation_scores)
}

/// `student.public_examples.content_only_validation`: the threshold for scoring content alone
/// (the featurizer without the site's format checks, as pate-proxy's `format_checks: false`):
/// the highest of the threshold that holds FPR ≤ `target_fpr` on the site's validation traffic
/// (the bundle's rule) and each placement's lowest threshold that holds FPR ≤ `validation_fpr`
/// on its placed benign values (the site's at `target_fpr_confidence`, the placements' all at
/// once at it: [`every_placement_confidence`]); with the bundle's part model,
/// on the highest of windows and parts. With `part_model.placement_offsets`, then the part
/// model's offsets per placement ([`part_offsets`]). Sets `model.info.content_only_threshold`,
/// `model.info.part_model_offsets` and `extras.content_only`.
fn content_only_threshold(
    cx: &ThresholdContext,
    (placed, part_model): (&[(Spot, datasets::Record)], Option<&ModelFile>),
    (model, extras): (&mut ModelFile, &mut StudentExtras),
) -> Result<()> {
    let ThresholdContext { features, env, .. } = *cx;
    let student = &cx.config.student;
    let public_examples = student.public_examples.as_ref();
    let budget = public_examples
        .and_then(|pe| pe.validation_fpr)
        .ok_or(Error::Threshold(
            "the content-only threshold needs public_examples.validation_fpr",
        ))?;
    let content = features.featurizer.clone().without_format_checks();
    let site = cx.validation_records().collect::<Vec<_>>();
    // The site's validation requests counted with their traffic (as the bundle's threshold).
    let site = OffsetRows {
        pieces: &served_pieces(model, part_model, &content, &site, env.device)?,
        malicious: &is_malicious(site.iter().copied()),
        copies: &(0..site.len())
            .map(|k| {
                student
                    .multiplicity_cap
                    .map_or(usize::from(features.validation_traffic[k] > 0), |_| {
                        features.validation_traffic[k]
                    })
            })
            .collect::<Vec<_>>(),
        budget: student.target_fpr,
    };
    let site_threshold = content_site_threshold(&site, student, env)?;
    let records: Vec<&datasets::Record> = placed.iter().map(|(_, r)| r).collect();
    let placed = PlacedScores {
        placed,
        pieces: served_pieces(model, part_model, &content, &records, env.device)?,
        malicious: is_malicious(records.iter().copied()),
    };
    let own = placement_thresholds(&placed, budget, student, env)?;
    let threshold = own.iter().copied().fold(site_threshold, f32::max);
    let offsets = match (
        part_model,
        public_examples.and_then(|pe| pe.part_model.as_ref()),
    ) {
        (Some(_), Some(pm)) if pm.placement_offsets => part_offsets(
            threshold,
            site,
            &placed,
            budget,
            every_placement_confidence(student),
            &mut env.rng.stream("part-model-offsets-confidence"),
        ),
        _ => bundle::PartOffsets::default(),
    };
    let placements = placement_report(&placed, &own, &offsets, threshold);
    tracing::info!(
        "student: content-only threshold {threshold} (site validation traffic: {site_threshold}; every placement's benign values at FPR <= {budget}); per placement, attacks / benign blocked: {}",
        placements
            .iter()
            .map(|p| format!(
                "{:?} (alone {}, part offset {:.2}) {:.1}/{:.1} %",
                p.placement,
                p.threshold,
                p.offset,
                100.0 * p.attacks_blocked,
                100.0 * p.benign_blocked
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    model.info.content_only_threshold = Some(threshold);
    model.info.part_model_offsets = offsets;
    extras.content_only = Some(crate::report::ContentOnlyThreshold {
        threshold,
        site_threshold,
        placements,
    });
    Ok(())
}

/// The content-only threshold the site's validation traffic allows (the bundle's rule, on the
/// content-only scores, each request counted with its copies).
fn content_site_threshold(
    site: &OffsetRows,
    student: &crate::config::StudentConfig,
    env: &Env,
) -> Result<f32> {
    let unshifted = bundle::PartOffsets::default();
    let (scores, labels): (Vec<f32>, Vec<bool>) = site
        .pieces
        .iter()
        .zip(site.malicious)
        .zip(site.copies)
        .flat_map(|((p, &m), &c)| std::iter::repeat_n((p.score(&unshifted), m), c))
        .collect();
    site_threshold(
        &scores,
        &labels,
        student,
        &env.rng,
        "content-only-threshold-confidence",
    )
    .ok_or(Error::Threshold(
        "the student validation samples need both classes",
    ))
}

/// The placed content-only validation requests with their served pieces and labels.
struct PlacedScores<'a> {
    placed: &'a [(Spot, datasets::Record)],
    pieces: Vec<ServedPieces>,
    malicious: Vec<bool>,
}

impl PlacedScores<'_> {
    /// The scores (parts shifted by `offsets`) and labels of the requests placed in `spot`.
    fn in_spot(&self, spot: Spot, offsets: &bundle::PartOffsets) -> (Vec<f32>, Vec<bool>) {
        self.placed
            .iter()
            .zip(self.pieces.iter().zip(&self.malicious))
            .filter(|((s, _), _)| *s == spot)
            .map(|(_, (p, &m))| (p.score(offsets), m))
            .unzip()
    }
}

/// Each placement's own threshold: the lowest that holds its benign values' budget (at the same
/// confidence as the site's), whatever the attack scores around it.
fn placement_thresholds(
    placed: &PlacedScores,
    budget: f64,
    student: &crate::config::StudentConfig,
    env: &Env,
) -> Result<Vec<f32>> {
    let unshifted = bundle::PartOffsets::default();
    let mut confidence_rng = env.rng.stream("content-only-placement-confidence");
    let mut own = Vec::with_capacity(crate::public_examples::PLACEMENTS.len());
    for spot in crate::public_examples::PLACEMENTS {
        let (s, l) = placed.in_spot(spot, &unshifted);
        let benign: Vec<f32> = s
            .iter()
            .zip(&l)
            .filter(|(_, &m)| !m)
            .map(|(&x, _)| x)
            .collect();
        own.push(
            crate::calibrate::lowest_benign_threshold(
                &benign,
                budget,
                every_placement_confidence(student),
                &mut confidence_rng,
            )
            .ok_or(Error::Threshold(
                "the content-only validation examples need benign values in every placement",
            ))?,
        );
    }
    Ok(own)
}

/// The confidence at which each placement's budget of the content-only threshold is held, so
/// that all of them hold at once at `target_fpr_confidence`
/// ([`crate::calibrate::joint_confidence`]); none without it.
fn every_placement_confidence(student: &crate::config::StudentConfig) -> Option<f64> {
    student
        .target_fpr_confidence
        .map(|c| crate::calibrate::joint_confidence(c, crate::public_examples::PLACEMENTS.len()))
}

/// Per placement: its own threshold, its part offset, and the shares of its attacks and benign
/// values blocked at `threshold` with the offsets.
fn placement_report(
    placed: &PlacedScores,
    own: &[f32],
    offsets: &bundle::PartOffsets,
    threshold: f32,
) -> Vec<crate::report::ContentOnlyPlacement> {
    let rate = |s: &[f32], l: &[bool], class: bool| {
        let n = l.iter().filter(|&&m| m == class).count();
        let hit = s
            .iter()
            .zip(l)
            .filter(|(&x, &m)| m == class && bundle::is_block(x, threshold))
            .count();
        hit as f64 / n.max(1) as f64
    };
    crate::public_examples::PLACEMENTS
        .into_iter()
        .zip(own)
        .map(|(spot, &own)| {
            let (s, l) = placed.in_spot(spot, offsets);
            crate::report::ContentOnlyPlacement {
                placement: spot,
                threshold: own,
                offset: offsets.get(spot.placement()),
                attacks_blocked: rate(&s, &l, true),
                benign_blocked: rate(&s, &l, false),
            }
        })
        .collect()
}

/// The site's validation requests for [`part_offsets`]: their pieces, labels, how often each
/// counts, and the share of the benign ones that may be blocked.
struct OffsetRows<'a> {
    pieces: &'a [ServedPieces],
    malicious: &'a [bool],
    copies: &'a [usize],
    budget: f64,
}

/// The step of [`search_offsets`] in logit units.
const OFFSET_STEP: f32 = 0.1;

/// The part model's offsets per placement (`part_model.placement_offsets`): one threshold held
/// where generic benign values score highest alone (a path, a header) leaves the budget of the
/// placements where they score low (query, form, bodies) unspent. The constraints
/// ([`search_offsets`]): in every spot at most its allowance of placed benign values blocked
/// (the `validation_fpr` budget at `confidence`, all at once: [`every_placement_confidence`],
/// resampled as the threshold's rule does), and
/// on the site's validation traffic at most its allowance at `target_fpr`. The 13 spots'
/// placements are shifted; a part of any other placement (a JSON key, an XML attribute) counts
/// as a window. Attack values are not read: an offset only rises while the benign budgets
/// allow.
fn part_offsets(
    threshold: f32,
    site: OffsetRows,
    placed: &PlacedScores,
    budget: f64,
    confidence: Option<f64>,
    rng: &mut impl rand::Rng,
) -> bundle::PartOffsets {
    let spots = crate::public_examples::PLACEMENTS;
    let shifted: Vec<featurizer::Placement> = spots.iter().map(|s| s.placement()).collect();
    let row = |pieces: &ServedPieces, copies: usize| {
        let slot = |p: featurizer::Placement| shifted.iter().position(|&q| q == p);
        OffsetRow {
            fixed: pieces
                .parts
                .iter()
                .filter(|(p, _)| slot(*p).is_none())
                .map(|&(_, s)| s)
                .fold(pieces.windows, f32::max),
            parts: pieces
                .parts
                .iter()
                .filter_map(|&(p, score)| {
                    slot(p).map(|slot| ShiftedPart {
                        slot,
                        score,
                        logit: logit(score),
                    })
                })
                .collect(),
            copies,
        }
    };
    let mut group = |rows: Vec<OffsetRow>, share: f64| {
        let unshifted: Vec<f32> = rows
            .iter()
            .flat_map(|r| std::iter::repeat_n(r.unshifted(), r.copies))
            .collect();
        OffsetGroup {
            allowed: crate::calibrate::benign_allowance(&unshifted, share, confidence, rng),
            rows,
        }
    };
    let mut groups = vec![group(
        site.pieces
            .iter()
            .zip(site.malicious)
            .zip(site.copies)
            .filter(|((_, &m), _)| !m)
            .map(|((p, _), &c)| row(p, c))
            .collect(),
        site.budget,
    )];
    for spot in spots {
        let rows = placed
            .placed
            .iter()
            .zip(placed.pieces.iter().zip(&placed.malicious))
            .filter(|((s, _), (_, &m))| *s == spot && !m)
            .map(|(_, (p, _))| row(p, 1))
            .collect();
        groups.push(group(rows, budget));
    }
    search_offsets(threshold, &shifted, groups)
}

/// A benign request of an [`OffsetGroup`]: the highest score of what is never shifted (windows,
/// parts of other placements), its shifted parts, and how often it counts.
struct OffsetRow {
    fixed: f32,
    parts: Vec<ShiftedPart>,
    copies: usize,
}

/// A part of a shifted placement (`slot` in the placements searched): its score and logit.
struct ShiftedPart {
    slot: usize,
    score: f32,
    logit: f64,
}

impl OffsetRow {
    /// Its score with no offset.
    fn unshifted(&self) -> f32 {
        self.parts
            .iter()
            .map(|p| p.score)
            .fold(self.fixed, f32::max)
    }
}

/// Benign requests of which at most `allowed` (counted with their copies) may be blocked.
struct OffsetGroup {
    rows: Vec<OffsetRow>,
    allowed: usize,
}

impl OffsetGroup {
    /// How many are blocked at `threshold` with `shifted(part)` the part's score.
    fn blocked(&self, threshold: f32, shifted: impl Fn(&ShiftedPart) -> bool) -> usize {
        self.rows
            .iter()
            .filter(|r| bundle::is_block(r.fixed, threshold) || r.parts.iter().any(&shifted))
            .map(|r| r.copies)
            .sum()
    }
}

/// The offsets of `placements` (in logit units, [`bundle::PartOffsets`]): starting from none,
/// each placement in turn is raised by [`OFFSET_STEP`] while no group blocks more than its
/// allowance at `threshold`, until none can rise (round robin, so that no placement spends a
/// shared context's budget first). The start is the one threshold's decisions; an allowance
/// below what the start blocks is raised to it, so the offsets never make a group worse. The
/// search compares logits; the result is checked with the served shift
/// ([`bundle::PartOffsets::shift`], f32) and every offset steps back until that holds too.
fn search_offsets(
    threshold: f32,
    placements: &[featurizer::Placement],
    mut groups: Vec<OffsetGroup>,
) -> bundle::PartOffsets {
    let cut = logit(threshold);
    fn by_logit(d: &[f64], cut: f64) -> impl Fn(&ShiftedPart) -> bool + '_ {
        move |p| p.logit + d[p.slot] >= cut
    }
    let mut d = vec![0.0f64; placements.len()];
    for g in &mut groups {
        g.allowed = g.allowed.max(g.blocked(threshold, by_logit(&d, cut)));
    }
    let feasible = |d: &[f64]| {
        groups
            .iter()
            .all(|g| g.blocked(threshold, by_logit(d, cut)) <= g.allowed)
    };
    let step = f64::from(OFFSET_STEP);
    let mut rising = vec![true; placements.len()];
    while rising.iter().any(|&r| r) {
        for k in 0..placements.len() {
            if !rising[k] {
                continue;
            }
            let before = d[k];
            d[k] = before + step;
            if d[k] > f64::from(bundle::PartOffsets::MAX) || !feasible(&d) {
                d[k] = before;
                rising[k] = false;
            }
        }
    }
    loop {
        let offsets = bundle::PartOffsets::new(
            placements
                .iter()
                .zip(&d)
                .filter(|(_, &x)| x > 0.0)
                .map(|(&p, &x)| (p, x as f32))
                .collect(),
        )
        .expect("offsets in [0, MAX] by construction");
        let served = |p: &ShiftedPart| {
            bundle::is_block(offsets.shift(placements[p.slot], p.score), threshold)
        };
        if d.iter().all(|&x| x == 0.0)
            || groups
                .iter()
                .all(|g| g.blocked(threshold, served) <= g.allowed)
        {
            return offsets;
        }
        for x in &mut d {
            *x = (*x - step).max(0.0);
        }
    }
}

fn logit(p: f32) -> f64 {
    let p = f64::from(p).clamp(1e-12, 1.0 - 1e-12);
    (p / (1.0 - p)).ln()
}

/// The threshold that holds `target_fpr` on the site's validation rows (`scores`, `labels`,
/// each row as often as it counts), at `target_fpr_confidence` when set (its resamplings from
/// the run's stream `purpose`). `None` when a class is absent.
fn site_threshold(
    scores: &[f32],
    labels: &[bool],
    student: &crate::config::StudentConfig,
    rng: &RunRng,
    purpose: &str,
) -> Option<f32> {
    match student.target_fpr_confidence {
        None => crate::calibrate::target_fpr_threshold(scores, labels, student.target_fpr),
        Some(confidence) => crate::calibrate::confident_target_fpr_threshold(
            scores,
            labels,
            student.target_fpr,
            confidence,
            &mut rng.stream(purpose),
        ),
    }
}

/// ` at confidence C` when `target_fpr_confidence` is set (for log lines), else nothing.
fn confidence_note(student: &crate::config::StudentConfig) -> String {
    student
        .target_fpr_confidence
        .map(|c| format!(" at confidence {c}"))
        .unwrap_or_default()
}

/// The validation rows a threshold is chosen on: the site's validation requests first
/// (`site_rows` of them), then any placed public examples.
struct ThresholdInputs<'a> {
    scores: Vec<f32>,
    labels: Vec<bool>,
    site_rows: usize,
    /// How often each row counts (the site's requests: their traffic); `None`: once each.
    copies: Option<&'a [usize]>,
    /// `target_fpr`: the lowest threshold holding the budget on the site's benign rows, not the
    /// highest-TPR point within it. With `site:` the validation attacks are placed public
    /// values, caught in full far above the budget's threshold, so the highest-TPR point on them
    /// spends a small part of the budget and misses the site's own kind of attack.
    spend_budget: bool,
}

/// Sets `model`'s threshold by `student.threshold_rule` on `inputs` and recomputes the validation
/// figures of `extras` at it. With `public_examples.validation_fpr` the placed examples get their
/// own false-positive budget (the higher threshold of the two is taken); otherwise they count
/// with the site's requests. `answered_benign`: the scores and weights of the answered queries
/// labelled benign (needed by `threshold_rule: answered_benign` only).
fn choose_threshold(
    inputs: ThresholdInputs<'_>,
    student: &crate::config::StudentConfig,
    rng: &RunRng,
    answered_benign: Option<(Vec<f32>, Vec<usize>)>,
    (model, extras): (&mut ModelFile, &mut StudentExtras),
) -> Result<()> {
    let ThresholdInputs {
        mut scores,
        mut labels,
        site_rows,
        copies,
        spend_budget,
    } = inputs;
    // `public_examples.validation_fpr`: the placed examples' own budget (their scores and
    // labels, before the site's requests are counted with their traffic).
    let placed_budget = student
        .public_examples
        .as_ref()
        .and_then(|pe| pe.validation_fpr)
        .filter(|_| scores.len() > site_rows)
        .map(|fpr| {
            (
                scores.split_off(site_rows),
                labels.split_off(site_rows),
                fpr,
            )
        });
    if let Some(copies) = copies {
        let copies = &copies[..scores.len()];
        let (s, l): (Vec<f32>, Vec<bool>) = scores
            .iter()
            .zip(&labels)
            .zip(copies)
            // 0 copies: a row left out of the traffic ([`excluded_traffic`]).
            .flat_map(|((&s, &l), &c)| std::iter::repeat_n((s, l), c))
            .unzip();
        (scores, labels) = (s, l);
    }
    let both = || Error::Threshold("the student validation samples need both classes");
    let threshold = match student.threshold_rule {
        crate::config::ThresholdRule::Youden => {
            crate::metrics::youden_threshold(&scores, &labels).ok_or_else(both)?
        }
        crate::config::ThresholdRule::TargetFpr => {
            let site = if spend_budget {
                let benign: Vec<f32> = scores
                    .iter()
                    .zip(&labels)
                    .filter(|(_, &malicious)| !malicious)
                    .map(|(&s, _)| s)
                    .collect();
                crate::calibrate::lowest_benign_threshold(
                    &benign,
                    student.target_fpr,
                    student.target_fpr_confidence,
                    &mut rng.stream("threshold-confidence"),
                )
            } else {
                site_threshold(&scores, &labels, student, rng, "threshold-confidence")
            }
            .ok_or_else(both)?;
            match &placed_budget {
                // With `site:` (`spend_budget`) the placed examples' budget is the content-only
                // threshold's, per placement; this one holds the site's traffic budget alone.
                None => site,
                Some(_) if spend_budget => site,
                Some((s, l, fpr)) => {
                    let placed = crate::calibrate::target_fpr_threshold(s, l, *fpr).ok_or(
                        Error::Threshold("the placed validation examples need both classes"),
                    )?;
                    tracing::info!(
                        "student: threshold {site} holds FPR <= {} on the site's validation traffic{}, {placed} FPR <= {fpr} on the placed public examples: the higher is taken",
                        student.target_fpr,
                        confidence_note(student)
                    );
                    site.max(placed)
                }
            }
        }
        crate::config::ThresholdRule::AnsweredBenign => {
            let (s, weights) =
                answered_benign.ok_or(Error::Threshold("no answered query was scored"))?;
            crate::calibrate::weighted_quantile_threshold(&s, &weights, student.target_fpr)
                .ok_or(Error::Threshold("no answered query was labelled benign"))?
        }
    };
    model.info.threshold = threshold;
    if let Some((s, l, _)) = placed_budget {
        // The validation figures below over every validation request, as without the budget.
        scores.extend(s);
        labels.extend(l);
    }
    let (m, roc) = super::evaluate::evaluate_scores(&scores, &labels, threshold);
    extras.validation_operating_point = m.fpr.zip(m.tpr);
    extras.validation_roc_auc = m.roc_auc;
    extras.validation_tpr_at_1pct_fpr = super::evaluate::tpr_at_fpr(&roc, 0.01);
    Ok(())
}

/// The student from the queries' features and their noisy labels alone (the `student`
/// subcommand: no split, so no traffic weights, and each answered query labelled benign counts
/// once for `threshold_rule: answered_benign`); `label_cleaning` as in `run`, without weights.
pub fn from_labels(
    config: &RunConfig,
    queries: &DenseMatrix,
    labels: &[Option<bool>],
    validation: LabeledRows,
    pool: Option<&DenseMatrix>,
    env: StudentEnv,
) -> Result<(ModelFile, StudentExtras)> {
    let answered: Vec<usize> = (0..labels.len()).filter(|&i| labels[i].is_some()).collect();
    let benign_rows: Vec<usize> = answered
        .iter()
        .copied()
        .filter(|&i| labels[i] == Some(false))
        .collect();
    let benign_x = queries.select_rows(&benign_rows);
    let benign_weights = vec![1usize; benign_rows.len()];
    let mut train = LabeledRows {
        x: queries.select_rows(&answered),
        y: answered.iter().filter_map(|&i| labels[i]).collect(),
    };
    if let Some(cleaning) = &config.student.label_cleaning {
        let keep = crate::student::clean_labels(
            &train,
            None,
            &validation,
            cleaning,
            &config.student.training,
            env,
        )?;
        let kept: Vec<usize> = (0..keep.len()).filter(|&k| keep[k]).collect();
        tracing::info!(
            "label cleaning: left out {} of {} answered labels",
            keep.len() - kept.len(),
            keep.len()
        );
        train = train.select(&kept);
    }
    crate::student::train_student_full(
        train,
        validation,
        None,
        pool,
        Some((&benign_x, &benign_weights)),
        &config.student,
        env,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The validation examples' templates: every benign validation request but one a public
    /// detector calls an attack; not a placed attack.
    #[test]
    fn the_templates_are_the_benign_requests_no_detector_calls_an_attack() {
        use datasets::{Label, Record};
        let records = vec![
            Record::get("/feed", Some(Label::Benign)),
            Record::get("/?page=1'--", Some(Label::Benign)),
            Record::get("/?page=<script>", Some(Label::Malicious)),
            Record::get("/about", Some(Label::Benign)),
        ];
        let templates = validation_templates(&records, &[3, 0, 1, 2], &[false, false, true, false]);
        let targets: Vec<&[u8]> = templates.iter().map(|r| r.target.as_slice()).collect();
        assert_eq!(targets, [&b"/about"[..], b"/feed"]);
    }
    use crate::ensemble::TrainConfig;
    use crate::student::train_student;

    /// The public examples' benign templates: the queries the teachers labelled benign, and the
    /// public copy of each drawn request the validation split labels benign (not the validation
    /// sample, not one it labels malicious, not a known request the draw reached after its last
    /// query). Without the second kind the part model never saw the site's frequent pages.
    #[test]
    fn benign_templates_are_the_benign_queries_and_the_validation_splits_known_benign_requests() {
        let record = datasets::Record::get;
        use datasets::Label::{Benign, Malicious};
        // Public 0..5 (unlabelled), validation 5..8.
        let records = vec![
            record("/q0", None),
            record("/q1", None),
            record("/home", None),
            record("/attack", None),
            record("/late", None),
            record("/home", Some(Benign)),
            record("/attack", Some(Malicious)),
            record("/late", Some(Benign)),
        ];
        // The draw: /q0 and /q1 asked, /home and /attack known, /late after the last query.
        let plan = QueryPlan {
            distinct_public: vec![0, 1, 2, 3, 4],
            query_order: vec![0, 1, 2, 3, 4],
            query_rows: vec![0, 1],
            pool_rows: vec![4],
            distinct_validation: 3,
            validation_rows: vec![5, 6, 7],
            validation_known: vec![0, 1],
            validation_known_copies: vec![1, 1],
            public_multiplicity: vec![1; 5],
            query_copies: vec![1, 1],
            validation_copies: vec![1; 3],
            validation_traffic: vec![1; 3],
        };
        assert_eq!(
            plan.validation_known_pairs().collect::<Vec<_>>(),
            vec![(2, 5), (3, 6)]
        );
        // The teachers labelled /q1 benign (answered position 1).
        let templates = benign_templates(&records, &plan, &[1]);
        let targets: Vec<&[u8]> = templates.iter().map(|r| r.target.as_slice()).collect();
        assert_eq!(targets, vec![b"/q1".as_slice(), b"/home".as_slice()]);
        assert!(
            std::ptr::eq(templates[1], &records[2]),
            "the public copy, not the validation sample"
        );
    }

    /// `search_offsets`: each placement rises as far as every group's allowance allows and no
    /// further — a query part of 0.3 may cross a threshold of 0.5 (allowance 1) but not the one of
    /// 0.2 (its crossing at logit 1.386), a path part of 0.45 may not (allowance 0: 0.2 < 0.2007)
    /// — and a group already over its allowance at the start (a window of 0.9) stops nothing.
    #[test]
    fn each_offset_rises_until_a_benign_budget_would_be_exceeded() {
        use featurizer::Placement;
        let part = |slot: usize, score: f32| ShiftedPart {
            slot,
            score,
            logit: logit(score),
        };
        let row = |fixed: f32, parts: Vec<ShiftedPart>| OffsetRow {
            fixed,
            parts,
            copies: 1,
        };
        let groups = vec![
            OffsetGroup {
                rows: vec![
                    row(0.0, vec![part(0, 0.1)]),
                    row(0.0, vec![part(0, 0.2)]),
                    row(0.0, vec![part(0, 0.3)]),
                ],
                allowed: 1,
            },
            OffsetGroup {
                rows: vec![row(0.0, vec![part(1, 0.45)]), row(0.0, vec![part(1, 0.4)])],
                allowed: 0,
            },
            OffsetGroup {
                rows: vec![row(0.9, vec![])],
                allowed: 0,
            },
        ];
        let placements = [Placement::Query, Placement::Path];
        let offsets = search_offsets(0.5, &placements, groups);
        let query = offsets.get(Placement::Query);
        let path = offsets.get(Placement::Path);
        assert!((1.25..1.386).contains(&query), "{offsets:?}");
        assert!((0.15..0.2007).contains(&path), "{offsets:?}");
        assert!(offsets.shift(Placement::Query, 0.3) >= 0.5);
        assert!(offsets.shift(Placement::Query, 0.2) < 0.5);
        assert!(offsets.shift(Placement::Path, 0.45) < 0.5);
        // Nothing to spend: no offset.
        let none = search_offsets(
            0.5,
            &placements,
            vec![OffsetGroup {
                rows: vec![row(0.0, vec![part(0, 0.49), part(1, 0.49)])],
                allowed: 0,
            }],
        );
        assert!(none.is_empty(), "{none:?}");
    }

    fn record(target: &str, body: Option<&str>) -> datasets::Record {
        datasets::Record {
            method: if body.is_some() { "POST" } else { "GET" }.into(),
            target: target.as_bytes().to_vec(),
            body: body.map(|b| b.as_bytes().to_vec()),
            headers: body
                .map(|_| vec![("Content-Type".to_string(), b"text/plain".to_vec())])
                .unwrap_or_default(),
            label: None,
            line: 1,
            client: None,
        }
    }

    /// Served scores are the highest window's score of each request, windows scored in one batch
    /// and given back to the right request: a request whose attack lies beyond its first window
    /// scores as its attack window, others as their one window. With a part model and offsets,
    /// the served pieces score as `bundle::score_request_and_parts` does.
    #[test]
    fn served_scores_are_the_highest_window_of_each_request() {
        let config = featurizer::FeaturizerConfig {
            top_k: 50,
            max_input_bytes: 64,
            placements: Some(featurizer::PlacementConfig::default()),
            ..featurizer::FeaturizerConfig::default()
        };
        let docs = [
            record("/a?q=' or 1=1--", None),
            record("/a?q=hello+world", None),
        ];
        let f = featurizer::Featurizer::fit(config, docs.iter().map(|r| r.parts())).unwrap();
        let dense = |r: &datasets::Record| f.transform_dense(&r.parts());
        let rows = |rs: &[datasets::Record]| {
            DenseMatrix::new(rs.len(), f.dim(), rs.iter().flat_map(&dense).collect()).unwrap()
        };
        let train_set = [
            record("/a?q=' or 1=1--", None),
            record("/a?q=hello+world", None),
            record("/a?q=' union select 1--", None),
            record("/a?q=hello", None),
        ];
        let y = vec![true, false, true, false];
        let train = LabeledRows {
            x: rows(&train_set),
            y: y.clone(),
        };
        let training = TrainConfig {
            hidden: vec![4],
            max_epochs: 60,
            batch_size: 4,
            learning_rate: 0.05,
            patience: 60,
            ..TrainConfig::default()
        };
        let rng = RunRng::new(Some(7)).unwrap();
        let model = train_student(
            train.clone(),
            None,
            train,
            &training,
            "h",
            &rng,
            tch::Device::Cpu,
        )
        .unwrap();
        let padded = format!("{}' or 1=1--", "hello world ".repeat(20));
        let requests = [
            record("/a?q=hello+world", None),
            record("/a", Some(&padded)),
            record("/a?q=' or 1=1--", None),
        ];
        let refs: Vec<&datasets::Record> = requests.iter().collect();
        let served = served_scores(&model, &f, &refs, tch::Device::Cpu).unwrap();
        // One vector scored alone.
        let one = |v: &featurizer::SparseVector| {
            let mut dense = vec![0f32; f.dim()];
            v.write_dense(&mut dense);
            super::super::evaluate::model_scores(
                &model,
                &DenseMatrix::new(1, f.dim(), dense).unwrap(),
                tch::Device::Cpu,
            )
            .map(|s| s[0])
        };
        // Each request on its own: every window scored alone, the highest kept.
        for (r, &s) in requests.iter().zip(&served) {
            let mut windows = Vec::new();
            f.transform_windows(&r.parts(), &mut windows);
            let best = windows
                .iter()
                .map(|w| one(w).unwrap())
                .fold(f32::MIN, f32::max);
            assert!((best - s).abs() < 1e-6, "{best} vs {s}");
        }
        let first_window = |r: &datasets::Record| {
            super::super::evaluate::model_scores(
                &model,
                &DenseMatrix::new(1, f.dim(), dense(r)).unwrap(),
                tch::Device::Cpu,
            )
            .unwrap()[0]
        };
        // The padded attack: its first window is benign text, its served score the attack's.
        assert!(
            first_window(&requests[1]) < 0.5,
            "{}",
            first_window(&requests[1])
        );
        assert!(served[1] > 0.5, "{served:?}");
        assert!(served[0] < 0.5 && served[2] > 0.5, "{served:?}");
        // With a part model (the same network here) and an offset on the query's parts, the
        // pieces give what `bundle::score_request_and_parts` gives the proxy, request by request.
        let offsets =
            bundle::PartOffsets::new([(featurizer::Placement::Query, 2.0)].into_iter().collect())
                .unwrap();
        let pieces = served_pieces(&model, Some(&model), &f, &refs, tch::Device::Cpu).unwrap();
        let mut shifted = 0;
        for (r, piece) in requests.iter().zip(&pieces) {
            let served = bundle::score_request_and_parts(&f, &r.parts(), &offsets, one, one)
                .unwrap()
                .score;
            assert!(
                (piece.score(&offsets) - served).abs() < 1e-6,
                "{piece:?} vs {served}"
            );
            shifted += usize::from(piece.score(&offsets) > piece.score(&Default::default()));
        }
        assert!(
            shifted > 0,
            "no query part was shifted above its windows: {pieces:?}"
        );
    }
    /// The threshold's FPR budget is a rate of the validation TRAFFIC: with every copy of a
    /// frequent benign page counted, ten rare benign requests are 1 % of the benign traffic and
    /// may be flagged, so an attack scored under them is caught; counted with the training
    /// weights' cap (10 copies a request) the same ten are half the benign rows, none may be
    /// flagged, and the attack passes. (The trainer passes the traffic: `run`'s `traffic`.)
    #[test]
    fn the_threshold_holds_its_budget_on_the_validation_traffic() {
        let rows = LabeledRows {
            x: DenseMatrix::new(2, 1, vec![0.0, 1.0]).unwrap(),
            y: vec![false, true],
        };
        let training = TrainConfig {
            hidden: vec![],
            max_epochs: 1,
            batch_size: 2,
            ..TrainConfig::default()
        };
        let rng = RunRng::new(Some(7)).unwrap();
        let mut model = train_student(
            rows.clone(),
            None,
            rows,
            &training,
            "h",
            &rng,
            tch::Device::Cpu,
        )
        .unwrap();
        // A frequent benign page (990 copies), ten rare benign requests, two attacks.
        let mut scores = vec![0.1f32];
        let mut labels = vec![false];
        let mut traffic = vec![990usize];
        for k in 0..10 {
            scores.push(0.50 + 0.01 * k as f32);
            labels.push(false);
            traffic.push(1);
        }
        scores.extend([0.45, 0.95]);
        labels.extend([true, true]);
        traffic.extend([5, 1]);
        let capped: Vec<usize> = traffic.iter().map(|&c| c.min(10)).collect();
        let student = crate::config::StudentConfig {
            threshold_rule: crate::config::ThresholdRule::TargetFpr,
            target_fpr: 0.01,
            target_fpr_confidence: None,
            ..crate::config::StudentConfig::default()
        };
        let mut threshold = |copies: &[usize]| {
            let mut extras = StudentExtras::default();
            let inputs = ThresholdInputs {
                scores: scores.clone(),
                labels: labels.clone(),
                site_rows: scores.len(),
                copies: Some(copies),
                spend_budget: false,
            };
            choose_threshold(inputs, &student, &rng, None, (&mut model, &mut extras)).unwrap();
            let (fpr, tpr) = extras.validation_operating_point.unwrap();
            (model.info.threshold, fpr, tpr)
        };
        let (on_traffic, fpr, tpr) = threshold(&traffic);
        assert!(on_traffic <= 0.45, "{on_traffic}");
        assert!(fpr <= 0.01 && tpr == 1.0, "fpr {fpr} tpr {tpr}");
        let (on_capped, fpr, tpr) = threshold(&capped);
        assert!(on_capped > 0.59, "{on_capped}");
        assert!(fpr == 0.0 && tpr < 1.0, "fpr {fpr} tpr {tpr}");
    }
}
