//! Why a request scored what it did: the features that contributed most to ITS score, read from
//! the exported network and the request alone.
//!
//! - A linear student (one layer, `logit = b + Σ_j w_j·x_j`): feature `j` contributes
//!   `w_j·x_j`, exactly; the baseline is `b`.
//! - A network with hidden layers: integrated gradients (Sundararajan et al., "Axiomatic
//!   Attribution for Deep Networks", ICML 2017) from the empty vector, `x_j · ∫₀¹ ∂logit/∂x_j
//!   (αx) dα`, by the midpoint rule; the baseline is the logit of the empty vector. The
//!   contributions sum to `logit − baseline` up to the rule's error: the steps double from
//!   [`FIRST_STEPS`] until that error is at most [`COMPLETENESS_TOLERANCE`] (or
//!   [`MAX_STEPS`] is reached), and the error left is reported.
//!
//! The logit is the model's output before the sigmoid (`score = sigmoid(logit)`); for a part
//! scored by the model of single parts it is the part model's, before its placement's offset.
use featurizer::{
    snippet, FeatureSource, Featurizer, Placement, RequestParts, RequestSegments, SparseVector,
};
use serde::Serialize;

use crate::sparse::SparseMlp;
use crate::{BundleError, InputProblem};

/// Integrated gradients start with this many steps.
pub const FIRST_STEPS: usize = 16;
/// … and double up to this many.
pub const MAX_STEPS: usize = 256;
/// Largest |logit − baseline − Σ contributions| integrated gradients stop at, in logit units.
pub const COMPLETENESS_TOLERANCE: f32 = 1e-3;

/// How the contributions were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttributionMethod {
    /// `w_j·x_j` of a linear model (exact).
    WeightTimesValue,
    /// Integrated gradients from the empty vector with this many midpoint steps.
    IntegratedGradients {
        /// Steps of the midpoint rule.
        steps: usize,
    },
}

/// Every non-zero feature's contribution to one vector's logit.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribution {
    /// The network's logit for the vector.
    pub logit: f32,
    /// The logit of the empty vector (a linear model's bias).
    pub baseline: f32,
    /// One per input non-zero, in the order of the input's indices.
    pub contributions: Vec<f32>,
    /// How they were computed.
    pub method: AttributionMethod,
}

impl Attribution {
    /// `logit − baseline − Σ contributions`: 0 for a linear model up to float rounding.
    pub fn residual(&self) -> f32 {
        self.logit - self.baseline - self.contributions.iter().sum::<f32>()
    }
}

impl SparseMlp {
    /// The contribution of every non-zero of the sparse vector (`indices`, `values`) to its
    /// logit (see the module documentation).
    pub fn attribute(&self, indices: &[u32], values: &[f32]) -> Result<Attribution, BundleError> {
        self.check_input(indices, values)?;
        let logit = last_logit(&self.pre_activations(indices, values, 1.0));
        let baseline = last_logit(&self.pre_activations(&[], &[], 1.0));
        if self.layers.len() == 1 {
            let gradient = self.input_gradient(&[], indices);
            return Ok(Attribution {
                logit,
                baseline,
                contributions: values.iter().zip(&gradient).map(|(x, g)| x * g).collect(),
                method: AttributionMethod::WeightTimesValue,
            });
        }
        let mut steps = FIRST_STEPS;
        loop {
            let attribution = Attribution {
                logit,
                baseline,
                contributions: self.integrated_gradients(indices, values, steps),
                method: AttributionMethod::IntegratedGradients { steps },
            };
            if attribution.residual().abs() <= COMPLETENESS_TOLERANCE || steps >= MAX_STEPS {
                return Ok(attribution);
            }
            steps *= 2;
        }
    }

