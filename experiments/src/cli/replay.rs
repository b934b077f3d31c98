//! `pate-experiments replay`: send labelled dataset requests to a running WAF (Apache + ModSecurity
//! CRS, or pate-proxy in block mode) on loopback and record its verdicts.
//!
//! Every request is written by hand as raw HTTP/1.1 on a plain [`TcpStream`] (one connection per
//! request, `Connection: close`): request line, a fixed browser-like header set, and for a form
//! body `Content-Type: application/x-www-form-urlencoded` with `Content-Length`. The verdict is
//! the response status: **403 = blocked**, anything else (200, 404, 405, 400, ...) = passed. This
//! is how both ModSecurity (CRS rule 949110 `deny`, default status 403) and pate-proxy (`mode:
//! block`) answer a request they stop; a 400 from Apache's own request parsing is not a WAF
//! verdict and is counted as passed (the summary lists every status, so such cases are visible).
//!
//! The header set is the constant browser envelope of CSIC 2010 (Konqueror user agent, `Accept`,
//! `Accept-Encoding`, `Accept-Charset`, `Accept-Language`, `Pragma`, `Cache-Control`, `Host:
//! localhost`), the same for every request so it cannot tell the labels apart. CSIC's per-request
//! `Cookie: JSESSIONID=...` is not replayed: the datasets crate keeps method, target and body —
//! exactly what the PATE detector sees — so both detectors judge the same bytes. Debian's CRS 3.3.4
//! lists `accept-charset` in `tx.restricted_headers` (rule 920450, PL1, critical): with CSIC's
//! header every request is blocked, hence `--drop-header Accept-Charset` for a meaningful run.
//!
//! Output: one JSON line per request `{"index", "path", "line", "label", "status", "blocked",
//! "request_hash", "error"}`, written atomically; a JSON summary (TPR, FPR, counts by label and by
//! status) on stdout. TPR = blocked malicious / malicious answered, FPR = blocked benign / benign
//! answered (requests that got no response are counted apart as `errors`).
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use datasets::{Format, Label, Record};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Arguments of `pate-experiments replay`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Loopback URL of the WAF, `http://127.0.0.1:PORT` (also `localhost`, `[::1]`).
    #[arg(long)]
    pub url: String,
    /// Dataset format: csic|fwaf|httpparams|csv|apache.
    #[arg(long)]
    pub format: Format,
    /// Give every record this label (benign|malicious), whatever the file says.
    #[arg(long)]
    pub label: Option<Label>,
    /// Remove this default header (case-insensitive; repeatable), e.g. `Accept-Charset`.
    #[arg(long = "drop-header", value_name = "NAME")]
    pub drop_headers: Vec<String>,
    /// Add or replace a header, `"Name: value"` (repeatable), e.g. `"Host: shop.example"`.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Keep every K-th request of each file (indices 0, K, 2K, ...): deterministic subsampling.
    #[arg(long, default_value_t = 1)]
    pub every: usize,
    /// Keep at most N requests of each file (after `--every`).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Requests in flight at once (one connection each).
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Connect, write and read timeout per request, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// Verdicts, one JSON line per request (written atomically when all are done).
    #[arg(long)]
    pub out: PathBuf,
    /// Also write the JSON summary to this file.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Dataset files, replayed in order.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

/// The header set sent with every request unless dropped or replaced: CSIC 2010's constant
/// browser headers (`Host` and `Connection` adapted to the replay).
pub const DEFAULT_HEADERS: [(&str, &str); 9] = [
    ("Host", "localhost"),
    ("User-Agent", "Mozilla/5.0 (compatible; Konqueror/3.5; Linux) KHTML/3.5.8 (like Gecko)"),
    ("Pragma", "no-cache"),
    ("Cache-Control", "no-cache"),
    ("Accept", "text/xml,application/xml,application/xhtml+xml,text/html;q=0.9,text/plain;q=0.8,image/png,*/*;q=0.5"),
    ("Accept-Encoding", "x-gzip, x-deflate, gzip, deflate"),
    ("Accept-Charset", "utf-8, utf-8;q=0.5, *;q=0.5"),
    ("Accept-Language", "en"),
    ("Connection", "close"),
];

