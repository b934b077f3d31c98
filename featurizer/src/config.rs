//! The settings ([`FeaturizerConfig`]), their checks, and the request the featurizer reads
//! ([`RequestParts`]).
use super::*;

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
    /// Body fields not read (JSON, multipart, XML; only with [`FeaturizerConfig::placements`],
    /// the one reading of those bodies): [`ExcludedFields`].
    pub excluded_fields: ExcludedFields<'a>,
}

impl<'a> RequestParts<'a> {
    /// A `GET` of `target` without a body.
    pub fn get(target: &'a str) -> Self {
        RequestParts {
            method: "GET",
            target: target.as_bytes(),
            body: None,
            headers: Headers::None,
            excluded_fields: ExcludedFields::NONE,
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
    /// request detection (e.g. Kruegel & Vigna 2003; the logistic-regression reference).
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
    /// minimum count (the 3). Off when absent; not written when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rarity_min_count: Option<u32>,
    /// Share-based oddity features ([`params`]: `odd:char<τ`, `odd:len<τ`, `odd:name<τ`,
    /// `odd:method<τ`, `odd:any<τ`) at these levels τ, in thousandths (`[10, 50]`: 1 % and 5 %),
    /// against per-name character-class, length, name and method counts of the featurizer's
    /// corpus (the public side). Needs `rarity_min_count`. Off when empty; not written when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub odd_permille: Vec<u32>,
    /// Two more oddity kinds at the `odd_permille` levels ([`params`]): `odd:shape<τ`, a value
    /// pattern that fewer than τ of the name's public values have (only for names whose 3 most
    /// common patterns cover ≥ 80 % of their values: postal codes, DNIs, e-mails, not free text
    /// or passwords), and `odd:path<τ`, a path that fewer than τ of the public requests have.
    /// Both count in `odd:any<τ`. Needs `odd_permille`. Off by default; not written when off.
    #[serde(default, skip_serializing_if = "is_false")]
    pub odd_shape_path: bool,
    /// One more oddity feature, `odd:name-variant` ([`params`]): a parameter name one edit away
    /// (a character appended, removed or replaced) from a name that at least
    /// [`crate::params::NAME_VARIANT_RATIO`] times as many of the path's public requests have —
    /// `loginA` beside `login`, a renamed parameter. A share alone misses it when the public pool
    /// repeats the tampering (CSIC's `loginA` is 2.7 % of its login page's public requests).
    /// Needs `odd_permille`. Off by default; not written when off.
    #[serde(default, skip_serializing_if = "is_false")]
    pub odd_name_variants: bool,
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
    /// libinjection's SQL-injection and XSS detectors as features, a public prior the model
    /// weighs (`libinjectionrs`, a pure-Rust port of libinjection): every decoded part of the
    /// placement view whose value libinjection calls SQL injection adds [`LIBINJECTION_SQLI`],
    /// XSS [`LIBINJECTION_XSS`] (placement features: `pl:li:sqli`, `pl:li:xss` in the
    /// vocabulary). Both take reserved places at the end of the vocabulary, so `top_k` never
    /// drops them. Needs `placements`. Off by default; not written when off.
    #[serde(default, skip_serializing_if = "is_false")]
    pub libinjection: bool,
    /// Attack signatures as features, a public prior like `libinjection` for what it does not
    /// look at ([`crate::signatures`]): every decoded part whose value has a path traversal, a
    /// system file name, a shell command after a separator or a long run of one byte adds
    /// `pl:sig:traversal`, `pl:sig:system_file`, `pl:sig:shell`, `pl:sig:long_run`. Reserved
    /// places at the end of the vocabulary, like libinjection's. Needs `placements`. Off by
    /// default; not written when off.
    #[serde(default, skip_serializing_if = "is_false")]
    pub signatures: bool,
    /// The public priors' features (libinjection's two, the four signatures) keep the value 1
    /// whatever else their window holds: they are left out of the window's norm and not
    /// divided by it. Why: every other feature of a window shares one unit norm, so an attack
    /// value among many benign parts (a registration form's fourteen fields, or thirty distinct
    /// padding pairs) weighs a fraction of what it weighs alone — a `union select` in the form's
    /// name field scored 0.36 against 0.70 in a two-field query, and the priors' evidence was
    /// diluted with it. Needs `libinjection` or `signatures`. Off by default; not written when
    /// off (older artifacts keep their hash).
    #[serde(default, skip_serializing_if = "is_false")]
    pub priors_undiluted: bool,
}

/// Placement-feature body of a part libinjection calls SQL injection
/// ([`FeaturizerConfig::libinjection`]; `pl:li:sqli` in the vocabulary).
pub const LIBINJECTION_SQLI: &str = "li:sqli";
/// Placement-feature body of a part libinjection calls XSS
/// ([`FeaturizerConfig::libinjection`]; `pl:li:xss` in the vocabulary).
pub const LIBINJECTION_XSS: &str = "li:xss";
/// Every libinjection feature body, in vocabulary order.
pub const LIBINJECTION_FEATURES: [&str; 2] = [LIBINJECTION_SQLI, LIBINJECTION_XSS];

pub(crate) fn is_l1(n: &Norm) -> bool {
    *n == Norm::L1
}

pub(crate) fn is_unigram(n: &usize) -> bool {
    *n == 1
}

pub(crate) fn is_false(b: &bool) -> bool {
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
            odd_permille: Vec::new(),
            odd_shape_path: false,
            odd_name_variants: false,
            norm: Norm::L1,
            placements: None,
            libinjection: false,
            signatures: false,
            priors_undiluted: false,
        }
    }
}

