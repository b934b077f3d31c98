//! The PATE trainer library behind the `pate-trainer` CLI.
//!
//! * [`model`], [`ensemble`]: the MLP and N of them (`[N, in, out]`, `bmm`, masked elementwise
//!   Adam or FISTA, per-member early stopping, Youden thresholds); teachers train one at a time.
//! * [`device`]: `auto|cpu|cuda[:i]`, loading libtorch_cuda at runtime.
//! * [`stages`]: the PATE stages (split → featurize → teach → vote → aggregate → student →
//!   evaluate → export), one module each, called by `run`, the stage subcommands and the sweep.
//! * Algorithms the stages call: [`teachers`] (partition, teaching job), [`votes`] (calibrated
//!   aggregation's shift), [`student`] (training on the labels), [`calibrate`] (operating
//!   thresholds), [`rng`] (the run's randomness).
//! * Artifacts: [`io`] (atomic files), [`rundir`] (the run directory), [`model_file`], [`config`].
//! * [`served`]: scoring a request with a bundle as pate-proxy does; [`recalibrate`]: a
//!   bundle's thresholds re-picked from the site's unlabelled traffic (`calibrate`).
//! * [`report`]: the typed `report.json` and `evaluation.json`.
//! * [`metrics`]: ROC, AUC, Youden's J, confusion metrics, the SVG plot.
// unsafe_code is `deny` for the whole workspace (root Cargo.toml), not `forbid` as in the other
// libraries: the one exception is loading libtorch_cuda.so in `device` (documented there).

pub mod calibrate;
pub mod cli;
pub mod config;
pub mod dense;
pub mod device;
pub mod ensemble;
pub mod error;
pub mod io;
pub mod log;
pub mod metrics;
pub mod model;
pub mod model_file;
pub mod part_model;
pub mod plot;
pub mod public_examples;
pub mod recalibrate;
pub mod recipe;
pub mod report;
pub mod rng;
pub mod rundir;
pub mod served;
pub mod site_traffic;
pub mod stages;
pub mod student;
pub mod teachers;
pub mod votes;

pub use error::{Error, Result};
