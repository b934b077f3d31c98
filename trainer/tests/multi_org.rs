//! The multi-organization flow through the binary: each organization votes with its ONE teacher
//! (`vote --teacher`), `aggregate` merges the vote files (same queries and classes, or an error
//! naming the files), the optional distributed noise (`vote --noise-share-sigma S
//! --organizations N`: the aggregator gets noisy shares only), and the privacy ledger.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bundle::{Dense, Mlp};
use trainer::ensemble::MemberReport;
use trainer::model_file::{teacher_file_name, ModelFile, ModelInfo, ModelRole, MODEL_FILE_VERSION};

fn trainer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pate-trainer"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> serde_json::Value {
    let out = trainer(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn failure(args: &[&str]) -> String {
    let out = trainer(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const DIM: usize = 8;

/// A one-layer teacher whose score is sigmoid(w·x + b): votes differ between teachers.
fn teacher(dir: &Path, shard: usize, shards: usize) -> PathBuf {
    let weight: Vec<f32> = (0..DIM)
        .map(|j| ((shard * 7 + j * 3) % 5) as f32 - 2.0)
        .collect();
    let info = ModelInfo {
        format_version: MODEL_FILE_VERSION,
        role: ModelRole::Teacher,
        shard: Some(shard),
        shards: Some(shards),
        data_hash: "test".into(),
        featurizer_hash: "test".into(),
        threshold: 0.5,
        training: MemberReport {
            train_samples: 10,
            holdout_samples: 2,
            train_positives: 5,
            pos_weight: 1.0,
            epochs: 1,
            best_epoch: 1,
            best_holdout_loss: Some(0.5),
            threshold: 0.5,
            threshold_fallback: false,
        },
        rng: privacy::RngProvenance::Seeded { seed: 1 },
        trainer_version: "test".into(),
        content_only_threshold: None,
        part_model_offsets: Default::default(),
    };
    let path = dir.join(teacher_file_name(shard));
    ModelFile {
        weights: Mlp {
            layers: vec![Dense {
                in_dim: DIM,
                out_dim: 1,
                weight,
                bias: vec![0.1],
            }],
        },
        info,
    }
    .save(&path)
    .unwrap();
    path
}

fn queries(path: &Path, rows: usize) {
    let data: Vec<f32> = (0..rows * DIM)
        .map(|i| ((i * 37 % 11) as f32 - 5.0) / 10.0)
        .collect();
    privacy::matrix::write_f32_matrix(
        path,
        &privacy::matrix::F32Matrix::new(rows, DIM, data).unwrap(),
    )
    .unwrap();
}

#[test]
fn organizations_vote_alone_and_the_aggregator_merges_or_sums_noisy_shares() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("teachers");
    std::fs::create_dir(&dir).unwrap();
    let n = 3;
    let teachers: Vec<PathBuf> = (0..n).map(|k| teacher(&dir, k, n)).collect();
    let q = tmp.path().join("queries.f32");
    queries(&q, 40);

    // Each organization's vote file: one teacher, counts 0/1 per query.
    let mut files = Vec::new();
    for (k, t) in teachers.iter().enumerate() {
        let out = tmp.path().join(format!("votes-{k}.csv"));
        let j = ok(&[
            "vote",
            "--teacher",
            s(t),
            "--queries",
            s(&q),
            "--out",
            s(&out),
            "--device",
            "cpu",
        ]);
        assert_eq!(j["teachers"], 1);
        files.push(out);
    }
    // Merged, they are the votes of the whole directory.
    let all = tmp.path().join("votes-all.csv");
    ok(&[
        "vote",
        "--teachers",
        s(&dir),
        "--queries",
        s(&q),
        "--out",
        s(&all),
        "--device",
        "cpu",
    ]);
    let whole = privacy::votes::read_vote_file(&all).unwrap();
    let mut summed = vec![vec![0u64; 2]; 40];
    for f in &files {
        let v = privacy::votes::read_vote_file(f).unwrap();
        for (acc, r) in summed.iter_mut().zip(v.rows()) {
            assert_eq!(r.iter().sum::<u64>(), 1);
            acc[0] += r[0];
            acc[1] += r[1];
        }
    }
    assert_eq!(
        summed,
        whole.rows().map(<[u64]>::to_vec).collect::<Vec<_>>()
    );
    assert!(
        summed.iter().any(|r| r[0] > 0 && r[1] > 0),
        "the teachers disagree somewhere"
    );

    let labels = tmp.path().join("labels.csv");
    let ledger = tmp.path().join("ledger.jsonl");
    let mut args = vec!["aggregate"];
    for f in &files {
        args.extend(["--votes", s(f)]);
    }
    args.extend([
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
        "--out",
        s(&labels),
        "--ledger",
        s(&ledger),
    ]);
    let j = ok(&args);
    assert_eq!(
        (j["queries"].as_u64(), j["answered"].as_u64()),
        (Some(40), Some(40))
    );
    assert_eq!(privacy::ledger::read(&ledger).unwrap().len(), 1);

    // A vote file on other queries is refused, naming both files.
    let short = tmp.path().join("short.f32");
    queries(&short, 39);
    let odd = tmp.path().join("votes-odd.csv");
    ok(&[
        "vote",
        "--teacher",
        s(&teachers[0]),
        "--queries",
        s(&short),
        "--out",
        s(&odd),
        "--device",
        "cpu",
    ]);
    let e = failure(&[
        "aggregate",
        "--votes",
        s(&files[0]),
        "--votes",
        s(&odd),
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
        "--out",
        s(&labels),
    ]);
    assert!(
        e.contains("votes-odd.csv") && e.contains("votes-0.csv") && e.contains("same queries"),
        "{e}"
    );

    // Distributed noise: every organization sends a noisy share; no file holds clean counts.
    let mut shares = Vec::new();
    for (k, t) in teachers.iter().enumerate() {
        let out = tmp.path().join(format!("share-{k}.csv"));
        let j = ok(&[
            "vote",
            "--teacher",
            s(t),
            "--queries",
            s(&q),
            "--out",
            s(&out),
            "--device",
            "cpu",
            "--noise-share-sigma",
            "40",
            "--organizations",
            "3",
        ]);
        assert_eq!(j["rng"]["rng"], "os");
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(privacy::shares::is_share(&text));
        let share = privacy::shares::parse_share(&text, &out).unwrap();
        let clean = privacy::votes::read_vote_file(&files[k]).unwrap();
        let same = share
            .rows
            .iter()
            .zip(clean.rows())
            .filter(|(a, b)| a[0] == b[0] as i64 && a[1] == b[1] as i64)
            .count();
        assert!(same < 5, "{same} of 40 queries sent as clean counts");
        shares.push(out);
    }
    let mut args = vec!["aggregate"];
    for f in &shares {
        args.extend(["--votes", s(f)]);
    }
    let mut gnmax = args.clone();
    gnmax.extend([
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
        "--out",
        s(&labels),
        "--ledger",
        s(&ledger),
    ]);
    let j = ok(&gnmax);
    assert_eq!(j["distributed_noise"], true);
    assert_eq!(privacy::ledger::read(&ledger).unwrap().len(), 2);
    let mut wrong = args.clone();
    wrong.extend([
        "--mechanism",
        "lnmax",
        "--gamma",
        "0.05",
        "--out",
        s(&labels),
    ]);
    assert!(failure(&wrong).contains("--mechanism gnmax --sigma 40"));
    // The shares carry σ on every query: GNMax with a head (a smaller σ on the first queries)
    // cannot be what they sum to.
    let mut head = args.clone();
    head.extend([
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
        "--head-queries",
        "5",
        "--head-sigma",
        "20",
        "--out",
        s(&labels),
    ]);
    let e = failure(&head);
    assert!(e.contains("without a head"), "{e}");
    let e = failure(&[
        "aggregate",
        "--votes",
        s(&shares[0]),
        "--votes",
        s(&shares[1]),
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
        "--out",
        s(&labels),
    ]);
    assert!(e.contains("organizations=3"), "{e}");
    let e = failure(&[
        "aggregate",
        "--votes",
        s(&shares[0]),
        "--votes",
        s(&files[1]),
        "--mechanism",
        "gnmax",
        "--sigma",
        "40",
        "--out",
        s(&labels),
    ]);
    assert!(e.contains("noisy shares"), "{e}");
}
