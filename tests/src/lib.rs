//! Helpers for the end-to-end tests (they live in `tests/tests/`): a real Apache on a loopback
//! port with a temporary config, the real `pate-proxy` binary in front of it, and a minimal
//! HTTP/1.1 client over `std::net` (so every byte sent is the one the test wrote).
//!
//! The binaries are the release builds in `target/release` (`cargo build --release -p proxy
//! -p trainer`, which `scripts/test.sh` runs before `cargo test`): Cargo only exposes
//! `CARGO_BIN_EXE_*` to tests of the package that owns the binary, and a test cannot safely run
//! cargo itself (the build lock is held). `PATE_PROXY_BIN` / `PATE_TRAINER_BIN` override the paths.
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Repository root (the workspace).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shared data sets (`../shared/datasets` from the repository root).
pub fn datasets_dir() -> PathBuf {
    repo_root().join("../shared/datasets")
}

/// Path of a release binary of the workspace, checked to exist.
pub fn release_binary(name: &str, env_override: &str) -> PathBuf {
    let path = std::env::var_os(env_override)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/release").join(name));
    assert!(
        path.is_file(),
        "{} not found: build it first with `cargo build --release -p proxy -p trainer` \
         (scripts/test.sh does), or set {env_override}",
        path.display()
    );
    path
}

