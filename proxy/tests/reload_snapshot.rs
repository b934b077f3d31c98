//! A reload puts the configuration and the bundle in force as one snapshot (issue 44): a request
//! takes one snapshot and every phase of it reads that one, so the pair it is judged by is
//! always of one generation — the configuration that named the bundle, and the model loaded
//! from it with that configuration's threshold.
//!
//! Two fixture bundles (`v1` in `a/`, `v2` in `b/`) and two configurations that differ in the
//! bundle, the global threshold (which the model takes at load) and a route's threshold (which
//! the configuration alone holds): in every snapshot all three must agree.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use proxy::state::{Shared, Snapshot};
use proxy::Config;
use test_support::write_fixture_bundle;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A proxy configuration naming bundle `bundle` of `dir`, with `threshold` globally and on the
/// route `/r` (listening addresses are never bound here).
fn yaml(dir: &Path, ports: (u16, u16), bundle: &str, threshold: f32) -> String {
    format!(
        "listen: \"127.0.0.1:{}\"\nupstream: \"127.0.0.1:1\"\nadmin_listen: \"127.0.0.1:{}\"\n\
         bundle: \"{}\"\naudit_log: \"{}\"\nthreads: 1\nmode: block\nthreshold: {threshold}\n\
         routes:\n  - path: /r\n    threshold: {threshold}\n",
        ports.0,
        ports.1,
        dir.join(bundle).display(),
        dir.join("audit.jsonl").display(),
    )
}

/// The threshold each bundle goes with in these tests.
fn threshold_of(version: &str) -> f32 {
    match version {
        "v1" => 0.25,
        "v2" => 0.75,
        other => panic!("unexpected model version {other}"),
    }
}

struct Setup {
    dir: PathBuf,
    ports: (u16, u16),
    shared: Arc<Shared>,
    runtime: tokio::runtime::Runtime,
}

impl Setup {
    /// Bundles `a` (v1) and `b` (v2), and the proxy state loaded from a configuration file that
    /// names `a`.
    fn new(name: &str) -> Setup {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("reload-snapshot-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write_fixture_bundle(&dir.join("a"), None, 0.5, "v1").expect("bundle a");
        write_fixture_bundle(&dir.join("b"), None, 0.5, "v2").expect("bundle b");
        let ports = (free_port(), free_port());
        let file = dir.join("proxy.yaml");
        std::fs::write(&file, yaml(&dir, ports, "a", threshold_of("v1"))).unwrap();
        let config = Config::load(&file).expect("a valid configuration");
        let shared = proxy::server::load(config).expect("ONNX Runtime and the bundle load");
        shared.set_config_file(file);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        Setup {
            dir,
            ports,
            shared,
            runtime,
        }
    }

    /// Rewrites the configuration file to name `bundle` with `threshold`.
    fn configure(&self, bundle: &str, threshold: f32) {
        let text = yaml(&self.dir, self.ports, bundle, threshold);
        std::fs::write(self.dir.join("proxy.yaml"), text).unwrap();
    }

    fn reload(&self) -> proxy::state::ReloadReport {
        self.runtime.block_on(self.shared.reload())
    }
}

/// The snapshot's configuration and model are of one generation: the model is the bundle the
/// configuration names, loaded with its threshold, and the route's threshold (the configuration
/// alone) is the one that goes with that bundle. Returns the model's version.
fn check_pair(snapshot: &Snapshot) -> String {
    let model = snapshot.model.as_ref().expect("a model in force");
    let config = &snapshot.config;
    assert_eq!(model.dir, config.bundle, "{snapshot:?}");
    assert_eq!(Some(model.threshold), config.threshold, "{snapshot:?}");
    let route = config.routes[0].threshold;
    assert_eq!(route, Some(threshold_of(&model.version)), "{snapshot:?}");
    model.version.clone()
}

#[test]
fn a_reload_puts_the_new_configuration_and_model_in_force_as_one_generation() {
    let s = Setup::new("one");
    let before = s.shared.snapshot();
    assert_eq!(check_pair(&before), "v1");

    s.configure("b", threshold_of("v2"));
    let report = s.reload();
    assert!(matches!(report.active, Some(Ok(_))), "{report:?}");
    let after = s.shared.snapshot();
    assert_eq!(check_pair(&after), "v2");
    assert_eq!(after.generation, before.generation + 1);
    // A request that started before the reload still holds its generation whole.
    assert_eq!(check_pair(&before), "v1");

    // A valid configuration whose bundle is rejected (one byte of model.onnx changed): nothing
    // is put in force, not even the configuration's new threshold.
    write_fixture_bundle(&s.dir.join("c"), None, 0.5, "v1").unwrap();
    let onnx = s.dir.join("c").join("model.onnx");
    let mut bytes = std::fs::read(&onnx).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&onnx, bytes).unwrap();
    s.configure("c", threshold_of("v1"));
    let report = s.reload();
    assert!(matches!(report.active, Some(Err(_))), "{report:?}");
    assert!(matches!(&report.config, Ok(c) if !c.applied), "{report:?}");
    let kept = s.shared.snapshot();
    assert!(
        Arc::ptr_eq(&kept, &after),
        "the old snapshot stays in force"
    );
    let errors = s
        .shared
        .metrics
        .config_reloads
        .with_label_values(&["error"]);
    assert_eq!(errors.get(), 1);
    let ok = s.shared.metrics.config_reloads.with_label_values(&["ok"]);
    assert_eq!(ok.get(), 1);
}

#[test]
fn readers_never_see_one_generations_configuration_with_anothers_model() {
    let s = Setup::new("readers");
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(std::sync::Barrier::new(3));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (shared, stop) = (s.shared.clone(), stop.clone());
            let started = started.clone();
            std::thread::spawn(move || {
                started.wait();
                let (mut seen, mut last) = (0u64, 0u64);
                let mut versions = std::collections::BTreeSet::new();
                while !stop.load(Ordering::SeqCst) {
                    let snapshot = shared.snapshot();
                    versions.insert(check_pair(&snapshot));
                    assert!(snapshot.generation >= last, "generations only go up");
                    last = snapshot.generation;
                    seen += 1;
                }
                (seen, versions)
            })
        })
        .collect();
    started.wait();
    // Each reload changes the bundle and both thresholds together.
    for i in 0..8 {
        let bundle = if i % 2 == 0 { "b" } else { "a" };
        let version = if bundle == "a" { "v1" } else { "v2" };
        s.configure(bundle, threshold_of(version));
        let report = s.reload();
        assert!(matches!(report.active, Some(Ok(_))), "{report:?}");
        assert_eq!(check_pair(&s.shared.snapshot()), version);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    stop.store(true, Ordering::SeqCst);
    for reader in readers {
        let (seen, versions) = reader.join().expect("no reader saw a mixed pair");
        assert!(seen > 0);
        assert_eq!(versions.len(), 2, "both generations observed: {versions:?}");
    }
    let ok = s.shared.metrics.config_reloads.with_label_values(&["ok"]);
    assert_eq!(ok.get(), 8);
}
