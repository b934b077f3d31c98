//! End-to-end: Debian's Apache on a loopback port, the release `pate-proxy` in front of it, a
//! bundle written by code (`test_support`: a featurizer fitted on CSIC-2010-style requests and a
//! one-layer model with positive weights on SQL-injection/XSS tokens), and raw HTTP/1.1 requests.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use e2e::{eventually, http, json_lines, proxy_binary, proxy_config, Apache, Proxy, ProxyPorts};
use test_support::write_fixture_bundle;

mod common;
use common::{stack, verdict, Stack};

/// From CSIC 2010 normal traffic.
const NORMAL: &str =
    "/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&precio=100&cantidad=55&B1=A%F1adir+al+carrito";
/// From CSIC 2010 anomalous traffic (SQL injection).
const ATTACK: &str = "/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&precio=85&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25&B1=A%F1adir+al+carrito";
const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");
const NORMAL_BODY: &[u8] =
    b"id=3&nombre=Queso+Manchego&precio=39&cantidad=61&B1=A%F1adir+al+carrito";
const ATTACK_BODY: &[u8] =
    b"id=3&nombre=%3Cscript%3Ealert%28document.cookie%29%3C%2Fscript%3E&precio=39&cantidad=1";

/// Counter values for every verdict, plus the score histogram's count and upstream errors.
fn counters(proxy: &Proxy) -> Vec<(String, f64)> {
    let text = proxy.metrics();
    let mut names: Vec<String> = ["allow", "block", "flag", "error", "excluded", "refused"]
        .iter()
        .map(|v| verdict(v))
        .collect();
    names.push("patewaf_score_count".into());
    names.push("patewaf_scoring_duration_seconds_count".into());
    names.push("patewaf_upstream_errors_total".into());
    names.push("patewaf_model_reloads_total{result=\"ok\"}".into());
    names.push("patewaf_model_reloads_total{result=\"error\"}".into());
    names
        .into_iter()
        .map(|n| (n.clone(), e2e::metric_value(&text, &n)))
        .collect()
}

/// Asserts that between `before` and now exactly the listed counters moved, by exactly the
/// listed amounts, and every other one stayed.
fn assert_deltas(proxy: &Proxy, before: &[(String, f64)], expected: &[(&str, f64)]) {
    let after = counters(proxy);
    for ((name, b), (_, a)) in before.iter().zip(&after) {
        let want = expected
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |(_, d)| *d);
        assert_eq!(a - b, want, "{name}: before {b}, after {a}");
    }
}

fn request_id_in_body(body: &str) -> String {
    body.lines()
        .find_map(|l| l.strip_prefix("request id: "))
        .unwrap_or_else(|| panic!("no request id in {body:?}"))
        .trim()
        .to_string()
}

