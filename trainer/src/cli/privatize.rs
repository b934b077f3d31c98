//! `pate-trainer privatize` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer privatize`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer privatize`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`privatize` is not implemented yet".into()))
}
