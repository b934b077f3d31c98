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
#![warn(missing_docs)]
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
pub use placement::{Headers, Part, Placement, PlacementConfig, Split};

/// Name written into every artifact, so that a wrong file is recognised as such.
pub const ARTIFACT_KIND: &str = "pate-waf-featurizer";
/// Version of the artifact format (and of the normalization + tokenization rules: a change to
/// either changes the features, so it must bump this number).
pub const FORMAT_VERSION: u32 = 1;
/// The tokenizer's regular expression (see the crate documentation for the rules).
pub const TOKEN_PATTERN: &str = r"[\p{L}\p{M}\p{N}]+|[^\p{L}\p{M}\p{N}\s]";

/// The parts of an HTTP request that the featurizer reads. Bytes, not text: what arrives on the
/// wire need not be UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestParts<'a> {
    /// Request method (`GET`, `POST`, ...). Not a feature today (the seeds use the URI only);
    /// carried so that callers need not change when it becomes one.
    pub method: &'a str,
    /// Request target in origin form: path plus optional `?query`, as sent (still encoded).
    pub target: &'a [u8],
    /// Request body, when there is one. Without [`FeaturizerConfig::placements`] it is read as
    /// a form body (`application/x-www-form-urlencoded`); with it, by its `Content-Type`.
    pub body: Option<&'a [u8]>,
    /// Request headers, in order; read only with [`FeaturizerConfig::placements`].
    pub headers: Headers<'a>,
}

impl<'a> RequestParts<'a> {
    /// A `GET` of `target` without a body.
    pub fn get(target: &'a str) -> Self {
        RequestParts {
            method: "GET",
            target: target.as_bytes(),
            body: None,
            headers: Headers::None,
        }
    }
}

/// Every setting of the featurizer; all of them are stored in the artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeaturizerConfig {
    /// Number of vocabulary tokens kept (K). The seeds use 500.
    pub top_k: usize,
    /// Longest raw input (target + joining character + body) read, in bytes. Longer inputs are
    /// truncated and the output is flagged [`SparseVector::truncated`].
    pub max_input_bytes: usize,
    /// Most rounds of percent-decoding (attackers double- and triple-encode). 0 turns decoding off.
    pub decode_rounds: usize,
    /// Whether the form body is read (joined to the query) when given.
    pub include_body: bool,
    /// Longest token n-gram used as a feature (1 to 3). The seeds use unigrams only (1, the
    /// default); 2 adds pairs of adjacent tokens (`' or`, `or 1`, ...), written with one space
    /// between the tokens. Not written to the artifact when 1, so unigram artifacts keep their
    /// form and hash.
    #[serde(skip_serializing_if = "is_unigram")]
    pub ngram_max: usize,
    /// Character n-grams of the normalized text as extra features, `[min, max]` characters
    /// (1 ≤ min ≤ max ≤ [`MAX_CHAR_NGRAM`]); off when absent (the seeds' features). They compete
    /// for the same `top_k` places and are written `c:` + the characters (a token or token n-gram
    /// never starts with `c:`). Character n-grams are the classic strong feature for malicious
    /// request detection (e.g. Kruegel & Vigna 2003; the issue's logistic-regression reference).
    /// Not written to the artifact when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub char_ngrams: Option<[usize; 2]>,
    /// Parameter name + value *shape* features (`v:name=<shape>`, see [`value_shape`]): CSIC 2010
    /// "anomalous" includes plain wrong-type values (letters in a number field), which tokens of
    /// a random name or number cannot show. A pair whose `name=shape` did not make it into the
    /// vocabulary counts as [`UNSEEN_SHAPES`] `unseen==shape` (the last 13 places of the
    /// vocabulary): tampered names (`errorMsgA=`) and never-seen types. Off (false) by default;
    /// not written when false.
    #[serde(skip_serializing_if = "is_false")]
    pub value_shapes: bool,
    /// Sublinear term frequency `1 + ln(count)` instead of `count` (scikit-learn's
    /// `sublinear_tf`), so that a long run of one token does not drown the others. Off by
    /// default; not written when false.
    #[serde(skip_serializing_if = "is_false")]
    pub sublinear_tf: bool,
    /// Parameter-aware features ([`params`]: method, path, parameter name, `name=pattern`,
    /// `name=length bucket`, `name=special character`). Off by default; not written when false.
    #[serde(skip_serializing_if = "is_false")]
    pub params: bool,
    /// Public-relative rarity features ([`params`]: `rare:<name>`, `rare:any`, `unseen:path`)
    /// against a (path, name, pattern) count table fitted on the featurizer's corpus, with this
    /// minimum count (the issue's 3). Off when absent; not written when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rarity_min_count: Option<u32>,
    /// l1 (default, the seeds') or l2 normalization of the vectors. Not written when l1.
    #[serde(skip_serializing_if = "is_l1")]
    pub norm: Norm,
    /// The whole request, by placement ([`placement`]): with this set, a request is its decoded,
    /// placement-tagged parts (request line, every header value, the body by its Content-Type,
    /// Base64 forms decoded), each part's tokens are features, every part adds a
    /// `pl:<placement>=<shape>` feature, and [`Featurizer::transform_windows`] covers up to
    /// `max_bytes` of input in windows of [`FeaturizerConfig::max_input_bytes`]. Off (absent)
    /// by default: the seeds' URI + form body view, and older artifacts keep their bytes, hash
    /// and scores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placements: Option<PlacementConfig>,
}

fn is_l1(n: &Norm) -> bool {
    *n == Norm::L1
}

fn is_unigram(n: &usize) -> bool {
    *n == 1
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Largest accepted character n-gram length ([`FeaturizerConfig::char_ngrams`]).
pub const MAX_CHAR_NGRAM: usize = 8;
/// Prefix of a character n-gram feature in the vocabulary.
pub const CHAR_NGRAM_PREFIX: &str = "c:";
/// Prefix of a parameter value-shape feature in the vocabulary.
pub const VALUE_SHAPE_PREFIX: &str = "v:";
/// Prefix of a placement feature (`pl:json:value=symbols`) in the vocabulary.
pub const PLACEMENT_PREFIX: &str = "pl:";
/// Placement-feature name of a part that is the Base64-decoded form of another
/// (`pl:b64=<shape>`).
pub const BASE64_MARK: &str = "b64";
/// Name part of the "unseen parameter" shape features: a parameter whose `name=shape` is not in
/// the vocabulary counts as `unseen==shape` instead (two `=`: no real `name=shape` has two, since
/// a name ends at its first `=`). This is what flags a tampered parameter name (CSIC's
/// `errorMsgA=`, `idA=`) or a value of a type never seen for that name (`cantidad=abc`).
pub const UNSEEN_NAME: &str = "unseen==";
/// Every "unseen parameter" feature (body after [`VALUE_SHAPE_PREFIX`]); with
/// [`FeaturizerConfig::value_shapes`] they take the last places of the vocabulary.
pub const UNSEEN_SHAPES: [&str; 13] = [
    "unseen==empty",
    "unseen==empty,long",
    "unseen==digits",
    "unseen==digits,long",
    "unseen==alpha",
    "unseen==alpha,long",
    "unseen==alnum",
    "unseen==alnum,long",
    "unseen==text",
    "unseen==text,long",
    "unseen==symbols",
    "unseen==symbols,long",
    "unseen==noeq",
];
/// Values at least this long (in characters) get the `long` mark in their shape: long values are
/// how buffer-overflow probes look.
pub const LONG_VALUE_CHARS: usize = 64;

/// Largest accepted [`FeaturizerConfig::ngram_max`].
pub const MAX_NGRAM: usize = 3;

impl Default for FeaturizerConfig {
    fn default() -> Self {
        FeaturizerConfig {
            top_k: 500,
            max_input_bytes: 8192,
            decode_rounds: 3,
            include_body: true,
            ngram_max: 1,
            char_ngrams: None,
            value_shapes: false,
            sublinear_tf: false,
            params: false,
            rarity_min_count: None,
            norm: Norm::L1,
            placements: None,
        }
    }
}

/// A sparse feature vector: strictly increasing `indices` into the vocabulary and their
/// `values`. l1-normalized (values sum to 1) or empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SparseVector {
    /// Vocabulary indices, strictly increasing.
    pub indices: Vec<u32>,
    /// Weight of each index (same length as `indices`).
    pub values: Vec<f32>,
    /// The input was longer than [`FeaturizerConfig::max_input_bytes`] and was cut.
    pub truncated: bool,
}

impl SparseVector {
    /// The dense form, of length `dim`.
    pub fn to_dense(&self, dim: usize) -> Vec<f32> {
        let mut dense = vec![0.0f32; dim];
        self.write_dense(&mut dense);
        dense
    }

    /// Writes the weights into `dense` (which the caller has zeroed), e.g. one row of a batch.
    pub fn write_dense(&self, dense: &mut [f32]) {
        for (&i, &v) in self.indices.iter().zip(&self.values) {
            if let Some(slot) = dense.get_mut(i as usize) {
                *slot = v;
            }
        }
    }

