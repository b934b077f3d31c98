//! `pate-trainer vote` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer vote`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer vote`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`vote` is not implemented yet".into()))
}
