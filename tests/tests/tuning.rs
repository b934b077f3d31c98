//! End-to-end: tuning per route and per part, and config reload, with Debian's Apache behind the
//! release `pate-proxy` and the fixture bundle (`test_support`: positive weights on SQL-injection
//! and XSS tokens, threshold 0.5, bias −3 so that no request scores below sigmoid(−3) ≈ 0.047).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use e2e::{eventually, http, json_lines, raw_request, Proxy};

mod common;
use common::{stack, verdict, Stack};

/// CSIC 2010 normal traffic, on a page of the fixture Apache.
const NORMAL: &str = "/tienda1/publico/anadir.jsp?id=3&nombre=Vino+Rioja&precio=100&cantidad=55";
/// CSIC 2010 SQL injection, in `cantidad` alone.
const ATTACK_QUERY: &str = "id=2&nombre=Jam%F3n+Ib%E9rico&precio=85&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25";
/// XSS in the form field `nombre`.
const ATTACK_BODY: &[u8] =
    b"id=3&nombre=%3Cscript%3Ealert%28document.cookie%29%3C%2Fscript%3E&precio=39&cantidad=1";
const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

fn attack_on(page: &str) -> String {
    format!("/tienda1/publico/{page}?{ATTACK_QUERY}")
}

/// The config file the proxy was started with (`dir/proxy.yaml`), without its trailing keys.
fn config_file(s: &Stack) -> std::path::PathBuf {
    s.tmp.path().join("proxy.yaml")
}

/// Rewrites the proxy's config file as its start-up text plus `extra` keys.
fn write_config(s: &Stack, base: &str, extra: &str) {
    std::fs::write(config_file(s), format!("{base}{extra}")).unwrap();
}

fn reload(proxy: &Proxy) -> (u16, serde_json::Value) {
    let r = http(proxy.admin, "POST", "/reload", &[], None).unwrap();
    (r.status, serde_json::from_slice(&r.body).unwrap())
}

/// The audit line of the request with this `X-Request-Id`.
fn audit_line(s: &Stack, response: &e2e::Response) -> serde_json::Value {
    let id = response.header("x-request-id").expect("x-request-id");
    json_lines(&s.audit)
        .into_iter()
        .find(|l| l["request_id"] == id)
        .unwrap_or_else(|| panic!("no audit line for {id}"))
}

const ROUTES: &str = "routes:
  - path: /tienda1/publico/anadir.jsp
    exclude_parts: [{param: cantidad}]
  - path: /tienda1/publico/vaciar.jsp
    threshold: 0.02
  - path: /tienda1/publico/pagar.jsp
    methods: [POST]
    exclude_parts: [{param: nombre}]
  - path: /tienda1/publico/caracteristicas.jsp
    host: shop.example
    exclude_parts: [{param: cantidad}]
";

#[test]
fn route_threshold_exclusions_methods_and_host_work_against_apache() {
    let s = stack("block", ROUTES);
    let apache_page = |page: &str| {
        http(s.apache.addr(), "GET", &attack_on(page), &[], None)
            .unwrap()
            .body
    };
    // The attack in an excluded parameter passes on its route, Apache's page comes back ...
    let passed = s.proxy.get(&attack_on("anadir.jsp"));
    assert_eq!(passed.status, 200, "{}", passed.text());
    assert_eq!(passed.body, apache_page("anadir.jsp"));
    // ... and the same query is blocked on a page without the exclusion.
    let blocked = s.proxy.get(&attack_on("productos.jsp"));
    assert_eq!(blocked.status, 403, "{}", blocked.text());
    let line = audit_line(&s, &blocked);
    let attack_score = line["score"].as_f64().unwrap();
    assert!(attack_score >= 0.5, "{line}");
    assert_eq!(line["threshold"].as_f64().unwrap(), 0.5);

    // A route threshold under the fixture's floor score blocks even normal traffic there.
    let normal_elsewhere = s.proxy.get(&NORMAL.replace("anadir", "productos"));
    assert_eq!(normal_elsewhere.status, 200);
    let strict = s.proxy.get(&NORMAL.replace("anadir", "vaciar"));
    assert_eq!(strict.status, 403, "{}", strict.text());
    let line = audit_line(&s, &strict);
    assert!(
        (line["threshold"].as_f64().unwrap() - 0.02).abs() < 1e-6,
        "{line}"
    );
    assert!(line["score"].as_f64().unwrap() < 0.5, "{line}");

    // `methods: [POST]`: the form field is excluded on a POST, not on a GET of the same page.
    let post = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/pagar.jsp",
        &[FORM],
        Some(ATTACK_BODY),
    )
    .unwrap();
    assert_eq!(post.status, 200, "{}", post.text());
    assert_eq!(post.text(), "page tienda1/publico/pagar.jsp\n");
    let get = s.proxy.get(&format!(
        "/tienda1/publico/pagar.jsp?{}",
        String::from_utf8_lossy(ATTACK_BODY)
    ));
    assert_eq!(get.status, 403);
    let post_elsewhere = http(
        s.proxy.listen,
        "POST",
        "/tienda1/publico/productos.jsp",
        &[FORM],
        Some(ATTACK_BODY),
    )
    .unwrap();
    assert_eq!(post_elsewhere.status, 403);

    // `host:` matches the Host header (any case, any port); another host gets no exclusion.
    let with_host = |host: &str| {
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
            attack_on("caracteristicas.jsp")
        );
        raw_request(s.proxy.listen, request.as_bytes())
            .unwrap()
            .status
    };
    assert_eq!(with_host("Shop.Example:8080"), 200);
    assert_eq!(with_host("other.example"), 403);

    // Every verdict counted: the blocks above, the passes as allow.
    assert_eq!(s.proxy.metric(&verdict("block")), 5.0);
    assert_eq!(s.proxy.metric(&verdict("allow")), 4.0);
}