#[test]
fn block_mode_answers_403_before_apache_and_passes_normal_traffic() {
    let s = stack("block", "");
    let before = counters(&s.proxy);
    let direct = http(s.apache.addr(), "GET", NORMAL, &[], None).unwrap();
    assert_eq!(direct.status, 200);
    let log_lines_before = s.apache.access_log().lines().count();

    // Normal traffic: Apache's answer comes back, status and body.
    let normal = s.proxy.get(NORMAL);
    assert_eq!(normal.status, 200, "{}", normal.text());
    assert_eq!(normal.body, direct.body);
    let normal_id = normal
        .header("x-request-id")
        .expect("x-request-id")
        .to_string();
    let missing = s.proxy.get("/tienda1/publico/nopage.jsp?id=1");
    assert_eq!(missing.status, 404, "Apache's status passes through");
    let direct_post = http(
        s.apache.addr(),
        "POST",
        "/tienda1/publico/anadir.jsp",
        &[FORM],
        Some(NORMAL_BODY),
    )
    .unwrap();
    let post = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/anadir.jsp",
        &[FORM],
        Some(NORMAL_BODY),
    )
    .unwrap();
    assert_eq!(
        post.status, direct_post.status,
        "a normal urlencoded POST is forwarded"
    );
    let expect = [FORM, ("Expect", "100-continue")];
    let post_expect = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/anadir.jsp",
        &expect,
        Some(NORMAL_BODY),
    )
    .unwrap();
    assert_eq!(
        post_expect.status, direct_post.status,
        "Expect: 100-continue is answered and the body forwarded"
    );

    // Attacks: 403 from the proxy with a request id; nothing reaches Apache.
    let blocked = s.proxy.get(ATTACK);
    assert_eq!(blocked.status, 403, "{}", blocked.text());
    let blocked_id = request_id_in_body(&blocked.text());
    assert_eq!(blocked.header("x-request-id"), Some(blocked_id.as_str()));
    let blocked_post = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/anadir.jsp",
        &[FORM],
        Some(ATTACK_BODY),
    )
    .unwrap();
    assert_eq!(
        blocked_post.status, 403,
        "the body is scored before connecting upstream"
    );
    let blocked_post_id = request_id_in_body(&blocked_post.text());

    // Apache writes its log line after answering: wait for the four forwarded requests (the
    // direct requests above carry no Via).
    let via_lines = |log: &str| {
        log.lines()
            .filter(|l| l.contains("via=\"1.1 pate-waf\""))
            .count()
    };
    eventually(Duration::from_secs(5), || {
        via_lines(&s.apache.access_log()) >= 4
    });
    let log = s.apache.access_log();
    let new_lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("via=\"1.1 pate-waf\""))
        .collect();
    assert_eq!(
        new_lines.len(),
        4,
        "exactly the four forwarded requests reached Apache:\n{log}"
    );
    assert_eq!(
        log.lines().count(),
        log_lines_before + 5,
        "4 forwarded + the direct POST:\n{log}"
    );
    assert!(
        !log.contains("DROP") && !log.contains(&blocked_id) && !log.contains(&blocked_post_id),
        "{log}"
    );
    let normal_line = new_lines
        .iter()
        .find(|l| l.contains("Vino+Rioja"))
        .expect("normal request in Apache's log");
    assert!(normal_line.contains("xff=\"127.0.0.1\""), "{normal_line}");
    assert!(normal_line.contains("xfp=\"http\""), "{normal_line}");
    assert!(
        normal_line.contains("via=\"1.1 pate-waf\""),
        "{normal_line}"
    );
    assert!(
        normal_line.contains(&format!("rid=\"{normal_id}\"")),
        "{normal_line}"
    );

    assert_deltas(
        &s.proxy,
        &before,
        &[
            (&verdict("allow"), 4.0),
            (&verdict("block"), 2.0),
            ("patewaf_score_count", 6.0),
            ("patewaf_scoring_duration_seconds_count", 6.0),
        ],
    );
    let audit = json_lines(&s.audit);
    assert_eq!(audit.len(), 2, "{audit:?}");
    for (record, id) in audit.iter().zip([&blocked_id, &blocked_post_id]) {
        assert_eq!(record["request_id"], id.as_str());
        assert_eq!(record["verdict"], "block");
        assert_eq!(record["mode"], "block");
        assert_eq!(record["model_version"], "v1");
        assert_eq!(record["threshold"], 0.5);
        assert!(record["score"].as_f64().unwrap() >= 0.5);
        assert!(record.get("top_tokens").is_none(), "{record}");
        assert!(!record["explanation"]["top"].as_array().unwrap().is_empty());
        assert!(record["client"].as_str().unwrap().starts_with("127.0.0.1:"));
    }
    assert!(audit[0]["target"].as_str().unwrap().contains("DROP+TABLE"));
    // No raw body in the audit log unless `audit_body: true` (the next test).
    assert!(
        audit[1].get("body").is_none_or(|b| b.is_null()),
        "{:?}",
        audit[1]
    );
    let metrics = s.proxy.metrics();
    assert!(metrics.contains("patewaf_model_info{delta=\"0.00001\",epsilon=\"8\",mechanism=\"gnmax\",version=\"v1\"} 1"), "{metrics}");
    assert_eq!(e2e::metric_value(&metrics, "patewaf_ready"), 1.0);
}

#[test]
fn audit_body_records_the_scored_body_only_when_asked() {
    let s = stack("block", "audit_body: true\n");
    let blocked_post = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/anadir.jsp",
        &[FORM],
        Some(ATTACK_BODY),
    )
    .unwrap();
    assert_eq!(blocked_post.status, 403, "{}", blocked_post.text());
    let audit = json_lines(&s.audit);
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert!(
        audit[0]["body"].as_str().unwrap().contains("%3Cscript%3E"),
        "{:?}",
        audit[0]
    );
}

