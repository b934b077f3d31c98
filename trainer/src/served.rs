//! Scoring requests with a bundle exactly as pate-proxy serves them: the same function
//! ([`bundle::Scorer::score_request`]: with the featurizer's `placements`, every window of the
//! request scored and the highest score kept) through the same sparse-input ONNX Runtime graph
//! as the proxy's default `scorer: onnxruntime`; with `format_checks: false`, the featurizer
//! without the site's format checks and the bundle's part model beside the windows
//! ([`bundle::Scorer::score_request_and_parts`]). `score` and `calibrate` score through it.
use bundle::{Bundle, PartOffsets, Scorer};
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
        })
    }

    /// The malicious probability of one request, the score pate-proxy judges.
    pub fn score(&mut self, parts: &RequestParts) -> Result<f32> {
        Ok(match &mut self.part {
            Some(part) => {
                self.scorer
                    .score_request_and_parts(part, &self.offsets, &self.featurizer, parts)?
                    .score
            }
            None => self.scorer.score_request(&self.featurizer, parts)?.score,
        })
    }
}
