//! State shared by the proxy service, the admin server and the signal handler; hot reload.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::audit::AuditLog;
use crate::config::Config;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::model::{ModelSlot, ServingModel};

/// Everything the request path and the operations share.
pub struct Shared {
    /// The configuration the process started with.
    pub config: Config,
    /// The serving model.
    pub model: ModelSlot,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// The audit log.
    pub audit: AuditLog,
    /// Serializes reloads (two `POST /reload` at once load one after the other).
    reload_lock: tokio::sync::Mutex<()>,
    request_ids: RequestIds,
}

/// Request ids: a per-process random-ish prefix and a counter, unique within a process and
/// unlikely to repeat across restarts; cheap (no syscall per request).
struct RequestIds {
    prefix: u32,
    counter: AtomicU64,
}

impl RequestIds {
    fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        // Mix time and pid so that two proxies started in the same instant differ.
        let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
        let prefix = (mixed ^ (mixed >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        Self {
            prefix: prefix as u32,
            counter: AtomicU64::new(1),
        }
    }

    fn next(&self) -> String {
        format!(
            "{:08x}-{:010x}",
            self.prefix,
            self.counter.fetch_add(1, Ordering::Relaxed)
        )
    }
}

/// Outcome of a reload that swapped the model in.
#[derive(Debug, Clone, PartialEq)]
pub struct Reloaded {
    /// Version now serving.
    pub version: String,
    /// Version that served before.
    pub previous: Option<String>,
}

impl Shared {
    /// Opens the audit log and creates the metrics; no model yet (see [`Shared::reload`]).
    pub fn new(config: Config) -> Result<Arc<Self>, ProxyError> {
        let audit = AuditLog::open(&config.audit_log)?;
        let metrics = Metrics::new()?;
        Ok(Arc::new(Self {
            config,
            model: ModelSlot::default(),
            metrics,
            audit,
            reload_lock: tokio::sync::Mutex::new(()),
            request_ids: RequestIds::new(),
        }))
    }

    /// A fresh request id.
    pub fn next_request_id(&self) -> String {
        self.request_ids.next()
    }

    /// Loads the configured bundle synchronously and swaps it in (start-up path).
    pub fn load_blocking(&self) -> Result<Reloaded, ProxyError> {
        let result = ServingModel::load_with_scorer(
            &self.config.bundle,
            self.config.threshold,
            self.config.threads,
            self.config.scorer,
        );
        self.install(result, false)
    }

    /// Hot reload (SIGHUP, `POST /reload`): reopens the audit log, loads and verifies the bundle
    /// beside the serving model on a blocking thread, and swaps it in only when it is complete and
    /// warm. On error the old model keeps serving; the error is logged and counted.
    pub async fn reload(self: &Arc<Self>) -> Result<Reloaded, ProxyError> {
        let _one_at_a_time = self.reload_lock.lock().await;
        if let Err(e) = self.audit.reopen() {
            tracing::error!("reopening the audit log: {e}");
        }
        let dir = self.config.bundle.clone();
        let threshold = self.config.threshold;
        let sessions = self.config.threads;
        let scorer = self.config.scorer;
        let result = tokio::task::spawn_blocking(move || {
            ServingModel::load_with_scorer(&dir, threshold, sessions, scorer)
        })
        .await
        .unwrap_or_else(|e| Err(ProxyError::Server(format!("reload task failed: {e}"))));
        self.install(result, true)
    }

    /// Swaps a loaded model in; `count` is false for the start-up load, which is not a reload.
    fn install(
        &self,
        result: Result<ServingModel, ProxyError>,
        count: bool,
    ) -> Result<Reloaded, ProxyError> {
        match result {
            Ok(model) => {
                let model = Arc::new(model);
                self.metrics.set_model_info(
                    &model.version,
                    &model.epsilon,
                    &model.delta,
                    &model.mechanism,
                );
                let previous = self.model.swap(model.clone()).map(|m| m.version.clone());
                if count {
                    self.metrics.reloads.with_label_values(&["ok"]).inc();
                }
                self.metrics.ready.set(1);
                tracing::info!(
                    version = %model.version,
                    previous = previous.as_deref().unwrap_or("none"),
                    threshold = model.threshold,
                    scorer = model.scorer().as_str(),
                    onnxruntime_sessions = model.sessions(),
                    "model loaded from {}",
                    model.dir.display()
                );
                Ok(Reloaded {
                    version: model.version.clone(),
                    previous,
                })
            }
            Err(e) => {
                if count {
                    self.metrics.reloads.with_label_values(&["error"]).inc();
                }
                let serving = self.model.get().map(|m| m.version.clone());
                tracing::error!(
                    serving = serving.as_deref().unwrap_or("none"),
                    "bundle rejected, the serving model stays: {e}"
                );
                Err(e)
            }
        }
    }
}
