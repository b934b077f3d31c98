//! Bundle loading (`bundle::Bundle::load`) with an arbitrary `bundle.yaml`.
//!
//! A valid bundle (small featurizer, one-layer model) is written once to a per-process temporary
//! directory; each input replaces its `bundle.yaml`, so the fuzzer reaches past the YAML into the
//! version, threshold, file-list, hash and dimension checks. Property: never panics; an accepted
//! bundle has a threshold in [0, 1] and a model as wide as its featurizer.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use bundle::{Bundle, BundleContents, Dense, Mlp, MANIFEST_FILE};
use featurizer::{Featurizer, FeaturizerConfig, RequestParts};
use libfuzzer_sys::fuzz_target;

static BUNDLE_DIR: LazyLock<PathBuf> = LazyLock::new(|| {
    let dir = std::env::temp_dir().join(format!("pate-waf-fuzz-bundle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("creating the fuzz bundle directory");
    let docs = ["/index.html?a=1", "/login.php?user=admin'%20or%201=1--", "/x?q=<script>"];
    let config = FeaturizerConfig { top_k: 16, ..FeaturizerConfig::default() };
    let featurizer = Featurizer::fit(config, docs.iter().map(|t| RequestParts::get(t))).expect("fitting");
    let dim = featurizer.dim();
    let mlp = Mlp { layers: vec![Dense { in_dim: dim, out_dim: 1, weight: vec![0.5; dim], bias: vec![-0.25] }] };
    let contents = BundleContents {
        mlp: &mlp,
        featurizer: &featurizer,
        threshold: 0.5,
        content_only_threshold: None,
        part_model: None,
        part_model_offsets: Default::default(),
        privacy: None,
        metrics: serde_json::Value::Null,
        model_version: Some("fuzz".into()),
        format_checks: None,
    };
    bundle::write_bundle(&dir, &contents).expect("writing the fuzz bundle");
    if let Ok(path) = std::env::var("FUZZ_DUMP_MANIFEST") {
        // scripts/fuzz.sh uses this to refresh the seed with the manifest this build writes.
        std::fs::copy(dir.join(MANIFEST_FILE), path).expect("copying the manifest");
    }
    dir
});

fuzz_target!(|data: &[u8]| {
    let dir = &*BUNDLE_DIR;
    std::fs::write(dir.join(MANIFEST_FILE), data).expect("writing bundle.yaml");
    if let Ok(loaded) = Bundle::load(dir) {
        assert!((0.0..=1.0).contains(&loaded.manifest.threshold));
        let mlp = loaded.mlp().expect("a loaded bundle's model decodes");
        assert_eq!(mlp.input_dim(), loaded.featurizer.dim());
    }
});