#[test]
fn detect_mode_forwards_the_attack_and_records_it() {
    let s = stack("detect", "");
    let before = counters(&s.proxy);
    let direct = http(s.apache.addr(), "GET", ATTACK, &[], None).unwrap();
    let flagged = s.proxy.get(ATTACK);
    assert_eq!(flagged.status, direct.status);
    assert_eq!(flagged.status, 200);
    let id = flagged
        .header("x-request-id")
        .expect("x-request-id")
        .to_string();
    let forwarded = |log: &str| {
        log.lines()
            .any(|l| l.contains("DROP+TABLE") && l.contains(&format!("rid=\"{id}\"")))
    };
    eventually(Duration::from_secs(5), || forwarded(&s.apache.access_log()));
    let log = s.apache.access_log();
    assert!(forwarded(&log), "{log}");
    assert_deltas(
        &s.proxy,
        &before,
        &[
            (&verdict("flag"), 1.0),
            ("patewaf_score_count", 1.0),
            ("patewaf_scoring_duration_seconds_count", 1.0),
        ],
    );
    let audit = json_lines(&s.audit);
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["request_id"], id.as_str());
    assert_eq!(audit[0]["verdict"], "flag");
    assert_eq!(audit[0]["mode"], "detect");
    assert_eq!(audit[0]["method"], "GET");
    assert_eq!(audit[0]["target"], ATTACK);
}

fn reload(proxy: &Proxy) -> (u16, serde_json::Value) {
    let r = http(proxy.admin, "POST", "/reload", &[], None).unwrap();
    (r.status, serde_json::from_slice(&r.body).unwrap())
}

fn serving_version(proxy: &Proxy) -> String {
    let r = http(proxy.admin, "GET", "/ready", &[], None).unwrap();
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["model_version"].as_str().unwrap().to_string()
}

#[test]
fn reload_swaps_models_rejects_a_corrupt_bundle_and_keeps_serving() {
    let s = stack("block", "");
    assert_eq!(s.proxy.get(ATTACK).status, 403);

    // A new bundle in which no token is malicious: after POST /reload the attack passes.
    let before = counters(&s.proxy);
    write_fixture_bundle(&s.bundle, Some(&[]), 0.5, "v2").unwrap();
    let (status, body) = reload(&s.proxy);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model_version"], "v2");
    assert_eq!(body["previous"], "v1");
    assert_eq!(s.proxy.get(ATTACK).status, 200);
    assert_deltas(
        &s.proxy,
        &before,
        &[
            ("patewaf_model_reloads_total{result=\"ok\"}", 1.0),
            (&verdict("allow"), 1.0),
            ("patewaf_score_count", 1.0),
            ("patewaf_scoring_duration_seconds_count", 1.0),
        ],
    );
    let metrics = s.proxy.metrics();
    assert!(
        metrics.contains("version=\"v2\"} 1") && !metrics.contains("version=\"v1\""),
        "{metrics}"
    );

    // A corrupt bundle (one flipped byte in model.onnx): rejected, counted, v2 keeps serving.
    let before = counters(&s.proxy);
    write_fixture_bundle(&s.bundle, None, 0.5, "v3").unwrap();
    let model = s.bundle.join(bundle::MODEL_FILE);
    let mut bytes = std::fs::read(&model).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&model, bytes).unwrap();
    let (status, body) = reload(&s.proxy);
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["result"], "error");
    assert_eq!(body["serving"], "v2");
    assert!(
        body["error"].as_str().unwrap().contains("model.onnx"),
        "{body}"
    );
    assert_eq!(serving_version(&s.proxy), "v2");
    assert_eq!(
        s.proxy.get(ATTACK).status,
        200,
        "the old model keeps serving"
    );
    assert_eq!(s.proxy.get(NORMAL).status, 200);
    assert_deltas(
        &s.proxy,
        &before,
        &[
            ("patewaf_model_reloads_total{result=\"error\"}", 1.0),
            (&verdict("allow"), 2.0),
            ("patewaf_score_count", 2.0),
            ("patewaf_scoring_duration_seconds_count", 2.0),
        ],
    );
    assert_eq!(e2e::metric_value(&s.proxy.metrics(), "patewaf_ready"), 1.0);

    // SIGHUP: reload (v4, attack tokens again) and reopen the audit log (rotated away).
    write_fixture_bundle(&s.bundle, None, 0.5, "v4").unwrap();
    let rotated = s.tmp.path().join("audit.jsonl.1");
    std::fs::rename(&s.audit, &rotated).unwrap();
    s.proxy.hangup();
    assert!(
        eventually(Duration::from_secs(20), || serving_version(&s.proxy)
            == "v4"),
        "{}",
        s.proxy.log_text()
    );
    let blocked = s.proxy.get(ATTACK);
    assert_eq!(blocked.status, 403);
    let fresh = json_lines(&s.audit);
    assert_eq!(
        fresh.len(),
        1,
        "after SIGHUP the audit log is written to the reopened file"
    );
    assert_eq!(fresh[0]["model_version"], "v4");
    assert_eq!(
        fresh[0]["request_id"],
        request_id_in_body(&blocked.text()).as_str()
    );
    assert_eq!(
        json_lines(&rotated).len(),
        1,
        "the first 403 stays in the rotated file"
    );
}