/// After this many consecutive requests without a response the server is taken to be gone and
/// the replay stops with an error (instead of timing out on every remaining request).
pub const MAX_CONSECUTIVE_FAILURES: usize = 20;

/// Most response bytes read per request (the status line is all that is needed; the rest is
/// drained so the server sees an orderly close).
const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// The first 8 bytes, little-endian, of [`trainer::stages::split::request_hash`] (sha256 of method,
/// target and body): identifies a request text. NOTE: the trainer's simulated split is now record
/// by record ([`trainer::stages::split::split_by_record`]: copy k of a (request, label) is placed by
/// [`trainer::stages::split::split_unit`]), so this number alone no longer tells the split; the old rule
/// `request_hash / 2^64 >= 0.8` was the split by request text.
pub fn request_hash(record: &Record) -> u64 {
    let h = trainer::stages::split::request_hash(record);
    u64::from_le_bytes(h[..8].try_into().expect("sha256 has 32 bytes"))
}

/// Checks that `url` is `http://HOST:PORT[/]` with a loopback HOST and resolves it.
pub fn parse_loopback_url(url: &str) -> Result<SocketAddr> {
    let bad = |why: &str| Error::FlagValue {
        flag: "url",
        value: format!("{url:?}"),
        problem: format!("{why} (expected http://127.0.0.1:PORT)"),
    };
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad("only plain http:// is supported"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains('/') || authority.contains('?') {
        return Err(bad("a path is not supported, give only host and port"));
    }
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| bad("the port is missing"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| bad("the port is not a number 1-65535"))?;
    if port == 0 {
        return Err(bad("port 0"));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = match host {
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => h
            .parse()
            .map_err(|_| bad("the host must be a loopback address or localhost"))?,
    };
    if !ip.is_loopback() {
        return Err(bad("replay only targets loopback servers"));
    }
    let addr = (ip, port)
        .to_socket_addrs()
        .map_err(|e| bad(&e.to_string()))?
        .next();
    Ok(addr.unwrap_or(SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port)))
}

/// The headers to send: [`DEFAULT_HEADERS`] minus `drop` (case-insensitive), with `extra`
/// (`"Name: value"`) replacing a default of the same name or appended.
pub fn header_set(drop: &[String], extra: &[String]) -> Result<Vec<(String, String)>> {
    let mut headers: Vec<(String, String)> = DEFAULT_HEADERS
        .iter()
        .filter(|(n, _)| !drop.iter().any(|d| d.trim().eq_ignore_ascii_case(n)))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    for h in extra {
        let (name, value) = h.split_once(':').ok_or_else(|| Error::FlagValue {
            flag: "header",
            value: format!("{h:?}"),
            problem: "expected \"Name: value\"".into(),
        })?;
        let (name, value) = (name.trim(), value.trim());
        let token_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token_ok || value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(Error::FlagValue {
                flag: "header",
                value: format!("{h:?}"),
                problem: "not a valid header name and value".into(),
            });
        }
        for reserved in ["content-length", "content-type", "connection"] {
            if name.eq_ignore_ascii_case(reserved) {
                return Err(Error::FlagValue {
                    flag: "header",
                    value: format!("{h:?}"),
                    problem: format!("{name} is set by replay itself"),
                });
            }
        }
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.to_string(), value.to_string()));
    }
    Ok(headers)
}

/// Percent-encodes the bytes that cannot stand in a request line (controls, space, `#`,
/// non-ASCII), as a browser would before sending; everything else, `%` included, is kept, so an
/// already-encoded target is unchanged. Returns whether anything was encoded.
fn encode_target_bytes(target: &[u8], out: &mut Vec<u8>) -> bool {
    let mut changed = false;
    for &b in target {
        if b <= 0x20 || b >= 0x7f || b == b'#' {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
            changed = true;
        } else {
            out.push(b);
        }
    }
    changed
}

/// Percent-encodes every byte except RFC 3986 unreserved characters (a query parameter value).
fn encode_component(value: &[u8], out: &mut Vec<u8>) {
    for &b in value {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
}

/// The origin-form request target sent for a record, and whether bytes had to be encoded.
///
/// HttpParamsDataset records are one decoded parameter value, not a URL: they are sent as the
/// value of a query parameter, `/?p=<percent-encoded value>`. Other formats carry a path (+
/// query); one that does not start with `/` gets a leading `/`.
pub fn wire_target(format: Format, record: &Record) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(record.target.len() + 8);
    if format == Format::Httpparams {
        out.extend_from_slice(b"/?p=");
        encode_component(&record.target, &mut out);
        return (out, false);
    }
    if !record.target.starts_with(b"/") {
        out.push(b'/');
    }
    let changed = encode_target_bytes(&record.target, &mut out);
    (out, changed)
}

