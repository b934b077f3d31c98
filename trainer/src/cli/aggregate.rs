//! `pate-trainer aggregate` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer aggregate`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer aggregate`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`aggregate` is not implemented yet".into()))
}
