//! The serving model on real ONNX Runtime with the fixture bundle written by code.

use featurizer::RequestParts;
use proxy::config::ScorerKind;
use proxy::model::ServingModel;
use test_support::{parts, write_fixture_bundle, ATTACK_REQUESTS, NORMAL_REQUESTS};

fn load(dir: &std::path::Path, threshold: Option<f32>) -> ServingModel {
    bundle::init_onnxruntime(None).unwrap();
    ServingModel::load(dir, threshold, 2).unwrap()
}

fn load_with(dir: &std::path::Path, scorer: ScorerKind, sessions: usize) -> ServingModel {
    bundle::init_onnxruntime(None).unwrap();
    ServingModel::load_with_scorer(dir, None, sessions, scorer).unwrap()
}

#[test]
fn default_scorer_is_native_for_a_linear_student_and_onnxruntime_has_a_session_per_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_fixture_bundle(&dir, None, 0.5, "fixture-4").unwrap();
    let model = load(&dir, None);
    assert_eq!(model.scorer(), ScorerKind::Native, "the fixture is linear");
    assert_eq!(model.sessions(), 0);
    let ort = load_with(&dir, ScorerKind::Onnxruntime, 2);
    assert_eq!(ort.scorer(), ScorerKind::Onnxruntime);
    assert_eq!(ort.sessions(), 2);
    let one = load_with(&dir, ScorerKind::Onnxruntime, 0);
    assert_eq!(one.sessions(), 1, "threads 0 still gets one session");
    let native = load_with(&dir, ScorerKind::Native, 2);
    assert_eq!(native.scorer(), ScorerKind::Native);
    assert_eq!(native.sessions(), 0);
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
        let explanation = model.explain(&parts(r), &s, true, 5).unwrap();
        assert!(!explanation.top.is_empty());
        assert!(explanation.top[0].contribution > 0.0, "{explanation:?}");
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

