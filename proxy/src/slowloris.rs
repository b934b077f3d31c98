//! A deadline for the request head (slow-client protection, issue 8).
//!
//! pingora 0.9 bounds each read of a request head by a timeout (60 s on a new connection), but
//! not the head as a whole: a client that trickles one byte every few seconds keeps a connection
//! (and its buffers) for as long as it likes, the "slowloris" attack. [`HeadDeadlineApp`] wraps
//! the proxy application and every accepted connection in [`HeadDeadlineStream`], which answers
//! `408 Request Timeout` and fails the read (pingora then drops the connection, as for a broken
//! one) once a head has taken longer than `client_header_timeout_ms`, counted from the accept for
//! the first request and from its first byte for a later request on a keep-alive connection.
//! The 408 is counted as `verdict="refused"`; it is written once, without waiting (a client that
//! does not read gets no answer rather than a longer hold on the connection), and only if a byte
//! of the head arrived: a connection that sent nothing (a browser's pre-connect) is closed
//! silently and not counted, as it carried no request. The end of a head is
//! the first blank line (`\r\n\r\n`, or `\n\n`) after its start; a final (not 1xx) response
//! written after it re-arms the deadline for the next head, from that head's first byte. Known
//! limit: a body the client is still sending after the proxy has answered (early 403/413 answers
//! close the connection, so only a streamed-through body answered early by the upstream) would be
//! scanned as a head. Apache's mod_reqtimeout does the same
//! (`RequestReadTimeout header=20-40`).
//!
//! The same wrapper runs the strict head check ([`crate::strict`]) on the bytes as they arrive,
//! before pingora (which repairs some malformed heads) parses them: a malformed head is answered
//! 400 on the spot, counted, and the connection is closed; a raw `"`, `<` or `>` in the target,
//! which Apache serves and pingora cannot parse, is percent-encoded on its way to pingora.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use pingora::apps::ServerApp;
use pingora::protocols::raw_connect::ProxyDigest;
use pingora::protocols::{
    GetProxyDigest, GetSocketDigest, GetTimingDigest, Peek, Shutdown, SocketDigest, Ssl, Stream,
    TimingDigest, UniqueID, UniqueIDType,
};
use pingora::server::ShutdownWatch;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use prometheus::IntCounterVec;

use crate::strict::{HeadCheck, Malformed};

/// Where the stream is with respect to request heads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading a head; the deadline runs.
    Head,
    /// The head ended; body bytes and the response follow, no deadline.
    AfterHead,
    /// A response was written: the next byte read starts a new head.
    Idle,
}

/// A connection whose request heads must arrive within a deadline.
pub struct HeadDeadlineStream {
    inner: Stream,
    timeout: Duration,
    phase: Phase,
    deadline: Pin<Box<Sleep>>,
    /// The last bytes of the head read so far (to find a blank line split across reads).
    tail: [u8; 3],
    tail_len: usize,
    /// The strict check of the current head.
    check: HeadCheck,
    /// Where refusals are counted.
    counters: Option<StrictCounters>,
    /// A 400 being written for a malformed head, and how much of it is written.
    refusal: Option<(Malformed, Vec<u8>, usize)>,
    /// A byte of the current head arrived (else a deadline closes the connection silently).
    head_started: bool,
    /// Bytes already read, checked and escaped ([`HeadCheck::escape_target`]) that did not fit
    /// in pingora's read buffer: handed out before the next read.
    pending: Vec<u8>,
    /// The deadline passed and was answered (the 408 is written and counted once).
    timed_out: bool,
}

/// The counters a strict-parsing refusal moves: `patewaf_malformed_requests_total{reason}` and
/// `patewaf_requests_total{verdict="refused"}` (refused on a protocol rule before scoring).
#[derive(Clone)]
pub struct StrictCounters {
    /// `patewaf_malformed_requests_total`, by reason.
    pub malformed: IntCounterVec,
    /// `patewaf_requests_total`, by verdict.
    pub requests: IntCounterVec,
}

