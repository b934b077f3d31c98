//! Builds and runs the pingora server: the proxy service, the admin service and the SIGHUP
//! handler, around one [`Shared`] state.

use std::path::Path;
use std::sync::Arc;

use pingora::proxy::http_proxy;
use pingora::server::configuration::{Opt, ServerConf};
use pingora::server::{ListenFds, RuntimeOpts, Server, ShutdownWatch};
use pingora::services::background::background_service;
use pingora::services::listening::Service;
use pingora::services::Service as ServiceTrait;

use crate::admin::{AdminApp, HangupReloader};
use crate::config::{Config, LogLevel};
use crate::error::ProxyError;
use crate::filter::WafProxy;
use crate::slowloris::{HeadDeadlineApp, StrictCounters};
use crate::state::Shared;

/// How the process log is written on stderr (`pate-proxy --log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One line per event: time, level, message, fields; coloured only on a terminal.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `message` and the event's fields).
    Json,
}

/// Sets up the process log on stderr at `level` (`RUST_LOG` overrides it) in `format`;
/// pingora's `log` records are forwarded to the same subscriber. Text carries ANSI colour codes
/// only when stderr is a terminal (not in a file, a pipe or journald).
pub fn init_logging(level: LogLevel, format: LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level.as_str()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    // A second initialization (tests, benches) is not an error worth failing for.
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
}

/// Loads ONNX Runtime and the bundle (failing fast with a clear error), then runs the proxy
/// until SIGINT (fast) or SIGTERM (graceful: waits at most `grace_period_seconds`).
/// `upgrade`: take the listening sockets over from a running instance (pingora graceful upgrade).
/// `config_file`, where `config` was read from, is read again by every reload.
pub fn run(config: Config, config_file: &Path, upgrade: bool) -> Result<(), ProxyError> {
    guard_hangup_during_startup();
    let shared = load(config)?;
    shared.set_config_file(config_file.to_path_buf());
    let server = build(shared, upgrade)?;
    server.run(pingora::server::RunArgs::default());
    Ok(())
}

/// Loads ONNX Runtime and the bundle into the state every service shares; an unloadable bundle
/// is an error unless `start_without_model` is set.
pub fn load(config: Config) -> Result<Arc<Shared>, ProxyError> {
    bundle::init_onnxruntime(config.onnxruntime_library.as_deref())
        .map_err(|e| ProxyError::Server(e.to_string()))?;
    let shared = Shared::new(config)?;
    let config = shared.config();
    let model = match shared.load_blocking() {
        Ok(loaded) => loaded.version,
        Err(e) if config.start_without_model => {
            tracing::error!(
                on_error = ?config.on_error,
                "starting without a model (not ready) because start_without_model is set: {e}"
            );
            "none".to_string()
        }
        Err(e) => return Err(e),
    };
    tracing::info!(
        listen = %config.listen,
        upstream = %config.upstream,
        admin = %config.admin_listen,
        mode = config.mode.as_str(),
        model = %model,
        "pate-proxy starting"
    );
    Ok(shared)
}

/// The pingora server around `shared`: the proxy service (behind the head deadline), the admin
/// service and the SIGHUP reloader, bootstrapped and ready to `run`. In-process tests
/// (`proxy/tests/in_process.rs`) run it on a thread of their own.
pub fn build(shared: Arc<Shared>, upgrade: bool) -> Result<Server, ProxyError> {
    let config = shared.config();
    let conf = ServerConf {
        threads: config.threads,
        grace_period_seconds: Some(config.grace_period_seconds),
        graceful_shutdown_timeout_seconds: Some(config.grace_period_seconds.max(1)),
        upgrade_sock: config.upgrade_sock_path().to_string_lossy().into_owned(),
        pid_file: std::env::temp_dir()
            .join(format!("pate-proxy-{}.pid", std::process::id()))
            .to_string_lossy()
            .into_owned(),
        ..ServerConf::default()
    };
    let opt = Opt {
        upgrade,
        ..Opt::default()
    };
    let mut server = Server::new_with_opt_and_conf(Some(opt), conf);
    server.bootstrap();

    // Every accepted connection gets a deadline for its request heads (slowloris, issue 8).
    let app = HeadDeadlineApp::new(
        http_proxy(&server.configuration, WafProxy::new(shared.clone())?),
        std::time::Duration::from_millis(config.client_header_timeout_ms),
    )
    .with_counters(StrictCounters {
        malformed: shared.metrics.malformed.clone(),
        requests: shared.metrics.requests.clone(),
    });
    let mut proxy = Service::new("pate-proxy".to_string(), app);
    let listen = config.listen.to_string();
    proxy.add_tcp(&listen);
    let proxy = MarkBound {
        inner: proxy,
        addr: listen,
        shared: shared.clone(),
    };
    let mut admin = Service::new(
        "pate-proxy admin".to_string(),
        AdminApp::new(shared.clone()),
    );
    admin.add_tcp(&config.admin_listen.to_string());
    let hangup = background_service("pate-proxy SIGHUP reload", HangupReloader::new(shared));
    server.add_service(proxy);
    server.add_service(admin);
    server.add_service(hangup);
    Ok(server)
}