/// Checks every setting, in a fixed order: the first problem found is the error returned.
pub(crate) fn validate_config(c: &FeaturizerConfig) -> Result<(), FeaturizerError> {
    validate_placement_settings(c)?;
    validate_sizes(c)?;
    validate_rarity_settings(c)?;
    if c.decode_rounds > 16 {
        return Err(FeaturizerError::Setting {
            key: "decode_rounds",
            reason: format!("{} (at most 16)", c.decode_rounds),
        });
    }
    Ok(())
}

/// The settings that need `placements`: the known-header share and the public priors.
fn validate_placement_settings(c: &FeaturizerConfig) -> Result<(), FeaturizerError> {
    if let Some(permille) = c.placements.as_ref().and_then(|p| p.known_header_permille) {
        if permille == 0 || permille > 1000 {
            return Err(FeaturizerError::Setting {
                key: "placements.known_header_permille",
                reason: format!("{permille} (expected 1 to 1000 thousandths of the corpus)"),
            });
        }
    }
    if c.libinjection && c.placements.is_none() {
        return Err(FeaturizerError::Setting {
            key: "libinjection",
            reason: "needs placements (libinjection reads each decoded part of the request)".into(),
        });
    }
    if c.signatures && c.placements.is_none() {
        return Err(FeaturizerError::Setting {
            key: "signatures",
            reason: "needs placements (the signatures read each decoded part of the request)"
                .into(),
        });
    }
    if c.priors_undiluted && !(c.libinjection || c.signatures) {
        return Err(FeaturizerError::Setting {
            key: "priors_undiluted",
            reason: "needs libinjection or signatures (the priors whose features keep their value)"
                .into(),
        });
    }
    Ok(())
}

/// The vocabulary and n-gram sizes, the input limit, and the room `value_shapes` needs in `top_k`.
fn validate_sizes(c: &FeaturizerConfig) -> Result<(), FeaturizerError> {
    if c.top_k == 0 {
        return Err(FeaturizerError::Setting {
            key: "top_k",
            reason: "must be at least 1".into(),
        });
    }
    if c.max_input_bytes == 0 {
        return Err(FeaturizerError::Setting {
            key: "max_input_bytes",
            reason: "must be at least 1".into(),
        });
    }
    if c.ngram_max == 0 || c.ngram_max > MAX_NGRAM {
        return Err(FeaturizerError::Setting {
            key: "ngram_max",
            reason: format!("{} (expected 1 to {MAX_NGRAM})", c.ngram_max),
        });
    }
    if let Some([lo, hi]) = c.char_ngrams {
        if lo == 0 || lo > hi || hi > MAX_CHAR_NGRAM {
            return Err(FeaturizerError::Setting {
                key: "char_ngrams",
                reason: format!("[{lo}, {hi}] (need 1 <= min <= max <= {MAX_CHAR_NGRAM})"),
            });
        }
    }
    if c.value_shapes && c.top_k <= UNSEEN_SHAPES.len() {
        return Err(FeaturizerError::Setting {
            key: "top_k",
            reason: format!(
                "{} with value_shapes (at least {} needed: {} places go to the unseen-parameter features)",
                c.top_k,
                UNSEEN_SHAPES.len() + 1,
                UNSEEN_SHAPES.len()
            ),
        });
    }
    Ok(())
}

/// The rarity table's settings and the oddity features that live in it.
fn validate_rarity_settings(c: &FeaturizerConfig) -> Result<(), FeaturizerError> {
    if c.rarity_min_count == Some(0) {
        return Err(FeaturizerError::Setting {
            key: "rarity_min_count",
            reason: "must be at least 1 (or absent for off)".into(),
        });
    }
    if !c.odd_permille.is_empty() {
        if c.rarity_min_count.is_none() {
            return Err(FeaturizerError::Setting {
                key: "odd_permille",
                reason: "needs rarity_min_count (the oddity counts live in the rarity table)"
                    .into(),
            });
        }
        let ascending = c.odd_permille.windows(2).all(|w| w[0] < w[1]);
        if c.odd_permille.len() > 4
            || !ascending
            || c.odd_permille.iter().any(|&p| p == 0 || p >= 1000)
        {
            return Err(FeaturizerError::Setting {
                key: "odd_permille",
                reason: format!(
                    "{:?} (expected at most 4 levels, strictly ascending, each 1 to 999 thousandths)",
                    c.odd_permille
                ),
            });
        }
    }
    if c.odd_name_variants && c.odd_permille.is_empty() {
        return Err(FeaturizerError::Setting {
            key: "odd_name_variants",
            reason: "needs odd_permille (the name counts per path live in the oddity table)".into(),
        });
    }
    if c.odd_shape_path && c.odd_permille.is_empty() {
        return Err(FeaturizerError::Setting {
            key: "odd_shape_path",
            reason: "needs odd_permille (the levels τ of the oddity features)".into(),
        });
    }
    Ok(())
}
