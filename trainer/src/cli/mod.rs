//! One module per `pate-trainer` subcommand; each exposes `Args` (clap) and `run`.
pub mod account;
pub mod aggregate;
pub mod data;
pub mod evaluate;
pub mod export;
pub mod featurize;
pub mod privatize;
pub mod run;
pub mod score;
pub mod student;
pub mod teach;
pub mod vote;