/// The raw HTTP/1.1 request for a record. A method is sent as is when it is an HTTP token,
/// otherwise the record is rejected. POST and PUT always carry `Content-Length` (0 without a
/// body); a body is sent with `Content-Type: application/x-www-form-urlencoded`.
pub fn build_request(
    format: Format,
    record: &Record,
    headers: &[(String, String)],
) -> std::result::Result<(Vec<u8>, bool), String> {
    let method = record.method.as_str();
    if method.is_empty()
        || !method
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'-' || b == b'_')
    {
        return Err(format!("method {method:?} is not an HTTP method token"));
    }
    let (target, reencoded) = wire_target(format, record);
    let body = record.body.as_deref().unwrap_or(&[]);
    let mut req = Vec::with_capacity(target.len() + body.len() + 512);
    req.extend_from_slice(method.as_bytes());
    req.push(b' ');
    req.extend_from_slice(&target);
    req.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in headers {
        req.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("connection"))
    {
        req.extend_from_slice(b"Connection: close\r\n");
    }
    if !body.is_empty() {
        req.extend_from_slice(b"Content-Type: application/x-www-form-urlencoded\r\n");
    }
    if !body.is_empty() || method == "POST" || method == "PUT" {
        req.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    req.extend_from_slice(body);
    Ok((req, reencoded))
}

/// Sends one request and returns the response status code.
pub fn send(
    addr: SocketAddr,
    request: &[u8],
    timeout: Duration,
) -> std::result::Result<u16, String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    // A server that answers early (a WAF rejecting in phase 1) may close before the body is
    // written; the status it already sent still counts, so a write error is only reported when
    // no response follows.
    let write_error = stream.write_all(request).and_then(|_| stream.flush()).err();
    let mut response = Vec::with_capacity(1024);
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                response.extend_from_slice(&buf[..n]);
                if response.len() >= MAX_RESPONSE_BYTES {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                if response.windows(2).any(|w| w == b"\r\n") {
                    break; // the status line is there; a reset after it does not matter
                }
                return Err(match write_error {
                    Some(w) => format!("write: {w}; read: {e}"),
                    None => format!("read: {e}"),
                });
            }
        }
    }
    parse_status(&response).ok_or_else(|| match write_error {
        Some(w) => format!("write: {w}; no response"),
        None => format!(
            "no HTTP status line in the response ({} bytes)",
            response.len()
        ),
    })
}

/// The status code of `HTTP/1.x NNN ...`.
fn parse_status(response: &[u8]) -> Option<u16> {
    let line_end = response
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(response.len());
    let line = std::str::from_utf8(&response[..line_end]).ok()?;
    let mut parts = line.split(' ');
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 {
        return None;
    }
    code.parse().ok()
}

/// One selected request: where it comes from and what is sent.
#[derive(Debug, Clone)]
pub struct Selected {
    /// The dataset file.
    pub path: PathBuf,
    /// The record.
    pub record: Record,
}

/// Loads `paths` and keeps every `every`-th record of each file, at most `limit` per file.
pub fn select(
    format: Format,
    paths: &[PathBuf],
    label: Option<Label>,
    every: usize,
    limit: Option<usize>,
) -> Result<Vec<Selected>> {
    if every == 0 {
        return Err(Error::FlagRange {
            flag: "every",
            expected: "at least 1",
        });
    }
    let options = datasets::LoadOptions {
        label,
        label_file: None,
    };
    let mut out = Vec::new();
    for path in paths {
        let records = datasets::load_with(format, path, &options)?;
        let kept = records
            .into_iter()
            .step_by(every)
            .take(limit.unwrap_or(usize::MAX));
        out.extend(kept.map(|record| Selected {
            path: path.clone(),
            record,
        }));
    }
    Ok(out)
}

