//! `pate-trainer student` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer student`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer student`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`student` is not implemented yet".into()))
}