#[test]
fn upstream_down_gives_502_and_the_proxy_recovers() {
    let s = stack("block", "upstream_connect_timeout_ms: 500\n");
    assert_eq!(s.proxy.get(NORMAL).status, 200);
    s.apache.stop();
    let before = counters(&s.proxy);
    let down = s.proxy.get(NORMAL);
    assert_eq!(down.status, 502);
    // The upstream error is counted in pingora's logging phase, which may run just after the
    // client has the 502.
    eventually(Duration::from_secs(5), || {
        s.proxy.metric("patewaf_upstream_errors_total") >= 1.0
    });
    assert_deltas(
        &s.proxy,
        &before,
        &[
            (&verdict("allow"), 1.0),
            ("patewaf_score_count", 1.0),
            ("patewaf_scoring_duration_seconds_count", 1.0),
            ("patewaf_upstream_errors_total", 1.0),
        ],
    );
    // Blocking does not need the upstream.
    assert_eq!(s.proxy.get(ATTACK).status, 403);
    s.apache.start_again();
    assert!(eventually(Duration::from_secs(10), || s
        .proxy
        .get(NORMAL)
        .status
        == 200));
    assert_eq!(
        http(s.proxy.admin, "GET", "/live", &[], None)
            .unwrap()
            .status,
        200
    );
}

#[test]
fn routes_exclude_paths_from_scoring_and_override_the_mode() {
    let routes = "routes:\n  - prefix: \"/static/\"\n    exclude: true\n  - prefix: \"/tienda1/miembros/\"\n    mode: block\n";
    let s = stack("detect", routes);
    let before = counters(&s.proxy);
    // An attack-looking request on an excluded prefix is forwarded unscored.
    let excluded = s
        .proxy
        .get("/static/app.js?x=%3Cscript%3Ealert%28%27x%27%29%3C%2Fscript%3E");
    assert_eq!(excluded.status, 200);
    assert_deltas(&s.proxy, &before, &[(&verdict("excluded"), 1.0)]);
    assert!(json_lines(&s.audit).is_empty());
    // A dot segment does not smuggle a request into the exclusion: Apache resolves this path to
    // /tienda1/publico/..., and so does the route matcher.
    let before = counters(&s.proxy);
    let smuggled = s.proxy.get("/static/../tienda1/publico/caracteristicas.jsp?id=%3Cscript%3Ealert%28%22XSS%22%29%3C%2Fscript%3E");
    assert_eq!(smuggled.status, 200);
    assert_deltas(
        &s.proxy,
        &before,
        &[
            (&verdict("flag"), 1.0),
            ("patewaf_score_count", 1.0),
            ("patewaf_scoring_duration_seconds_count", 1.0),
        ],
    );
    std::fs::write(&s.audit, b"").unwrap();

    // The route in block mode blocks; the rest stays in detect mode.
    let before = counters(&s.proxy);
    let member_attack =
        "/tienda1/miembros/editar.jsp?login=admin%27+or+%271%27%3D%271&password=x%27--";
    assert_eq!(s.proxy.get(member_attack).status, 403);
    assert_eq!(s.proxy.get(ATTACK).status, 200);
    assert_deltas(
        &s.proxy,
        &before,
        &[
            (&verdict("block"), 1.0),
            (&verdict("flag"), 1.0),
            ("patewaf_score_count", 2.0),
            ("patewaf_scoring_duration_seconds_count", 2.0),
        ],
    );
    let audit = json_lines(&s.audit);
    assert_eq!(
        audit
            .iter()
            .map(|r| r["mode"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["block", "detect"]
    );
    eventually(Duration::from_secs(5), || {
        s.apache.access_log().lines().count() >= 2
    });
    let log = s.apache.access_log();
    assert!(
        log.contains("/static/app.js") && !log.contains("editar.jsp"),
        "{log}"
    );
}

#[test]
fn body_over_the_limit_is_refused_with_413_when_configured() {
    let s = stack(
        "detect",
        "body_limit_bytes: 64\nbody_over_limit: reject\naudit_redact_values: true\n",
    );
    let before = counters(&s.proxy);
    let big: Vec<u8> = format!("comment={}", "a".repeat(500)).into_bytes();
    let r = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/anadir.jsp",
        &[FORM],
        Some(&big),
    )
    .unwrap();
    assert_eq!(r.status, 413);
    let small = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/anadir.jsp",
        &[FORM],
        Some(b"id=1&precio=2"),
    )
    .unwrap();
    assert_ne!(small.status, 413);
    assert_deltas(
        &s.proxy,
        &before,
        &[
            (&verdict("refused"), 1.0),
            (&verdict("allow"), 1.0),
            ("patewaf_score_count", 1.0),
            ("patewaf_scoring_duration_seconds_count", 1.0),
        ],
    );
    eventually(Duration::from_secs(5), || !s.apache.access_log().is_empty());
    // Let a (wrongly) forwarded big POST have time to show up as well.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        s.apache.access_log().lines().count(),
        1,
        "only the small POST reached Apache"
    );
    let audit = json_lines(&s.audit);
    assert_eq!(audit.len(), 1);
    assert_eq!(
        audit[0]["verdict"], "refused",
        "a limit refused it, not the model"
    );
    assert!(audit[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("body_over_limit"));
}

