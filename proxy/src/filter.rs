//! The request path: pingora's `ProxyHttp` callbacks.
//!
//! The verdict is reached in `request_filter`, which pingora runs before it selects or connects
//! to the upstream, so a blocked request never reaches Apache. For urlencoded POST/PUT bodies the
//! body is read there too (up to `body_limit_bytes`) with pingora's retry buffering on: pingora
//! then replays the buffered bytes to the upstream and streams the rest.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bundle::encoding::Decoded;
use bytes::Bytes;
use featurizer::{Headers, RequestParts};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::HttpPeer;
use pingora::proxy::{ProxyHttp, Session};
use pingora::{Error, ErrorSource, Result};

use crate::audit::{
    for_the_audit, now_rfc3339, redact_pairs, redact_target, truncate_text, AuditRecord,
    MAX_AUDIT_FEATURES,
};
use crate::capture::Entry;
use crate::config::{
    BodyOverLimit, Config, ExcludedPart, Mode, OnError, RouteRequest, UriOverLimit,
    MAX_BODY_LIMIT_BYTES,
};
use crate::error::ProxyError;
use crate::exclude::{self, Kept};
use crate::model::{Scored, ServingModel};
use crate::shadow::{self, ShadowJudgement};
use crate::state::{Shared, Snapshot};
use crate::verdict::{Unscored, Verdict};

/// `Via` value added to forwarded requests (RFC 9110 §7.6.3).
pub const VIA: &str = "1.1 pate-waf";

/// The pingora proxy application.
pub struct WafProxy {
    shared: Arc<Shared>,
    upstream: SocketAddr,
}

/// Per-request state.
#[derive(Debug)]
pub struct RequestCtx {
    /// Sent to the client (`X-Request-Id`, 403 body), the upstream and the audit log.
    pub request_id: String,
    /// The verdict counted for this request.
    pub verdict: Option<Verdict>,
    /// The configuration and models this request is judged by, taken once when it starts: every
    /// phase reads these, so a reload meanwhile never gives it one generation's configuration
    /// with another's model.
    pub snapshot: Arc<Snapshot>,
}

/// What the audit record says about the decision.
struct Judgement<'a> {
    model: Option<&'a ServingModel>,
    scored: Option<&'a Scored>,
    mode: Mode,
    reason: Option<String>,
    /// The shadow model's judgement, written to the audit line where it differs.
    shadow: Option<&'a ShadowJudgement>,
    /// The placement that scored highest (scored requests at or above the threshold).
    placement: Option<&'static str>,
    /// How the request was scored: its route's format checks and threshold.
    tuning: Tuning,
    /// The request as scored (without its `exclude_parts`), where it differs from the request
    /// as sent.
    scored_parts: Option<RequestParts<'a>>,
}

/// How a request is scored, by its route: with or without the site's format checks, and at the
/// route's threshold (`None`: the model's threshold in force).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tuning {
    format_checks: bool,
    threshold: Option<f32>,
}

impl Tuning {
    /// The threshold `model` judges this request at.
    fn threshold(self, model: &ServingModel) -> f32 {
        model.threshold_in_force(self.format_checks, self.threshold)
    }
}

/// The host a request names: the authority of an absolute-form target, else its `Host`.
fn request_host(header: &RequestHeader) -> Option<&str> {
    match header.uri.authority() {
        Some(authority) => authority.as_str().rsplit('@').next(),
        None => header
            .headers
            .get(http::header::HOST)
            .and_then(|v| v.to_str().ok()),
    }
}

/// What scoring a request takes besides the request itself.
struct ScoredRequest<'a> {
    /// The active model (`None`: none loaded, the request follows `on_error`).
    model: Option<&'a ServingModel>,
    /// The shadow model of the same snapshot, if one is loaded.
    shadow: Option<&'a Arc<ServingModel>>,
    mode: Mode,
    tuning: Tuning,
    /// Its parts left out of scoring (global and the route's `exclude_parts`).
    excluded: Vec<&'a ExcludedPart>,
    /// The featurizer reads the whole request (headers, every body type).
    whole_request: bool,
    on_error: OnError,
}

/// A request head past one of the proxy's limits.
struct OverLimit {
    /// Block mode's answer: status and reason phrase.
    status: u16,
    what: &'static str,
    /// Detect mode's reason for forwarding it unscored.
    unscored: Unscored,
    /// What was over which limit (`target of 9000 bytes > uri_limit_bytes 8192`).
    detail: String,
}

