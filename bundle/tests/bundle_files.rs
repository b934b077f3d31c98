//! The bundle directory: write, load, tamper, versions, replacement, and the ONNX Runtime library
//! check.
mod common;

use std::collections::BTreeMap;
use std::path::Path;

use bundle::runtime::{check_library_path, resolve_library_path};
use bundle::{
    write_bundle, Bundle, BundleContents, BundleError, PartOffsets, Scorer, FEATURIZER_FILE,
    MANIFEST_FILE, MODEL_FILE, PART_MODEL_FILE,
};
use common::{random_mlp, sample_featurizer, sample_targets, SplitMix};
use featurizer::{Placement, RequestParts};

fn privacy_report() -> Option<bundle::PublishedPrivacy> {
    Some(bundle::PublishedPrivacy {
        mechanism: privacy::Mechanism::Lnmax(privacy::aggregate::Lnmax { gamma: 0.05 }),
        delta: 1e-5,
        answered_queries: 1000,
        rng: privacy::RngProvenance::Os,
        featurizer: privacy::FeaturizerProvenance {
            fit_on: privacy::FitSide::Public,
            content_hash: "0123".into(),
        },
        published_epsilon: Some(8.03),
        published_epsilon_kind: "data-independent".into(),
    })
}

fn write_sample(dir: &Path, seed: u64) -> (bundle::Mlp, featurizer::Featurizer, bundle::Manifest) {
    let featurizer = sample_featurizer(500);
    let mut rng = SplitMix(seed);
    let mlp = random_mlp(&[featurizer.dim(), 16, 1], 3.0, &mut rng);
    let manifest = write_bundle(
        dir,
        &BundleContents {
            mlp: &mlp,
            featurizer: &featurizer,
            threshold: 0.42,
            content_only_threshold: None,
            part_model: None,
            part_model_offsets: Default::default(),
            privacy: privacy_report(),
            metrics: serde_json::json!({"tpr": 0.9, "tnr": 0.95, "roc_auc": 0.97}),
            model_version: None,
            format_checks: None,
        },
    )
    .unwrap();
    (mlp, featurizer, manifest)
}

#[test]
fn round_trip_keeps_everything_and_scores_like_the_network() {
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("bundle");
    let (mlp, featurizer, written) = write_sample(&dir, 10);
    let loaded = Bundle::load(&dir).unwrap();
    assert_eq!(loaded.manifest, written);
    assert_eq!(loaded.featurizer, featurizer);
    assert_eq!(loaded.mlp().unwrap(), mlp);
    assert_eq!(loaded.manifest.threshold, 0.42);
    assert_eq!(loaded.manifest.input_dim, featurizer.dim());
    assert_eq!(loaded.manifest.model.widths, vec![featurizer.dim(), 16, 1]);
    assert_eq!(loaded.manifest.model_version.len(), 16);
    assert!(loaded.manifest.created.ends_with('Z') && loaded.manifest.created.len() == 20);
    assert_eq!(loaded.manifest.files.len(), 2);
    let labels = loaded.manifest.privacy_labels();
    assert_eq!(
        (
            labels.epsilon.as_str(),
            labels.delta.as_str(),
            labels.mechanism.as_str()
        ),
        ("8.03", "0.00001", "lnmax")
    );
    // The privacy section is the typed whitelist: an extra key (a data-dependent ε, say) is
    // refused on load.
    let text = std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap();
    assert!(text.contains("published_epsilon: 8.03"), "{text}");
    let tampered = text.replace(
        "published_epsilon: 8.03",
        "published_epsilon: 8.03\n  data_dependent_epsilon: 1.2",
    );
    assert_ne!(tampered, text);
    let copy = run.path().join("tampered");
    std::fs::create_dir(&copy).unwrap();
    for f in [MODEL_FILE, FEATURIZER_FILE] {
        std::fs::copy(dir.join(f), copy.join(f)).unwrap();
    }
    std::fs::write(copy.join(MANIFEST_FILE), tampered).unwrap();
    let err = Bundle::load(&copy).unwrap_err().to_string();
    assert!(err.contains("data_dependent_epsilon"), "{err}");
    std::fs::remove_dir_all(&copy).unwrap();
    // Only the three files, and no temporary directory left beside the bundle.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [MANIFEST_FILE, FEATURIZER_FILE, MODEL_FILE]);
    assert_eq!(std::fs::read_dir(run.path()).unwrap().count(), 1);

    let mut scorer = Scorer::new(&loaded).unwrap();
    for target in sample_targets() {
        let dense = loaded
            .featurizer
            .transform_dense(&RequestParts::get(&target));
        let expected = mlp.forward(&dense).unwrap();
        let got = scorer.score(&dense).unwrap();
        assert!(
            (got - expected).abs() <= 1e-5,
            "{target}: ORT {got} vs Rust {expected}"
        );
    }
}

