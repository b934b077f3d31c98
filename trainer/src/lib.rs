//! The PATE trainer library behind the `pate-trainer` CLI.
#![warn(missing_docs)]

pub mod cli;
pub mod error;

pub use error::{Error, Result};
