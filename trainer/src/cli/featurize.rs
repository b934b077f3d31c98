//! `pate-trainer featurize` (not implemented yet: see the issue that builds it).
use crate::error::{Error, Result};

/// Arguments of `pate-trainer featurize`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `pate-trainer featurize`.
pub fn run(_args: Args) -> Result<()> {
    Err(Error::Invalid("`featurize` is not implemented yet".into()))
}