    /// Whether no token of the request is in the vocabulary.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// What the featurizer saw in one request, for humans (`pate-trainer featurize show`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The normalized text (decoded, lower-cased, possibly truncated).
    pub normalized: String,
    /// All tokens, in order.
    pub tokens: Vec<String>,
    /// Whether the input was truncated.
    pub truncated: bool,
    /// The non-zero weights, by vocabulary index.
    pub weights: Vec<TokenWeight>,
}

/// One non-zero weight of an [`Explanation`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenWeight {
    /// The vocabulary token.
    pub token: String,
    /// Its vocabulary index.
    pub index: u32,
    /// How often it occurs in the request.
    pub count: u32,
    /// Its l1-normalized TF-IDF weight.
    pub weight: f32,
}

/// Errors of the featurizer crate.
#[derive(Debug, thiserror::Error)]
pub enum FeaturizerError {
    /// Reading or writing an artifact failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bytes are not a featurizer artifact (bad JSON or missing fields).
    #[error("not a featurizer artifact: {0}")]
    Parse(#[source] serde_json::Error),
    /// The artifact is of another kind or format version.
    #[error("featurizer artifact is {found}, expected {ARTIFACT_KIND} version {FORMAT_VERSION}; refit the featurizer with this version")]
    Version {
        /// What the file says it is.
        found: String,
    },
    /// The stored content hash does not match the content (the file was edited or corrupted).
    #[error("featurizer artifact content hash mismatch: file says {stored}, content hashes to {computed}")]
    HashMismatch {
        /// The hash written in the file.
        stored: String,
        /// The hash of the content as read.
        computed: String,
    },
    /// The artifact or the settings are inconsistent (e.g. vocabulary and IDF lengths differ).
    #[error("invalid featurizer: {0}")]
    Invalid(String),
    /// An error while loading a file, with the file named.
    #[error("{path}: {source}")]
    InFile {
        /// The artifact file.
        path: PathBuf,
        /// What went wrong.
        source: Box<FeaturizerError>,
    },
}

// ---------------------------------------------------------------------------------------------
// Normalization

/// Reusable buffers for [`Featurizer::transform_into`], so that the hot path allocates nothing
/// once the buffers have grown.
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    raw: Vec<u8>,
    decoded: Vec<u8>,
    text: String,
    gram: String,
    counts: Vec<u32>,
    touched: Vec<u32>,
    weights: Weights,
    unseen: String,
    params: params::ParamScratch,
}

/// What [`Featurizer::vectorize`] hands to the feature enumerators: counts per vocabulary index
/// and the indices touched (a plain method call per feature, not a dynamic closure call).
struct Counter<'a> {
    counts: &'a mut [u32],
    touched: &'a mut Vec<u32>,
}

impl Counter<'_> {
    /// Counts one occurrence of vocabulary index `i`.
    #[inline]
    fn add(&mut self, i: u32) {
        let c = &mut self.counts[i as usize];
        if *c == 0 {
            self.touched.push(i);
        }
        *c += 1;
    }
}

/// The buffers of [`Featurizer::vectorize`] besides the counts.
#[derive(Debug, Default, Clone)]
struct Weights {
    /// Bit i set when index i was touched (how the touched indices are put in order when there
    /// are many of them, instead of sorting).
    bits: Vec<u64>,
    /// Each touched index's weight before normalization.
    weight: Vec<f64>,
}

/// Normalizes a request (see the crate documentation, step 1). Returns the text and whether the
/// input was truncated.
pub fn normalize(config: &FeaturizerConfig, req: &RequestParts) -> (String, bool) {
    let mut scratch = Scratch::default();
    let truncated = normalize_into(config, req, &mut scratch);
    (std::mem::take(&mut scratch.text), truncated)
}

/// Normalization into `scratch.text`; returns the truncation flag.
fn normalize_into(config: &FeaturizerConfig, req: &RequestParts, scratch: &mut Scratch) -> bool {
    let Scratch {
        raw, decoded, text, ..
    } = scratch;
    // Copy at most one byte past the limit: enough to know that the input was too long, and the
    // work stays bounded whatever the size of the request.
    let cap = config.max_input_bytes.saturating_add(1);
    let push_capped = |raw: &mut Vec<u8>, bytes: &[u8]| {
        let room = cap.saturating_sub(raw.len());
        raw.extend_from_slice(&bytes[..bytes.len().min(room)]);
    };
    raw.clear();
    push_capped(raw, req.target);
    // Where the query (form-encoded part) starts: after the first raw '?'. An encoded `%3F` is
    // part of the path, as a server would see it.
    let mut query_start = raw.iter().position(|&b| b == b'?').map(|p| p + 1);
    if let (true, Some(body)) = (config.include_body, req.body) {
        if !body.is_empty() {
            match query_start {
                Some(_) => push_capped(raw, b"&"),
                None => {
                    push_capped(raw, b"?");
                    query_start = Some(raw.len());
                }
            }
            push_capped(raw, body);
        }
    }
    let truncated = raw.len() > config.max_input_bytes;
    if truncated {
        raw.truncate(config.max_input_bytes);
    }
    let query_start = query_start.map(|q| q.min(raw.len()));

    // Bounded repeated percent-decoding. Round 1 also maps '+' to ' ' in the query.
    for round in 0..config.decode_rounds {
        let plus_from = if round == 0 { query_start } else { None };
        if !percent_decode(raw, plus_from, decoded) {
            break;
        }
        std::mem::swap(raw, decoded);
    }

    text.clear();
    push_lowercase_latin1_or_utf8(raw, text);
    truncated
}

/// One round of percent-decoding of `input` into `out`; `+` becomes a space from byte
/// `plus_from` on. Malformed escapes (`%zz`, a trailing `%`) stay as they are. Returns whether
/// anything changed.
fn percent_decode(input: &[u8], plus_from: Option<usize>, out: &mut Vec<u8>) -> bool {
    percent_decode_from(input, plus_from, out)
}

/// One round of percent-decoding of all of `input` (`+` a space when `plus`); whether anything
/// changed (when not, `out` is not meaningful).
pub(crate) fn percent_decode_into(input: &[u8], plus: bool, out: &mut Vec<u8>) -> bool {
    percent_decode_from(input, plus.then_some(0), out)
}

fn percent_decode_from(input: &[u8], plus_from: Option<usize>, out: &mut Vec<u8>) -> bool {
    out.clear();
    let plus_from = plus_from.unwrap_or(usize::MAX);
    // Fast exit: nothing to decode (most requests after the first round); `contains` on bytes
    // is memchr.
    if !input.contains(&b'%') && !input.get(plus_from..).unwrap_or_default().contains(&b'+') {
        return false;
    }
    let mut changed = false;
    let mut i = 0;
    while i < input.len() {
        // Copy the run up to the next '%' or '+' at once.
        let rest = &input[i..];
        let run = rest
            .iter()
            .position(|&b| b == b'%' || b == b'+')
            .unwrap_or(rest.len());
        out.extend_from_slice(&rest[..run]);
        i += run;
        if i >= input.len() {
            break;
        }
        if input[i] == b'+' {
            // A space in the query and body only.
            if i >= plus_from {
                out.push(b' ');
                changed = true;
            } else {
                out.push(b'+');
            }
            i += 1;
            continue;
        }
        if i + 2 < input.len() {
            if let (Some(h), Some(l)) = (hex_value(input[i + 1]), hex_value(input[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                changed = true;
                continue;
            }
        }
        out.push(b'%');
        i += 1;
    }
    changed
}

#[cfg(test)]
mod percent_decode_tests {
    use super::*;
    use proptest::prelude::*;

    /// The decoding rules written the plain way, byte by byte.
    fn reference(input: &[u8], plus_from: Option<usize>) -> (Vec<u8>, bool) {
        let plus_from = plus_from.unwrap_or(usize::MAX);
        let (mut out, mut changed, mut i) = (Vec::new(), false, 0);
        while i < input.len() {
            let b = input[i];
            if b == b'+' && i >= plus_from {
                out.push(b' ');
                changed = true;
                i += 1;
            } else if b == b'%'
                && i + 2 < input.len()
                && hex_value(input[i + 1]).is_some()
                && hex_value(input[i + 2]).is_some()
            {
                out.push(
                    hex_value(input[i + 1]).unwrap_or(0) << 4
                        | hex_value(input[i + 2]).unwrap_or(0),
                );
                changed = true;
                i += 3;
            } else {
                out.push(b);
                i += 1;
            }
        }
        (out, changed)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn percent_decoding_follows_the_rules(
            input in proptest::collection::vec(
                prop_oneof![Just(b'%'), Just(b'+'), Just(b'4'), Just(b'f'), Just(b'G'), Just(b'a'), Just(0u8), any::<u8>()],
                0..40,
            ),
            plus_from in proptest::option::of(0usize..45),
        ) {
            let mut out = Vec::new();
            let changed = percent_decode_from(&input, plus_from, &mut out);
            let (want, want_changed) = reference(&input, plus_from);
            prop_assert_eq!(changed, want_changed);
            if changed {
                prop_assert_eq!(out, want);
            } else {
                prop_assert_eq!(want, input);
            }
        }
    }
}

/// The value of one hexadecimal digit (percent-decoding here, `\xHH` escapes in
/// [`placement`]).
pub(crate) fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Appends `bytes` to `out` as lower-case text: valid UTF-8 sequences as UTF-8, every byte of an
/// invalid sequence as the Latin-1 character of the same value (CSIC encodes `ñ` as `%F1`).
pub(crate) fn push_lowercase_latin1_or_utf8(mut bytes: &[u8], out: &mut String) {
    loop {
        match std::str::from_utf8(bytes) {
            Ok(valid) => {
                push_lowercase(valid, out);
                return;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                // from_utf8 has checked this prefix; re-checking cannot fail.
                push_lowercase(std::str::from_utf8(valid).unwrap_or_default(), out);
                let bad = e.error_len().unwrap_or(rest.len());
                for &b in &rest[..bad] {
                    push_lowercase_char(char::from(b), out);
                }
                bytes = &rest[bad..];
            }
        }
    }
}

fn push_lowercase(s: &str, out: &mut String) {
    if s.is_ascii() {
        let start = out.len();
        out.push_str(s);
        out[start..].make_ascii_lowercase();
    } else {
        for c in s.chars() {
            push_lowercase_char(c, out);
        }
    }
}

fn push_lowercase_char(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else {
        out.extend(c.to_lowercase());
    }
}

// ---------------------------------------------------------------------------------------------
// Tokenization

fn token_regex() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    // The pattern is a compile-time constant covered by tests; failing to compile it is a bug.
    RE.get_or_init(|| regex::Regex::new(TOKEN_PATTERN).expect("TOKEN_PATTERN compiles"))
}

/// Tokenizes normalized text (see the crate documentation, step 2): the matches of
/// [`TOKEN_PATTERN`], in order.
///
/// For speed this is a hand-written scanner, not the regex engine: each character is classified
/// as word (`[\p{L}\p{M}\p{N}]`), space (`\s`) or symbol (anything else), with the classes taken
/// from the regex's own Unicode tables (ASCII by hand, U+0080..U+07FF from a table built once with
/// the regex, the rest by asking the regex), and the scanner returns maximal word runs and single
/// symbols, which is exactly what the leftmost-first alternation `W+|[^W\s]` matches. A property
/// test checks it against [`tokenize_with_regex`] on arbitrary text.
pub fn tokenize(text: &str) -> Tokens<'_> {
    Tokens { text, pos: 0 }
}

