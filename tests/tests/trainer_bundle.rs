//! End-to-end with a trained bundle: `pate-trainer run --config configs/quick.yaml` on the
//! in-repo sample, then `pate-proxy` (block mode) with its bundle in front of Apache. The proxy's
//! verdict for every CSIC sample request equals `pate-trainer score` on the same bundle, and the
//! scores it records agree; with `format_checks: false` (globally, or on a route) its verdicts
//! equal `pate-trainer score --no-format-checks`.

use std::collections::HashMap;
use std::process::Command;

use e2e::{
    bundle_yaml_leak, http, json_lines, proxy_config, release_binary, repo_root, Apache, Proxy,
    ProxyPorts,
};

#[test]
fn proxy_verdicts_equal_pate_trainer_score_on_the_trained_bundle() {
    let trainer = release_binary("pate-trainer", "PATE_TRAINER_BIN");
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let out = Command::new(&trainer)
        .args(["run", "--config"])
        .arg(repo_root().join("configs/quick.yaml"))
        .arg("--out")
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pate-trainer run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundle = run.join("bundle");
    let threshold = f64::from(bundle::Bundle::load(&bundle).unwrap().manifest.threshold);

    let apache = Apache::start(&tmp.path().join("apache"));
    let audit = tmp.path().join("audit.jsonl");
    let config = proxy_config(
        &ProxyPorts::free(),
        apache.port,
        &bundle,
        "block",
        &audit,
        "",
    );
    let proxy = Proxy::start(tmp.path(), &config);

    // bundle.yaml of a real run holds only the privacy whitelist (no data-dependent ε, no exact
    // private counts, no teacher-ensemble metrics), and the dashboard's ε is its published ε.
    let yaml = std::fs::read_to_string(bundle.join("bundle.yaml")).unwrap();
    let leak = bundle_yaml_leak(&yaml);
    assert!(leak.is_none(), "bundle.yaml holds {leak:?}:\n{yaml}");
    let manifest = bundle::Bundle::load(&bundle).unwrap().manifest;
    let published = manifest
        .privacy
        .as_ref()
        .and_then(|p| p.published_epsilon)
        .expect("quick.yaml uses OS randomness: a published ε");
    let metrics = proxy.metrics();
    assert!(
        metrics.contains(&format!("epsilon=\"{published}\"")),
        "patewaf_model_info does not show ε = {published}: {metrics}"
    );

    // The site's format model: which requests go to a path the public pool does not hold.
    let featurizer = bundle::Bundle::load(&bundle).unwrap().featurizer;
    let unseen_path = featurizer
        .unseen_path_index()
        .expect("quick.yaml has the format checks");
    let mut unseen = 0usize;
    let mut expected_blocks = 0usize;
    let mut sent = 0usize;
    let mut skipped = 0usize;
    let mut at_threshold = 0usize;
    let mut trainer_scores: HashMap<String, f32> = HashMap::new();
    for file in [
        "csic_anomalousTrafficTest_A_sample.txt",
        "csic_normalTrafficTest_A_sample.txt",
    ] {
        let path = repo_root().join("data/sample").join(file);
        let records = datasets::load(datasets::Format::Csic, &path).unwrap();
        let lines = trainer_score(&trainer, &bundle, &path, &[]);
        assert_eq!(lines.len(), records.len());
        for (record, line) in records.iter().zip(&lines) {
            // Only what can go on an HTTP/1.1 request line verbatim.
            if !record.target.iter().all(|b| (0x21..=0x7e).contains(b)) {
                skipped += 1;
                continue;
            }
            let (r, blocked) = replay(&proxy, record);
            let verdict = line["verdict"].as_str().unwrap();
            let score = line["score"].as_f64().unwrap();
            // The threshold is the score of one validation request, and that request is among
            // those replayed here: the proxy's sparse scorer and `score`'s dense graph agree to
            // float rounding (checked below), which can put it on either side of the threshold.
            let on_the_threshold = (score - threshold).abs() <= 1e-6;
            assert!(
                on_the_threshold || blocked == (verdict == "block"),
                "{file} line {}: proxy answered {} but pate-trainer score says {verdict} ({})",
                record.line,
                r.status,
                line["score"]
            );
            at_threshold += usize::from(on_the_threshold);
            unseen += usize::from(
                featurizer
                    .transform(&record.parts())
                    .indices
                    .contains(&unseen_path),
            );
            if blocked {
                expected_blocks += 1;
                let id = r.header("x-request-id").unwrap().to_string();
                trainer_scores.insert(id, line["score"].as_f64().unwrap() as f32);
            }
            sent += 1;
        }
    }
    // Copies of the threshold's own request recur in the sample (same text, same score), so
    // several may sit on it; still, almost every verdict must be compared.
    assert!(
        at_threshold * 20 < sent,
        "{at_threshold} of {sent} requests scored at the threshold"
    );
    assert!(
        skipped * 20 < sent,
        "too many requests skipped: {skipped} of {}",
        sent + skipped
    );
    assert!(
        expected_blocks > 0 && expected_blocks < sent,
        "{expected_blocks} blocks of {sent}"
    );
    assert_eq!(
        proxy.metric("patewaf_requests_total{verdict=\"block\"}"),
        expected_blocks as f64
    );
    assert_eq!(proxy.metric("patewaf_score_count"), sent as f64);
    // Every scored request to a path the site's public pool does not hold is counted (the
    // operator's cue that the format model does not cover the site), and only those.
    assert!(unseen > 0 && unseen < sent, "{unseen} of {sent}");
    assert_eq!(
        proxy.metric("patewaf_unseen_path_requests_total"),
        unseen as f64
    );
    let records = json_lines(&audit);
    assert_eq!(records.len(), expected_blocks);
    for record in records {
        assert!(record.get("format_checks").is_none(), "{record}");
        let id = record["request_id"].as_str().unwrap();
        let proxy_score = record["score"].as_f64().unwrap() as f32;
        let trainer_score = trainer_scores[id];
        assert!(
            (proxy_score - trainer_score).abs() <= 1e-6,
            "{id}: proxy {proxy_score} vs trainer {trainer_score}"
        );
    }

    // `format_checks: false`, globally and as a route's override of the global `true`: a proxy
    // on the same bundle without the site's format checks gives `pate-trainer score
    // --no-format-checks`'s verdict for every request, and the checks weigh in this bundle
    // (quick.yaml has them): some verdicts differ with and without them. Those scores are judged
    // at the bundle's `content_only_threshold` (quick.yaml chooses none — it has no placements —
    // so the copy below gets the median of its scores without the checks): the proxy's audit
    // lines carry it, and the trainer's verdicts use it.
    let content_only = {
        let dir = tmp.path().join("bundle-content-only");
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&bundle).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
        let path = repo_root().join("data/sample/csic_anomalousTrafficTest_A_sample.txt");
        let mut without: Vec<f64> =
            trainer_score(&trainer, &bundle, &path, &["--no-format-checks"])
                .iter()
                .map(|l| l["score"].as_f64().unwrap())
                .collect();
        without.sort_by(f64::total_cmp);
        let median = without[without.len() / 2] as f32;
        assert!(
            (median - threshold as f32).abs() > 1e-3,
            "median {median} is the threshold"
        );
        let manifest = std::fs::read_to_string(dir.join("bundle.yaml")).unwrap();
        std::fs::write(
            dir.join("bundle.yaml"),
            format!("{manifest}content_only_threshold: {median}\n"),
        )
        .unwrap();
        (dir, f64::from(median))
    };
    let (content_bundle, content_threshold) = (&content_only.0, content_only.1);
    let scores: Vec<(
        Vec<datasets::Record>,
        Vec<serde_json::Value>,
        Vec<serde_json::Value>,
    )> = [
        "csic_anomalousTrafficTest_A_sample.txt",
        "csic_normalTrafficTest_A_sample.txt",
    ]
    .iter()
    .map(|file| {
        let path = repo_root().join("data/sample").join(file);
        (
            datasets::load(datasets::Format::Csic, &path).unwrap(),
            trainer_score(&trainer, content_bundle, &path, &[]),
            trainer_score(&trainer, content_bundle, &path, &["--no-format-checks"]),
        )
    })
    .collect();
    for (name, extra) in [
        ("global", "format_checks: false\n"),
        (
            "route",
            "format_checks: true\nroutes:\n  - prefix: \"/\"\n    format_checks: false\n",
        ),
    ] {
        let dir = tmp.path().join(format!("format-checks-off-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let off = Proxy::start(
            &dir,
            &proxy_config(
                &ProxyPorts::free(),
                apache.port,
                content_bundle,
                "block",
                &dir.join("audit.jsonl"),
                extra,
            ),
        );
        let (mut compared, mut flipped) = (0usize, 0usize);
        for (records, with, without) in &scores {
            for ((record, on), line) in records.iter().zip(with).zip(without) {
                if !record.target.iter().all(|b| (0x21..=0x7e).contains(b)) {
                    continue;
                }
                let score = line["score"].as_f64().unwrap();
                flipped += usize::from(on["verdict"] != line["verdict"]);
                let (r, blocked) = replay(&off, record);
                let verdict = line["verdict"].as_str().unwrap();
                // f32 as the trainer compares (the JSON holds the f32's shortest digits).
                assert_eq!(
                    verdict == "block",
                    score as f32 >= content_threshold as f32,
                    "the trainer judged {score} at another threshold than {content_threshold}"
                );
                assert!(
                    (score - content_threshold).abs() <= 1e-6 || blocked == (verdict == "block"),
                    "format checks off ({name}), line {}: proxy answered {} but pate-trainer \
                     score --no-format-checks says {verdict} ({score})",
                    record.line,
                    r.status
                );
                compared += 1;
            }
        }
        assert_eq!(compared, sent, "{name}");
        // Without the format checks nothing is counted as unseen.
        assert_eq!(off.metric("patewaf_unseen_path_requests_total"), 0.0);
        // Its audit lines say the request was scored without the checks.
        let audited = json_lines(&dir.join("audit.jsonl"));
        assert!(
            !audited.is_empty(),
            "{name}: nothing blocked without the checks"
        );
        assert!(
            audited.iter().all(|l| l["format_checks"] == false
                && (l["threshold"].as_f64().unwrap() - content_threshold).abs() <= 1e-6),
            "{name}: {audited:?}"
        );
        // Some verdicts differ without the checks, so a proxy that kept them would fail above.
        assert!(flipped > 0, "no verdict differs without the format checks");
    }
}

/// Sends a CSIC record through `proxy` (a form body with its content type); the response and
/// whether pate-waf blocked it.
fn replay(proxy: &Proxy, record: &datasets::Record) -> (e2e::Response, bool) {
    let target = String::from_utf8_lossy(&record.target).into_owned();
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let headers: &[(&str, &str)] = if record.body.is_some() { &form } else { &[] };
    let r = http(
        proxy.listen,
        &record.method,
        &target,
        headers,
        record.body.as_deref(),
    )
    .unwrap();
    let blocked = r.status == 403 && r.text().contains("blocked by pate-waf");
    (r, blocked)
}

/// `pate-trainer score --bundle BUNDLE --input PATH --format csic EXTRA...`: one JSON line per
/// request.
fn trainer_score(
    trainer: &std::path::Path,
    bundle: &std::path::Path,
    path: &std::path::Path,
    extra: &[&str],
) -> Vec<serde_json::Value> {
    let scored = Command::new(trainer)
        .args(["score", "--bundle"])
        .arg(bundle)
        .arg("--input")
        .arg(path)
        .args(["--format", "csic"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        scored.status.success(),
        "{}",
        String::from_utf8_lossy(&scored.stderr)
    );
    String::from_utf8_lossy(&scored.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
