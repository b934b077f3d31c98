//! Logging for `pate-trainer` and `pate-experiments`: `tracing` events written to stderr as plain
//! lines (no time, level or target prefix, so the texts scripts grep — `device:`, `] ==`,
//! `run: done` — stay as they are), filtered by the global `-v/--verbose` and `-q/--quiet` flags.
//!
//! The trainer's stderr is private (docs/privacy.md): it may name data-dependent quantities, so
//! it belongs with the run directory, not in a published log.
use std::io::IsTerminal;

use tracing_subscriber::filter::{EnvFilter, LevelFilter};

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

/// Installs the stderr subscriber (once; a second call does nothing).
pub fn init(verbosity: Verbosity) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(verbosity.filter())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .with_level(false)
        .with_target(false)
        .try_init();
}