/// Tokenizes with the regex engine (the definition that [`tokenize`] must match).
pub fn tokenize_with_regex(text: &str) -> impl Iterator<Item = &str> {
    token_regex().find_iter(text).map(|m| m.as_str())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Word,
    Space,
    Symbol,
}

/// First code point past the precomputed table (the two-byte UTF-8 range).
const TABLE_END: u32 = 0x800;

fn class_by_regex(c: char) -> CharClass {
    static WORD: OnceLock<regex::Regex> = OnceLock::new();
    static SPACE: OnceLock<regex::Regex> = OnceLock::new();
    // Constant patterns covered by tests; failing to compile them is a bug.
    let word = WORD
        .get_or_init(|| regex::Regex::new(r"^[\p{L}\p{M}\p{N}]$").expect("word class compiles"));
    let space = SPACE.get_or_init(|| regex::Regex::new(r"^\s$").expect("space class compiles"));
    let mut buf = [0u8; 4];
    let s = c.encode_utf8(&mut buf);
    if word.is_match(s) {
        CharClass::Word
    } else if space.is_match(s) {
        CharClass::Space
    } else {
        CharClass::Symbol
    }
}

#[inline]
fn char_class(c: char) -> CharClass {
    static TABLE: OnceLock<Vec<CharClass>> = OnceLock::new();
    let cp = c as u32;
    if cp < 0x80 {
        let b = cp as u8;
        if b.is_ascii_alphanumeric() {
            CharClass::Word
        } else if matches!(b, b'\t'..=b'\r' | b' ') {
            CharClass::Space
        } else {
            CharClass::Symbol
        }
    } else if cp < TABLE_END {
        let table = TABLE.get_or_init(|| {
            (0x80..TABLE_END)
                .map(|cp| char::from_u32(cp).map_or(CharClass::Symbol, class_by_regex))
                .collect()
        });
        table[(cp - 0x80) as usize]
    } else {
        class_by_regex(c)
    }
}

/// Iterator over the tokens of a text ([`tokenize`]).
#[derive(Debug, Clone)]
pub struct Tokens<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Tokens<'t> {
    /// The class and byte length of the character at byte `i`.
    #[inline]
    fn class_at(&self, i: usize) -> (CharClass, usize) {
        let b = self.text.as_bytes()[i];
        if b < 0x80 {
            (char_class(b as char), 1)
        } else {
            let c = self.text[i..].chars().next().unwrap_or('\u{fffd}');
            (char_class(c), c.len_utf8())
        }
    }
}

impl<'t> Iterator for Tokens<'t> {
    type Item = &'t str;

    #[inline]
    fn next(&mut self) -> Option<&'t str> {
        let len = self.text.len();
        let mut i = self.pos;
        loop {
            if i >= len {
                self.pos = len;
                return None;
            }
            let (class, n) = self.class_at(i);
            match class {
                CharClass::Space => i += n,
                CharClass::Symbol => {
                    self.pos = i + n;
                    return Some(&self.text[i..i + n]);
                }
                CharClass::Word => {
                    let start = i;
                    i += n;
                    while i < len {
                        let (class, n) = self.class_at(i);
                        if class != CharClass::Word {
                            break;
                        }
                        i += n;
                    }
                    self.pos = i;
                    return Some(&self.text[start..i]);
                }
            }
        }
    }
}

/// Calls `f` on every feature of normalized text, in order: each token, and after it (when
/// `ngram_max` > 1) the n-grams that end with it, n = 2..=ngram_max, joined by single spaces
/// (tokens never contain white space, so the joined form is unambiguous). `gram` is a reusable
/// buffer. Returns the number of features.
pub fn for_each_feature<'t>(
    text: &'t str,
    ngram_max: usize,
    gram: &mut String,
    mut f: impl FnMut(&str),
) -> u32 {
    let mut count: u32 = 0;
    if ngram_max <= 1 {
        for tok in tokenize(text) {
            count += 1;
            f(tok);
        }
        return count;
    }
    let n_max = ngram_max.min(MAX_NGRAM);
    // The last n_max tokens, most recent last.
    let mut window: [&'t str; MAX_NGRAM] = [""; MAX_NGRAM];
    let mut seen = 0usize;
    for tok in tokenize(text) {
        window.copy_within(1.., 0);
        window[MAX_NGRAM - 1] = tok;
        seen += 1;
        count += 1;
        f(tok);
        for n in 2..=n_max.min(seen) {
            gram.clear();
            for (k, t) in window[MAX_NGRAM - n..].iter().enumerate() {
                if k > 0 {
                    gram.push(' ');
                }
                gram.push_str(t);
            }
            count += 1;
            f(gram);
        }
    }
    count
}

/// The vocabulary namespace of a feature ([`for_each_configured_feature`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureKind {
    /// A token or token n-gram (no prefix in the vocabulary).
    Token,
    /// A character n-gram ([`CHAR_NGRAM_PREFIX`] in the vocabulary).
    Char,
    /// A parameter value shape ([`VALUE_SHAPE_PREFIX`] in the vocabulary).
    Shape,
    /// A parameter-aware or rarity feature ([`params`], [`PARAM_PREFIX`] in the vocabulary).
    Param,
    /// A part's placement and value shape, `<placement>=<shape>` ([`PLACEMENT_PREFIX`] in the
    /// vocabulary; [`FeaturizerConfig::placements`]).
    Placement,
}

/// Prefix of a parameter-aware or rarity feature in the vocabulary ([`params`]).
pub const PARAM_PREFIX: &str = "p:";

impl FeatureKind {
    /// The prefix of this kind's vocabulary entries.
    pub fn prefix(self) -> &'static str {
        match self {
            FeatureKind::Token => "",
            FeatureKind::Char => CHAR_NGRAM_PREFIX,
            FeatureKind::Shape => VALUE_SHAPE_PREFIX,
            FeatureKind::Param => PARAM_PREFIX,
            FeatureKind::Placement => PLACEMENT_PREFIX,
        }
    }
}

