//! `pate-trainer data stats` and `pate-trainer featurize fit|show`, run as the binary.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn trainer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
        .args(args)
        .output()
        .expect("run pate-trainer")
}

fn ok_stdout(args: &[&str]) -> String {
    let out = trainer(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn repo(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn shared(rel: &str) -> String {
    repo(&format!("../shared/datasets/{rel}"))
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

#[test]
fn data_stats_csic_training_file_is_36000_benign() {
    let out = ok_stdout(&[
        "data",
        "stats",
        "--format",
        "csic",
        &shared("csic2010/normalTrafficTraining.txt"),
    ]);
    assert_eq!(out.lines().count(), 1, "one JSON object on one line: {out}");
    assert_eq!(
        json(&out),
        serde_json::json!({"records": 36000, "by_label": {"benign": 36000, "malicious": 0, "unlabeled": 0}})
    );
}

#[test]
fn data_stats_sums_several_files_and_reads_each_format() {
    let out = ok_stdout(&[
        "data",
        "stats",
        "--format",
        "csic",
        &repo("data/sample/csic_normalTrafficTraining_sample.txt"),
        &repo("data/sample/csic_anomalousTrafficTest_A_sample.txt"),
    ]);
    assert_eq!(
        json(&out),
        serde_json::json!({"records": 1854, "by_label": {"benign": 1242, "malicious": 612, "unlabeled": 0}})
    );
    let out = ok_stdout(&[
        "data",
        "stats",
        "--format",
        "httpparams",
        &repo("data/sample/httpparams_payload_full_sample.csv"),
    ]);
    assert_eq!(
        json(&out)["by_label"],
        serde_json::json!({"benign": 965, "malicious": 589, "unlabeled": 0})
    );
    let out = ok_stdout(&[
        "data",
        "stats",
        "--format",
        "fwaf",
        &shared("fwaf/badqueries.txt"),
    ]);
    assert_eq!(json(&out)["by_label"]["malicious"], 48065);
    // A label override.
    let out = ok_stdout(&[
        "data",
        "stats",
        "--format",
        "csic",
        "--label",
        "malicious",
        &repo("data/sample/csic_normalTrafficTest_A_sample.txt"),
    ]);
    assert_eq!(
        json(&out)["by_label"],
        serde_json::json!({"benign": 0, "malicious": 584, "unlabeled": 0})
    );
}

#[test]
fn data_stats_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "/a,benign\n/b,whatever\n").unwrap();
    let out = trainer(&["data", "stats", "--format", "csv", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.csv:2: expected a label"), "{err}");
    let out = trainer(&["data", "stats", "--format", "xml", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("csic|fwaf|httpparams|csv|apache"));
}

fn fit(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out_path = dir.join(name);
    let mut args = vec!["featurize", "fit", "--format", "csic"];
    let a = repo("data/sample/csic_normalTrafficTraining_sample.txt");
    let b = repo("data/sample/csic_anomalousTrafficTest_A_sample.txt");
    args.push(&a);
    args.push(&b);
    args.extend_from_slice(extra);
    let out_str = out_path.to_str().unwrap().to_owned();
    args.extend_from_slice(&["--out", &out_str]);
    let summary = json(&ok_stdout(&args));
    assert_eq!(summary["documents"], 1854);
    out_path
}

#[test]
fn featurize_fit_writes_a_loadable_deterministic_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let a = fit(dir.path(), "a.json", &["--top-k", "500"]);
    let b = fit(dir.path(), "b.json", &[]);
    let bytes = std::fs::read(&a).unwrap();
    assert_eq!(
        bytes,
        std::fs::read(&b).unwrap(),
        "same input and settings, same bytes"
    );
    let f = featurizer::Featurizer::load(&a).unwrap();
    assert_eq!(f.config().top_k, 500);
    assert_eq!(f.dim(), 500);
    assert_eq!(f.documents(), 1854);
    let small = fit(dir.path(), "small.json", &["--top-k", "50"]);
    assert_eq!(featurizer::Featurizer::load(&small).unwrap().dim(), 50);
    // Only the artifacts are in the directory: no temporary files left over.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn featurize_show_prints_text_tokens_and_weights() {
    let dir = tempfile::tempdir().unwrap();
    let f = fit(dir.path(), "f.json", &[]);
    let out = ok_stdout(&[
        "featurize",
        "show",
        "--featurizer",
        f.to_str().unwrap(),
        "--target",
        "/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&cantidad=%2527%3B+DROP+TABLE",
    ]);
    let v = json(&out);
    assert_eq!(
        v["normalized"],
        "/tienda1/publico/anadir.jsp?id=2&nombre=jamón ibérico&cantidad='; drop table"
    );
    let tokens: Vec<&str> = v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(&tokens[..4], &["/", "tienda1", "/", "publico"]);
    assert!(tokens.contains(&"'") && tokens.contains(&";") && tokens.contains(&"drop"));
    assert_eq!(v["truncated"], false);
    let weights = v["weights"].as_array().unwrap();
    assert!(!weights.is_empty());
    let sum: f64 = weights.iter().map(|w| w["weight"].as_f64().unwrap()).sum();
    assert!((sum - 1.0).abs() < 1e-5, "{sum}");
    assert!(weights.iter().any(|w| w["token"] == "tienda1"));

    // A POST body is joined to the target as its query.
    let out = ok_stdout(&[
        "featurize",
        "show",
        "--featurizer",
        f.to_str().unwrap(),
        "--target",
        "/tienda1/publico/autenticar.jsp",
        "--body",
        "login=a+b&pwd=x",
        "--method",
        "POST",
    ]);
    assert_eq!(
        json(&out)["normalized"],
        "/tienda1/publico/autenticar.jsp?login=a b&pwd=x"
    );

    // An edited artifact is refused with the file named.
    let text = std::fs::read_to_string(&f)
        .unwrap()
        .replacen("\"top_k\": 500", "\"top_k\": 499", 1);
    std::fs::write(&f, text).unwrap();
    let out = trainer(&[
        "featurize",
        "show",
        "--featurizer",
        f.to_str().unwrap(),
        "--target",
        "/",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("f.json") && err.contains("hash mismatch"),
        "{err}"
    );
}

/// `data split` writes exactly the requests of a role of the run's split (the counts a run of the
/// same config reports in `splits.json`), by label, in CSIC's format, the same bytes every time;
/// the private role is not a choice.
#[test]
fn data_split_writes_the_requests_of_a_public_role() {
    let dir = tempfile::tempdir().unwrap();
    let config = repo("configs/quick.yaml");
    let run_dir = dir.path().join("run");
    ok_stdout(&[
        "run",
        "--config",
        &config,
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    let splits = json(&std::fs::read_to_string(run_dir.join("splits.json")).unwrap());
    let split = |role: &str, out: &Path| {
        json(&ok_stdout(&[
            "data",
            "split",
            "--config",
            &config,
            "--role",
            role,
            "--out",
            out.to_str().unwrap(),
        ]))
    };
    for (role, key) in [("test", "test"), ("validation", "student_validation")] {
        let out = dir.path().join(role);
        let printed = split(role, &out);
        let (benign, malicious) = (
            printed["requests"]["normal"].as_u64().unwrap(),
            printed["requests"]["anomalous"].as_u64().unwrap(),
        );
        assert_eq!(
            Some(benign + malicious),
            splits["counts"][key].as_u64(),
            "{role}"
        );
        for (file, count, label) in [
            ("normal.txt", benign, "benign"),
            ("anomalous.txt", malicious, "malicious"),
        ] {
            let path = out.join(file);
            let stats = json(&ok_stdout(&[
                "data",
                "stats",
                "--format",
                "csic",
                path.to_str().unwrap(),
            ]));
            // Labelled by the file name, as CSIC's own files are.
            assert_eq!(stats["records"].as_u64(), Some(count), "{role} {file}");
            assert_eq!(
                stats["by_label"][label].as_u64(),
                Some(count),
                "{role} {file}"
            );
            let first = std::fs::read(&path).unwrap();
            split(role, &out);
            assert_eq!(
                std::fs::read(&path).unwrap(),
                first,
                "{role} {file} {label}"
            );
        }
    }
    let refused = trainer(&[
        "data", "split", "--config", &config, "--role", "private", "--out", "x",
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr)
        .contains("possible values: public, validation, test"));
}
