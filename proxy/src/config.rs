//! The proxy's one YAML configuration file.
//!
//! The top-level keys `listen`, `upstream`, `admin_listen`, `bundle`, `mode` and `audit_log` are a
//! fixed contract (scripts, docs and the deployment examples rely on them); every other key has a
//! default. Unknown keys are rejected (`deny_unknown_fields`) so that a typo such as `treshold`
//! is an error naming the key, not a silently ignored setting.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ProxyError;

/// The largest request body the proxy buffers before connecting upstream.
///
/// pingora replays a buffered body to the upstream from its retry buffer, which holds at most
/// 64 KiB (`BODY_BUF_LIMIT` in pingora-core 0.9); a larger buffer would lose bytes, so the limit
/// is capped there and `check-config` rejects anything above it.
pub const MAX_BODY_LIMIT_BYTES: usize = 64 * 1024;

/// What the proxy does with a request whose score is at or above the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Answer 403 before any byte reaches the upstream.
    Block,
    /// Forward everything and record the verdict (the safe default, as ModSecurity and Coraza ship).
    Detect,
    /// No WAF: a plain pingora passthrough that neither featurizes nor scores (the protocol
    /// limits and the forwarding headers stay); every request counts as `excluded`. The
    /// baseline `bench/proxy.sh` measures the hop with, and a switch to take the model out of
    /// the path without taking the proxy out. Global only (a route uses `exclude: true`).
    Off,
}

impl Mode {
    /// The lowercase name used in the audit log and the YAML file.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Block => "block",
            Mode::Detect => "detect",
            Mode::Off => "off",
        }
    }
}

/// What the proxy does when scoring fails (no model, featurizer or ONNX Runtime error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Log, count, forward the request.
    Open,
    /// Log, count, answer 503.
    Closed,
}

/// What the proxy does with an urlencoded body larger than `body_limit_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyOverLimit {
    /// Score the first `body_limit_bytes` bytes, forward the whole body. A body whose
    /// Content-Length exceeds 64 KiB is forwarded with only its URI scored (pingora cannot replay
    /// more than 64 KiB read before the verdict); `reject` closes that gap.
    Truncate,
    /// Answer 413 without connecting upstream.
    Reject,
}

/// What the proxy does with a request target (path and query) longer than `uri_limit_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UriOverLimit {
    /// Answer 414 without connecting upstream (the default: what the model cannot see past its
    /// featurizer's `max_input_bytes` could hide an attack behind benign padding).
    Reject,
    /// Score what the featurizer reads (its first `max_input_bytes` bytes) and forward the
    /// whole target.
    Truncate,
}

/// How the proxy runs the student on each request's feature vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScorerKind {
    /// The default: `native` for a linear student (one layer: a sparse dot product, the same sum
    /// as ORT's to float rounding), `onnxruntime` for a network with hidden layers. Either is
    /// checked against ONNX Runtime at every load.
    Auto,
    /// ONNX Runtime (the product definition): every request runs through an ORT
    /// session of the bundle's network with a sparse first layer (`bundle::Scorer::score_sparse`,
    /// a graph built in memory from `model.onnx`), one session per worker thread.
    Onnxruntime,
    /// A native Rust forward pass of the same network (`bundle::SparseMlp`), checked against
    /// ONNX Runtime at every load; faster per call than ORT's per-call floor.
    Native,
}

impl ScorerKind {
    /// The lowercase name used in the YAML file, the logs and `/ready`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScorerKind::Auto => "auto",
            ScorerKind::Onnxruntime => "onnxruntime",
            ScorerKind::Native => "native",
        }
    }
}

/// Which request paths a [`Route`] covers. In YAML, at most one of the keys `path` (exact match)
/// or `prefix` (path prefix), beside the route's other keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteMatch {
    /// Exact path (without the query).
    Exact(String),
    /// Path prefix.
    Prefix(String),
}

impl RouteMatch {
    /// Whether `path` (the request path without the query, normalized) is covered.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            RouteMatch::Exact(exact) => path == exact,
            RouteMatch::Prefix(prefix) => path.starts_with(prefix.as_str()),
        }
    }

    /// The path or prefix as written.
    pub fn pattern(&self) -> &str {
        match self {
            RouteMatch::Exact(p) | RouteMatch::Prefix(p) => p,
        }
    }
}

/// A part of a request left out of scoring (`exclude_parts`, global or a route's): in YAML
/// `{param: NAME}`, `{header: NAME}` or `{cookie: NAME}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PartYaml", into = "PartYaml")]
pub enum ExcludedPart {
    /// A query parameter or urlencoded form field, by its name once percent-decoded
    /// (case-sensitive, as applications read it); with a featurizer that reads the whole
    /// request, also a JSON member, multipart field, XML element or attribute of that name
    /// ([`featurizer::ExcludedFields`]).
    Param(String),
    /// A request header, by name (case-insensitive, RFC 9110 §5.1); stored lower-cased.
    Header(String),
    /// A cookie of the `Cookie` header, by name (case-sensitive, RFC 6265 §5.4).
    Cookie(String),
}

/// An `exclude_parts` entry as written: exactly one of its keys.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartYaml {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    param: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cookie: Option<String>,
}

impl TryFrom<PartYaml> for ExcludedPart {
    type Error = RouteError;

    /// Checks the name (what HTTP allows there) and lower-cases a header name.
    fn try_from(raw: PartYaml) -> Result<Self, RouteError> {
        const TOKEN: &str = "letters, digits and !#$%&'*+-.^_`|~";
        let bad = |kind: &str, name: &str, rule: String| {
            Err(RouteError::Part(format!(
                "`{kind}: {name:?}`: expected {rule}"
            )))
        };
        match (raw.param, raw.header, raw.cookie) {
            (Some(name), None, None) if name.is_empty() => {
                bad("param", &name, "a parameter name".into())
            }
            (Some(name), None, None) => Ok(ExcludedPart::Param(name)),
            (None, Some(name), None) if !is_token(&name) => {
                bad("header", &name, format!("a header name ({TOKEN})"))
            }
            (None, Some(name), None) => Ok(ExcludedPart::Header(name.to_ascii_lowercase())),
            (None, None, Some(name)) if !is_token(&name) => {
                bad("cookie", &name, format!("a cookie name ({TOKEN})"))
            }
            (None, None, Some(name)) => Ok(ExcludedPart::Cookie(name)),
            _ => Err(RouteError::Part(
                "expected exactly one of `param`, `header` or `cookie`".into(),
            )),
        }
    }
}

impl From<ExcludedPart> for PartYaml {
    fn from(part: ExcludedPart) -> Self {
        match part {
            ExcludedPart::Param(n) => PartYaml {
                param: Some(n),
                ..PartYaml::default()
            },
            ExcludedPart::Header(n) => PartYaml {
                header: Some(n),
                ..PartYaml::default()
            },
            ExcludedPart::Cookie(n) => PartYaml {
                cookie: Some(n),
                ..PartYaml::default()
            },
        }
    }
}

/// Whether `text` is an HTTP token (RFC 9110 §5.6.2): a header name, a method, a cookie name.
pub fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What a route is matched on: the request's method, host (`Host` header or absolute-form
/// authority) and path (without the query).
#[derive(Debug, Clone, Copy)]
pub struct RouteRequest<'a> {
    /// The method as sent (`GET`).
    pub method: &'a str,
    /// The host as sent, with its port if any; `None` when the request names none.
    pub host: Option<&'a str>,
    /// The path without the query, as sent (normalized for matching).
    pub path: &'a str,
}