impl Debug for HeadDeadlineStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeadDeadlineStream")
            .field("inner", &self.inner)
            .field("phase", &self.phase)
            .finish()
    }
}

impl HeadDeadlineStream {
    /// Wraps `inner`; the first head's deadline starts now (the accept).
    pub fn new(inner: Stream, timeout: Duration) -> Self {
        HeadDeadlineStream {
            inner,
            timeout,
            phase: Phase::Head,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            tail: [0; 3],
            tail_len: 0,
            check: HeadCheck::default(),
            counters: None,
            refusal: None,
            head_started: false,
            pending: Vec::new(),
            timed_out: false,
        }
    }

    /// The head missed its deadline: answers 408 (counted as refused) if a byte of it arrived,
    /// then fails the read so that pingora drops the connection.
    fn time_out(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.head_started && !self.timed_out {
            self.timed_out = true;
            if let Some(c) = &self.counters {
                c.requests.with_label_values(&["refused"]).inc();
            }
            tracing::warn!(
                timeout_ms = self.timeout.as_millis() as u64,
                "request head not complete within client_header_timeout_ms, answered 408"
            );
            let body = format!(
                "408 Request Timeout\nrequest head not complete within client_header_timeout_ms {}\n",
                self.timeout.as_millis()
            );
            let response = format!(
                "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            // One try, no waiting: the connection is dropped right after.
            let written = Pin::new(&mut self.inner).poll_write(cx, response.as_bytes());
            if let Poll::Ready(Ok(_)) = written {
                let _ = Pin::new(&mut self.inner).poll_flush(cx);
            }
        }
        Poll::Ready(Err(head_timeout(self.timeout)))
    }

    /// Starts answering 400 for a malformed head (counted once).
    fn refuse(&mut self, why: Malformed) {
        if let Some(c) = &self.counters {
            c.malformed.with_label_values(&[why.as_str()]).inc();
            c.requests.with_label_values(&["refused"]).inc();
        }
        tracing::warn!(
            reason = why.as_str(),
            "malformed request head refused with 400"
        );
        let body = format!(
            "400 Bad Request\nmalformed request head: {}\n",
            why.as_str()
        );
        let response = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        self.refusal = Some((why, response.into_bytes(), 0));
    }

    /// Writes the pending 400; then fails the read so that pingora drops the connection.
    fn poll_refusal(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let Some((why, response, written)) = &mut self.refusal else {
            return Poll::Ready(Ok(()));
        };
        while *written < response.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &response[*written..]) {
                Poll::Ready(Ok(0)) => break,
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        if Pin::new(&mut self.inner).poll_flush(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("malformed request head ({}), answered 400", why.as_str()),
        )))
    }

    /// Scans newly read head bytes for the blank line that ends the head.
    fn scan(&mut self, bytes: &[u8]) {
        match scan_head(&self.tail[..self.tail_len], bytes) {
            HeadScan::Ended => {
                self.phase = Phase::AfterHead;
                self.tail_len = 0;
            }
            HeadScan::Continues { tail, len } => {
                self.tail = tail;
                self.tail_len = len;
            }
        }
    }
}

/// What [`scan_head`] found.
#[derive(Debug, PartialEq, Eq)]
enum HeadScan {
    /// A blank line (`\r\n\r\n` or `\n\n`) ends the head.
    Ended,
    /// No blank line yet; the last `len` bytes seen (at most 3) to carry to the next read.
    Continues { tail: [u8; 3], len: usize },
}