/// A listening service that tells `shared` when its address is bound ([`Shared::set_listening`]),
/// so that `/ready` and `patewaf_ready` wait for the listener. pingora binds inside the
/// service's own start (retrying while the address is in use) and records every socket it binds
/// in the server's listen-fd table, the one it hands to a process started with `--upgrade`
/// (which finds the inherited sockets there from the start): the address's entry in that table
/// is the sign that the socket is bound.
struct MarkBound<S> {
    inner: S,
    /// The address as given to `add_tcp`, the table's key.
    addr: String,
    shared: Arc<Shared>,
}

#[async_trait::async_trait]
impl<S: ServiceTrait> ServiceTrait for MarkBound<S> {
    async fn start_service(
        &mut self,
        fds: Option<ListenFds>,
        shutdown: ShutdownWatch,
        listeners_per_fd: usize,
    ) {
        if let Some(table) = fds.clone() {
            let (addr, shared, mut stop) =
                (self.addr.clone(), self.shared.clone(), shutdown.clone());
            tokio::spawn(async move {
                while table.lock().get(&addr).is_none() {
                    tokio::select! {
                        _ = stop.changed() => return,
                        () = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
                    }
                }
                tracing::info!("listening on {addr}");
                shared.set_listening();
            });
        }
        self.inner
            .start_service(fds, shutdown, listeners_per_fd)
            .await;
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn threads(&self) -> Option<usize> {
        self.inner.threads()
    }

    fn runtime_opts_override(&self, global: &RuntimeOpts) -> Option<RuntimeOpts> {
        self.inner.runtime_opts_override(global)
    }

    fn listen_addresses(&self) -> Option<Vec<String>> {
        self.inner.listen_addresses()
    }
}

/// SIGHUP's default action terminates the process. `systemctl reload` or logrotate may send it
/// while the bundle is still loading, before the SIGHUP service listens; registering tokio's
/// handler now (it stays installed for the life of the process) turns such an early SIGHUP into
/// a no-op instead of a crash.
fn guard_hangup_during_startup() {
    let registered = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(|rt| {
            rt.block_on(async {
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).is_ok()
            })
        });
    if !matches!(registered, Ok(true)) {
        tracing::warn!("could not register a SIGHUP handler early; a SIGHUP during start-up would stop the proxy");
    }
}

/// What `check-config` verifies: the YAML (every key known, contract keys present, values in
/// range) and the bundle it names (hashes and versions, without ONNX Runtime).
pub fn check_config(config: &Config) -> Result<String, ProxyError> {
    let bundle = bundle::Bundle::load(&config.bundle).map_err(|e| ProxyError::Config {
        path: config.bundle.clone(),
        message: format!("key `bundle`: {e}"),
    })?;
    let audit_dir = match config.audit_log.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !audit_dir.is_dir() {
        return Err(ProxyError::Config {
            path: config.audit_log.clone(),
            message: format!(
                "key `audit_log`: directory {} does not exist",
                audit_dir.display()
            ),
        });
    }
    if let Some(capture) = &config.capture {
        let dir = match capture.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(ProxyError::Config {
                path: capture.path.clone(),
                message: format!(
                    "key `capture.path`: directory {} does not exist",
                    dir.display()
                ),
            });
        }
    }
    let threshold = match (config.threshold, bundle.manifest.content_only_threshold) {
        (Some(t), _) => t.to_string(),
        (None, Some(content)) => format!("{}, content alone {content}", bundle.manifest.threshold),
        (None, None) => bundle.manifest.threshold.to_string(),
    };
    let shadow = match &config.shadow_bundle {
        Some(dir) => {
            let shadow = bundle::Bundle::load(dir).map_err(|e| ProxyError::Config {
                path: dir.clone(),
                message: format!("key `shadow_bundle`: {e}"),
            })?;
            format!(
                ", shadow bundle {} (model {})",
                dir.display(),
                shadow.manifest.model_version
            )
        }
        None => String::new(),
    };
    let capture = config.capture.as_ref().map_or(String::new(), |c| {
        let (path, max, files) = (c.path.display(), c.max_bytes, c.max_files);
        format!(", capture {path} (rotated at {max} bytes, {files} kept)")
    });
    Ok(format!(
        "ok: listen {} → upstream {}, admin {}, mode {}, bundle {} (model {}, threshold {threshold}){shadow}, audit log {}{capture}",
        config.listen,
        config.upstream,
        config.admin_listen,
        config.mode.as_str(),
        config.bundle.display(),
        bundle.manifest.model_version,
        config.audit_log.display()
    ))
}