/// The verdict for one request (one line of the output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Position in the replay (0-based, in file order).
    pub index: usize,
    /// The dataset file.
    pub path: String,
    /// 1-based line of the file where the request starts.
    pub line: usize,
    /// The dataset's label.
    pub label: Option<Label>,
    /// The response status; `null` when there was no response.
    pub status: Option<u16>,
    /// `status == 403`; `null` when there was no response.
    pub blocked: Option<bool>,
    /// [`request_hash`] as 16 hex digits (a JSON number would lose bits in many readers);
    /// it identifies the request text (see [`request_hash`]).
    pub request_hash: String,
    /// Whether bytes of the target had to be percent-encoded to form a valid request line.
    pub reencoded: bool,
    /// Why there is no status.
    pub error: Option<String>,
}

/// Blocked / total per label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelTally {
    /// Requests replayed.
    pub requests: usize,
    /// Requests answered 403.
    pub blocked: usize,
    /// Requests without a response.
    pub errors: usize,
}

/// What `replay` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The server.
    pub url: String,
    /// Requests replayed.
    pub requests: usize,
    /// Requests without a response.
    pub errors: usize,
    /// Targets that needed percent-encoding.
    pub reencoded_targets: usize,
    /// Benign requests.
    pub benign: LabelTally,
    /// Malicious requests.
    pub malicious: LabelTally,
    /// Unlabelled requests.
    pub unlabeled: LabelTally,
    /// Blocked malicious / answered malicious (`null` without answered malicious requests).
    pub tpr: Option<f64>,
    /// Blocked benign / answered benign (`null` without answered benign requests).
    pub fpr: Option<f64>,
    /// Responses per status code.
    pub status_counts: BTreeMap<u16, usize>,
}

/// Tallies verdicts into a [`Summary`].
pub fn summarize(url: &str, verdicts: &[Verdict]) -> Summary {
    let mut s = Summary {
        url: url.to_string(),
        requests: verdicts.len(),
        errors: 0,
        reencoded_targets: 0,
        benign: LabelTally::default(),
        malicious: LabelTally::default(),
        unlabeled: LabelTally::default(),
        tpr: None,
        fpr: None,
        status_counts: BTreeMap::new(),
    };
    for v in verdicts {
        let tally = match v.label {
            Some(Label::Benign) => &mut s.benign,
            Some(Label::Malicious) => &mut s.malicious,
            None => &mut s.unlabeled,
        };
        tally.requests += 1;
        match v.status {
            Some(code) => {
                *s.status_counts.entry(code).or_default() += 1;
                if v.blocked == Some(true) {
                    tally.blocked += 1;
                }
            }
            None => {
                tally.errors += 1;
                s.errors += 1;
            }
        }
        s.reencoded_targets += usize::from(v.reencoded);
    }
    let rate = |t: LabelTally| {
        let answered = t.requests - t.errors;
        (answered > 0).then(|| t.blocked as f64 / answered as f64)
    };
    s.tpr = rate(s.malicious);
    s.fpr = rate(s.benign);
    s
}

/// Replay settings.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The server.
    pub addr: SocketAddr,
    /// Headers of every request.
    pub headers: Vec<(String, String)>,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Print progress to stderr.
    pub progress: bool,
}

