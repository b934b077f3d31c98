//! `pate-trainer account` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer account`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer account`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`account` is not implemented yet".into()))
}
