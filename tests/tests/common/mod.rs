//! What both end-to-end proxy test files start: Apache on a loopback port, a fixture bundle and the
//! release `pate-proxy` in front of it.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;

use e2e::{proxy_config, Apache, Proxy, ProxyPorts};
use tempfile::TempDir;
use test_support::write_fixture_bundle;

/// Fields drop in declaration order: the proxy, then Apache, then the directory they use.
pub struct Stack {
    pub proxy: Proxy,
    pub apache: Apache,
    pub bundle: PathBuf,
    pub audit: PathBuf,
    pub tmp: TempDir,
}

/// Apache, a fixture bundle (version `v1`) and the proxy in `mode` with `extra` config keys.
pub fn stack(mode: &str, extra: &str) -> Stack {
    let tmp = tempfile::tempdir().unwrap();
    let apache = Apache::start(&tmp.path().join("apache"));
    let bundle = tmp.path().join("bundle");
    write_fixture_bundle(&bundle, None, 0.5, "v1").unwrap();
    let audit = tmp.path().join("audit.jsonl");
    let config = proxy_config(
        &ProxyPorts::free(),
        apache.port,
        &bundle,
        mode,
        &audit,
        extra,
    );
    let proxy = Proxy::start(tmp.path(), &config);
    Stack {
        proxy,
        apache,
        bundle,
        audit,
        tmp,
    }
}

/// The requests counter of one verdict, as its metric line names it.
pub fn verdict(v: &str) -> String {
    format!("patewaf_requests_total{{verdict=\"{v}\"}}")
}