#[test]
fn tampered_files_are_rejected_with_the_file_named() {
    for file in [MODEL_FILE, FEATURIZER_FILE] {
        let run = tempfile::tempdir().unwrap();
        let dir = run.path().join("bundle");
        write_sample(&dir, 11);
        let path = dir.join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
        let err = Bundle::load(&dir).unwrap_err().to_string();
        assert!(
            err.contains(&format!("sha256 of {file} does not match")),
            "{err}"
        );
        assert!(err.contains("bundle.yaml"), "{err}");
    }
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("bundle");
    write_sample(&dir, 12);
    std::fs::remove_file(dir.join(MODEL_FILE)).unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(err.contains("model.onnx"), "{err}");
}

#[test]
fn other_format_versions_and_broken_manifests_are_rejected() {
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("bundle");
    write_sample(&dir, 13);
    let manifest_path = dir.join(MANIFEST_FILE);
    let original = std::fs::read_to_string(&manifest_path).unwrap();
    assert!(original.starts_with("format_version: 2\n"), "{original}");

    // Version 1 (whose privacy section was the whole run report) is refused.
    std::fs::write(
        &manifest_path,
        original.replacen("format_version: 2", "format_version: 1", 1),
    )
    .unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(err.contains("format_version 1 is not supported"), "{err}");

    std::fs::write(
        &manifest_path,
        original.replacen("format_version: 2\n", "", 1),
    )
    .unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(err.contains("format_version is missing"), "{err}");

    std::fs::write(
        &manifest_path,
        original.replacen("threshold: 0.42", "threshold: 1.5", 1),
    )
    .unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(err.contains("threshold 1.5"), "{err}");

    std::fs::write(
        &manifest_path,
        original.replacen(
            "featurizer_content_hash: ",
            "featurizer_content_hash: 00",
            1,
        ),
    )
    .unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(err.contains("featurizer_content_hash is 00"), "{err}");

    std::fs::write(&manifest_path, "format_version: 2\nthreshold: [\n").unwrap();
    assert!(matches!(
        Bundle::load(&dir),
        Err(BundleError::Manifest { .. })
    ));

    std::fs::write(&manifest_path, &original).unwrap();
    Bundle::load(&dir).unwrap();
}

