//! `pate-trainer teach` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer teach`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer teach`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`teach` is not implemented yet".into()))
}
