//! `pate-trainer run --public LOG`: the protected site's access log in place of the config's
//! `public:` role (Apache format by default), refused with a simulation config.
use std::path::Path;

mod common;
use common::{repo, trainer};

fn premise(name: &str) -> String {
    repo()
        .join("../shared/testdata/privacy-premise")
        .join(name)
        .display()
        .to_string()
}

/// An Apache access log (combined format) of the audit's public requests; returns its lines.
fn access_log(path: &Path) -> usize {
    let records = datasets::load(datasets::Format::Csv, Path::new(&premise("public.csv"))).unwrap();
    let lines: Vec<String> = records
        .iter()
        .map(|r| String::from_utf8_lossy(&r.target).into_owned())
        .filter(|t| !t.contains('"') && !t.contains('\\'))
        .map(|t| {
            format!(
                "192.0.2.7 - - [28/Nov/2026:00:00:00 +0000] \"GET {t} HTTP/1.1\" 200 512 \"-\" \
                 \"Mozilla/5.0\""
            )
        })
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
    lines.len()
}

#[test]
fn public_access_log_replaces_the_public_role() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    let lines = access_log(&log);
    assert!(lines > 500, "{lines}");
    let config = tmp.path().join("roles.yaml");
    std::fs::write(
        &config,
        format!(
            "seed: 7\ndevice: cpu\nthreads: 1\n\
             private: [{{path: {}, format: csv}}]\n\
             public: [{{path: {}, format: csv}}]\n\
             validation: [{{path: {}, format: csv}}]\n\
             test: [{{path: {}, format: csv}}]\n\
             featurizer: {{fit_on: public, config: {{top_k: 300}}}}\n\
             teachers: {{count: 5, holdout_fraction: 0, training: {{hidden: [], optimizer: fista, \
             l1: 0.0003, learning_rate: 4.0, max_epochs: 30, member_threshold: half}}}}\n\
             student: {{queries: 100, validation_max: 200, training: {{hidden: [16], \
             max_epochs: 20, patience: 4}}}}\n\
             privacy: {{mechanism: gnmax, sigma: 2.0}}\n",
            premise("private.csv"),
            premise("validation.csv"),
            premise("validation.csv"),
            premise("test.csv"),
        ),
    )
    .unwrap();
    // The config's own public: file is the validation file, refused as a file in two roles:
    // only --public makes the config usable, so the run below shows the flag replaced the role.
    let run = |extra: &[&str], out: &Path| {
        trainer()
            .args(["run", "--config"])
            .arg(&config)
            .arg("--out")
            .arg(out)
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = run(&[], &tmp.path().join("refused"));
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("under public: and validation:"), "{stderr}");
    let out = tmp.path().join("run");
    let done = run(&["--public", log.to_str().unwrap()], &out);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["splits"]["public"], lines);
    let effective = std::fs::read_to_string(out.join("config.yaml")).unwrap();
    assert!(
        effective.contains(&log.display().to_string()) && effective.contains("format: apache"),
        "{effective}"
    );
}

#[test]
fn public_flag_is_refused_with_a_simulation_config() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    access_log(&log);
    let out = trainer()
        .args(["run", "--config"])
        .arg(repo().join("configs/quick.yaml"))
        .arg("--out")
        .arg(tmp.path().join("run"))
        .arg("--public")
        .arg(&log)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--public replaces"), "{stderr}");
    assert!(!tmp.path().join("run/report.json").exists());
}

/// With `site:` (configs/site.yaml) the site's log must stand for its visitors: a log of one
/// client, or without a single request line, is refused before anything is written, naming it.
#[test]
fn a_site_log_of_one_client_or_without_requests_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let one_client = tmp.path().join("one-client.log");
    access_log(&one_client);
    let no_request = tmp.path().join("error.log");
    std::fs::write(&no_request, "\"-\" 400\n").unwrap();
    for (log, expected) in [
        (&one_client, "come from one client"),
        (&no_request, "error.log"),
    ] {
        let out = trainer()
            .args(["run", "--config"])
            .arg(repo().join("configs/site.yaml"))
            .arg("--out")
            .arg(tmp.path().join("run"))
            .arg("--public")
            .arg(log)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!tmp.path().join("run").exists());
    }
}
