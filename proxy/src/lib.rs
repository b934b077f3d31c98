//! `pate-proxy`: a pingora reverse proxy in front of Apache that scores every request with the
//! PATE student (Papernot et al., "Semi-supervised Knowledge Transfer for Deep Learning from
//! Private Training Data", ICLR 2017) through ONNX Runtime, and blocks (403) or flags it.
//!
//! The request path is in [`filter`], the model and its hot swap in [`model`] and [`state`],
//! operations in [`admin`], [`metrics`], [`audit`] and [`capture`], the configuration contract in [`config`].
#![forbid(unsafe_code)]

pub mod admin;
pub mod audit;
pub mod capture;
pub mod config;
pub mod error;
pub mod exclude;
pub mod filter;
pub mod metrics;
pub mod model;
pub mod server;
pub mod shadow;
pub mod slowloris;
pub mod state;
pub mod strict;
pub mod verdict;

pub use config::{Config, Mode, OnError};
pub use error::ProxyError;
pub use verdict::Verdict;