/// Looks for the blank line ending a request head in `bytes`, or across the seam between the
/// previous read's last bytes (`tail`, at most 3) and this read, without allocating: it runs on
/// every read of every request head.
fn scan_head(tail: &[u8], bytes: &[u8]) -> HeadScan {
    let mut seam = [0u8; 6];
    let head = bytes.len().min(3);
    seam[..tail.len()].copy_from_slice(tail);
    seam[tail.len()..tail.len() + head].copy_from_slice(&bytes[..head]);
    let seam = &seam[..tail.len() + head];
    let ends =
        |b: &[u8]| b.windows(4).any(|w| w == b"\r\n\r\n") || b.windows(2).any(|w| w == b"\n\n");
    if ends(seam) || ends(bytes) {
        return HeadScan::Ended;
    }
    // The last 3 bytes of tail + bytes.
    let mut all = [0u8; 6];
    let joined: &[u8] = if bytes.len() >= 3 {
        &bytes[bytes.len() - 3..]
    } else {
        all[..tail.len()].copy_from_slice(tail);
        all[tail.len()..tail.len() + bytes.len()].copy_from_slice(bytes);
        &all[..tail.len() + bytes.len()]
    };
    let len = joined.len().min(3);
    let mut out = [0u8; 3];
    out[..len].copy_from_slice(&joined[joined.len() - len..]);
    HeadScan::Continues { tail: out, len }
}

impl AsyncRead for HeadDeadlineStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.refusal.is_some() {
            return this.poll_refusal(cx);
        }
        if !this.pending.is_empty() {
            let n = this.pending.len().min(buf.remaining());
            buf.put_slice(&this.pending[..n]);
            this.pending.drain(..n);
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if this.phase == Phase::AfterHead {
                    return Poll::Ready(Ok(()));
                }
                let new = &buf.filled()[before..];
                if !new.is_empty() && this.phase == Phase::Idle {
                    this.phase = Phase::Head;
                    this.check.reset();
                    let at = Instant::now() + this.timeout;
                    this.deadline.as_mut().reset(at);
                }
                if this.phase == Phase::Head {
                    this.head_started |= !new.is_empty();
                    if this.deadline.is_elapsed() {
                        return this.time_out(cx);
                    }
                    let mut escaped = None;
                    if !this.check.ended() {
                        escaped = this.check.escape_target(new);
                        if let Err(why) = this.check.feed(new) {
                            // Nothing of this head reaches pingora.
                            buf.set_filled(before);
                            this.refuse(why);
                            return this.poll_refusal(cx);
                        }
                    }
                    this.scan(new);
                    if let Some(escaped) = escaped {
                        // The target's raw `"<>` percent-encoded (strict.rs): what does not fit
                        // now is handed out by the next reads.
                        buf.set_filled(before);
                        let n = escaped.len().min(buf.remaining());
                        buf.put_slice(&escaped[..n]);
                        this.pending.extend_from_slice(&escaped[n..]);
                    }
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                if this.phase == Phase::Head && this.deadline.as_mut().poll(cx).is_ready() {
                    return this.time_out(cx);
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

/// Whether a write starts an interim (1xx) response.
fn is_interim(buf: &[u8]) -> bool {
    buf.starts_with(b"HTTP/1.1 1") || buf.starts_with(b"HTTP/1.0 1")
}

fn head_timeout(timeout: Duration) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "request head not complete within client_header_timeout_ms {}",
            timeout.as_millis()
        ),
    )
}