/// Sends every selected request and returns the verdicts in input order. Stops with an error
/// after [`MAX_CONSECUTIVE_FAILURES`] requests in a row got no response (the server is gone).
pub fn replay(
    format: Format,
    selected: &[Selected],
    options: &ReplayOptions,
) -> Result<Vec<Verdict>> {
    let workers = options.concurrency.clamp(1, 64).min(selected.len().max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let consecutive_failures = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let last_error = Mutex::new(String::new());
    let slots: Vec<Mutex<Option<Verdict>>> = selected.iter().map(|_| Mutex::new(None)).collect();
    let started = Instant::now();
    let progress_every = (selected.len() / 20).max(500);

    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                if abort.load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(sel) = selected.get(i) else { return };
                let r = &sel.record;
                let hash = request_hash(r);
                let (status, reencoded, error) = match build_request(format, r, &options.headers) {
                    Err(e) => (None, false, Some(e)),
                    Ok((bytes, reencoded)) => match send(options.addr, &bytes, options.timeout) {
                        Ok(code) => (Some(code), reencoded, None),
                        Err(e) => (None, reencoded, Some(e)),
                    },
                };
                if let Some(e) = &error {
                    *last_error.lock().unwrap_or_else(|p| p.into_inner()) = e.clone();
                    if consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1
                        >= MAX_CONSECUTIVE_FAILURES
                    {
                        abort.store(true, Ordering::Relaxed);
                    }
                } else {
                    consecutive_failures.store(0, Ordering::Relaxed);
                }
                let verdict = Verdict {
                    index: i,
                    path: sel.path.display().to_string(),
                    line: r.line,
                    label: r.label,
                    status,
                    blocked: status.map(|c| c == 403),
                    request_hash: format!("{hash:016x}"),
                    reencoded,
                    error,
                };
                *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(verdict);
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if options.progress && (n.is_multiple_of(progress_every) || n == selected.len()) {
                    let secs = started.elapsed().as_secs_f64();
                    tracing::info!(
                        "replay: {n}/{} requests, {:.0}/s",
                        selected.len(),
                        n as f64 / secs.max(1e-9)
                    );
                }
            });
        }
    });

    if abort.load(Ordering::Relaxed) {
        let e = last_error.into_inner().unwrap_or_else(|p| p.into_inner());
        return Err(Error::ReplayStalled {
            addr: options.addr,
            failures: MAX_CONSECUTIVE_FAILURES,
            last: e,
        });
    }
    Ok(slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every index below len is filled")
        })
        .collect())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic_write::write_atomic(path, bytes).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// Runs `pate-experiments replay`.
