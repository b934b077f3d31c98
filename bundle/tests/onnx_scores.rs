//! `encode_onnx` against a plain-Rust forward pass, through the real ONNX Runtime (Rust `ort`)
//! and the venv's Python `onnxruntime`.
mod common;

use std::path::Path;
use std::process::Command;

use bundle::onnx::{decode_onnx, encode_onnx};
use bundle::{BundleError, Dense, Mlp, Scorer, SparseMlp};
use common::{random_inputs, random_mlp, SplitMix};

const TOLERANCE: f32 = 1e-5;

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn check_against_rust(widths: &[usize], seed: u64) {
    let mut rng = SplitMix(seed);
    let mlp = random_mlp(widths, 3.0, &mut rng);
    let inputs = random_inputs(1000, widths[0], &mut rng);
    let expected: Vec<f32> = inputs.iter().map(|x| mlp.forward(x).unwrap()).collect();
    // The scores must cover the range, or the comparison would prove little.
    let (lo, hi) = expected
        .iter()
        .fold((1.0f32, 0.0f32), |(lo, hi), &s| (lo.min(s), hi.max(s)));
    assert!(lo < 0.2 && hi > 0.8, "scores span only [{lo}, {hi}]");

    let model = encode_onnx(&mlp).unwrap();
    let mut scorer = Scorer::from_onnx(&model, widths[0]).unwrap();
    // One row at a time (the proxy's path) and as one batch.
    let single: Vec<f32> = inputs.iter().map(|x| scorer.score(x).unwrap()).collect();
    let batch = scorer.score_batch(&inputs).unwrap();
    let d1 = max_abs_diff(&single, &expected);
    let d2 = max_abs_diff(&batch, &expected);
    eprintln!(
        "{widths:?}: max |ORT - Rust| = {d1:e} (single), {d2:e} (batch); scores in [{lo}, {hi}]"
    );
    assert!(
        d1 <= TOLERANCE,
        "{widths:?}: single-row ORT scores differ from Rust by {d1}"
    );
    assert!(
        d2 <= TOLERANCE,
        "{widths:?}: batched ORT scores differ from Rust by {d2}"
    );

    // The sparse entry point (the proxy's path: its own sparse-input graph, `encode_sparse_onnx`)
    // gives the dense graph's score on every input, the empty one included: the same sums in
    // another order, so equal to float rounding.
    assert!(scorer.has_sparse_session());
    // Even inputs are featurizer-like (l1-normalized, ≤ 12 non-zeros): 1e-6. Odd ones are dense
    // in ±2 with logits of tens, where the dense graph itself differs from the Rust forward pass
    // by ~1e-6: 5e-6.
    // The same holds for the native sparse forward pass (`SparseMlp`, what the proxy runs).
    let native = SparseMlp::new(&mlp).unwrap();
    let (mut featurizer_like, mut dense_inputs) = ([0.0f32; 2], [0.0f32; 2]);
    for (i, (x, &dense_score)) in inputs.iter().zip(&single).enumerate() {
        let (idx, val): (Vec<u32>, Vec<f32>) = x
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0.0)
            .map(|(i, v)| (i as u32, *v))
            .unzip();
        let d = [
            (scorer.score_sparse(&idx, &val).unwrap() - dense_score).abs(),
            (native.score(&idx, &val).unwrap() - dense_score).abs(),
        ];
        let worst = if i % 2 == 0 {
            &mut featurizer_like
        } else {
            &mut dense_inputs
        };
        for k in 0..2 {
            worst[k] = worst[k].max(d[k]);
        }
    }
    eprintln!(
        "{widths:?}: max |sparse - dense graph| = {:e} (ORT sparse graph), {:e} (native) on featurizer-like inputs; \
         {:e}, {:e} on dense inputs",
        featurizer_like[0], featurizer_like[1], dense_inputs[0], dense_inputs[1]
    );
    for (k, what) in ["ORT sparse graph", "native SparseMlp"].iter().enumerate() {
        assert!(
            featurizer_like[k] <= 1e-6,
            "{widths:?}: {what} and the dense graph differ by {}",
            featurizer_like[k]
        );
        assert!(
            dense_inputs[k] <= 5e-6,
            "{widths:?}: {what} and the dense graph differ by {} on dense inputs",
            dense_inputs[k]
        );
    }
}

