//! `pate-experiments replay` against a real Apache + ModSecurity 2 + OWASP CRS (paranoia level 1,
//! anomaly threshold 5) configured by `bench/crs/crs-conf.sh`, on CSIC 2010 test part A.
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn csic() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets/csic2010")
}

/// Apache started from a generated config; stopped when dropped (also when an assertion fails).
struct Apache {
    conf: PathBuf,
}

impl Apache {
    fn start(dir: &Path, paranoia_level: u8) -> (Apache, u16) {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let out = Command::new(repo_root().join("bench/crs/crs-conf.sh"))
            .arg(dir)
            .arg(port.to_string())
            .arg(paranoia_level.to_string())
            .output()
            .expect("run bench/crs/crs-conf.sh");
        assert!(
            out.status.success(),
            "crs-conf.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let conf = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        let started = Command::new("apache2")
            .arg("-f")
            .arg(&conf)
            .args(["-k", "start"])
            .output()
            .expect("run apache2");
        assert!(
            started.status.success(),
            "apache2 -k start: {}",
            String::from_utf8_lossy(&started.stderr)
        );
        let apache = Apache { conf };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let up = (0..100).any(|_| {
            let ok = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok();
            if !ok {
                std::thread::sleep(Duration::from_millis(100));
            }
            ok
        });
        assert!(
            up,
            "Apache did not listen on {addr}; error log: {}",
            std::fs::read_to_string(dir.join("logs/error.log")).unwrap_or_default()
        );
        (apache, port)
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        let _ = Command::new("apache2")
            .arg("-f")
            .arg(&self.conf)
            .args(["-k", "stop"])
            .output();
        let pid = self.conf.parent().unwrap().join("logs/httpd.pid");
        for _ in 0..50 {
            if !pid.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn replay(port: u16, out: &Path, extra: &[&str]) -> (serde_json::Value, Vec<serde_json::Value>) {
    let url = format!("http://127.0.0.1:{port}");
    let normal = csic().join("normalTrafficTest_A.txt");
    let anomalous = csic().join("anomalousTrafficTest_A.txt");
    let run = Command::new(env!("CARGO_BIN_EXE_pate-experiments"))
        .args([
            "replay", "--url", &url, "--format", "csic", "--limit", "3", "--out",
        ])
        .arg(out)
        .args(extra)
        .arg(&normal)
        .arg(&anomalous)
        .output()
        .expect("run pate-experiments replay");
    assert!(
        run.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&run.stdout).expect("the summary is JSON");
    let verdicts = std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each verdict line is JSON"))
        .collect();
    (summary, verdicts)
}

#[test]
fn crs_paranoia_1_passes_csic_normal_and_blocks_sql_injection() {
    let tmp = tempfile::tempdir().unwrap();
    // Apache's children run as www-data and must reach the docroot inside the temp dir.
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (_apache, port) = Apache::start(&tmp.path().join("apache"), 1);

    // The first three requests of each file. Anomalous #1 (line 1) is
    // `cantidad=';+DROP+TABLE+usuarios;+SELECT+*+FROM+datos+WHERE+nombre+LIKE+'%`.
    let (summary, verdicts) = replay(
        port,
        &tmp.path().join("verdicts.jsonl"),
        &["--drop-header", "Accept-Charset"],
    );
    assert_eq!(verdicts.len(), 6, "{verdicts:?}");
    for v in &verdicts[..3] {
        assert_eq!(v["label"], "benign", "{v}");
        assert!(
            v["status"].as_u64().is_some_and(|s| s != 403),
            "a CSIC normal request was blocked: {v}"
        );
        assert_eq!(v["blocked"], false, "{v}");
        assert_eq!(v["request_hash"].as_str().map(str::len), Some(16), "{v}");
    }
    let sqli = &verdicts[3];
    assert_eq!(
        (sqli["label"].as_str(), sqli["line"].as_u64()),
        (Some("malicious"), Some(1)),
        "{sqli}"
    );
    assert_eq!(
        sqli["status"], 403,
        "CRS PL1 let the DROP TABLE injection through: {sqli}"
    );
    assert_eq!(sqli["blocked"], true);
    for (i, v) in verdicts.iter().enumerate() {
        assert_eq!(v["index"], i, "verdicts are in input order: {v}");
    }
    assert_eq!(summary["benign"]["requests"], 3);
    assert_eq!(summary["malicious"]["requests"], 3);
    assert_eq!(summary["fpr"], 0.0);
    assert!(
        summary["tpr"].as_f64().unwrap() >= 1.0 / 3.0 - 1e-9,
        "{summary}"
    );
    assert_eq!(summary["errors"], 0);

    // With CSIC's own Accept-Charset header, Debian's CRS 3.3.4 blocks even normal traffic
    // (rule 920450, restricted headers): the reason `--drop-header Accept-Charset` exists.
    let (summary, verdicts) = replay(port, &tmp.path().join("with-charset.jsonl"), &[]);
    assert_eq!(verdicts[0]["status"], 403, "{:?}", verdicts[0]);
    assert_eq!(summary["fpr"], 1.0, "{summary}");
    let audit = std::fs::read_to_string(tmp.path().join("apache/logs/modsec_audit.log")).unwrap();
    assert!(
        audit.contains("id \"920450\""),
        "the audit log names the restricted-header rule"
    );
}

#[test]
fn replay_refuses_non_loopback_targets_and_missing_files() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("v.jsonl");
    let normal = csic().join("normalTrafficTest_A.txt");
    let run = Command::new(env!("CARGO_BIN_EXE_pate-experiments"))
        .args([
            "replay",
            "--url",
            "http://192.0.2.1:80",
            "--format",
            "csic",
            "--out",
        ])
        .arg(&out)
        .arg(&normal)
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("loopback"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let missing = tmp.path().join("nope.txt");
    let run = Command::new(env!("CARGO_BIN_EXE_pate-experiments"))
        .args([
            "replay",
            "--url",
            "http://127.0.0.1:9",
            "--format",
            "csic",
            "--out",
        ])
        .arg(&out)
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("nope.txt"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(!out.exists(), "no partial verdict file");
}