impl<'a> RouteRequest<'a> {
    /// A `GET` of `path` with no host (tests, examples).
    pub fn get(path: &'a str) -> Self {
        RouteRequest {
            method: "GET",
            host: None,
            path,
        }
    }
}

/// Whether the request's `host` (as sent) is `wanted` (lower-case, from the config): host names
/// compare case-insensitively and without a trailing dot; a `wanted` without a port matches any
/// port.
fn host_matches(wanted: &str, host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    let host = host.trim();
    let (name, port) = split_host_port(host);
    let (wanted_name, wanted_port) = split_host_port(wanted);
    let same_name = name
        .trim_end_matches('.')
        .eq_ignore_ascii_case(wanted_name.trim_end_matches('.'));
    same_name && (wanted_port.is_none() || wanted_port == port)
}

/// `host[:port]` (or `[v6]:port`) split at the port.
fn split_host_port(host: &str) -> (&str, Option<&str>) {
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((v6, tail)) => (v6, tail.strip_prefix(':')),
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => (name, Some(port)),
        _ => (host, None),
    }
}

/// One per-route rule; the first rule whose path, method and host match applies.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(into = "RouteYaml")]
pub struct Route {
    /// The paths this rule applies to; `None`: every path.
    pub matches: Option<RouteMatch>,
    /// The methods this rule applies to (exact, case-sensitive); empty: every method.
    pub methods: Vec<String>,
    /// The host this rule applies to (lower-case, optionally `:port`); `None`: every host.
    pub host: Option<String>,
    /// `true`: forward without scoring (counted as `verdict="excluded"`).
    pub exclude: bool,
    /// Mode for this route, overriding the global `mode`.
    pub mode: Option<Mode>,
    /// The site's format checks for this route, overriding the global `format_checks` (e.g.
    /// `false` under an API prefix the public pool does not cover).
    pub format_checks: Option<bool>,
    /// Threshold for this route's scores, overriding the global `threshold` and the bundle's
    /// (`threshold` or `content_only_threshold` alike): see [`Config::threshold_override_for`].
    pub threshold: Option<f32>,
    /// Parts not scored on this route, besides the global `exclude_parts`.
    pub exclude_parts: Vec<ExcludedPart>,
}

impl Route {
    /// Whether the request is covered by this rule; `path` is already normalized.
    pub fn matches(&self, request: &RouteRequest<'_>, normalized_path: &str) -> bool {
        self.matches
            .as_ref()
            .is_none_or(|m| m.matches(normalized_path))
            && (self.methods.is_empty() || self.methods.iter().any(|m| m == request.method))
            && self
                .host
                .as_deref()
                .is_none_or(|h| host_matches(h, request.host))
    }
}

/// A route as written in YAML; checked into a [`Route`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteYaml {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    methods: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host: Option<String>,
    #[serde(default)]
    exclude: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    format_checks: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    threshold: Option<f32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exclude_parts: Vec<ExcludedPart>,
}

/// Reads an IP:port address; the error says what is expected (serde's own says only "invalid
/// socket address syntax"), and serde_yaml prefixes it with the key and its line.
fn socket_addr<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    // A visitor, so that the error is raised while serde_yaml still knows where it is.
    struct Addr;
    impl serde::de::Visitor<'_> for Addr {
        type Value = SocketAddr;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an IP:port address such as \"127.0.0.1:8080\"")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SocketAddr, E> {
            text.parse().map_err(|e| {
                E::custom(format!(
                    "expected an IP:port address such as \"127.0.0.1:8080\" (no host name), got {text:?} ({e})"
                ))
            })
        }
    }
    d.deserialize_str(Addr)
}

/// Reads `routes`, naming the entry (`routes[i]`) that breaks a rule.
fn deserialize_routes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Route>, D::Error> {
    let raw = Vec::<RouteYaml>::deserialize(d)?;
    raw.into_iter()
        .enumerate()
        .map(|(i, r)| {
            Route::try_from(r).map_err(|e| serde::de::Error::custom(format!("routes[{i}]: {e}")))
        })
        .collect()
}

/// Why a `routes:` entry (or an `exclude_parts:` entry) is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// Both `path` and `prefix`.
    #[error("expected at most one of `path` or `prefix`")]
    PathAndPrefix,
    /// None of `path`, `prefix`, `methods`, `host`: the route would match every request.
    #[error("expected what the route matches: `path`, `prefix`, `methods` or `host`")]
    MatchesNothing,
    /// A path or prefix not starting with '/'.
    #[error("a path or prefix starts with '/', got {0:?}")]
    NotAbsolute(String),
    /// `mode: off` on a route.
    #[error("`mode: off` is global only; use `exclude: true` for a route")]
    ModeOff,
    /// Both `exclude: true` and a setting for scoring (an excluded route is not scored).
    #[error(
        "`exclude: true` and `mode` / `format_checks` / `threshold` / `exclude_parts` exclude each other"
    )]
    ExcludeAndMode,
    /// No setting at all.
    #[error("expected `exclude: true`, a `mode`, `format_checks`, `threshold` or `exclude_parts`")]
    NoAction,
    /// A `threshold` outside (0, 1).
    #[error("key `threshold`: expected a probability strictly between 0 and 1, got {0}")]
    Threshold(String),
    /// A method that is not an upper-case HTTP token.
    #[error("key `methods`: expected upper-case method names such as GET or POST (methods are case-sensitive), got {0:?}")]
    Method(String),
    /// A host that is not a host name or address with an optional port.
    #[error("key `host`: expected a host name or IP address with an optional :port, such as \"shop.example\" or \"shop.example:8080\", got {0:?}")]
    Host(String),
    /// An `exclude_parts` entry with a bad name, or not one of its keys.
    #[error("{0}")]
    Part(String),
}

/// Whether `host` is a host name, an IPv4 address or a bracketed IPv6 address, with an optional
/// numeric port.
fn is_host(host: &str) -> bool {
    let (name, port) = split_host_port(host);
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok());
    let name_ok = if host.starts_with('[') {
        name.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    };
    port_ok && name_ok
}

impl TryFrom<RouteYaml> for Route {
    type Error = RouteError;

    fn try_from(raw: RouteYaml) -> Result<Self, RouteError> {
        let matches = match (raw.path, raw.prefix) {
            (Some(p), None) => Some(RouteMatch::Exact(p)),
            (None, Some(p)) => Some(RouteMatch::Prefix(p)),
            (None, None) => None,
            (Some(_), Some(_)) => return Err(RouteError::PathAndPrefix),
        };
        if matches.is_none() && raw.methods.is_empty() && raw.host.is_none() {
            return Err(RouteError::MatchesNothing);
        }
        if let Some(m) = matches.as_ref().filter(|m| !m.pattern().starts_with('/')) {
            return Err(RouteError::NotAbsolute(m.pattern().to_string()));
        }
        if let Some(bad) = raw
            .methods
            .iter()
            .find(|m| !is_token(m) || m.bytes().any(|b| b.is_ascii_lowercase()))
        {
            return Err(RouteError::Method(bad.clone()));
        }
        if let Some(bad) = raw.host.as_ref().filter(|h| !is_host(h)) {
            return Err(RouteError::Host(bad.clone()));
        }
        if let Some(t) = raw.threshold.filter(|t| !(*t > 0.0 && *t < 1.0)) {
            return Err(RouteError::Threshold(t.to_string()));
        }
        if raw.mode == Some(Mode::Off) {
            return Err(RouteError::ModeOff);
        }
        let scoring = raw.mode.is_some()
            || raw.format_checks.is_some()
            || raw.threshold.is_some()
            || !raw.exclude_parts.is_empty();
        if raw.exclude && scoring {
            return Err(RouteError::ExcludeAndMode);
        }
        if !raw.exclude && !scoring {
            return Err(RouteError::NoAction);
        }
        Ok(Route {
            matches,
            methods: raw.methods,
            host: raw.host.map(|h| h.to_ascii_lowercase()),
            exclude: raw.exclude,
            mode: raw.mode,
            format_checks: raw.format_checks,
            threshold: raw.threshold,
            exclude_parts: raw.exclude_parts,
        })
    }
}