impl OverLimit {
    /// Header fields over a limit: 431 in block mode.
    fn headers(unscored: Unscored, detail: String) -> OverLimit {
        OverLimit {
            status: 431,
            what: "Request Header Fields Too Large",
            unscored,
            detail,
        }
    }

    /// The audit reason of the refusal (`uri_over_limit: ...`, `header_over_limit: ...`).
    fn refusal_reason(&self) -> String {
        let limit = match self.unscored {
            Unscored::UriTooLong => "uri_over_limit",
            _ => "header_over_limit",
        };
        format!("{limit}: {}", self.detail)
    }
}

/// What reading the request body for scoring gave.
enum ScoredBody {
    /// No body is scored (not an urlencoded POST/PUT).
    NotScored,
    /// The body, or its first `body_limit_bytes` bytes.
    Prefix(Vec<u8>),
    /// The body is larger than the limit (or than pingora can replay) and must be refused.
    OverLimit(String),
    /// The client did not send the body within `client_body_timeout_ms` (a slow client).
    TimedOut(String),
    /// The body could not be read as HTTP (e.g. a malformed chunk, `chunked` applied twice), or
    /// its compressed stream does not inflate.
    Malformed(String),
    /// The body has a content or transfer coding the proxy cannot undo ([`bundle::encoding`]).
    UnsupportedEncoding(String),
}

impl ScoredBody {
    /// The scored body (`None`: not scored), or the refusal: status, reason phrase, reason.
    fn into_body(self) -> std::result::Result<Option<Vec<u8>>, (u16, &'static str, String)> {
        match self {
            ScoredBody::NotScored => Ok(None),
            ScoredBody::Prefix(body) => Ok(Some(body)),
            ScoredBody::OverLimit(reason) => Err((413, "Content Too Large", reason)),
            ScoredBody::TimedOut(reason) => Err((408, "Request Timeout", reason)),
            ScoredBody::Malformed(reason) => Err((400, "Bad Request", reason)),
            ScoredBody::UnsupportedEncoding(reason) => Err((415, "Unsupported Media Type", reason)),
        }
    }
}

/// Whether the body of this request is read and scored: with `whole_request` (placements) any
/// request with a body; otherwise only an urlencoded POST or PUT.
fn body_is_scored(header: &RequestHeader, whole_request: bool) -> bool {
    let has_body = header.headers.contains_key(http::header::TRANSFER_ENCODING)
        || header
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0");
    if whole_request {
        return has_body;
    }
    let method = &header.method;
    if method != http::Method::POST && method != http::Method::PUT {
        return false;
    }
    header
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/x-www-form-urlencoded")
        })
}

