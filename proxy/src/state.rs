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
use crate::model::ServingModel;

/// What requests are judged by, put in force as one: the configuration, the active model and
/// the shadow model of one generation. A request takes it once ([`Shared::snapshot`]) and keeps
/// it for all its phases; a reload or a promotion builds the next one whole and puts it in force
/// in one store, so that no request sees a configuration with another generation's model.
#[derive(Clone)]
pub struct Snapshot {
    /// One more than the snapshot it replaced (0: the one `Shared::new` starts with, no model).
    pub generation: u64,
    /// The configuration in force: the one the process started with, or the last one a reload
    /// read and validated (with the restart-only keys of the start).
    pub config: Arc<Config>,
    /// The active model, loaded with `config`: its verdicts are the proxy's. `None` until a
    /// bundle loads (`start_without_model`).
    pub model: Option<Arc<ServingModel>>,
    /// The shadow model (`shadow_bundle`): scores beside the active one, decides nothing.
    pub shadow: Option<Arc<ServingModel>>,
    /// Where the active and the shadow bundles are loaded from.
    pub dirs: BundleDirs,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("generation", &self.generation)
            .field("model", &self.model.as_ref().map(|m| &m.version))
            .field("shadow", &self.shadow.as_ref().map(|m| &m.version))
            .field("dirs", &self.dirs)
            .finish_non_exhaustive()
    }
}