    fn check_input(&self, indices: &[u32], values: &[f32]) -> Result<(), BundleError> {
        if indices.len() != values.len() {
            return Err(BundleError::Input(InputProblem::IndexValueCount {
                indices: indices.len(),
                values: values.len(),
            }));
        }
        let dim = self.input_dim();
        match indices.iter().find(|&&i| i as usize >= dim) {
            Some(&index) => Err(BundleError::Input(InputProblem::FeatureIndex {
                index,
                dim,
            })),
            None => Ok(()),
        }
    }

    /// `x_j · mean over α = (s + ½)/steps of ∂logit/∂x_j (αx)`, per non-zero.
    fn integrated_gradients(&self, indices: &[u32], values: &[f32], steps: usize) -> Vec<f32> {
        let mut mean = vec![0.0f64; indices.len()];
        for s in 0..steps {
            let alpha = (s as f32 + 0.5) / steps as f32;
            let pre = self.pre_activations(indices, values, alpha);
            for (m, g) in mean.iter_mut().zip(self.input_gradient(&pre, indices)) {
                *m += f64::from(g);
            }
        }
        mean.iter()
            .zip(values)
            .map(|(m, &x)| (m / steps as f64) as f32 * x)
            .collect()
    }

    /// Every layer's pre-activations (before ReLU) for the input `alpha · x`.
    fn pre_activations(&self, indices: &[u32], values: &[f32], alpha: f32) -> Vec<Vec<f32>> {
        let scaled: Vec<f32> = values.iter().map(|v| v * alpha).collect();
        let mut pre = Vec::with_capacity(self.layers.len());
        let mut z = Vec::new();
        self.layers[0].accumulate(indices, &scaled, &mut z);
        for layer in &self.layers[1..] {
            let (active, activation): (Vec<u32>, Vec<f32>) = z
                .iter()
                .enumerate()
                .filter(|(_, &a)| a > 0.0)
                .map(|(j, &a)| (j as u32, a))
                .unzip();
            let mut next = Vec::new();
            layer.accumulate(&active, &activation, &mut next);
            pre.push(std::mem::replace(&mut z, next));
        }
        pre.push(z);
        pre
    }

    /// `∂logit/∂x_j` at the input whose hidden pre-activations are `pre` (all but the last
    /// layer's are read; a linear model has none), for each `j` of `indices`.
    fn input_gradient(&self, pre: &[Vec<f32>], indices: &[u32]) -> Vec<f32> {
        // ∂logit/∂(the last layer's output) = 1; back through each layer's weights and ReLU.
        let mut delta = vec![1.0f32];
        for l in (1..self.layers.len()).rev() {
            let layer = &self.layers[l];
            delta = (0..layer.in_dim)
                .map(|j| {
                    if pre[l - 1][j] > 0.0 {
                        dot(layer.row(j), &delta)
                    } else {
                        0.0
                    }
                })
                .collect();
        }
        let first = &self.layers[0];
        indices
            .iter()
            .map(|&j| dot(first.row(j as usize), &delta))
            .collect()
    }
}

