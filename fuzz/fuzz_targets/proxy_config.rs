//! Proxy configuration parsing (`proxy::Config::from_yaml`) on arbitrary text.
//!
//! Property: never panics (serde_yaml errors and the semantic checks of `Config::validate` must
//! come back as errors); an accepted configuration answers route look-ups.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(config) = proxy::Config::from_yaml(text, Path::new("fuzz/proxy.yaml")) else { return };
    for path in ["/", "/admin/../x", "/api/v1/items?x=1", ""] {
        let _ = config.route_for(path);
        let _ = proxy::config::normalize_path(path);
    }
    let _ = config.upgrade_sock_path();
});
