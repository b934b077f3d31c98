//! End to end through the `pate-trainer` binary on the in-repo sample (configs/quick.yaml): the
//! run directory, report, manifest, ROC plot and an ONNX bundle whose ONNX Runtime scores equal
//! the libtorch student's; `teach --shard` resumability; config errors that name the key.
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};
use trainer::model_file::ModelFile;
use trainer::report::{EvaluationReport, MechanismName, Report};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn trainer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
}

fn run_ok(cmd: &mut Command) -> (String, String) {
    let out = cmd.output().expect("pate-trainer starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "pate-trainer failed: {:?}\nstdout: {stdout}\nstderr: {stderr}",
        cmd
    );
    (stdout, stderr)
}

#[test]
fn quiet_flag_keeps_only_warnings_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, stderr) = run_ok(
        trainer()
            .args(["-q", "run", "--config"])
            .arg(repo().join("configs/quick.yaml"))
            .arg("--out")
            .arg(tmp.path().join("run"))
            .args(["--device", "cpu", "--threads", "1"]),
    );
    assert!(
        !stderr.contains("run: done") && !stderr.contains("epoch") && !stderr.contains("device:"),
        "-q hides info lines: {stderr}"
    );
    assert!(
        tmp.path().join("run/report.json").is_file(),
        "-q still runs"
    );
    // An error still shows under -qq, and -q conflicts with -v.
    let out = trainer()
        .args(["-qq", "run", "--config", "/nonexistent.yaml", "--out"])
        .arg(tmp.path().join("other"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("pate-trainer: error: /nonexistent.yaml"),
        "{stderr}"
    );
    let out = trainer().args(["-q", "-v", "run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "-q with -v is a usage error");
}

#[test]
fn quick_run_end_to_end_produces_report_and_matching_onnx_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let (_, stderr) = run_ok(
        trainer()
            .args(["run", "--config"])
            .arg(repo().join("configs/quick.yaml"))
            .arg("--out")
            .arg(&run_dir)
            .args(["--device", "cpu", "--threads", "1"]),
    );
    assert!(
        stderr.contains("device: cpu"),
        "the device is logged: {stderr}"
    );
    // Not a terminal: plain lines, one per step (teachers trained, student epochs), no bar
    // redraws.
    for line in [
        "] == teach",
        "teach: 1/10 trained",
        "student: epoch 1/",
        "run: done in ",
    ] {
        assert!(stderr.contains(line), "stderr has `{line}`: {stderr}");
    }
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{1b}'),
        "no carriage returns or escapes off a terminal: {stderr:?}"
    );

    // report.json reads as the typed report (every field present) with sensible values.
    let report: Report = trainer::report::read(&run_dir.join("report.json")).unwrap();
    assert_eq!(report.teachers, 10);
    assert_eq!(report.queries, 280);
    assert_eq!(report.mechanism, MechanismName::Gnmax);
    match report.mechanism_parameters {
        privacy::Mechanism::Gnmax(m) => {
            assert_eq!(m.sigma, 2.0);
            assert_eq!(m.head.map(|h| (h.queries, h.sigma)), Some((16, 1.5)));
        }
        other => panic!("quick.yaml's mechanism is gnmax, not {other:?}"),
    }
    assert_eq!(report.delta, 1e-5);
    assert!(
        report.student_local_epsilon.is_none(),
        "no privatization in quick.yaml"
    );
    assert!(report
        .data_dependent_epsilon_label
        .contains("data-dependent"));
    let eps_ind = report.data_independent_epsilon;
    let eps_dep = report.data_dependent_epsilon;
    assert!(
        eps_ind > 0.0 && eps_dep > 0.0 && eps_dep <= eps_ind + 1e-9,
        "{eps_ind} {eps_dep}"
    );
    assert_eq!(
        report.rng,
        privacy::RngProvenance::Os,
        "quick.yaml uses OS randomness"
    );
    assert!(report.simulation, "quick.yaml is a simulation");
    assert!(report.privacy.simulation);
    // The privacy ledger beside the teachers records this run's aggregation.
    assert_eq!(report.ledger.aggregations, 1);
    let ledger = privacy::ledger::read(&run_dir.join("ledger.jsonl")).unwrap();
    assert_eq!(ledger.len(), 1);
    assert!(report.ledger.composed_data_independent_epsilon > 0.0);

    // bundle.yaml: only the whitelist. `grep -E 'data_dependent|private: *[0-9]|ensemble'` finds
    // nothing, and the one published ε is the data-independent one.
    let yaml = std::fs::read_to_string(run_dir.join("bundle/bundle.yaml")).unwrap();
    let grep = std::process::Command::new("grep")
        .args(["-E", "data_dependent|private: *[0-9]|ensemble"])
        .arg(run_dir.join("bundle/bundle.yaml"))
        .output()
        .unwrap();
    assert!(
        grep.stdout.is_empty(),
        "bundle.yaml leaks:\n{}",
        String::from_utf8_lossy(&grep.stdout)
    );
    let manifest = bundle::Bundle::load(&run_dir.join("bundle"))
        .unwrap()
        .manifest;
    let published = manifest.privacy.clone().expect("a privacy section");
    let published_epsilon = published
        .published_epsilon
        .expect("a private run publishes ε");
    assert!(
        (published_epsilon - eps_ind).abs() < 1e-9 * eps_ind,
        "{yaml}"
    );
    assert_eq!(published.published_epsilon_kind, "data-independent");
    // The published mechanism carries the head, and the published ε charges it: 16 queries at
    // σ 1.5 and 264 at σ 2, i.e. 264 + 16·(2/1.5)² query-equivalents at σ 2 (RDP α/σ² each).
    assert_eq!(published.mechanism, report.mechanism_parameters);
    let equivalent = 264.0 + 16.0 * (2.0f64 / 1.5).powi(2);
    let expected = privacy::accountant::default_rdp_orders()
        .into_iter()
        .map(|a| privacy::accountant::rdp_epsilon(equivalent * a / 4.0, a, (1e5f64).ln()))
        .fold(f64::INFINITY, f64::min);
    assert!(
        (published_epsilon - expected).abs() < 1e-9 * expected,
        "published {published_epsilon}, the head charged at its σ gives {expected}"
    );
    assert_eq!(published.answered_queries, report.answered);
    assert_eq!(
        manifest.privacy_labels().epsilon,
        format!("{published_epsilon}")
    );

    // `export` refuses a run whose ε does not hold (seeded noise, a featurizer fitted on the
    // private data) unless --not-private, and then the bundle claims no ε.
    for (pointer, value, reason) in [
        (
            "/privacy/rng",
            serde_json::json!({"rng": "seeded", "seed": 3}),
            "seeded noise",
        ),
        (
            "/privacy/featurizer/fit_on",
            serde_json::json!("private"),
            "featurizer fitted on private data",
        ),
    ] {
        let mut altered = serde_json::to_value(&report).unwrap();
        *altered.pointer_mut(pointer).unwrap() = value;
        let altered_path = tmp.path().join("altered-report.json");
        std::fs::write(&altered_path, altered.to_string()).unwrap();
        let out_dir = tmp.path().join("not-private-bundle");
        let args = |extra: &[&str]| {
            let mut c = trainer();
            c.arg("export")
                .arg("--run")
                .arg(&run_dir)
                .arg("--report")
                .arg(&altered_path)
                .arg("--out")
                .arg(&out_dir)
                .args(extra);
            c.output().unwrap()
        };
        let refused = args(&[]);
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(
            !refused.status.success() && err.contains(reason) && err.contains("--not-private"),
            "{err}"
        );
        assert!(!out_dir.exists());
        let accepted = args(&["--not-private"]);
        assert!(
            accepted.status.success(),
            "{}",
            String::from_utf8_lossy(&accepted.stderr)
        );
        let m = bundle::Bundle::load(&out_dir).unwrap().manifest;
        let p = m.privacy.clone().unwrap();
        assert_eq!(p.published_epsilon, None);
        assert_eq!(
            p.published_epsilon_kind,
            format!("none (not private: {reason})")
        );
        assert_eq!(
            m.privacy_labels().epsilon,
            format!("none (not private: {reason})")
        );
        std::fs::remove_dir_all(&out_dir).unwrap();
    }
    let ensemble = report
        .teacher_ensemble_metrics
        .as_ref()
        .expect("the run has teachers");
    for (who, m) in [
        ("metrics", &report.metrics),
        ("teacher_ensemble_metrics", ensemble),
    ] {
        for (key, v) in [
            ("tpr", m.tpr),
            ("tnr", m.tnr),
            ("fpr", m.fpr),
            ("roc_auc", m.roc_auc),
        ] {
            let v = v.unwrap_or_else(|| panic!("{who}.{key} is a number: {m:?}"));
            assert!((0.0..=1.0).contains(&v), "{who}.{key} = {v}");
        }
        assert!(m.precision.is_some() && m.f1.is_some(), "{who}: {m:?}");
        assert_eq!(m.tp + m.fn_, m.positives, "{who}: {m:?}");
        assert_eq!(m.tn + m.fp, m.negatives, "{who}: {m:?}");
        assert!((m.tnr.unwrap() + m.fpr.unwrap() - 1.0).abs() < 1e-12);
    }
    // The noiseless teacher ensemble separates the sample's CSIC attacks well (0.94–0.97 in
    // repeated runs); the student's quality varies with the noisy labels and is not asserted.
    let ensemble_auc = ensemble.roc_auc.unwrap();
    assert!(
        ensemble_auc > 0.8,
        "teacher ensemble ROC AUC {ensemble_auc}"
    );

    // Every artifact the manifest lists has the recorded sha256.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("manifest.json")).unwrap()).unwrap();
    let artifacts = manifest["artifacts"].as_object().unwrap();
    assert!(
        artifacts.contains_key("teachers/teacher-00009.safetensors")
            && artifacts.contains_key("votes.csv")
    );
    for (path, hash) in artifacts {
        let bytes = std::fs::read(run_dir.join(path)).unwrap();
        assert_eq!(
            hex::encode(Sha256::digest(&bytes)),
            hash.as_str().unwrap(),
            "{path}"
        );
    }
    assert_eq!(manifest["rng"]["rng"], "os");

    // The ROC plot (plotters) has both curves, each in the legend, as SVG and PNG.
    let svg = std::fs::read_to_string(run_dir.join("roc.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    assert!(svg.contains("\nstudent\n") && svg.contains("\n10 teachers (noiseless vote share)\n"));
    for color in ["#1F77B4", "#D62728"] {
        // The curve and its legend line.
        assert_eq!(
            svg.matches(&format!("stroke=\"{color}\"")).count(),
            2,
            "{color}"
        );
    }
    let png = std::fs::read(run_dir.join("roc.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

    // The vote file has one line per query and 10 votes per line.
    let votes = privacy::votes::read_vote_file(&run_dir.join("votes.csv")).unwrap();
    assert_eq!(votes.queries(), 280);
    assert!(votes.rows().all(|r| r.iter().sum::<u64>() == 10));

    // The bundle loads (hashes checked) and ONNX Runtime scores the test requests like libtorch.
    let loaded = bundle::Bundle::load(&run_dir.join("bundle")).unwrap();
    let student = ModelFile::load(&run_dir.join("student.safetensors")).unwrap();
    assert_eq!(loaded.manifest.threshold, student.info.threshold);
    let test_x = trainer::io::read_matrix(&run_dir.join("features/test.f32")).unwrap();
    let torch_scores =
        trainer::stages::evaluate::model_scores(&student, &test_x, tch::Device::Cpu).unwrap();
    bundle::init_onnxruntime(None).unwrap();
    let mut scorer = bundle::Scorer::new(&loaded).unwrap();
    let onnx_scores = scorer.score_flat(&test_x.values).unwrap();
    assert_eq!(onnx_scores.len(), test_x.rows);
    assert!(test_x.rows > 100);
    for (i, (a, b)) in onnx_scores.iter().zip(&torch_scores).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5,
            "test row {i}: ONNX {a} vs libtorch {b}"
        );
    }
    // And the bundle's featurizer gives the same features the student was evaluated on.
    let featurizer = featurizer::Featurizer::load(&run_dir.join("featurizer.json")).unwrap();
    assert_eq!(loaded.featurizer.content_hash(), featurizer.content_hash());
    assert_eq!(student.info.featurizer_hash, featurizer.content_hash());

    // The subcommands reproduce the run's artifacts from the run directory.
    let votes_again = tmp.path().join("votes-again.csv");
    run_ok(
        trainer()
            .args(["vote", "--run"])
            .arg(&run_dir)
            .arg("--out")
            .arg(&votes_again)
            .args(["--device", "cpu", "--threads", "1"]),
    );
    assert_eq!(
        std::fs::read(&votes_again).unwrap(),
        std::fs::read(run_dir.join("votes.csv")).unwrap()
    );
    let (stdout, _) = run_ok(
        trainer()
            .args(["evaluate", "--run"])
            .arg(&run_dir)
            .arg("--out")
            .arg(tmp.path().join("ev.json"))
            .arg("--roc")
            .arg(tmp.path().join("roc.svg"))
            .args(["--device", "cpu"]),
    );
    let evaluation: EvaluationReport = serde_json::from_str(&stdout).unwrap();
    assert_eq!(evaluation.student, report.metrics);
    // --roc names the SVG; the PNG goes beside it.
    assert!(std::fs::read_to_string(tmp.path().join("roc.svg"))
        .unwrap()
        .starts_with("<svg"));
    assert!(tmp.path().join("roc.png").is_file());
}

fn teacher_bytes(dir: &Path, shard: usize) -> Vec<u8> {
    std::fs::read(
        dir.join("teachers")
            .join(trainer::model_file::teacher_file_name(shard)),
    )
    .unwrap()
}

#[test]
fn teach_shard_is_resumable_and_retrains_on_changed_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let config = repo().join("configs/quick.yaml");
    let teach = |config: &Path| {
        let (stdout, _) = run_ok(
            trainer()
                .arg("teach")
                .arg("--config")
                .arg(config)
                .arg("--out")
                .arg(&out)
                .args(["--shard", "2/10", "--device", "cpu", "--threads", "1"]),
        );
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
    };
    let first = teach(&config);
    assert_eq!(
        (first["trained"].as_u64(), first["reused"].as_u64()),
        (Some(1), Some(0))
    );
    let files: Vec<_> = std::fs::read_dir(out.join("teachers"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files.len(), 1, "only shard 2 is trained: {files:?}");
    let bytes = teacher_bytes(&out, 2);
    let saved = ModelFile::from_bytes(&bytes, Path::new("t")).unwrap();
    assert_eq!((saved.info.shard, saved.info.shards), (Some(2), Some(10)));

    // Again: kept and skipped, the file untouched.
    let second = teach(&config);
    assert_eq!(
        (second["trained"].as_u64(), second["reused"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(teacher_bytes(&out, 2), bytes);

    // Another shard next to it trains only that one.
    run_ok(
        trainer()
            .arg("teach")
            .arg("--config")
            .arg(&config)
            .arg("--out")
            .arg(&out)
            .args(["--shard", "5/10", "--device", "cpu", "--threads", "1"]),
    );
    assert_eq!(teacher_bytes(&out, 2), bytes);
    assert!(out
        .join("teachers")
        .join(trainer::model_file::teacher_file_name(5))
        .exists());

    // Changed training settings: the saved teacher no longer matches and is retrained.
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("max_epochs: 40,", "max_epochs: 39,")
        .replace("../data", &repo().join("data").display().to_string());
    let changed = tmp.path().join("changed.yaml");
    std::fs::write(&changed, text).unwrap();
    let third = teach(&changed);
    assert_eq!(
        (third["trained"].as_u64(), third["reused"].as_u64()),
        (Some(1), Some(0))
    );
    assert_ne!(teacher_bytes(&out, 2), bytes);

    // The shard count must match the config.
    let out_err = trainer()
        .arg("teach")
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .args(["--shard", "2/7"])
        .output()
        .unwrap();
    assert!(!out_err.status.success());
    assert!(String::from_utf8_lossy(&out_err.stderr).contains("teachers.count"));
}

#[test]
fn config_errors_name_the_key_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("teachers: {count: 3, hiden: [4]}\n", "hiden"),
        (
            "teachers: {training: {learning_rate: -1}}\n",
            "teachers.training.learning_rate",
        ),
        (
            "split: {simulate_from: [{path: x.txt, format: csic}], private: 0.5, public: 0.5, validation: 0.1, test: 0.1}\n",
            "split",
        ),
        (
            "privacy: {mechanism: laplace}\n",
            "privacy: unknown variant `laplace`",
        ),
    ];
    for (i, (extra, key)) in cases.iter().enumerate() {
        let config = tmp.path().join(format!("bad{i}.yaml"));
        std::fs::write(
            &config,
            if extra.starts_with("split:") {
                extra.to_string()
            } else {
                format!("split: {{simulate_from: [{{path: x.txt, format: csic}}]}}\n{extra}")
            },
        )
        .unwrap();
        let out = tmp.path().join(format!("run{i}"));
        let result = trainer()
            .arg("run")
            .arg("--config")
            .arg(&config)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(!result.status.success());
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(
            stderr.contains(key) && stderr.contains(&format!("bad{i}.yaml")),
            "case {i}: {stderr}"
        );
        assert!(
            !out.exists(),
            "case {i}: a run directory was created for an invalid config"
        );
    }
}