#[test]
fn sparse_graph_adds_repeated_indices_and_rejects_bad_input() {
    let mut rng = SplitMix(6);
    let mlp = random_mlp(&[40, 16, 1], 3.0, &mut rng);
    let mut scorer = Scorer::from_onnx(&encode_onnx(&mlp).unwrap(), 40).unwrap();
    let mut dense = vec![0.0f32; 40];
    dense[7] = 0.75;
    dense[3] = 0.25;
    let expected = mlp.forward(&dense).unwrap();
    // Unsorted, and index 7 split over two entries (0.5 + 0.25).
    let got = scorer.score_sparse(&[7, 3, 7], &[0.5, 0.25, 0.25]).unwrap();
    assert!((got - expected).abs() <= 1e-6, "{got} vs {expected}");
    assert!(matches!(
        scorer.score_sparse(&[40], &[1.0]),
        Err(BundleError::Input(_))
    ));
    assert!(matches!(
        scorer.score_sparse(&[1, 2], &[1.0]),
        Err(BundleError::Input(_))
    ));
    let native = SparseMlp::new(&mlp).unwrap();
    let got = native.score(&[7, 3, 7], &[0.5, 0.25, 0.25]).unwrap();
    assert!(
        (got - expected).abs() <= 1e-6,
        "native: {got} vs {expected}"
    );
    let empty = native.score(&[], &[]).unwrap();
    assert!((empty - mlp.forward(&[0.0; 40]).unwrap()).abs() <= 1e-6);
    assert!(matches!(
        native.score(&[40], &[1.0]),
        Err(BundleError::Input(_))
    ));
    assert!(matches!(
        native.score(&[1, 2], &[1.0]),
        Err(BundleError::Input(_))
    ));
    assert!(SparseMlp::new(&Mlp { layers: vec![] }).is_err());
    // The sparse graph itself, run by Python onnxruntime, is checked in `python_onnxruntime_agrees`.
}

#[test]
fn ort_scores_equal_rust_forward_500_64_1() {
    check_against_rust(&[500, 64, 1], 1);
}

#[test]
fn ort_scores_equal_rust_forward_500_512_128_1() {
    check_against_rust(&[500, 512, 128, 1], 2);
}

#[test]
fn single_layer_logistic_regression_works() {
    check_against_rust(&[500, 1], 3);
}

#[test]
fn decode_returns_the_encoded_network() {
    let mut rng = SplitMix(4);
    let mlp = random_mlp(&[30, 8, 4, 1], 1.0, &mut rng);
    assert_eq!(decode_onnx(&encode_onnx(&mlp).unwrap()).unwrap(), mlp);
    assert!(decode_onnx(b"definitely not protobuf").is_err());

    // A graph declaring another input width than its first layer's is refused.
    use prost::Message;
    let mut model =
        bundle::proto::ModelProto::decode(encode_onnx(&mlp).unwrap().as_slice()).unwrap();
    let input = &mut model.graph.as_mut().unwrap().input[0];
    let shape = input
        .r#type
        .as_mut()
        .unwrap()
        .tensor_type
        .as_mut()
        .unwrap()
        .shape
        .as_mut()
        .unwrap();
    shape.dim[1].value = Some(bundle::proto::DimensionValue::DimValue(31));
    let err = decode_onnx(&model.encode_to_vec()).unwrap_err().to_string();
    assert!(
        err.contains("`features` is not declared float[batch, 30]"),
        "{err}"
    );
}

#[test]
fn bad_networks_are_errors_not_panics() {
    let mut rng = SplitMix(5);
    let good = random_mlp(&[10, 4, 1], 1.0, &mut rng);
    let cases: Vec<(Mlp, &str)> = vec![
        (Mlp { layers: vec![] }, "no layers"),
        (
            {
                let mut m = good.clone();
                m.layers[0].weight.pop();
                m
            },
            "weight has 39 values",
        ),
        (
            {
                let mut m = good.clone();
                m.layers[1].in_dim = 5;
                m.layers[1].weight = vec![0.0; 5];
                m
            },
            "does not match layer 0's out_dim 4",
        ),
        (
            {
                let mut m = good.clone();
                m.layers[1].bias.push(0.0);
                m
            },
            "bias has 2 values",
        ),
        (random_mlp(&[10, 2], 1.0, &mut rng), "must have out_dim 1"),
        (
            {
                let mut m = good.clone();
                m.layers[0].weight[3] = f32::NAN;
                m
            },
            "weight[3] is not finite",
        ),
        (
            Mlp {
                layers: vec![Dense {
                    in_dim: 0,
                    out_dim: 1,
                    weight: vec![],
                    bias: vec![0.0],
                }],
            },
            "must be positive",
        ),
    ];
    for (mlp, expected) in cases {
        match encode_onnx(&mlp) {
            Err(BundleError::InvalidModel(msg)) => {
                let msg = msg.to_string();
                assert!(msg.contains(expected), "{msg:?} lacks {expected:?}")
            }
            other => panic!("expected InvalidModel({expected}), got {other:?}"),
        }
    }
    let mut scorer = Scorer::from_onnx(&encode_onnx(&good).unwrap(), 10).unwrap();
    assert!(matches!(
        scorer.score(&[0.0; 9]),
        Err(BundleError::Input(_))
    ));
    assert!(matches!(
        scorer.score_sparse(&[10], &[1.0]),
        Err(BundleError::Input(_))
    ));
    assert!(matches!(
        good.forward(&[0.0; 11]),
        Err(BundleError::Input(_))
    ));
}

