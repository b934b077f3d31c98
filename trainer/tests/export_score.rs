//! `pate-trainer export` and `pate-trainer score` end to end: the real binary, real ONNX Runtime,
//! real CSIC sample requests; scores compared with a plain-Rust forward pass of the same network.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bundle::{Bundle, Dense, Mlp};
use featurizer::{Featurizer, FeaturizerConfig};
use trainer::ensemble::MemberReport;
use trainer::model_file::{ModelFile, ModelInfo, ModelRole, MODEL_FILE_VERSION};

const TOLERANCE: f32 = 1e-5;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn trainer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
        .args(args)
        .output()
        .expect("run pate-trainer")
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "pate-trainer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn failure(output: Output) -> String {
    assert!(
        !output.status.success(),
        "pate-trainer should have failed; stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8(output.stderr).unwrap()
}

/// SplitMix64 test randomness.
struct SplitMix(u64);
impl SplitMix {
    fn symmetric(&mut self, a: f32) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * a
    }
}

/// A random network whose scores spread over (0, 1) on l1-normalized inputs: first-layer weights
/// in ±8 (an l1-normalized row has entries ≤ 1, so hidden units stay in a few units), later layers
/// in ±2.5/√fan_in (torch's init, scaled up).
fn random_mlp(widths: &[usize], seed: u64) -> Mlp {
    let mut rng = SplitMix(seed);
    Mlp {
        layers: widths
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                let bound = if i == 0 {
                    8.0
                } else {
                    2.5 / (w[0] as f32).sqrt()
                };
                Dense {
                    in_dim: w[0],
                    out_dim: w[1],
                    weight: (0..w[0] * w[1]).map(|_| rng.symmetric(bound)).collect(),
                    bias: (0..w[1]).map(|_| rng.symmetric(0.5)).collect(),
                }
            })
            .collect(),
    }
}

fn csic_sample(name: &str) -> PathBuf {
    repo().join("data/sample").join(name)
}

/// A featurizer fitted on the in-repo CSIC normal-traffic sample.
fn fitted_featurizer() -> Featurizer {
    let records = datasets::load(
        datasets::Format::Csic,
        &csic_sample("csic_normalTrafficTraining_sample.txt"),
    )
    .unwrap();
    Featurizer::fit(
        FeaturizerConfig::default(),
        records.iter().map(|r| r.parts()),
    )
    .unwrap()
}

fn report_json() -> serde_json::Value {
    serde_json::json!({
        "teachers": 250, "queries": 1000, "answered": 998, "mechanism": "lnmax", "gamma": 0.05, "delta": 1e-5,
        "data_independent_epsilon": 8.03, "data_dependent_epsilon": 1.9, "student_local_epsilon": null,
        "metrics": {"samples": 200, "positives": 100, "negatives": 100, "tp": 91, "fp": 3, "tn": 97, "fn_": 9,
                    "tpr": 0.91, "tnr": 0.97, "fpr": 0.03, "precision": 0.968, "f1": 0.938, "accuracy": 0.94,
                    "roc_auc": 0.98, "threshold": 0.61}
    })
}

