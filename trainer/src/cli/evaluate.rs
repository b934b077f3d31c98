//! `pate-trainer evaluate` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer evaluate`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer evaluate`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`evaluate` is not implemented yet".into()))
}
