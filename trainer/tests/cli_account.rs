//! `pate-trainer account | aggregate | privatize`: the CLI contract, run as a real process.
use std::path::Path;
use std::process::{Command, Output};

mod common;

fn trainer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
        .args(args)
        .output()
        .expect("run pate-trainer")
}

fn ok_json(args: &[&str]) -> serde_json::Value {
    let out = trainer(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.trim().lines().count(),
        1,
        "one JSON object on one line: {stdout}"
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn vote_text(n: usize) -> String {
    let mut s = String::from("# teacher votes: benign,malicious\n");
    for i in 0..n {
        let m = [250u64, 240, 200, 150, 130][i % 5];
        s.push_str(&format!("{},{}\n", m, 250 - m));
    }
    s
}

#[test]
fn account_lnmax_reproduces_the_published_value() {
    let dir = tempfile::tempdir().unwrap();
    let votes = write(dir.path(), "votes.csv", &vote_text(1000));
    let j = ok_json(&[
        "account",
        "--votes",
        &votes,
        "--mechanism",
        "lnmax",
        "--gamma",
        "0.05",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(j["mechanism"], "lnmax");
    assert_eq!(j["queries"], 1000);
    assert_eq!(j["delta"], 1e-5);
    // 5 + 2·√(5·ln 1e5) = 20.1743 at λ = √(ln(1e5)/5) = 1.5174.
    assert!(
        (j["data_independent_epsilon"].as_f64().unwrap() - 20.1743).abs() < 5e-5,
        "{j}"
    );
    assert!((j["data_independent_order"].as_f64().unwrap() - 1.5174).abs() < 5e-5);
    let dep = j["data_dependent_epsilon"].as_f64().unwrap();
    assert!(dep > 0.0 && dep <= 20.1743, "{j}");
    assert!(j["data_dependent_order"].as_f64().unwrap() > 0.0);
    assert!(j["orders_used"].as_str().unwrap().contains("continuous"));
    assert_eq!(
        j["data_dependent_label"],
        "data-dependent (not private to publish)"
    );

    // --orders: exactly those orders. λ = 1, 2, 3: ε = 21.512925, 20.756463, 23.837642.
    let j = ok_json(&[
        "account",
        "--votes",
        &votes,
        "--mechanism",
        "lnmax",
        "--gamma",
        "0.05",
        "--delta",
        "1e-5",
        "--orders",
        "1,2,3",
    ]);
    assert_eq!(j["orders"], serde_json::json!([1.0, 2.0, 3.0]));
    assert_eq!(j["data_independent_order"], 2.0);
    assert!((j["data_independent_epsilon"].as_f64().unwrap() - 20.756463).abs() < 1e-5);
    assert!(j.get("continuous").is_none());
}

#[test]
fn aggregate_then_account_confident_gnmax_with_answered() {
    let dir = tempfile::tempdir().unwrap();
    let votes = write(dir.path(), "votes.csv", &vote_text(300));
    let labels = dir.path().join("labels.csv");
    let labels_s = labels.to_str().unwrap();
    let args = [
        "aggregate",
        "--votes",
        &votes,
        "--mechanism",
        "confident-gnmax",
        "--threshold",
        "200",
        "--sigma1",
        "150",
        "--sigma2",
        "40",
        "--seed",
        "7",
        "--out",
        labels_s,
    ];
    let summary = ok_json(&args);
    assert_eq!(
        summary["rng"],
        serde_json::json!({"rng": "seeded", "seed": 7})
    );
    assert_eq!(summary["queries"], 300);
    let text = std::fs::read_to_string(&labels).unwrap();
    assert_eq!(text.lines().count(), 300);
    assert!(
        text.lines().all(|l| l == "-" || l == "0" || l == "1"),
        "{text}"
    );
    let answered = text.lines().filter(|l| *l != "-").count();
    assert_eq!(summary["answered"], answered);
    assert!(
        answered > 0 && answered < 300,
        "σ₁ = 150 around T = 200 answers some, not all: {answered}"
    );
    // The sidecar records the provenance too, and the same seed reproduces the labels.
    let sidecar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("labels.csv.json")).unwrap())
            .unwrap();
    assert_eq!(sidecar["rng"]["seed"], 7);
    ok_json(&args);
    assert_eq!(std::fs::read_to_string(&labels).unwrap(), text);

    let common = [
        "account",
        "--votes",
        &votes,
        "--mechanism",
        "confident-gnmax",
        "--threshold",
        "200",
        "--sigma1",
        "150",
        "--sigma2",
        "40",
        "--delta",
        "1e-5",
    ];
    let all = ok_json(&common);
    let mut with = common.to_vec();
    with.extend(["--answered", labels_s]);
    let j = ok_json(&with);
    assert_eq!(j["answered"], answered);
    assert_eq!(all["answered"], 300);
    // The answered list changes the data-dependent ε only: how many queries were answered
    // depends on the private votes, so the data-independent ε charges every query.
    assert_eq!(
        j["data_independent_epsilon"],
        all["data_independent_epsilon"]
    );
    assert!(
        j["data_dependent_epsilon"].as_f64().unwrap()
            <= j["data_independent_epsilon"].as_f64().unwrap()
    );

    // A cap on answers fixed in advance: `aggregate` stops answering at it, and the
    // data-independent ε charges the GNMax step that many times.
    let cap = (answered / 2).to_string();
    let mut capped_args = args.to_vec();
    capped_args.extend(["--max-answered", &cap]);
    let summary = ok_json(&capped_args);
    assert_eq!(summary["answered"], answered / 2);
    let capped_text = std::fs::read_to_string(&labels).unwrap();
    assert_eq!(
        capped_text.lines().filter(|l| *l != "-").count(),
        answered / 2
    );
    let mut capped_account = with.clone();
    capped_account.extend(["--max-answered", &cap]);
    let c = ok_json(&capped_account);
    assert!(
        c["data_independent_epsilon"].as_f64().unwrap()
            < all["data_independent_epsilon"].as_f64().unwrap()
    );
    // The uncapped run's answers exceed the cap: not this mechanism's output, an error.
    std::fs::write(&labels, &text).unwrap();
    let out = trainer(&capped_account);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("max_answered = "), "{e}");
    let gnmax40 = [
        "account",
        "--votes",
        &votes,
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
    ];
    let out = trainer(&[&gnmax40[..], &["--max-answered", "5"]].concat());
    assert!(!out.status.success(), "--max-answered is Confident-GNMax's");

    // GNMax with sanitization: three labelled values.
    let j = ok_json(
        &[
            &gnmax40[..],
            &["--orders", "2,2.5,3,10,20", "--sanitize", "--seed", "1"],
        ]
        .concat(),
    );
    let labels: Vec<&str> = j["epsilons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "data-independent",
            "data-dependent (not private to publish)",
            "sanitized"
        ]
    );
    assert_eq!(j["sanitized"]["rng"]["rng"], "seeded");
}