#[test]
fn audit_log_redacts_values_when_asked() {
    let s = stack("block", "audit_redact_values: true\n");
    assert_eq!(s.proxy.get(ATTACK).status, 403);
    let audit = json_lines(&s.audit);
    assert_eq!(audit.len(), 1);
    let target = audit[0]["target"].as_str().unwrap();
    assert!(
        target.contains("cantidad=REDACTED") && !target.contains("DROP"),
        "{target}"
    );
    // The explanation shows no value either: no snippet, no vocabulary word the redacted line
    // does not show.
    let line = audit[0].to_string();
    assert!(!audit[0]["explanation"]["top"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(
        !line.contains("snippet") && !line.to_lowercase().contains("drop"),
        "{line}"
    );
}

fn check_config(dir: &Path, yaml: &str) -> (i32, String, String) {
    let path = dir.join("check.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = Command::new(proxy_binary())
        .args(["check-config", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_config_accepts_a_good_file_and_names_the_bad_key() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    write_fixture_bundle(&bundle, None, 0.5, "v1").unwrap();
    let good = proxy_config(
        &ProxyPorts::free(),
        8081,
        &bundle,
        "block",
        &tmp.path().join("a.jsonl"),
        "",
    );
    let (code, stdout, stderr) = check_config(tmp.path(), &good);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("ok") && stdout.contains("model v1"),
        "{stdout}"
    );

    let (code, _, stderr) = check_config(tmp.path(), &format!("{good}treshold: 0.3\n"));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("treshold") && stderr.contains("line"),
        "{stderr}"
    );

    let (code, _, stderr) =
        check_config(tmp.path(), &good.replace("mode: block", "mode: blocking"));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("mode") && stderr.contains("blocking"),
        "{stderr}"
    );

    let missing = tmp.path().join("no-bundle");
    let (code, _, stderr) = check_config(
        tmp.path(),
        &good.replace(&*bundle.to_string_lossy(), &missing.to_string_lossy()),
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("bundle") && stderr.contains("no-bundle"),
        "{stderr}"
    );

    // Running (not just checking) with a missing bundle fails fast with the path named.
    let run_yaml = tmp.path().join("run.yaml");
    std::fs::write(
        &run_yaml,
        good.replace(&*bundle.to_string_lossy(), &missing.to_string_lossy()),
    )
    .unwrap();
    let out = Command::new(proxy_binary())
        .arg("--config")
        .arg(&run_yaml)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no-bundle") && stderr.contains("bundle.yaml"),
        "{stderr}"
    );

    let nowhere = tmp.path().join("missing-dir/audit.jsonl");
    let (code, _, stderr) = check_config(
        tmp.path(),
        &good.replace(
            &*tmp.path().join("a.jsonl").to_string_lossy(),
            &nowhere.to_string_lossy(),
        ),
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("audit_log") && stderr.contains("missing-dir"),
        "{stderr}"
    );

    let help = Command::new(proxy_binary()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for key in [
        "listen",
        "upstream",
        "admin_listen",
        "bundle",
        "mode",
        "audit_log",
        "on_error",
        "routes",
        "check-config",
        "SIGHUP",
    ] {
        assert!(help.contains(key), "--help misses {key}:\n{help}");
    }
}

/// A proxy whose bundle is corrupt at start (`start_without_model: true`): not ready, and every
/// request follows `on_error`; a reload with a good bundle makes it ready.
fn unready_stack(on_error: &str) -> Stack {
    let tmp = tempfile::tempdir().unwrap();
    let apache = Apache::start(&tmp.path().join("apache"));
    let bundle = tmp.path().join("bundle");
    write_fixture_bundle(&bundle, None, 0.5, "v1").unwrap();
    std::fs::write(
        bundle.join(bundle::FEATURIZER_FILE),
        b"{\"not\": \"the featurizer\"}",
    )
    .unwrap();
    let audit = tmp.path().join("audit.jsonl");
    let extra = format!("on_error: {on_error}\nstart_without_model: true\n");
    let config = proxy_config(
        &ProxyPorts::free(),
        apache.port,
        &bundle,
        "block",
        &audit,
        &extra,
    );
    let proxy = Proxy::start_live(tmp.path(), &config);
    Stack {
        proxy,
        apache,
        bundle,
        audit,
        tmp,
    }
}

#[test]
fn on_error_closed_answers_503_and_on_error_open_forwards() {
    for (on_error, status) in [("closed", 503), ("open", 200)] {
        let s = unready_stack(on_error);
        assert_eq!(
            http(s.proxy.admin, "GET", "/ready", &[], None)
                .unwrap()
                .status,
            503
        );
        assert_eq!(s.proxy.metric("patewaf_ready"), 0.0);
        let before = counters(&s.proxy);
        let r = s.proxy.get(NORMAL);
        assert_eq!(r.status, status, "on_error: {on_error}: {}", r.text());
        assert_deltas(&s.proxy, &before, &[(&verdict("error"), 1.0)]);
        let audit = json_lines(&s.audit);
        assert_eq!(audit.len(), 1);
        assert_eq!(audit[0]["verdict"], "error");
        assert!(
            audit[0]["reason"]
                .as_str()
                .unwrap()
                .contains("no model loaded"),
            "{}",
            audit[0]
        );
        if on_error == "closed" {
            assert_eq!(
                audit[0]["request_id"],
                request_id_in_body(&r.text()).as_str()
            );
            std::thread::sleep(Duration::from_millis(200));
            assert!(
                s.apache.access_log().is_empty(),
                "a 503 under on_error: closed never reaches Apache"
            );
        }

        // A good bundle and a reload: ready, scoring again.
        write_fixture_bundle(&s.bundle, None, 0.5, "v2").unwrap();
        let (code, body) = reload(&s.proxy);
        assert_eq!(code, 200, "{body}");
        assert_eq!(serving_version(&s.proxy), "v2");
        assert_eq!(s.proxy.metric("patewaf_ready"), 1.0);
        assert_eq!(s.proxy.get(ATTACK).status, 403);
        assert_eq!(s.proxy.get(NORMAL).status, 200);
    }
}

#[test]
fn requests_in_flight_during_reloads_are_all_answered() {
    let s = stack("block", "");
    let listen = s.proxy.listen;
    let client = std::thread::spawn(move || {
        (0..300)
            .map(|_| {
                http(listen, "GET", NORMAL, &[], None)
                    .map(|r| r.status)
                    .unwrap_or(0)
            })
            .collect::<Vec<u16>>()
    });
    for i in 0..6 {
        write_fixture_bundle(&s.bundle, None, 0.5, &format!("r{i}")).unwrap();
        let (status, body) = reload(&s.proxy);
        assert_eq!(status, 200, "{body}");
    }
    let statuses = client.join().unwrap();
    assert!(
        statuses.iter().all(|&st| st == 200),
        "{:?}",
        statuses.iter().filter(|&&st| st != 200).collect::<Vec<_>>()
    );
    assert_eq!(serving_version(&s.proxy), "r5");
    assert_eq!(
        s.proxy.metric("patewaf_model_reloads_total{result=\"ok\"}"),
        6.0
    );
}

#[test]
fn sigterm_stops_the_proxy_gracefully() {
    let mut s = stack("detect", "");
    assert_eq!(s.proxy.get(NORMAL).status, 200);
    let started = std::time::Instant::now();
    let status = s.proxy.terminate().expect("exit status");
    assert!(status.success(), "{status}\n{}", s.proxy.log_text());
    // grace_period_seconds is 1 in these tests; pingora's default would be 300 s.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        http(s.proxy.listen, "GET", NORMAL, &[], None).is_err(),
        "the port is closed"
    );
}

/// Bytes Apache received for the forwarded request with this id (`in=%I` of its access log).
fn apache_bytes_in(apache: &Apache, request_id: &str) -> Option<usize> {
    let log = apache.access_log();
    let line = log
        .lines()
        .find(|l| l.contains(&format!("rid=\"{request_id}\"")))?;
    line.rsplit("in=").next()?.trim().parse().ok()
}

#[test]
fn large_bodies_are_forwarded_whole_and_scored_by_their_prefix() {
    let s = stack("block", "body_limit_bytes: 1024\n");
    // 60 KiB: read whole (it fits pingora's replay buffer), its first 1 KiB scored, all forwarded.
    let padding = "a".repeat(60 * 1024);
    let benign = format!("id=3&nombre=Queso&comentario={padding}");
    let attack_first = format!(
        "nombre=%3Cscript%3Ealert%28document.cookie%29%3C%2Fscript%3E&comentario={padding}"
    );
    let attack_late =
        format!("comentario={padding}&nombre=%3Cscript%3Ealert%281%29%3C%2Fscript%3E");
    // 200 KiB: more than pingora can replay; forwarded whole with the URI scored.
    let huge = format!("id=3&comentario={}", "b".repeat(200 * 1024));
    let post = |body: &str| {
        http(
            s.proxy.listen,
            "POST",
            "/tienda1/publico/anadir.jsp",
            &[FORM],
            Some(body.as_bytes()),
        )
        .unwrap()
    };
    let before = counters(&s.proxy);
    let r = post(&benign);
    assert_ne!(r.status, 403);
    let benign_id = r.header("x-request-id").unwrap().to_string();
    assert_eq!(
        post(&attack_first).status,
        403,
        "an attack in the scored prefix is blocked"
    );
    let late = post(&attack_late);
    assert_ne!(
        late.status, 403,
        "beyond body_limit_bytes the body is not scored"
    );
    let late_id = late.header("x-request-id").unwrap().to_string();
    let r = post(&huge);
    assert_ne!(r.status, 403);
    assert_ne!(r.status, 413);
    let huge_id = r.header("x-request-id").unwrap().to_string();
    for (id, body) in [
        (&benign_id, &benign),
        (&late_id, &attack_late),
        (&huge_id, &huge),
    ] {
        assert!(
            eventually(Duration::from_secs(5), || apache_bytes_in(&s.apache, id)
                .is_some()),
            "{id} not in Apache's log:\n{}",
            s.apache.access_log()
        );
        let received = apache_bytes_in(&s.apache, id).unwrap();
        assert!(
            received > body.len(),
            "Apache received {received} bytes for a {}-byte body",
            body.len()
        );
    }
    assert_deltas(
        &s.proxy,
        &before,
        &[
            (&verdict("allow"), 3.0),
            (&verdict("block"), 1.0),
            ("patewaf_score_count", 4.0),
            ("patewaf_scoring_duration_seconds_count", 4.0),
        ],
    );
}

#[test]
fn graceful_upgrade_hands_the_listening_sockets_to_a_new_process() {
    let mut s = stack("block", "");
    let config = std::fs::read_to_string(s.tmp.path().join("proxy.yaml")).unwrap();
    let mut upgraded = Proxy::spawn(s.tmp.path(), &config, &["--upgrade"], "proxy-upgraded.log");
    // The new process waits on the upgrade socket; the old one hands over its sockets on SIGQUIT.
    std::thread::sleep(Duration::from_millis(300));
    let old_status = s.proxy.quit_for_upgrade().expect("old process exit");
    assert!(old_status.success(), "{old_status}\n{}", s.proxy.log_text());
    assert!(upgraded.is_running(), "{}", upgraded.log_text());
    // Same addresses, now served by the new process.
    assert!(eventually(Duration::from_secs(10), || {
        http(upgraded.admin, "GET", "/ready", &[], None).is_ok_and(|r| r.status == 200)
    }));
    assert_eq!(upgraded.get(NORMAL).status, 200);
    assert_eq!(upgraded.get(ATTACK).status, 403);
    assert_eq!(
        upgraded.metric(&verdict("block")),
        1.0,
        "a fresh process counts from zero"
    );
    upgraded.stop();
}

/// Reads one HTTP/1.1 response (headers and a Content-Length body) from `stream`; returns the
/// status line and the headers, lower-cased.
fn read_one_response(stream: &mut std::net::TcpStream) -> (String, String) {
    use std::io::Read;
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    while !bytes.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).unwrap(),
            1,
            "connection closed mid-response: {bytes:?}"
        );
        bytes.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .expect("content-length");
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    (head.lines().next().unwrap_or_default().to_string(), head)
}