/// The request's `Content-Length`, if it declares a valid one.
fn declared_length(header: &RequestHeader) -> Option<u64> {
    header
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Whether the client sent `Expect: 100-continue`.
fn expects_continue(header: &RequestHeader) -> bool {
    header
        .headers
        .get(http::header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"))
}

/// The request's headers as the featurizer reads them (only with `whole_request`).
fn header_pairs(header: &RequestHeader, whole_request: bool) -> Vec<(&str, &[u8])> {
    if !whole_request {
        return Vec::new();
    }
    header
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .collect()
}

/// The request body up to `limit` (a declared length, at most 64 KiB here, whole), under one
/// deadline for the whole read; `Err`: the verdict on a body that could not be read.
async fn read_body(
    session: &mut Session,
    read_whole: bool,
    limit: usize,
    config: &Config,
) -> std::result::Result<Vec<u8>, ScoredBody> {
    let mut body = Vec::new();
    // A declared length (at most 64 KiB here) is read whole, so the replay buffer always holds
    // it; a chunked body is read until the limit is reached. The whole read has one deadline
    // (pingora's own timeout is per read, which a client trickling a byte at a time resets).
    let timeout_ms = config.client_body_timeout_ms;
    let read = tokio::time::timeout(Duration::from_millis(timeout_ms), async {
        while read_whole || body.len() < limit {
            match session.read_request_body().await? {
                Some(chunk) => body.extend_from_slice(&chunk),
                None => break,
            }
        }
        Ok::<(), Box<Error>>(())
    })
    .await;
    match read {
        Ok(Ok(())) => {}
        // A malformed body (bad chunk size) is the client's error: 400, not pingora's 500.
        Ok(Err(e)) => return Err(ScoredBody::Malformed(format!("bad_body: {e}"))),
        Err(_) => {
            return Err(ScoredBody::TimedOut(format!(
                "client_body_timeout: {} body bytes in client_body_timeout_ms {timeout_ms}",
                body.len()
            )))
        }
    }
    Ok(body)
}

impl WafProxy {
    /// A proxy that forwards to the configured upstream.
    pub fn new(shared: Arc<Shared>) -> Result<Self, ProxyError> {
        let upstream = shared.config().upstream;
        Ok(Self { shared, upstream })
    }

    /// Reads the body of an urlencoded POST/PUT up to the limit, before any upstream connection.
    async fn read_scored_body(
        &self,
        session: &mut Session,
        config: &Config,
        whole_request: bool,
    ) -> Result<ScoredBody> {
        let header = session.req_header();
        if !body_is_scored(header, whole_request) {
            return Ok(ScoredBody::NotScored);
        }
        let declared = declared_length(header);
        let limit = config.body_limit_bytes;
        let policy = config.body_over_limit;
        if declared.is_some_and(|n| n > limit as u64) {
            self.count_over_limit(policy);
        }
        if policy == BodyOverLimit::Reject && declared.is_some_and(|n| n > limit as u64) {
            return Ok(ScoredBody::OverLimit(format!(
                "body_over_limit: Content-Length {} > body_limit_bytes {limit}",
                declared.unwrap_or_default()
            )));
        }
        // pingora replays at most MAX_BODY_LIMIT_BYTES (64 KiB) of a body read before the upstream
        // is connected. A declared body larger than that cannot be read here without losing
        // bytes (the truncate policy is in force, reject returned above): only the URI is scored.
        if declared.is_some_and(|n| n > MAX_BODY_LIMIT_BYTES as u64) {
            tracing::debug!(
                "body of {} bytes is larger than the replay buffer: scoring the URI only",
                declared.unwrap_or_default()
            );
            return Ok(ScoredBody::NotScored);
        }
        // A client that sent `Expect: 100-continue` waits for it before sending the body; the
        // upstream is not connected yet, so the proxy answers it (and drops the header upstream).
        if expects_continue(header) {
            session
                .as_downstream_mut()
                .write_continue_response()
                .await?;
        }
        session.enable_retry_buffering();
        let body = match read_body(session, declared.is_some(), limit, config).await {
            Ok(body) => body,
            Err(verdict) => return Ok(verdict),
        };
        let over = body.len() > limit || !session.is_body_done();
        if over && declared.is_none() {
            self.count_over_limit(policy);
        }
        if over && policy == BodyOverLimit::Reject {
            return Ok(ScoredBody::OverLimit(format!(
                "body_over_limit: more than body_limit_bytes {limit}"
            )));
        }
        // Only a chunked body can get here with more than 64 KiB read (one socket read may
        // cross the limit by up to 64 KiB); those bytes are gone from the replay buffer and
        // forwarding the rest alone would corrupt the request.
        if session.as_ref().retry_buffer_truncated() {
            return Ok(ScoredBody::OverLimit(format!(
                "body_over_limit: {} bytes of a chunked body read before the verdict exceed pingora's replay buffer",
                body.len()
            )));
        }
        let headers = &session.req_header().headers;
        let mut body = match self.inflate_body(body, headers, (limit, policy), over) {
            Ok(body) => body,
            Err(verdict) => return Ok(verdict),
        };
        body.truncate(limit);
        Ok(ScoredBody::Prefix(body))
    }

    /// A compressed body inflated as the application will read it, bounded by the same limit
    /// and policy (`bundle::encoding`); `Err`: the verdict on a body that cannot be scored.
    fn inflate_body(
        &self,
        mut body: Vec<u8>,
        headers: &http::HeaderMap,
        (limit, policy): (usize, BodyOverLimit),
        over: bool,
    ) -> std::result::Result<Vec<u8>, ScoredBody> {
        // Every Content-Encoding line, in order (a second line could otherwise hide a coding),
        // then the transfer codings before the final `chunked` (`Transfer-Encoding: gzip,
        // chunked`, which Apache accepts).
        let codings = bundle::encoding::applied_codings(
            headers
                .get_all(http::header::CONTENT_ENCODING)
                .iter()
                .map(|v| v.as_bytes()),
            headers
                .get_all(http::header::TRANSFER_ENCODING)
                .iter()
                .map(|v| v.as_bytes()),
        );
        let codings = match codings {
            Ok(codings) => codings,
            Err(e) => return Err(ScoredBody::Malformed(format!("bad_transfer_encoding: {e}"))),
        };
        let content_encoding = (!codings.is_empty()).then_some(codings);
        if let Some(coding) = content_encoding {
            match bundle::encoding::decode(&coding, &body, limit, !over) {
                Decoded::AsSent => {}
                Decoded::Body(inflated) => body = inflated,
                Decoded::OverLimit(prefix) => {
                    if !over {
                        self.count_over_limit(policy);
                    }
                    if policy == BodyOverLimit::Reject {
                        return Err(ScoredBody::OverLimit(format!(
                            "body_over_limit: inflates to more than body_limit_bytes {limit}"
                        )));
                    }
                    body = prefix;
                }
                Decoded::Unsupported(coding) => {
                    return Err(ScoredBody::UnsupportedEncoding(format!(
                        "content_encoding: {coding} cannot be inspected (gzip, deflate can; as a content or transfer coding)"
                    )))
                }
                Decoded::Corrupt(e) => {
                    return Err(ScoredBody::Malformed(format!("bad_content_encoding: {e}")))
                }
            }
        }
        Ok(body)
    }

    /// Counts a body larger than `body_limit_bytes` under the policy in force.
    fn count_over_limit(&self, policy: BodyOverLimit) {
        let action = match policy {
            BodyOverLimit::Reject => "refuse",
            BodyOverLimit::Truncate => "pass",
        };
        self.shared
            .metrics
            .over_limit
            .with_label_values(&["body", action])
            .inc();
    }

    /// The request head against `uri_limit_bytes` (414) and the header limits (431): the first
    /// limit exceeded.
    fn over_head_limits(&self, session: &Session, config: &Config) -> Option<OverLimit> {
        let header = session.req_header();
        let target_len = header.raw_path().len();
        if target_len > config.uri_limit_bytes && config.uri_over_limit == UriOverLimit::Reject {
            return Some(OverLimit {
                status: 414,
                what: "URI Too Long",
                unscored: Unscored::UriTooLong,
                detail: format!(
                    "target of {target_len} bytes > uri_limit_bytes {}",
                    config.uri_limit_bytes
                ),
            });
        }
        let count = header.headers.len();
        if count > config.header_count_limit {
            return Some(OverLimit::headers(
                Unscored::TooManyHeaders,
                format!(
                    "{count} header fields > header_count_limit {}",
                    config.header_count_limit
                ),
            ));
        }
        let bytes: usize = header
            .headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum();
        if bytes > config.header_limit_bytes {
            return Some(OverLimit::headers(
                Unscored::HeadersTooLarge,
                format!(
                    "{bytes} bytes of header fields > header_limit_bytes {}",
                    config.header_limit_bytes
                ),
            ));
        }
        None
    }

    /// Forwards a request unscored (detect mode: past a protocol limit or not scorable, which
    /// block mode refuses): counted as `unscored` and by `why`, audited with the reason
    /// `why: detail`.
    fn forward_unscored(
        &self,
        session: &Session,
        ctx: &mut RequestCtx,
        mode: Mode,
        why: Unscored,
        detail: &str,
    ) {
        self.count(ctx, Verdict::Unscored);
        self.shared.metrics.count_unscored(why);
        tracing::info!(
            request_id = %ctx.request_id,
            reason = why.as_str(),
            "forwarded unscored (detect mode): {detail}"
        );
        self.audit_unscored(ctx, session, mode, format!("{}: {detail}", why.as_str()));
    }

    /// The audit line of a request answered or forwarded without a score (`ctx.verdict` is
    /// `refused` or `unscored`).
    fn audit_unscored(&self, ctx: &RequestCtx, session: &Session, mode: Mode, reason: String) {
        let method = session.req_header().method.as_str().to_string();
        let target = session.req_header().raw_path().to_vec();
        let parts = RequestParts {
            method: &method,
            target: &target,
            body: None,
            headers: Default::default(),
            excluded_fields: Default::default(),
        };
        self.audit(
            ctx,
            session,
            &parts,
            Judgement {
                model: ctx.snapshot.model.as_deref(),
                scored: None,
                mode,
                reason: Some(reason),
                shadow: None,
                placement: None,
                // Not scored: no placement is looked for.
                tuning: Tuning {
                    format_checks: true,
                    threshold: None,
                },
                scored_parts: None,
            },
        );
    }

    /// The metrics of a scored request; then, unless it is an allow both models agree on, its
    /// detection (by the placement that scores highest) and audit line. `judged.scored` is the
    /// score; `judged.placement` is filled in here.
    fn observe_scored(
        &self,
        ctx: &RequestCtx,
        session: &Session,
        parts: &RequestParts<'_>,
        verdict: Verdict,
        whole_request: bool,
        mut judged: Judgement<'_>,
    ) {
        let Some(scored) = judged.scored else { return };
        let metrics = &self.shared.metrics;
        metrics.score.observe(f64::from(scored.score));
        metrics.scoring_duration.observe(scored.seconds);
        if scored.unseen_path {
            metrics.unseen_path.inc();
        }
        if scored.truncated && whole_request {
            metrics
                .over_limit
                .with_label_values(&["parts", "pass"])
                .inc();
        }
        let disagreement = judged.shadow.is_some_and(|s| s.verdict != verdict);
        if verdict == Verdict::Allow && !disagreement {
            return;
        }
        // Which placement looks most like an attack (scores each placement's parts alone: only
        // for the few requests that are audited).
        let placement = judged
            .model
            .map_or(featurizer::Placement::Request, |m| {
                // The parts and format checks `scored` was scored with: its segments are theirs.
                m.worst_placement_of(
                    judged.scored_parts.as_ref().unwrap_or(parts),
                    judged.tuning.format_checks,
                    scored.segments.as_ref(),
                )
            })
            .as_str();
        if scored.malicious {
            metrics
                .detections
                .with_label_values(&[verdict.as_str(), placement])
                .inc();
        }
        judged.placement = Some(placement);
        self.audit(ctx, session, parts, judged);
    }

    /// What every scored request (`ctx.verdict` set: allow, block, flag or error) leaves besides
    /// its verdict: in detect mode its count under its route (`patewaf_route_requests_total`),
    /// and with `capture:` its line in the capture file (queued, never waited for).
    /// `judged`: the score (`None`: scoring failed), the model, and whether the site's format
    /// checks were on.
    fn record_scored(
        &self,
        session: &Session,
        ctx: &RequestCtx,
        parts: &RequestParts<'_>,
        mode: Mode,
        judged: (Option<&Scored>, Option<&ServingModel>, Tuning),
    ) {
        let Some(verdict) = ctx.verdict else { return };
        let header = session.req_header();
        if mode == Mode::Detect {
            self.shared.metrics.count_route(header.uri.path(), verdict);
        }
        let Some(capture) = &self.shared.capture else {
            return;
        };
        let (scored, model, tuning) = judged;
        let (body, body_truncated) = capture.cut_body(parts.body);
        capture.record(Entry {
            time: now_rfc3339(),
            request_id: ctx.request_id.clone(),
            client: session
                .client_addr()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            method: parts.method.to_string(),
            target: parts.target.to_vec(),
            http_version: match header.version {
                http::Version::HTTP_10 => "HTTP/1.0",
                http::Version::HTTP_09 => "HTTP/0.9",
                _ => "HTTP/1.1",
            },
            headers: header
                .headers
                .iter()
                .map(|(name, value)| (name.as_str().to_string(), value.as_bytes().to_vec()))
                .collect(),
            body,
            body_truncated,
            score: scored.map(|s| s.score),
            threshold: model.map(|m| tuning.threshold(m)),
            verdict: verdict.as_str(),
            mode: mode.as_str(),
            bundle_version: model.map(|m| m.version.clone()),
            bundle_sha256: model.map(|m| m.bundle_sha256.clone()),
        });
    }

    /// Logs a request that could not be scored and writes its audit line (reason
    /// `scoring_error: ...`).
    fn audit_scoring_error(
        &self,
        ctx: &RequestCtx,
        session: &Session,
        parts: &RequestParts<'_>,
        e: &ProxyError,
        mut judged: Judgement<'_>,
    ) {
        let on_error = ctx.snapshot.config.on_error;
        tracing::error!(request_id = %ctx.request_id, on_error = ?on_error, "{e}");
        judged.reason = Some(format!("scoring_error: {e}"));
        self.audit(ctx, session, parts, judged);
    }

    /// Answers `status` without scoring or connecting upstream; counted as `refused` (a protocol
    /// limit decided, not the model) and audited with `reason`, the target truncated as
    /// configured.
    async fn refuse(
        &self,
        session: &mut Session,
        ctx: &mut RequestCtx,
        mode: Mode,
        status: u16,
        what: &str,
        reason: String,
    ) -> Result<()> {
        self.count(ctx, Verdict::Refused);
        self.audit_unscored(ctx, session, mode, reason);
        respond(session, status, what, &ctx.request_id).await
    }

    fn audit(
        &self,
        ctx: &RequestCtx,
        session: &Session,
        parts: &RequestParts<'_>,
        judged: Judgement<'_>,
    ) {
        let Judgement {
            model,
            scored,
            mode,
            reason,
            shadow,
            placement,
            tuning,
            scored_parts,
        } = judged;
        let score = scored.map(|s| s.score);
        let Some(verdict) = ctx.verdict else { return };
        let shadow = shadow.filter(|s| s.verdict != verdict);
        let config = &ctx.snapshot.config;
        let redact = config.audit_redact_values;
        let raw_target = if redact {
            redact_target(parts.target)
        } else {
            parts.target.to_vec()
        };
        let (target, target_truncated) = truncate_text(&raw_target, config.audit_target_max_bytes);
        // A form body carries what users typed (passwords, addresses): it is recorded only when
        // the operator opts in with `audit_body`.
        let body = parts.body.filter(|_| config.audit_body).map(|b| {
            let raw = if redact { redact_pairs(b) } else { b.to_vec() };
            truncate_text(&raw, config.audit_target_max_bytes).0
        });
        let explanation = match (model, scored) {
            (Some(m), Some(s)) => {
                let scoring = scored_parts.as_ref().unwrap_or(parts);
                self.explanation(ctx, scoring, m, s, tuning.format_checks, &raw_target)
            }
            _ => None,
        };
        let record = AuditRecord {
            time: now_rfc3339(),
            request_id: &ctx.request_id,
            client: session
                .client_addr()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            method: parts.method,
            target,
            target_truncated,
            body,
            score,
            threshold: model.map(|m| tuning.threshold(m)),
            verdict: verdict.as_str(),
            mode: mode.as_str(),
            model_version: model.map(|m| m.version.as_str()),
            explanation,
            reason,
            shadow_verdict: shadow.map(|s| s.verdict.as_str()),
            shadow_score: shadow.and_then(|s| s.score),
            shadow_model_version: shadow.map(|s| s.model.version.as_str()),
            placement,
            format_checks: tuning.format_checks,
        };
        if let Err(e) = self.shared.audit.write(&record) {
            tracing::error!(request_id = %ctx.request_id, "audit log: {e}");
        }
    }

    /// Scores the request (without its excluded parts), counts, records and audits it, and
    /// answers it where the verdict (403) or `on_error: closed` (503) says so; `Ok(true)` when
    /// answered, `Ok(false)` to forward it.
    async fn score_and_answer(
        &self,
        session: &mut Session,
        ctx: &mut RequestCtx,
        body: Option<&[u8]>,
        request: ScoredRequest<'_>,
    ) -> Result<bool> {
        let ScoredRequest {
            model,
            shadow,
            mode,
            tuning,
            excluded,
            whole_request,
            on_error,
        } = request;
        let method = session.req_header().method.as_str().to_string();
        let target = session.req_header().raw_path().to_vec();
        let header_pairs = header_pairs(session.req_header(), whole_request);
        let parts = RequestParts {
            method: &method,
            target: &target,
            body,
            headers: if whole_request {
                Headers::Pairs(&header_pairs)
            } else {
                Headers::None
            },
            excluded_fields: Default::default(),
        };
        let kept = exclude::without_excluded(&parts, &excluded);
        let scored_parts = kept.as_ref().map(Kept::parts);
        let scoring = scored_parts.unwrap_or(parts);
        let scored = match model {
            Some(m) => m.score_at(&scoring, tuning.format_checks, tuning.threshold),
            None => Err(ProxyError::NoModel),
        };
        let verdict = match &scored {
            Ok(s) if s.malicious => shadow::malicious_verdict(mode),
            Ok(_) => Verdict::Allow,
            Err(_) => Verdict::Error,
        };
        self.count(ctx, verdict);
        self.record_scored(
            session,
            ctx,
            &parts,
            mode,
            (scored.as_ref().ok(), model, tuning),
        );
        let shadow = shadow::judge(
            &self.shared.metrics,
            shadow,
            &scoring,
            (verdict, mode),
            (tuning.format_checks, tuning.threshold),
        );
        let judged = Judgement {
            model,
            scored: scored.as_ref().ok(),
            mode,
            reason: None,
            shadow: shadow.as_ref(),
            placement: None,
            tuning,
            scored_parts,
        };
        let e = match &scored {
            Ok(_) => {
                self.observe_scored(ctx, session, &parts, verdict, whole_request, judged);
                // A block is always audited (observe_scored returns early only for an allow).
                if verdict != Verdict::Block {
                    return Ok(false);
                }
                let what = "Forbidden: blocked by pate-waf";
                respond(session, 403, what, &ctx.request_id).await?;
                return Ok(true);
            }
            Err(e) => e,
        };
        self.audit_scoring_error(ctx, session, &parts, e, judged);
        match on_error {
            OnError::Open => Ok(false),
            OnError::Closed => {
                let what = "Service Unavailable: request could not be scored";
                respond(session, 503, what, &ctx.request_id).await?;
                Ok(true)
            }
        }
    }

    /// The explanation of an audited score, cut for the audit line ([`for_the_audit`]); `None`
    /// (logged) when it cannot be computed.
    fn explanation(
        &self,
        ctx: &RequestCtx,
        parts: &RequestParts<'_>,
        model: &ServingModel,
        scored: &Scored,
        format_checks: bool,
        raw_target: &[u8],
    ) -> Option<bundle::Explanation> {
        let config = &ctx.snapshot.config;
        let n = config.audit_top_features.min(MAX_AUDIT_FEATURES);
        let explanation = match model.explain(parts, scored, format_checks, n) {
            Ok(explanation) => explanation,
            Err(e) => {
                tracing::warn!(request_id = %ctx.request_id, "explaining the score: {e}");
                return None;
            }
        };
        let mut shown = String::from_utf8_lossy(raw_target).to_lowercase();
        if let Some(body) = parts.body.filter(|_| config.audit_body) {
            let raw = if config.audit_redact_values {
                redact_pairs(body)
            } else {
                body.to_vec()
            };
            shown.push_str(&String::from_utf8_lossy(&raw).to_lowercase());
        }
        Some(for_the_audit(
            explanation,
            config.audit_redact_values,
            config.audit_body,
            &shown,
        ))
    }

    fn count(&self, ctx: &mut RequestCtx, verdict: Verdict) {
        ctx.verdict = Some(verdict);
        self.shared.metrics.count(verdict);
    }
}

/// Writes a small plain-text answer that carries the request id. The connection stays open for
/// the client's next request only after a verdict (403 block, 503 scoring failure) on a request
/// read whole; refusals (413/414/431) and requests with unread body bytes close it, since pingora
/// would otherwise drain whatever body follows. (Closing after every block cost block mode a new
/// TCP connection per blocked request: `bench/proxy.sh` measured the proxy's CPU per request
/// higher in block mode than in detect mode although half the requests never reach Apache.)
async fn respond(session: &mut Session, status: u16, what: &str, request_id: &str) -> Result<()> {
    let body = format!("{status} {what}\nrequest id: {request_id}\n");
    let mut header = ResponseHeader::build(status, Some(5))?;
    header.insert_header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")?;
    header.insert_header(http::header::CONTENT_LENGTH, body.len().to_string())?;
    header.insert_header(http::header::CACHE_CONTROL, "no-store")?;
    header.insert_header("x-request-id", request_id)?;
    if !(matches!(status, 403 | 503) && session.is_body_done()) {
        session.set_keepalive(None);
    }
    session
        .write_response_header(Box::new(header), false)
        .await?;
    session
        .write_response_body(Some(Bytes::from(body)), true)
        .await
}

#[async_trait]
impl ProxyHttp for WafProxy {
    type CTX = RequestCtx;

    fn new_ctx(&self) -> RequestCtx {
        RequestCtx {
            request_id: self.shared.next_request_id(),
            verdict: None,
            snapshot: self.shared.snapshot(),
        }
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut RequestCtx) -> Result<bool> {
        let snapshot = ctx.snapshot.clone();
        let config = &snapshot.config;
        let model = snapshot.model.as_deref();
        let header = session.req_header();
        let route = config.route_for(&RouteRequest {
            method: header.method.as_str(),
            host: request_host(header),
            path: header.uri.path(),
        });
        let mode = route.and_then(|r| r.mode).unwrap_or(config.mode);
        // Protocol limits come before routes: an excluded path is not scored, but it is still
        // bounded. Detect mode (global or the route's) never refuses on them: it forwards the
        // request unscored, for the upstream to accept or refuse, and counts it.
        if let Some(over) = self.over_head_limits(session, config) {
            if mode == Mode::Detect {
                self.forward_unscored(session, ctx, mode, over.unscored, &over.detail);
                return Ok(false);
            }
            let reason = over.refusal_reason();
            self.refuse(session, ctx, mode, over.status, over.what, reason)
                .await?;
            return Ok(true);
        }
        if config.mode == Mode::Off || route.is_some_and(|r| r.exclude) {
            // No WAF, or a route not scored: forwarded as is (the limits above still apply).
            self.count(ctx, Verdict::Excluded);
            return Ok(false);
        }
        let tuning = Tuning {
            format_checks: config.format_checks_for(route, model.and_then(|m| m.format_checks)),
            threshold: config.threshold_override_for(route),
        };
        // The featurizer reads headers and every body type only with `placements`.
        let whole_request = model.is_some_and(|m| m.featurizer.config().placements.is_some());
        let body = match self
            .read_scored_body(session, config, whole_request)
            .await?
        {
            // What was read is in pingora's replay buffer: forwarded whole.
            ScoredBody::UnsupportedEncoding(reason) if mode == Mode::Detect => {
                let detail = reason.strip_prefix("content_encoding: ").unwrap_or(&reason);
                self.forward_unscored(session, ctx, mode, Unscored::UnsupportedEncoding, detail);
                return Ok(false);
            }
            body => body,
        };
        let body = match body.into_body() {
            Ok(body) => body,
            Err((status, what, reason)) => {
                self.refuse(session, ctx, mode, status, what, reason)
                    .await?;
                return Ok(true);
            }
        };
        let request = ScoredRequest {
            model,
            shadow: snapshot.shadow.as_ref(),
            mode,
            tuning,
            excluded: config.excluded_parts_for(route),
            whole_request,
            on_error: config.on_error,
        };
        self.score_and_answer(session, ctx, body.as_deref(), request)
            .await
    }

    async fn upstream_peer(
        &self,
        _session: &mut Session,
        ctx: &mut RequestCtx,
    ) -> Result<Box<HttpPeer>> {
        let mut peer = HttpPeer::new(self.upstream, false, String::new());
        peer.options.connection_timeout = Some(Duration::from_millis(
            ctx.snapshot.config.upstream_connect_timeout_ms,
        ));
        Ok(Box::new(peer))
    }

    async fn upstream_request_filter(
        &self,
        session: &mut Session,
        upstream_request: &mut RequestHeader,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        if let Some(ip) = session
            .client_addr()
            .and_then(|a| a.as_inet())
            .map(|a| a.ip().to_string())
        {
            let forwarded_for = match upstream_request
                .headers
                .get("x-forwarded-for")
                .and_then(|v| v.to_str().ok())
            {
                Some(earlier) if !earlier.trim().is_empty() => format!("{earlier}, {ip}"),
                _ => ip,
            };
            upstream_request.insert_header("x-forwarded-for", forwarded_for)?;
        }
        // Only a trusted front (e.g. the TLS terminator) may say the client used https; any
        // other peer's value is replaced, so a client cannot claim a scheme it did not use.
        let trusted = session
            .client_addr()
            .and_then(|a| a.as_inet())
            .is_some_and(|a| ctx.snapshot.config.trusted_forwarders.contains(&a.ip()));
        let forwarded_proto = upstream_request
            .headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase())
            .filter(|v| trusted && (v == "http" || v == "https"))
            .unwrap_or_else(|| "http".to_string());
        upstream_request.insert_header("x-forwarded-proto", forwarded_proto)?;
        let via = match upstream_request
            .headers
            .get(http::header::VIA)
            .and_then(|v| v.to_str().ok())
        {
            Some(earlier) if !earlier.trim().is_empty() => format!("{earlier}, {VIA}"),
            _ => VIA.to_string(),
        };
        upstream_request.insert_header(http::header::VIA, via)?;
        upstream_request.insert_header("x-request-id", ctx.request_id.as_str())?;
        // An HTTP/1.0 client may omit Host; the request goes upstream as HTTP/1.1, where Host is
        // required (RFC 9112 §3.2) and Apache answers 400 without it: name the upstream.
        if !upstream_request.headers.contains_key(http::header::HOST) {
            upstream_request.insert_header(http::header::HOST, self.upstream.to_string())?;
        }
        if session
            .req_header()
            .headers
            .contains_key(http::header::EXPECT)
            && session.as_ref().get_retry_buffer().is_some()
        {
            // The body was read (after our own 100 Continue) and is replayed from the buffer.
            upstream_request.remove_header(&http::header::EXPECT);
        }
        Ok(())
    }

    async fn response_filter(
        &self,
        _session: &mut Session,
        upstream_response: &mut ResponseHeader,
        ctx: &mut RequestCtx,
    ) -> Result<()> {
        upstream_response.insert_header("x-request-id", ctx.request_id.as_str())?;
        Ok(())
    }

    async fn logging(&self, _session: &mut Session, e: Option<&Error>, ctx: &mut RequestCtx) {
        if let Some(e) = e {
            if *e.esource() == ErrorSource::Upstream {
                self.shared.metrics.upstream_errors.inc();
                tracing::warn!(request_id = %ctx.request_id, "upstream error: {e}");
            }
        }
    }
}