#[test]
fn account_errors_name_file_line_and_missing_flags() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.csv", "# c\n180,70\n180;70\n");
    let out = trainer(&[
        "account",
        "--votes",
        &bad,
        "--mechanism",
        "lnmax",
        "--gamma",
        "0.05",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.csv:3:"), "{err}");
    let good = write(dir.path(), "good.csv", "180,70\n");
    let out = trainer(&["account", "--votes", &good, "--mechanism", "gnmax"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sigma is required"));
    let out = trainer(&[
        "account",
        "--votes",
        &good,
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
        "--orders",
        "1",
    ]);
    assert!(!out.status.success(), "α = 1 is not a valid RDP order");
    assert!(out.stdout.is_empty());
}

#[test]
fn privatize_adds_laplace_noise_and_reports_local_epsilon() {
    use privacy::matrix::{read_f32_matrix, write_f32_matrix, F32Matrix};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("features.bin");
    let output = dir.path().join("noisy.bin");
    let rows = 500;
    let cols = 20;
    let data: Vec<f32> = (0..rows * cols)
        .map(|i| if i % cols < 4 { 0.25 } else { 0.0 })
        .collect();
    write_f32_matrix(&input, &F32Matrix::new(rows, cols, data.clone()).unwrap()).unwrap();
    let j = ok_json(&[
        "privatize",
        "--rho",
        "2",
        "--in",
        input.to_str().unwrap(),
        "--out",
        output.to_str().unwrap(),
        "--seed",
        "3",
    ]);
    assert_eq!(j["local_epsilon"], 4.0);
    assert_eq!(j["rng"], serde_json::json!({"rng": "seeded", "seed": 3}));
    let noisy = read_f32_matrix(&output).unwrap();
    assert_eq!((noisy.rows, noisy.cols), (rows, cols));
    // Lap(1/ρ), ρ = 2: E|noise| = 0.5 (10 000 values, SE 0.005).
    let mad: f64 = noisy
        .values
        .iter()
        .zip(&data)
        .map(|(a, b)| (a - b).abs() as f64)
        .sum::<f64>()
        / data.len() as f64;
    assert!((mad - 0.5).abs() < 0.03, "{mad}");
    // A row that is not l1-normalized is clipped to norm 1 by the library (the 2ρ bound holds for
    // any input): with almost no noise (ρ = 1e6), [1, 1] comes out as ≈ [0.5, 0.5].
    write_f32_matrix(&input, &F32Matrix::new(1, 2, vec![1.0, 1.0]).unwrap()).unwrap();
    let clipped = dir.path().join("x.bin");
    ok_json(&[
        "privatize",
        "--rho",
        "1000000",
        "--in",
        input.to_str().unwrap(),
        "--out",
        clipped.to_str().unwrap(),
    ]);
    let x = read_f32_matrix(&clipped).unwrap();
    assert!(
        x.values.iter().all(|v| (v - 0.5).abs() < 1e-3),
        "{:?}",
        x.values
    );
}

#[test]
fn account_group_is_the_rdp_bound_for_k_records() {
    let dir = tempfile::tempdir().unwrap();
    let from = write(
        dir.path(),
        "report.json",
        r#"{"mechanism_parameters": {"mechanism": "model_average", "sigma": 4.1, "clip_norm": 75},
            "malicious_vote_share": 0.5}"#,
    );
    // Model averaging (no vote file): one record, one replaced (two records), ten records.
    let mut epsilons = Vec::new();
    for (k, expected) in [(1u32, 0.985), (2, 2.107), (10, 13.70)] {
        let j = ok_json(&[
            "account",
            "--mechanism-from",
            &from,
            "--group",
            &k.to_string(),
        ]);
        assert_eq!(j["group_records"], k);
        let eps = j["data_independent_epsilon"].as_f64().unwrap();
        let k2 = f64::from(k * k);
        let independent = common::independent_gaussian_epsilon(k2 / (2.0 * 4.1 * 4.1), 1.0, 1e-5);
        assert!(
            (independent - expected).abs() < 2e-3,
            "k {k}: {independent}"
        );
        assert!(
            eps >= independent - 1e-9 && eps - independent < 0.005 * independent,
            "k {k}: accountant {eps}, independent {independent} (the grid's orders within 0.5 %)"
        );
        epsilons.push(eps);
    }
    // Not k·ε: ten records cost more than ten times one, a replacement more than twice.
    assert!(epsilons[2] > 10.0 * epsilons[0] && epsilons[1] > 2.0 * epsilons[0]);
    // GNMax on 1,000 queries at σ 40, two records: RDP 4α/σ² a query.
    let votes = write(dir.path(), "votes.csv", &vote_text(1000));
    let j = ok_json(&[
        "account",
        "--votes",
        &votes,
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
        "--group",
        "2",
    ]);
    let eps = j["data_independent_epsilon"].as_f64().unwrap();
    let independent = common::independent_gaussian_epsilon(4.0 / (40.0 * 40.0), 1000.0, 1e-5);
    assert!(
        eps >= independent - 1e-9 && eps - independent < 0.005 * independent,
        "accountant {eps}, independent {independent}"
    );
    // A vote mechanism without a vote file is a clear error.
    let out = trainer(&["account", "--mechanism", "gnmax", "--sigma", "40"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--votes"));
}