/// Requests sent one after another from two threads until `stop`: each status, 0 for a refused
/// or reset connection, and whether the body was Apache's page.
fn client_loop(listen: std::net::SocketAddr, stop: Arc<AtomicBool>) -> Vec<(u16, bool)> {
    let mut seen = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let answer = http(listen, "GET", NORMAL, &[], None);
        seen.push(match answer {
            Ok(r) => (r.status, r.text() == "page tienda1/publico/anadir.jsp\n"),
            Err(_) => (0, false),
        });
    }
    seen
}

#[test]
fn config_reload_under_load_loses_no_request_and_a_bad_config_keeps_the_old_one() {
    let s = stack("block", "");
    let base = std::fs::read_to_string(config_file(&s)).unwrap();
    let blocked = s.proxy.get(&attack_on("anadir.jsp"));
    assert_eq!(blocked.status, 403);
    let score = audit_line(&s, &blocked)["score"].as_f64().unwrap();
    assert!(
        score < 0.999,
        "the fixture's attack score {score} leaves room above it"
    );
    let above = (score + 1.0) / 2.0;

    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (listen, stop) = (s.proxy.listen, stop.clone());
            std::thread::spawn(move || client_loop(listen, stop))
        })
        .collect();
    // Six reloads while the clients run: the route threshold over the attack's score, then the
    // mode flipped, alternately by POST /reload and SIGHUP.
    for i in 0..6 {
        let mode = if i % 2 == 0 { "detect" } else { "block" };
        let extra = format!(
            "routes:\n  - path: /tienda1/publico/anadir.jsp\n    mode: {mode}\n    threshold: {above}\n"
        );
        write_config(&s, &base, &extra);
        if i % 3 == 2 {
            s.proxy.hangup();
            let want = f64::from(i + 1);
            let ok = r#"patewaf_config_reloads_total{result="ok"}"#;
            assert!(eventually(Duration::from_secs(10), || s.proxy.metric(ok) == want));
        } else {
            let (status, body) = reload(&s.proxy);
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["config"]["result"], "ok", "{body}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The last config is in force: the attack scores under the route's threshold and passes.
    assert_eq!(s.proxy.get(&attack_on("anadir.jsp")).status, 200);
    assert_eq!(s.proxy.get(&attack_on("productos.jsp")).status, 403);

    // An invalid config (a threshold out of range), which would otherwise exclude productos.jsp
    // and drop anadir.jsp's threshold, is refused; the old one stays in force.
    let bad = "routes:\n  - path: /tienda1/publico/productos.jsp\n    exclude: true\n  - path: /x\n    threshold: 1.5\n";
    write_config(&s, &base, bad);
    let (status, body) = reload(&s.proxy);
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["config"]["result"], "error", "{body}");
    let error = body["config"]["error"].as_str().unwrap();
    assert!(
        error.contains("routes[1]") && error.contains("threshold"),
        "{error}"
    );
    s.proxy.hangup();
    let errors = r#"patewaf_config_reloads_total{result="error"}"#;
    assert!(eventually(Duration::from_secs(10), || s
        .proxy
        .metric(errors)
        == 2.0));
    assert_eq!(s.proxy.get(&attack_on("anadir.jsp")).status, 200);
    assert_eq!(s.proxy.get(&attack_on("productos.jsp")).status, 403);

    stop.store(true, Ordering::SeqCst);
    let seen: Vec<(u16, bool)> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    eprintln!("{} requests answered during the reloads", seen.len());
    assert!(
        seen.len() >= 20,
        "only {} requests during the reloads",
        seen.len()
    );
    let lost: Vec<_> = seen
        .iter()
        .filter(|(st, page)| *st != 200 || !page)
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {}: {lost:?}",
        lost.len(),
        seen.len()
    );
    assert_eq!(
        s.proxy
            .metric(r#"patewaf_config_reloads_total{result="ok"}"#),
        6.0
    );
    assert!(s.proxy.log_text().contains("configuration rejected"));
}

