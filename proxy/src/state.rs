//! State shared by the proxy service, the admin server and the signal handler; hot reload.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::audit::AuditLog;
use crate::capture::Capture;
use crate::config::Config;
use crate::error::ProxyError;
use crate::metrics::Metrics;
use crate::model::{ModelSlot, ServingModel};

/// Everything the request path and the operations share.
pub struct Shared {
    /// The configuration in force: the one the process started with, or the last one a reload
    /// read and validated ([`Shared::config`]).
    config: RwLock<Arc<Config>>,
    /// The file the configuration was read from, re-read by every reload; `None` (a
    /// configuration built in code): reloads keep the configuration.
    config_file: Mutex<Option<PathBuf>>,
    /// The serving (active) model: its verdicts are the proxy's.
    pub model: ModelSlot,
    /// The shadow model (`shadow_bundle`): scores beside the active one, decides nothing.
    pub shadow: ModelSlot,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// The audit log.
    pub audit: AuditLog,
    /// The capture file's writer (`capture:`), if configured.
    pub capture: Option<Capture>,
    /// Where the active and the shadow bundles are loaded from (the config's `bundle` and
    /// `shadow_bundle`, until `POST /promote` makes the shadow directory the active one).
    dirs: Mutex<BundleDirs>,
    /// Serializes reloads and promotions (two `POST /reload` at once load one after the other).
    reload_lock: tokio::sync::Mutex<()>,
    /// Whether the proxy's listener is bound (see [`Shared::set_listening`]).
    listening: AtomicBool,
    /// Serializes the updates of `patewaf_ready`, so that the last one sees both the model and
    /// the listener as they are.
    ready_gauge: Mutex<()>,
    request_ids: RequestIds,
}

/// The bundle directories in force.
#[derive(Debug, Clone, PartialEq)]
pub struct BundleDirs {
    /// The active bundle (the config's `bundle`, or the promoted shadow).
    pub active: PathBuf,
    /// The shadow bundle, if any (the config's `shadow_bundle`; none after a promotion).
    pub shadow: Option<PathBuf>,
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

/// What a reload did to the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigReloaded {
    /// The file re-read; `None` when the configuration was not read from a file (kept as is).
    pub file: Option<PathBuf>,
    /// Whether it is in force: false when the active bundle was rejected (the old configuration
    /// stays with the old model).
    pub applied: bool,
    /// The keys changed in the file that take a restart to apply (their old values stay in
    /// force; a warning names each).
    pub restart_needed: Vec<&'static str>,
}

/// What a reload (SIGHUP, `POST /reload`) did to the configuration and each slot.
#[derive(Debug)]
pub struct ReloadReport {
    /// The configuration: re-read, validated and in force, or rejected (the old one stays, and
    /// nothing else is reloaded).
    pub config: Result<ConfigReloaded, ProxyError>,
    /// The active bundle: swapped in, or rejected (the old model keeps serving, and the old
    /// configuration with it). `None`: not loaded, the configuration was rejected.
    pub active: Option<Result<Reloaded, ProxyError>>,
    /// The shadow bundle, when one is configured: the version now shadowing, or why it was
    /// rejected (the previous shadow, if any, keeps scoring).
    pub shadow: Option<Result<String, ProxyError>>,
}

/// Outcome of a promotion.
#[derive(Debug, Clone, PartialEq)]
pub struct Promoted {
    /// Version now active (the former shadow).
    pub version: String,
    /// Version that was active before.
    pub previous: Option<String>,
    /// The directory now loaded as the active bundle (the former `shadow_bundle`).
    pub dir: PathBuf,
}

impl Shared {
    /// Opens the audit log and creates the metrics; no model yet (see [`Shared::load_blocking`]).
    pub fn new(config: Config) -> Result<Arc<Self>, ProxyError> {
        let audit = AuditLog::open(&config.audit_log)?;
        let metrics = Metrics::new()?;
        let capture = match &config.capture {
            Some(c) => {
                metrics.show_capture();
                Some(Capture::start(c, metrics.capture.clone())?)
            }
            None => None,
        };
        let dirs = BundleDirs {
            active: config.bundle.clone(),
            shadow: config.shadow_bundle.clone(),
        };
        Ok(Arc::new(Self {
            config: RwLock::new(Arc::new(config)),
            config_file: Mutex::new(None),
            model: ModelSlot::default(),
            shadow: ModelSlot::default(),
            metrics,
            audit,
            capture,
            dirs: Mutex::new(dirs),
            reload_lock: tokio::sync::Mutex::new(()),
            listening: AtomicBool::new(false),
            ready_gauge: Mutex::new(()),
            request_ids: RequestIds::new(),
        }))
    }