#[test]
fn writing_replaces_an_existing_bundle_and_refuses_bad_inputs() {
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("bundle");
    let (_, _, first) = write_sample(&dir, 14);
    let (_, featurizer, second) = write_sample(&dir, 15);
    assert_ne!(first.model_version, second.model_version);
    assert_eq!(
        Bundle::load(&dir).unwrap().manifest.model_version,
        second.model_version
    );
    assert_eq!(
        std::fs::read_dir(run.path()).unwrap().count(),
        1,
        "old or temporary directories left behind"
    );

    // A network whose input width is not the featurizer's: error, and the old bundle stays.
    let mut rng = SplitMix(16);
    let wrong = random_mlp(&[featurizer.dim() + 1, 4, 1], 1.0, &mut rng);
    let contents = |threshold| BundleContents {
        mlp: &wrong,
        featurizer: &featurizer,
        threshold,
        content_only_threshold: None,
        part_model: None,
        part_model_offsets: Default::default(),
        privacy: None,
        metrics: serde_json::Value::Null,
        model_version: Some("x".into()),
        format_checks: None,
    };
    let err = write_bundle(&dir, &contents(0.5)).unwrap_err().to_string();
    assert!(err.contains("dimension"), "{err}");
    let right = random_mlp(&[featurizer.dim(), 4, 1], 1.0, &mut rng);
    let err = write_bundle(
        &dir,
        &BundleContents {
            mlp: &right,
            ..contents(f32::NAN)
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("threshold"), "{err}");
    assert_eq!(
        Bundle::load(&dir).unwrap().manifest.model_version,
        second.model_version
    );
    assert_eq!(std::fs::read_dir(run.path()).unwrap().count(), 1);
}

#[test]
fn model_and_featurizer_of_different_widths_are_rejected_on_load() {
    // Two valid bundles of different widths; swap their model files and fix the hashes in the
    // manifest so that only the dimension check can catch it.
    let run = tempfile::tempdir().unwrap();
    let (a, b) = (run.path().join("a"), run.path().join("b"));
    write_sample(&a, 17);
    let featurizer = sample_featurizer(20);
    let mut rng = SplitMix(18);
    let mlp = random_mlp(&[featurizer.dim(), 3, 1], 1.0, &mut rng);
    write_bundle(
        &b,
        &BundleContents {
            mlp: &mlp,
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
    let model_b = std::fs::read(b.join(MODEL_FILE)).unwrap();
    let old_hash = bundle::sha256_hex(&std::fs::read(a.join(MODEL_FILE)).unwrap());
    std::fs::write(a.join(MODEL_FILE), &model_b).unwrap();
    let manifest = std::fs::read_to_string(a.join(MANIFEST_FILE)).unwrap();
    std::fs::write(
        a.join(MANIFEST_FILE),
        manifest.replace(&old_hash, &bundle::sha256_hex(&model_b)),
    )
    .unwrap();
    let err = Bundle::load(&a).unwrap_err().to_string();
    assert!(err.contains("dimensions disagree"), "{err}");
}

#[test]
fn a_missing_onnxruntime_library_is_a_clear_error() {
    let missing = Path::new("/nonexistent/libonnxruntime.so");
    let err = check_library_path(missing).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/libonnxruntime.so"), "{err}");
    assert!(err.contains("ORT_DYLIB_PATH"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let err = check_library_path(dir.path()).unwrap_err().to_string();
    assert!(err.contains("not a regular file"), "{err}");
    // An explicit path wins over the environment and the compile-time default.
    assert_eq!(resolve_library_path(Some(missing)).unwrap(), missing);
    // The configured library (from .cargo/config.toml) exists and passes the check.
    let configured = resolve_library_path(None).unwrap();
    check_library_path(&configured).unwrap();
}

/// `content_only_threshold`: written and read back when given (the threshold for scores without
/// the site's format checks; `threshold_for(false)` returns it, `threshold_for(true)` the
/// bundle's), absent from bundle.yaml when not, and a value outside [0, 1] refused at write and
/// at load with the key named.
#[test]
fn the_content_only_threshold_round_trips_and_is_checked() {
    let featurizer = sample_featurizer(21);
    let mut rng = SplitMix(22);
    let mlp = random_mlp(&[featurizer.dim(), 3, 1], 1.0, &mut rng);
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("bundle");
    let contents = |content_only_threshold| BundleContents {
        mlp: &mlp,
        featurizer: &featurizer,
        threshold: 0.4,
        content_only_threshold,
        part_model: None,
        part_model_offsets: Default::default(),
        privacy: None,
        metrics: serde_json::Value::Null,
        model_version: None,
        format_checks: None,
    };
    let written = write_bundle(&dir, &contents(Some(0.7))).unwrap();
    let loaded = Bundle::load(&dir).unwrap();
    assert_eq!(loaded.manifest, written);
    assert_eq!(loaded.manifest.content_only_threshold, Some(0.7));
    assert_eq!(
        (
            loaded.manifest.threshold_for(true),
            loaded.manifest.threshold_for(false)
        ),
        (0.4, 0.7)
    );
    let yaml = std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap();
    assert!(yaml.contains("content_only_threshold: 0.7"), "{yaml}");
    std::fs::write(
        dir.join(MANIFEST_FILE),
        yaml.replace("content_only_threshold: 0.7", "content_only_threshold: 1.5"),
    )
    .unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(err.contains("content_only_threshold 1.5"), "{err}");
    let err = write_bundle(&dir, &contents(Some(f32::NAN)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("threshold"), "{err}");
    // Without one: not written, and both modes use the bundle's threshold.
    write_bundle(&dir, &contents(None)).unwrap();
    let yaml = std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap();
    assert!(!yaml.contains("content_only_threshold"), "{yaml}");
    let loaded = Bundle::load(&dir).unwrap();
    assert_eq!(loaded.manifest.threshold_for(false), 0.4);
}

/// `part_model`: written as `part_model.onnx` with its shape in bundle.yaml and its sha256 in
/// `files`, read back as the same network; a part model of another width than the featurizer
/// is refused at write; a modified `part_model.onnx`, or a manifest that names a part model
/// whose file it does not list, is refused at load; without one, neither file nor key.
#[test]
fn the_part_model_round_trips_and_is_checked() {
    let featurizer = sample_featurizer(31);
    let mut rng = SplitMix(32);
    let mlp = random_mlp(&[featurizer.dim(), 3, 1], 1.0, &mut rng);
    let part = random_mlp(&[featurizer.dim(), 1], 1.0, &mut rng);
    let narrow = random_mlp(&[featurizer.dim() + 1, 1], 1.0, &mut rng);
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("bundle");
    let contents = |part_model| BundleContents {
        mlp: &mlp,
        featurizer: &featurizer,
        threshold: 0.4,
        content_only_threshold: Some(0.6),
        part_model,
        part_model_offsets: PartOffsets::default(),
        privacy: None,
        metrics: serde_json::Value::Null,
        model_version: None,
        format_checks: None,
    };
    let written = write_bundle(&dir, &contents(Some(&part))).unwrap();
    let loaded = Bundle::load(&dir).unwrap();
    assert_eq!(loaded.manifest, written);
    assert_eq!(loaded.part_mlp().unwrap(), Some(part.clone()));
    let summary = loaded.manifest.part_model.clone().unwrap();
    assert_eq!(summary.widths, vec![featurizer.dim(), 1]);
    assert!(loaded.manifest.files.contains_key(PART_MODEL_FILE));
    let err = write_bundle(&dir, &contents(Some(&narrow)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("dimension"), "{err}");
    // The old bundle stays after a refused write.
    assert!(Bundle::load(&dir).unwrap().part_model_onnx.is_some());
    let onnx = dir.join(PART_MODEL_FILE);
    let mut bytes = std::fs::read(&onnx).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&onnx, &bytes).unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(err.contains("sha256 of part_model.onnx"), "{err}");
    // A manifest naming a part model without listing its file.
    write_bundle(&dir, &contents(Some(&part))).unwrap();
    let yaml = std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap();
    let unlisted: String = yaml
        .lines()
        .filter(|l| !l.trim_start().starts_with("part_model.onnx:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(unlisted, yaml);
    std::fs::write(dir.join(MANIFEST_FILE), unlisted).unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(err.contains("part_model"), "{err}");
    write_bundle(&dir, &contents(None)).unwrap();
    assert!(!dir.join(PART_MODEL_FILE).exists());
    let loaded = Bundle::load(&dir).unwrap();
    assert_eq!(loaded.part_mlp().unwrap(), None);
    let yaml = std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap();
    assert!(!yaml.contains("part_model"), "{yaml}");
}

/// `part_model_offsets`: written by placement name and read back; none written when empty;
/// refused without a part model (at write and at load), and a manifest with an unknown
/// placement or an offset outside [0, MAX] is refused naming it.
#[test]
fn the_part_model_offsets_round_trip_and_are_checked() {
    let featurizer = sample_featurizer(41);
    let mut rng = SplitMix(42);
    let mlp = random_mlp(&[featurizer.dim(), 3, 1], 1.0, &mut rng);
    let part = random_mlp(&[featurizer.dim(), 1], 1.0, &mut rng);
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("bundle");
    let offsets = PartOffsets::new(BTreeMap::from([
        (Placement::Query, 1.5),
        (Placement::HdrUserAgent, 0.25),
    ]))
    .unwrap();
    let contents = |part_model, part_model_offsets| BundleContents {
        mlp: &mlp,
        featurizer: &featurizer,
        threshold: 0.4,
        content_only_threshold: Some(0.6),
        part_model,
        part_model_offsets,
        privacy: None,
        metrics: serde_json::Value::Null,
        model_version: None,
        format_checks: None,
    };
    let written = write_bundle(&dir, &contents(Some(&part), offsets.clone())).unwrap();
    let loaded = Bundle::load(&dir).unwrap();
    assert_eq!(loaded.manifest, written);
    assert_eq!(loaded.manifest.part_model_offsets, offsets);
    let yaml = std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap();
    assert!(yaml.contains("hdr:user-agent: 0.25"), "{yaml}");
    let err = write_bundle(&dir, &contents(None, offsets.clone()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("part_model_offsets"), "{err}");
    for (from, to, expected) in [
        ("query: 1.5", "querry: 1.5", "`querry` is not a placement"),
        ("query: 1.5", "query: -1.0", "query is -1"),
        ("query: 1.5", "query: 25.0", "query is 25"),
    ] {
        std::fs::write(dir.join(MANIFEST_FILE), yaml.replace(from, to)).unwrap();
        let err = Bundle::load(&dir).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }
    // Offsets in a manifest without a part model.
    write_bundle(&dir, &contents(None, PartOffsets::default())).unwrap();
    let plain = std::fs::read_to_string(dir.join(MANIFEST_FILE)).unwrap();
    assert!(!plain.contains("part_model_offsets"), "{plain}");
    std::fs::write(
        dir.join(MANIFEST_FILE),
        format!("{plain}part_model_offsets:\n  query: 1.0\n"),
    )
    .unwrap();
    let err = Bundle::load(&dir).unwrap_err().to_string();
    assert!(
        err.contains("part_model_offsets without a part_model"),
        "{err}"
    );
}
