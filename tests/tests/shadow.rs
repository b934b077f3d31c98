//! End-to-end, the shadow bundle (issue 15): Debian's Apache on a loopback port, the release
//! `pate-proxy` with an active fixture bundle and a second one in `shadow_bundle`, raw HTTP/1.1
//! requests. The shadow scores every request and decides nothing; its counters equal
//! `pate-trainer score --bundle SHADOW` on the same requests; a bad shadow bundle is refused
//! while the active model keeps serving; `POST /promote` swaps it in without losing a request.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use e2e::{
    eventually, http, json_lines, proxy_config, release_binary, repo_root, Apache, Proxy,
    ProxyPorts,
};
use test_support::write_fixture_bundle;

mod common;
use common::verdict;

const NORMAL: &str =
    "/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&precio=100&cantidad=55&B1=A%F1adir+al+carrito";
/// SQL injection: malicious for the full fixture model, not for the XSS-only shadow below.
const SQLI: &str = "/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&precio=85&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25&B1=A%F1adir+al+carrito";
/// The tokens the shadow model of the first test weighs: XSS and shell markers only, so it
/// disagrees with the active model on SQL injection (and, being a different model, elsewhere).
const XSS_TOKENS: &[&str] = &[
    "<", ">", "script", "alert", "(", ")", "passwd", "etc", "cat",
];

/// Apache, an active bundle (`v1`, every fixture attack token) and a shadow bundle written by
/// `shadow` into `dir/shadow`, with the proxy in `mode`.
struct ShadowStack {
    proxy: Proxy,
    apache: Apache,
    active: std::path::PathBuf,
    shadow: std::path::PathBuf,
    audit: std::path::PathBuf,
    tmp: tempfile::TempDir,
}

fn shadow_stack(mode: &str, shadow: impl FnOnce(&Path)) -> ShadowStack {
    let tmp = tempfile::tempdir().unwrap();
    let apache = Apache::start(&tmp.path().join("apache"));
    let active = tmp.path().join("bundle");
    write_fixture_bundle(&active, None, 0.5, "v1").unwrap();
    let shadow_dir = tmp.path().join("shadow");
    shadow(&shadow_dir);
    let audit = tmp.path().join("audit.jsonl");
    let extra = format!("shadow_bundle: \"{}\"\n", shadow_dir.display());
    let config = proxy_config(
        &ProxyPorts::free(),
        apache.port,
        &active,
        mode,
        &audit,
        &extra,
    );
    let proxy = Proxy::start(tmp.path(), &config);
    ShadowStack {
        proxy,
        apache,
        active,
        shadow: shadow_dir,
        audit,
        tmp,
    }
}

fn post(proxy: &Proxy, path: &str) -> (u16, serde_json::Value) {
    let r = http(proxy.admin, "POST", path, &[], None).unwrap();
    let body = serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {}", r.text()));
    (r.status, body)
}