    /// The configuration in force (a request takes it once and keeps it to its end).
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Names the file the configuration was read from: reloads re-read it.
    pub fn set_config_file(&self, path: PathBuf) {
        *self
            .config_file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(path);
    }

    fn config_file(&self) -> Option<PathBuf> {
        self.config_file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Records that the proxy's listening socket is bound (`server::build` watches for it):
    /// until then the proxy is not ready, whatever model is loaded.
    pub fn set_listening(&self) {
        self.listening.store(true, Ordering::SeqCst);
        self.refresh_ready();
    }

    /// Whether the proxy's listening socket is bound.
    pub fn is_listening(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// Ready (`GET /ready` 200, `patewaf_ready 1`): a verified, warm model serves and the
    /// listener is bound.
    pub fn is_ready(&self) -> bool {
        self.is_listening() && self.model.get().is_some()
    }

    /// Sets `patewaf_ready` from [`Shared::is_ready`].
    fn refresh_ready(&self) {
        let _one_at_a_time = self
            .ready_gauge
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.metrics.ready.set(i64::from(self.is_ready()));
    }

    /// A fresh request id.
    pub fn next_request_id(&self) -> String {
        self.request_ids.next()
    }

    /// The bundle directories in force.
    pub fn dirs(&self) -> BundleDirs {
        self.dirs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Loads `dir` with the configured threshold override, sessions and scorer: the same for the
    /// active and the shadow bundle, so that the shadow's verdicts are the ones it would give
    /// once promoted.
    fn loader(config: &Config, dir: PathBuf) -> impl FnOnce() -> Result<ServingModel, ProxyError> {
        let threshold = config.threshold;
        let sessions = config.threads;
        let scorer = config.scorer;
        move || ServingModel::load_with_scorer(&dir, threshold, sessions, scorer)
    }

    /// Loads the configured bundles synchronously and swaps them in (start-up path). The
    /// result is the active bundle's; a shadow bundle that fails to load is logged and counted
    /// (`patewaf_shadow_loads_total{result="error"}`) but does not stop the proxy: it never
    /// decides anything.
    pub fn load_blocking(&self) -> Result<Reloaded, ProxyError> {
        let dirs = self.dirs();
        let config = self.config();
        let active = self.install(Self::loader(&config, dirs.active)(), false);
        if let Some(dir) = dirs.shadow {
            let _ = self.install_shadow(Self::loader(&config, dir.clone())(), &dir);
        }
        active
    }

    /// Hot reload (SIGHUP, `POST /reload`): reopens the audit log, re-reads and validates the
    /// configuration file, loads and verifies the active bundle (then the shadow bundle, if any)
    /// with it beside the serving one on a blocking thread, and puts the new configuration and
    /// model in force together only when both are good. A configuration that does not parse or
    /// validate, or an active bundle that fails to load, keeps the old configuration and model
    /// (logged, counted in `patewaf_config_reloads_total` and `patewaf_model_reloads_total`). A
    /// rejected shadow keeps the old shadow and does not stop the rest. Keys that take a restart
    /// (listening addresses, threads, log writers) keep their old values, with a warning.
    pub async fn reload(self: &Arc<Self>) -> ReloadReport {
        let _one_at_a_time = self.reload_lock.lock().await;
        if let Err(e) = self.audit.reopen() {
            tracing::error!("reopening the audit log: {e}");
        }
        let running = self.config();
        let (config, restart_needed) = match self.reread_config(&running) {
            Ok(read) => read,
            Err(e) => {
                self.count_config_reload(false);
                tracing::error!("configuration rejected, the old one stays (and the model): {e}");
                return ReloadReport {
                    config: Err(e),
                    active: None,
                    shadow: None,
                };
            }
        };
        let dirs = self.dirs_for(&running, &config);
        let loaded = load_off_thread(Self::loader(&config, dirs.active.clone())).await;
        let applied = loaded.is_ok();
        if applied {
            self.put_in_force(config, dirs, &restart_needed);
        }
        let active = self.install(loaded, true);
        let file = self.config_file();
        if file.is_some() {
            self.count_config_reload(applied);
        }
        // With the configuration now in force (the old one if the active bundle was rejected).
        let in_force = self.config();
        let shadow = match self.dirs().shadow {
            Some(dir) => Some(self.install_shadow(
                load_off_thread(Self::loader(&in_force, dir.clone())).await,
                &dir,
            )),
            None => None,
        };
        ReloadReport {
            config: Ok(ConfigReloaded {
                file,
                applied,
                restart_needed,
            }),
            active: Some(active),
            shadow,
        }
    }

    /// The configuration file read again and validated, with the restart-only keys of `running`
    /// ([`Config::with_restart_keys_of`]), and the names of those that changed; `running` itself
    /// when the configuration was not read from a file.
    fn reread_config(
        &self,
        running: &Arc<Config>,
    ) -> Result<(Arc<Config>, Vec<&'static str>), ProxyError> {
        let Some(file) = self.config_file() else {
            return Ok((running.clone(), Vec::new()));
        };
        let read = Config::load(&file)?;
        let restart_needed = running.restart_keys_changed(&read);
        let config = Config::with_restart_keys_of(read, running);
        Ok((Arc::new(config), restart_needed))
    }

    /// The bundle directories a reload loads: those the new configuration names where it
    /// changed `bundle` or `shadow_bundle`, else those in force (a promoted shadow stays active).
    fn dirs_for(&self, running: &Config, config: &Config) -> BundleDirs {
        let mut dirs = self.dirs();
        if config.bundle != running.bundle {
            dirs.active = config.bundle.clone();
        }
        if config.shadow_bundle != running.shadow_bundle {
            dirs.shadow = config.shadow_bundle.clone();
        }
        dirs
    }

    /// Makes `config` (and the bundle directories it names) the ones in force, and warns about
    /// each changed key that takes a restart. A shadow bundle no longer named stops shadowing.
    fn put_in_force(&self, config: Arc<Config>, dirs: BundleDirs, restart_needed: &[&str]) {
        if dirs.shadow.is_none() && self.shadow.take().is_some() {
            self.metrics.set_shadow_model_info(None);
        }
        for key in restart_needed {
            tracing::warn!(
                key,
                "configuration key `{key}` changed: it takes a restart to apply, the old value stays in force"
            );
        }
        *self
            .dirs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = dirs;
        *self
            .config
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = config;
    }

    /// Counts a reload of the configuration file in `patewaf_config_reloads_total{result}`.
    fn count_config_reload(&self, ok: bool) {
        let label = if ok { "ok" } else { "error" };
        self.metrics
            .config_reloads
            .with_label_values(&[label])
            .inc();
    }

    /// `POST /promote`: makes the shadow bundle the active one. The shadow directory is loaded
    /// and verified again exactly as a reload does (a bad bundle is refused and the active model
    /// keeps serving), and it must be the bundle the shadow was observing (same sha256 for
    /// every file): what is promoted is what was measured. Then, under the reload lock, the new
    /// model replaces the active one (requests in flight finish on the model they started
    /// with; every later request gets the new one) and the shadow slot is emptied. From then on
    /// reloads load the promoted directory; the configuration file still names the old
    /// `bundle`, so a restart goes back to it unless the file is updated (the log says so).
    pub async fn promote(self: &Arc<Self>) -> Result<Promoted, ProxyError> {
        let _one_at_a_time = self.reload_lock.lock().await;
        let result = self.promote_locked().await;
        let label = if result.is_ok() { "ok" } else { "error" };
        self.metrics.promotions.with_label_values(&[label]).inc();
        if let Err(e) = &result {
            let serving = self.model.get().map(|m| m.version.clone());
            tracing::error!(
                serving = serving.as_deref().unwrap_or("none"),
                "promotion refused, the active model stays: {e}"
            );
        }
        result
    }

    async fn promote_locked(self: &Arc<Self>) -> Result<Promoted, ProxyError> {
        let Some(dir) = self.dirs().shadow else {
            return Err(ProxyError::Promote(
                "no shadow bundle: set `shadow_bundle` in the configuration (a promotion \
                 empties it until the next restart)"
                    .to_string(),
            ));
        };
        let Some(observed) = self.shadow.get() else {
            return Err(ProxyError::Promote(format!(
                "the shadow bundle {} is not loaded (its last load failed, see \
                 patewaf_shadow_loads_total): nothing was observed to promote; fix it and \
                 POST /reload first",
                dir.display()
            )));
        };
        let model = load_off_thread(Self::loader(&self.config(), dir.clone())).await?;
        if model.files != observed.files {
            return Err(ProxyError::Promote(format!(
                "the shadow bundle {} changed on disk since it was loaded (shadowing version \
                 {}, on disk version {}): POST /reload to observe the new one before promoting it",
                dir.display(),
                observed.version,
                model.version
            )));
        }
        let (model, previous) = self.activate(model);
        self.shadow.take();
        self.metrics.set_shadow_model_info(None);
        {
            let mut dirs = self
                .dirs
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            dirs.active = dir.clone();
            dirs.shadow = None;
        }
        tracing::warn!(
            version = %model.version,
            previous = previous.as_deref().unwrap_or("none"),
            "shadow bundle {} promoted to active; reloads now load it, but the configuration \
             still names `bundle: {}`: update it (and `shadow_bundle`) to keep this model \
             after a restart",
            dir.display(),
            self.config().bundle.display()
        );
        Ok(Promoted {
            version: model.version.clone(),
            previous,
            dir,
        })
    }

    /// Swaps a loaded shadow model in (or logs and counts why not; the old shadow stays).
    fn install_shadow(
        &self,
        result: Result<ServingModel, ProxyError>,
        dir: &std::path::Path,
    ) -> Result<String, ProxyError> {
        self.metrics.show_shadow();
        match result {
            Ok(model) => {
                let model = Arc::new(model);
                self.metrics.set_shadow_model_info(Some(&model.version));
                let previous = self.shadow.swap(model.clone()).map(|m| m.version.clone());
                self.metrics.shadow_loads.with_label_values(&["ok"]).inc();
                tracing::info!(
                    version = %model.version,
                    previous = previous.as_deref().unwrap_or("none"),
                    threshold = model.threshold,
                    content_only_threshold = model.content_only_threshold,
                    "shadow model loaded from {} (scores beside the active model, decides nothing)",
                    dir.display()
                );
                Ok(model.version.clone())
            }
            Err(e) => {
                self.metrics
                    .shadow_loads
                    .with_label_values(&["error"])
                    .inc();
                let shadowing = self.shadow.get().map(|m| m.version.clone());
                tracing::error!(
                    shadowing = shadowing.as_deref().unwrap_or("none"),
                    "shadow bundle rejected, the active model is not affected: {e}"
                );
                Err(e)
            }
        }
    }

    /// Swaps a loaded model in; `count` is false for the start-up load, which is not a reload.
    /// Makes `model` the active one (reload and promote alike): its `patewaf_model_info`, one
    /// atomic swap, ready (once the listener is bound). Returns it and the version it replaced.
    fn activate(&self, model: ServingModel) -> (Arc<ServingModel>, Option<String>) {
        let model = Arc::new(model);
        self.metrics.set_model_info(
            &model.version,
            &model.epsilon,
            &model.delta,
            &model.mechanism,
        );
        let previous = self.model.swap(model.clone()).map(|m| m.version.clone());
        self.refresh_ready();
        (model, previous)
    }

    fn install(
        &self,
        result: Result<ServingModel, ProxyError>,
        count: bool,
    ) -> Result<Reloaded, ProxyError> {
        match result {
            Ok(model) => {
                let (model, previous) = self.activate(model);
                if count {
                    self.metrics.reloads.with_label_values(&["ok"]).inc();
                }
                tracing::info!(
                    version = %model.version,
                    previous = previous.as_deref().unwrap_or("none"),
                    threshold = model.threshold,
                    content_only_threshold = model.content_only_threshold,
                    part_model = model.has_part_model(),
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

/// Runs a bundle load on a blocking thread (hashing, ONNX Runtime sessions and the load-time
/// checks take milliseconds to seconds; the workers keep serving meanwhile).
async fn load_off_thread(
    load: impl FnOnce() -> Result<ServingModel, ProxyError> + Send + 'static,
) -> Result<ServingModel, ProxyError> {
    tokio::task::spawn_blocking(load)
        .await
        .unwrap_or_else(|e| Err(ProxyError::Server(format!("bundle load task failed: {e}"))))
}