#[test]
fn exported_bundle_scores_like_the_network_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let featurizer = fitted_featurizer();
    let featurizer_path = tmp.path().join("featurizer.json");
    featurizer.save(&featurizer_path).unwrap();
    let mlp = random_mlp(&[featurizer.dim(), 32, 8, 1], 21);
    let weights_path = tmp.path().join("student.json");
    std::fs::write(&weights_path, serde_json::to_vec(&mlp).unwrap()).unwrap();
    let report_path = tmp.path().join("report.json");
    std::fs::write(&report_path, report_json().to_string()).unwrap();
    let bundle_dir = tmp.path().join("run/bundle");
    let bundle_arg = bundle_dir.to_str().unwrap();

    let summary: serde_json::Value = serde_json::from_str(&ok(trainer(&[
        "export",
        "--not-private",
        "--weights",
        weights_path.to_str().unwrap(),
        "--featurizer",
        featurizer_path.to_str().unwrap(),
        "--report",
        report_path.to_str().unwrap(),
        "--out",
        bundle_arg,
    ])))
    .unwrap();
    // No --threshold: taken from the report's metrics.
    assert_eq!(summary["threshold"].as_f64().unwrap() as f32, 0.61);
    let bundle = Bundle::load(&bundle_dir).unwrap();
    assert_eq!(bundle.mlp().unwrap(), mlp);
    assert_eq!(bundle.manifest.metrics["roc_auc"], 0.98);
    // No typed privacy report: nothing is claimed, and nothing of the report but the metrics
    // reaches bundle.yaml.
    assert!(bundle.manifest.privacy.is_none());
    let yaml = std::fs::read_to_string(bundle_dir.join("bundle.yaml")).unwrap();
    assert!(
        !yaml.contains("8.03") && !yaml.contains("data_dependent"),
        "{yaml}"
    );
    let threshold = bundle.manifest.threshold;

    // One request.
    let target = "/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&precio=85&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25&B1=A%F1adir+al+carrito";
    let one: serde_json::Value = serde_json::from_str(&ok(trainer(&[
        "score", "--bundle", bundle_arg, "--target", target,
    ])))
    .unwrap();
    let expected = mlp
        .forward(&featurizer.transform_dense(&featurizer::RequestParts::get(target)))
        .unwrap();
    let got = one["score"].as_f64().unwrap() as f32;
    assert!(
        (got - expected).abs() <= TOLERANCE,
        "score {got} vs Rust {expected}"
    );
    assert_eq!(one["threshold"].as_f64().unwrap() as f32, threshold);
    assert_eq!(
        one["verdict"],
        if expected >= threshold {
            "block"
        } else {
            "allow"
        }
    );

    // `--explain`: the same score, and the contributions that sum to its logit (integrated
    // gradients: the network has hidden layers), each placed in the request.
    let explained: serde_json::Value = serde_json::from_str(&ok(trainer(&[
        "score",
        "--bundle",
        bundle_arg,
        "--target",
        target,
        "--explain",
    ])))
    .unwrap();
    assert_eq!(explained["score"], one["score"]);
    let explanation = &explained["explanation"];
    assert_eq!(explanation["model"], "student", "{explained}");
    assert!(
        explanation["method"]["integrated_gradients"]["steps"]
            .as_u64()
            .unwrap()
            > 0
    );
    let top = explanation["top"].as_array().unwrap();
    assert!(!top.is_empty() && top.len() <= 5, "{explained}");
    let sum: f64 = top
        .iter()
        .map(|c| c["contribution"].as_f64().unwrap())
        .sum::<f64>()
        + explanation["others"].as_f64().unwrap()
        + explanation["baseline"].as_f64().unwrap();
    let logit = f64::from(expected / (1.0 - expected)).ln();
    assert!(
        (sum - logit).abs() <= 5e-3,
        "{sum} vs logit {logit}: {explained}"
    );
    assert!(
        top.iter().all(|c| c["placement"].is_string()),
        "{explained}"
    );

    // A POST body is featurized too (the body joins the query).
    let post: serde_json::Value = serde_json::from_str(&ok(trainer(&[
        "score",
        "--bundle",
        bundle_arg,
        "--target",
        "/tienda1/publico/anadir.jsp",
        "--method",
        "POST",
        "--body",
        "id=2&nombre=%3Cscript%3Ealert(1)%3C/script%3E",
    ])))
    .unwrap();
    let parts = featurizer::RequestParts {
        method: "POST",
        target: b"/tienda1/publico/anadir.jsp",
        body: Some(b"id=2&nombre=%3Cscript%3Ealert(1)%3C/script%3E"),
        headers: Default::default(),
        excluded_fields: Default::default(),
    };
    let expected = mlp.forward(&featurizer.transform_dense(&parts)).unwrap();
    assert!((post["score"].as_f64().unwrap() as f32 - expected).abs() <= TOLERANCE);

    // Every request of a real CSIC file, one JSON line each, in order.
    let input = csic_sample("csic_anomalousTrafficTest_A_sample.txt");
    let records = datasets::load(datasets::Format::Csic, &input).unwrap();
    assert!(records.len() >= 500, "{} records", records.len());
    let listing = ok(trainer(&[
        "score",
        "--bundle",
        bundle_arg,
        "--input",
        input.to_str().unwrap(),
        "--format",
        "csic",
    ]));
    let lines: Vec<serde_json::Value> = listing
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), records.len());
    let (mut blocked, mut worst) = (0, 0.0f32);
    for (i, (line, record)) in lines.iter().zip(&records).enumerate() {
        let expected = mlp
            .forward(&featurizer.transform_dense(&record.parts()))
            .unwrap();
        let got = line["score"].as_f64().unwrap() as f32;
        worst = worst.max((got - expected).abs());
        assert_eq!(line["index"], i);
        assert_eq!(line["line"], record.line);
        assert_eq!(line["label"], "malicious");
        let verdict = if got >= threshold { "block" } else { "allow" };
        assert_eq!(line["verdict"], verdict);
        blocked += usize::from(verdict == "block");
    }
    assert!(worst <= TOLERANCE, "CLI scores differ from Rust by {worst}");
    // Both verdicts occur, so the comparison above tested both branches.
    assert!(
        blocked > 0 && blocked < records.len(),
        "{blocked} of {} blocked",
        records.len()
    );

    // --threshold overrides the bundle's.
    let strict: serde_json::Value = serde_json::from_str(&ok(trainer(&[
        "score",
        "--bundle",
        bundle_arg,
        "--target",
        target,
        "--threshold",
        "0",
    ])))
    .unwrap();
    assert_eq!(strict["verdict"], "block");
}

