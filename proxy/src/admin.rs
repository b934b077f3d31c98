//! The admin server (its own address, a pingora HTTP service): `GET /metrics`, `GET /live`,
//! `GET /ready`, `POST /reload` (the configuration file and the bundles), `POST /promote`; and
//! the SIGHUP handler, which reloads like `POST /reload`.

use std::sync::Arc;

use async_trait::async_trait;
use http::{Response, StatusCode};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use crate::state::{Shared, Snapshot};

/// The admin HTTP application.
pub struct AdminApp {
    shared: Arc<Shared>,
}

impl AdminApp {
    /// An admin app over the shared state.
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

fn reply(status: StatusCode, content_type: &str, body: Vec<u8>) -> Response<Vec<u8>> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    if let Ok(v) = content_type.parse() {
        headers.insert(http::header::CONTENT_TYPE, v);
    }
    let length = response.body().len();
    response
        .headers_mut()
        .insert(http::header::CONTENT_LENGTH, length.into());
    response
}

fn json(status: StatusCode, value: serde_json::Value) -> Response<Vec<u8>> {
    let mut body = value.to_string().into_bytes();
    body.push(b'\n');
    reply(status, "application/json", body)
}

impl AdminApp {
    /// `POST /reload`: 200 when the configuration and every configured bundle loaded, else 422;
    /// the body has the active bundle's outcome at the top level, the configuration's under
    /// `"config"` and the shadow's under `"shadow"`.
    async fn reload(&self) -> Response<Vec<u8>> {
        let report = self.shared.reload().await;
        let shadow = report.shadow.as_ref().map(|r| match r {
            Ok(version) => serde_json::json!({"result": "ok", "model_version": version}),
            Err(e) => serde_json::json!({"result": "error", "error": e.to_string()}),
        });
        let config = match &report.config {
            Ok(c) => serde_json::json!({
                "result": if c.applied { "ok" } else { "error" },
                "file": c.file,
                "restart_needed": c.restart_needed,
            }),
            Err(e) => serde_json::json!({"result": "error", "error": e.to_string()}),
        };
        let serving = self.shared.model().map(|m| m.version.clone());
        let shadow_failed = matches!(report.shadow, Some(Err(_)));
        let (status, body) = match report.active {
            None => (
                StatusCode::UNPROCESSABLE_ENTITY,
                serde_json::json!({"result": "error", "error": "the configuration was rejected: the old configuration and model stay", "serving": serving, "config": config}),
            ),
            Some(Ok(done)) if !shadow_failed => (
                StatusCode::OK,
                serde_json::json!({"result": "ok", "model_version": done.version, "previous": done.previous, "config": config, "shadow": shadow}),
            ),
            Some(Ok(done)) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                serde_json::json!({"result": "error", "error": "the shadow bundle was rejected (the active bundle was reloaded)", "model_version": done.version, "previous": done.previous, "serving": done.version, "config": config, "shadow": shadow}),
            ),
            Some(Err(e)) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                serde_json::json!({"result": "error", "error": e.to_string(), "serving": serving, "config": config, "shadow": shadow}),
            ),
        };
        json(status, body)
    }
}

#[async_trait]
impl ServeHttp for AdminApp {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let method = session.req_header().method.clone();
        let path = session.req_header().uri.path().to_string();
        match (method.as_str(), path.as_str()) {
            ("GET", "/metrics") => reply(
                StatusCode::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                self.shared.metrics.render(),
            ),
            ("GET", "/live") => reply(StatusCode::OK, "text/plain", b"live\n".to_vec()),
            ("GET", "/ready") => match self.shared.snapshot().as_ref() {
                Snapshot {
                    model: Some(model),
                    shadow,
                    ..
                } if self.shared.is_listening() => {
                    let shadow = shadow.as_ref().map(|m| m.version.clone());
                    json(
                        StatusCode::OK,
                        serde_json::json!({"ready": true, "model_version": model.version, "threshold": model.threshold, "content_only_threshold": model.content_only_threshold, "part_model": model.has_part_model(), "scorer": model.scorer().as_str(), "shadow_version": shadow}),
                    )
                }
                Snapshot { model, .. } => json(
                    StatusCode::SERVICE_UNAVAILABLE,
                    serde_json::json!({"ready": false, "listening": self.shared.is_listening(), "model_version": model.as_ref().map(|m| m.version.clone())}),
                ),
            },
            ("POST", "/reload") => self.reload().await,
            ("POST", "/promote") => match self.shared.promote().await {
                Ok(done) => json(
                    StatusCode::OK,
                    serde_json::json!({"result": "ok", "model_version": done.version, "previous": done.previous, "bundle": done.dir}),
                ),
                Err(e) => {
                    let serving = self.shared.model().map(|m| m.version.clone());
                    json(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        serde_json::json!({"result": "error", "error": e.to_string(), "serving": serving}),
                    )
                }
            },
            (_, "/metrics" | "/live" | "/ready" | "/reload" | "/promote") => reply(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                b"method not allowed\n".to_vec(),
            ),
            _ => reply(
                StatusCode::NOT_FOUND,
                "text/plain",
                b"not found; try GET /metrics, /live, /ready or POST /reload, /promote\n".to_vec(),
            ),
        }
    }
}

/// Reloads the configuration and the bundle, and reopens the audit log, on every SIGHUP.
pub struct HangupReloader {
    shared: Arc<Shared>,
}

impl HangupReloader {
    /// A SIGHUP handler over the shared state.
    pub fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

#[async_trait]
impl BackgroundService for HangupReloader {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("cannot listen for SIGHUP, reload with POST /reload only: {e}");
                return;
            }
        };
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                received = hangups.recv() => {
                    if received.is_none() {
                        return;
                    }
                    tracing::info!(
                        "SIGHUP: reloading the configuration and the bundle, reopening the audit log"
                    );
                    // Errors are logged and counted by reload itself.
                    let _ = self.shared.reload().await;
                }
            }
        }
    }
}
