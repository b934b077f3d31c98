//! The PATE trainer library behind the `pate-trainer` CLI.
//!
//! * [`model`], [`ensemble`]: the seeds' MLP and N of them trained at once (`[N, in, out]`, `bmm`,
//!   masked elementwise Adam, per-member early stopping, Youden thresholds).
//! * [`device`]: `auto|cpu|cuda[:i]`, loading libtorch_cuda at runtime.
//! * [`stages`]: the PATE stages (split → featurize → teach → vote → aggregate → student →
//!   evaluate → export), one module each, called by `run`, the stage subcommands and the sweep.
//! * [`pipeline`], [`rundir`], [`config`]: the stages' building blocks, the run directory and the
//!   YAML config.
//! * [`report`]: the typed `report.json` and `evaluation.json`.
//! * [`metrics`]: ROC, AUC, Youden's J, confusion metrics, the SVG plot.
// unsafe_code is `deny` for the whole workspace (root Cargo.toml), not `forbid` as in the other
// libraries: the one exception is loading libtorch_cuda.so in `device` (documented there).

pub mod cli;
pub mod config;
pub mod dense;
pub mod device;
pub mod ensemble;
pub mod error;
pub mod log;
pub mod metrics;
pub mod model;
pub mod model_file;
pub mod part_model;
pub mod pipeline;
pub mod plot;
pub mod public_examples;
pub mod report;
pub mod rundir;
pub mod stages;

pub use error::{Error, Result};
