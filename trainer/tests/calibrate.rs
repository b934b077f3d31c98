//! `pate-trainer calibrate` end to end: a real bundle (a featurizer fitted on the in-repo CSIC
//! sample, a network and a part model in ONNX), an Apache access log made of the sample's normal
//! requests, the real binary and real ONNX Runtime; the new bundle's thresholds checked with
//! `pate-trainer score`, the proxy's scoring.
use std::path::{Path, PathBuf};
use std::process::Output;

use bundle::{Bundle, BundleContents, Dense, Mlp};
use featurizer::{Featurizer, FeaturizerConfig};

mod common;
use common::{repo, trainer};

fn calibrate(args: &[&str]) -> Output {
    trainer()
        .arg("calibrate")
        .args(args)
        .output()
        .expect("run pate-trainer")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A network of `widths` with weights from a fixed SplitMix64 stream, scores spread over (0, 1).
fn network(widths: &[usize], seed: u64) -> Mlp {
    let mut state = seed;
    let mut next = move |a: f32| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * a
    };
    let layers = widths
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            let bound = if i == 0 {
                8.0
            } else {
                2.5 / (w[0] as f32).sqrt()
            };
            Dense {
                in_dim: w[0],
                out_dim: w[1],
                weight: (0..w[0] * w[1]).map(|_| next(bound)).collect(),
                bias: (0..w[1]).map(|_| next(0.5)).collect(),
            }
        })
        .collect();
    Mlp { layers }
}

fn sample(name: &str) -> PathBuf {
    repo().join("data/sample").join(name)
}

/// A bundle in `dir` with a featurizer fitted on the CSIC normal training sample, a network, a
/// part model and both thresholds at 0.5.
fn write_bundle(dir: &Path) -> Bundle {
    let records = datasets::load(
        datasets::Format::Csic,
        &sample("csic_normalTrafficTraining_sample.txt"),
    )
    .unwrap();
    let featurizer = Featurizer::fit(
        FeaturizerConfig::default(),
        records.iter().map(|r| r.parts()),
    )
    .unwrap();
    let mlp = network(&[featurizer.dim(), 32, 8, 1], 21);
    let part = network(&[featurizer.dim(), 16, 1], 22);
    let contents = BundleContents {
        mlp: &mlp,
        featurizer: &featurizer,
        threshold: 0.5,
        content_only_threshold: Some(0.5),
        part_model: Some(&part),
        part_model_offsets: Default::default(),
        privacy: None,
        metrics: serde_json::Value::Null,
        model_version: None,
        format_checks: None,
    };
    bundle::write_bundle(dir, &contents).unwrap();
    Bundle::load(dir).unwrap()
}