/// The `pate-proxy` binary.
pub fn proxy_binary() -> PathBuf {
    release_binary("pate-proxy", "PATE_PROXY_BIN")
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    // The kernel may hand a just-released ephemeral port out again: two calls in one test (a
    // proxy's `listen` and `admin_listen`) once got the same port. Never return a port twice
    // in this process.
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral loopback port");
        let port = listener.local_addr().expect("local address").port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// Waits until `addr` accepts TCP connections (or `timeout`); returns whether it does.
pub fn wait_for_port(addr: SocketAddr, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Polls `check` every 50 ms until it returns true or `timeout` passes.
pub fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Debian's `apache2` on `127.0.0.1:<port>`, with its own config, docroot and logs in a temporary
/// directory. The access log records `X-Forwarded-For`, `X-Forwarded-Proto`, `Via`,
/// `X-Request-Id` and the bytes received (`in=`, mod_logio: request line, headers and body), so
/// tests see exactly what reached Apache. Stopped on drop.
pub struct Apache {
    /// Directory holding `httpd.conf`, `htdocs/` and `logs/`.
    pub dir: PathBuf,
    /// The port it listens on.
    pub port: u16,
    conf: PathBuf,
}

impl Apache {
    /// Writes the config into `dir` and starts Apache; `htdocs/tienda1/...` gets the pages the
    /// CSIC-style requests ask for, so a forwarded request gets Apache's 200.
    pub fn start(dir: &Path) -> Apache {
        let port = free_port();
        let htdocs = dir.join("htdocs");
        let logs = dir.join("logs");
        for sub in [
            "tienda1/publico",
            "tienda1/miembros",
            "tienda1/global",
            "tienda1/imagenes",
            "static",
        ] {
            std::fs::create_dir_all(htdocs.join(sub)).expect("create docroot");
        }
        std::fs::create_dir_all(&logs).expect("create log dir");
        std::fs::write(
            htdocs.join("index.html"),
            "<html><body>upstream</body></html>\n",
        )
        .expect("write page");
        for page in [
            "tienda1/index.jsp",
            "tienda1/publico/anadir.jsp",
            "tienda1/publico/autenticar.jsp",
            "tienda1/publico/caracteristicas.jsp",
            "tienda1/publico/productos.jsp",
            "tienda1/publico/pagar.jsp",
            "tienda1/publico/vaciar.jsp",
            "tienda1/miembros/editar.jsp",
            "tienda1/global/menum.jsp",
            "static/app.js",
        ] {
            std::fs::write(htdocs.join(page), format!("page {page}\n")).expect("write page");
        }
        let mods = "/usr/lib/apache2/modules";
        // As root Apache's children switch to User/Group, which must be able to read the docroot
        // (temporary directories are 0700).
        let user = if is_root() {
            let _ = Command::new("chmod").args(["-R", "a+rX"]).arg(dir).status();
            let mut p = dir.to_path_buf();
            while let Some(parent) = p.parent() {
                let _ = Command::new("chmod").arg("a+x").arg(parent).status();
                p = parent.to_path_buf();
                if p == Path::new("/tmp") || p == Path::new("/") {
                    break;
                }
            }
            "User www-data\nGroup www-data\n"
        } else {
            ""
        };
        let d = dir.display();
        let conf = format!(
            r#"ServerRoot "{d}"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile "{d}/logs/httpd.pid"
ErrorLog "{d}/logs/error.log"
LoadModule mpm_event_module {mods}/mod_mpm_event.so
LoadModule authz_core_module {mods}/mod_authz_core.so
LoadModule mime_module {mods}/mod_mime.so
LoadModule dir_module {mods}/mod_dir.so
{user}TypesConfig /etc/mime.types
AddType text/html .jsp
DocumentRoot "{d}/htdocs"
DirectoryIndex index.html
LogFormat "%h \"%r\" %>s xff=\"%{{X-Forwarded-For}}i\" xfp=\"%{{X-Forwarded-Proto}}i\" via=\"%{{Via}}i\" rid=\"%{{X-Request-Id}}i\" in=%I" waf
CustomLog "{d}/logs/access.log" waf
<Directory "{d}/htdocs">
  Require all granted
</Directory>
"#
        );
        let conf_path = dir.join("httpd.conf");
        std::fs::write(&conf_path, conf).expect("write httpd.conf");
        let apache = Apache {
            dir: dir.to_path_buf(),
            port,
            conf: conf_path,
        };
        apache.start_again();
        apache
    }

    /// Address Apache listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// (Re)starts Apache with the same config and port and waits until it accepts connections.
    pub fn start_again(&self) {
        let out = Command::new("apache2")
            .arg("-f")
            .arg(&self.conf)
            .args(["-k", "start"])
            .output()
            .expect("run apache2 (Debian package apache2)");
        assert!(
            out.status.success(),
            "apache2 -k start failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("logs/error.log")).unwrap_or_default()
        );
        assert!(
            wait_for_port(self.addr(), Duration::from_secs(15)),
            "Apache did not listen on {}: {}",
            self.addr(),
            std::fs::read_to_string(self.dir.join("logs/error.log")).unwrap_or_default()
        );
    }

    /// Stops Apache (SIGTERM to the parent named in its pid file, which is what `apache2 -k stop`
    /// does, and works even when the config is already gone) and waits until its port is closed.
    pub fn stop(&self) {
        let pid_file = self.dir.join("logs/httpd.pid");
        match std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
        {
            Some(pid) => kill("TERM", pid),
            None => {
                let _ = Command::new("apache2")
                    .arg("-f")
                    .arg(&self.conf)
                    .args(["-k", "stop"])
                    .output();
            }
        }
        eventually(Duration::from_secs(15), || {
            !pid_file.exists()
                && TcpStream::connect_timeout(&self.addr(), Duration::from_millis(100)).is_err()
        });
    }

    /// The access log so far (one line per request that reached Apache).
    pub fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("logs/access.log")).unwrap_or_default()
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A running `pate-proxy`; stopped with SIGINT (fast shutdown) on drop.
pub struct Proxy {
    child: Child,
    /// Proxy address.
    pub listen: SocketAddr,
    /// Admin address.
    pub admin: SocketAddr,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
}

/// Ports and paths for a proxy config.
pub struct ProxyPorts {
    /// Proxy port.
    pub listen: u16,
    /// Admin port.
    pub admin: u16,
}

impl ProxyPorts {
    /// Two free loopback ports.
    pub fn free() -> Self {
        ProxyPorts {
            listen: free_port(),
            admin: free_port(),
        }
    }
}

/// The YAML of a proxy config; `extra` is appended verbatim (more keys).
pub fn proxy_config(
    ports: &ProxyPorts,
    upstream: u16,
    bundle: &Path,
    mode: &str,
    audit: &Path,
    extra: &str,
) -> String {
    format!(
        "listen: \"127.0.0.1:{}\"\nupstream: \"127.0.0.1:{upstream}\"\nadmin_listen: \"127.0.0.1:{}\"\nbundle: \"{}\"\nmode: {mode}\naudit_log: \"{}\"\ngrace_period_seconds: 1\nlog_level: info\n{extra}",
        ports.listen,
        ports.admin,
        bundle.display(),
        audit.display()
    )
}

fn kill(signal: &str, pid: u32) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
}

impl Proxy {
    /// Writes `config` to `dir/proxy.yaml`, starts the proxy and waits until `/ready` answers 200.
    pub fn start(dir: &Path, config: &str) -> Proxy {
        Self::start_until(dir, config, "/ready")
    }

    /// Like [`Proxy::start`] but waits for `/live` only (a proxy started without a model).
    pub fn start_live(dir: &Path, config: &str) -> Proxy {
        Self::start_until(dir, config, "/live")
    }

    fn start_until(dir: &Path, config: &str, probe: &str) -> Proxy {
        let mut proxy = Self::spawn(dir, config, &[], "proxy.log");
        let ready = eventually(Duration::from_secs(30), || {
            if let Ok(Some(status)) = proxy.child.try_wait() {
                panic!("pate-proxy exited ({status}):\n{}", proxy.log_text());
            }
            http(proxy.admin, "GET", probe, &[], None).is_ok_and(|r| r.status == 200)
        });
        assert!(ready, "pate-proxy not ready:\n{}", proxy.log_text());
        assert!(
            wait_for_port(proxy.listen, Duration::from_secs(10)),
            "proxy port closed"
        );
        proxy
    }

    /// Writes `config` to `dir/proxy.yaml` and spawns the proxy with `extra_args`, logging to
    /// `dir/log_name`, without waiting for it.
    pub fn spawn(dir: &Path, config: &str, extra_args: &[&str], log_name: &str) -> Proxy {
        let config_path = dir.join("proxy.yaml");
        std::fs::write(&config_path, config).expect("write proxy.yaml");
        let parsed: serde_yaml::Value = serde_yaml::from_str(config).expect("config YAML");
        let addr = |key: &str| -> SocketAddr {
            parsed[key]
                .as_str()
                .and_then(|s| s.parse().ok())
                .expect("address in config")
        };
        let log = dir.join(log_name);
        let log_file = std::fs::File::create(&log).expect("create the proxy log");
        let child = Command::new(proxy_binary())
            .arg("--config")
            .arg(&config_path)
            .args(extra_args)
            .stdout(Stdio::from(log_file.try_clone().expect("clone log handle")))
            .stderr(Stdio::from(log_file))
            .spawn()
            .expect("spawn pate-proxy");
        Proxy {
            child,
            listen: addr("listen"),
            admin: addr("admin_listen"),
            log,
        }
    }

    /// Sends SIGQUIT (pingora's graceful upgrade: hand the listening sockets to a process started
    /// with `--upgrade`, then finish in-flight requests and exit) and waits for the exit.
    pub fn quit_for_upgrade(&mut self) -> Option<std::process::ExitStatus> {
        self.signal_and_wait("QUIT")
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The proxy's own log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGHUP (reload the bundle, reopen the audit log).
    pub fn hangup(&self) {
        kill("HUP", self.child.id());
    }

    /// `GET` through the proxy.
    pub fn get(&self, target: &str) -> Response {
        http(self.listen, "GET", target, &[], None).expect("request through the proxy")
    }

    /// The admin server's `/metrics` text.
    pub fn metrics(&self) -> String {
        let r = http(self.admin, "GET", "/metrics", &[], None).expect("GET /metrics");
        assert_eq!(r.status, 200);
        r.text()
    }

    /// Value of one sample of `/metrics` (e.g. `patewaf_requests_total{verdict="block"}`).
    pub fn metric(&self, sample: &str) -> f64 {
        metric_value(&self.metrics(), sample)
    }

    /// Stops the proxy (SIGINT: fast shutdown) and waits for it.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        self.signal_and_wait("INT")
    }

    /// Stops the proxy with SIGTERM (graceful: in-flight requests finish within
    /// `grace_period_seconds`) and waits for it.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        self.signal_and_wait("TERM")
    }

    fn signal_and_wait(&mut self, signal: &str) -> Option<std::process::ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        kill(signal, self.child.id());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Value of `sample` (metric name with its exact label set, as Prometheus prints it) in a text
/// exposition; panics when absent, so a renamed metric fails the test.
pub fn metric_value(exposition: &str, sample: &str) -> f64 {
    exposition
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix(sample)?;
            rest.strip_prefix(' ')?.trim().parse::<f64>().ok()
        })
        .unwrap_or_else(|| panic!("sample {sample} not in /metrics:\n{exposition}"))
}