/// The shape of a (normalized) parameter value: `empty`, `digits`, `alpha` (letters and spaces),
/// `alnum` (letters, digits, spaces), `text` (those plus `. , - _ @ / :`), `symbols` (anything
/// else, e.g. quotes, `<`, `;`), with `,long` appended when the value has at least
/// [`LONG_VALUE_CHARS`] characters.
pub fn value_shape(value: &str) -> &'static str {
    const SHAPES: [[&str; 2]; 6] = [
        ["empty", "empty,long"],
        ["digits", "digits,long"],
        ["alpha", "alpha,long"],
        ["alnum", "alnum,long"],
        ["text", "text,long"],
        ["symbols", "symbols,long"],
    ];
    let (mut letters, mut digits, mut punct, mut symbols, mut chars) =
        (false, false, false, false, 0usize);
    for c in value.chars() {
        chars += 1;
        if c.is_ascii_digit() {
            digits = true;
        } else if c.is_alphabetic() {
            letters = true;
        } else if c == ' ' {
        } else if matches!(c, '.' | ',' | '-' | '_' | '@' | '/' | ':') {
            punct = true;
        } else {
            symbols = true;
        }
    }
    let class = if chars == 0 {
        0
    } else if symbols {
        5
    } else if punct {
        4
    } else if letters && digits {
        3
    } else if letters {
        2
    } else if digits {
        1
    } else {
        // Only spaces: as suspicious as punctuation in a value.
        4
    };
    SHAPES[class][usize::from(chars >= LONG_VALUE_CHARS)]
}

/// Calls `f(kind, body)` on every feature of normalized text under `config`, in order: the token
/// features of [`for_each_feature`]; then, when [`FeaturizerConfig::char_ngrams`] is set, every
/// character n-gram (for each character, the n-grams that end with it, shortest first); then,
/// when [`FeaturizerConfig::value_shapes`] is set, one `name=<shape>` per `&`-separated pair of
/// the query (the text after the first `?`; a pair without `=` has the shape `noeq`). The
/// vocabulary entry of a feature is `kind.prefix()` followed by `body`. `gram` is a reusable
/// buffer. Returns the number of features.
pub fn for_each_configured_feature(
    text: &str,
    config: &FeaturizerConfig,
    gram: &mut String,
    mut f: impl FnMut(FeatureKind, &str),
) -> u32 {
    let mut count = for_each_feature(text, config.ngram_max, gram, |t| f(FeatureKind::Token, t));
    if let Some([lo, hi]) = config.char_ngrams {
        let (lo, hi) = (lo.max(1), hi.min(MAX_CHAR_NGRAM));
        // bounds[k % RING] = byte offset after k characters, for the last MAX_CHAR_NGRAM + 1 k.
        const RING: usize = MAX_CHAR_NGRAM + 1;
        let mut bounds = [0usize; RING];
        let mut chars = 0usize;
        for (pos, c) in text.char_indices() {
            let end = pos + c.len_utf8();
            chars += 1;
            bounds[chars % RING] = end;
            for n in lo..=hi.min(chars) {
                let start = bounds[(chars - n) % RING];
                count += 1;
                f(FeatureKind::Char, &text[start..end]);
            }
        }
    }
    if config.value_shapes {
        count += for_each_shape_feature(text, gram, |body| f(FeatureKind::Shape, body));
    }
    count
}

/// The value-shape features of [`for_each_configured_feature`] (one `name=<shape>` per pair of
/// the query). Returns their number.
fn for_each_shape_feature(text: &str, gram: &mut String, mut f: impl FnMut(&str)) -> u32 {
    let mut count = 0;
    if let Some(q) = text.find('?') {
        for pair in text[q + 1..].split('&').filter(|p| !p.is_empty()) {
            let (name, shape) = match pair.split_once('=') {
                Some((name, value)) => (name, value_shape(value)),
                None => (pair, "noeq"),
            };
            gram.clear();
            gram.push_str(name);
            gram.push('=');
            gram.push_str(shape);
            count += 1;
            f(gram.as_str());
        }
    }
    count
}

/// Longest character n-gram, in UTF-8 bytes, kept in a [`NgramTable`] (longer ones are looked up
/// by string): the n-gram's bytes and its length fit one `u64`.
const PACKED_NGRAM_BYTES: usize = 7;

/// The key of an n-gram of at most [`PACKED_NGRAM_BYTES`] bytes: its bytes, first byte highest,
/// with the length in the top byte (so `a` and `\0a` differ). Never 0 (the empty slot).
#[inline]
fn packed_ngram_key(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |k, &b| k << 8 | u64::from(b)) | (bytes.len() as u64) << 56
}

/// The vocabulary index of each character n-gram of at most [`PACKED_NGRAM_BYTES`] bytes, keyed
/// by [`packed_ngram_key`]: an open-addressing table (linear probing, at most half full) on an
/// integer key, so the hot path neither hashes strings nor compares them. Built once from the
/// vocabulary; read-only afterwards (attacker-controlled n-grams are only looked up).
#[derive(Debug, Clone)]
struct NgramTable {
    keys: Vec<u64>,
    values: Vec<u32>,
    shift: u32,
}

impl NgramTable {
    fn new(entries: &[(u64, u32)]) -> Self {
        let slots = (entries.len() * 2).next_power_of_two().max(16);
        let mut table = NgramTable {
            keys: vec![0; slots],
            values: vec![NOT_IN_VOCABULARY; slots],
            shift: 64 - slots.trailing_zeros(),
        };
        for &(key, value) in entries {
            let mut i = table.slot(key);
            while table.keys[i] != 0 {
                i = (i + 1) & (slots - 1);
            }
            table.keys[i] = key;
            table.values[i] = value;
        }
        table
    }