/// Deterministic weights in ±`scale` (SplitMix64, Steele, Lea, Flood 2014).
fn weights(n: usize, scale: f32, state: &mut u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// The proxy scores through ONNX Runtime's sparse-input graph (default, `scorer: onnxruntime`)
/// or a native sparse forward pass (`scorer: native`, `bundle::SparseMlp`); the reference here
/// is the bundle's dense `model.onnx` through ONNX Runtime (`Scorer::score` of `transform_dense`,
/// what Python onnxruntime runs; `pate-trainer score` runs the proxy's own function,
/// `bundle::score_request`, on the sparse graph). On every request of the CSIC 2010 sample, with
/// a multi-layer network of the quick config's shape, both scorers give the dense score to 1e-6
/// and the same verdicts, from several threads at once (more threads than ORT sessions, so
/// sessions are shared and contended).
#[test]
fn proxy_score_equals_onnxruntime_on_csic_requests_from_several_threads() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/sample");
    let mut records = Vec::new();
    for file in [
        "csic_normalTrafficTest_A_sample.txt",
        "csic_anomalousTrafficTest_A_sample.txt",
    ] {
        records.extend(datasets::load(datasets::Format::Csic, &sample.join(file)).unwrap());
    }
    assert!(records.len() > 100, "{} CSIC sample records", records.len());
    let featurizer = featurizer::Featurizer::fit(
        featurizer::FeaturizerConfig::default(),
        records.iter().map(datasets::Record::parts),
    )
    .unwrap();
    let mut state = 11;
    let widths = [featurizer.dim(), 64, 16, 1];
    let layers = widths
        .windows(2)
        .map(|w| bundle::Dense {
            in_dim: w[0],
            out_dim: w[1],
            // The input has l1 norm 1, so the first layer's weights are large (±30) and the
            // others have gain 3: the scores spread over (0, 1).
            weight: weights(
                w[0] * w[1],
                if w[0] == widths[0] {
                    30.0
                } else {
                    3.0 / (w[0] as f32).sqrt()
                },
                &mut state,
            ),
            bias: weights(w[1], 0.1, &mut state),
        })
        .collect();
    let mlp = bundle::Mlp { layers };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    bundle::write_bundle(
        &dir,
        &bundle::BundleContents {
            mlp: &mlp,
            featurizer: &featurizer,
            threshold: 0.5,
            content_only_threshold: None,
            part_model: None,
            part_model_offsets: Default::default(),
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: Some("csic-mlp".into()),
            format_checks: None,
        },
    )
    .unwrap();
    let loaded = bundle::Bundle::load(&dir).unwrap();
    let mut scorer = bundle::Scorer::new(&loaded).unwrap();
    let expected: Vec<f32> = records
        .iter()
        .map(|r| {
            scorer
                .score(&loaded.featurizer.transform_dense(&r.parts()))
                .unwrap()
        })
        .collect();
    let (lo, hi) = expected
        .iter()
        .fold((1.0f32, 0.0f32), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    assert!(lo < 0.3 && hi > 0.7, "scores span only [{lo}, {hi}]");
    let expected_verdicts: Vec<bool> = expected.iter().map(|&s| bundle::is_block(s, 0.5)).collect();
    assert!(expected_verdicts.iter().any(|&b| b) && !expected_verdicts.iter().all(|&b| b));
    // `auto` keeps ONNX Runtime for a network with hidden layers.
    assert_eq!(
        load_with(&dir, ScorerKind::Auto, 2).scorer(),
        ScorerKind::Onnxruntime
    );
    for kind in [ScorerKind::Onnxruntime, ScorerKind::Native] {
        let model = load_with(&dir, kind, 2);
        assert_eq!(model.scorer(), kind);
        std::thread::scope(|scope| {
            for t in 0..3 {
                let (model, records, expected) = (&model, &records, &expected);
                let expected_verdicts = &expected_verdicts;
                scope.spawn(move || {
                    for (i, (r, &want)) in records.iter().zip(expected).enumerate().skip(t) {
                        let scored = model.score(&r.parts()).unwrap();
                        let got = scored.score;
                        assert!(
                            (got - want).abs() <= 1e-6,
                            "{kind:?} thread {t}, record {i} (line {}): proxy {got} vs ONNX Runtime {want}",
                            r.line
                        );
                        assert_eq!(
                            scored.malicious, expected_verdicts[i],
                            "{kind:?} record {i} (line {}): score {got} vs {want}",
                            r.line
                        );
                    }
                });
            }
        });
    }
}

/// A `UNION SELECT` in a query parameter, flagged, is explained by SQL tokens of that parameter
/// (placement `query`, name `id`, a snippet of its decoded value), by the student's weights:
/// the contributions and the baseline sum to the logit of ONNX Runtime's score.
#[test]
fn a_flagged_union_select_names_its_parameter_and_sql_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_fixture_bundle(&dir, None, 0.5, "fixture-explain").unwrap();
    let model = load(&dir, None);
    let attack = &ATTACK_REQUESTS[3];
    assert!(attack.1.contains("UNION+SELECT"), "{attack:?}");
    let req = parts(attack);
    let scored = model.score(&req).unwrap();
    assert!(scored.malicious, "{}", scored.score);
    let explanation = model.explain(&req, &scored, true, 5).unwrap();
    let logit = (scored.score / (1.0 - scored.score)).ln();
    let sum: f32 = explanation.top.iter().map(|c| c.contribution).sum();
    assert!(
        (explanation.baseline + sum + explanation.others - logit).abs() < 1e-4,
        "{explanation:?} vs logit {logit}"
    );
    let sql: Vec<&str> = explanation
        .top
        .iter()
        .map(|c| c.feature.as_str())
        .filter(|f| ["union", "select", "from"].contains(f))
        .collect();
    assert!(sql.len() >= 2, "{:?}", explanation.top);
    for c in &explanation.top {
        assert_eq!(
            (c.placement, c.name.as_deref()),
            (Some("query"), Some("id")),
            "{c:?}"
        );
        let snippet = c.snippet.as_deref().unwrap_or_default();
        assert!(snippet.contains("union select password"), "{c:?}");
    }
}

