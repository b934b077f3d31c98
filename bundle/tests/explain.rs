//! Explanations of a score, on real bundles scored by the real ONNX Runtime: the contributions
//! and the baseline sum to the logit whose sigmoid ONNX Runtime returns; a `UNION SELECT` in a
//! query parameter is explained by SQL tokens of that parameter; `GET /` flagged by the site's
//! format checks is explained by the format feature, not by `/`.
mod common;

use std::path::Path;

use bundle::explain::{AttributionMethod, COMPLETENESS_TOLERANCE};
use bundle::{explain_vector, Bundle, BundleContents, Dense, Mlp, ScoredVector, Scorer, SparseMlp};
use common::{random_mlp, sample_targets, SplitMix};
use featurizer::{Featurizer, FeaturizerConfig, PlacementConfig, RequestParts};

fn placement_featurizer() -> Featurizer {
    let config = FeaturizerConfig {
        top_k: 300,
        placements: Some(PlacementConfig::default()),
        libinjection: true,
        signatures: true,
        ..FeaturizerConfig::default()
    };
    let mut targets = sample_targets();
    targets.push("/tienda1/publico/anadir.jsp?id=1+UNION+SELECT+login+FROM+usuarios".into());
    targets.push("/tienda1/publico/buscar.jsp?texto=1%27+UNION+SELECT+1--".into());
    Featurizer::fit(config, targets.iter().map(|t| RequestParts::get(t))).unwrap()
}

/// A linear model: `weight` on each listed feature of the vocabulary, `bias`.
fn linear(featurizer: &Featurizer, weights: &[(&str, f32)], bias: f32) -> Mlp {
    let weight = featurizer
        .vocabulary()
        .iter()
        .map(|t| {
            weights
                .iter()
                .find(|(name, _)| name == t)
                .map_or(0.0, |w| w.1)
        })
        .collect();
    Mlp {
        layers: vec![Dense {
            in_dim: featurizer.dim(),
            out_dim: 1,
            weight,
            bias: vec![bias],
        }],
    }
}

fn write(dir: &Path, featurizer: &Featurizer, mlp: &Mlp) -> Bundle {
    bundle::write_bundle(
        dir,
        &BundleContents {
            mlp,
            featurizer,
            threshold: 0.5,
            content_only_threshold: None,
            part_model: None,
            part_model_offsets: Default::default(),
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: Some("explain".into()),
            format_checks: None,
        },
    )
    .unwrap();
    Bundle::load(dir).unwrap()
}

fn logit(p: f32) -> f32 {
    (p / (1.0 - p)).ln()
}

/// Scores `target` through ONNX Runtime and explains the vector that scored; checks that the
/// explained logit is ONNX Runtime's and that baseline + contributions = logit.
fn scored_and_explained(bundle: &Bundle, target: &str, n: usize) -> (f32, bundle::Explanation) {
    let mut ort = Scorer::new(bundle).unwrap();
    let req = RequestParts::get(target);
    let scored = ort.score_request(&bundle.featurizer, &req).unwrap();
    let native = SparseMlp::new(&bundle.mlp().unwrap()).unwrap();
    let attribution = native
        .attribute(&scored.features.indices, &scored.features.values)
        .unwrap();
    let explained = ScoredVector {
        features: &scored.features,
        part: None,
    };
    let explanation = explain_vector(&bundle.featurizer, &native, &req, explained, n).unwrap();
    let sum: f32 = explanation.top.iter().map(|c| c.contribution).sum::<f32>() + explanation.others;
    let residual = explanation.logit - explanation.baseline - sum;
    assert!(
        residual.abs() <= 2.0 * COMPLETENESS_TOLERANCE,
        "{target}: baseline {} + contributions {sum} vs logit {} ({:?})",
        explanation.baseline,
        explanation.logit,
        explanation.method
    );
    assert!(attribution.residual().abs() <= 2.0 * COMPLETENESS_TOLERANCE);
    // The logit explained is the one ONNX Runtime's score is the sigmoid of.
    let p = scored.score.clamp(1e-6, 1.0 - 1e-6);
    assert!(
        (bundle::onnx::sigmoid(explanation.logit) - scored.score).abs() <= 1e-5,
        "{target}: ORT {} vs sigmoid({}) (ORT logit ≈ {})",
        scored.score,
        explanation.logit,
        logit(p)
    );
    (scored.score, explanation)
}

