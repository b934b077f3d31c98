//! Property tests: transform never panics, its output is l1-normalized or empty, fitting is
//! deterministic.
use featurizer::{Featurizer, FeaturizerConfig, RequestParts};
use proptest::prelude::*;

fn fitted() -> Featurizer {
    let docs = [
        "/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&B1=A%F1adir",
        "/tienda1/miembros/editar.jsp?email=%27+or+1%3D1--",
        "/cgi-bin/../../etc/passwd",
        "/search?q=<script>alert(1)</script>",
        "/%C3%B1%25%32%37",
    ];
    Featurizer::fit(FeaturizerConfig { max_input_bytes: 256, ..Default::default() }, docs.iter().map(|d| RequestParts::get(d)))
        .unwrap()
}

/// Bytes biased towards what matters: `%`, hex digits, `+`, `?`, and arbitrary (invalid UTF-8) bytes.
fn request_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        3 => prop::sample::select(b"%+?&=/'<>-.2527aFfC3".to_vec()),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..400)
}

proptest! {
    #[test]
    fn transform_never_panics_and_is_l1_normalized_or_empty(
        target in request_bytes(),
        body in prop::option::of(request_bytes()),
    ) {
        let f = fitted();
        let req = RequestParts { method: "POST", target: &target, body: body.as_deref() };
        let v = f.transform(&req);
        prop_assert_eq!(v.indices.len(), v.values.len());
        prop_assert!(v.indices.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(v.indices.iter().all(|&i| (i as usize) < f.dim()));
        prop_assert!(v.values.iter().all(|x| x.is_finite() && *x > 0.0));
        if !v.is_empty() {
            let sum: f32 = v.values.iter().sum();
            prop_assert!((sum - 1.0).abs() < 1e-5, "sum {}", sum);
        }
        let raw_len = target.len() + body.as_ref().map_or(0, |b| if b.is_empty() { 0 } else { b.len() + 1 });
        prop_assert_eq!(v.truncated, raw_len > 256);
        let dense = f.transform_dense(&req);
        prop_assert_eq!(dense.len(), f.dim());
        let e = f.explain(&req);
        prop_assert_eq!(e.weights.len(), v.indices.len());
    }

    #[test]
    fn fit_is_deterministic(docs in prop::collection::vec(request_bytes(), 1..20), top_k in 1usize..40) {
        let config = FeaturizerConfig { top_k, ..Default::default() };
        let parts = || docs.iter().map(|d| RequestParts { method: "GET", target: d, body: None });
        let a = Featurizer::fit(config.clone(), parts()).unwrap();
        let b = Featurizer::fit(config.clone(), parts().rev()).unwrap();
        prop_assert_eq!(a.to_json(), b.to_json());
        prop_assert!(a.dim() <= top_k);
        let back = Featurizer::from_json(&a.to_json()).unwrap();
        prop_assert_eq!(back.to_json(), a.to_json());
    }
}
