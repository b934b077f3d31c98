//! Experiments and benchmarks of pate-waf, kept out of the product binaries: the evaluation
//! grids ([`sweep`], `pate-experiments sweep`) and the raw-TCP replay client against a running WAF
//! ([`cli::replay`], `pate-experiments replay`), and the fresh runs behind EVALUATION.md with the
//! tables read off them ([`evaluation`], `pate-experiments evaluation`). The sweep computes its cells with the trainer's
//! stages (`trainer::stages`), the same functions `pate-trainer run` calls.
#![forbid(unsafe_code)]

pub mod cli;
pub mod error;
pub mod evaluation;
pub mod sweep;

pub use error::{Error, Result};