#[test]
fn export_from_a_run_directory_uses_the_student_model_file() {
    let run = tempfile::tempdir().unwrap();
    let featurizer = fitted_featurizer();
    featurizer
        .save(&run.path().join("featurizer.json"))
        .unwrap();
    let mlp = random_mlp(&[featurizer.dim(), 16, 1], 22);
    let weights = mlp.clone();
    let info = |featurizer_hash: &str| ModelInfo {
        format_version: MODEL_FILE_VERSION,
        role: ModelRole::Student,
        shard: None,
        shards: None,
        data_hash: "test".into(),
        featurizer_hash: featurizer_hash.into(),
        threshold: 0.37,
        training: MemberReport {
            train_samples: 10,
            holdout_samples: 2,
            train_positives: 5,
            pos_weight: 1.0,
            epochs: 1,
            best_epoch: 1,
            best_holdout_loss: Some(0.5),
            threshold: 0.37,
            threshold_fallback: false,
        },
        rng: privacy::RngProvenance::Seeded { seed: 1 },
        trainer_version: "test".into(),
        content_only_threshold: None,
        part_model_offsets: Default::default(),
    };
    let student = run.path().join("student.safetensors");
    ModelFile {
        weights: weights.clone(),
        info: info(featurizer.content_hash()),
    }
    .save(&student)
    .unwrap();
    std::fs::write(run.path().join("report.json"), report_json().to_string()).unwrap();

    // The hand-made report has no typed privacy report: refused without --not-private.
    let err = failure(trainer(&["export", "--run", run.path().to_str().unwrap()]));
    assert!(
        err.contains("no privacy report") && err.contains("--not-private"),
        "{err}"
    );
    ok(trainer(&[
        "export",
        "--run",
        run.path().to_str().unwrap(),
        "--not-private",
    ]));
    let bundle = Bundle::load(&run.path().join("bundle")).unwrap();
    // The student file's threshold wins over the report's.
    assert_eq!(bundle.manifest.threshold, 0.37);
    assert_eq!(bundle.mlp().unwrap(), mlp);

    // A student trained with another featurizer is refused, and the bundle is left as it was.
    ModelFile {
        weights,
        info: info("0000"),
    }
    .save(&student)
    .unwrap();
    let err = failure(trainer(&[
        "export",
        "--run",
        run.path().to_str().unwrap(),
        "--threshold",
        "0.9",
        "--not-private",
    ]));
    assert!(err.contains("was trained with featurizer 0000"), "{err}");
    assert_eq!(
        Bundle::load(&run.path().join("bundle"))
            .unwrap()
            .manifest
            .threshold,
        0.37
    );
}