/// An HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// Body (de-chunked).
    pub body: Vec<u8>,
}

impl Response {
    /// First header of that (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request with `Connection: close`, answered in full (or an I/O error).
pub fn http(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> std::io::Result<Response> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut request =
        format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    if let Some(body) = body {
        bytes.extend_from_slice(body);
    }
    stream.write_all(&bytes)?;
    let mut raw = Vec::new();
    // A server that answers before reading the whole body may reset the connection after its
    // answer; keep what was read.
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if !raw.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e),
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
    parse_response(&raw)
}

fn parse_response(mut raw: &[u8]) -> std::io::Result<Response> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    // Skip interim responses (`100 Continue`).
    while raw.starts_with(b"HTTP/1.1 1") || raw.starts_with(b"HTTP/1.0 1") {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| bad("no end of headers"))?;
        raw = &raw[end + 4..];
    }
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = body.as_slice();
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size_text = String::from_utf8_lossy(&rest[..eol]);
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| bad("bad chunk size"))?;
            rest = &rest[eol + 2..];
            if size == 0 || rest.len() < size {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = rest.get(size + 2..).unwrap_or_default();
        }
        body = out;
    }
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Lines of a JSON-lines file, parsed.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("invalid JSON line {l:?}: {e}")))
        .collect()
}

