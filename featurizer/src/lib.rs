//! featurizer crate (skeleton; filled in by its issue).
#![warn(missing_docs)]
