//! The README's onboarding path, end to end: `pate-trainer run --config configs/site.yaml
//! --public <an Apache access log>` builds a bundle for that site from its unlabelled traffic
//! (no labelled data of the site), and pate-proxy serves it in block mode in front of a real
//! Apache: the site's own requests pass, attacks placed into them are blocked.

use std::process::Command;

use e2e::{bundle_yaml_leak, proxy_config, release_binary, repo_root, Apache, Proxy, ProxyPorts};

/// The request targets of an Apache access log (the quoted request line's second word).
fn targets(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|line| line.split('"').nth(1))
        .filter_map(|request| request.split(' ').nth(1))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_bundle_from_an_unlabelled_access_log_passes_the_site_and_blocks_attacks() {
    let trainer = release_binary("pate-trainer", "PATE_TRAINER_BIN");
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("mysite");
    let log = repo_root().join("data/sample/apache_access_sample.log");
    let out = Command::new(&trainer)
        .args(["run", "--config"])
        .arg(repo_root().join("configs/site.yaml"))
        .arg("--public")
        .arg(&log)
        .arg("--out")
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pate-trainer run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["student_side_labels"], 0, "no labelled site data");
    // This log's held-out window has no request a public detector calls an attack.
    let traffic = &report["site_threshold_traffic"];
    let count = |key: &str| {
        traffic[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key}: {traffic}"))
    };
    assert_eq!(count("held_out"), 60, "{traffic}");
    assert_eq!(count("known_attacks"), 0, "{traffic}");
    assert!(
        report["test_data"]
            .as_str()
            .unwrap()
            .starts_with("no labelled test data"),
        "{}",
        report["test_data"]
    );
    assert!(
        report["served_test"]["fpr"].is_number(),
        "the test as served (content only): {}",
        report["served_test"]
    );
    // bundle.yaml publishes the whitelist only, here too.
    let yaml = std::fs::read_to_string(run.join("bundle/bundle.yaml")).unwrap();
    let leak = bundle_yaml_leak(&yaml);
    assert!(leak.is_none(), "bundle.yaml holds {leak:?}:\n{yaml}");
    let manifest = bundle::Bundle::load(&run.join("bundle")).unwrap().manifest;
    assert_eq!(
        manifest.format_checks,
        Some(false),
        "content only, as recommended"
    );
    let epsilon = manifest.privacy.as_ref().and_then(|p| p.published_epsilon);
    assert!(epsilon.is_some_and(|e| e <= 1.0), "published ε {epsilon:?}");

    let apache = Apache::start(&tmp.path().join("apache"));
    let config = proxy_config(
        &ProxyPorts::free(),
        apache.port,
        &run.join("bundle"),
        "block",
        &tmp.path().join("audit.jsonl"),
        "",
    );
    let proxy = Proxy::start(tmp.path(), &config);

    let site = targets(&std::fs::read_to_string(&log).unwrap());
    assert!(site.len() >= 250, "{} targets", site.len());
    let blocked = |targets: &[String]| {
        targets
            .iter()
            .filter(|t| proxy.get(t).status == 403)
            .count()
    };
    let site_blocked = blocked(&site);
    assert!(
        site_blocked * 100 <= 5 * site.len(),
        "{site_blocked} of the site's {} own requests blocked",
        site.len()
    );
    // The site's most frequent pages (pages it never served are judged by content alone, and a
    // 300-line log makes a small model: EVALUATION.md, "Any site, no labels").
    for page in ["/", "/favicon.ico"] {
        assert_ne!(proxy.get(page).status, 403, "{page} blocked");
    }
    let attacks: Vec<String> = [
        "/?id=1%27%20OR%20%271%27%3D%271",
        "/blog/?q=%3Cscript%3Ealert(document.cookie)%3C%2Fscript%3E",
        "/../../../../etc/passwd",
        "/index.php?page=..%2F..%2F..%2Fetc%2Fpasswd",
        "/search?q=1%20UNION%20SELECT%20username%2Cpassword%20FROM%20users--",
        "/?cmd=%3Bcat%20%2Fetc%2Fshadow",
        "/projects/?x=%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E",
        "/?q=1%27%3B%20DROP%20TABLE%20users%3B--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let attacks_blocked = blocked(&attacks);
    assert!(
        attacks_blocked * 8 >= attacks.len() * 5,
        "only {attacks_blocked} of {} attacks blocked",
        attacks.len()
    );
}