impl From<Route> for RouteYaml {
    fn from(route: Route) -> Self {
        let (path, prefix) = match route.matches {
            Some(RouteMatch::Exact(p)) => (Some(p), None),
            Some(RouteMatch::Prefix(p)) => (None, Some(p)),
            None => (None, None),
        };
        RouteYaml {
            path,
            prefix,
            methods: route.methods,
            host: route.host,
            exclude: route.exclude,
            mode: route.mode,
            format_checks: route.format_checks,
            threshold: route.threshold,
            exclude_parts: route.exclude_parts,
        }
    }
}

/// `capture:`: every scored request appended to a JSON-lines file of the operator's own traffic
/// (`proxy/src/capture.rs`; read by `pate-trainer run --public FILE --public-format capture`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureConfig {
    /// The file written to; its directory should exist (`check-config` says so; at run time a
    /// file that cannot be written is counted in `patewaf_capture_errors_total`, never fatal).
    pub path: PathBuf,
    /// A file about to grow past this many bytes is rotated first: renamed to `PATH.1` (the
    /// older ones shifted to `.2`, ...). A single line longer than this goes alone in a file.
    #[serde(default = "default_capture_max_bytes")]
    pub max_bytes: u64,
    /// Rotated files kept (`PATH.1` to `PATH.N`); the oldest beyond them is dropped.
    #[serde(default = "default_capture_max_files")]
    pub max_files: u32,
    /// Bytes of a request body recorded (the part that was scored); a longer one is cut and
    /// marked `body_truncated`. 0: no body recorded.
    #[serde(default = "default_capture_body_max_bytes")]
    pub body_max_bytes: usize,
}

fn default_capture_max_bytes() -> u64 {
    100 * 1024 * 1024
}
fn default_capture_max_files() -> u32 {
    5
}
fn default_capture_body_max_bytes() -> usize {
    8192
}

/// The largest `capture.max_files` accepted.
pub const MAX_CAPTURE_FILES: u32 = 1000;