#[test]
fn a_reload_names_the_keys_that_take_a_restart_and_keeps_their_old_values() {
    let s = stack("block", "");
    let base = std::fs::read_to_string(config_file(&s)).unwrap();
    let moved = base.replace(
        &format!("listen: \"{}\"", s.proxy.listen),
        "listen: \"127.0.0.1:1\"",
    );
    let moved = moved.replace("mode: block", "mode: detect");
    assert_ne!(moved, base);
    write_config(&s, &moved, "");
    let (status, body) = reload(&s.proxy);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["config"]["restart_needed"],
        serde_json::json!(["listen"])
    );
    // The mode changed in place; the proxy still listens where it started.
    assert_eq!(s.proxy.get(&attack_on("anadir.jsp")).status, 200);
    assert_eq!(s.proxy.metric(&verdict("flag")), 1.0);
    assert!(s.proxy.log_text().contains("`listen` changed"));
}

/// With a bundle whose featurizer reads the whole request (`placements`): an excluded header and
/// an excluded cookie are not scored, any other header or cookie still is.
#[test]
fn excluded_headers_and_cookies_are_not_scored_with_a_whole_request_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let apache = e2e::Apache::start(&tmp.path().join("apache"));
    let bundle = tmp.path().join("bundle");
    test_support::write_placement_fixture_bundle(&bundle, 0.5).unwrap();
    let extra = "exclude_parts: [{header: X-Search}]
routes:
  - path: /tienda1/publico/anadir.jsp
    exclude_parts: [{cookie: pref}]
";
    let config = e2e::proxy_config(
        &e2e::ProxyPorts::free(),
        apache.port,
        &bundle,
        "block",
        &tmp.path().join("audit.jsonl"),
        extra,
    );
    let proxy = Proxy::start(tmp.path(), &config);
    let xss = "<script>alert(document.cookie)</script>";
    let status = |page: &str, header: (&str, String)| {
        let target = format!("/tienda1/publico/{page}?id=3&cantidad=2");
        http(proxy.listen, "GET", &target, &[(header.0, &header.1)], None)
            .unwrap()
            .status
    };
    let cookie = format!(
        "JSESSIONID=ABC123; pref={}",
        xss.replace('<', "%3C").replace('>', "%3E")
    );
    // The header is excluded everywhere (any case); another header with the same value is not.
    assert_eq!(status("productos.jsp", ("x-search", xss.to_string())), 200);
    assert_eq!(status("productos.jsp", ("X-Other", xss.to_string())), 403);
    // The cookie is excluded on its route only.
    assert_eq!(status("anadir.jsp", ("Cookie", cookie.clone())), 200);
    assert_eq!(status("productos.jsp", ("Cookie", cookie.clone())), 403);
    let other_cookie = cookie.replace("pref=", "theme=");
    assert_eq!(status("anadir.jsp", ("Cookie", other_cookie)), 403);
    drop(proxy);
    drop(apache);
}