/// Issue 4's check: the exported ONNX model scores like the tch model it came from, within 1e-5,
/// on 1,000+ real requests (the CSIC test samples, normal and anomalous).
#[test]
fn onnx_scores_equal_tch_scores_on_real_requests() {
    let featurizer = fitted_featurizer();
    let mut records = datasets::load(
        datasets::Format::Csic,
        &csic_sample("csic_normalTrafficTest_A_sample.txt"),
    )
    .unwrap();
    records.extend(
        datasets::load(
            datasets::Format::Csic,
            &csic_sample("csic_anomalousTrafficTest_A_sample.txt"),
        )
        .unwrap(),
    );
    assert!(records.len() >= 1000, "{} records", records.len());
    let indices: Vec<usize> = (0..records.len()).collect();
    let x = trainer::stages::featurize::featurize_rows(&featurizer, &records, &indices);

    // The default architecture (K → 512 → 128 → 1), weights spread enough to use the whole (0, 1).
    let mlp = random_mlp(&[featurizer.dim(), 512, 128, 1], 25);
    let model = ModelFile {
        weights: mlp.clone(),
        info: ModelInfo {
            format_version: MODEL_FILE_VERSION,
            role: ModelRole::Student,
            shard: None,
            shards: None,
            data_hash: "test".into(),
            featurizer_hash: featurizer.content_hash().into(),
            threshold: 0.5,
            training: MemberReport {
                train_samples: 1,
                holdout_samples: 1,
                train_positives: 1,
                pos_weight: 1.0,
                epochs: 1,
                best_epoch: 1,
                best_holdout_loss: Some(0.0),
                threshold: 0.5,
                threshold_fallback: false,
            },
            rng: privacy::RngProvenance::Os,
            trainer_version: "test".into(),
            content_only_threshold: None,
            part_model_offsets: Default::default(),
        },
    };
    let tch_scores = trainer::stages::evaluate::model_scores(&model, &x, tch::Device::Cpu).unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    trainer::cli::export::export_bundle(
        &dir,
        &bundle::BundleContents {
            mlp: &model.weights,
            featurizer: &featurizer,
            threshold: 0.5,
            content_only_threshold: None,
            part_model: None,
            part_model_offsets: Default::default(),
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: None,
            format_checks: None,
        },
    )
    .unwrap();
    let bundle = Bundle::load(&dir).unwrap();
    let mut scorer = bundle::Scorer::new(&bundle).unwrap();
    let onnx_scores = scorer.score_flat(&x.values).unwrap();
    assert_eq!(onnx_scores.len(), tch_scores.len());
    let worst = onnx_scores
        .iter()
        .zip(&tch_scores)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    let spread = onnx_scores
        .iter()
        .filter(|s| **s > 0.1 && **s < 0.9)
        .count();
    eprintln!(
        "{} requests: max |ONNX - tch| = {worst:e}; {spread} scores in (0.1, 0.9)",
        onnx_scores.len()
    );
    assert!(
        worst <= TOLERANCE,
        "ONNX Runtime and tch scores differ by {worst}"
    );
    let (lo, hi) = onnx_scores
        .iter()
        .fold((1.0f32, 0.0f32), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    assert!(lo < 0.2 && hi > 0.8, "scores span only [{lo}, {hi}]");
}

#[test]
fn bad_inputs_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let featurizer = fitted_featurizer();
    let featurizer_path = tmp.path().join("featurizer.json");
    featurizer.save(&featurizer_path).unwrap();
    let wrong = random_mlp(&[featurizer.dim() + 3, 4, 1], 23);
    let weights_path = tmp.path().join("student.json");
    std::fs::write(&weights_path, serde_json::to_vec(&wrong).unwrap()).unwrap();
    let out = tmp.path().join("bundle");
    let err = failure(trainer(&[
        "export",
        "--not-private",
        "--weights",
        weights_path.to_str().unwrap(),
        "--featurizer",
        featurizer_path.to_str().unwrap(),
        "--threshold",
        "0.5",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(err.contains("dimension"), "{err}");
    assert!(!out.exists(), "a failed export left a bundle behind");

    let mlp = random_mlp(&[featurizer.dim(), 4, 1], 24);
    std::fs::write(&weights_path, serde_json::to_vec(&mlp).unwrap()).unwrap();
    let err = failure(trainer(&[
        "export",
        "--not-private",
        "--weights",
        weights_path.to_str().unwrap(),
        "--featurizer",
        featurizer_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(err.contains("no threshold"), "{err}");

    let err = failure(trainer(&[
        "score",
        "--bundle",
        tmp.path().join("nope").to_str().unwrap(),
        "--target",
        "/",
    ]));
    assert!(err.contains("bundle.yaml"), "{err}");

    ok(trainer(&[
        "export",
        "--not-private",
        "--weights",
        weights_path.to_str().unwrap(),
        "--featurizer",
        featurizer_path.to_str().unwrap(),
        "--threshold",
        "0.5",
        "--out",
        out.to_str().unwrap(),
    ]));
    let err = failure(
        Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
            .args(["score", "--bundle", out.to_str().unwrap(), "--target", "/"])
            .env("ORT_DYLIB_PATH", "/nonexistent/libonnxruntime.so")
            .output()
            .unwrap(),
    );
    assert!(
        err.contains("/nonexistent/libonnxruntime.so") && err.contains("ORT_DYLIB_PATH"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
