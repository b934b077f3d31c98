//! One module per `pate-experiments` subcommand; each exposes `Args` (clap) and `run`.
pub mod replay;
pub mod sweep;
