//! The PATE trainer library behind the `pate-trainer` CLI.
#![warn(missing_docs)]

pub mod cli;
pub mod config;
pub mod dense;
pub mod device;
pub mod ensemble;
pub mod error;
pub mod metrics;
pub mod model;
pub mod model_file;
pub mod pipeline;
pub mod rundir;

pub use error::{Error, Result};