/// A blocked request that was read whole leaves the client's connection open for its next request
/// (block mode used to close it, costing a TCP connection per blocked request); a refusal with an
/// unread body (413) still closes it.
#[test]
fn a_blocked_request_keeps_the_connection_and_a_refused_body_closes_it() {
    use std::io::{Read, Write};
    let s = stack("block", "body_limit_bytes: 64\nbody_over_limit: reject\n");
    let mut conn = std::net::TcpStream::connect(s.proxy.listen).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for (target, status) in [(ATTACK, "403"), (NORMAL, "200"), (ATTACK, "403")] {
        write!(conn, "GET {target} HTTP/1.1\r\nHost: shop\r\n\r\n").unwrap();
        let (status_line, head) = read_one_response(&mut conn);
        assert!(status_line.contains(status), "{target}: {status_line}");
        assert!(!head.contains("connection: close"), "{head}");
    }
    // A declared body over the limit is refused before it is read: the connection closes.
    let big = format!("comment={}", "a".repeat(500));
    write!(
        conn,
        "POST /tienda1/publico/anadir.jsp HTTP/1.1\r\nHost: shop\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{big}",
        big.len()
    )
    .unwrap();
    let (status_line, _) = read_one_response(&mut conn);
    assert!(status_line.contains("413"), "{status_line}");
    let mut rest = Vec::new();
    let closed = conn.read_to_end(&mut rest).is_ok_and(|_| rest.is_empty());
    assert!(
        closed,
        "the connection must close after a 413, read {rest:?}"
    );
}

