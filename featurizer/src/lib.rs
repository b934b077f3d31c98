//! The one place where an HTTP request becomes a feature vector.
//!
//! The seeds of this project (a PATE thesis and paper on malicious web requests, after Papernot
//! et al., "Semi-supervised Knowledge Transfer for Deep Learning from Private Training Data",
//! ICLR 2017) represent a request by the unigram tokens of its URI, keep the K = 500 most frequent
//! tokens, and feed an l1-normalized TF-IDF vector to the teachers and the student. This crate
//! does exactly that, in four documented steps:
//!
//! 1. **Normalization** ([`normalize`]): the raw target (path + query) and, when given, the form
//!    body are joined (`target ? body`, or `target & body` when the target already has a query),
//!    truncated to [`FeaturizerConfig::max_input_bytes`] (flagged, never a panic),
//!    percent-decoded repeatedly (at most [`FeaturizerConfig::decode_rounds`] rounds, stopping
//!    early when a round changes nothing; `+` is a space in the query and body in the first round
//!    only, because a `+` that appears after decoding came from `%2B` and is a literal plus), the
//!    bytes are turned into text (valid UTF-8 sequences as UTF-8, every other byte as Latin-1, so
//!    `%F1` and `%C3%B1` both become `ñ` and invalid UTF-8 is data, not an error), and
//!    lower-cased.
//! 2. **Tokenization** ([`tokenize`], regex [`TOKEN_PATTERN`]): a token is either a maximal run of
//!    letters, combining marks and digits (`\p{L}\p{M}\p{N}`), or one single character that is
//!    neither such a character nor white space (punctuation, symbols, control characters such as
//!    NUL). White space separates tokens and is never a token. So `' or 1=1--` is
//!    `'`, `or`, `1`, `=`, `1`, `-`, `-`.
//! 3. **Vocabulary** ([`Featurizer::fit`]): the `top_k` tokens with the highest document
//!    frequency (number of requests that contain the token at least once), ties broken by the
//!    token's string (byte order), ascending. The vocabulary index of a token is its rank.
//!    Optionally ([`FeaturizerConfig::ngram_max`], default 1 = the seeds' unigrams) adjacent-token
//!    n-grams compete for the same K places.
//! 4. **Weights** ([`Featurizer::transform`]): `tf(t, r) = count(t, r) / tokens(r)` where
//!    `tokens(r)` counts every token of the request (in the vocabulary or not; with
//!    [`FeaturizerConfig::ngram_max`] > 1, every feature: tokens plus their n-grams);
//!    `idf(t) = ln((1 + n) / (1 + df(t))) + 1` (the smoothed IDF of scikit-learn's
//!    `TfidfTransformer(smooth_idf=True)`, n = number of fitted documents); the vector
//!    `w_t = tf(t, r) · idf(t)` is then l1-normalized (`Σ |w_t| = 1`). A request with no
//!    vocabulary token gives the empty (all-zero) vector. With
//!    [`FeaturizerConfig::sublinear_tf`], `tf(t, r) = 1 + ln count(t, r)` instead.
//!
//! Opt-in feature families beyond the seeds' (all off by default, and absent from the artifact
//! when off, so older artifacts keep their bytes and hash): token n-grams
//! ([`FeaturizerConfig::ngram_max`]), character n-grams ([`FeaturizerConfig::char_ngrams`]) and
//! parameter value shapes ([`FeaturizerConfig::value_shapes`]); see
//! [`for_each_configured_feature`]. They compete with the tokens for the same `top_k` places.
//!
//! The fitted [`Featurizer`] is a versioned JSON artifact ([`Featurizer::to_json`]) holding every
//! setting, the vocabulary, the document frequencies, the IDF and a sha256 content hash; fitting
//! is deterministic, so the same corpus and settings give a byte-identical artifact.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub mod params;
pub use params::{Norm, RarityTable};
pub mod placement;
pub mod signatures;
pub use placement::{
    ExcludedFields, Headers, Part, Placement, PlacementConfig, RequestSegments, Split,
};
pub use signatures::{signature_flags, SIGNATURE_FEATURES};

/// Name written into every artifact, so that a wrong file is recognised as such.
pub const ARTIFACT_KIND: &str = "pate-waf-featurizer";
/// Version of the artifact format (and of the normalization + tokenization rules: a change to
/// either changes the features, so it must bump this number).
pub const FORMAT_VERSION: u32 = 1;
/// The tokenizer's regular expression (see the crate documentation for the rules).
pub const TOKEN_PATTERN: &str = r"[\p{L}\p{M}\p{N}]+|[^\p{L}\p{M}\p{N}\s]";
mod artifact;
mod config;
mod error;
mod features;
mod fit;
mod locate;
mod normalize;
mod tokenize;
mod transform;
mod vector;

pub use artifact::*;
pub use config::*;
pub use error::*;
pub use features::*;
pub use locate::{snippet, FeatureSource, SNIPPET_CHARS};
pub use normalize::*;
pub use tokenize::*;
pub use vector::*;

/// Re-exported so that featurizer users write artifacts the one way the workspace does.
pub use atomic_write::write_atomic;
