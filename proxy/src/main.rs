//! `pate-proxy` (skeleton; see the proxy issue).
fn main() {}
