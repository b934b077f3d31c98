//! `patewaf_shadow_*` series only where a shadow bundle is configured (issue 44): a proxy
//! without `shadow_bundle` exports none of them; with one they appear at its first load, and a
//! rejected one is still counted (`patewaf_shadow_loads_total{result="error"}`).

use std::path::Path;

use proxy::Config;
use test_support::write_fixture_bundle;

/// The exposition of a proxy loaded (not served) from a config with `extra` keys.
fn exposition(dir: &Path, extra: &str) -> String {
    let yaml = format!(
        "listen: \"127.0.0.1:1\"\nupstream: \"127.0.0.1:2\"\nadmin_listen: \"127.0.0.1:3\"\n\
         bundle: \"{}\"\naudit_log: \"{}\"\nthreads: 1\n{extra}",
        dir.join("bundle").display(),
        dir.join("audit.jsonl").display(),
    );
    let config = Config::from_yaml(&yaml, &dir.join("proxy.yaml")).unwrap();
    let shared = proxy::server::load(config).expect("ONNX Runtime and the bundle load");
    String::from_utf8(shared.metrics.render()).unwrap()
}

#[test]
fn shadow_series_only_with_a_shadow_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_fixture_bundle(&dir.join("bundle"), None, 0.5, "v1").unwrap();
    write_fixture_bundle(&dir.join("shadow"), None, 0.5, "s1").unwrap();

    let none = exposition(dir, "");
    assert!(none.contains("patewaf_ready "), "{none}");
    assert!(!none.contains("patewaf_shadow_"), "{none}");

    let shadow = format!("shadow_bundle: \"{}\"\n", dir.join("shadow").display());
    let with = exposition(dir, &shadow);
    for sample in [
        "patewaf_shadow_model_info{version=\"s1\"} 1",
        "patewaf_shadow_loads_total{result=\"ok\"} 1",
        "patewaf_shadow_requests_total{active_verdict=\"allow\",shadow_verdict=\"block\"} 0",
        "patewaf_shadow_score_count 0",
    ] {
        assert!(with.contains(sample), "missing {sample} in\n{with}");
    }

    let missing = format!("shadow_bundle: \"{}\"\n", dir.join("absent").display());
    let rejected = exposition(dir, &missing);
    assert!(
        rejected.contains("patewaf_shadow_loads_total{result=\"error\"} 1"),
        "{rejected}"
    );
    assert!(
        !rejected.contains("patewaf_shadow_model_info{"),
        "{rejected}"
    );
}
