//! Prometheus metrics, namespace `patewaf` (names fixed in ARCHITECTURE.md, "proxy metrics":
//! the alert rules and the Grafana dashboard are written against exactly these names).

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use crate::error::ProxyError;
use crate::verdict::{Unscored, Verdict};

/// All metrics of one proxy process, in their own registry.
pub struct Metrics {
    registry: Registry,
    /// The `patewaf_shadow_*` metrics: exported only once [`Metrics::show_shadow`] was called
    /// (a shadow bundle is configured), so that a proxy without one exports none of them.
    shadow_registry: Registry,
    /// Whether `shadow_registry` is part of the exposition.
    shadow_shown: AtomicBool,
    /// The `patewaf_capture_*` metrics: exported only once [`Metrics::show_capture`] was called
    /// (`capture:` is configured).
    capture_registry: Registry,
    /// Whether `capture_registry` is part of the exposition.
    capture_shown: AtomicBool,
    /// `patewaf_capture_lines_total` and `patewaf_capture_errors_total{reason}`.
    pub capture: CaptureMetrics,
    /// `patewaf_route_requests_total{route, verdict}`: scored requests in detect mode by the
    /// first segment of their path ([`RouteLabels`]) and verdict (`allow`, `flag`, `error`).
    pub route_requests: IntCounterVec,
    /// The `route` label values handed out so far.
    route_labels: RouteLabels,
    /// `patewaf_requests_total{verdict}`.
    pub requests: IntCounterVec,
    /// `patewaf_score`: the student's probability for every scored request.
    pub score: Histogram,
    /// `patewaf_scoring_duration_seconds`: featurize + score (native sparse forward pass of
    /// `model.onnx`'s network), per request.
    pub scoring_duration: Histogram,
    /// `patewaf_model_info{version,epsilon,delta,mechanism} 1` for the serving model.
    pub model_info: IntGaugeVec,
    /// `patewaf_model_reloads_total{result="ok|error"}`.
    pub reloads: IntCounterVec,
    /// `patewaf_config_reloads_total{result="ok|error"}`: re-reads of the configuration file by
    /// a reload; `error`: it did not parse or validate, or its active bundle was rejected, and
    /// the old configuration stays in force.
    pub config_reloads: IntCounterVec,
    /// `patewaf_upstream_errors_total`: requests that failed talking to the upstream.
    pub upstream_errors: IntCounter,
    /// `patewaf_ready`: 1 while a warm model serves.
    pub ready: IntGauge,
    /// The children of `requests`, one per verdict ([`Verdict::index`]), resolved once so that
    /// counting a request does no label lookup.
    by_verdict: [IntCounter; Verdict::ALL.len()],
    /// `patewaf_shadow_requests_total{active_verdict, shadow_verdict}`: every request the shadow
    /// bundle scored beside the active one; children by [`Verdict::index`] of each.
    shadow_requests: [[IntCounter; Verdict::SCORED.len()]; Verdict::SCORED.len()],
    /// `patewaf_shadow_score`: the shadow model's probability for every request it scored.
    pub shadow_score: Histogram,
    /// `patewaf_shadow_model_info{version} 1` while a shadow bundle is loaded.
    pub shadow_model_info: IntGaugeVec,
    /// `patewaf_shadow_loads_total{result="ok|error"}`: loads of the shadow bundle (start-up and
    /// reloads).
    pub shadow_loads: IntCounterVec,
    /// `patewaf_promotions_total{result="ok|error"}`: `POST /promote` attempts.
    pub promotions: IntCounterVec,
    /// `patewaf_malformed_requests_total{reason}`: request heads refused with 400 by the strict
    /// check (`strict.rs`), by reason.
    pub malformed: IntCounterVec,
    /// `patewaf_detections_total{verdict="block|flag",placement}`: requests scored at or above
    /// the threshold, by the placement whose parts alone score highest (`request` for a
    /// featurizer without placements).
    pub detections: IntCounterVec,
    /// `patewaf_over_limit_requests_total{limit,action}`: requests with more to inspect than a
    /// limit allows (`limit="body"`: body over `body_limit_bytes`; `"parts"`: the featurizer's
    /// part, depth or byte bounds), by what the proxy did (`refuse` or `pass`: scored what it
    /// read and forwarded).
    pub over_limit: IntCounterVec,
    /// `patewaf_unseen_path_requests_total`: requests scored with the site's format checks whose
    /// path the bundle's public pool holds fewer than `rarity_min_count` times (`unseen:path`).
    /// A large share of `patewaf_requests_total` says that the format model does not cover the
    /// site served (another site's bundle, or pages the training pool lacks): the operator's cue
    /// for `format_checks: false` or a retrain (docs/deploy.md).
    pub unseen_path: IntCounter,
    /// `patewaf_unscored_requests_total{reason}`: requests forwarded without a score in detect
    /// mode because they are past a protocol limit or in a form the proxy cannot score (block
    /// mode refuses them); children by [`Unscored`], resolved once.
    unscored: [IntCounter; Unscored::ALL.len()],
}