/// A request target as Apache's `%r` logs it: `"` and `\` escaped, other bytes outside printable
/// ASCII as `\xhh`.
fn escaped(target: &[u8]) -> String {
    let mut s = String::new();
    for &b in target {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

/// A combined-format access log of the first `requests` GET requests of the CSIC normal samples
/// (an access log holds no body, so a POST would be its bare path), sent by `clients` clients in
/// turn.
fn access_log(dir: &Path, name: &str, requests: usize, clients: usize) -> PathBuf {
    let mut records = Vec::new();
    for file in [
        "csic_normalTrafficTest_A_sample.txt",
        "csic_normalTrafficTraining_sample.txt",
    ] {
        records.extend(datasets::load(datasets::Format::Csic, &sample(file)).unwrap());
    }
    records.retain(|r| r.body.is_none());
    assert!(records.len() >= requests, "{} GET requests", records.len());
    let mut text = String::new();
    for (k, r) in records.iter().take(requests).enumerate() {
        text += &format!(
            "192.0.2.{} - - [10/Oct/2026:13:55:{:02} +0000] \"{} {} HTTP/1.1\" 200 {} \"-\" \
             \"Mozilla/5.0 (X11; Linux x86_64)\"\n",
            k % clients,
            k % 60,
            r.method,
            escaped(&r.target),
            100 + k
        );
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Every file of a directory with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Requests of `log` that `pate-trainer score` (pate-proxy's scoring) blocks with `bundle`.
fn blocked(bundle: &Path, log: &Path, content_only: bool) -> (usize, usize) {
    let mut cmd = trainer();
    cmd.args(["score", "--bundle"])
        .arg(bundle)
        .arg("--input")
        .arg(log)
        .args(["--format", "apache"]);
    if content_only {
        cmd.arg("--no-format-checks");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let blocked = lines.iter().filter(|l| l["verdict"] == "block").count();
    (blocked, lines.len())
}

fn ok_json(output: Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "calibrate failed: {}",
        stderr(&output)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_calibrated_bundle_flags_at_most_the_target_share_of_the_traffic() {
    let tmp = tempfile::tempdir().unwrap();
    let old_dir = tmp.path().join("bundle");
    let old = write_bundle(&old_dir);
    let log = access_log(tmp.path(), "access.log", 1200, 40);
    let before = snapshot(&old_dir);
    let new_dir = tmp.path().join("calibrated");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let summary = ok_json(calibrate(&[
        "--bundle",
        &s(&old_dir),
        "--traffic",
        &s(&log),
        "--target-share",
        "0.1",
        "--out",
        &s(&new_dir),
    ]));

    // --out: the old bundle is untouched.
    assert_eq!(snapshot(&old_dir), before);
    let new = Bundle::load(&new_dir).unwrap();
    let (m, o) = (&new.manifest, &old.manifest);
    assert_eq!(
        summary["threshold"]["after"].as_f64().unwrap() as f32,
        m.threshold
    );
    assert_eq!(summary["threshold"]["before"].as_f64().unwrap() as f32, 0.5);
    assert_ne!(m.model_version, o.model_version);
    assert!(m
        .model_version
        .starts_with(&format!("{}+cal.", o.model_version)));
    assert_eq!(summary["model_version"], m.model_version.as_str());
    assert_eq!(
        m.files, o.files,
        "model and featurizer copied byte for byte"
    );
    assert_eq!(new.model_onnx, old.model_onnx);
    let source = m.threshold_source.as_ref().unwrap();
    assert_eq!(
        (source.traffic_requests, source.distinct_clients),
        (1200, 40)
    );
    assert_eq!((source.target_share, source.confidence), (0.1, 0.95));

    // The proxy's scoring flags at most 10 % of the traffic at each new threshold.
    let (flagged, n) = blocked(&new_dir, &log, false);
    assert_eq!(n, 1200);
    assert_eq!(flagged, source.flagged_requests);
    assert!(flagged as f64 <= 0.1 * n as f64, "{flagged} of {n}");
    // The lowest such threshold: it flags some of the traffic, not none.
    assert!(flagged > 0, "{flagged} of {n}");
    let (flagged_before, _) = blocked(&old_dir, &log, false);
    assert_eq!(summary["threshold"]["flagged_before"], flagged_before);
    let content = m.content_only_threshold.unwrap();
    assert_ne!(content, 0.5);
    let (content_flagged, _) = blocked(&new_dir, &log, true);
    assert_eq!(Some(content_flagged), source.content_only_flagged_requests);
    assert!(content_flagged as f64 <= 0.1 * n as f64 && content_flagged > 0);

    // Counts only: no request of the traffic reaches bundle.yaml.
    let yaml = std::fs::read_to_string(new_dir.join("bundle.yaml")).unwrap();
    assert!(
        !yaml.contains("tienda1") && !yaml.contains("192.0.2."),
        "{yaml}"
    );

    // Default --out: the bundle itself, replaced (through a symlink: its target, the link kept);
    // the version suffix is replaced, not stacked.
    let current = tmp.path().join("current");
    std::os::unix::fs::symlink("calibrated", &current).unwrap();
    let in_place = |share: &str, confidence: &str| {
        let summary = ok_json(calibrate(&[
            "--bundle",
            &s(&current),
            "--traffic",
            &s(&log),
            "--target-share",
            share,
            "--confidence",
            confidence,
        ]));
        assert!(current.symlink_metadata().unwrap().file_type().is_symlink());
        let bundle = Bundle::load(&new_dir).unwrap();
        assert_eq!(
            summary["model_version"],
            bundle.manifest.model_version.as_str()
        );
        let version = &bundle.manifest.model_version;
        assert!(version.starts_with(&format!("{}+cal.", o.model_version)));
        assert_eq!(version.matches('+').count(), 1, "{version}");
        let (flagged, _) = blocked(&new_dir, &log, false);
        assert!(flagged as f64 <= share.parse::<f64>().unwrap() * 1200.0);
        (bundle.manifest, flagged)
    };
    let (strict, strict_flagged) = in_place("0.05", "0.95");
    assert!(strict.threshold >= m.threshold && strict.model_version != m.model_version);
    // The confidence costs: at 0.5 the same share flags at least as much, here more (a page of
    // 53 tied requests, 4.4 % of the traffic, fits 5 % on the traffic but not at 0.95).
    let (loose, loose_flagged) = in_place("0.05", "0.5");
    assert!(loose.threshold < strict.threshold, "{loose:?} {strict:?}");
    assert!(loose_flagged > strict_flagged);
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with('.')),
        "left behind: {names:?}"
    );
}

/// Asserts a failure with a message (no panic) and returns stderr.
fn fails(output: Output, expected: &[&str]) -> String {
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for e in expected {
        assert!(err.contains(e), "expected {e:?} in: {err}");
    }
    err
}

#[test]
fn traffic_that_cannot_calibrate_is_refused_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_bundle(&dir);
    let before = snapshot(&dir);
    let bundle = dir.to_str().unwrap();
    let run = |log: &Path, extra: &[&str]| {
        let mut args = vec!["--bundle", bundle, "--traffic", log.to_str().unwrap()];
        args.extend_from_slice(extra);
        calibrate(&args)
    };

    // No request in the log: the file and its first line.
    let dashes = tmp.path().join("dashes.log");
    std::fs::write(
        &dashes,
        "192.0.2.1 - - [10/Oct/2026:13:55:36 +0000] \"-\" 408 0 \"-\" \"-\"\n".repeat(3),
    )
    .unwrap();
    fails(
        run(&dashes, &[]),
        &["dashes.log", "no request to read", "line 1 is"],
    );
    let empty = tmp.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    fails(run(&empty, &[]), &["empty.log", "the file is empty"]);
    let json = tmp.path().join("capture.jsonl");
    std::fs::write(&json, "{\"target\": \"/\"}\n").unwrap();
    fails(
        run(&json, &[]),
        &["capture.jsonl:1: expected an access-log line"],
    );

    // One client sends most of it.
    let monitor = access_log(tmp.path(), "monitor.log", 400, 1);
    fails(
        run(&monitor, &[]),
        &[
            "100 % of the 400 requests come from one client",
            "several days",
        ],
    );

    // Too few requests for the share at the confidence: 299 for 1 % at 0.95.
    let short = access_log(tmp.path(), "short.log", 120, 40);
    fails(
        run(&short, &[]),
        &[
            "short.log: 120 requests, but at least 299 are needed",
            "confidence 0.95",
        ],
    );
    // The same traffic holds 5 % (59 needed).
    assert!(run(
        &short,
        &[
            "--target-share",
            "0.05",
            "--out",
            tmp.path().join("out").to_str().unwrap()
        ]
    )
    .status
    .success());

    // Flags out of range.
    fails(
        run(&short, &["--confidence", "1.5"]),
        &["--confidence 1.5 is not in (0, 1)"],
    );
    fails(
        run(&short, &["--target-share", "0"]),
        &["--target-share 0 is not in (0, 1)"],
    );
    assert_eq!(
        snapshot(&dir),
        before,
        "a refused calibration leaves the bundle as it was"
    );
}

/// The lines of `log` in the order `pate-trainer score` (pate-proxy's scoring) ranks them,
/// highest score first.
fn ranked_lines(bundle: &Path, log: &Path) -> Vec<String> {
    let out = trainer()
        .args(["score", "--bundle"])
        .arg(bundle)
        .arg("--input")
        .arg(log)
        .args(["--format", "apache"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut scored: Vec<(f64, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let line = v["line"].as_u64().unwrap() as usize;
            (v["score"].as_f64().unwrap(), lines[line - 1].to_string())
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(_, l)| l).collect()
}

#[test]
fn reviewed_attacks_leave_the_traffic_the_share_is_held_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    write_bundle(&dir);
    let log = access_log(tmp.path(), "access.log", 1200, 40);
    let ranked = ranked_lines(&dir, &log);
    // The 30 highest-scoring requests, as an operator would copy them from what is flagged.
    let reviewed: Vec<&String> = ranked.iter().take(30).collect();
    let attacks = tmp.path().join("attacks.log");
    std::fs::write(
        &attacks,
        reviewed
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .unwrap();
    let request = |l: &str| l.split('"').nth(1).unwrap().to_string();
    let reviewed_requests: std::collections::HashSet<String> =
        reviewed.iter().map(|l| request(l)).collect();
    let rest: String = ranked
        .iter()
        .filter(|l| !reviewed_requests.contains(&request(l)))
        .map(|l| format!("{l}\n"))
        .collect();
    let without = tmp.path().join("without.log");
    std::fs::write(&without, &rest).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let cal = |log: &Path, extra: &[&str], out: &str| {
        let mut args = vec![
            "--bundle".to_string(),
            s(&dir),
            "--traffic".into(),
            s(log),
            "--target-share".into(),
            "0.05".into(),
            "--out".into(),
            s(&tmp.path().join(out)),
        ];
        args.extend(extra.iter().map(|e| e.to_string()));
        ok_json(calibrate(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        ))
    };
    let all = cal(&log, &[], "all");
    let reviewed_out = cal(&log, &["--attacks", &s(&attacks)], "reviewed");
    let removed = cal(&without, &[], "removed");
    let left_out = reviewed_out["reviewed_attacks_left_out"].as_u64().unwrap() as usize;
    assert_eq!(left_out, 1200 - rest.lines().count());
    assert!(
        left_out >= 30,
        "every copy of a reviewed request leaves: {left_out}"
    );
    assert_eq!(reviewed_out["traffic_requests"], 1200 - left_out);
    // The same threshold as on traffic without them; lower than with them counted.
    assert_eq!(
        reviewed_out["threshold"]["after"],
        removed["threshold"]["after"]
    );
    let after = |v: &serde_json::Value| v["threshold"]["after"].as_f64().unwrap();
    assert!(after(&reviewed_out) < after(&all), "{reviewed_out} {all}");
    assert_eq!(all["reviewed_attacks_left_out"], 0);

    // More than 200 distinct requests is a labelled data set, not a review.
    let many = tmp.path().join("many.log");
    let line = |k: usize| {
        format!(
            "192.0.2.9 - - [10/Oct/2026:13:55:36 +0000] \"GET /x?id={k} HTTP/1.1\" 200 1 \"-\" \"-\"\n"
        )
    };
    std::fs::write(&many, (0..201).map(line).collect::<String>()).unwrap();
    fails(
        calibrate(&[
            "--bundle",
            &s(&dir),
            "--traffic",
            &s(&log),
            "--attacks",
            &s(&many),
        ]),
        &["--attacks", "more than 200 distinct requests"],
    );
}
