//! One module per `pate-experiments` subcommand; each exposes `Args` (clap) and `run`.
pub mod evaluation;
pub mod replay;
pub mod sweep;
