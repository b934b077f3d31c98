//! The stage subcommands compute what `run` computes: `aggregate` and `account` on a run's
//! `votes.csv`, with the run's mechanism, vote share and seed, give the run's noisy labels and ε;
//! `account --mechanism-from` reads the mechanism (GNMax's head included) and share from the
//! run's report or aggregate's summary.
mod common;

use std::path::Path;
use std::process::Command;

fn trainer(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
        .args(args)
        .output()
        .expect("run pate-trainer");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn config(dir: &Path) -> String {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/sample");
    let text = format!(
        "seed: 5\nthreads: 1\ndevice: cpu\n\
split:\n\
\x20 simulate_from:\n\
\x20 - {{path: {s}/csic_normalTrafficTraining_sample.txt, format: csic, label: benign}}\n\
\x20 - {{path: {s}/csic_normalTrafficTest_A_sample.txt, format: csic, label: benign}}\n\
\x20 - {{path: {s}/csic_anomalousTrafficTest_A_sample.txt, format: csic, label: malicious}}\n\
\x20 private: 0.55\n\x20 public: 0.2\n\x20 validation: 0.1\n\x20 test: 0.15\n\
featurizer: {{config: {{top_k: 200}}}}\n\
teachers:\n  count: 10\n  training: {{hidden: [16], max_epochs: 5, batch_size: 64, learning_rate: 0.01, patience: 2, class_balance: pos_weight}}\n\
student:\n  queries: 80\n  validation_max: 100\n  training: {{hidden: [16], max_epochs: 10, batch_size: 32, learning_rate: 0.01, patience: 3, class_balance: pos_weight}}\n\
privacy: {{mechanism: lnmax, gamma: 0.3, delta: 1.0e-5}}\n\
aggregation: {{malicious_vote_share: 0.35}}\n",
        s = sample.display()
    );
    let path = dir.join("run.yaml");
    std::fs::write(&path, common::legacy(&text)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn aggregate_and_account_on_a_runs_votes_give_the_runs_labels_and_epsilon() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let run_s = run.to_str().unwrap();
    trainer(&["run", "--config", &config(tmp.path()), "--out", run_s]);
    let votes = run.join("votes.csv");
    let votes_s = votes.to_str().unwrap();
    let mechanism = ["--mechanism", "lnmax", "--gamma", "0.3"];

    // The run's noise is the seeded generator's first draws (no ρ: nothing privatized before).
    let labels = tmp.path().join("labels");
    let mut args = vec!["aggregate", "--votes", votes_s];
    args.extend(mechanism);
    args.extend(["--seed", "5", "--malicious-vote-share", "0.35", "--out"]);
    args.push(labels.to_str().unwrap());
    trainer(&args);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&labels), read(&run.join("aggregate.labels")));

    let mut args = vec!["account", "--votes", votes_s, "--delta", "1e-5"];
    args.extend(mechanism);
    args.extend(["--malicious-vote-share", "0.35"]);
    let account: serde_json::Value = serde_json::from_str(trainer(&args).trim()).unwrap();
    let privacy: serde_json::Value =
        serde_json::from_str(&read(&run.join("privacy.json"))).unwrap();
    for key in ["data_independent_epsilon", "data_dependent_epsilon"] {
        assert_eq!(account[key], privacy[key], "{key}");
    }
    // `--mechanism-from` the run's report, or from aggregate's summary beside its labels: the
    // mechanism and the share come from what ran, and the ε is the run's.
    for from in [run.join("report.json"), labels.with_extension("json")] {
        let from = from.to_str().unwrap().to_string();
        let args = ["account", "--votes", votes_s, "--mechanism-from", &from];
        let again: serde_json::Value = serde_json::from_str(trainer(&args).trim()).unwrap();
        for key in ["data_independent_epsilon", "data_dependent_epsilon"] {
            assert_eq!(again[key], privacy[key], "{key} from {from}");
        }
    }
    // GNMax with a head: the summary carries the head, so the re-accounting charges its first
    // queries at the head's σ (the flags without the head give a smaller ε).
    let head_labels = tmp.path().join("head-labels");
    let gnmax = ["--mechanism", "gnmax", "--sigma", "3"];
    let head = ["--head-queries", "20", "--head-sigma", "1.5"];
    let mut args = vec!["aggregate", "--votes", votes_s];
    args.extend(gnmax);
    args.extend(head);
    args.extend(["--malicious-vote-share", "0.35", "--out"]);
    args.push(head_labels.to_str().unwrap());
    trainer(&args);
    let summary = tmp.path().join("head-labels.json");
    let from: serde_json::Value = serde_json::from_str(
        trainer(&[
            "account",
            "--votes",
            votes_s,
            "--mechanism-from",
            summary.to_str().unwrap(),
        ])
        .trim(),
    )
    .unwrap();
    let account_with = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "account",
            "--votes",
            votes_s,
            "--malicious-vote-share",
            "0.35",
        ];
        args.extend(gnmax);
        args.extend(extra);
        serde_json::from_str(trainer(&args).trim()).unwrap()
    };
    let with_head = account_with(&head);
    let without_head = account_with(&[]);
    let eps = |v: &serde_json::Value| v["data_independent_epsilon"].as_f64().unwrap();
    assert_eq!(eps(&from), eps(&with_head));
    assert!(eps(&from) > eps(&without_head), "{from} vs {without_head}");
    // Without the share, `account` charges the unshifted counts: another data-dependent ε
    // (the shift moves every query's margin).
    let mut args = vec!["account", "--votes", votes_s, "--delta", "1e-5"];
    args.extend(mechanism);
    let plain: serde_json::Value = serde_json::from_str(trainer(&args).trim()).unwrap();
    assert_ne!(
        plain["data_dependent_epsilon"],
        privacy["data_dependent_epsilon"]
    );
}

/// `run --seed` overrides the config's seed (tests and experiments): the report and the run's
/// config record it, and the bundle says it is not private.
#[test]
fn run_seed_flag_overrides_the_config_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let config = config(tmp.path());
    trainer(&[
        "run",
        "--config",
        &config,
        "--seed",
        "9",
        "--out",
        run.to_str().unwrap(),
    ]);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["rng"]["seed"], 9, "{}", report["rng"]);
    let written = std::fs::read_to_string(run.join("config.yaml")).unwrap();
    assert!(written.contains("seed: 9"), "{written}");
    let bundle = std::fs::read_to_string(run.join("bundle/bundle.yaml")).unwrap();
    assert!(bundle.contains("not private"), "{bundle}");
}
