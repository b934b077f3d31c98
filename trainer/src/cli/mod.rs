//! One module per `pate-trainer` subcommand; each exposes `Args` (clap) and `run`.
pub mod data;
pub mod featurize;
pub mod teach;
pub mod privatize;
pub mod vote;
pub mod aggregate;
pub mod account;
pub mod student;
pub mod evaluate;
pub mod export;
pub mod score;
pub mod run;
pub mod replay;
pub mod sweep;