impl crate::sparse::TransposedLayer {
    /// The weights from input `j` to every output.
    fn row(&self, j: usize) -> &[f32] {
        &self.weight_t[j * self.out_dim..(j + 1) * self.out_dim]
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn last_logit(pre: &[Vec<f32>]) -> f32 {
    pre.last().and_then(|z| z.first()).copied().unwrap_or(0.0)
}

/// One feature's contribution to a request's score, where it comes from in the request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contribution {
    /// The feature as the featurizer's vocabulary names it (`union`, `p:rare:email`,
    /// `pl:li:sqli`, `pl:query=symbols`, …).
    pub feature: String,
    /// Its contribution to the logit (positive: towards malicious).
    pub contribution: f32,
    /// The placement of the part that carries it (`query`, `path`, `hdr:cookie`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<&'static str>,
    /// That part's name (query parameter, header, cookie, JSON key, …) where it has one, at most
    /// [`featurizer::SNIPPET_CHARS`] characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// At most [`featurizer::SNIPPET_CHARS`] characters of the part's decoded value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// The part that the model of single parts scored, when its score was the request's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExplainedPart {
    /// Its placement.
    pub placement: &'static str,
    /// Its name, where it has one, at most [`featurizer::SNIPPET_CHARS`] characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// At most [`featurizer::SNIPPET_CHARS`] characters of its decoded value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// Why a request scored what it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// Which model's score was the request's: `student` or `part_model`.
    pub model: &'static str,
    /// With `part_model`: the part it scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<ExplainedPart>,
    /// A coarse class where one is known: the family of the public-prior feature that
    /// contributed most (`sqli`, `xss`, `traversal`, `system_file`, `shell`, `long_run`) or the
    /// format check (`format: rare value of email`, `format: path unseen in the public pool`, …),
    /// whichever contributed more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// How the contributions were computed.
    pub method: AttributionMethod,
    /// The model's logit.
    pub logit: f32,
    /// The logit of the empty vector.
    pub baseline: f32,
    /// The largest contributions (none of 0), largest first.
    pub top: Vec<Contribution>,
    /// The sum of every other contribution (`baseline + Σ top + others ≈ logit`).
    pub others: f32,
}

/// Which model's score a request's is, and the vector it scored.
#[derive(Debug, Clone, Copy)]
pub struct ScoredVector<'v> {
    /// The vector that scored highest.
    pub features: &'v SparseVector,
    /// `Some(placement)` when the model of single parts scored it (a part of that placement).
    pub part: Option<Placement>,
}

/// Explains `scored` (a vector of `req` under `featurizer`) scored by `model` (the student, or
/// the part model for a part): its `n` largest contributions, each with its part of `req`.
pub fn explain_vector(
    featurizer: &Featurizer,
    model: &SparseMlp,
    req: &RequestParts,
    scored: ScoredVector<'_>,
    n: usize,
) -> Result<Explanation, BundleError> {
    explain_vector_segmented(featurizer, model, req, scored, n, None)
}

/// [`explain_vector`], with `segments` what scoring `req` with `featurizer` kept
/// ([`Featurizer::transform_windows_segmented`]): the same explanation, without asking the
/// public priors about each part again ([`Featurizer::feature_sources_segmented`]).
pub fn explain_vector_segmented(
    featurizer: &Featurizer,
    model: &SparseMlp,
    req: &RequestParts,
    scored: ScoredVector<'_>,
    n: usize,
    segments: Option<&RequestSegments>,
) -> Result<Explanation, BundleError> {
    let v = scored.features;
    let attribution = model.attribute(&v.indices, &v.values)?;
    let vocabulary = featurizer.vocabulary();
    let named: Vec<(&str, f32)> = v
        .indices
        .iter()
        .zip(&attribution.contributions)
        .map(|(&i, &c)| (vocabulary.get(i as usize).map_or("", String::as_str), c))
        .collect();
    // Features of no contribution (a weight of 0) say nothing.
    let mut order: Vec<usize> = (0..named.len()).filter(|&k| named[k].1 != 0.0).collect();
    // Largest contribution first, the first index of equal ones: a total order, so selecting
    // the `n` first and sorting only those gives what sorting them all did (audited requests
    // have hundreds of features and the line lists a handful).
    let by_contribution =
        |&a: &usize, &b: &usize| named[b].1.total_cmp(&named[a].1).then(a.cmp(&b));
    if n < order.len() {
        if n == 0 {
            order.clear();
        } else {
            order.select_nth_unstable_by(n - 1, by_contribution);
            order.truncate(n);
        }
    }
    order.sort_unstable_by(by_contribution);
    let top_indices: Vec<u32> = order.iter().map(|&k| v.indices[k]).collect();
    let sources = featurizer.feature_sources_segmented(req, &top_indices, segments);
    let top: Vec<Contribution> = order
        .iter()
        .zip(sources)
        .map(|(&k, source)| contribution(named[k].0, named[k].1, source))
        .collect();
    let listed: f32 = top.iter().map(|c| c.contribution).sum();
    let part = scored.part.map(|placement| {
        let found = featurizer.part_of_vector(req, placement, v);
        ExplainedPart {
            placement: placement.as_str(),
            name: found
                .as_ref()
                .map(|s| snippet(&s.name, ""))
                .filter(|n| !n.is_empty()),
            snippet: found.map(|s| snippet(&s.value, "")),
        }
    });
    Ok(Explanation {
        model: if scored.part.is_some() {
            "part_model"
        } else {
            "student"
        },
        part,
        class: coarse_class(&named),
        method: attribution.method,
        logit: attribution.logit,
        baseline: attribution.baseline,
        others: attribution.contributions.iter().sum::<f32>() - listed,
        top,
    })
}