impl CaptureConfig {
    /// Checks the ranges; the message names the key (`capture.max_bytes`, ...).
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.path.as_os_str().is_empty() {
            return Err((
                "capture.path",
                "expected a file path, got an empty one".into(),
            ));
        }
        if self.max_bytes == 0 {
            return Err(("capture.max_bytes", "expected at least 1".into()));
        }
        if !(1..=MAX_CAPTURE_FILES).contains(&self.max_files) {
            return Err((
                "capture.max_files",
                format!("expected 1 to {MAX_CAPTURE_FILES}, got {}", self.max_files),
            ));
        }
        if self.body_max_bytes > MAX_BODY_LIMIT_BYTES {
            return Err((
                "capture.body_max_bytes",
                format!(
                    "at most {MAX_BODY_LIMIT_BYTES} (no longer body is ever read), got {}",
                    self.body_max_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// The proxy's log level (`RUST_LOG` overrides it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// The default.
    Info,
    /// Debugging detail.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// The lowercase name used in the YAML file, also a valid `tracing` filter directive.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }

    /// This level moved `more` steps towards `trace` and `less` steps towards `error`
    /// (`pate-proxy -v` / `-q`, counted), clamped to `error..=trace`.
    pub fn adjusted(self, more: u8, less: u8) -> LogLevel {
        const ORDER: [LogLevel; 5] = [
            LogLevel::Error,
            LogLevel::Warn,
            LogLevel::Info,
            LogLevel::Debug,
            LogLevel::Trace,
        ];
        let at = ORDER.iter().position(|l| *l == self).unwrap_or(2) as i32;
        let to = (at + i32::from(more) - i32::from(less)).clamp(0, ORDER.len() as i32 - 1);
        ORDER[to as usize]
    }
}

/// The whole configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address the proxy listens on, e.g. `"127.0.0.1:8080"` (an IP:port, no host name).
    #[serde(deserialize_with = "socket_addr")]
    pub listen: SocketAddr,
    /// Upstream (Apache) address, e.g. `"127.0.0.1:8081"` (an IP:port, no host name).
    #[serde(deserialize_with = "socket_addr")]
    pub upstream: SocketAddr,
    /// Admin server address (`/metrics`, `/live`, `/ready`, `/reload`), e.g. `"127.0.0.1:9090"`.
    #[serde(deserialize_with = "socket_addr")]
    pub admin_listen: SocketAddr,
    /// Bundle directory written by `pate-trainer export` (model.onnx, featurizer.json, bundle.yaml).
    pub bundle: PathBuf,
    /// A second bundle that scores every scored request beside the active one and never decides
    /// anything (`patewaf_shadow_requests_total{active_verdict, shadow_verdict}`, audit lines
    /// where the two disagree); `POST /promote` makes it the active bundle. `null`: none.
    #[serde(default)]
    pub shadow_bundle: Option<PathBuf>,
    /// `detect` (default), `block`, or `off` (no WAF: forward without featurizing or scoring).
    #[serde(default = "default_mode")]
    pub mode: Mode,
    /// JSON-lines audit log of flagged, blocked and failed requests.
    pub audit_log: PathBuf,
    /// Threshold override for every request (with the format checks and without); `null` uses
    /// the bundle's: `threshold`, and where `format_checks` is false its
    /// `content_only_threshold` (when the trainer chose one, else `threshold`).
    #[serde(default)]
    pub threshold: Option<f32>,
    /// `true` (default): the featurizer emits the site's format checks — `rare:*`,
    /// `unseen:path`, `odd:*`: a parameter value, name, method or path that the site's public
    /// traffic rarely or never has. `false`: they are not emitted and content alone is scored
    /// (n-grams, shapes, signatures), for a site whose public pool does not cover its requests
    /// (new pages or fields are flagged however benign otherwise). Fewer of the tampering kind of
    /// attack are caught then (EVALUATION.md, "Format checks off"). A route's `format_checks`
    /// overrides it for its paths. Scores without the checks are judged at the bundle's
    /// `content_only_threshold` where it has one. Absent or null: the bundle's recommendation
    /// (bundle.yaml `format_checks`: `false` for a bundle onboarded from a site's unlabelled
    /// log), else `true`.
    #[serde(default)]
    pub format_checks: Option<bool>,
    /// `open` (default: forward) or `closed` (503) when scoring fails.
    #[serde(default = "default_on_error")]
    pub on_error: OnError,
    /// Bytes of an urlencoded POST/PUT body read and scored before connecting upstream.
    #[serde(default = "default_body_limit")]
    pub body_limit_bytes: usize,
    /// `truncate` (default: score the prefix) or `reject` (413) for a body over the limit.
    #[serde(default = "default_body_over_limit")]
    pub body_over_limit: BodyOverLimit,
    /// Longest request target (path and query, as sent) accepted; see `uri_over_limit`.
    /// Default 8192, about Apache's `LimitRequestLine` (8190 bytes for the whole request line).
    #[serde(default = "default_uri_limit")]
    pub uri_limit_bytes: usize,
    /// `reject` (default: 414) or `truncate` (score the featurizer's prefix, forward) for a
    /// target longer than `uri_limit_bytes`.
    #[serde(default = "default_uri_over_limit")]
    pub uri_over_limit: UriOverLimit,
    /// Most request header fields accepted; more is answered 431 (RFC 6585 §5). Apache's
    /// `LimitRequestFields` default is 100. (pingora itself refuses more than 256 with 400.)
    #[serde(default = "default_header_count_limit")]
    pub header_count_limit: usize,
    /// Largest total size of the request header fields (names + values) accepted; more is
    /// answered 431.
    #[serde(default = "default_header_limit_bytes")]
    pub header_limit_bytes: usize,
    /// Milliseconds a client gets to send a whole request head (request line and headers),
    /// counted from the accept (or, on a keep-alive connection, from the head's first byte); a
    /// slower client is answered 408 (counted `verdict="refused"`) and disconnected (slowloris
    /// protection, `slowloris.rs`); a connection that sent no byte is closed without an answer.
    #[serde(default = "default_client_header_timeout_ms")]
    pub client_header_timeout_ms: u64,
    /// Milliseconds a client gets to send the part of a scored body the proxy reads before its
    /// verdict; a client that trickles it slower is answered 408 and dropped.
    #[serde(default = "default_client_body_timeout_ms")]
    pub client_body_timeout_ms: u64,
    /// Peers (exact IP addresses, e.g. a TLS-terminating load balancer) whose
    /// `X-Forwarded-Proto` is kept; from every other peer it is replaced by `http`, so a client
    /// cannot claim `https`. Empty (default): always `http`.
    #[serde(default)]
    pub trusted_forwarders: Vec<std::net::IpAddr>,
    /// Per-route exclusions and overrides; the first match wins.
    #[serde(default, deserialize_with = "deserialize_routes")]
    pub routes: Vec<Route>,
    /// Parts of every request left out of scoring (`{param: NAME}`, `{header: NAME}`,
    /// `{cookie: NAME}`); a route's `exclude_parts` adds to them.
    #[serde(default)]
    pub exclude_parts: Vec<ExcludedPart>,
    /// Path and query longer than this are truncated in the audit log (at a UTF-8 boundary).
    #[serde(default = "default_audit_target_max_bytes")]
    pub audit_target_max_bytes: usize,
    /// Replace every query/body parameter value by `REDACTED` in the audit log.
    #[serde(default)]
    pub audit_redact_values: bool,
    /// Record the scored form body (truncated like the target, redacted with
    /// `audit_redact_values`) in the audit log. Off by default: no raw request body is written
    /// to any log unless the operator asks for it.
    #[serde(default)]
    pub audit_body: bool,
    /// How many of the features that contributed most to a flagged request's score its audit
    /// line lists (at most [`crate::audit::MAX_AUDIT_FEATURES`]); `audit_top_tokens` is read as
    /// this key too.
    #[serde(default = "default_audit_top_features", alias = "audit_top_tokens")]
    pub audit_top_features: usize,
    /// `error`, `warn`, `info`, `debug` or `trace`; `RUST_LOG` overrides it.
    #[serde(default = "default_log_level")]
    pub log_level: LogLevel,
    /// Worker threads of the proxy service (with `scorer: onnxruntime`, also the number of ONNX
    /// Runtime sessions, so that no worker waits for another's session).
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// `auto` (default: `native` for a linear student, `onnxruntime` for hidden layers),
    /// `onnxruntime` (every request through ONNX Runtime) or `native` (a native forward pass of
    /// the same network); whichever serves is checked against ONNX Runtime at load.
    #[serde(default = "default_scorer")]
    pub scorer: ScorerKind,
    /// Seconds pingora waits for in-flight requests on SIGTERM before stopping.
    #[serde(default = "default_grace_period_seconds")]
    pub grace_period_seconds: u64,
    /// Timeout for connecting to the upstream, in milliseconds.
    #[serde(default = "default_upstream_connect_timeout_ms")]
    pub upstream_connect_timeout_ms: u64,
    /// Path of the ONNX Runtime shared library; `null` uses `ORT_DYLIB_PATH`.
    #[serde(default)]
    pub onnxruntime_library: Option<PathBuf>,
    /// Start (not ready, `on_error` applies to every request) when the bundle cannot be loaded,
    /// instead of exiting; a later reload makes the proxy ready. Default: exit with the error.
    #[serde(default)]
    pub start_without_model: bool,
    /// Off (null) by default. `{path, max_bytes, max_files, body_max_bytes}`: every scored
    /// request (method, target, HTTP version, every header, the scored body, client, time,
    /// score, verdict, bundle version) appended as one JSON line to `path`, rotated at
    /// `max_bytes` — the operator's own traffic, to train a bundle for the site
    /// (`pate-trainer run --public FILE --public-format capture`). It holds users' cookies and
    /// personal data: protect the file.
    #[serde(default)]
    pub capture: Option<CaptureConfig>,
    /// Unix socket for pingora's graceful upgrade (SIGQUIT to the old process, `--upgrade` on the
    /// new one); `null` = `/tmp/pate-proxy-<listen port>.upgrade.sock`.
    #[serde(default)]
    pub upgrade_sock: Option<PathBuf>,
}

fn default_mode() -> Mode {
    Mode::Detect
}

fn default_on_error() -> OnError {
    OnError::Open
}
fn default_body_limit() -> usize {
    MAX_BODY_LIMIT_BYTES
}
fn default_body_over_limit() -> BodyOverLimit {
    BodyOverLimit::Truncate
}
fn default_uri_limit() -> usize {
    8192
}
fn default_uri_over_limit() -> UriOverLimit {
    UriOverLimit::Reject
}
fn default_header_count_limit() -> usize {
    100
}
fn default_header_limit_bytes() -> usize {
    32 * 1024
}
fn default_client_header_timeout_ms() -> u64 {
    10_000
}
fn default_client_body_timeout_ms() -> u64 {
    10_000
}
fn default_audit_target_max_bytes() -> usize {
    2048
}
fn default_audit_top_features() -> usize {
    5
}
fn default_log_level() -> LogLevel {
    LogLevel::Info
}
fn default_threads() -> usize {
    2
}
fn default_scorer() -> ScorerKind {
    ScorerKind::Auto
}
fn default_grace_period_seconds() -> u64 {
    5
}
fn default_upstream_connect_timeout_ms() -> u64 {
    2000
}

impl Config {
    /// Parses YAML text; `origin` names the file in errors.
    ///
    /// serde_yaml's messages name the offending key and its line (e.g. ``unknown field `treshold`,
    /// expected one of ... at line 7 column 1``); semantic checks name the key themselves.
    pub fn from_yaml(text: &str, origin: &Path) -> Result<Self, ProxyError> {
        let config: Config = serde_yaml::from_str(text).map_err(|e| ProxyError::Config {
            path: origin.to_path_buf(),
            message: e.to_string(),
        })?;
        config.validate(origin)?;
        Ok(config)
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<Self, ProxyError> {
        let text = std::fs::read_to_string(path).map_err(|e| ProxyError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        Self::from_yaml(&text, path)
    }

    /// Checks what the YAML schema cannot: distinct addresses, ranges.
    pub fn validate(&self, origin: &Path) -> Result<(), ProxyError> {
        let bad = |key: &str, message: String| ProxyError::Config {
            path: origin.to_path_buf(),
            message: format!("key `{key}`: {message}"),
        };
        if self.listen == self.admin_listen {
            return Err(bad(
                "admin_listen",
                format!("must differ from `listen` ({})", self.listen),
            ));
        }
        if let Some(t) = self.threshold {
            if !(t.is_finite() && (0.0..=1.0).contains(&t)) {
                return Err(bad(
                    "threshold",
                    format!("expected a probability in [0, 1], got {t}"),
                ));
            }
        }
        if self.body_limit_bytes > MAX_BODY_LIMIT_BYTES {
            return Err(bad(
                "body_limit_bytes",
                format!(
                    "at most {MAX_BODY_LIMIT_BYTES} (pingora's replay buffer), got {}",
                    self.body_limit_bytes
                ),
            ));
        }
        for (key, value) in [
            ("uri_limit_bytes", self.uri_limit_bytes as u64),
            ("header_count_limit", self.header_count_limit as u64),
            ("header_limit_bytes", self.header_limit_bytes as u64),
            ("client_header_timeout_ms", self.client_header_timeout_ms),
            ("client_body_timeout_ms", self.client_body_timeout_ms),
        ] {
            if value == 0 {
                return Err(bad(key, "expected at least 1".to_string()));
            }
        }
        if self.threads == 0 {
            return Err(bad("threads", "expected at least 1".to_string()));
        }
        if let Some(capture) = &self.capture {
            capture
                .validate()
                .map_err(|(key, message)| bad(key, message))?;
            if capture.path == self.audit_log {
                return Err(bad(
                    "capture.path",
                    format!(
                        "must differ from `audit_log` ({})",
                        self.audit_log.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The graceful-upgrade socket in force.
    pub fn upgrade_sock_path(&self) -> PathBuf {
        self.upgrade_sock.clone().unwrap_or_else(|| {
            let port = self.listen.port();
            PathBuf::from(format!("/tmp/pate-proxy-{port}.upgrade.sock"))
        })
    }

    /// The rule that applies to `request`, if any. Rules match the path as the upstream will
    /// resolve it ([`normalize_path`]), so `/static/../admin` is not under `/static/`.
    pub fn route_for(&self, request: &RouteRequest<'_>) -> Option<&Route> {
        // Normalizing allocates; without rules there is nothing to match (most deployments).
        if self.routes.is_empty() {
            return None;
        }
        let path = normalize_path(request.path);
        self.routes.iter().find(|r| r.matches(request, &path))
    }

    /// Whether a request under `route` ([`Config::route_for`]) is scored with the site's format
    /// checks: the route's `format_checks`, else the global one, else the bundle's
    /// recommendation (`bundle`), else `true`.
    pub fn format_checks_for(&self, route: Option<&Route>, bundle: Option<bool>) -> bool {
        route
            .and_then(|r| r.format_checks)
            .or(self.format_checks)
            .or(bundle)
            .unwrap_or(true)
    }

    /// The threshold a route imposes on its requests' scores, with the format checks or
    /// without: the route's `threshold`. `None`: the model's threshold in force (the global
    /// `threshold` if set, else the bundle's `threshold`, or its `content_only_threshold` where
    /// the format checks are off), which the model was loaded with.
    pub fn threshold_override_for(&self, route: Option<&Route>) -> Option<f32> {
        route.and_then(|r| r.threshold)
    }

    /// The parts left out of scoring for a request under `route`: the global `exclude_parts`,
    /// then the route's.
    pub fn excluded_parts_for<'c>(&'c self, route: Option<&'c Route>) -> Vec<&'c ExcludedPart> {
        let route_parts = route.map_or(&[][..], |r| r.exclude_parts.as_slice());
        self.exclude_parts.iter().chain(route_parts).collect()
    }

    /// The keys whose new value takes a restart (listening sockets, worker threads, log
    /// writers): those of `new` that differ from `self`, the configuration in force.
    pub fn restart_keys_changed(&self, new: &Config) -> Vec<&'static str> {
        let changed = [
            ("listen", self.listen != new.listen),
            ("upstream", self.upstream != new.upstream),
            ("admin_listen", self.admin_listen != new.admin_listen),
            ("audit_log", self.audit_log != new.audit_log),
            ("capture", self.capture != new.capture),
            ("log_level", self.log_level != new.log_level),
            ("threads", self.threads != new.threads),
            (
                "grace_period_seconds",
                self.grace_period_seconds != new.grace_period_seconds,
            ),
            (
                "client_header_timeout_ms",
                self.client_header_timeout_ms != new.client_header_timeout_ms,
            ),
            (
                "onnxruntime_library",
                self.onnxruntime_library != new.onnxruntime_library,
            ),
            ("upgrade_sock", self.upgrade_sock != new.upgrade_sock),
            (
                "start_without_model",
                self.start_without_model != new.start_without_model,
            ),
        ];
        changed
            .into_iter()
            .filter_map(|(key, differs)| differs.then_some(key))
            .collect()
    }

    /// `new` with the restart-only keys ([`Config::restart_keys_changed`]) of `self`: what a
    /// reload puts in force, so that the configuration in force says what the process runs.
    pub fn with_restart_keys_of(mut new: Config, running: &Config) -> Config {
        new.listen = running.listen;
        new.upstream = running.upstream;
        new.admin_listen = running.admin_listen;
        new.audit_log = running.audit_log.clone();
        new.capture = running.capture.clone();
        new.log_level = running.log_level;
        new.threads = running.threads;
        new.grace_period_seconds = running.grace_period_seconds;
        new.client_header_timeout_ms = running.client_header_timeout_ms;
        new.onnxruntime_library = running.onnxruntime_library.clone();
        new.upgrade_sock = running.upgrade_sock.clone();
        new.start_without_model = running.start_without_model;
        new
    }
}

/// The request path as a server resolves it, for route matching: percent-escapes decoded once
/// (except `%2F`, which Apache does not treat as a separator), dot segments removed (RFC 3986
/// §5.2.4) and empty segments merged. Without this, `/static/..%2Fadmin`-style paths or
/// `/static/../login.jsp` would inherit an exclusion meant for `/static/`.
pub fn normalize_path(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                let byte = (h * 16 + l) as u8;
                if byte != b'/' {
                    decoded.push(byte);
                    i += 3;
                    continue;
                }
            }
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    let text = String::from_utf8_lossy(&decoded);
    let mut segments: Vec<&str> = Vec::new();
    let mut trailing_slash = false;
    for segment in text.split('/') {
        trailing_slash = false;
        match segment {
            "" => trailing_slash = true,
            "." => trailing_slash = true,
            ".." => {
                segments.pop();
                trailing_slash = true;
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(text.len() + 1);
    for s in &segments {
        out.push('/');
        out.push_str(s);
    }
    if trailing_slash || out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "listen: \"127.0.0.1:8080\"\nupstream: \"127.0.0.1:8081\"\nadmin_listen: \"127.0.0.1:9090\"\nbundle: \"runs/quick/bundle\"\naudit_log: \"audit.jsonl\"\n";

    #[test]
    fn minimal_config_gets_defaults() {
        let c = Config::from_yaml(MINIMAL, Path::new("m.yaml")).unwrap();
        assert_eq!(c.mode, Mode::Detect);
        assert_eq!(c.on_error, OnError::Open);
        assert_eq!(c.body_limit_bytes, MAX_BODY_LIMIT_BYTES);
        assert!(c.routes.is_empty());
        assert_eq!(c.uri_limit_bytes, 8192);
        assert_eq!(c.uri_over_limit, UriOverLimit::Reject);
        assert_eq!(c.header_count_limit, 100);
        assert!(c.trusted_forwarders.is_empty());
        assert_eq!(c.scorer, ScorerKind::Auto);
        assert_eq!(c.shadow_bundle, None);
        assert_eq!(
            c.format_checks, None,
            "the bundle's recommendation by default"
        );
        assert!(
            c.format_checks_for(None, None),
            "on when the bundle says nothing"
        );
        assert!(
            !c.format_checks_for(None, Some(false)),
            "the bundle's recommendation"
        );
        let c = Config::from_yaml(
            &format!("{MINIMAL}shadow_bundle: \"runs/next/bundle\"\nformat_checks: false\n"),
            Path::new("m.yaml"),
        )
        .unwrap();
        assert_eq!(c.shadow_bundle, Some(PathBuf::from("runs/next/bundle")));
        assert_eq!(c.format_checks, Some(false));
        assert!(
            !c.format_checks_for(None, Some(true)),
            "the config over the bundle"
        );
    }

    #[test]
    fn scorer_key_selects_onnxruntime_or_native() {
        for (value, kind) in [
            ("auto", ScorerKind::Auto),
            ("onnxruntime", ScorerKind::Onnxruntime),
            ("native", ScorerKind::Native),
        ] {
            let c = Config::from_yaml(&format!("{MINIMAL}scorer: {value}\n"), Path::new("s.yaml"))
                .unwrap();
            assert_eq!(c.scorer, kind);
            assert_eq!(c.scorer.as_str(), value);
        }
        let err = Config::from_yaml(&format!("{MINIMAL}scorer: torch\n"), Path::new("s.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("s.yaml"), "{err}");
        assert!(err.contains("scorer") || err.contains("torch"), "{err}");
        assert!(
            err.contains("onnxruntime") && err.contains("native"),
            "{err}"
        );
        assert!(err.contains("line 6"), "{err}");
    }

    #[test]
    fn unknown_key_is_named_with_its_line() {
        let text = format!("{MINIMAL}treshold: 0.5\n");
        let err = Config::from_yaml(&text, Path::new("t.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("treshold"), "{err}");
        assert!(err.contains("t.yaml"), "{err}");
        assert!(err.contains("line 6"), "{err}");
    }

    #[test]
    fn missing_contract_key_is_named() {
        let text = MINIMAL.replace("bundle: \"runs/quick/bundle\"\n", "");
        let err = Config::from_yaml(&text, Path::new("t.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("bundle"), "{err}");
    }

    #[test]
    fn bad_values_name_their_key() {
        for (line, key) in [
            ("mode: blocking\n", "mode"),
            (
                "routes:\n  - prefix: \"/static/\"\n    mode: off\n",
                "routes[0]",
            ),
            ("threshold: 1.5\n", "threshold"),
            ("body_limit_bytes: 1000000\n", "body_limit_bytes"),
            ("log_level: loud\n", "log_level"),
            ("uri_limit_bytes: 0\n", "uri_limit_bytes"),
            ("uri_over_limit: cut\n", "uri_over_limit"),
            ("client_body_timeout_ms: 0\n", "client_body_timeout_ms"),
            (
                "trusted_forwarders: [\"lb.example\"]\n",
                "trusted_forwarders",
            ),
            (
                "routes:\n  - prefix: \"static\"\n    exclude: true\n",
                "routes[0]",
            ),
            (
                "routes:\n  - path: \"/a\"\n    prefix: \"/b\"\n    exclude: true\n",
                "routes[0]",
            ),
        ] {
            let err = Config::from_yaml(&format!("{MINIMAL}{line}"), Path::new("t.yaml"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{line:?}: {err}");
        }
        let err = Config::from_yaml(
            &MINIMAL.replace("127.0.0.1:8081", "apache"),
            Path::new("t.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("upstream"), "{err}");
    }

    #[test]
    fn capture_is_off_by_default_and_its_keys_are_checked() {
        let c = Config::from_yaml(MINIMAL, Path::new("c.yaml")).unwrap();
        assert_eq!(c.capture, None);
        let c = Config::from_yaml(
            &format!("{MINIMAL}capture:\n  path: /var/lib/pate-proxy/capture.jsonl\n"),
            Path::new("c.yaml"),
        )
        .unwrap();
        assert_eq!(
            c.capture,
            Some(CaptureConfig {
                path: PathBuf::from("/var/lib/pate-proxy/capture.jsonl"),
                max_bytes: 104_857_600,
                max_files: 5,
                body_max_bytes: 8192,
            })
        );
        let back = serde_yaml::to_string(&c).unwrap();
        assert_eq!(Config::from_yaml(&back, Path::new("back.yaml")).unwrap(), c);
        for (keys, key, says) in [
            (
                "  path: c.jsonl\n  max_bytes: 0\n",
                "capture.max_bytes",
                "at least 1",
            ),
            (
                "  path: c.jsonl\n  max_files: 0\n",
                "capture.max_files",
                "1 to 1000",
            ),
            (
                "  path: c.jsonl\n  body_max_bytes: 70000\n",
                "capture.body_max_bytes",
                "65536",
            ),
            ("  path: \"\"\n", "capture.path", "empty"),
            ("  path: audit.jsonl\n", "capture.path", "audit_log"),
            ("  max_bytes: 10\n", "capture", "path"),
            ("  path: c.jsonl\n  max_byte: 10\n", "max_byte", "line 8"),
            ("  path: c.jsonl\n  max_bytes: -1\n", "max_bytes", "line 8"),
        ] {
            let err = Config::from_yaml(&format!("{MINIMAL}capture:\n{keys}"), Path::new("c.yaml"))
                .unwrap_err()
                .to_string();
            assert!(err.contains("c.yaml"), "{keys:?}: {err}");
            assert!(err.contains(key) && err.contains(says), "{keys:?}: {err}");
        }
    }

    #[test]
    fn verbose_and_quiet_flags_step_the_log_level() {
        use LogLevel::*;
        assert_eq!(Info.adjusted(0, 0), Info);
        assert_eq!(Info.adjusted(1, 0), Debug);
        assert_eq!(Info.adjusted(2, 0), Trace);
        assert_eq!(Info.adjusted(5, 0), Trace);
        assert_eq!(Info.adjusted(0, 1), Warn);
        assert_eq!(Info.adjusted(0, 2), Error);
        assert_eq!(Info.adjusted(0, 9), Error);
        assert_eq!(Warn.adjusted(1, 0), Info);
        assert_eq!(Error.adjusted(0, 1), Error);
    }

    #[test]
    fn addresses_and_log_level_are_typed() {
        let c = Config::from_yaml(
            &format!("{MINIMAL}log_level: debug\n").replace("127.0.0.1:9090", "[::1]:9090"),
            Path::new("t.yaml"),
        )
        .unwrap();
        assert_eq!(c.listen, "127.0.0.1:8080".parse::<SocketAddr>().unwrap());
        assert_eq!(c.upstream.port(), 8081);
        assert!(c.admin_listen.is_ipv6());
        assert_eq!(c.log_level, LogLevel::Debug);
        assert_eq!(c.log_level.as_str(), "debug");
        assert_eq!(
            c.upgrade_sock_path(),
            PathBuf::from("/tmp/pate-proxy-8080.upgrade.sock")
        );
        let c = Config::from_yaml(MINIMAL, Path::new("t.yaml")).unwrap();
        assert_eq!(c.log_level, LogLevel::Info);
        // Each address key, given a host name, a missing port or a port out of range, is an
        // error naming that key (and the file), not a panic or a later bind failure.
        for (key, good) in [
            ("listen", "127.0.0.1:8080"),
            ("upstream", "127.0.0.1:8081"),
            ("admin_listen", "127.0.0.1:9090"),
        ] {
            for bad in ["localhost:8080", "127.0.0.1", "127.0.0.1:70000", "8080"] {
                let text =
                    MINIMAL.replace(&format!("{key}: \"{good}\""), &format!("{key}: \"{bad}\""));
                assert_ne!(text, MINIMAL);
                let err = Config::from_yaml(&text, Path::new("t.yaml"))
                    .unwrap_err()
                    .to_string();
                assert!(err.contains(&format!("{key}:")), "{bad}: {err}");
                assert!(err.contains("t.yaml"), "{err}");
                assert!(err.contains("IP:port") && err.contains(bad), "{err}");
                assert!(err.contains("line "), "{err}");
            }
        }
        let err = Config::from_yaml(
            &MINIMAL.replace("127.0.0.1:9090", "127.0.0.1:8080"),
            Path::new("t.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("admin_listen"), "{err}");
        for bad in ["loud", "INFO", "warning"] {
            let err =
                Config::from_yaml(&format!("{MINIMAL}log_level: {bad}\n"), Path::new("t.yaml"))
                    .unwrap_err()
                    .to_string();
            assert!(err.contains("log_level"), "{bad}: {err}");
            assert!(err.contains("trace"), "{bad}: {err}");
        }
    }

    #[test]
    fn route_match_is_exact_or_prefix_and_round_trips() {
        let text = format!(
            "{MINIMAL}routes:\n  - path: \"/health\"\n    exclude: true\n  - prefix: \"/admin/\"\n    mode: block\n"
        );
        let c = Config::from_yaml(&text, Path::new("t.yaml")).unwrap();
        assert_eq!(
            c.routes[0].matches,
            Some(RouteMatch::Exact("/health".to_string()))
        );
        assert_eq!(
            c.routes[1].matches,
            Some(RouteMatch::Prefix("/admin/".to_string()))
        );
        assert!(!RouteMatch::Exact("/health".into()).matches("/healthz"));
        assert!(RouteMatch::Prefix("/admin/".into()).matches("/admin/x"));
        // The YAML written back is the same format (path/prefix keys), so it parses again.
        let back = serde_yaml::to_string(&c).unwrap();
        assert!(
            back.contains("path: /health") && back.contains("prefix: /admin/"),
            "{back}"
        );
        assert_eq!(Config::from_yaml(&back, Path::new("back.yaml")).unwrap(), c);
        for (routes, message) in [
            (
                "  - exclude: true\n",
                "`path`, `prefix`, `methods` or `host`",
            ),
            (
                "  - path: \"/a\"\n    prefix: \"/b\"\n    exclude: true\n",
                "at most one of",
            ),
            ("  - prefix: \"/a\"\n", "expected `exclude: true`, a `mode`"),
            (
                "  - prefix: \"/a\"\n    exclude: true\n    format_checks: false\n",
                "exclude each other",
            ),
            (
                "  - prefix: \"/a\"\n    exclude: true\n    mode: block\n",
                "exclude each other",
            ),
            (
                "  - prefix: \"/a\"\n    regex: \"x\"\n    exclude: true\n",
                "regex",
            ),
        ] {
            let err =
                Config::from_yaml(&format!("{MINIMAL}routes:\n{routes}"), Path::new("t.yaml"))
                    .unwrap_err()
                    .to_string();
            assert!(err.contains("routes[0]"), "{routes:?}: {err}");
            assert!(err.contains(message), "{routes:?}: {err}");
        }
    }

    /// `format_checks` per route overrides the global one for the route's paths; a route may
    /// carry it alone, and it round-trips.
    #[test]
    fn a_route_overrides_the_global_format_checks() {
        let text = format!(
            "{MINIMAL}routes:\n  - prefix: \"/api/\"\n    format_checks: false\n  - prefix: \"/admin/\"\n    mode: block\n"
        );
        let on = Config::from_yaml(&text, Path::new("t.yaml")).unwrap();
        assert_eq!(on.format_checks, None);
        assert!(!on.format_checks_for(on.route_for(&RouteRequest::get("/api/orders")), None));
        assert!(!on.format_checks_for(on.route_for(&RouteRequest::get("/api/orders")), Some(true)));
        assert!(on.format_checks_for(on.route_for(&RouteRequest::get("/admin/x")), None));
        assert!(on.format_checks_for(on.route_for(&RouteRequest::get("/shop")), None));
        let back = serde_yaml::to_string(&on).unwrap();
        assert_eq!(
            Config::from_yaml(&back, Path::new("back.yaml")).unwrap(),
            on
        );
        let text = format!(
            "{MINIMAL}format_checks: false\nroutes:\n  - path: \"/login\"\n    format_checks: true\n"
        );
        let off = Config::from_yaml(&text, Path::new("t.yaml")).unwrap();
        assert!(off.format_checks_for(off.route_for(&RouteRequest::get("/login")), None));
        assert!(!off.format_checks_for(off.route_for(&RouteRequest::get("/shop")), None));
    }

    /// `threshold`, `methods`, `host` and `exclude_parts` on a route: parsed, matched, written
    /// back in the same form.
    #[test]
    fn a_route_matches_method_and_host_and_carries_threshold_and_parts() {
        let text = format!(
            "{MINIMAL}exclude_parts: [{{header: X-Trace}}]\nroutes:\n  - prefix: \"/search\"\n    methods: [GET, HEAD]\n    host: Shop.Example\n    threshold: 0.9\n    exclude_parts:\n      - {{param: q}}\n      - {{cookie: session}}\n  - host: \"api.example:8443\"\n    format_checks: false\n  - methods: [POST]\n    mode: block\n"
        );
        let c = Config::from_yaml(&text, Path::new("t.yaml")).unwrap();
        let search = RouteRequest {
            method: "GET",
            host: Some("shop.EXAMPLE:8080"),
            path: "/search/x",
        };
        let route = c.route_for(&search).unwrap();
        assert_eq!(route.threshold, Some(0.9));
        assert_eq!(c.threshold_override_for(Some(route)), Some(0.9));
        assert_eq!(route.host.as_deref(), Some("shop.example"));
        assert_eq!(
            c.excluded_parts_for(Some(route)),
            vec![
                &ExcludedPart::Header("x-trace".into()),
                &ExcludedPart::Param("q".into()),
                &ExcludedPart::Cookie("session".into()),
            ]
        );
        // Another method, another host, or no host: not this route.
        for other in [
            RouteRequest {
                method: "get",
                ..search
            },
            RouteRequest {
                host: Some("other.example"),
                ..search
            },
            RouteRequest {
                host: None,
                ..search
            },
        ] {
            assert_ne!(c.route_for(&other).map(|r| r.threshold), Some(Some(0.9)));
        }
        let api = RouteRequest {
            method: "GET",
            host: Some("API.example:8443"),
            path: "/v1",
        };
        assert_eq!(c.route_for(&api).unwrap().format_checks, Some(false));
        let api_other_port = RouteRequest {
            host: Some("api.example"),
            ..api
        };
        assert!(c.route_for(&api_other_port).is_none());
        let post = RouteRequest {
            method: "POST",
            host: None,
            path: "/login",
        };
        assert_eq!(c.route_for(&post).unwrap().mode, Some(Mode::Block));
        assert_eq!(c.threshold_override_for(c.route_for(&post)), None);
        assert_eq!(c.excluded_parts_for(None).len(), 1);
        let back = serde_yaml::to_string(&c).unwrap();
        assert_eq!(Config::from_yaml(&back, Path::new("back.yaml")).unwrap(), c);
    }

    #[test]
    fn new_route_keys_are_checked_with_a_message_naming_them() {
        for (routes, says) in [
            (
                "  - prefix: \"/a\"\n    threshold: 0\n",
                "strictly between 0 and 1, got 0",
            ),
            (
                "  - prefix: \"/a\"\n    threshold: 1.0\n",
                "strictly between 0 and 1",
            ),
            (
                "  - prefix: \"/a\"\n    threshold: .nan\n",
                "key `threshold`",
            ),
            ("  - prefix: \"/a\"\n    threshold: high\n", "threshold"),
            (
                "  - prefix: \"/a\"\n    methods: [get]\n    mode: block\n",
                "key `methods`",
            ),
            (
                "  - prefix: \"/a\"\n    methods: [\"GET /\"]\n    mode: block\n",
                "\"GET /\"",
            ),
            (
                "  - prefix: \"/a\"\n    methods: GET\n    mode: block\n",
                "methods",
            ),
            (
                "  - host: \"shop example\"\n    mode: block\n",
                "key `host`",
            ),
            (
                "  - host: \"shop.example:99999\"\n    mode: block\n",
                "key `host`",
            ),
            (
                "  - host: \"http://shop.example\"\n    mode: block\n",
                "key `host`",
            ),
            (
                "  - prefix: \"/a\"\n    exclude_parts: [{param: \"\"}]\n",
                "exclude_parts: `param: \"\"`: expected a parameter name at line 8",
            ),
            (
                "  - prefix: \"/a\"\n    exclude_parts: [{header: \"X Foo\"}]\n",
                "header name",
            ),
            (
                "  - prefix: \"/a\"\n    exclude_parts: [{cookie: \"a=b\"}]\n",
                "cookie name",
            ),
            (
                "  - prefix: \"/a\"\n    exclude_parts: [{parm: q}]\n",
                "unknown field `parm`, expected one of `param`, `header`, `cookie`",
            ),
            (
                "  - prefix: \"/a\"\n    exclude_parts: [{param: q, header: h}]\n",
                "exactly one of `param`, `header` or `cookie`",
            ),
            (
                "  - prefix: \"/a\"\n    exclude: true\n    threshold: 0.5\n",
                "exclude each other",
            ),
            (
                "  - prefix: \"/a\"\n    exclude: true\n    exclude_parts: [{param: q}]\n",
                "exclude each other",
            ),
            (
                "  - threshold: 0.5\n",
                "`path`, `prefix`, `methods` or `host`",
            ),
        ] {
            let err =
                Config::from_yaml(&format!("{MINIMAL}routes:\n{routes}"), Path::new("t.yaml"))
                    .unwrap_err()
                    .to_string();
            assert!(
                err.contains("routes[0]") && err.contains(says),
                "{routes:?}: {err}"
            );
            assert!(err.contains("t.yaml"), "{err}");
        }
        for (parts, says) in [
            (
                "[{header: \"\"}]",
                "exclude_parts: `header: \"\"`: expected a header name",
            ),
            ("[{param: q}, {cookie: \"a;b\"}]", "cookie name"),
            ("{param: q}", "exclude_parts"),
        ] {
            let err = Config::from_yaml(
                &format!("{MINIMAL}exclude_parts: {parts}\n"),
                Path::new("t.yaml"),
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains(says), "{parts}: {err}");
        }
    }

    #[test]
    fn hosts_compare_without_case_trailing_dot_or_unnamed_port() {
        assert!(host_matches("shop.example", Some("SHOP.example.")));
        assert!(host_matches("shop.example", Some("shop.example:80")));
        assert!(!host_matches("shop.example:80", Some("shop.example")));
        assert!(host_matches("[::1]:8080", Some("[::1]:8080")));
        assert!(host_matches("::1", Some("[::1]:8080")));
        assert!(!host_matches("shop.example", Some("evil-shop.example")));
        assert!(!host_matches("shop.example", None));
        assert!(is_host("127.0.0.1:8080") && is_host("[::1]") && !is_host("[zz]"));
    }

    /// What a reload may change in place, and what it keeps until a restart.
    #[test]
    fn restart_only_keys_are_named_and_kept_from_the_running_config() {
        let running = Config::from_yaml(MINIMAL, Path::new("a.yaml")).unwrap();
        let text = MINIMAL.replace("127.0.0.1:8080", "127.0.0.1:8088")
            + "threads: 4\nthreshold: 0.7\nmode: block\n";
        let read = Config::from_yaml(&text, Path::new("b.yaml")).unwrap();
        assert_eq!(
            running.restart_keys_changed(&read),
            vec!["listen", "threads"]
        );
        let in_force = Config::with_restart_keys_of(read, &running);
        assert_eq!(in_force.listen, running.listen);
        assert_eq!(in_force.threads, running.threads);
        assert_eq!(in_force.threshold, Some(0.7));
        assert_eq!(in_force.mode, Mode::Block);
        assert!(running.restart_keys_changed(&in_force).is_empty());
    }

    #[test]
    fn paths_are_normalized_like_a_server_does() {
        for (raw, normal) in [
            ("/", "/"),
            ("/static/app.js", "/static/app.js"),
            ("/static/", "/static/"),
            ("/static/../login.jsp", "/login.jsp"),
            ("/static/%2e%2e/login.jsp", "/login.jsp"),
            ("//static//./x", "/static/x"),
            ("/a/b/..", "/a/"),
            ("/../../etc/passwd", "/etc/passwd"),
            ("/static%2F..%2Fx", "/static%2F..%2Fx"),
            ("/caf%C3%A9", "/café"),
            ("/bad%zz%", "/bad%zz%"),
        ] {
            assert_eq!(normalize_path(raw), normal, "{raw}");
        }
    }

    #[test]
    fn dot_segments_do_not_inherit_an_exclusion() {
        let text = format!("{MINIMAL}routes:\n  - prefix: \"/static/\"\n    exclude: true\n");
        let c = Config::from_yaml(&text, Path::new("t.yaml")).unwrap();
        assert!(c.route_for(&RouteRequest::get("/static/app.js")).is_some());
        assert!(c
            .route_for(&RouteRequest::get("/static/../tienda1/login.jsp"))
            .is_none());
        assert!(c
            .route_for(&RouteRequest::get("/static/%2e%2e/tienda1/login.jsp"))
            .is_none());
        assert!(c.route_for(&RouteRequest::get("//static/app.js")).is_some());
    }

    #[test]
    fn first_matching_route_wins() {
        let text = format!(
            "{MINIMAL}routes:\n  - path: \"/health\"\n    exclude: true\n  - prefix: \"/admin/\"\n    mode: block\n  - prefix: \"/\"\n    mode: detect\n"
        );
        let c = Config::from_yaml(&text, Path::new("t.yaml")).unwrap();
        let health = c.route_for(&RouteRequest::get("/health")).unwrap();
        assert!(health.exclude);
        assert_eq!(
            health.matches,
            Some(RouteMatch::Exact("/health".to_string()))
        );
        assert!(c
            .route_for(&RouteRequest::get("/healthz"))
            .is_some_and(|r| r.mode == Some(Mode::Detect)));
        assert_eq!(
            c.route_for(&RouteRequest::get("/admin/x")).unwrap().mode,
            Some(Mode::Block)
        );
    }
}

#[cfg(test)]
mod example_tests {
    use super::*;

    /// The example files in `configs/` stay valid as the schema evolves.
    #[test]
    fn example_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
        let block = Config::load(&dir.join("proxy-block.yaml")).unwrap();
        assert_eq!(block.mode, Mode::Block);
        assert_eq!(
            block
                .route_for(&RouteRequest::get("/search"))
                .and_then(|r| r.mode),
            Some(Mode::Detect)
        );
        let detect = Config::load(&dir.join("proxy.yaml")).unwrap();
        assert_eq!(detect.mode, Mode::Detect);
        assert!(detect
            .route_for(&RouteRequest::get("/static/x.css"))
            .is_some_and(|r| r.exclude));
    }
}