#[test]
fn mode_off_forwards_everything_unscored_and_keeps_the_limits() {
    let s = stack("off", "uri_limit_bytes: 4096\n");
    let before = counters(&s.proxy);
    let attack = s.proxy.get(ATTACK);
    assert_eq!(
        attack.status,
        200,
        "mode off never blocks: {}",
        attack.text()
    );
    let id = attack
        .header("x-request-id")
        .expect("x-request-id")
        .to_string();
    let post = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/anadir.jsp",
        &[FORM],
        Some(ATTACK_BODY),
    )
    .unwrap();
    assert_eq!(post.status, 200);
    let long = format!("/tienda1/index.jsp?q={}", "a".repeat(5000));
    assert_eq!(s.proxy.get(&long).status, 414, "the protocol limits stay");
    assert!(
        eventually(Duration::from_secs(5), || s
            .apache
            .access_log()
            .contains(&format!("rid=\"{id}\""))),
        "the attack reached Apache with the forwarding headers:\n{}",
        s.apache.access_log()
    );
    assert!(s.apache.access_log().contains("via=\"1.1 pate-waf\""));
    assert_deltas(
        &s.proxy,
        &before,
        &[(&verdict("excluded"), 2.0), (&verdict("refused"), 1.0)],
    );
    let audit = json_lines(&s.audit);
    assert_eq!(audit.len(), 1, "only the 414 is audited: {audit:?}");
    assert_eq!(audit[0]["mode"], "off");
}