fn contribution(feature: &str, value: f32, source: Option<FeatureSource>) -> Contribution {
    let needle = feature.rsplit(':').next().unwrap_or(feature);
    Contribution {
        feature: feature.to_string(),
        contribution: value,
        placement: source.as_ref().map(|s| s.placement.as_str()),
        name: source
            .as_ref()
            .map(|s| snippet(&s.name, ""))
            .filter(|n| !n.is_empty()),
        snippet: source.map(|s| snippet(&s.value, needle)),
    }
}

/// The class of the public-prior or format-check feature with the largest positive
/// contribution (see [`Explanation::class`]).
pub fn coarse_class(contributions: &[(&str, f32)]) -> Option<String> {
    contributions
        .iter()
        .filter(|(_, c)| *c > 0.0)
        .filter_map(|&(feature, c)| Some((feature_class(feature)?, c)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(class, _)| class)
}

/// The class a feature stands for: a public prior's family, or what a format check measures.
pub fn feature_class(feature: &str) -> Option<String> {
    if let Some(body) = feature.strip_prefix(featurizer::PLACEMENT_PREFIX) {
        let family = body
            .strip_prefix("li:")
            .or_else(|| body.strip_prefix("sig:"))?;
        return Some(family.to_string());
    }
    let body = feature.strip_prefix(featurizer::PARAM_PREFIX)?;
    if body == featurizer::params::RARE_ANY {
        return Some("format: rare value of a parameter".into());
    }
    if body == featurizer::params::UNSEEN_PATH {
        return Some("format: path unseen in the public pool".into());
    }
    if let Some(name) = body.strip_prefix(featurizer::params::RARE_PREFIX) {
        return Some(format!("format: rare value of {name}"));
    }
    let odd = body.strip_prefix(featurizer::params::ODD_PREFIX)?;
    Some(match odd.split_once('<') {
        Some((kind, share)) => format!("format: {kind} rare in the public pool (share < {share})"),
        None => format!("format: {odd}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_name_the_prior_family_or_what_the_format_check_measures() {
        let class = |f: &str| feature_class(f);
        assert_eq!(class("pl:li:sqli").as_deref(), Some("sqli"));
        assert_eq!(class("pl:sig:traversal").as_deref(), Some("traversal"));
        assert_eq!(
            class("p:rare:email").as_deref(),
            Some("format: rare value of email")
        );
        assert_eq!(
            class("p:unseen:path").as_deref(),
            Some("format: path unseen in the public pool")
        );
        assert_eq!(
            class("p:odd:char<0.01").as_deref(),
            Some("format: char rare in the public pool (share < 0.01)")
        );
        for plain in ["union", "pl:query=symbols", "p:n:id", "c:uni"] {
            assert_eq!(class(plain), None, "{plain}");
        }
        // The larger positive contribution of the two kinds wins; negatives never name a class.
        let named = [
            ("union", 3.0),
            ("pl:li:sqli", 0.5),
            ("p:rare:id", 0.75),
            ("pl:li:xss", -2.0),
        ];
        assert_eq!(
            coarse_class(&named).as_deref(),
            Some("format: rare value of id")
        );
        assert_eq!(coarse_class(&named[..2]).as_deref(), Some("sqli"));
        assert_eq!(coarse_class(&[("union", 3.0)]), None);
    }
}
