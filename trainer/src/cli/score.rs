//! `pate-trainer score` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer score`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer score`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`score` is not implemented yet".into()))
}