/// Writes `request` (raw bytes, exactly as given: malformed requests that HTTP clients refuse to
/// send) to `addr` and reads until the server closes the connection or `read_timeout` passes
/// without a byte. Returns what was read (possibly several pipelined responses).
pub fn raw_exchange(
    addr: SocketAddr,
    request: &[u8],
    read_timeout: Duration,
) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(read_timeout))?;
    // A server that answers early (413, 431) may close before it read everything we send.
    let _ = stream.write_all(request);
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e),
        }
    }
    Ok(raw)
}

/// One raw request answered: the first response in what [`raw_exchange`] read (an error when
/// nothing or no complete head came back, e.g. the connection was closed without an answer).
pub fn raw_request(addr: SocketAddr, request: &[u8]) -> std::io::Result<Response> {
    let raw = raw_exchange(addr, request, Duration::from_secs(10))?;
    parse_response(&raw)
}

/// Splits what a server sent on one connection into its responses, in order (interim `1xx`
/// responses skipped; bodies delimited by `Content-Length` or chunked encoding).
pub fn parse_responses(mut raw: &[u8]) -> Vec<Response> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&raw[..end]).into_owned();
        let mut rest = &raw[end + 4..];
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = head
            .split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        if (100..200).contains(&status) {
            raw = rest;
            continue;
        }
        let length = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok());
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
        let mut body = Vec::new();
        if chunked {
            while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
                let size = usize::from_str_radix(
                    String::from_utf8_lossy(&rest[..eol])
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim(),
                    16,
                )
                .unwrap_or(0);
                rest = &rest[eol + 2..];
                if size == 0 {
                    rest = rest.get(2..).unwrap_or_default();
                    break;
                }
                body.extend_from_slice(&rest[..size.min(rest.len())]);
                rest = rest.get(size + 2..).unwrap_or_default();
            }
        } else {
            let n = length.unwrap_or(rest.len()).min(rest.len());
            body.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        out.push(Response {
            status,
            headers,
            body,
        });
        raw = rest;
    }
    out
}

/// The first line of a bundle.yaml that publishes what only the run directory may hold (`grep -E
/// 'data_dependent|private: *[0-9]|ensemble'`: a data-dependent ε, an exact private count, the
/// teacher ensemble's figures); `None` when it holds none.
pub fn bundle_yaml_leak(yaml: &str) -> Option<String> {
    yaml.lines()
        .find(|l| {
            l.contains("data_dependent")
                || l.contains("ensemble")
                || l.match_indices("private:").any(|(i, m)| {
                    l[i + m.len()..]
                        .trim_start_matches(' ')
                        .starts_with(|c: char| c.is_ascii_digit())
                })
        })
        .map(str::to_string)
}
