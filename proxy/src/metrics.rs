//! Prometheus metrics, namespace `patewaf` (names fixed in ARCHITECTURE.md, "proxy metrics":
//! the alert rules and the Grafana dashboard are written against exactly these names).

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::error::ProxyError;

/// The verdicts `patewaf_requests_total` is labelled with (a closed, low-cardinality set).
pub const VERDICTS: [&str; 5] = ["allow", "block", "flag", "error", "excluded"];

/// All metrics of one proxy process, in their own registry.
pub struct Metrics {
    registry: Registry,
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
    /// `patewaf_upstream_errors_total`: requests that failed talking to the upstream.
    pub upstream_errors: IntCounter,
    /// `patewaf_ready`: 1 while a warm model serves.
    pub ready: IntGauge,
}

impl Metrics {
    /// Creates and registers every metric; label values of the closed sets start at 0 so that
    /// rates and dashboards see them before the first event.
    pub fn new() -> Result<Self, ProxyError> {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new("requests_total", "Requests seen by the proxy, by verdict.")
                .namespace("patewaf"),
            &["verdict"],
        )?;
        // Probabilities: twenty equal buckets on [0, 1].
        let score = Histogram::with_opts(
            HistogramOpts::new("score", "Student probability that a request is malicious.")
                .namespace("patewaf")
                .buckets((1..=20).map(|i| f64::from(i) * 0.05).collect()),
        )?;
        let scoring_duration = Histogram::with_opts(
            HistogramOpts::new(
                "scoring_duration_seconds",
                "Time to featurize and score one request.",
            )
            .namespace("patewaf")
            .buckets(prometheus::exponential_buckets(10e-6, 2.0, 14)?),
        )?;
        let model_info = IntGaugeVec::new(
            Opts::new("model_info", "The serving model (value 1).").namespace("patewaf"),
            &["version", "epsilon", "delta", "mechanism"],
        )?;
        let reloads = IntCounterVec::new(
            Opts::new("model_reloads_total", "Bundle reload attempts, by result.")
                .namespace("patewaf"),
            &["result"],
        )?;
        let upstream_errors = IntCounter::with_opts(
            Opts::new(
                "upstream_errors_total",
                "Requests that failed talking to the upstream.",
            )
            .namespace("patewaf"),
        )?;
        let ready = IntGauge::with_opts(
            Opts::new("ready", "1 while a verified, warmed-up model serves.").namespace("patewaf"),
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(score.clone()))?;
        registry.register(Box::new(scoring_duration.clone()))?;
        registry.register(Box::new(model_info.clone()))?;
        registry.register(Box::new(reloads.clone()))?;
        registry.register(Box::new(upstream_errors.clone()))?;
        registry.register(Box::new(ready.clone()))?;
        for verdict in VERDICTS {
            requests.with_label_values(&[verdict]);
        }
        for result in ["ok", "error"] {
            reloads.with_label_values(&[result]);
        }
        Ok(Self {
            registry,
            requests,
            score,
            scoring_duration,
            model_info,
            reloads,
            upstream_errors,
            ready,
        })
    }

    /// Counts one request with `verdict` (one of [`VERDICTS`]).
    pub fn count(&self, verdict: &str) {
        self.requests.with_label_values(&[verdict]).inc();
    }

    /// Replaces the `patewaf_model_info` series by the one of the new model.
    pub fn set_model_info(&self, version: &str, epsilon: &str, delta: &str, mechanism: &str) {
        self.model_info.reset();
        self.model_info
            .with_label_values(&[version, epsilon, delta, mechanism])
            .set(1);
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Encoding into a Vec only fails on invalid metric families, which `new` cannot build.
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!("encoding metrics: {e}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_the_contract_names() {
        let m = Metrics::new().unwrap();
        m.count("block");
        m.set_model_info("v1", "2.5", "1e-5", "gnmax");
        m.set_model_info("v2", "1.0", "1e-5", "gnmax");
        let text = String::from_utf8(m.render()).unwrap();
        for name in [
            "patewaf_requests_total{verdict=\"block\"} 1",
            "patewaf_requests_total{verdict=\"allow\"} 0",
            "patewaf_requests_total{verdict=\"excluded\"} 0",
            "patewaf_score_bucket",
            "patewaf_scoring_duration_seconds_bucket",
            "patewaf_model_reloads_total{result=\"error\"} 0",
            "patewaf_upstream_errors_total 0",
            "patewaf_ready 0",
            "patewaf_model_info{delta=\"1e-5\",epsilon=\"1.0\",mechanism=\"gnmax\",version=\"v2\"} 1",
        ] {
            assert!(text.contains(name), "missing {name} in\n{text}");
        }
        assert!(
            !text.contains("version=\"v1\""),
            "old model_info series must go"
        );
    }
}