fn ready(proxy: &Proxy) -> serde_json::Value {
    let r = http(proxy.admin, "GET", "/ready", &[], None).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

fn shadow_pair(active: &str, shadow: &str) -> String {
    format!(
        "patewaf_shadow_requests_total{{active_verdict=\"{active}\",shadow_verdict=\"{shadow}\"}}"
    )
}

/// `pate-trainer score --bundle BUNDLE` on a CSIC file: one JSON object per request.
fn trainer_score(bundle: &Path, input: &Path) -> Vec<serde_json::Value> {
    let out = Command::new(release_binary("pate-trainer", "PATE_TRAINER_BIN"))
        .args(["score", "--bundle"])
        .arg(bundle)
        .arg("--input")
        .arg(input)
        .args(["--format", "csic"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pate-trainer score: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_shadow_decides_nothing_and_its_counters_equal_pate_trainer_score() {
    let s = shadow_stack("block", |dir| {
        write_fixture_bundle(dir, Some(XSS_TOKENS), 0.5, "s1").unwrap();
    });
    let r = ready(&s.proxy);
    assert_eq!(r["model_version"], "v1");
    assert_eq!(r["shadow_version"], "s1");
    assert_eq!(
        s.proxy.metric("patewaf_shadow_model_info{version=\"s1\"}"),
        1.0
    );
    assert_eq!(
        s.proxy.metric("patewaf_shadow_loads_total{result=\"ok\"}"),
        1.0
    );

    // Replay the CSIC sample; the expected verdicts of both models come from pate-trainer.
    let mut expected: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut sent = 0usize;
    let mut disagreements = Vec::new();
    for file in [
        "csic_anomalousTrafficTest_A_sample.txt",
        "csic_normalTrafficTest_A_sample.txt",
    ] {
        let path = repo_root().join("data/sample").join(file);
        let records = datasets::load(datasets::Format::Csic, &path).unwrap();
        let active = trainer_score(&s.active, &path);
        let shadow = trainer_score(&s.shadow, &path);
        assert_eq!(active.len(), records.len());
        assert_eq!(shadow.len(), records.len());
        for ((record, a), sh) in records.iter().zip(&active).zip(&shadow) {
            // Only what can go on an HTTP/1.1 request line verbatim.
            if !record.target.iter().all(|b| (0x21..=0x7e).contains(b)) {
                continue;
            }
            let target = String::from_utf8_lossy(&record.target).into_owned();
            let form = [("Content-Type", "application/x-www-form-urlencoded")];
            let headers: &[(&str, &str)] = if record.body.is_some() { &form } else { &[] };
            let r = http(
                s.proxy.listen,
                &record.method,
                &target,
                headers,
                record.body.as_deref(),
            )
            .unwrap();
            let active_verdict = a["verdict"].as_str().unwrap().to_string();
            let shadow_verdict = sh["verdict"].as_str().unwrap().to_string();
            // Verdicts come from the active bundle only.
            let blocked = r.status == 403 && r.text().contains("blocked by pate-waf");
            assert_eq!(
                blocked,
                active_verdict == "block",
                "{file} line {}: proxy answered {}, active bundle says {active_verdict}, shadow {shadow_verdict}",
                record.line,
                r.status
            );
            if active_verdict != shadow_verdict {
                disagreements.push((
                    r.header("x-request-id").unwrap().to_string(),
                    active_verdict.clone(),
                    shadow_verdict.clone(),
                    sh["score"].as_f64().unwrap(),
                ));
            }
            *expected
                .entry((active_verdict, shadow_verdict))
                .or_default() += 1.0;
            sent += 1;
        }
    }
    assert!(sent > 100, "{sent} requests replayed");
    // The two models must disagree both ways for the test to say something.
    for pair in [("block", "allow"), ("block", "block"), ("allow", "allow")] {
        assert!(
            expected.contains_key(&(pair.0.to_string(), pair.1.to_string())),
            "no request with active {} and shadow {}: {expected:?}",
            pair.0,
            pair.1
        );
    }

    let metrics = s.proxy.metrics();
    for active in ["allow", "block", "flag", "error"] {
        for shadow in ["allow", "block", "flag", "error"] {
            let want = expected
                .get(&(active.to_string(), shadow.to_string()))
                .copied()
                .unwrap_or(0.0);
            assert_eq!(
                e2e::metric_value(&metrics, &shadow_pair(active, shadow)),
                want,
                "active {active}, shadow {shadow}"
            );
        }
    }
    assert_eq!(
        e2e::metric_value(&metrics, "patewaf_shadow_score_count"),
        sent as f64
    );
    assert_eq!(
        e2e::metric_value(&metrics, "patewaf_score_count"),
        sent as f64
    );

    // Every disagreement is in the audit log with both verdicts (an allowed request included),
    // and no agreeing line carries a shadow verdict.
    let audit = json_lines(&s.audit);
    let by_id: BTreeMap<&str, &serde_json::Value> = audit
        .iter()
        .map(|r| (r["request_id"].as_str().unwrap(), r))
        .collect();
    for (id, active, shadow, score) in &disagreements {
        let line = by_id
            .get(id.as_str())
            .unwrap_or_else(|| panic!("no audit line for disagreement {id}"));
        assert_eq!(line["verdict"], active.as_str(), "{line}");
        assert_eq!(line["shadow_verdict"], shadow.as_str(), "{line}");
        assert_eq!(line["shadow_model_version"], "s1", "{line}");
        let logged = line["shadow_score"].as_f64().unwrap();
        assert!((logged - score).abs() <= 1e-6, "{line} vs trainer {score}");
    }
    let with_shadow = audit
        .iter()
        .filter(|r| r.get("shadow_verdict").is_some())
        .count();
    assert_eq!(with_shadow, disagreements.len());
    assert!(audit
        .iter()
        .filter(|r| r["verdict"] == "allow")
        .all(|r| r["shadow_verdict"] == "block"));
}

#[test]
fn a_bad_shadow_bundle_is_rejected_and_the_active_keeps_serving() {
    // Corrupt at start-up: the proxy starts and serves with the active bundle, without a shadow.
    let s = shadow_stack("block", |dir| {
        write_fixture_bundle(dir, Some(XSS_TOKENS), 0.5, "s1").unwrap();
        std::fs::write(
            dir.join(bundle::FEATURIZER_FILE),
            b"{\"not\": \"a featurizer\"}",
        )
        .unwrap();
    });
    assert_eq!(ready(&s.proxy)["shadow_version"], serde_json::Value::Null);
    assert_eq!(
        s.proxy
            .metric("patewaf_shadow_loads_total{result=\"error\"}"),
        1.0
    );
    assert!(
        s.proxy.log_text().contains("shadow bundle rejected"),
        "{}",
        s.proxy.log_text()
    );
    assert_eq!(s.proxy.get(SQLI).status, 403);
    assert_eq!(s.proxy.get(NORMAL).status, 200);
    assert_eq!(s.proxy.metric("patewaf_shadow_score_count"), 0.0);
    let (status, body) = post(&s.proxy, "/promote");
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("not loaded"),
        "{body}"
    );
    assert_eq!(body["serving"], "v1");

    // Fixed and reloaded: the shadow scores.
    write_fixture_bundle(&s.shadow, Some(XSS_TOKENS), 0.5, "s2").unwrap();
    let (status, body) = post(&s.proxy, "/reload");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["shadow"]["model_version"], "s2");
    assert_eq!(ready(&s.proxy)["shadow_version"], "s2");

    // A corrupt shadow on reload (one flipped byte in model.onnx): 422 naming the file, the
    // active bundle reloaded fine, the old shadow keeps shadowing, verdicts unchanged.
    write_fixture_bundle(&s.shadow, Some(XSS_TOKENS), 0.5, "s3").unwrap();
    let model = s.shadow.join(bundle::MODEL_FILE);
    let mut bytes = std::fs::read(&model).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&model, bytes).unwrap();
    let (status, body) = post(&s.proxy, "/reload");
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["model_version"], "v1", "the active bundle reloaded");
    assert_eq!(body["shadow"]["result"], "error");
    assert!(
        body["shadow"]["error"]
            .as_str()
            .unwrap()
            .contains("model.onnx"),
        "{body}"
    );
    let r = ready(&s.proxy);
    assert_eq!(r["model_version"], "v1");
    assert_eq!(r["shadow_version"], "s2");
    assert_eq!(s.proxy.get(SQLI).status, 403);
    assert_eq!(s.proxy.get(NORMAL).status, 200);

    // Promoting it: refused with the load error; the active model keeps serving.
    let (status, body) = post(&s.proxy, "/promote");
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("model.onnx"),
        "{body}"
    );
    assert_eq!(body["serving"], "v1");
    assert_eq!(ready(&s.proxy)["model_version"], "v1");
    assert_eq!(s.proxy.get(SQLI).status, 403);

    // A valid bundle written over the shadow without a reload is not what was observed:
    // refused too.
    write_fixture_bundle(&s.shadow, Some(&[]), 0.5, "s4").unwrap();
    let (status, body) = post(&s.proxy, "/promote");
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("changed on disk"),
        "{body}"
    );
    assert_eq!(s.proxy.get(SQLI).status, 403);
    assert_eq!(
        s.proxy.metric("patewaf_promotions_total{result=\"error\"}"),
        3.0
    );
    assert_eq!(
        s.proxy.metric("patewaf_promotions_total{result=\"ok\"}"),
        0.0
    );
    assert!(!s.proxy.log_text().contains("panicked"));
    drop(s.apache);
}