#[test]
fn a_union_select_in_a_query_is_explained_by_its_parameter_and_sql_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let featurizer = placement_featurizer();
    let weights = [
        ("'", 4.0),
        ("or", 3.0),
        ("union", 25.0),
        ("select", 20.0),
        ("from", 3.0),
        ("pl:li:sqli", 2.0),
        ("-", 0.5),
    ];
    for (name, _) in weights {
        assert!(featurizer.vocabulary().iter().any(|t| t == name), "{name}");
    }
    let bundle = write(
        tmp.path(),
        &featurizer,
        &linear(&featurizer, &weights, -3.0),
    );
    let target = "/tienda1/publico/anadir.jsp?nombre=x&id=1+UNION+SELECT+password+FROM+usuarios--";
    let (score, explanation) = scored_and_explained(&bundle, target, 5);
    eprintln!("{}", serde_json::to_string_pretty(&explanation).unwrap());
    assert!(score > 0.5, "{score}");
    assert_eq!(explanation.method, AttributionMethod::WeightTimesValue);
    let top: Vec<&str> = explanation.top.iter().map(|c| c.feature.as_str()).collect();
    assert!(
        top[..2].iter().all(|f| ["union", "select"].contains(f)),
        "{top:?}"
    );
    for c in explanation.top.iter().filter(|c| c.feature != "pl:li:sqli") {
        assert_eq!(c.placement, Some("query"), "{c:?}");
        assert_eq!(c.name.as_deref(), Some("id"), "{c:?}");
        let snippet = c.snippet.as_deref().unwrap_or_default();
        assert!(snippet.contains("union select"), "{c:?}");
        assert!(snippet.chars().count() <= featurizer::SNIPPET_CHARS);
    }
    assert_eq!(explanation.class.as_deref(), Some("sqli"));
}

#[test]
fn a_network_with_hidden_layers_is_explained_by_integrated_gradients_that_sum_to_its_logit() {
    let tmp = tempfile::tempdir().unwrap();
    let featurizer = placement_featurizer();
    let mut rng = SplitMix(44);
    let mlp = random_mlp(&[featurizer.dim(), 32, 16, 1], 6.0, &mut rng);
    let bundle = write(tmp.path(), &featurizer, &mlp);
    let mut steps_seen = Vec::new();
    for target in sample_targets().iter().rev().take(12) {
        let (_, explanation) = scored_and_explained(&bundle, target, 8);
        match explanation.method {
            AttributionMethod::IntegratedGradients { steps } => steps_seen.push(steps),
            other => panic!("{other:?}"),
        }
        assert!(explanation.top.len() <= 8);
        let sorted = explanation
            .top
            .windows(2)
            .all(|w| w[0].contribution >= w[1].contribution);
        assert!(sorted, "{:?}", explanation.top);
    }
    eprintln!("integrated-gradient steps per request: {steps_seen:?}");
}

#[test]
fn get_slash_flagged_by_the_format_checks_is_explained_by_the_format_feature() {
    let tmp = tempfile::tempdir().unwrap();
    let config = FeaturizerConfig {
        top_k: 300,
        params: true,
        rarity_min_count: Some(3),
        ..FeaturizerConfig::default()
    };
    let targets = sample_targets();
    let featurizer = Featurizer::fit(config, targets.iter().map(|t| RequestParts::get(t))).unwrap();
    let unseen = "p:unseen:path";
    let weights = [(unseen, 8.0), ("/", 0.5), ("'", 4.0)];
    let bundle = write(
        tmp.path(),
        &featurizer,
        &linear(&featurizer, &weights, -3.0),
    );
    let (score, explanation) = scored_and_explained(&bundle, "/", 3);
    assert!(score > 0.5, "{score}");
    let top: Vec<&str> = explanation.top.iter().map(|c| c.feature.as_str()).collect();
    assert_eq!(top, [unseen, "/"], "{:?}", explanation.top);
    assert_eq!(explanation.top[0].placement, Some("path"));
    assert_eq!(explanation.top[0].snippet.as_deref(), Some("/"));
    assert_eq!(
        explanation.class.as_deref(),
        Some("format: path unseen in the public pool")
    );
}

/// The shape of `configs/train.yaml`'s student (500→512→128→1) on a featurizer-like vector of
/// 60 non-zeros: integrated gradients still sum to the logit within the tolerance; prints how
/// long one explanation takes (what an audited request pays).
#[test]
fn integrated_gradients_of_a_full_size_student_sum_to_its_logit() {
    let mut rng = SplitMix(7);
    let mlp = random_mlp(&[500, 512, 128, 1], 3.0, &mut rng);
    let native = SparseMlp::new(&mlp).unwrap();
    let mut indices: Vec<u32> = (0..60).map(|k| k * 8 + (k % 3)).collect();
    indices.dedup();
    let values: Vec<f32> = indices.iter().map(|_| 1.0 / indices.len() as f32).collect();
    let started = std::time::Instant::now();
    let attribution = native.attribute(&indices, &values).unwrap();
    eprintln!(
        "500-512-128-1, {} non-zeros: {:?} in {:?}, residual {}",
        indices.len(),
        attribution.method,
        started.elapsed(),
        attribution.residual()
    );
    assert!(attribution.residual().abs() <= COMPLETENESS_TOLERANCE);
    let score = native.score(&indices, &values).unwrap();
    assert!((bundle::onnx::sigmoid(attribution.logit) - score).abs() <= 1e-5);
}