impl Metrics {
    /// Creates and registers every metric; label values of the closed sets start at 0 so that
    /// rates and dashboards see them before the first event.
    pub fn new() -> Result<Self, ProxyError> {
        let registry = Registry::new();
        let r = &registry;
        let requests = counter_vec(
            r,
            "requests_total",
            "Requests seen by the proxy, by verdict.",
            &["verdict"],
        )?;
        let by_verdict = Verdict::ALL.map(|v| requests.with_label_values(&[v.as_str()]));
        let score = histogram(
            r,
            "score",
            "Student probability that a request is malicious.",
            PROBABILITY_BUCKETS.to_vec(),
        )?;
        let scoring_duration = histogram(
            r,
            "scoring_duration_seconds",
            "Time to featurize and score one request.",
            DURATION_BUCKETS.to_vec(),
        )?;
        let model_info = gauge_vec(
            r,
            "model_info",
            "The serving model (value 1).",
            &["version", "epsilon", "delta", "mechanism"],
        )?;
        let (reloads, config_reloads, promotions) = reload_metrics(r)?;
        let upstream_errors = int_counter(
            r,
            "upstream_errors_total",
            "Requests that failed talking to the upstream.",
        )?;
        let ready = IntGauge::with_opts(
            Opts::new("ready", "1 while a verified, warmed-up model serves.").namespace("patewaf"),
        )?;
        registry.register(Box::new(ready.clone()))?;
        let (malformed, detections, over_limit) = inspection_metrics(r)?;
        let unseen_path = int_counter(
            r,
            "unseen_path_requests_total",
            "Requests scored with the site's format checks whose path the bundle's public pool \
             does not hold (unseen:path).",
        )?;
        let unscored_vec = counter_vec(
            r,
            "unscored_requests_total",
            "Requests forwarded unscored in detect mode (past a protocol limit or not scorable), \
             by reason.",
            &["reason"],
        )?;
        let unscored = Unscored::ALL.map(|why| unscored_vec.with_label_values(&[why.as_str()]));
        let shadow_registry = Registry::new();
        let shadow = ShadowMetrics::new(&shadow_registry)?;
        let route_requests = counter_vec(
            r,
            "route_requests_total",
            "Scored requests in detect mode, by the first segment of the path (the first 32 \
             distinct ones seen, then `other`) and verdict.",
            &["route", "verdict"],
        )?;
        let capture_registry = Registry::new();
        let capture = CaptureMetrics::new(&capture_registry)?;
        Ok(Self {
            registry,
            shadow_registry,
            shadow_shown: AtomicBool::new(false),
            capture_registry,
            capture_shown: AtomicBool::new(false),
            capture,
            route_requests,
            route_labels: RouteLabels::default(),
            requests,
            score,
            scoring_duration,
            model_info,
            reloads,
            config_reloads,
            upstream_errors,
            ready,
            by_verdict,
            shadow_requests: shadow.requests,
            shadow_score: shadow.score,
            shadow_model_info: shadow.model_info,
            shadow_loads: shadow.loads,
            promotions,
            malformed,
            detections,
            over_limit,
            unseen_path,
            unscored,
        })
    }

    /// Counts one request forwarded unscored for `why`.
    pub fn count_unscored(&self, why: Unscored) {
        self.unscored[why as usize].inc();
    }

    /// `patewaf_unscored_requests_total{reason=why}` so far.
    pub fn unscored(&self, why: Unscored) -> u64 {
        self.unscored[why as usize].get()
    }

    /// Counts one request with `verdict`.
    pub fn count(&self, verdict: Verdict) {
        self.by_verdict[verdict.index()].inc();
    }