#[test]
fn promote_under_load_loses_no_request_and_switches_once() {
    // The shadow sees nothing as malicious: once promoted, the SQL injection passes.
    let s = shadow_stack("block", |dir| {
        write_fixture_bundle(dir, Some(&[]), 0.5, "s1").unwrap();
    });
    let listen = s.proxy.listen;
    let done = Arc::new(AtomicUsize::new(0));
    let progress = done.clone();
    // One client, sequential, alternating a normal request and the attack: 400 requests.
    let client = std::thread::spawn(move || {
        (0..400)
            .map(|i| {
                let target = if i % 2 == 0 { NORMAL } else { SQLI };
                let status = http(listen, "GET", target, &[], None)
                    .map(|r| r.status)
                    .unwrap_or(0);
                progress.fetch_add(1, Ordering::SeqCst);
                (target, status)
            })
            .collect::<Vec<(&str, u16)>>()
    });
    assert!(
        eventually(Duration::from_secs(60), || done.load(Ordering::SeqCst)
            >= 100),
        "the client did not get going"
    );
    let (status, body) = post(&s.proxy, "/promote");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model_version"], "s1");
    assert_eq!(body["previous"], "v1");
    let results = client.join().unwrap();

    // No request lost: every normal request answered 200; every attack 403 (active v1) until
    // the promotion and 200 (s1) after it, switching exactly once.
    assert!(
        results
            .iter()
            .filter(|(t, _)| *t == NORMAL)
            .all(|(_, st)| *st == 200),
        "{results:?}"
    );
    let attacks: Vec<u16> = results
        .iter()
        .filter(|(t, _)| *t == SQLI)
        .map(|(_, st)| *st)
        .collect();
    assert!(
        attacks.iter().all(|&st| st == 403 || st == 200),
        "{attacks:?}"
    );
    let first_pass = attacks
        .iter()
        .position(|&st| st == 200)
        .unwrap_or(attacks.len());
    assert!(first_pass > 0 && first_pass < attacks.len(), "{attacks:?}");
    assert!(
        attacks[first_pass..].iter().all(|&st| st == 200),
        "the switch happened once: {attacks:?}"
    );
    assert_eq!(
        s.proxy.metric(&verdict("allow")) + s.proxy.metric(&verdict("block")),
        400.0
    );
    assert_eq!(
        s.proxy.metric(&verdict("block")),
        first_pass as f64,
        "every 403 was counted, none after the promotion"
    );

    // After: s1 active, no shadow; a reload loads the promoted directory again.
    let r = ready(&s.proxy);
    assert_eq!(r["model_version"], "s1");
    assert_eq!(r["shadow_version"], serde_json::Value::Null);
    let metrics = s.proxy.metrics();
    assert!(
        metrics.contains("patewaf_model_info{") && metrics.contains("version=\"s1\"} 1"),
        "{metrics}"
    );
    assert!(!metrics.contains("patewaf_shadow_model_info{"), "{metrics}");
    assert_eq!(
        e2e::metric_value(&metrics, "patewaf_promotions_total{result=\"ok\"}"),
        1.0
    );
    let (status, body) = post(&s.proxy, "/reload");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model_version"], "s1");
    assert_eq!(body["shadow"], serde_json::Value::Null);
    assert_eq!(s.proxy.get(SQLI).status, 200);
    let (status, body) = post(&s.proxy, "/promote");
    assert_eq!(status, 422, "nothing left to promote: {body}");
    assert!(
        s.proxy.log_text().contains("promoted to active"),
        "{}",
        s.proxy.log_text()
    );
    let _ = (&s.active, &s.audit, &s.tmp);
}
