//! `pate-trainer run` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer run`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer run`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`run` is not implemented yet".into()))
}