/// The venv's Python onnxruntime loads `model.onnx` and gives the same scores.
#[test]
fn python_onnxruntime_gives_the_same_scores() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh",
        python.display()
    );
    let mut rng = SplitMix(6);
    let widths = [500, 512, 128, 1];
    let mlp = random_mlp(&widths, 3.0, &mut rng);
    let inputs = random_inputs(1000, widths[0], &mut rng);
    let dir = tempfile::tempdir().unwrap();
    let model_path = dir.path().join("model.onnx");
    std::fs::write(&model_path, encode_onnx(&mlp).unwrap()).unwrap();
    let input_path = dir.path().join("inputs.f32");
    std::fs::write(
        &input_path,
        inputs
            .iter()
            .flatten()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let output_path = dir.path().join("scores.f32");
    let script = r#"
import sys, numpy as np, onnxruntime as ort
model, inputs, outputs, dim = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
assert [i.name for i in session.get_inputs()] == ["features"], session.get_inputs()
assert [o.name for o in session.get_outputs()] == ["score"], session.get_outputs()
assert session.get_inputs()[0].shape[1] == dim, session.get_inputs()[0].shape
x = np.fromfile(inputs, dtype="<f4").reshape(-1, dim)
(score,) = session.run(["score"], {"features": x})
assert score.shape == (x.shape[0], 1), score.shape
score.astype("<f4").tofile(outputs)
# The proxy's sparse-input graph, one row at a time (feature 0 = 0 for an empty row).
sparse = ort.InferenceSession(sys.argv[5], providers=["CPUExecutionProvider"])
assert [i.name for i in sparse.get_inputs()] == ["indices", "values"], sparse.get_inputs()
scores = []
for row in x:
    idx = np.flatnonzero(row)
    if idx.size == 0:
        idx = np.array([0])
    (s,) = sparse.run(["score"], {"indices": idx.astype(np.int64), "values": row[idx].reshape(1, -1)})
    assert s.shape == (1, 1), s.shape
    scores.append(s[0, 0])
np.array(scores, dtype="<f4").tofile(sys.argv[6])
"#;
    let sparse_model_path = dir.path().join("sparse.onnx");
    std::fs::write(
        &sparse_model_path,
        bundle::encode_sparse_onnx(&mlp).unwrap(),
    )
    .unwrap();
    let sparse_output_path = dir.path().join("sparse-scores.f32");
    let out = Command::new(&python)
        .arg("-c")
        .arg(script)
        .args([&model_path, &input_path, &output_path])
        .arg(widths[0].to_string())
        .args([&sparse_model_path, &sparse_output_path])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python onnxruntime failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let python_scores: Vec<f32> = std::fs::read(&output_path)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let expected: Vec<f32> = inputs.iter().map(|x| mlp.forward(x).unwrap()).collect();
    let d = max_abs_diff(&python_scores, &expected);
    eprintln!("max |Python ORT - Rust| = {d:e}");
    assert!(
        d <= TOLERANCE,
        "Python onnxruntime scores differ from Rust by {d}"
    );
    let mut scorer = Scorer::from_onnx(&std::fs::read(&model_path).unwrap(), widths[0]).unwrap();
    let rust_ort = scorer.score_batch(&inputs).unwrap();
    let d = max_abs_diff(&python_scores, &rust_ort);
    assert!(d <= TOLERANCE, "Python and Rust ONNX Runtime differ by {d}");

    // The sparse-input graph: Python's scores equal the Rust scorer's sparse path and the dense
    // graph's scores (the same network; sums in another order).
    let python_sparse: Vec<f32> = std::fs::read(&sparse_output_path)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let rust_sparse: Vec<f32> = inputs
        .iter()
        .map(|x| {
            let (idx, val): (Vec<u32>, Vec<f32>) = x
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0.0)
                .map(|(i, v)| (i as u32, *v))
                .unzip();
            scorer.score_sparse(&idx, &val).unwrap()
        })
        .collect();
    let native = SparseMlp::new(&mlp).unwrap();
    let native_scores: Vec<f32> = inputs
        .iter()
        .map(|x| {
            let (idx, val): (Vec<u32>, Vec<f32>) = x
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 0.0)
                .map(|(i, v)| (i as u32, *v))
                .unzip();
            native.score(&idx, &val).unwrap()
        })
        .collect();
    // Featurizer-like rows (even) to 1e-6; dense rows in ±2 (odd, logits of tens) to 5e-6.
    for (parity, tolerance) in [(0, 1e-6f32), (1, 5e-6)] {
        let pick = |v: &[f32]| {
            v.iter()
                .skip(parity)
                .step_by(2)
                .copied()
                .collect::<Vec<f32>>()
        };
        let d = max_abs_diff(&pick(&python_scores), &pick(&native_scores));
        eprintln!("native SparseMlp vs Python dense graph, rows {parity} mod 2: max diff {d:e}");
        assert!(
            d <= tolerance,
            "native SparseMlp and Python onnxruntime differ by {d} (rows {parity} mod 2)"
        );
    }
    let d_rust = max_abs_diff(&python_sparse, &rust_sparse);
    let d_dense = max_abs_diff(&python_sparse, &python_scores);
    eprintln!("sparse graph: max |Python - Rust| = {d_rust:e}, max |sparse - dense (Python)| = {d_dense:e}");
    assert!(
        d_rust <= 1e-6,
        "Python and Rust sparse graphs differ by {d_rust}"
    );
    assert!(
        d_dense <= 1e-6,
        "sparse and dense graphs differ by {d_dense} in Python onnxruntime"
    );
}