/// Reload under load where one reload changes a route's threshold and the bundle together: every
/// request is judged by one generation's pair, never the new threshold with the old model or the
/// old threshold with the new one. Detect mode and route thresholds under the fixture's floor
/// score flag (and so audit) every request, and the audit line names both.
#[test]
fn a_reload_changing_threshold_and_bundle_together_never_mixes_them() {
    let s = stack("detect", "");
    let base = std::fs::read_to_string(config_file(&s)).unwrap();
    let v2 = s.tmp.path().join("bundle-v2");
    test_support::write_fixture_bundle(&v2, None, 0.5, "v2").unwrap();
    let bundle_line = format!("bundle: \"{}\"", s.bundle.display());
    assert!(base.contains(&bundle_line), "{base}");
    // (bundle, the route threshold that goes with it)
    let generations = [("v1", &s.bundle, 0.02), ("v2", &v2, 0.03)];
    let configure = |(_, bundle, threshold): (&str, &std::path::PathBuf, f64)| {
        let text = base.replace(&bundle_line, &format!("bundle: \"{}\"", bundle.display()));
        let extra =
            format!("routes:\n  - path: /tienda1/publico/anadir.jsp\n    threshold: {threshold}\n");
        write_config(&s, &text, &extra);
    };
    configure(generations[0]);
    let (status, body) = reload(&s.proxy);
    assert_eq!(status, 200, "{body}");

    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (listen, stop) = (s.proxy.listen, stop.clone());
            std::thread::spawn(move || client_loop(listen, stop))
        })
        .collect();
    for i in 0..6u32 {
        let next = generations[(i as usize + 1) % 2];
        configure(next);
        if i % 3 == 2 {
            s.proxy.hangup();
            let want = f64::from(i + 2);
            let ok = r#"patewaf_config_reloads_total{result="ok"}"#;
            assert!(eventually(Duration::from_secs(10), || s.proxy.metric(ok) == want));
        } else {
            let (status, body) = reload(&s.proxy);
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["model_version"], next.0, "{body}");
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<(u16, bool)> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    let lost = seen.iter().filter(|(st, page)| *st != 200 || !page).count();
    assert_eq!(lost, 0, "{lost} of {} requests lost", seen.len());

    let lines: Vec<serde_json::Value> = json_lines(&s.audit)
        .into_iter()
        .filter(|l| l["target"].as_str() == Some(NORMAL))
        .collect();
    assert_eq!(lines.len(), seen.len(), "every request flagged and audited");
    let mut per_version = std::collections::BTreeMap::new();
    for line in &lines {
        let version = line["model_version"].as_str().expect("a model version");
        let threshold = line["threshold"].as_f64().expect("a threshold");
        let (_, _, want) = generations
            .iter()
            .find(|g| g.0 == version)
            .unwrap_or_else(|| panic!("unknown version in {line}"));
        assert!(
            (threshold - want).abs() < 1e-6,
            "threshold of another generation: {line}"
        );
        assert_eq!(line["verdict"], "flag", "{line}");
        *per_version.entry(version.to_string()).or_insert(0) += 1;
    }
    assert_eq!(
        per_version.len(),
        2,
        "both generations served: {per_version:?}"
    );
}

/// With a bundle whose featurizer reads the whole request: `{param: NAME}` leaves out the field
/// NAME of a JSON body (at any depth) and of a multipart form; the same attack in another
/// field, or on a route without the exclusion, is still blocked.
#[test]
fn excluded_json_and_multipart_fields_are_not_scored_with_a_whole_request_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let apache = e2e::Apache::start(&tmp.path().join("apache"));
    let bundle = tmp.path().join("bundle");
    test_support::write_placement_fixture_bundle(&bundle, 0.5).unwrap();
    let extra = "routes:
  - path: /tienda1/publico/anadir.jsp
    exclude_parts: [{param: comment}]
";
    let config = e2e::proxy_config(
        &e2e::ProxyPorts::free(),
        apache.port,
        &bundle,
        "block",
        &tmp.path().join("audit.jsonl"),
        extra,
    );
    let proxy = Proxy::start(tmp.path(), &config);
    let sqli = "' UNION SELECT password FROM usuarios--";
    let post = |page: &str, content_type: &str, body: &str| {
        let target = format!("/tienda1/publico/{page}");
        let headers = [("Content-Type", content_type)];
        let r = http(
            proxy.listen,
            "POST",
            &target,
            &headers,
            Some(body.as_bytes()),
        )
        .unwrap();
        (r.status, r.text())
    };
    let json = |comment: &str, name: &str| {
        format!(r#"{{"order":{{"comment":"{comment}","name":"{name}"}},"qty":2}}"#)
    };
    let multipart = |comment: &str, name: &str| {
        format!(
            "--B\r\nContent-Disposition: form-data; name=\"comment\"\r\n\r\n{comment}\r\n\
             --B\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n{name}\r\n--B--\r\n"
        )
    };
    let (json_type, multipart_type) = ("application/json", "multipart/form-data; boundary=B");
    for (content_type, body) in [
        (json_type, &json as &dyn Fn(&str, &str) -> String),
        (multipart_type, &multipart),
    ] {
        let (status, text) = post("anadir.jsp", content_type, &body(sqli, "bob"));
        assert_eq!(status, 200, "{content_type}: {text}");
        assert_eq!(text, "page tienda1/publico/anadir.jsp\n");
        let (status, _) = post("anadir.jsp", content_type, &body("fine", sqli));
        assert_eq!(
            status, 403,
            "{content_type}: the field not excluded is scored"
        );
        let (status, _) = post("productos.jsp", content_type, &body(sqli, "bob"));
        assert_eq!(status, 403, "{content_type}: no exclusion on that route");
    }
    drop(proxy);
    drop(apache);
}
