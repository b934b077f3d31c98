//! The admin server (its own address, a pingora HTTP service): `GET /metrics`, `GET /live`,
//! `GET /ready`, `POST /reload`; and the SIGHUP handler, which reloads like `POST /reload`.

use std::sync::Arc;

use async_trait::async_trait;
use http::{Response, StatusCode};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use crate::state::Shared;

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
            ("GET", "/ready") => match self.shared.model.get() {
                Some(model) => json(
                    StatusCode::OK,
                    serde_json::json!({"ready": true, "model_version": model.version, "threshold": model.threshold, "scorer": model.scorer().as_str()}),
                ),
                None => json(
                    StatusCode::SERVICE_UNAVAILABLE,
                    serde_json::json!({"ready": false}),
                ),
            },
            ("POST", "/reload") => match self.shared.reload().await {
                Ok(done) => json(
                    StatusCode::OK,
                    serde_json::json!({"result": "ok", "model_version": done.version, "previous": done.previous}),
                ),
                Err(e) => {
                    let serving = self.shared.model.get().map(|m| m.version.clone());
                    json(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        serde_json::json!({"result": "error", "error": e.to_string(), "serving": serving}),
                    )
                }
            },
            (_, "/metrics" | "/live" | "/ready" | "/reload") => reply(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                b"method not allowed\n".to_vec(),
            ),
            _ => reply(
                StatusCode::NOT_FOUND,
                "text/plain",
                b"not found; try GET /metrics, /live, /ready or POST /reload\n".to_vec(),
            ),
        }
    }
}

/// Reloads the bundle and reopens the audit log on every SIGHUP.
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
                    tracing::info!("SIGHUP: reloading the bundle and reopening the audit log");
                    // Errors are logged and counted by reload itself.
                    let _ = self.shared.reload().await;
                }
            }
        }
    }
}