pub fn run(args: Args) -> Result<()> {
    let addr = parse_loopback_url(&args.url)?;
    let headers = header_set(&args.drop_headers, &args.headers)?;
    if args.concurrency == 0 || args.concurrency > 64 {
        return Err(Error::FlagRange {
            flag: "concurrency",
            expected: "1-64",
        });
    }
    if args.timeout_ms == 0 {
        return Err(Error::FlagRange {
            flag: "timeout-ms",
            expected: "positive",
        });
    }
    let selected = select(args.format, &args.paths, args.label, args.every, args.limit)?;
    tracing::info!(
        "replay: {} requests from {} file(s) to {}",
        selected.len(),
        args.paths.len(),
        args.url
    );
    let options = ReplayOptions {
        addr,
        headers,
        concurrency: args.concurrency,
        timeout: Duration::from_millis(args.timeout_ms),
        progress: true,
    };
    let verdicts = replay(args.format, &selected, &options)?;
    let mut jsonl = Vec::with_capacity(verdicts.len() * 160);
    for v in &verdicts {
        serde_json::to_writer(&mut jsonl, v).expect("plain data serializes");
        jsonl.push(b'\n');
    }
    write_file(&args.out, &jsonl)?;
    let summary = summarize(&args.url, &verdicts);
    let text = serde_json::to_string_pretty(&summary).expect("plain data serializes");
    if let Some(path) = &args.summary {
        write_file(path, format!("{text}\n").as_bytes())?;
    }
    println!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(method: &str, target: &[u8], body: Option<&[u8]>) -> Record {
        Record {
            method: method.into(),
            target: target.to_vec(),
            body: body.map(<[u8]>::to_vec),
            headers: Vec::new(),
            label: None,
            line: 1,
            client: None,
        }
    }

    #[test]
    fn request_hash_is_the_number_the_split_reads() {
        let a = record("GET", b"/a?x=1", None);
        let full = trainer::stages::split::request_hash(&a);
        assert_eq!(request_hash(&a).to_le_bytes(), full[..8]);
        assert_eq!(request_hash(&a), request_hash(&a.clone()));
        assert_ne!(
            request_hash(&a),
            request_hash(&record("POST", b"/a?x=1", None))
        );
        assert_ne!(
            request_hash(&record("GET", b"/a", Some(b""))),
            request_hash(&record("GET", b"/a", None))
        );
        // The simulated split places the first copy by `split_unit(record_key, 0)`.
        let config = trainer::config::SplitConfig::default();
        let splits = trainer::stages::split::split_by_record(std::slice::from_ref(&a), &config);
        let u = trainer::stages::split::split_unit(&trainer::stages::split::record_key(&a), 0);
        assert_eq!(
            splits.test.len() == 1,
            u >= config.private + config.public + config.validation
        );
    }

    #[test]
    fn post_request_is_framed_with_length_and_form_type() {
        let headers = header_set(&["accept-charset".into()], &["Host: shop.test".into()]).unwrap();
        let (req, reencoded) = build_request(
            Format::Csic,
            &record("POST", b"/p?a=1", Some(b"x=%27+or+1")),
            &headers,
        )
        .unwrap();
        let text = String::from_utf8(req).unwrap();
        assert!(!reencoded);
        assert!(text.starts_with("POST /p?a=1 HTTP/1.1\r\n"), "{text}");
        assert!(
            !text.to_ascii_lowercase().contains("accept-charset"),
            "{text}"
        );
        assert!(
            text.contains("\r\nHost: shop.test\r\n") && !text.contains("Host: localhost"),
            "{text}"
        );
        assert!(text.contains("\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10\r\n\r\nx=%27+or+1"), "{text}");
        assert_eq!(text.matches("Connection: close").count(), 1);
    }

    #[test]
    fn targets_are_made_valid_request_lines() {
        let (t, changed) = wire_target(Format::Csic, &record("GET", b"/a b#c?\xe9=%41", None));
        assert_eq!(t, b"/a%20b%23c?%E9=%41");
        assert!(changed);
        let (t, _) = wire_target(Format::Fwaf, &record("GET", b"etc/passwd", None));
        assert_eq!(t, b"/etc/passwd");
        let (t, _) = wire_target(Format::Httpparams, &record("GET", b"' or 1=1 --", None));
        assert_eq!(t, b"/?p=%27%20or%201%3D1%20--");
        assert!(build_request(Format::Csic, &record("GE T", b"/", None), &[]).is_err());
    }

    #[test]
    fn urls_must_be_loopback_http() {
        assert_eq!(
            parse_loopback_url("http://127.0.0.1:8080").unwrap().port(),
            8080
        );
        assert!(parse_loopback_url("http://localhost:80/").is_ok());
        assert!(parse_loopback_url("http://[::1]:81")
            .unwrap()
            .ip()
            .is_loopback());
        for bad in [
            "https://127.0.0.1:1",
            "http://10.0.0.1:80",
            "http://127.0.0.1",
            "http://127.0.0.1:80/x",
            "http://example.com:80",
        ] {
            assert!(parse_loopback_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn status_line_is_parsed() {
        assert_eq!(parse_status(b"HTTP/1.1 403 Forbidden\r\n\r\n"), Some(403));
        assert_eq!(parse_status(b"HTTP/1.0 200 OK\r\n"), Some(200));
        assert_eq!(parse_status(b"garbage"), None);
        assert_eq!(parse_status(b""), None);
    }

    #[test]
    fn summary_rates_exclude_unanswered_requests() {
        let v = |label, status: Option<u16>| Verdict {
            index: 0,
            path: String::new(),
            line: 1,
            label: Some(label),
            status,
            blocked: status.map(|c| c == 403),
            request_hash: String::new(),
            reencoded: false,
            error: None,
        };
        let verdicts = [
            v(Label::Malicious, Some(403)),
            v(Label::Malicious, Some(200)),
            v(Label::Malicious, None),
            v(Label::Benign, Some(404)),
            v(Label::Benign, Some(200)),
        ];
        let s = summarize("http://127.0.0.1:1", &verdicts);
        assert_eq!(s.tpr, Some(0.5));
        assert_eq!(s.fpr, Some(0.0));
        assert_eq!(s.errors, 1);
        assert_eq!(
            s.malicious,
            LabelTally {
                requests: 3,
                blocked: 1,
                errors: 1
            }
        );
        assert_eq!(s.status_counts.get(&403), Some(&1));
    }

    #[test]
    fn a_dead_server_stops_the_replay_with_an_error() {
        // Bind then drop a listener: the port is (almost certainly) closed afterwards.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let selected: Vec<Selected> = (0..50)
            .map(|_| Selected {
                path: "x".into(),
                record: record("GET", b"/", None),
            })
            .collect();
        let options = ReplayOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            headers: header_set(&[], &[]).unwrap(),
            concurrency: 2,
            timeout: Duration::from_secs(2),
            progress: false,
        };
        let err = replay(Format::Csic, &selected, &options)
            .unwrap_err()
            .to_string();
        assert!(err.contains("in a row got no response"), "{err}");
    }
}
