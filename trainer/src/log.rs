//! Logging for `pate-trainer` and `pate-experiments`: `tracing` events written to stderr as plain
//! lines (no time, level or target prefix, so the texts scripts grep — `device:`, `] ==`,
//! `run: done` — stay as they are), filtered by the global `-v/--verbose` and `-q/--quiet` flags.
//!
//! The trainer's stderr is private (docs/privacy.md): it may name data-dependent quantities, so
//! it belongs with the run directory, not in a published log.
use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tracing_subscriber::filter::{EnvFilter, LevelFilter};

/// A binary of this workspace on the command line: the verbosity flags and one subcommand.
#[derive(clap::Parser)]
#[command(version)]
struct Binary<C: clap::Subcommand> {
    #[command(flatten)]
    verbosity: Verbosity,
    #[command(subcommand)]
    command: C,
}

/// The `main` of `pate-trainer` and `pate-experiments`: parses the command line (`name` and
/// `about` are what `--help` shows), installs logging at its verbosity ([`init`]), runs the
/// subcommand and, on an error, logs it and exits with status 1.
pub fn run_binary<C: clap::Subcommand, E: std::fmt::Display>(
    name: &'static str,
    about: &'static str,
    run: impl FnOnce(C) -> Result<(), E>,
) {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Binary::<C>::command().name(name).about(about).get_matches();
    let parsed = Binary::<C>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    init(parsed.verbosity);
    if let Err(e) = run(parsed.command) {
        tracing::error!("{name}: error: {e}");
        std::process::exit(1);
    }
}

/// The global verbosity flags.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct Verbosity {
    /// More output: `-v` adds debug events, `-vv` trace events.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,
    /// Less output: `-q` keeps warnings and errors, `-qq` errors only.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub quiet: u8,
}

impl Verbosity {
    /// The most detailed level shown for this workspace's events (info by default).
    pub fn level(&self) -> LevelFilter {
        match (self.verbose, self.quiet) {
            (0, 0) => LevelFilter::INFO,
            (1, _) => LevelFilter::DEBUG,
            (v, _) if v >= 2 => LevelFilter::TRACE,
            (_, 1) => LevelFilter::WARN,
            _ => LevelFilter::ERROR,
        }
    }

    /// The filter: this workspace's crates at [`Verbosity::level`], other crates (ONNX Runtime,
    /// …) at warnings or fewer. `RUST_LOG`, when set, replaces it.
    fn filter(&self) -> EnvFilter {
        if let Ok(filter) = EnvFilter::try_from_env("RUST_LOG") {
            return filter;
        }
        let level = self.level();
        let others = level.min(LevelFilter::WARN);
        EnvFilter::new(format!(
            "{others},trainer={level},experiments={level},pate_trainer={level},pate_experiments={level}"
        ))
    }
}

/// Installs the stderr subscriber (once; a second call does nothing). Long stages draw progress
/// bars only when stderr is a terminal and info events are shown.
pub fn init(verbosity: Verbosity) {
    let terminal = io::stderr().is_terminal();
    SHOW_BARS.store(
        terminal && verbosity.level() >= LevelFilter::INFO,
        Ordering::Relaxed,
    );
    let _ = tracing_subscriber::fmt()
        .with_env_filter(verbosity.filter())
        .with_writer(|| BarAwareStderr)
        .with_ansi(terminal)
        .without_time()
        .with_level(false)
        .with_target(false)
        .try_init();
}

/// Whether long stages draw progress bars: set by [`init`] when stderr is a terminal and info
/// events are shown; never in a library caller or a test that did not call [`init`].
static SHOW_BARS: AtomicBool = AtomicBool::new(false);

/// Every bar drawn, so that a log line is written above them instead of through them.
fn bars() -> &'static MultiProgress {
    static BARS: OnceLock<MultiProgress> = OnceLock::new();
    BARS.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

/// Stderr, with the progress bars (if any) lifted while a log line is written.
struct BarAwareStderr;

impl io::Write for BarAwareStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        bars().suspend(|| io::stderr().write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// The progress of a long stage (epochs, cells): a bar on a terminal, plain info lines
/// otherwise (a log file or CI gets one line per step, never bar redraws).
pub struct Progress {
    bar: Option<ProgressBar>,
    /// The latest step's line, logged once when a bar finishes so the terminal keeps it.
    last: Mutex<Option<String>>,
}

impl Progress {
    /// A progress of `len` steps.
    pub fn new(len: u64) -> Progress {
        let bar = SHOW_BARS.load(Ordering::Relaxed).then(|| {
            let bar = bars().add(ProgressBar::new(len));
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} (ETA {eta}) {wide_msg}")
            {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            last: Mutex::new(None),
        }
    }

    /// Step `pos` is done: the bar moves and shows `line`, or `line` is logged (info).
    pub fn step(&self, pos: u64, line: String) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(pos);
                bar.set_message(line.clone());
                if let Ok(mut last) = self.last.lock() {
                    *last = Some(line);
                }
            }
            None => tracing::info!("{line}"),
        }
    }
}

impl Progress {
    /// Moves the bar to `pos` without a line (nothing without a bar: the caller logs its own).
    pub fn set_position(&self, pos: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(pos);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            bars().remove(&bar);
            if let Some(line) = self.last.lock().ok().and_then(|mut l| l.take()) {
                tracing::info!("{line}");
            }
        }
    }
}
