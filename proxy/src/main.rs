//! `pate-proxy`: the inline filter in front of Apache.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgAction, Parser, Subcommand};
use proxy::server::LogFormat;

/// pate-proxy: a reverse proxy (pingora) that scores every request with a PATE-trained student
/// model (ONNX Runtime) and blocks (403) or flags it before it reaches the upstream (Apache).
///
/// Signals: SIGHUP re-reads the configuration file, reloads the bundle and reopens the audit log,
/// keeping the old ones if either is invalid (like POST /reload on the admin address); SIGTERM stops gracefully (waits up to grace_period_seconds); SIGINT stops at once;
/// SIGQUIT hands the sockets to a new process started with --upgrade.
///
/// The process log goes to stderr at the config's `log_level:`, stepped by -v/-q; GET /ready
/// answers 200 once a model serves and the `listen` socket is bound.
#[derive(Parser)]
#[command(name = "pate-proxy", version, after_help = CONFIG_HELP)]
struct Cli {
    /// Configuration file (YAML; see below).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Take the listening sockets over from a running pate-proxy (after sending it SIGQUIT).
    #[arg(long)]
    upgrade: bool,
    /// More process log than the config's `log_level:` (info: `-v` debug, `-vv` trace).
    #[arg(short, long, global = true, action = ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
    /// Less process log than `log_level:` (info: `-q` warnings and errors, `-qq` errors only).
    #[arg(short, long, global = true, action = ArgAction::Count)]
    quiet: u8,
    /// The process log on stderr: `text` lines (coloured only on a terminal) or `json`, one
    /// object per line. The audit log is JSON lines either way.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Validate the configuration file and the bundle it names, then exit (0 = valid).
    CheckConfig,
    /// Run the proxy (the default when no subcommand is given).
    Run,
}

const CONFIG_HELP: &str = "\
Configuration keys (YAML):
  listen: \"127.0.0.1:8080\"        address of the proxy                        (required)
  upstream: \"127.0.0.1:8081\"      Apache                                       (required)
  admin_listen: \"127.0.0.1:9090\"  GET /metrics /live /ready, POST /reload /promote (required)
  bundle: \"runs/quick/bundle\"     bundle dir from `pate-trainer export`         (required)
  shadow_bundle: null             a second bundle scored beside the active one, deciding nothing
                                  (patewaf_shadow_requests_total); POST /promote makes it active
  audit_log: \"audit.jsonl\"        JSON lines for flagged/blocked/failed requests (required)
  mode: detect|block|off          default detect (forward and record); off: no WAF, plain passthrough
  scorer: auto|onnxruntime|native default auto (native for a linear student, ORT for hidden layers); checked against ORT at load
  threshold: 0.5                  override the bundle's threshold (default: the bundle's)
  on_error: open|closed           scoring failure: forward (default) or 503
  body_limit_bytes: 65536         urlencoded POST/PUT body bytes scored (max 65536)
  body_over_limit: truncate|reject  score the prefix (default) or answer 413
  routes:                         first match wins; match on path|prefix, methods, host
    - {path: \"/health\", exclude: true}
    - {prefix: \"/admin/\", mode: block}
    - {prefix: \"/search\", methods: [GET], threshold: 0.9, exclude_parts: [{param: q}]}
  exclude_parts: []               never scored: {param: NAME} (query, form, JSON, multipart, XML
                                  field), {header: NAME}, {cookie: NAME}
  uri_limit_bytes: 8192           uri_over_limit: reject|truncate  (414, or score the prefix and forward)
  header_count_limit: 100         header_limit_bytes: 32768     (431 above either)
  client_header_timeout_ms: 10000 client_body_timeout_ms: 10000 (slow heads dropped, slow bodies 408)
  trusted_forwarders: []          peers whose X-Forwarded-Proto is kept (others: http)
  audit_target_max_bytes: 2048    audit_redact_values: false    audit_top_features: 5
  audit_body: false               true: record the scored form body in the audit log
  capture: null                   {path, max_bytes: 104857600, max_files: 5, body_max_bytes: 8192}:
                                  every scored request as a JSON line (headers, body: users' cookies
                                  and personal data), rotated to PATH.1..N; for
                                  `pate-trainer run --public PATH --public-format capture`
  log_level: info                 threads: 2                    grace_period_seconds: 5
  upstream_connect_timeout_ms: 2000   onnxruntime_library: null (= $ORT_DYLIB_PATH)
  upgrade_sock: null (= /tmp/pate-proxy-<port>.upgrade.sock)
  start_without_model: false      true: start not ready (on_error applies) if the bundle fails to load";

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(path) = cli.config else {
        eprintln!("error: --config FILE is required (see --help)");
        return ExitCode::from(2);
    };
    let config = match proxy::Config::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Some(Command::CheckConfig) => match proxy::server::check_config(&config) {
            Ok(summary) => {
                println!("{}: {summary}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                ExitCode::from(2)
            }
        },
        Some(Command::Run) | None => {
            let level = config.log_level.adjusted(cli.verbose, cli.quiet);
            proxy::server::init_logging(level, cli.log_format);
            match proxy::server::run(config, &path, cli.upgrade) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    match cli.log_format {
                        LogFormat::Text => eprintln!("error: {e}"),
                        LogFormat::Json => tracing::error!("{e}"),
                    }
                    ExitCode::FAILURE
                }
            }
        }
    }
}
