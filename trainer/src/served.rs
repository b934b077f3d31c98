//! Scoring requests with a bundle exactly as pate-proxy serves them: the same function
//! ([`bundle::Scorer::score_request`]: with the featurizer's `placements`, every window of the
//! request scored and the highest score kept) through the sparse-input ONNX Runtime graph of the
//! proxy's `scorer: onnxruntime` (its default, `auto`, scores a linear student natively: the same
//! score to float rounding); with `format_checks: false`, the featurizer
//! without the site's format checks and the bundle's part model beside the windows
//! ([`bundle::Scorer::score_request_and_parts`]). `score` and `calibrate` score through it.
use bundle::{
    explain_vector, Bundle, Explanation, PartOffsets, RequestScore, ScoredVector, Scorer, SparseMlp,
};
use featurizer::{Featurizer, RequestParts};

use crate::error::Result;

/// A bundle's model (and part model) in ONNX Runtime with the featurizer of one mode.
#[derive(Debug)]
pub struct ServedScorer {
    featurizer: Featurizer,
    scorer: Scorer,
    /// The part model, scored only on content alone (`format_checks: false`).
    part: Option<Scorer>,
    offsets: PartOffsets,
    /// The networks read natively to explain scores ([`ServedScorer::with_explanations`]).
    explainer: Option<Explainer>,
}

/// The student and the part model laid out for [`bundle::explain_vector`].
#[derive(Debug)]
struct Explainer {
    student: SparseMlp,
    part: Option<SparseMlp>,
}

impl ServedScorer {
    /// Sessions for `bundle` scoring as the proxy does with `format_checks` (its default: true)
    /// or without. ONNX Runtime is loaded if nobody did ([`bundle::init_onnxruntime`]).
    pub fn new(bundle: &Bundle, format_checks: bool) -> Result<Self> {
        let featurizer = if format_checks {
            bundle.featurizer.clone()
        } else {
            bundle.featurizer.clone().without_format_checks()
        };
        let part = match (&bundle.part_model_onnx, format_checks) {
            (Some(onnx), false) => Some(Scorer::from_onnx(onnx, bundle.manifest.input_dim)?),
            _ => None,
        };
        Ok(ServedScorer {
            featurizer,
            scorer: Scorer::new(bundle)?,
            part,
            offsets: bundle.manifest.part_model_offsets.clone(),
            explainer: None,
        })
    }

    /// This scorer, able to explain its scores ([`ServedScorer::score_explained`]).
    pub fn with_explanations(mut self, bundle: &Bundle) -> Result<Self> {
        let part = match (&self.part, bundle.part_mlp()?) {
            (Some(_), Some(mlp)) => Some(SparseMlp::new(&mlp)?),
            _ => None,
        };
        self.explainer = Some(Explainer {
            student: SparseMlp::new(&bundle.mlp()?)?,
            part,
        });
        Ok(self)
    }

    fn score_request(&mut self, parts: &RequestParts) -> Result<RequestScore> {
        Ok(match &mut self.part {
            Some(part) => {
                self.scorer
                    .score_request_and_parts(part, &self.offsets, &self.featurizer, parts)?
            }
            None => self.scorer.score_request(&self.featurizer, parts)?,
        })
    }

    /// The score of one request and, with [`ServedScorer::with_explanations`], why: the `n`
    /// features that contributed most, as pate-proxy's audit line gives them (before it hides
    /// the snippets that line does not show).
    pub fn score_explained(
        &mut self,
        parts: &RequestParts,
        n: usize,
    ) -> Result<(f32, Option<Explanation>)> {
        let scored = self.score_request(parts)?;
        let Some(explainer) = &self.explainer else {
            return Ok((scored.score, None));
        };
        let network = match (&explainer.part, scored.part) {
            (Some(part), Some(_)) => part,
            _ => &explainer.student,
        };
        let vector = ScoredVector {
            features: &scored.features,
            part: scored.part,
        };
        let explanation = explain_vector(&self.featurizer, network, parts, vector, n)?;
        Ok((scored.score, Some(explanation)))
    }

    /// The malicious probability of one request, the score pate-proxy judges.
    pub fn score(&mut self, parts: &RequestParts) -> Result<f32> {
        Ok(self.score_request(parts)?.score)
    }
}