/// `GET /` flagged by the site's format checks (a path the bundle's public pool does not hold):
/// the explanation names the format feature and its class, not `/`; scored on content alone
/// (no format checks) the same request is not flagged.
#[test]
fn get_slash_flagged_by_the_format_checks_names_the_format_feature() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    let config = featurizer::FeaturizerConfig {
        params: true,
        rarity_min_count: Some(2),
        ..featurizer::FeaturizerConfig::default()
    };
    let docs = NORMAL_REQUESTS.iter().chain(NORMAL_REQUESTS).map(parts);
    let featurizer = featurizer::Featurizer::fit(config, docs).unwrap();
    let mut tokens = test_support::ATTACK_TOKENS.to_vec();
    tokens.push("p:unseen:path");
    let mut mlp = test_support::token_mlp(&featurizer, &tokens, 12.0, -3.0);
    // `/` weighs a little: alone (content only) it is no attack.
    let slash = featurizer
        .vocabulary()
        .iter()
        .position(|t| t == "/")
        .unwrap();
    mlp.layers[0].weight[slash] = 1.0;
    write_bundle(&dir, &featurizer, &mlp, None);
    let model = load(&dir, None);
    let req = RequestParts::get("/");
    let scored = model.score_checked(&req, true).unwrap();
    assert!(scored.malicious && scored.unseen_path, "{}", scored.score);
    let explanation = model.explain(&req, &scored, true, 3).unwrap();
    let top: Vec<&str> = explanation.top.iter().map(|c| c.feature.as_str()).collect();
    assert_eq!(top, ["p:unseen:path", "/"], "{explanation:?}");
    assert_eq!(explanation.top[0].placement, Some("path"));
    assert_eq!(
        explanation.class.as_deref(),
        Some("format: path unseen in the public pool")
    );
    let content_only = model.score_checked(&req, false).unwrap();
    assert!(!content_only.malicious, "{}", content_only.score);
}

fn write_bundle(
    dir: &std::path::Path,
    featurizer: &featurizer::Featurizer,
    mlp: &bundle::Mlp,
    part_model: Option<&bundle::Mlp>,
) {
    bundle::write_bundle(
        dir,
        &bundle::BundleContents {
            mlp,
            featurizer,
            threshold: 0.5,
            content_only_threshold: None,
            part_model,
            part_model_offsets: Default::default(),
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: Some("explain".into()),
            format_checks: None,
        },
    )
    .unwrap();
}

/// A bundle with a `content_only_threshold`: requests scored with the format checks are judged
/// at the bundle's threshold, without them (`format_checks: false`) at the content-only one;
/// the configuration's `threshold` overrides both.
#[test]
fn scores_without_the_format_checks_are_judged_at_the_content_only_threshold() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_fixture_bundle(&dir, None, 0.5, "fixture-content").unwrap();
    let manifest = std::fs::read_to_string(dir.join(bundle::MANIFEST_FILE)).unwrap();
    std::fs::write(
        dir.join(bundle::MANIFEST_FILE),
        format!("{manifest}content_only_threshold: 0.999\n"),
    )
    .unwrap();
    let model = load(&dir, None);
    assert_eq!(
        (model.threshold_for(true), model.threshold_for(false)),
        (0.5, 0.999)
    );
    let mut flipped = 0;
    for r in ATTACK_REQUESTS {
        let with = model.score_checked(&parts(r), true).unwrap();
        let without = model.score_checked(&parts(r), false).unwrap();
        assert!(with.malicious, "attack {r:?} scored {}", with.score);
        assert_eq!(
            without.malicious,
            bundle::is_block(without.score, 0.999),
            "{r:?}"
        );
        flipped += usize::from(!without.malicious);
    }
    assert!(flipped > 0, "no attack scored between 0.5 and 0.999");
    let overridden = load(&dir, Some(0.25));
    assert_eq!(
        (
            overridden.threshold_for(true),
            overridden.threshold_for(false)
        ),
        (0.25, 0.25)
    );
}

