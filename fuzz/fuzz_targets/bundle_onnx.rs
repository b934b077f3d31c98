//! `bundle::decode_onnx` (the `model.onnx` artifact) on arbitrary bytes.
//!
//! Property: never panics; an accepted model validates, scores a zero input to a probability,
//! and re-encodes to a model that decodes to the same network.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mlp) = bundle::decode_onnx(data) else { return };
    if mlp.validate().is_err() {
        return;
    }
    // Keep each run cheap: skip absurdly wide (but valid) inputs.
    if mlp.input_dim() <= 1 << 16 && mlp.parameter_count() <= 1 << 20 {
        if let Ok(p) = mlp.forward(&vec![0.0; mlp.input_dim()]) {
            assert!(p.is_nan() || (0.0..=1.0).contains(&p), "probability {p} outside [0, 1]");
        }
    }
    let bytes = bundle::encode_onnx(&mlp).expect("encoding a validated model");
    assert_eq!(bundle::decode_onnx(&bytes).expect("decoding a model this build wrote"), mlp);
});