    /// Counts one request scored by the shadow model. `active` and `shadow` are scored verdicts
    /// ([`Verdict::SCORED`]); anything else is not a shadow comparison and is not counted.
    pub fn count_shadow(&self, active: Verdict, shadow: Verdict) {
        if let Some(counter) = self
            .shadow_requests
            .get(active.index())
            .and_then(|row| row.get(shadow.index()))
        {
            counter.inc();
        }
    }

    /// Replaces the `patewaf_shadow_model_info` series (`None`: no shadow loaded).
    pub fn set_shadow_model_info(&self, version: Option<&str>) {
        self.shadow_model_info.reset();
        if let Some(version) = version {
            self.shadow_model_info.with_label_values(&[version]).set(1);
        }
    }

    /// Replaces the `patewaf_model_info` series by the one of the new model.
    pub fn set_model_info(&self, version: &str, epsilon: &str, delta: &str, mechanism: &str) {
        self.model_info.reset();
        self.model_info
            .with_label_values(&[version, epsilon, delta, mechanism])
            .set(1);
    }

    /// Adds the `patewaf_shadow_*` metrics to the exposition from now on (called at the first
    /// load of a configured shadow bundle, whether it loads or is rejected).
    pub fn show_shadow(&self) {
        self.shadow_shown.store(true, Ordering::Relaxed);
    }

    /// Adds the `patewaf_capture_*` metrics to the exposition from now on (`capture:` set).
    pub fn show_capture(&self) {
        self.capture_shown.store(true, Ordering::Relaxed);
    }

    /// Counts one scored request of detect mode under its path's route label.
    pub fn count_route(&self, path: &str, verdict: Verdict) {
        let route = self.route_labels.label(path);
        self.route_requests
            .with_label_values(&[route.as_str(), verdict.as_str()])
            .inc();
    }

    /// The Prometheus text exposition of every metric (the shadow and capture ones once shown).
    pub fn render(&self) -> Vec<u8> {
        let mut families = self.registry.gather();
        let mut extended = false;
        for (shown, registry) in [
            (&self.shadow_shown, &self.shadow_registry),
            (&self.capture_shown, &self.capture_registry),
        ] {
            if shown.load(Ordering::Relaxed) {
                families.extend(registry.gather());
                extended = true;
            }
        }
        if extended {
            families.sort_by(|a, b| a.name().cmp(b.name()));
        }
        let mut out = Vec::new();
        // Encoding into a Vec only fails on invalid metric families, which `new` cannot build.
        if let Err(e) = TextEncoder::new().encode(&families, &mut out) {
            tracing::error!("encoding metrics: {e}");
        }
        out
    }
}

/// The capture file's counters (`capture:`; `proxy/src/capture.rs`).
#[derive(Clone)]
pub struct CaptureMetrics {
    /// `patewaf_capture_lines_total`: lines written to the capture file.
    pub lines: IntCounter,
    /// `patewaf_capture_errors_total{reason="write"}`: lines lost because the file could not be
    /// opened, rotated or written.
    pub write_errors: IntCounter,
    /// `patewaf_capture_errors_total{reason="dropped"}`: lines dropped because the writer was
    /// behind (its queue full): the request path never waits for the file.
    pub dropped: IntCounter,
}

impl CaptureMetrics {
    fn new(registry: &Registry) -> Result<Self, ProxyError> {
        let lines = IntCounter::with_opts(
            Opts::new(
                "capture_lines_total",
                "Requests written to the capture file.",
            )
            .namespace("patewaf"),
        )?;
        registry.register(Box::new(lines.clone()))?;
        let errors = counter_vec(
            registry,
            "capture_errors_total",
            "Requests not written to the capture file, by reason (write: the file could not be \
             opened, rotated or written; dropped: the writer was behind).",
            &["reason"],
        )?;
        Ok(Self {
            lines,
            write_errors: errors.with_label_values(&["write"]),
            dropped: errors.with_label_values(&["dropped"]),
        })
    }
}

/// The `route` label of `patewaf_route_requests_total`: the first segment of the request's
/// path as a server resolves it (`/` for the root, `/search` for `/search/x?q=1`, cut to
/// [`RouteLabels::MAX_LEN`] bytes). The first [`RouteLabels::MAX`] distinct segments seen get a
/// label of their own for the life of the process; every later one is `other` (so the series
/// stay bounded, whatever paths clients send).
#[derive(Default)]
pub struct RouteLabels {
    seen: RwLock<Vec<String>>,
}