    #[inline]
    fn slot(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn get(&self, key: u64) -> Option<u32> {
        let mask = self.keys.len() - 1;
        let mut i = self.slot(key);
        loop {
            let k = self.keys[i];
            if k == key {
                return Some(self.values[i]);
            }
            if k == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The fitted featurizer

/// FxHash (the rustc hasher): a fast hash for the read-only vocabulary map. Hash flooding is not
/// a concern: attacker-controlled tokens are only looked up, never inserted, so the table's
/// chains are fixed when the artifact is loaded.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let v = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(SEED);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(SEED);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type VocabIndex = HashMap<Box<str>, u32, BuildHasherDefault<FxHasher>>;

const NOT_IN_VOCABULARY: u32 = u32::MAX;

/// What the artifact's hash covers: everything but the hash itself. Field order is the canonical
/// order (serde_json writes struct fields in declaration order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Content {
    kind: String,
    format_version: u32,
    token_pattern: String,
    idf_formula: String,
    config: FeaturizerConfig,
    documents: u64,
    vocabulary: Vec<String>,
    document_frequency: Vec<u64>,
    idf: Vec<f32>,
    /// The public-relative rarity table ([`FeaturizerConfig::rarity_min_count`]); absent (and not
    /// written) otherwise, so older artifacts keep their hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rarity: Option<RarityTable>,
}

/// The artifact as stored: the content plus its sha256.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Artifact {
    #[serde(flatten)]
    content: Content,
    content_hash: String,
}

/// Only the two fields needed to decide whether the rest can be read at all.
#[derive(Deserialize)]
struct ArtifactHeader {
    kind: Option<String>,
    format_version: Option<serde_json::Value>,
}

const IDF_FORMULA: &str = "ln((1+n)/(1+df))+1";

/// A fitted featurizer: settings, vocabulary and IDF. Serializes as the versioned artifact.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "Artifact", try_from = "Artifact")]
pub struct Featurizer {
    content: Content,
    content_hash: String,
    index: VocabIndex,
    /// Vocabulary index of each one-byte (ASCII) token, or `NOT_IN_VOCABULARY`: about half the
    /// tokens of a request are single symbols (`/`, `=`, `&`, ...), and this skips their hashing.
    ascii_index: [u32; 128],
    /// Vocabulary index of each character n-gram, keyed without its prefix (no copying on the
    /// hot path).
    char_index: VocabIndex,
    /// The character n-grams of at most [`PACKED_NGRAM_BYTES`] bytes again, by integer key (all
    /// of a 1–3-gram vocabulary of ASCII text): what the hot path looks them up in.
    char_table: NgramTable,
    /// Vocabulary index of each value-shape feature, keyed without its prefix.
    shape_index: VocabIndex,
    /// Vocabulary index of each parameter-aware or rarity feature, keyed without its prefix.
    param_index: VocabIndex,
    /// The rarity table in lookup form.
    rarity: Option<params::RarityLookup>,
    /// Vocabulary index of each placement feature, keyed without its prefix.
    placement_index: VocabIndex,
    /// The config without value shapes: what every part but a query/form pair is read with.
    plain_config: FeaturizerConfig,
}

impl PartialEq for Featurizer {
    fn eq(&self, other: &Self) -> bool {
        self.content == other.content && self.content_hash == other.content_hash
    }
}

impl From<Featurizer> for Artifact {
    fn from(f: Featurizer) -> Self {
        Artifact {
            content: f.content,
            content_hash: f.content_hash,
        }
    }
}

impl TryFrom<Artifact> for Featurizer {
    type Error = FeaturizerError;
    fn try_from(a: Artifact) -> Result<Self, FeaturizerError> {
        Featurizer::from_artifact(a)
    }
}

fn hash_content(content: &Content) -> String {
    // Serializing plain data to a Vec cannot fail.
    let bytes = serde_json::to_vec(content).unwrap_or_default();
    hex::encode(Sha256::digest(&bytes))
}

impl Featurizer {
    /// Fits the vocabulary and IDF on `docs` (see the crate documentation, steps 3 and 4).
    /// Fewer than `top_k` distinct tokens give a smaller vocabulary ([`Featurizer::dim`]).
    pub fn fit<'a>(
        config: FeaturizerConfig,
        docs: impl IntoIterator<Item = RequestParts<'a>>,
    ) -> Result<Self, FeaturizerError> {
        validate_config(&config)?;
        let mut df: HashMap<String, u64> = HashMap::new();
        // Each document's value-shape features (for the second pass, with value_shapes only).
        let mut doc_shapes: Vec<Vec<String>> = Vec::new();
        // Each document's method and normalized text (for the rarity table, with
        // rarity_min_count only).
        let mut doc_texts: Vec<(String, String)> = Vec::new();
        let mut scratch = Scratch::default();
        let mut n: u64 = 0;
        let plain = FeaturizerConfig {
            value_shapes: false,
            ..config.clone()
        };
        for doc in docs {
            n += 1;
            // Document frequency counts each distinct feature once per request.
            let mut distinct: Vec<String> = Vec::new();
            let mut shapes: Vec<String> = Vec::new();
            let mut collect = |kind: FeatureKind, feature: &str| {
                if kind == FeatureKind::Shape {
                    shapes.push(feature.to_owned());
                }
                let mut entry = String::with_capacity(kind.prefix().len() + feature.len());
                entry.push_str(kind.prefix());
                entry.push_str(feature);
                distinct.push(entry);
            };
            if let Some(pc) = &config.placements {
                // The document is the request's first window (what `transform` reads).
                let split =
                    placement::split_request(&doc, pc, config.decode_rounds, config.include_body);
                let segments = placement::segments(&split);
                let windows =
                    placement::windows(&segments, config.max_input_bytes, pc.window_overlap_bytes);
                placement::for_each_window_feature(
                    &config,
                    &plain,
                    &segments,
                    &windows[0],
                    &mut scratch.gram,
                    &mut collect,
                );
            } else {
                normalize_into(&config, &doc, &mut scratch);
                for_each_configured_feature(&scratch.text, &config, &mut scratch.gram, collect);
                if config.params {
                    params::for_each_param_feature(
                        doc.method,
                        &scratch.text,
                        true,
                        None,
                        &mut scratch.params,
                        |feature| distinct.push(format!("{PARAM_PREFIX}{feature}")),
                    );
                }
                if config.rarity_min_count.is_some() {
                    doc_texts.push((doc.method.to_owned(), scratch.text.clone()));
                }
            }
            distinct.sort_unstable();
            distinct.dedup();
            if config.value_shapes {
                doc_shapes.push(shapes);
            }
            for tok in distinct {
                match df.get_mut(&tok) {
                    Some(c) => *c += 1,
                    None => {
                        df.insert(tok, 1);
                    }
                }
            }
        }
        if n == 0 {
            return Err(FeaturizerError::Invalid(
                "cannot fit on an empty corpus (0 requests)".into(),
            ));
        }
        let mut ranked: Vec<(String, u64)> = df.into_iter().collect();
        // Highest document frequency first; ties by token, ascending (deterministic).
        ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        // The rarity table and its features (rare:<name> for the most frequent names, rare:any,
        // unseen:path), which take the very last places of the vocabulary.
        let (rarity, rarity_entries) = match config.rarity_min_count {
            None => (None, Vec::new()),
            Some(min_count) => {
                let mut table = RarityTable::new(min_count);
                for (_, text) in &doc_texts {
                    table.add(text, &mut scratch.params);
                }
                let entries = rarity_entries(&table, &doc_texts, &mut scratch.params);
                (Some(table), entries)
            }
        };
        let reserved = rarity_entries.len()
            + if config.value_shapes {
                UNSEEN_SHAPES.len()
            } else {
                0
            };
        if config.top_k <= reserved {
            return Err(FeaturizerError::Invalid(format!(
                "top_k = {} leaves no place for tokens: {reserved} places are reserved for the unseen-shape and rarity features",
                config.top_k
            )));
        }
        if config.value_shapes {
            // The last places go to the "unseen name/shape" features, whose document frequency
            // depends on which name/shape pairs made it into the vocabulary: a second pass.
            ranked.truncate(config.top_k - reserved);
            let kept: std::collections::HashSet<&str> = ranked
                .iter()
                .filter_map(|(t, _)| t.strip_prefix(VALUE_SHAPE_PREFIX))
                .collect();
            let mut unseen_df = [0u64; UNSEEN_SHAPES.len()];
            for pairs in &doc_shapes {
                let mut seen = [false; UNSEEN_SHAPES.len()];
                for body in pairs {
                    if !kept.contains(body.as_str()) {
                        let shape = body.rsplit_once('=').map_or("", |(_, shape)| shape);
                        if let Some(k) = UNSEEN_SHAPES
                            .iter()
                            .position(|u| u.strip_prefix(UNSEEN_NAME) == Some(shape))
                        {
                            seen[k] = true;
                        }
                    }
                }
                for (d, s) in unseen_df.iter_mut().zip(seen) {
                    *d += u64::from(s);
                }
            }
            for (u, d) in UNSEEN_SHAPES.iter().zip(unseen_df) {
                ranked.push((format!("{VALUE_SHAPE_PREFIX}{u}"), d));
            }
        } else {
            ranked.truncate(config.top_k - reserved);
        }
        ranked.extend(rarity_entries);
        let idf = ranked
            .iter()
            .map(|(_, d)| (((1.0 + n as f64) / (1.0 + *d as f64)).ln() + 1.0) as f32)
            .collect();
        let (vocabulary, document_frequency) = ranked.into_iter().unzip();
        let content = Content {
            kind: ARTIFACT_KIND.into(),
            format_version: FORMAT_VERSION,
            token_pattern: TOKEN_PATTERN.into(),
            idf_formula: IDF_FORMULA.into(),
            config,
            documents: n,
            vocabulary,
            document_frequency,
            idf,
            rarity,
        };
        let content_hash = hash_content(&content);
        Featurizer::from_artifact(Artifact {
            content,
            content_hash,
        })
    }

    fn from_artifact(a: Artifact) -> Result<Self, FeaturizerError> {
        let c = &a.content;
        if c.kind != ARTIFACT_KIND || c.format_version != FORMAT_VERSION {
            return Err(FeaturizerError::Version {
                found: format!("{} version {}", c.kind, c.format_version),
            });
        }
        let computed = hash_content(c);
        if computed != a.content_hash {
            return Err(FeaturizerError::HashMismatch {
                stored: a.content_hash,
                computed,
            });
        }
        if c.token_pattern != TOKEN_PATTERN || c.idf_formula != IDF_FORMULA {
            return Err(FeaturizerError::Invalid(format!(
                "artifact uses token pattern {:?} and IDF {:?}; this build uses {:?} and {:?}",
                c.token_pattern, c.idf_formula, TOKEN_PATTERN, IDF_FORMULA
            )));
        }
        validate_config(&c.config)?;
        let k = c.vocabulary.len();
        if c.idf.len() != k || c.document_frequency.len() != k {
            return Err(FeaturizerError::Invalid(format!(
                "vocabulary has {k} tokens but idf has {} and document_frequency {}",
                c.idf.len(),
                c.document_frequency.len()
            )));
        }
        if k > c.config.top_k || k > u32::MAX as usize {
            return Err(FeaturizerError::Invalid(format!(
                "vocabulary has {k} tokens, more than top_k = {}",
                c.config.top_k
            )));
        }
        if let Some(bad) = c.idf.iter().find(|v| !v.is_finite() || **v <= 0.0) {
            return Err(FeaturizerError::Invalid(format!(
                "idf value {bad} is not a positive finite number"
            )));
        }
        let mut index = VocabIndex::with_capacity_and_hasher(k, Default::default());
        let mut char_index = VocabIndex::default();
        let mut shape_index = VocabIndex::default();
        let mut placement_index = VocabIndex::default();
        let mut param_index = VocabIndex::default();
        match (&c.rarity, c.config.rarity_min_count) {
            (None, None) => {}
            (Some(t), Some(m)) if t.min_count == m && m > 0 => {}
            _ => {
                return Err(FeaturizerError::Invalid(format!(
                    "rarity table ({}) does not match rarity_min_count {:?}",
                    c.rarity.as_ref().map_or("absent".to_string(), |t| format!(
                        "min_count {}",
                        t.min_count
                    )),
                    c.config.rarity_min_count
                )))
            }
        }
        for (i, tok) in c.vocabulary.iter().enumerate() {
            if let Some(body) = tok.strip_prefix(PLACEMENT_PREFIX) {
                let known = body
                    .rsplit_once('=')
                    .is_some_and(|(p, _)| p == BASE64_MARK || Placement::from_name(p).is_some());
                if c.config.placements.is_none() || !known {
                    return Err(FeaturizerError::Invalid(format!(
                        "vocabulary entry {i} ({tok:?}) is a placement feature, but placements is off or it names no placement"
                    )));
                }
                if placement_index.insert(body.into(), i as u32).is_some() {
                    return Err(FeaturizerError::Invalid(format!(
                        "vocabulary token {tok:?} appears twice"
                    )));
                }
                continue;
            }
            if let Some(body) = tok.strip_prefix(PARAM_PREFIX) {
                if !c.config.params && c.config.rarity_min_count.is_none() {
                    return Err(FeaturizerError::Invalid(format!(
                        "vocabulary entry {i} ({tok:?}) is a parameter feature, but params and rarity_min_count are off"
                    )));
                }
                if param_index.insert(body.into(), i as u32).is_some() {
                    return Err(FeaturizerError::Invalid(format!(
                        "vocabulary token {tok:?} appears twice"
                    )));
                }
                continue;
            }
            if let Some(body) = tok.strip_prefix(CHAR_NGRAM_PREFIX) {
                let n = body.chars().count();
                match c.config.char_ngrams {
                    Some([lo, hi]) if (lo..=hi).contains(&n) => {}
                    _ => {
                        return Err(FeaturizerError::Invalid(format!(
                            "vocabulary entry {i} ({tok:?}) is a character {n}-gram, but char_ngrams is {:?}",
                            c.config.char_ngrams
                        )))
                    }
                }
                if char_index.insert(body.into(), i as u32).is_some() {
                    return Err(FeaturizerError::Invalid(format!(
                        "vocabulary token {tok:?} appears twice"
                    )));
                }
                continue;
            }
            if let Some(body) = tok.strip_prefix(VALUE_SHAPE_PREFIX) {
                if !c.config.value_shapes || !body.contains('=') {
                    return Err(FeaturizerError::Invalid(format!(
                        "vocabulary entry {i} ({tok:?}) is a value shape, but value_shapes is {} or it has no '='",
                        c.config.value_shapes
                    )));
                }
                if shape_index.insert(body.into(), i as u32).is_some() {
                    return Err(FeaturizerError::Invalid(format!(
                        "vocabulary token {tok:?} appears twice"
                    )));
                }
                continue;
            }
            let pieces: Vec<&str> = tok.split(' ').collect();
            let well_formed = pieces.len() <= c.config.ngram_max
                && pieces.iter().all(|piece| {
                    let mut toks = tokenize(piece);
                    toks.next() == Some(*piece) && toks.next().is_none()
                });
            if !well_formed {
                return Err(FeaturizerError::Invalid(format!(
                    "vocabulary entry {i} ({tok:?}) is not a token or an n-gram of at most {} tokens",
                    c.config.ngram_max
                )));
            }
            if index.insert(tok.as_str().into(), i as u32).is_some() {
                return Err(FeaturizerError::Invalid(format!(
                    "vocabulary token {tok:?} appears twice"
                )));
            }
        }
        let mut ascii_index = [NOT_IN_VOCABULARY; 128];
        for (tok, &i) in &index {
            if let &[b] = tok.as_bytes() {
                if b < 128 {
                    ascii_index[b as usize] = i;
                }
            }
        }
        let packed: Vec<(u64, u32)> = char_index
            .iter()
            .filter(|(body, _)| body.len() <= PACKED_NGRAM_BYTES)
            .map(|(body, &i)| (packed_ngram_key(body.as_bytes()), i))
            .collect();
        let char_table = NgramTable::new(&packed);
        let rarity = c.rarity.as_ref().map(RarityTable::lookup);
        let plain_config = FeaturizerConfig {
            value_shapes: false,
            ..c.config.clone()
        };
        Ok(Featurizer {
            content: a.content,
            content_hash: a.content_hash,
            index,
            ascii_index,
            char_index,
            char_table,
            shape_index,
            param_index,
            rarity,
            placement_index,
            plain_config,
        })
    }

    /// Vocabulary index of a feature of a kind (`feature` without the kind's prefix).
    #[inline]
    fn lookup_kind(&self, kind: FeatureKind, feature: &str) -> Option<u32> {
        match kind {
            FeatureKind::Token => self.lookup(feature),
            FeatureKind::Char => self.lookup_char(feature),
            FeatureKind::Shape => self.shape_index.get(feature).copied(),
            FeatureKind::Param => self.param_index.get(feature).copied(),
            FeatureKind::Placement => self.placement_index.get(feature).copied(),
        }
    }

    /// [`Featurizer::lookup_kind`], except that a shape feature not in the vocabulary maps to its
    /// [`UNSEEN_SHAPES`] entry (`buf` is a reusable buffer).
    #[inline]
    fn lookup_kind_or_unseen(
        &self,
        kind: FeatureKind,
        feature: &str,
        buf: &mut String,
    ) -> Option<u32> {
        let found = self.lookup_kind(kind, feature);
        if found.is_some() || kind != FeatureKind::Shape {
            return found;
        }
        let shape = feature.rsplit_once('=').map_or("", |(_, shape)| shape);
        buf.clear();
        buf.push_str(UNSEEN_NAME);
        buf.push_str(shape);
        self.shape_index.get(buf.as_str()).copied()
    }

    /// Calls `f(index)` for each parameter-aware and rarity feature of a request that is in the
    /// vocabulary; returns the number of such features, in the vocabulary or not (for tf).
    #[inline]
    fn for_each_param_feature(
        &self,
        method: &str,
        text: &str,
        scratch: &mut params::ParamScratch,
        mut f: impl FnMut(u32),
    ) -> u32 {
        let config = &self.content.config;
        if !config.params && self.rarity.is_none() {
            return 0;
        }
        params::for_each_param_feature(
            method,
            text,
            config.params,
            self.rarity.as_ref(),
            scratch,
            |feature| {
                if let Some(i) = self.param_index.get(feature) {
                    f(*i)
                }
            },
        )
    }

    /// Vocabulary index of a character n-gram (without its prefix).
    #[inline]
    fn lookup_char(&self, gram: &str) -> Option<u32> {
        if gram.len() <= PACKED_NGRAM_BYTES {
            self.char_table.get(packed_ngram_key(gram.as_bytes()))
        } else {
            self.char_index.get(gram).copied()
        }
    }

    /// Calls `f(index)` for every character n-gram of `text` with `lo..=hi` characters that is in
    /// the vocabulary (the character n-grams of [`for_each_configured_feature`], looked up without
    /// forming them as strings: the last bytes of the text are kept in a `u64` as it is read, and
    /// an n-gram of at most [`PACKED_NGRAM_BYTES`] bytes is the low bytes of it). Returns the
    /// number of n-grams, in the vocabulary or not.
    #[inline]
    fn for_each_char_ngram(&self, text: &str, lo: usize, hi: usize, add: &mut Counter) -> u32 {
        let (lo, hi) = (lo.max(1), hi.min(MAX_CHAR_NGRAM));
        let mut count = 0u32;
        let bytes = text.as_bytes();
        // The last bytes read, the latest in the low byte.
        let mut recent: u64 = 0;
        if text.is_ascii() {
            // One byte per character.
            for (k, &b) in bytes.iter().enumerate() {
                recent = recent << 8 | u64::from(b);
                let chars = k + 1;
                for n in lo..=hi.min(chars) {
                    count += 1;
                    let found = if n <= PACKED_NGRAM_BYTES {
                        let key = (recent & ((1u64 << (8 * n)) - 1)) | (n as u64) << 56;
                        self.char_table.get(key)
                    } else {
                        self.char_index.get(&text[chars - n..chars]).copied()
                    };
                    if let Some(i) = found {
                        add.add(i);
                    }
                }
            }
            return count;
        }
        // bounds[k % RING] = byte offset after k characters, for the last MAX_CHAR_NGRAM + 1 k
        // (a power of two: the remainder is a mask).
        const RING: usize = (MAX_CHAR_NGRAM + 1).next_power_of_two();
        let mut bounds = [0usize; RING];
        let mut chars = 0usize;
        for (pos, c) in text.char_indices() {
            let end = pos + c.len_utf8();
            for &b in &bytes[pos..end] {
                recent = recent << 8 | u64::from(b);
            }
            chars += 1;
            bounds[chars % RING] = end;
            for n in lo..=hi.min(chars) {
                let start = bounds[(chars - n) % RING];
                let len = end - start;
                count += 1;
                let found = if len <= PACKED_NGRAM_BYTES {
                    let key = (recent & ((1u64 << (8 * len)) - 1)) | (len as u64) << 56;
                    self.char_table.get(key)
                } else {
                    self.char_index.get(&text[start..end]).copied()
                };
                if let Some(i) = found {
                    add.add(i);
                }
            }
        }
        count
    }

    /// Vocabulary index of a token feature.
    #[inline]
    fn lookup(&self, feature: &str) -> Option<u32> {
        match feature.as_bytes() {
            &[b] if b < 128 => {
                Some(self.ascii_index[b as usize]).filter(|&i| i != NOT_IN_VOCABULARY)
            }
            _ => self.index.get(feature).copied(),
        }
    }

    /// The settings it was fitted with.
    pub fn config(&self) -> &FeaturizerConfig {
        &self.content.config
    }

    /// Dimension of the feature vectors (vocabulary size; at most `top_k`).
    pub fn dim(&self) -> usize {
        self.content.vocabulary.len()
    }

    /// Number of requests it was fitted on.
    pub fn documents(&self) -> u64 {
        self.content.documents
    }

    /// The vocabulary; index i is feature i.
    pub fn vocabulary(&self) -> &[String] {
        &self.content.vocabulary
    }

    /// IDF of each vocabulary token.
    pub fn idf(&self) -> &[f32] {
        &self.content.idf
    }

    /// sha256 (hex) of the canonical JSON of the artifact's content (everything but the hash).
    pub fn content_hash(&self) -> &str {
        &self.content_hash
    }

    /// The l1-normalized TF-IDF vector of a request, or the empty vector.
    ///
    /// Uses a per-thread [`Scratch`], so only the output vectors are allocated.
    pub fn transform(&self, req: &RequestParts) -> SparseVector {
        thread_local! {
            static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
        }
        let mut out = SparseVector::default();
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => self.transform_into(req, &mut scratch, &mut out),
            // Not reachable (transform_into does not call back), but never panic on it.
            Err(_) => self.transform_into(req, &mut Scratch::default(), &mut out),
        });
        out
    }

    /// [`Featurizer::transform`] reusing `scratch` and `out`: the hot path of the proxy
    /// (allocation-free once the buffers have grown).
    pub fn transform_into(
        &self,
        req: &RequestParts,
        scratch: &mut Scratch,
        out: &mut SparseVector,
    ) {
        out.indices.clear();
        out.values.clear();
        if let Some(pc) = &self.content.config.placements {
            let (segments, windows, limited) = self.placement_windows(req, pc);
            out.truncated = limited || windows.len() > 1;
            self.vectorize_window(&segments, &windows[0], scratch, out);
            return;
        }
        out.truncated = normalize_into(&self.content.config, req, scratch);
        let Scratch {
            text,
            gram,
            counts,
            touched,
            weights,
            unseen,
            params,
            ..
        } = scratch;
        let config = &self.content.config;
        // The features of `for_each_configured_feature` (what `fit` counts), family by family,
        // each looked up the fastest way; the order does not matter (only counts do).
        self.vectorize(counts, touched, weights, out, |add| {
            let mut tokens = for_each_feature(text, config.ngram_max, gram, |feature| {
                if let Some(i) = self.lookup(feature) {
                    add.add(i);
                }
            });
            if let Some([lo, hi]) = config.char_ngrams {
                tokens += self.for_each_char_ngram(text, lo, hi, add);
            }
            if config.value_shapes {
                tokens += for_each_shape_feature(text, gram, |feature| {
                    if let Some(i) = self.lookup_kind_or_unseen(FeatureKind::Shape, feature, unseen)
                    {
                        add.add(i);
                    }
                });
            }
            tokens += self.for_each_param_feature(req.method, text, params, |i| add.add(i));
            tokens
        });
    }

    /// The split, segments and windows of a request under [`FeaturizerConfig::placements`], and
    /// whether a limit of the split was reached. There is always at least one window.
    fn placement_windows(
        &self,
        req: &RequestParts,
        pc: &PlacementConfig,
    ) -> (Vec<placement::Segment>, Vec<Vec<placement::Piece>>, bool) {
        let config = &self.content.config;
        let split = placement::split_request(req, pc, config.decode_rounds, config.include_body);
        let segments = placement::segments(&split);
        let windows =
            placement::windows(&segments, config.max_input_bytes, pc.window_overlap_bytes);
        (segments, windows, split.limited())
    }

    fn vectorize_window(
        &self,
        segments: &[placement::Segment],
        window: &[placement::Piece],
        scratch: &mut Scratch,
        out: &mut SparseVector,
    ) {
        let Scratch {
            gram,
            counts,
            touched,
            weights,
            unseen,
            ..
        } = scratch;
        let (config, plain) = (&self.content.config, &self.plain_config);
        self.vectorize(counts, touched, weights, out, |add| {
            placement::for_each_window_feature(
                config,
                plain,
                segments,
                window,
                gram,
                |kind, feature| {
                    if let Some(i) = self.lookup_kind_or_unseen(kind, feature, unseen) {
                        add.add(i);
                    }
                },
            )
        });
    }

    /// Every vector of a request: one per window of [`FeaturizerConfig::max_input_bytes`] bytes
    /// of decoded text, covering everything read of the request (up to
    /// [`PlacementConfig::max_bytes`]), so an attack after any amount of padding is in some
    /// window; score each and take the highest. Without [`FeaturizerConfig::placements`], the
    /// one vector of [`Featurizer::transform`]. The first vector is always `transform`'s (flagged
    /// `truncated` when more windows follow); the others are flagged only when a limit of
    /// [`PlacementConfig`] cut the input. With [`PlacementConfig::parts_alone`], one more vector
    /// per part of every window of several parts: that part alone.
    pub fn transform_windows(&self, req: &RequestParts, out: &mut Vec<SparseVector>) {
        out.clear();
        let mut scratch = Scratch::default();
        let Some(pc) = &self.content.config.placements else {
            let mut v = SparseVector::default();
            self.transform_into(req, &mut scratch, &mut v);
            out.push(v);
            return;
        };
        let (segments, windows, limited) = self.placement_windows(req, pc);
        for (k, window) in windows.iter().enumerate() {
            let mut v = SparseVector::default();
            self.vectorize_window(&segments, window, &mut scratch, &mut v);
            // The first window is `transform`'s, which did not read the rest; together the
            // windows read everything but what a limit cut.
            v.truncated = limited || (k == 0 && windows.len() > 1);
            out.push(v);
        }
        if pc.parts_alone {
            // Each part of a window of several parts, alone (a part longer than a window is
            // already alone in its windows).
            for piece in windows.iter().filter(|w| w.len() > 1).flatten() {
                let mut v = SparseVector::default();
                self.vectorize_window(&segments, std::slice::from_ref(piece), &mut scratch, &mut v);
                v.truncated = limited;
                out.push(v);
            }
        }
    }

    /// One vector per window of the parts of each placement found in the request (placements in
    /// [`Placement::ALL`] order): which placement looks most like an attack, for audit lines and
    /// metrics. Without [`FeaturizerConfig::placements`], `transform`'s vector as
    /// [`Placement::Request`].
    pub fn placement_vectors(&self, req: &RequestParts) -> Vec<(Placement, SparseVector)> {
        let mut scratch = Scratch::default();
        let Some(pc) = &self.content.config.placements else {
            let mut v = SparseVector::default();
            self.transform_into(req, &mut scratch, &mut v);
            return vec![(Placement::Request, v)];
        };
        let config = &self.content.config;
        let split = placement::split_request(req, pc, config.decode_rounds, config.include_body);
        let segments = placement::segments(&split);
        let mut out = Vec::new();
        for p in Placement::ALL {
            let mine: Vec<placement::Segment> = segments
                .iter()
                .filter(|s| s.placement == p)
                .cloned()
                .collect();
            if mine.is_empty() {
                continue;
            }
            for window in placement::windows(&mine, config.max_input_bytes, pc.window_overlap_bytes)
            {
                let mut v = SparseVector::default();
                self.vectorize_window(&mine, &window, &mut scratch, &mut v);
                out.push((p, v));
            }
        }
        out
    }

    /// Counts the vocabulary indices that `features` adds (it returns the number of features
    /// seen, in the vocabulary or not) and writes their normalized TF-IDF weights into `out` (the
    /// shared second half of every transform).
    fn vectorize(
        &self,
        counts: &mut Vec<u32>,
        touched: &mut Vec<u32>,
        weights: &mut Weights,
        out: &mut SparseVector,
        features: impl FnOnce(&mut Counter) -> u32,
    ) {
        out.indices.clear();
        out.values.clear();
        if counts.len() != self.dim() {
            counts.clear();
            counts.resize(self.dim(), 0);
        }
        touched.clear();
        let tokens = features(&mut Counter { counts, touched });
        if touched.is_empty() {
            return;
        }
        // Ascending order: through a bit set when there are many indices (one pass over
        // dim / 64 words instead of an n log n sort: a request of the detector's featurizer
        // touches ≈200 of 3000), else by sorting.
        let words = self.dim().div_ceil(64);
        if touched.len() * 4 >= words {
            let bits = &mut weights.bits;
            bits.clear();
            bits.resize(words, 0);
            for &i in touched.iter() {
                bits[i as usize / 64] |= 1 << (i % 64);
            }
            touched.clear();
            for (w, word) in bits.iter().enumerate() {
                let mut word = *word;
                while word != 0 {
                    touched.push((w * 64) as u32 + word.trailing_zeros());
                    word &= word - 1;
                }
            }
        } else {
            touched.sort_unstable();
        }
        // Weights in f64, l1-normalized, then rounded once to f32. (Dividing by `tokens` cancels
        // in the normalization; kept so that the seeds' weights stay bit-identical.)
        let sublinear = self.content.config.sublinear_tf;
        let tf_of = |count: u32| {
            if sublinear {
                // ln(1) = 0 exactly: most counts are 1, and skipping the call changes nothing.
                if count == 1 {
                    1.0
                } else {
                    1.0 + f64::from(count).ln()
                }
            } else {
                f64::from(count) / f64::from(tokens)
            }
        };
        let l2 = self.content.config.norm == Norm::L2;
        let idf = &self.content.idf;
        let mut sum = 0.0f64;
        weights.weight.clear();
        for &i in touched.iter() {
            let count = std::mem::take(&mut counts[i as usize]);
            let w = tf_of(count) * f64::from(idf[i as usize]);
            weights.weight.push(w);
            sum += if l2 { w * w } else { w };
        }
        let norm = if l2 { sum.sqrt() } else { sum };
        out.indices.extend_from_slice(touched);
        out.values
            .extend(weights.weight.iter().map(|&w| (w / norm) as f32));
    }

    /// The dense form of [`Featurizer::transform`] (length [`Featurizer::dim`]).
    pub fn transform_dense(&self, req: &RequestParts) -> Vec<f32> {
        self.transform(req).to_dense(self.dim())
    }

    /// The normalized text, the tokens and the non-zero weights of a request.
    pub fn explain(&self, req: &RequestParts) -> Explanation {
        let mut counts: HashMap<u32, u32> = HashMap::new();
        let mut buf = String::new();
        let (normalized, truncated) = match &self.content.config.placements {
            Some(pc) => {
                // The first window's segments, one per line.
                let (segments, windows, limited) = self.placement_windows(req, pc);
                let mut text = String::new();
                for piece in &windows[0] {
                    text.push_str(&segments[piece.segment].text[piece.start..piece.end]);
                    text.push('\n');
                }
                placement::for_each_window_feature(
                    &self.content.config,
                    &self.plain_config,
                    &segments,
                    &windows[0],
                    &mut String::new(),
                    |kind, feature| {
                        if let Some(i) = self.lookup_kind_or_unseen(kind, feature, &mut buf) {
                            *counts.entry(i).or_default() += 1;
                        }
                    },
                );
                (text, limited || windows.len() > 1)
            }
            None => {
                let (normalized, truncated) = normalize(&self.content.config, req);
                for_each_configured_feature(
                    &normalized,
                    &self.content.config,
                    &mut String::new(),
                    |kind, feature| {
                        if let Some(i) = self.lookup_kind_or_unseen(kind, feature, &mut buf) {
                            *counts.entry(i).or_default() += 1;
                        }
                    },
                );
                self.for_each_param_feature(
                    req.method,
                    &normalized,
                    &mut params::ParamScratch::default(),
                    |i| *counts.entry(i).or_default() += 1,
                );
                (normalized, truncated)
            }
        };
        let tokens: Vec<String> = tokenize(&normalized).map(str::to_owned).collect();
        let v = self.transform(req);
        let weights = v
            .indices
            .iter()
            .zip(&v.values)
            .map(|(&index, &weight)| TokenWeight {
                token: self.content.vocabulary[index as usize].clone(),
                index,
                count: counts.get(&index).copied().unwrap_or(0),
                weight,
            })
            .collect();
        Explanation {
            normalized,
            tokens,
            truncated,
            weights,
        }
    }

    /// The artifact as pretty JSON (deterministic; ends with a newline).
    pub fn to_json(&self) -> Vec<u8> {
        let artifact = Artifact {
            content: self.content.clone(),
            content_hash: self.content_hash.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&artifact).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Reads an artifact, checking its kind, format version, content hash and consistency.
    pub fn from_json(bytes: &[u8]) -> Result<Self, FeaturizerError> {
        // Check kind and version first, so that an artifact of another version gets a version
        // error rather than a confusing "missing field".
        let header: ArtifactHeader =
            serde_json::from_slice(bytes).map_err(FeaturizerError::Parse)?;
        let kind = header.kind.unwrap_or_else(|| "(no kind)".into());
        let version_ok = header.format_version.as_ref().and_then(|v| v.as_u64())
            == Some(u64::from(FORMAT_VERSION));
        if kind != ARTIFACT_KIND || !version_ok {
            let version = header
                .format_version
                .map(|v| v.to_string())
                .unwrap_or_else(|| "(none)".into());
            return Err(FeaturizerError::Version {
                found: format!("{kind} version {version}"),
            });
        }
        let artifact: Artifact = serde_json::from_slice(bytes).map_err(FeaturizerError::Parse)?;
        Featurizer::from_artifact(artifact)
    }

    /// Writes the artifact atomically ([`write_atomic`]).
    pub fn save(&self, path: &Path) -> Result<(), FeaturizerError> {
        write_atomic(path, &self.to_json()).map_err(|source| FeaturizerError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Reads and checks an artifact file (errors name the file).
    pub fn load(path: &Path) -> Result<Self, FeaturizerError> {
        let bytes = std::fs::read(path).map_err(|source| FeaturizerError::Io {
            path: path.to_owned(),
            source,
        })?;
        Featurizer::from_json(&bytes).map_err(|e| FeaturizerError::InFile {
            path: path.to_owned(),
            source: Box::new(e),
        })
    }
}

fn validate_config(c: &FeaturizerConfig) -> Result<(), FeaturizerError> {
    if c.placements.is_some() && (c.params || c.rarity_min_count.is_some()) {
        // The parameter and rarity families read the seeds' joined query text, which the
        // placement view replaces; combining them is not defined yet.
        return Err(FeaturizerError::Invalid(
            "placements cannot be combined with params or rarity_min_count".into(),
        ));
    }
    if c.top_k == 0 {
        return Err(FeaturizerError::Invalid("top_k must be at least 1".into()));
    }
    if c.max_input_bytes == 0 {
        return Err(FeaturizerError::Invalid(
            "max_input_bytes must be at least 1".into(),
        ));
    }
    if c.ngram_max == 0 || c.ngram_max > MAX_NGRAM {
        return Err(FeaturizerError::Invalid(format!(
            "ngram_max = {} (1 to {MAX_NGRAM})",
            c.ngram_max
        )));
    }
    if let Some([lo, hi]) = c.char_ngrams {
        if lo == 0 || lo > hi || hi > MAX_CHAR_NGRAM {
            return Err(FeaturizerError::Invalid(format!(
                "char_ngrams = [{lo}, {hi}] (need 1 <= min <= max <= {MAX_CHAR_NGRAM})"
            )));
        }
    }
    if c.value_shapes && c.top_k <= UNSEEN_SHAPES.len() {
        return Err(FeaturizerError::Invalid(format!(
            "top_k = {} with value_shapes (at least {} needed: {} places go to the unseen-parameter features)",
            c.top_k,
            UNSEEN_SHAPES.len() + 1,
            UNSEEN_SHAPES.len()
        )));
    }
    if c.rarity_min_count == Some(0) {
        return Err(FeaturizerError::Invalid(
            "rarity_min_count must be at least 1 (or absent for off)".into(),
        ));
    }
    if c.decode_rounds > 16 {
        return Err(FeaturizerError::Invalid(format!(
            "decode_rounds = {} (at most 16)",
            c.decode_rounds
        )));
    }
    Ok(())
}

/// The rarity features' vocabulary entries (with their document frequency over the corpus
/// `docs`): `rare:<name>` for [`RarityTable::reserved_names`], then `rare:any` and `unseen:path`.
fn rarity_entries(
    table: &RarityTable,
    docs: &[(String, String)],
    scratch: &mut params::ParamScratch,
) -> Vec<(String, u64)> {
    let mut bodies: Vec<String> = table
        .reserved_names()
        .into_iter()
        .map(|n| format!("{}{n}", params::RARE_PREFIX))
        .collect();
    bodies.push(params::RARE_ANY.into());
    bodies.push(params::UNSEEN_PATH.into());
    let position: HashMap<&str, usize> = bodies
        .iter()
        .enumerate()
        .map(|(k, b)| (b.as_str(), k))
        .collect();
    let lookup = table.lookup();
    let mut df = vec![0u64; bodies.len()];
    let mut seen = vec![false; bodies.len()];
    for (method, text) in docs {
        seen.iter_mut().for_each(|s| *s = false);
        params::for_each_param_feature(method, text, false, Some(&lookup), scratch, |f| {
            if let Some(&k) = position.get(f) {
                seen[k] = true;
            }
        });
        for (d, s) in df.iter_mut().zip(&seen) {
            *d += u64::from(*s);
        }
    }
    bodies
        .iter()
        .zip(df)
        .map(|(b, d)| (format!("{PARAM_PREFIX}{b}"), d))
        .collect()
}

/// Re-exported so that featurizer users write artifacts the one way the workspace does.
pub use atomic_write::write_atomic;