/// Everything the request path and the operations share.
pub struct Shared {
    /// The configuration and models in force, swapped whole ([`Shared::snapshot`]).
    current: RwLock<Arc<Snapshot>>,
    /// The file the configuration was read from, re-read by every reload; `None` (a
    /// configuration built in code): reloads keep the configuration.
    config_file: Mutex<Option<PathBuf>>,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// The audit log.
    pub audit: AuditLog,
    /// The capture file's writer (`capture:`), if configured.
    pub capture: Option<Capture>,
    /// Serializes reloads and promotions (two `POST /reload` at once load one after the other),
    /// so that each builds its snapshot from the one in force.
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

/// A bundle load's outcome.
type Loaded = Result<ServingModel, ProxyError>;

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
        let first = Snapshot {
            generation: 0,
            config: Arc::new(config),
            model: None,
            shadow: None,
            dirs,
        };
        Ok(Arc::new(Self {
            current: RwLock::new(Arc::new(first)),
            config_file: Mutex::new(None),
            metrics,
            audit,
            capture,
            reload_lock: tokio::sync::Mutex::new(()),
            listening: AtomicBool::new(false),
            ready_gauge: Mutex::new(()),
            request_ids: RequestIds::new(),
        }))
    }

    /// The configuration and models in force, as one: a request takes it once and keeps it to
    /// its end, whatever reloads meanwhile.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The configuration in force (for what is not a request; a request reads its snapshot's).
    pub fn config(&self) -> Arc<Config> {
        self.snapshot().config.clone()
    }

    /// The active model in force, if one is loaded.
    pub fn model(&self) -> Option<Arc<ServingModel>> {
        self.snapshot().model.clone()
    }

    /// The shadow model in force, if one is loaded.
    pub fn shadow(&self) -> Option<Arc<ServingModel>> {
        self.snapshot().shadow.clone()
    }

    /// The bundle directories in force.
    pub fn dirs(&self) -> BundleDirs {
        self.snapshot().dirs.clone()
    }

    /// Puts the next snapshot in force in one store; its generation is one more than the one it
    /// replaces. Callers hold the reload lock (or are the start-up load), so `next` was built
    /// from the snapshot it replaces. Then the metrics that name the models follow it.
    fn put_in_force(&self, next: Snapshot) -> Arc<Snapshot> {
        let (next, previous) = {
            let mut current = self
                .current
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let next = Arc::new(Snapshot {
                generation: current.generation + 1,
                ..next
            });
            (next.clone(), std::mem::replace(&mut *current, next))
        };
        if let Some(m) = next
            .model
            .as_ref()
            .filter(|_| !same_model(&next.model, &previous.model))
        {
            self.metrics
                .set_model_info(&m.version, &m.epsilon, &m.delta, &m.mechanism);
        }
        if !same_model(&next.shadow, &previous.shadow) {
            let version = next.shadow.as_ref().map(|m| m.version.as_str());
            self.metrics.set_shadow_model_info(version);
        }
        self.refresh_ready();
        next
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
        self.is_listening() && self.model().is_some()
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

    /// Loads `dir` with the configured threshold override, sessions and scorer: the same for the
    /// active and the shadow bundle, so that the shadow's verdicts are the ones it would give
    /// once promoted.
    fn loader(config: &Config, dir: PathBuf) -> impl FnOnce() -> Loaded {
        let threshold = config.threshold;
        let sessions = config.threads;
        let scorer = config.scorer;
        move || ServingModel::load_with_scorer(&dir, threshold, sessions, scorer)
    }

    /// Loads the configured bundles synchronously and puts them in force (start-up path). The
    /// result is the active bundle's; a shadow bundle that fails to load is logged and counted
    /// (`patewaf_shadow_loads_total{result="error"}`) but does not stop the proxy: it never
    /// decides anything.
    pub fn load_blocking(&self) -> Result<Reloaded, ProxyError> {
        let running = self.snapshot();
        let config = &running.config;
        let active = Self::loader(config, running.dirs.active.clone())();
        let (model, result) = self.active_loaded(active, false, &running);
        let shadow = match running.dirs.shadow.clone() {
            Some(dir) => self
                .shadow_loaded(Self::loader(config, dir.clone())(), &dir)
                .ok(),
            None => None,
        };
        if model.is_some() || shadow.is_some() {
            self.put_in_force(Snapshot {
                model,
                shadow,
                ..Snapshot::clone(&running)
            });
        }
        result
    }

    /// Hot reload (SIGHUP, `POST /reload`): reopens the audit log, re-reads and validates the
    /// configuration file, loads and verifies the active bundle (then the shadow bundle, if any)
    /// with it beside the serving one on a blocking thread, and puts the new configuration and
    /// models in force in one store only when the configuration and the active bundle are good.
    /// A configuration that does not parse or validate, or an active bundle that fails to load,
    /// keeps the old configuration and model (logged, counted in `patewaf_config_reloads_total`
    /// and `patewaf_model_reloads_total`). A rejected shadow keeps the old shadow and does not
    /// stop the rest. Keys that take a restart (listening addresses, threads, log writers) keep
    /// their old values, with a warning.
    pub async fn reload(self: &Arc<Self>) -> ReloadReport {
        let _one_at_a_time = self.reload_lock.lock().await;
        if let Err(e) = self.audit.reopen() {
            tracing::error!("reopening the audit log: {e}");
        }
        let running = self.snapshot();
        let (config, restart_needed) = match self.reread_config(&running.config) {
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
        let dirs = Self::dirs_for(&running, &config);
        let loaded = load_off_thread(Self::loader(&config, dirs.active.clone())).await;
        let (model, active) = self.active_loaded(loaded, true, &running);
        let applied = model.is_some();
        let file = self.config_file();
        if file.is_some() {
            self.count_config_reload(applied);
        }
        // The shadow is loaded with the configuration that will be in force: the new one, or
        // the old one if the active bundle was rejected.
        let next = match model {
            Some(model) => Snapshot {
                generation: running.generation,
                config,
                model: Some(model),
                shadow: None,
                dirs,
            },
            None => Snapshot::clone(&running),
        };
        let shadow = self.reload_shadow(&running, next).await;
        if applied {
            for key in &restart_needed {
                tracing::warn!(
                    key,
                    "configuration key `{key}` changed: it takes a restart to apply, the old value stays in force"
                );
            }
        }
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

    /// Loads the shadow bundle `next` names (if any) with `next`'s configuration, then puts
    /// `next` in force with it — with `running`'s shadow where it was rejected, none where
    /// `next` names none — unless `next` changes nothing (the active bundle and the shadow were
    /// both rejected). Returns the shadow's outcome.
    async fn reload_shadow(
        &self,
        running: &Snapshot,
        mut next: Snapshot,
    ) -> Option<Result<String, ProxyError>> {
        let changed = !same_model(&next.model, &running.model);
        let outcome = match next.dirs.shadow.clone() {
            Some(dir) => {
                let loaded = load_off_thread(Self::loader(&next.config, dir.clone())).await;
                Some(self.shadow_loaded(loaded, &dir))
            }
            None => None,
        };
        next.shadow = match &outcome {
            Some(Ok(model)) => Some(model.clone()),
            Some(Err(_)) => running.shadow.clone(),
            None => None,
        };
        if changed || !same_model(&next.shadow, &running.shadow) {
            self.put_in_force(next);
        }
        outcome.map(|r| r.map(|m| m.version.clone()))
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
    fn dirs_for(running: &Snapshot, config: &Config) -> BundleDirs {
        let mut dirs = running.dirs.clone();
        if config.bundle != running.config.bundle {
            dirs.active = config.bundle.clone();
        }
        if config.shadow_bundle != running.config.shadow_bundle {
            dirs.shadow = config.shadow_bundle.clone();
        }
        dirs
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
    /// every file): what is promoted is what was measured. Then, under the reload lock, one
    /// snapshot with the new model active and no shadow replaces the one in force (requests in
    /// flight finish on the snapshot they started with). From then on reloads load the promoted
    /// directory; the configuration file still names the old `bundle`, so a restart goes back
    /// to it unless the file is updated (the log says so).
    pub async fn promote(self: &Arc<Self>) -> Result<Promoted, ProxyError> {
        let _one_at_a_time = self.reload_lock.lock().await;
        let result = self.promote_locked().await;
        let label = if result.is_ok() { "ok" } else { "error" };
        self.metrics.promotions.with_label_values(&[label]).inc();
        if let Err(e) = &result {
            let serving = self.model().map(|m| m.version.clone());
            tracing::error!(
                serving = serving.as_deref().unwrap_or("none"),
                "promotion refused, the active model stays: {e}"
            );
        }
        result
    }

    async fn promote_locked(self: &Arc<Self>) -> Result<Promoted, ProxyError> {
        let running = self.snapshot();
        let Some(dir) = running.dirs.shadow.clone() else {
            return Err(ProxyError::Promote(
                "no shadow bundle: set `shadow_bundle` in the configuration (a promotion \
                 empties it until the next restart)"
                    .to_string(),
            ));
        };
        let Some(observed) = running.shadow.clone() else {
            return Err(ProxyError::Promote(format!(
                "the shadow bundle {} is not loaded (its last load failed, see \
                 patewaf_shadow_loads_total): nothing was observed to promote; fix it and \
                 POST /reload first",
                dir.display()
            )));
        };
        let model = load_off_thread(Self::loader(&running.config, dir.clone())).await?;
        if model.files != observed.files {
            return Err(ProxyError::Promote(format!(
                "the shadow bundle {} changed on disk since it was loaded (shadowing version \
                 {}, on disk version {}): POST /reload to observe the new one before promoting it",
                dir.display(),
                observed.version,
                model.version
            )));
        }
        let model = Arc::new(model);
        let previous = running.model.as_ref().map(|m| m.version.clone());
        self.put_in_force(Snapshot {
            model: Some(model.clone()),
            shadow: None,
            dirs: BundleDirs {
                active: dir.clone(),
                shadow: None,
            },
            ..Snapshot::clone(&running)
        });
        tracing::warn!(
            version = %model.version,
            previous = previous.as_deref().unwrap_or("none"),
            "shadow bundle {} promoted to active; reloads now load it, but the configuration \
             still names `bundle: {}`: update it (and `shadow_bundle`) to keep this model \
             after a restart",
            dir.display(),
            running.config.bundle.display()
        );
        Ok(Promoted {
            version: model.version.clone(),
            previous,
            dir,
        })
    }

    /// Logs and counts a loaded shadow bundle (or why it was rejected: the caller keeps the old
    /// shadow).
    fn shadow_loaded(
        &self,
        loaded: Loaded,
        dir: &std::path::Path,
    ) -> Result<Arc<ServingModel>, ProxyError> {
        self.metrics.show_shadow();
        let label = if loaded.is_ok() { "ok" } else { "error" };
        self.metrics.shadow_loads.with_label_values(&[label]).inc();
        match loaded {
            Ok(model) => {
                tracing::info!(
                    version = %model.version,
                    threshold = model.threshold,
                    content_only_threshold = model.content_only_threshold,
                    "shadow model loaded from {} (scores beside the active model, decides nothing)",
                    dir.display()
                );
                Ok(Arc::new(model))
            }
            Err(e) => {
                let shadowing = self.shadow().map(|m| m.version.clone());
                tracing::error!(
                    shadowing = shadowing.as_deref().unwrap_or("none"),
                    "shadow bundle rejected, the active model is not affected: {e}"
                );
                Err(e)
            }
        }
    }

    /// Logs and counts a loaded active bundle (`count`: in `patewaf_model_reloads_total`, false
    /// for the start-up load, which is not a reload): the model to put in force (`None`:
    /// rejected, `running`'s stays) and the outcome.
    fn active_loaded(
        &self,
        loaded: Loaded,
        count: bool,
        running: &Snapshot,
    ) -> (Option<Arc<ServingModel>>, Result<Reloaded, ProxyError>) {
        if count {
            let label = if loaded.is_ok() { "ok" } else { "error" };
            self.metrics.reloads.with_label_values(&[label]).inc();
        }
        let previous = running.model.as_ref().map(|m| m.version.clone());
        match loaded {
            Ok(model) => {
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
                let reloaded = Reloaded {
                    version: model.version.clone(),
                    previous,
                };
                (Some(Arc::new(model)), Ok(reloaded))
            }
            Err(e) => {
                tracing::error!(
                    serving = previous.as_deref().unwrap_or("none"),
                    "bundle rejected, the serving model stays: {e}"
                );
                (None, Err(e))
            }
        }
    }
}

/// Whether two slots hold the same loaded model (or are both empty).
fn same_model(a: &Option<Arc<ServingModel>>, b: &Option<Arc<ServingModel>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Runs a bundle load on a blocking thread (hashing, ONNX Runtime sessions and the load-time
/// checks take milliseconds to seconds; the workers keep serving meanwhile).
async fn load_off_thread(load: impl FnOnce() -> Loaded + Send + 'static) -> Loaded {
    tokio::task::spawn_blocking(load)
        .await
        .unwrap_or_else(|e| Err(ProxyError::Server(format!("bundle load task failed: {e}"))))
}