impl RouteLabels {
    /// Distinct first segments that get a label of their own.
    pub const MAX: usize = 32;
    /// Longest label, in bytes.
    pub const MAX_LEN: usize = 64;

    /// The label of `path` (the request path, without the query), registering its segment if
    /// fewer than [`RouteLabels::MAX`] are.
    pub fn label(&self, path: &str) -> String {
        let segment = first_segment(&crate::config::normalize_path(path));
        let known = |seen: &Vec<String>| seen.contains(&segment);
        if known(&self.seen.read().unwrap_or_else(|e| e.into_inner())) {
            return segment;
        }
        let mut seen = self.seen.write().unwrap_or_else(|e| e.into_inner());
        if known(&seen) {
            return segment;
        }
        if seen.len() < Self::MAX {
            seen.push(segment.clone());
            return segment;
        }
        "other".to_string()
    }
}

/// `/` and the first segment of a normalized path (`/search/x` → `/search`), cut to
/// [`RouteLabels::MAX_LEN`] bytes at a character boundary.
fn first_segment(path: &str) -> String {
    let rest = path.strip_prefix('/').unwrap_or(path);
    let segment = rest.split('/').next().unwrap_or_default();
    let mut end = segment.len().min(RouteLabels::MAX_LEN - 1);
    while !segment.is_char_boundary(end) {
        end -= 1;
    }
    format!("/{}", &segment[..end])
}

/// `patewaf_malformed_requests_total`, `patewaf_detections_total` and
/// `patewaf_over_limit_requests_total`, registered in `registry`, the closed label sets at 0.
fn inspection_metrics(
    registry: &Registry,
) -> Result<(IntCounterVec, IntCounterVec, IntCounterVec), ProxyError> {
    let malformed = counter_vec(
        registry,
        "malformed_requests_total",
        "Request heads refused with 400 by the strict check, by reason.",
        &["reason"],
    )?;
    let detections = counter_vec(
        registry,
        "detections_total",
        "Requests scored at or above the threshold, by verdict and by the placement that scored highest.",
        &["verdict", "placement"],
    )?;
    let over_limit = counter_vec(
        registry,
        "over_limit_requests_total",
        "Requests with more to inspect than a limit allows, by limit and action.",
        &["limit", "action"],
    )?;
    for why in crate::strict::Malformed::ALL {
        malformed.with_label_values(&[why.as_str()]);
    }
    for limit in ["body", "parts"] {
        for action in ["refuse", "pass"] {
            over_limit.with_label_values(&[limit, action]);
        }
    }
    Ok((malformed, detections, over_limit))
}

/// `patewaf_NAME{labels}`, registered in `registry`.
/// `model_reloads_total`, `config_reloads_total` and `promotions_total`, by result.
fn reload_metrics(
    r: &Registry,
) -> Result<(IntCounterVec, IntCounterVec, IntCounterVec), ProxyError> {
    let by_result = |name: &str, help: &str| -> Result<IntCounterVec, ProxyError> {
        Ok(results(counter_vec(r, name, help, &["result"])?))
    };
    Ok((
        by_result("model_reloads_total", "Bundle reload attempts, by result.")?,
        by_result(
            "config_reloads_total",
            "Configuration file reloads, by result (error: the old configuration stays).",
        )?,
        by_result(
            "promotions_total",
            "POST /promote attempts (shadow bundle made active), by result.",
        )?,
    ))
}

/// The shadow bundle's series, in their own registry (exported only while a shadow serves).
struct ShadowMetrics {
    requests: [[IntCounter; Verdict::SCORED.len()]; Verdict::SCORED.len()],
    score: Histogram,
    model_info: IntGaugeVec,
    loads: IntCounterVec,
}

impl ShadowMetrics {
    fn new(sr: &Registry) -> Result<Self, ProxyError> {
        let requests_vec = counter_vec(
            sr,
            "shadow_requests_total",
            "Requests scored by the shadow bundle beside the active one, by the active \
             model's verdict and the verdict the shadow model would have given.",
            &["active_verdict", "shadow_verdict"],
        )?;
        let requests = Verdict::SCORED.map(|active| {
            Verdict::SCORED
                .map(|shadow| requests_vec.with_label_values(&[active.as_str(), shadow.as_str()]))
        });
        Ok(Self {
            requests,
            score: histogram(
                sr,
                "shadow_score",
                "Shadow model probability that a request is malicious.",
                PROBABILITY_BUCKETS.to_vec(),
            )?,
            model_info: gauge_vec(
                sr,
                "shadow_model_info",
                "The shadow model (value 1; absent when no shadow bundle is loaded).",
                &["version"],
            )?,
            loads: results(counter_vec(
                sr,
                "shadow_loads_total",
                "Loads of the shadow bundle (start-up and reloads), by result.",
                &["result"],
            )?),
        })
    }
}