impl AsyncWrite for HeadDeadlineStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        // An interim `100 Continue` is not the answer: the body follows, not a new head.
        if self.phase == Phase::AfterHead && !is_interim(buf) {
            self.phase = Phase::Idle;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        if self.phase == Phase::AfterHead && !is_interim(first) {
            self.phase = Phase::Idle;
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[async_trait]
impl Shutdown for HeadDeadlineStream {
    async fn shutdown(&mut self) {
        self.inner.shutdown().await
    }
}

impl UniqueID for HeadDeadlineStream {
    fn id(&self) -> UniqueIDType {
        self.inner.id()
    }
}

impl Ssl for HeadDeadlineStream {}

impl GetTimingDigest for HeadDeadlineStream {
    fn get_timing_digest(&self) -> Vec<Option<TimingDigest>> {
        self.inner.get_timing_digest()
    }
    fn get_read_pending_time(&self) -> Duration {
        self.inner.get_read_pending_time()
    }
    fn get_write_pending_time(&self) -> Duration {
        self.inner.get_write_pending_time()
    }
}

impl GetProxyDigest for HeadDeadlineStream {
    fn get_proxy_digest(&self) -> Option<Arc<ProxyDigest>> {
        self.inner.get_proxy_digest()
    }
    fn set_proxy_digest(&mut self, digest: ProxyDigest) {
        self.inner.set_proxy_digest(digest)
    }
}

impl GetSocketDigest for HeadDeadlineStream {
    fn get_socket_digest(&self) -> Option<Arc<SocketDigest>> {
        self.inner.get_socket_digest()
    }
    fn set_socket_digest(&mut self, digest: SocketDigest) {
        self.inner.set_socket_digest(digest)
    }
}

#[async_trait]
impl Peek for HeadDeadlineStream {
    async fn try_peek(&mut self, buf: &mut [u8]) -> std::io::Result<bool> {
        self.inner.try_peek(buf).await
    }
}

/// A [`ServerApp`] that gives every accepted connection a request-head deadline, then hands it
/// to `inner` (the pingora proxy application).
pub struct HeadDeadlineApp<A> {
    inner: Arc<A>,
    timeout: Duration,
    counters: Option<StrictCounters>,
}

impl<A> HeadDeadlineApp<A> {
    /// Wraps `inner` with a `timeout` per request head.
    pub fn new(inner: A, timeout: Duration) -> Self {
        HeadDeadlineApp {
            inner: Arc::new(inner),
            timeout,
            counters: None,
        }
    }

    /// Counts strict-parsing refusals in `counters`.
    pub fn with_counters(mut self, counters: StrictCounters) -> Self {
        self.counters = Some(counters);
        self
    }
}

#[async_trait]
impl<A: ServerApp + Send + Sync + 'static> ServerApp for HeadDeadlineApp<A> {
    async fn process_new(
        self: &Arc<Self>,
        stream: Stream,
        shutdown: &ShutdownWatch,
    ) -> Option<Stream> {
        let mut wrapped = HeadDeadlineStream::new(stream, self.timeout);
        wrapped.counters = self.counters.clone();
        let wrapped: Stream = Box::new(wrapped);
        self.inner.process_new(wrapped, shutdown).await
    }

    async fn cleanup(&self) {
        self.inner.cleanup().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `parts` read by read; returns after which read the head ended.
    fn ended_after(parts: &[&[u8]]) -> Option<usize> {
        let mut tail = ([0u8; 3], 0usize);
        for (i, part) in parts.iter().enumerate() {
            match scan_head(&tail.0[..tail.1], part) {
                HeadScan::Ended => return Some(i),
                HeadScan::Continues { tail: t, len } => tail = (t, len),
            }
        }
        None
    }

    #[test]
    fn finds_the_blank_line_in_one_read_or_across_reads() {
        assert_eq!(
            ended_after(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]),
            Some(0)
        );
        assert_eq!(ended_after(&[b"GET / HTTP/1.0\n\n"]), Some(0));
        assert_eq!(ended_after(&[b"GET / HTTP/1.1\r\nHost: a\r\n"]), None);
        // Split at every position, and byte by byte.
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        for cut in 1..head.len() {
            assert_eq!(
                ended_after(&[&head[..cut], &head[cut..]]),
                Some(1),
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = head.chunks(1).collect();
        assert_eq!(ended_after(&bytes), Some(head.len() - 1));
        let pairs: Vec<&[u8]> = head.chunks(2).collect();
        assert_eq!(ended_after(&pairs), Some(pairs.len() - 1));
        // `\r\n` then `\r\n` in two reads of two bytes.
        assert_eq!(
            ended_after(&[b"GET / HTTP/1.1\r\nHost: a", b"\r\n", b"\r\n"]),
            Some(2)
        );
        // Empty reads change nothing.
        assert_eq!(ended_after(&[b"GET / HTTP/1.1\r\n", b"", b"\r\n"]), Some(2));
    }
}
