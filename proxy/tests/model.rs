//! The serving model on real ONNX Runtime with the fixture bundle written by code.

use featurizer::RequestParts;
use proxy::fixture::{parts, write_fixture_bundle, ATTACK_REQUESTS, NORMAL_REQUESTS};
use proxy::model::ServingModel;

fn load(dir: &std::path::Path, threshold: Option<f32>) -> ServingModel {
    bundle::init_onnxruntime(None).unwrap();
    ServingModel::load(dir, threshold, 2).unwrap()
}

#[test]
fn fixture_model_separates_normal_from_attack_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_fixture_bundle(&dir, None, 0.5, "fixture-1").unwrap();
    let model = load(&dir, None);
    assert_eq!(model.version, "fixture-1");
    assert_eq!(model.threshold, 0.5);
    assert_eq!(
        (model.epsilon.as_str(), model.mechanism.as_str()),
        ("8", "gnmax")
    );
    for r in NORMAL_REQUESTS {
        let s = model.score(&parts(r)).unwrap();
        assert!(!s.malicious, "normal {r:?} scored {}", s.score);
    }
    for r in ATTACK_REQUESTS {
        let s = model.score(&parts(r)).unwrap();
        assert!(s.malicious, "attack {r:?} scored {}", s.score);
        assert!(!model.top_tokens(&s.features, 5).is_empty());
    }
}

#[test]
fn proxy_score_equals_the_bundle_scorer_and_threshold_override_applies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_fixture_bundle(&dir, None, 0.5, "fixture-2").unwrap();
    let bundle = bundle::Bundle::load(&dir).unwrap();
    let mlp = bundle.mlp().unwrap();
    let strict = load(&dir, Some(0.0));
    for r in NORMAL_REQUESTS.iter().chain(ATTACK_REQUESTS) {
        let req: RequestParts = parts(r);
        let s = strict.score(&req).unwrap();
        // ONNX Runtime agrees with the reference forward pass of the same weights.
        let reference = mlp
            .forward(&bundle.featurizer.transform_dense(&req))
            .unwrap();
        assert!(
            (s.score - reference).abs() < 1e-5,
            "{r:?}: ort {} vs reference {reference}",
            s.score
        );
        assert!(s.malicious, "threshold override 0 flags everything");
    }
}

#[test]
fn corrupt_bundle_is_rejected_with_the_file_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_fixture_bundle(&dir, None, 0.5, "fixture-3").unwrap();
    let model = dir.join(bundle::MODEL_FILE);
    let mut bytes = std::fs::read(&model).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&model, bytes).unwrap();
    bundle::init_onnxruntime(None).unwrap();
    let err = ServingModel::load(&dir, None, 1)
        .err()
        .expect("a corrupt bundle must be rejected")
        .to_string();
    assert!(err.contains("model.onnx"), "{err}");
}
