//! `pate-trainer export` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer export`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer export`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`export` is not implemented yet".into()))
}