fn int_counter(r: &Registry, name: &str, help: &str) -> Result<IntCounter, ProxyError> {
    let c = IntCounter::with_opts(Opts::new(name, help).namespace("patewaf"))?;
    r.register(Box::new(c.clone()))?;
    Ok(c)
}

fn counter_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntCounterVec, ProxyError> {
    let metric = IntCounterVec::new(Opts::new(name, help).namespace("patewaf"), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

/// `patewaf_NAME{labels}` (a gauge), registered in `registry`.
fn gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntGaugeVec, ProxyError> {
    let metric = IntGaugeVec::new(Opts::new(name, help).namespace("patewaf"), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

/// The histogram `patewaf_NAME` with `buckets`, registered in `registry`.
fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: Vec<f64>,
) -> Result<Histogram, ProxyError> {
    let metric = Histogram::with_opts(
        HistogramOpts::new(name, help)
            .namespace("patewaf")
            .buckets(buckets),
    )?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

/// Twenty equal buckets on [0, 1], written out so that the exposition prints each bound as
/// written here (`le="0.15"`; `i as f64 * 0.05` would print `0.15000000000000002`).
const PROBABILITY_BUCKETS: [f64; 20] = [
    0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85,
    0.9, 0.95, 1.0,
];

/// Scoring time buckets: 10 µs doubling up to 81.92 ms, written out for the same reason.
const DURATION_BUCKETS: [f64; 14] = [
    0.00001, 0.00002, 0.00004, 0.00008, 0.00016, 0.00032, 0.00064, 0.00128, 0.00256, 0.00512,
    0.01024, 0.02048, 0.04096, 0.08192,
];

/// `metric` with its `result="ok"` and `result="error"` children at 0.
fn results(metric: IntCounterVec) -> IntCounterVec {
    for result in ["ok", "error"] {
        metric.with_label_values(&[result]);
    }
    metric
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_the_contract_names() {
        let m = Metrics::new().unwrap();
        m.show_shadow();
        m.count(Verdict::Block);
        m.count_shadow(Verdict::Allow, Verdict::Flag);
        m.set_shadow_model_info(Some("s1"));
        m.set_model_info("v1", "2.5", "1e-5", "gnmax");
        m.set_model_info("v2", "1.0", "1e-5", "gnmax");
        let text = String::from_utf8(m.render()).unwrap();
        for name in [
            "patewaf_requests_total{verdict=\"block\"} 1",
            "patewaf_requests_total{verdict=\"allow\"} 0",
            "patewaf_requests_total{verdict=\"excluded\"} 0",
            "patewaf_requests_total{verdict=\"refused\"} 0",
            "patewaf_score_bucket",
            "patewaf_scoring_duration_seconds_bucket",
            "patewaf_model_reloads_total{result=\"error\"} 0",
            "patewaf_config_reloads_total{result=\"ok\"} 0",
            "patewaf_upstream_errors_total 0",
            "patewaf_ready 0",
            "patewaf_model_info{delta=\"1e-5\",epsilon=\"1.0\",mechanism=\"gnmax\",version=\"v2\"} 1",
            "patewaf_shadow_requests_total{active_verdict=\"allow\",shadow_verdict=\"flag\"} 1",
            "patewaf_shadow_requests_total{active_verdict=\"block\",shadow_verdict=\"block\"} 0",
            "patewaf_shadow_score_bucket",
            "patewaf_shadow_model_info{version=\"s1\"} 1",
            "patewaf_shadow_loads_total{result=\"error\"} 0",
            "patewaf_promotions_total{result=\"ok\"} 0",
            "patewaf_requests_total{verdict=\"unscored\"} 0",
            "patewaf_unscored_requests_total{reason=\"uri_too_long\"} 0",
            "patewaf_unscored_requests_total{reason=\"too_many_headers\"} 0",
            "patewaf_unscored_requests_total{reason=\"headers_too_large\"} 0",
            "patewaf_unscored_requests_total{reason=\"unsupported_encoding\"} 0",
        ] {
            assert!(text.contains(name), "missing {name} in\n{text}");
        }
        assert!(
            !text.contains("version=\"v1\""),
            "old model_info series must go"
        );
    }

    #[test]
    fn shadow_series_are_exported_only_once_shown() {
        let m = Metrics::new().unwrap();
        let text = String::from_utf8(m.render()).unwrap();
        assert!(!text.contains("patewaf_shadow_"), "{text}");
        assert!(text.contains("patewaf_promotions_total{result=\"ok\"} 0"));
        m.show_shadow();
        let text = String::from_utf8(m.render()).unwrap();
        for sample in [
            "patewaf_shadow_requests_total{active_verdict=\"allow\",shadow_verdict=\"allow\"} 0",
            "patewaf_shadow_score_count 0",
            "patewaf_shadow_loads_total{result=\"ok\"} 0",
        ] {
            assert!(text.contains(sample), "missing {sample} in\n{text}");
        }
        // One exposition, families in name order as one registry would give them.
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn route_labels_are_the_first_segment_and_bounded() {
        let labels = RouteLabels::default();
        for (path, label) in [
            ("/", "/"),
            ("/search", "/search"),
            ("/search/", "/search"),
            ("/search/x/y", "/search"),
            ("//static/./app.js", "/static"),
            ("/a/../login.jsp", "/login.jsp"),
            ("/caf%C3%A9/x", "/café"),
        ] {
            assert_eq!(labels.label(path), label, "{path}");
        }
        let long = format!("/{}", "é".repeat(100));
        assert!(labels.label(&long).len() <= RouteLabels::MAX_LEN);
        let known = labels.seen.read().unwrap().len();
        for i in known..RouteLabels::MAX {
            assert_eq!(labels.label(&format!("/p{i}/x")), format!("/p{i}"));
        }
        assert_eq!(labels.label("/one-too-many"), "other");
        assert_eq!(
            labels.label("/p31"),
            "/p31",
            "a labelled route keeps its label"
        );

        let m = Metrics::new().unwrap();
        m.count_route("/search/x", Verdict::Flag);
        m.count_route("/search", Verdict::Allow);
        let text = String::from_utf8(m.render()).unwrap();
        for sample in [
            "patewaf_route_requests_total{route=\"/search\",verdict=\"flag\"} 1",
            "patewaf_route_requests_total{route=\"/search\",verdict=\"allow\"} 1",
        ] {
            assert!(text.contains(sample), "missing {sample} in\n{text}");
        }
        assert!(!text.contains("patewaf_capture_"), "{text}");
        m.show_capture();
        let text = String::from_utf8(m.render()).unwrap();
        for sample in [
            "patewaf_capture_lines_total 0",
            "patewaf_capture_errors_total{reason=\"write\"} 0",
            "patewaf_capture_errors_total{reason=\"dropped\"} 0",
        ] {
            assert!(text.contains(sample), "missing {sample} in\n{text}");
        }
    }

    /// The `le` label values of `family`'s buckets, in exposition order.
    fn bucket_bounds<'a>(text: &'a str, family: &str) -> Vec<&'a str> {
        let prefix = format!("{family}_bucket{{le=\"");
        text.lines()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .filter_map(|l| l.split('"').next())
            .collect()
    }

    #[test]
    fn bucket_bounds_are_printed_as_written() {
        let m = Metrics::new().unwrap();
        m.show_shadow();
        let text = String::from_utf8(m.render()).unwrap();
        let probability = [
            "0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.35", "0.4", "0.45", "0.5", "0.55",
            "0.6", "0.65", "0.7", "0.75", "0.8", "0.85", "0.9", "0.95", "1", "+Inf",
        ];
        assert_eq!(bucket_bounds(&text, "patewaf_score"), probability);
        assert_eq!(bucket_bounds(&text, "patewaf_shadow_score"), probability);
        assert_eq!(
            bucket_bounds(&text, "patewaf_scoring_duration_seconds"),
            [
                "0.00001", "0.00002", "0.00004", "0.00008", "0.00016", "0.00032", "0.00064",
                "0.00128", "0.00256", "0.00512", "0.01024", "0.02048", "0.04096", "0.08192",
                "+Inf",
            ]
        );
    }
}
