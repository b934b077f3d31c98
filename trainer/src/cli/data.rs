//! `pate-trainer data` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer data`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer data`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`data` is not implemented yet".into()))
}