/// With a part model, where content alone is scored, the audit's placement is the one whose
/// window (student) or part alone (part model) scores highest: an attack only the part model
/// weighs, in a header, is named there even though the student's highest window is the query;
/// with the checks on (no part model) the query is named.
#[test]
fn the_placement_named_is_the_highest_of_windows_and_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    let featurizer = test_support::placement_fixture_featurizer().unwrap();
    let vocabulary = featurizer.vocabulary();
    for token in ["queso", "script", "alert"] {
        assert!(vocabulary.iter().any(|t| t == token), "{token}");
    }
    let student = test_support::token_mlp(&featurizer, &["queso"], 12.0, -3.0);
    let part = test_support::token_mlp(&featurizer, &["script", "alert"], 30.0, -3.0);
    bundle::write_bundle(
        &dir,
        &bundle::BundleContents {
            mlp: &student,
            featurizer: &featurizer,
            threshold: 0.5,
            content_only_threshold: None,
            part_model: Some(&part),
            part_model_offsets: Default::default(),
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: Some("attribution".into()),
            format_checks: None,
        },
    )
    .unwrap();
    let model = load(&dir, None);
    assert!(model.has_part_model());
    let req = with_script_header(b"/tienda1/publico/anadir.jsp?nombre=queso");
    let content_only = model.score_checked(&req, false).unwrap();
    let checked = model.score_checked(&req, true).unwrap();
    assert!(
        content_only.score > checked.score,
        "{} vs {}",
        content_only.score,
        checked.score
    );
    assert_eq!(
        model.worst_placement(&req, false),
        featurizer::Placement::HdrOther
    );
    assert_eq!(
        model.worst_placement(&req, true),
        featurizer::Placement::Query
    );
    // The part model's score was the request's: the explanation names that part (the header
    // `x-note`) and its features, from the part model's weights.
    let explanation = model.explain(&req, &content_only, false, 3).unwrap();
    assert_eq!(explanation.model, "part_model");
    let part = explanation.part.as_ref().unwrap();
    assert_eq!(
        (part.placement, part.name.as_deref()),
        ("hdr:other", Some("x-note"))
    );
    let top: Vec<&str> = explanation.top.iter().map(|c| c.feature.as_str()).collect();
    assert!(
        top[..2].contains(&"script") && top[..2].contains(&"alert"),
        "{top:?}"
    );
    let checked = model.explain(&req, &checked, true, 3).unwrap();
    assert_eq!(
        (checked.model, checked.top[0].feature.as_str()),
        ("student", "queso")
    );
}

/// A GET of `target` from a bare client with an XSS in a custom header (`X-Note`).
fn with_script_header(target: &'static [u8]) -> RequestParts<'static> {
    const HEADERS: &[(&str, &[u8])] = &[
        ("Host", b"localhost:8080"),
        ("X-Note", b"<script>alert(1)</script>"),
    ];
    RequestParts {
        method: "GET",
        target,
        body: None,
        headers: featurizer::Headers::Pairs(HEADERS),
        excluded_fields: Default::default(),
    }
}

/// `part_model_offsets`: a part's score is shifted by its placement's offset before the highest
/// is judged, so a header part under the content-only threshold blocks with an offset on
/// `hdr:other` and passes with one on a placement the request does not have; the placement named
/// is the shifted part's.
#[test]
fn a_placements_offset_shifts_its_parts_before_the_threshold() {
    let tmp = tempfile::tempdir().unwrap();
    let featurizer = test_support::placement_fixture_featurizer().unwrap();
    let student = test_support::token_mlp(&featurizer, &["queso"], 12.0, -3.0);
    // At most sigmoid(3 - 3) = 0.5 on a part made of its tokens alone.
    let part = test_support::token_mlp(&featurizer, &["script", "alert"], 3.0, -3.0);
    let write = |name: &str, shifted: featurizer::Placement| {
        let dir = tmp.path().join(name);
        bundle::write_bundle(
            &dir,
            &bundle::BundleContents {
                mlp: &student,
                featurizer: &featurizer,
                threshold: 0.5,
                content_only_threshold: Some(0.7),
                part_model: Some(&part),
                part_model_offsets: bundle::PartOffsets::new(
                    [(shifted, 3.0)].into_iter().collect(),
                )
                .unwrap(),
                privacy: None,
                metrics: serde_json::Value::Null,
                model_version: Some(name.into()),
                format_checks: None,
            },
        )
        .unwrap();
        load(&dir, None)
    };
    let req = with_script_header(b"/tienda1/publico/anadir.jsp?nombre=ana");
    let elsewhere = write("elsewhere", featurizer::Placement::JsonValue);
    let unshifted = elsewhere.score_checked(&req, false).unwrap();
    assert!(!unshifted.malicious, "{}", unshifted.score);
    let header = write("header", featurizer::Placement::HdrOther);
    let shifted = header.score_checked(&req, false).unwrap();
    assert!(shifted.malicious, "{}", shifted.score);
    let offsets = bundle::PartOffsets::new(
        [(featurizer::Placement::HdrOther, 3.0)]
            .into_iter()
            .collect(),
    )
    .unwrap();
    assert!(
        (shifted.score - offsets.shift(featurizer::Placement::HdrOther, unshifted.score)).abs()
            < 1e-6,
        "{} vs {}",
        shifted.score,
        unshifted.score
    );
    assert_eq!(
        header.worst_placement(&req, false),
        featurizer::Placement::HdrOther
    );
}
