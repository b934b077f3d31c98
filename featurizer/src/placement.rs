//! Where in a request a value rides, and what it says once decoded (opt-in:
//! [`crate::FeaturizerConfig::placements`]).
//!
//! [`split_request`] turns a whole request (request line, every header, the body by its
//! `Content-Type`) into bounded, decoded [`Part`]s, each tagged with a low-cardinality
//! [`Placement`] (`query`, `hdr:user-agent`, `json:value`, `mp:filename`, ...):
//!
//! - request line: the method, the path, each query parameter;
//! - headers: every value (`User-Agent`, `Referer`, each `Cookie` pair, `X-Forwarded-*` /
//!   `Forwarded`, any other header); the framing headers `Content-Length`, `Transfer-Encoding`
//!   and `Connection` are protocol, not data, and are skipped;
//! - the body by `Content-Type`: `application/x-www-form-urlencoded` (each pair),
//!   `multipart/form-data` (each field value and each filename), JSON (`*json*`: every object key
//!   and every string value, after `\uXXXX` unescaping, nesting bounded), XML / SOAP (`*xml*`:
//!   text, CDATA, comments, attribute values and the DOCTYPE's text, entities decoded; an entity
//!   is only ever replaced by the characters it names, never fetched or expanded from a
//!   declaration), anything else as plain text. A JSON or XML body that does not parse is read
//!   as plain text: the inspection never depends on the attacker's syntax being well formed.
//!
//! Every value is decoded ([`decode_value`]): percent-decoding (repeated, up to `decode_rounds`),
//! overlong UTF-8 (`%C0%AF` is `/`), HTML/XML character references (`&lt;`, `&#x27;`, `&#39`),
//! JavaScript / JSON escapes (`\u0027`, `\x27`), repeated until nothing changes (so `%26lt%3B`
//! ends as `<`), then lower-cased. A value that is Base64 of printable text also yields a second
//! part with the decoded text (`encoded: true`), so both forms are scored.
//!
//! Bounded everywhere ([`PlacementConfig`]): at most `max_parts` parts, `max_depth` levels of
//! JSON/XML nesting and `max_bytes` bytes of input (target + header values + body) read; what is
//! beyond a limit is not read, and [`Split`] says which limit was reached.
use crate::hex_value;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Borrowed header name/value pairs.
type BorrowedPairs<'a> = &'a [(&'a str, &'a [u8])];

/// The request headers the featurizer reads: a small borrowed view, whichever way the caller
/// holds them (a parsed request's `(&str, &[u8])` pairs, or a dataset record's owned pairs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Headers<'a> {
    /// No headers (the seeds' view: URI and form body only).
    #[default]
    None,
    /// Borrowed name/value pairs, in request order.
    Pairs(&'a [(&'a str, &'a [u8])]),
    /// Owned name/value pairs (e.g. `datasets::Record::headers`), in request order.
    Owned(&'a [(String, Vec<u8>)]),
}

impl<'a> Headers<'a> {
    /// The pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> + 'a {
        let (pairs, owned): (BorrowedPairs<'a>, &'a [(String, Vec<u8>)]) = match *self {
            Headers::None => (&[], &[]),
            Headers::Pairs(p) => (p, &[]),
            Headers::Owned(o) => (&[], o),
        };
        pairs
            .iter()
            .copied()
            .chain(owned.iter().map(|(n, v)| (n.as_str(), v.as_slice())))
    }

    /// The first value of the header `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Number of header fields.
    pub fn len(&self) -> usize {
        match self {
            Headers::None => 0,
            Headers::Pairs(p) => p.len(),
            Headers::Owned(o) => o.len(),
        }
    }

    /// Whether there is no header field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Names of the body fields the featurizer does not read: an operator's exclusion of a
/// parameter (the proxy's `exclude_parts: {param: NAME}`), applied where the body is parsed so
/// that what is left out is exactly a field the featurizer would read.
///
/// - JSON: an object member whose key is NAME, at any depth: its key and its whole value
///   (string, number, object or array). A body that is not strict JSON is also read whole as
///   text ([`split_request`]), excluded members included.
/// - `multipart/form-data`: the part whose `name` is NAME: its value and its file name.
/// - XML: an element named NAME (its text, attributes and everything nested in it, up to its
///   closing tag or the end of the body), and an attribute named NAME; a name matches with or
///   without its namespace prefix (`q` matches `s:q`).
///
/// Names compare exactly (case-sensitive) with the name as the body spells it once its own
/// syntax is undone (a JSON key's escapes, a multipart name's quotes). Query and form pairs are
/// not looked at here: the proxy leaves them out of the request line and form body, which every
/// view of the request reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExcludedFields<'a>(&'a [String]);

impl<'a> ExcludedFields<'a> {
    /// No field excluded: the request is read whole.
    pub const NONE: ExcludedFields<'static> = ExcludedFields(&[]);

    /// The fields named `names`.
    pub fn new(names: &'a [String]) -> Self {
        ExcludedFields(names)
    }

    /// The excluded names.
    pub fn names(&self) -> &'a [String] {
        self.0
    }

    /// Whether no field is excluded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the JSON key or multipart field `name` is excluded.
    pub fn contains(&self, name: &[u8]) -> bool {
        self.0.iter().any(|n| n.as_bytes() == name)
    }

    /// Whether the XML element or attribute `name` is excluded, with or without its prefix.
    fn contains_xml(&self, name: &[u8]) -> bool {
        let local = name
            .iter()
            .rposition(|&b| b == b':')
            .map_or(name, |colon| &name[colon + 1..]);
        self.contains(name) || self.contains(local)
    }
}

/// Where a value rides in a request. Few values on purpose: it is a metric label and part of
/// feature names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Placement {
    /// The whole request as the seeds read it (target + form body); the only placement of a
    /// featurizer without [`crate::FeaturizerConfig::placements`].
    Request,
    /// The request method.
    Method,
    /// The request path (percent-decoded).
    Path,
    /// A query parameter.
    Query,
    /// A pair of an `application/x-www-form-urlencoded` body.
    Form,
    /// The `User-Agent` header.
    HdrUserAgent,
    /// The `Referer` header.
    HdrReferer,
    /// One pair of the `Cookie` header.
    HdrCookie,
    /// `X-Forwarded-*` and `Forwarded`.
    HdrForwarded,
    /// Any other header.
    HdrOther,
    /// A field value of a `multipart/form-data` body.
    MpField,
    /// A file name of a `multipart/form-data` body.
    MpFilename,
    /// An object key of a JSON body.
    JsonKey,
    /// A string value of a JSON body.
    JsonValue,
    /// Text, CDATA, comment or DOCTYPE text of an XML / SOAP body.
    XmlText,
    /// An attribute value of an XML / SOAP body.
    XmlAttr,
    /// A body of any other type, as text.
    Text,
}

impl Placement {
    /// Every placement, in order.
    pub const ALL: [Placement; 17] = [
        Placement::Request,
        Placement::Method,
        Placement::Path,
        Placement::Query,
        Placement::Form,
        Placement::HdrUserAgent,
        Placement::HdrReferer,
        Placement::HdrCookie,
        Placement::HdrForwarded,
        Placement::HdrOther,
        Placement::MpField,
        Placement::MpFilename,
        Placement::JsonKey,
        Placement::JsonValue,
        Placement::XmlText,
        Placement::XmlAttr,
        Placement::Text,
    ];

    /// Whether it is a header placement (`hdr:`).
    pub fn is_header(self) -> bool {
        matches!(
            self,
            Placement::HdrUserAgent
                | Placement::HdrReferer
                | Placement::HdrCookie
                | Placement::HdrForwarded
                | Placement::HdrOther
        )
    }

    /// The name in feature names, metrics and audit lines (`hdr:user-agent`, `json:value`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Request => "request",
            Placement::Method => "method",
            Placement::Path => "path",
            Placement::Query => "query",
            Placement::Form => "form",
            Placement::HdrUserAgent => "hdr:user-agent",
            Placement::HdrReferer => "hdr:referer",
            Placement::HdrCookie => "hdr:cookie",
            Placement::HdrForwarded => "hdr:x-forwarded",
            Placement::HdrOther => "hdr:other",
            Placement::MpField => "mp:field",
            Placement::MpFilename => "mp:filename",
            Placement::JsonKey => "json:key",
            Placement::JsonValue => "json:value",
            Placement::XmlText => "xml:text",
            Placement::XmlAttr => "xml:attr",
            Placement::Text => "text",
        }
    }

    /// The placement named `name` ([`Placement::as_str`]).
    pub fn from_name(name: &str) -> Option<Placement> {
        Placement::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// The placement of a header value by the header's name.
    pub fn of_header(name: &str) -> Placement {
        // Compared without a lower-cased copy: this runs for every header of every request.
        let is = |known: &str| name.eq_ignore_ascii_case(known);
        let prefix = "x-forwarded-";
        let forwarded_x = name.len() >= prefix.len()
            && name.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes());
        if is("user-agent") {
            Placement::HdrUserAgent
        } else if is("referer") {
            Placement::HdrReferer
        } else if is("cookie") {
            Placement::HdrCookie
        } else if is("forwarded") || forwarded_x {
            Placement::HdrForwarded
        } else {
            Placement::HdrOther
        }
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The bounds of [`split_request`]; stored in the featurizer artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlacementConfig {
    /// Most parts read from one request (query pairs, headers, body fields, ... together).
    pub max_parts: usize,
    /// Deepest JSON / XML nesting read; deeper content is not read.
    pub max_depth: usize,
    /// Most bytes of input (target, header values and body together) read from one request.
    pub max_bytes: usize,
    /// Bytes by which consecutive windows of a part longer than the window overlap, so that an
    /// attack string cut by one window boundary is whole in the next window
    /// ([`crate::Featurizer::transform_windows`]).
    pub window_overlap_bytes: usize,
    /// Also score every part that shares a window with other parts on its own
    /// ([`crate::Featurizer::transform_windows`] adds one vector per such part), so that many
    /// distinct benign parts around an attack cannot dilute its weight in the window's vector.
    /// Off by default (and then not written into the artifact, so older artifacts keep their
    /// hash): one more network call per part.
    #[serde(skip_serializing_if = "is_false")]
    pub parts_alone: bool,
    /// Read a `Referer` as a URL: its authority and path, without the `http://` / `https://`
    /// scheme and without the query, as one part, and each pair of its query as a part (as
    /// always). Nothing of what an attacker sends goes unread: only the scheme, the same in every
    /// Referer, is dropped, and the query is read pair by pair. Without it the URL is also read
    /// whole, and a whole-request student read its scheme (`http`, a remote-file-inclusion sign
    /// in the public attack corpora) and its `?query` (a parameter the site does not have) as
    /// attack signs: a visitor from `https://www.google.com/search?q=queso` scored 0.92, and
    /// 88-95 % of benign Referer values were blocked in 4 of 6 runs (EVALUATION.md, "The whole
    /// request"). Off by default (and then not written into the artifact, so older artifacts
    /// keep their hash and their reading).
    #[serde(skip_serializing_if = "is_false")]
    pub referer_as_url: bool,
    /// Read an opaque token — a value of at least [`OPAQUE_TOKEN_MIN_CHARS`] ASCII letters and
    /// digits (`-` and `_` allowed) with at least one of each, such as a session cookie
    /// `JSESSIONID=1F767F17239C9B670A39E9B10C3825F4`, a UUID or an API key — as its name and the
    /// placement feature `pl:<placement>=token` only, not as character n-grams of its value.
    /// Such values are random: their n-grams are noise that the model must learn to ignore, and
    /// they share features with the request's real values (on CSIC 2010 the session cookie
    /// alone took the whole-request student from ROC AUC 0.996 to 0.987 and TPR at FPR ≤ 1 % from
    /// 87.5 to 76.4 %; EVALUATION.md). An attack needs characters a token cannot have (spaces,
    /// quotes, brackets, `;`, `/`, `.`, `=`), so it is always read; a Base64 value's decoded text
    /// is read as before. Off by default (and then not written into the artifact, so older
    /// artifacts keep their hash and their reading).
    #[serde(default, skip_serializing_if = "is_false")]
    pub opaque_tokens: bool,
    /// Read the path, the query and a form body as one part, the `request` placement: the text
    /// the seeds' view reads (target and form body, percent-decoded, lower-cased), with every
    /// feature family on it as without placements, instead of one part per path and pair. Pairs
    /// that need more than percent-decoding (HTML/XML references, JS escapes, overlong UTF-8)
    /// and Base64 forms are still read on their own too, libinjection still looks at each
    /// pair, and the method stays a part. Windows cover the text up to `max_bytes`, so there is
    /// no tail bypass. The full-data recipe's features were chosen on this reading; on CSIC 2010,
    /// with the other whole-request readings on, it gave the student 90.9–95.5 % TPR at FPR
    /// ≤ 1 % on validation in five runs, the per-pair reading 91.4 % in one (EVALUATION.md, "The
    /// whole request on full CSIC"). Off by default (and then not written into the artifact, so
    /// older artifacts keep their hash and their reading).
    #[serde(default, skip_serializing_if = "is_false")]
    pub request_line_whole: bool,
    /// In the view of single parts (what a part model reads: [`crate::Featurizer::part_vectors`]),
    /// read a named part by its value alone: `?name=` / `name=` are not read, so a model of
    /// single parts cannot take a parameter, header or cookie name (`q`, `sig2` of a search
    /// engine's Referer) for an attack sign; the placement mark and the public priors are
    /// read as before, and the whole-request view still reads names. The `Host` header is not
    /// a part of that view (the site's own name, which an access log does not record). Off by default (and then
    /// not written into the artifact, so older artifacts keep their hash and their reading).
    #[serde(default, skip_serializing_if = "is_false")]
    pub part_values_only: bool,
    /// Known header values, in thousandths: a header value (a `hdr:` placement's name and
    /// value, a cookie pair included) that at least this share of the featurizer's corpus (the
    /// public requests) carries is read as its name and `pl:<placement>=known` only, not as
    /// the n-grams of its value. The site's clients send the same User-Agent, Accept and
    /// Accept-Language strings with every request: hundreds of constant n-grams that carry
    /// nothing and dilute the request's own features in every vector. A value an attacker
    /// changes is not known and is read whole; libinjection still looks at a known value. The
    /// table (the known values) is part of the artifact. Poisoning: a value repeated in this
    /// share of the public traffic becomes known, so keep the share well above what one client
    /// sends (10 = 1 %). Off when absent (and then not written into the artifact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_header_permille: Option<u32>,
    /// A header value is also known ([`PlacementConfig::known_header_permille`], or a value
    /// the featurizer was fitted to know, [`crate::Featurizer::fit_with_known_headers`]) when
    /// it equals a known value but for its numbers: each run of 1 to
    /// [`KNOWN_DIGIT_RUN_MAX`] ASCII digits reads as one `0` on both sides. A browser's
    /// User-Agent changes its version numbers every few weeks (the 839 User-Agents of
    /// `data/public/user-agents.txt` have 83 such shapes, which cover 288 of 300 User-Agents
    /// of another source; Google's iOS app writes a 9-digit build number); anything but digits
    /// still has to match, and a longer run of digits is read as it is, so neither an attack
    /// string nor a long number hides in a known shape.
    /// Off by default (and then not written into the artifact).
    #[serde(default, skip_serializing_if = "is_false")]
    pub known_digit_runs: bool,
}

/// Longest run of digits [`PlacementConfig::known_digit_runs`] reads as one `0`.
pub const KNOWN_DIGIT_RUN_MAX: usize = 16;

/// `value` with each run of 1 to [`KNOWN_DIGIT_RUN_MAX`] ASCII digits replaced by one `0`
/// ([`PlacementConfig::known_digit_runs`]); borrowed when it has no digit.
pub fn collapse_digit_runs(value: &str) -> std::borrow::Cow<'_, str> {
    if !value.bytes().any(|b| b.is_ascii_digit()) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len());
    collapse_digit_runs_into(value, &mut out);
    std::borrow::Cow::Owned(out)
}

/// [`collapse_digit_runs`] written into `out` (cleared first), so that the proxy's per-request
/// lookup reuses one buffer.
fn collapse_digit_runs_into(value: &str, out: &mut String) {
    out.clear();
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i - start <= KNOWN_DIGIT_RUN_MAX {
                out.push('0');
            } else {
                out.push_str(&value[start..i]);
            }
        } else {
            // Copy up to the next digit (char boundaries: digits are ASCII).
            let start = i;
            while i < bytes.len() && !bytes[i].is_ascii_digit() {
                i += 1;
            }
            out.push_str(&value[start..i]);
        }
    }
}

/// The placement feature body of a known header value
/// ([`PlacementConfig::known_header_permille`]).
pub const KNOWN_VALUE_SHAPE: &str = "known";

/// The key of a header part in the known-values table.
pub(crate) fn known_key(p: &Part) -> Option<String> {
    p.placement
        .is_header()
        .then(|| format!("{}\t{}\t{}", p.placement.as_str(), p.name, p.value))
}

/// Shortest value [`PlacementConfig::opaque_tokens`] reads as an opaque token.
pub const OPAQUE_TOKEN_MIN_CHARS: usize = 16;

/// Whether `value` is an opaque token ([`PlacementConfig::opaque_tokens`]).
pub fn is_opaque_token(value: &str) -> bool {
    let (mut letters, mut digits) = (false, false);
    value.len() >= OPAQUE_TOKEN_MIN_CHARS
        && value.bytes().all(|b| {
            letters |= b.is_ascii_alphabetic();
            digits |= b.is_ascii_digit();
            b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
        })
        && letters
        && digits
}

/// The placement feature body of an opaque token ([`PlacementConfig::opaque_tokens`]).
pub const OPAQUE_TOKEN_SHAPE: &str = "token";

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for PlacementConfig {
    fn default() -> Self {
        PlacementConfig {
            max_parts: 512,
            max_depth: 32,
            max_bytes: 256 * 1024,
            window_overlap_bytes: 512,
            parts_alone: false,
            referer_as_url: false,
            opaque_tokens: false,
            request_line_whole: false,
            part_values_only: false,
            known_header_permille: None,
            known_digit_runs: false,
        }
    }
}

impl PlacementConfig {
    /// The configuration of the view of single parts: pair by pair even where the model of
    /// whole requests reads the request line whole (a pair alone is what that view is for).
    pub(crate) fn part_view(&self) -> PlacementConfig {
        PlacementConfig {
            request_line_whole: false,
            ..self.clone()
        }
    }
}

/// Headers that frame the message rather than carry data.
const FRAMING_HEADERS: [&str; 3] = ["content-length", "transfer-encoding", "connection"];

/// One decoded value of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Part {
    /// Where it rides.
    pub placement: Placement,
    /// Its name (parameter, header, JSON key, XML element, multipart field), decoded and
    /// lower-cased; empty where there is none (path, method, plain-text body).
    pub name: String,
    /// The decoded, lower-cased value.
    pub value: String,
    /// The value is the Base64-decoded form of another part's value.
    pub encoded: bool,
    /// Decoding beyond percent-decoding (overlong UTF-8, HTML/XML references, JS escapes)
    /// changed the value: the seeds' normalized text (which only percent-decodes) does not show
    /// it as decoded ([`PlacementConfig::request_line_whole`] reads such a pair on its own too).
    #[serde(skip_serializing_if = "is_false")]
    pub deep: bool,
}

/// What [`split_request`] found, and which limits it reached.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Split {
    /// The parts, in request order (request line, headers, body).
    pub parts: Vec<Part>,
    /// More than `max_bytes` of input: the rest was not read.
    pub over_bytes: bool,
    /// More than `max_parts` parts: the rest were not read.
    pub over_parts: bool,
    /// Nesting deeper than `max_depth`: the deeper content was not read.
    pub over_depth: bool,
}

impl Split {
    /// Whether any limit was reached.
    pub fn limited(&self) -> bool {
        self.over_bytes || self.over_parts || self.over_depth
    }
}

/// Collects parts under the limits.
struct Collector<'c> {
    config: &'c PlacementConfig,
    /// Body fields not read.
    excluded: ExcludedFields<'c>,
    decode_rounds: usize,
    split: Split,
    bytes: usize,
    /// The parts read so far (not their Base64-decoded forms), by a keyed hash of (placement,
    /// name, value): a repeated identical part is read once and does not count against
    /// `max_parts` (padding by repetition). Keyed by hash, not by copies of the strings: the
    /// part's own strings are compared on a hit. Empty while the request has fewer than
    /// [`LINEAR_DEDUP_PARTS`] parts: those are compared one by one instead (no hashing for a
    /// typical request); filled with every part read once there are more (`hashing`).
    seen: HashMap<u64, usize, std::hash::BuildHasherDefault<Digest>>,
    /// Whether `seen` is in use.
    hashing: bool,
    /// The keys of those hashes (random per process, as a `HashSet`'s: the request chooses the
    /// strings).
    keys: std::hash::RandomState,
}

/// Up to this many parts, [`Collector::push`] finds a repeated part by comparing it with each
/// part read so far (at most this many comparisons, most ending at the placement or a length);
/// beyond, by the keyed hash (a request of many parts cannot make the check quadratic).
const LINEAR_DEDUP_PARTS: usize = 32;

/// A [`Collector`]'s hashes are already keyed SipHash digests: used as they are.
#[derive(Default)]
struct Digest(u64);

impl std::hash::Hasher for Digest {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl Collector<'_> {
    /// Counts `n` input bytes; false (and flagged) once past `max_bytes`.
    fn take_bytes(&mut self, n: usize) -> bool {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.config.max_bytes {
            self.split.over_bytes = true;
            return false;
        }
        true
    }

    fn full(&mut self) -> bool {
        if self.split.parts.len() >= self.config.max_parts {
            self.split.over_parts = true;
            return true;
        }
        false
    }

    /// Adds a part (raw bytes, decoded here) and, when its value is Base64 of printable text,
    /// the decoded form as a second part.
    fn push(&mut self, placement: Placement, name: &[u8], value: &[u8], form: bool) {
        if self.split.over_parts {
            return;
        }
        let name = decode_value(name, self.decode_rounds, form);
        let (value, deep) = decode_bytes_marked(value, self.decode_rounds, form);
        let decoded = std::str::from_utf8(&value)
            .ok()
            .and_then(|v| base64_text(v.trim()));
        let value = lowercase_owned(value);
        if self.read_before(placement, &name, &value) || self.full() {
            return;
        }
        self.split.parts.push(Part {
            placement,
            name,
            value,
            encoded: false,
            deep,
        });
        if let Some(text) = decoded {
            if self.full() {
                return;
            }
            let value = decode_value(text.as_bytes(), self.decode_rounds, false);
            // The name of the part just pushed (moved there, copied only for this rare case).
            let name = self.split.parts.last().map(|p| p.name.clone());
            self.split.parts.push(Part {
                placement,
                name: name.unwrap_or_default(),
                value,
                encoded: true,
                deep: false,
            });
        }
    }

    /// Whether a part (not Base64-decoded) with this placement, name and value was read
    /// already; if not, it is recorded as the next part to be pushed (a part that is then not
    /// pushed because the split is full ends the split's reading of new parts anyway: `full`
    /// stays true). Exact either way: compared one by one while there are few parts, else
    /// through the keyed hash of [`Collector::seen`], filled when the count first passes
    /// [`LINEAR_DEDUP_PARTS`].
    fn read_before(&mut self, placement: Placement, name: &str, value: &str) -> bool {
        let same =
            |p: &Part| !p.encoded && p.placement == placement && p.name == name && p.value == value;
        let parts = &self.split.parts;
        if parts.len() < LINEAR_DEDUP_PARTS && !self.hashing {
            return parts.iter().any(same);
        }
        if !self.hashing {
            self.hashing = true;
            for (k, p) in parts.iter().enumerate().filter(|(_, p)| !p.encoded) {
                let digest = self.digest(p.placement, &p.name, &p.value);
                self.seen.entry(digest).or_insert(k);
            }
        }
        let digest = self.digest(placement, name, value);
        if let Some(&k) = self.seen.get(&digest) {
            // The part with this hash, or (two parts' hashes equal) any part read so far.
            if same(&parts[k]) || parts.iter().any(same) {
                return true;
            }
        }
        self.seen.entry(digest).or_insert(parts.len());
        false
    }

    /// The keyed hash of a part's (placement, name, value).
    fn digest(&self, placement: Placement, name: &str, value: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.keys, (placement, name, value))
    }

    /// `a=1&b=2` pairs (query string, form body, or `;`-separated cookie pairs).
    fn pairs(&mut self, placement: Placement, bytes: &[u8], sep: u8, form: bool) {
        for pair in bytes.split(|&b| b == sep) {
            let pair = trim_ascii(pair);
            if pair.is_empty() {
                continue;
            }
            match pair.iter().position(|&b| b == b'=') {
                Some(eq) => self.push(placement, &pair[..eq], &pair[eq + 1..], form),
                None => self.push(placement, b"", pair, form),
            }
        }
    }
}

/// `value` without a leading `http://` or `https://` (any case) and without its query (from the
/// first `?` on).
fn url_without_scheme_and_query(value: &[u8]) -> &[u8] {
    let mut rest = value;
    for scheme in [&b"http://"[..], b"https://"] {
        if rest.len() >= scheme.len() && rest[..scheme.len()].eq_ignore_ascii_case(scheme) {
            rest = &rest[scheme.len()..];
            break;
        }
    }
    rest.iter()
        .position(|&b| b == b'?')
        .map_or(rest, |q| &rest[..q])
}

/// Splits a request into decoded, placement-tagged parts (see the module documentation).
pub fn split_request(
    req: &crate::RequestParts,
    config: &PlacementConfig,
    decode_rounds: usize,
    include_body: bool,
) -> Split {
    let mut c = Collector {
        config,
        excluded: req.excluded_fields,
        decode_rounds,
        split: Split::default(),
        bytes: 0,
        seen: HashMap::default(),
        hashing: false,
        keys: Default::default(),
    };
    // Request line.
    c.push(Placement::Method, b"", req.method.as_bytes(), false);
    let target = clip(req.target, config.max_bytes);
    c.take_bytes(req.target.len());
    {
        let (path, query) = match target.iter().position(|&b| b == b'?') {
            Some(q) => (&target[..q], Some(&target[q + 1..])),
            None => (target, None),
        };
        c.push(Placement::Path, b"", path, false);
        // The path is one part; a segment that is Base64 of text also gives its decoded form.
        for segment in path.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
            let bytes = decode_bytes(segment, decode_rounds, false);
            let decoded = std::str::from_utf8(&bytes)
                .ok()
                .and_then(|v| base64_text(v.trim()));
            if let Some(text) = decoded {
                if c.full() {
                    break;
                }
                let value = decode_value(text.as_bytes(), decode_rounds, false);
                c.split.parts.push(Part {
                    placement: Placement::Path,
                    name: String::new(),
                    value,
                    encoded: true,
                    deep: false,
                });
            }
        }
        if let Some(q) = query {
            c.pairs(Placement::Query, q, b'&', true);
        }
    }
    // Headers.
    // One buffer for every header's lower-cased name (not a new string per header).
    let mut lower = String::new();
    for (name, value) in req.headers.iter() {
        lower.clear();
        lower.push_str(name);
        lower.make_ascii_lowercase();
        if FRAMING_HEADERS.contains(&lower.as_str()) {
            continue;
        }
        if !c.take_bytes(name.len() + value.len()) {
            break;
        }
        let placement = Placement::of_header(&lower);
        if placement == Placement::HdrCookie {
            c.pairs(placement, value, b';', false);
        } else {
            let read = if placement == Placement::HdrReferer && config.referer_as_url {
                url_without_scheme_and_query(value)
            } else {
                value
            };
            c.push(placement, lower.as_bytes(), read, false);
            if placement == Placement::HdrReferer {
                // A URL: its query pairs too (each decoded, Base64 included).
                if let Some(q) = value.iter().position(|&b| b == b'?') {
                    c.pairs(placement, &value[q + 1..], b'&', true);
                }
            }
        }
    }
    // Body, by Content-Type.
    let Some(body) = req.body.filter(|b| include_body && !b.is_empty()) else {
        return c.split;
    };
    let room = config.max_bytes.saturating_sub(c.bytes);
    c.take_bytes(body.len());
    read_body(&mut c, req, clip(body, room));
    c.split
}

/// The body (within the byte bound), by its `Content-Type`.
fn read_body(c: &mut Collector, req: &crate::RequestParts, body: &[u8]) {
    let (content_type, mime) = content_type(req);
    if is_form(&mime, req) {
        c.pairs(Placement::Form, body, b'&', true);
    } else if mime == "multipart/form-data" {
        match boundary(&content_type) {
            Some(b) => multipart(c, body, b.as_bytes()),
            None => c.push(Placement::Text, b"", body, false),
        }
    } else if mime.contains("json") {
        if !json(c, body) {
            c.push(Placement::Text, b"", body, false);
        }
    } else if mime.contains("xml") {
        xml(c, body);
    } else {
        c.push(Placement::Text, b"", body, false);
    }
}

/// A request's `Content-Type` (lower-cased) and its media type (before any `;`), empty when absent.
fn content_type(req: &crate::RequestParts) -> (String, String) {
    let content_type = req
        .headers
        .get("content-type")
        .map(|v| String::from_utf8_lossy(v).to_ascii_lowercase())
        .unwrap_or_default();
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    (content_type, mime)
}

/// Whether a request's body is read as `application/x-www-form-urlencoded` pairs: its
/// Content-Type says so, or the request has no headers at all (a dataset without them, the seeds'
/// view).
pub(crate) fn body_is_form(req: &crate::RequestParts) -> bool {
    is_form(&content_type(req).1, req)
}

/// [`body_is_form`] with the media type already read.
fn is_form(mime: &str, req: &crate::RequestParts) -> bool {
    (mime.is_empty() && req.headers.is_empty()) || mime == "application/x-www-form-urlencoded"
}

fn clip(bytes: &[u8], n: usize) -> &[u8] {
    &bytes[..bytes.len().min(n)]
}

fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The `boundary` parameter of a (lower-cased) multipart Content-Type.
fn boundary(content_type: &str) -> Option<String> {
    header_params(content_type)
        .into_iter()
        .find_map(|(k, v)| (k == "boundary").then_some(v))
}

/// The parameters of a header value such as `form-data; name="a"; filename="x;y.txt"`: each
/// `(lower-cased name, value)` after the first item, a quoted value unquoted and `\"` read as a
/// quote (RFC 9110 §5.6.4 quoted-string; RFC 7578 §4.2). A `;` inside quotes belongs to
/// the value: split there, a file name `x;<payload>` hid the payload from the detector while the
/// application reads the name whole. Nothing is dropped: an unterminated quoted string runs to
/// the end, text after a closing quote is appended to the value, and `filename*`'s RFC 8187
/// `charset'language'` prefix is removed (its percent-encoding is decoded with every value).
fn header_params(v: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = v.chars().peekable();
    // The first item (`form-data`, the media type): up to the first `;` outside quotes.
    let mut quoted = false;
    for c in chars.by_ref() {
        match c {
            '"' => quoted = !quoted,
            ';' if !quoted => break,
            _ => {}
        }
    }
    while chars.peek().is_some() {
        let mut key = String::new();
        let mut value = String::new();
        let mut has_value = false;
        // The name, up to `=` (or `;`: a parameter without a value, skipped).
        for c in chars.by_ref() {
            match c {
                '=' => {
                    has_value = true;
                    break;
                }
                ';' => break,
                _ => key.push(c),
            }
        }
        if has_value {
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            if chars.next_if_eq(&'"').is_some() {
                while let Some(c) = chars.next() {
                    match c {
                        // `\"` is a quote inside the value; any other backslash is kept as
                        // sent (browsers do not escape them: `..\..\win.ini` stays whole).
                        '\\' if chars.next_if_eq(&'"').is_some() => value.push('"'),
                        '"' => break,
                        _ => value.push(c),
                    }
                }
            }
            // A token value, or whatever follows a closing quote, up to the next `;`.
            let mut rest = String::new();
            for c in chars.by_ref() {
                if c == ';' {
                    break;
                }
                rest.push(c);
            }
            let rest = rest.trim();
            if !rest.is_empty() && !value.is_empty() {
                value.push(' ');
            }
            value.push_str(rest);
        }
        let key = key.trim().to_ascii_lowercase();
        if !has_value || key.is_empty() {
            continue;
        }
        if key.ends_with('*') {
            // RFC 8187 ext-value: charset'language'percent-encoded.
            if let Some(encoded) = value.splitn(3, '\'').nth(2).map(str::to_string) {
                value = encoded;
            }
        }
        out.push((key, value));
    }
    out
}

/// `multipart/form-data`: each part's field value and its file name. (The boundary is compared
/// case-insensitively: the Content-Type was lower-cased; boundaries are in practice.)
fn multipart(c: &mut Collector, body: &[u8], boundary: &[u8]) {
    let mut delim = b"--".to_vec();
    delim.extend_from_slice(boundary);
    let lower: Vec<u8> = body.to_ascii_lowercase();
    let mut pos = match find(&lower, &delim) {
        Some(p) => {
            // A preamble before the first boundary is no part, but nothing goes unscored.
            if !trim_ascii(&body[..p]).is_empty() {
                c.push(Placement::Text, b"", &body[..p], false);
            }
            p + delim.len()
        }
        None => {
            c.push(Placement::Text, b"", body, false);
            return;
        }
    };
    loop {
        if lower[pos..].starts_with(b"--") {
            // The closing delimiter. Parsers that do not stop there read the parts after it, so
            // they are read too; any other epilogue as text.
            let after = pos + 2;
            match find(&lower[after..], &delim) {
                Some(next) => {
                    pos = after + next + delim.len();
                    continue;
                }
                None => {
                    if !trim_ascii(&body[after..]).is_empty() {
                        c.push(Placement::Text, b"", &body[after..], false);
                    }
                    return;
                }
            }
        }
        let end = find(&lower[pos..], &delim).map_or(body.len(), |e| pos + e);
        let section = &body[pos..end];
        // Headers end at the first blank line (CRLF or bare LF).
        let (head, content) = match find(section, b"\r\n\r\n") {
            Some(h) => (&section[..h], &section[h + 4..]),
            None => match find(section, b"\n\n") {
                Some(h) => (&section[..h], &section[h + 2..]),
                None => (section, &b""[..]),
            },
        };
        let content = content
            .strip_suffix(b"\r\n")
            .or_else(|| content.strip_suffix(b"\n"))
            .unwrap_or(content);
        let (name, filenames) = multipart_names(head);
        if !c.excluded.contains(name.as_bytes()) {
            for filename in filenames {
                c.push(
                    Placement::MpFilename,
                    b"filename",
                    filename.as_bytes(),
                    false,
                );
            }
            c.push(Placement::MpField, name.as_bytes(), content, false);
        }
        if end >= body.len() || c.split.over_parts {
            return;
        }
        pos = end + delim.len();
    }
}

/// A multipart part's field name and file names, from its `Content-Disposition` headers (the
/// last `name` wins; every `filename` and `filename*`, in order).
fn multipart_names(head: &[u8]) -> (String, Vec<String>) {
    let mut name = String::new();
    let mut filenames = Vec::new();
    for line in String::from_utf8_lossy(head).lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if !k.trim().eq_ignore_ascii_case("content-disposition") {
            continue;
        }
        for (pk, pv) in header_params(v) {
            match pk.as_str() {
                "name" => name = pv,
                "filename" | "filename*" => filenames.push(pv),
                _ => {}
            }
        }
    }
    (name, filenames)
}

/// JSON body: every key and every string value (numbers, booleans and null are not text worth
/// scoring). Returns false when the body is not JSON (then it is read as text). Anything else
/// outside the strings — a single-quoted string, a bare word, a comment, text after the end —
/// is no JSON, but lenient readers (Gson by default, Jackson's `ALLOW_SINGLE_QUOTES`, JSON5)
/// take it as values: then the whole body is also read as text, so that nothing the application
/// may read goes unscored (`{'q': '<script>…'}` scored nothing before).
fn json(c: &mut Collector, body: &[u8]) -> bool {
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    if !matches!(start.map(|s| body[s]), Some(b'{') | Some(b'[') | Some(b'"')) {
        return false;
    }
    // Containers: whether each open one is an object, for key/value roles.
    let mut stack: Vec<bool> = Vec::new();
    let mut expect_key = false;
    let mut key: Vec<u8> = Vec::new();
    let mut deep = 0usize; // levels beyond max_depth (not recorded)
                           // The number of open containers where the value of an excluded key is being skipped: that
                           // value ends with the first string, scalar or container completed at this level.
    let mut skipping: Option<usize> = None;
    let mut i = start.unwrap_or(0);
    let mut buf = Vec::new();
    let mut stray = false;
    while i < body.len() {
        match body[i] {
            b'{' | b'[' => {
                if stack.len() >= c.config.max_depth {
                    c.split.over_depth = true;
                    deep += 1;
                } else {
                    stack.push(body[i] == b'{');
                    expect_key = body[i] == b'{';
                }
                i += 1;
            }
            b'}' | b']' => {
                if deep > 0 {
                    deep -= 1;
                } else {
                    stack.pop();
                    skipping = skipping.filter(|&level| stack.len() > level);
                }
                expect_key = false;
                i += 1;
            }
            b',' => {
                skipping = skipping.filter(|&level| deep > 0 || stack.len() != level);
                expect_key = stack.last() == Some(&true);
                i += 1;
            }
            b':' => {
                expect_key = false;
                i += 1;
            }
            b'"' => {
                i = json_string(body, i + 1, &mut buf);
                if deep == 0 && skipping.is_none() {
                    if expect_key && c.excluded.contains(&buf) {
                        skipping = Some(stack.len());
                    } else if expect_key {
                        key = buf.clone();
                        c.push(Placement::JsonKey, b"", &key, false);
                    } else {
                        let name = if stack.last() == Some(&true) {
                            key.clone()
                        } else {
                            Vec::new()
                        };
                        c.push(Placement::JsonValue, &name, &buf, false);
                    }
                } else if deep == 0 && skipping == Some(stack.len()) {
                    skipping = None;
                }
                if c.split.over_parts {
                    return true;
                }
            }
            b if b.is_ascii_whitespace() => i += 1,
            _ => {
                // A number or a literal, or something that is not JSON.
                let end = body[i..]
                    .iter()
                    .position(|b| b.is_ascii_whitespace() || b"{}[],:\"".contains(b))
                    .map_or(body.len(), |e| i + e);
                stray |= !is_json_scalar(&body[i..end]);
                skipping = skipping.filter(|&level| deep > 0 || stack.len() != level);
                i = end;
            }
        }
    }
    if stray {
        c.push(Placement::Text, b"", body, false);
    }
    true
}

/// `true`, `false`, `null` or a JSON number.
fn is_json_scalar(token: &[u8]) -> bool {
    matches!(token, b"true" | b"false" | b"null")
        || (token
            .first()
            .is_some_and(|b| b.is_ascii_digit() || *b == b'-')
            && token
                .iter()
                .all(|b| b.is_ascii_digit() || b"+-.eE".contains(b)))
}

/// Reads a JSON string starting after its opening quote into `out` (escapes undone, `\uXXXX`
/// including surrogate pairs as UTF-8); returns the index after the closing quote (or the end).
fn json_string(body: &[u8], mut i: usize, out: &mut Vec<u8>) -> usize {
    out.clear();
    while i < body.len() {
        match body[i] {
            b'"' => return i + 1,
            b'\\' if i + 1 < body.len() => {
                let e = body[i + 1];
                i += 2;
                match e {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'u' => match hex4(body, i) {
                        Some(hi) => {
                            i += 4;
                            let mut cp = u32::from(hi);
                            if (0xD800..0xDC00).contains(&cp) && body.get(i..i + 2) == Some(b"\\u")
                            {
                                if let Some(lo) = hex4(body, i + 2) {
                                    if (0xDC00..0xE000).contains(&lo) {
                                        cp = 0x10000
                                            + ((cp - 0xD800) << 10)
                                            + (u32::from(lo) - 0xDC00);
                                        i += 6;
                                    }
                                }
                            }
                            push_char(out, cp);
                        }
                        None => out.extend_from_slice(b"\\u"),
                    },
                    other => out.push(other),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    i
}

fn hex4(b: &[u8], i: usize) -> Option<u16> {
    let s = b.get(i..i + 4)?;
    let mut v = 0u16;
    for &d in s {
        v = v << 4 | u16::from(hex_value(d)?);
    }
    Some(v)
}

fn push_char(out: &mut Vec<u8>, cp: u32) {
    let c = char::from_u32(cp).unwrap_or('\u{fffd}');
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// XML / SOAP body: text (and CDATA, comments, the DOCTYPE's text) by element, attribute values.
/// Entities are decoded by [`decode_value`] (character references and the five predefined
/// names); a DOCTYPE's entity declarations are read as text, never resolved.
fn xml(c: &mut Collector, body: &[u8]) {
    let mut at = XmlPosition::default();
    let mut i = 0;
    while i < body.len() && !c.split.over_parts {
        let rest = &body[i..];
        i += if rest[0] != b'<' {
            xml_text(c, &at, rest)
        } else if let Some(n) = xml_special(c, &at, rest) {
            n
        } else if rest.starts_with(b"<!") {
            xml_doctype(c, &at, rest)
        } else {
            xml_tag(c, &mut at, rest)
        };
    }
}

/// Where the XML reader is: the open elements' depth, the last element opened (which names the
/// text after it), and the depth from which an excluded element's content is skipped.
#[derive(Default)]
struct XmlPosition {
    depth: usize,
    element: Vec<u8>,
    skip_from: Option<usize>,
}

/// Text up to the next tag (`rest` does not start with `<`); returns its length.
fn xml_text(c: &mut Collector, at: &XmlPosition, rest: &[u8]) -> usize {
    let end = rest.iter().position(|&b| b == b'<').unwrap_or(rest.len());
    let text = trim_ascii(&rest[..end]);
    if !text.is_empty() && at.depth <= c.config.max_depth && at.skip_from.is_none() {
        c.push(Placement::XmlText, &at.element, text, false);
    }
    end
}

/// A CDATA section, a comment or a processing instruction at the start of `rest`: read as the
/// current element's text; returns its length (`None`: `rest` starts with none of them).
fn xml_special(c: &mut Collector, at: &XmlPosition, rest: &[u8]) -> Option<usize> {
    for (open, close) in [
        (&b"<![CDATA["[..], &b"]]>"[..]),
        (b"<!--", b"-->"),
        (b"<?", b"?>"),
    ] {
        if rest.starts_with(open) {
            let inner = &rest[open.len()..];
            let end = find(inner, close).unwrap_or(inner.len());
            // Every processing instruction but the XML declaration is read: its data is what
            // a `<?php ... ?>` smuggled into a document carries.
            let declaration = open == b"<?"
                && inner.len() >= 4
                && inner[..3].eq_ignore_ascii_case(b"xml")
                && inner[3].is_ascii_whitespace();
            if !declaration && at.skip_from.is_none() {
                c.push(Placement::XmlText, &at.element, &inner[..end], false);
            }
            return Some(open.len() + (end + close.len()).min(inner.len()));
        }
    }
    None
}

/// A DOCTYPE (with its internal subset) at the start of `rest`: read as text, never resolved;
/// returns its length.
fn xml_doctype(c: &mut Collector, at: &XmlPosition, rest: &[u8]) -> usize {
    let mut level = 0i32;
    let mut end = rest.len();
    for (k, &b) in rest.iter().enumerate() {
        match b {
            b'<' => level += 1,
            b'>' => {
                level -= 1;
                if level == 0 {
                    end = k + 1;
                    break;
                }
            }
            _ => {}
        }
    }
    if at.skip_from.is_none() {
        let text = &rest[2..end.saturating_sub(1).max(2)];
        c.push(Placement::XmlText, b"doctype", text, false);
    }
    end
}

/// A tag at the start of `rest` (`<name attr="v" ...>`, `</name>`, `<name/>`): moves `at`
/// and reads the attributes; returns its length. An excluded element's content is skipped
/// until the depth drops below it again.
fn xml_tag(c: &mut Collector, at: &mut XmlPosition, rest: &[u8]) -> usize {
    let end = find_tag_end(rest);
    let tag = &rest[1..end.saturating_sub(1).max(1)];
    if tag.starts_with(b"/") {
        at.depth = at.depth.saturating_sub(1);
        at.skip_from = at.skip_from.filter(|&from| at.depth >= from);
        return end;
    }
    let self_closing = tag.ends_with(b"/");
    let tag = tag.strip_suffix(b"/").unwrap_or(tag);
    let name_end = tag
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .unwrap_or(tag.len());
    at.element = tag[..name_end].to_vec();
    let excluded = at.skip_from.is_some() || c.excluded.contains_xml(&at.element);
    if !self_closing {
        at.depth += 1;
        if at.depth > c.config.max_depth {
            c.split.over_depth = true;
        }
        if excluded && at.skip_from.is_none() {
            at.skip_from = Some(at.depth);
        }
    }
    if at.depth <= c.config.max_depth && !excluded {
        xml_attributes(c, &tag[name_end..]);
    }
    end
}

/// End (exclusive) of a tag starting at `rest[0] == b'<'`: the first `>` outside quotes.
fn find_tag_end(rest: &[u8]) -> usize {
    let mut quote = None;
    for (k, &b) in rest.iter().enumerate().skip(1) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), b) if b == q => quote = None,
            (None, b'>') => return k + 1,
            _ => {}
        }
    }
    rest.len()
}

fn xml_attributes(c: &mut Collector, mut s: &[u8]) {
    loop {
        s = trim_ascii(s);
        let Some(eq) = s.iter().position(|&b| b == b'=') else {
            return;
        };
        let name = trim_ascii(&s[..eq]).to_vec();
        let rest = trim_ascii(&s[eq + 1..]);
        let (value, next) = match rest.first() {
            Some(&q @ (b'"' | b'\'')) => {
                let end = rest[1..]
                    .iter()
                    .position(|&b| b == q)
                    .map_or(rest.len(), |e| e + 1);
                (&rest[1..end], &rest[(end + 1).min(rest.len())..])
            }
            _ => {
                let end = rest
                    .iter()
                    .position(|b| b.is_ascii_whitespace())
                    .unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        if !c.excluded.contains_xml(&name) {
            c.push(Placement::XmlAttr, &name, value, false);
        }
        if next.len() >= s.len() || c.split.over_parts {
            return;
        }
        s = next;
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// Decodes a raw value the ways attackers encode (see the module documentation) and lower-cases
/// it; `form`: `+` is a space in the first round (query strings and form bodies).
pub fn decode_value(raw: &[u8], rounds: usize, form: bool) -> String {
    lowercase_owned(decode_bytes(raw, rounds, form))
}

/// [`lowercase`] of bytes the caller no longer needs: ASCII (most values) in place.
fn lowercase_owned(bytes: Vec<u8>) -> String {
    if !bytes.is_ascii() {
        return lowercase(&bytes);
    }
    match String::from_utf8(bytes) {
        Ok(mut text) => {
            text.make_ascii_lowercase();
            text
        }
        Err(e) => lowercase(e.as_bytes()),
    }
}

fn lowercase(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    crate::push_lowercase_latin1_or_utf8(bytes, &mut text);
    text
}

/// [`decode_value`] before lower-casing (Base64 is case-sensitive).
fn decode_bytes(raw: &[u8], rounds: usize, form: bool) -> Vec<u8> {
    decode_bytes_marked(raw, rounds, form).0
}

/// [`decode_bytes`], and whether a step beyond percent-decoding changed anything.
fn decode_bytes_marked(raw: &[u8], rounds: usize, form: bool) -> (Vec<u8>, bool) {
    let mut deep = false;
    let mut cur = raw.to_vec();
    // Allocated on a value's first decoding step only (most values have none).
    let mut next = Vec::new();
    // decode_rounds 0 turns every decoding off, as on the seeds' path.
    for round in 0..rounds {
        let mut changed = crate::percent_decode_into(&cur, form && round == 0, &mut next);
        if changed {
            std::mem::swap(&mut cur, &mut next);
        }
        for step in [overlong_utf8, entities, js_escapes] {
            if step(&cur, &mut next) {
                std::mem::swap(&mut cur, &mut next);
                changed = true;
                deep = true;
            }
        }
        if !changed {
            break;
        }
    }
    (cur, deep)
}

/// Overlong UTF-8 (`C0 AF` for `/`, `E0 80 AF`): the code point it spells. Returns whether
/// anything changed.
fn overlong_utf8(input: &[u8], out: &mut Vec<u8>) -> bool {
    if !input.iter().any(|&b| b == 0xC0 || b == 0xC1 || b == 0xE0) {
        return false;
    }
    out.clear();
    let mut changed = false;
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        let cont = |k: usize| input.get(i + k).is_some_and(|&c| c & 0xC0 == 0x80);
        if (b == 0xC0 || b == 0xC1) && cont(1) {
            out.push(((b & 0x1F) << 6) | (input[i + 1] & 0x3F));
            i += 2;
            changed = true;
        } else if b == 0xE0 && cont(1) && cont(2) && input[i + 1] < 0xA0 {
            let cp = (u32::from(input[i + 1] & 0x3F) << 6) | u32::from(input[i + 2] & 0x3F);
            push_char(out, cp);
            i += 3;
            changed = true;
        } else {
            out.push(b);
            i += 1;
        }
    }
    changed
}

/// HTML/XML character references: `&lt; &gt; &amp; &quot; &apos; &nbsp;`, `&#39;`, `&#x27;` (the
/// `;` optional, as browsers accept). Returns whether anything changed.
fn entities(input: &[u8], out: &mut Vec<u8>) -> bool {
    if !input.contains(&b'&') {
        return false;
    }
    out.clear();
    let mut changed = false;
    let mut i = 0;
    while i < input.len() {
        if input[i] != b'&' {
            out.push(input[i]);
            i += 1;
            continue;
        }
        let rest = &input[i + 1..];
        let mut done = false;
        if let Some(num) = rest.strip_prefix(b"#") {
            let (hex, digits) = match num.first() {
                Some(b'x' | b'X') => (true, &num[1..]),
                _ => (false, num),
            };
            let len = digits
                .iter()
                .take(8)
                .take_while(|d| {
                    if hex {
                        d.is_ascii_hexdigit()
                    } else {
                        d.is_ascii_digit()
                    }
                })
                .count();
            if len > 0 {
                let s = std::str::from_utf8(&digits[..len]).unwrap_or("0");
                let cp = u32::from_str_radix(s, if hex { 16 } else { 10 }).unwrap_or(0xFFFD);
                push_char(out, cp);
                let mut used = 1 + usize::from(hex) + len;
                if rest.get(used) == Some(&b';') {
                    used += 1;
                }
                i += 1 + used;
                changed = true;
                done = true;
            }
        } else {
            for (name, ch) in [
                (&b"lt"[..], b'<'),
                (b"gt", b'>'),
                (b"amp", b'&'),
                (b"quot", b'"'),
                (b"apos", b'\''),
                (b"nbsp", b' '),
            ] {
                if rest.len() >= name.len() && rest[..name.len()].eq_ignore_ascii_case(name) {
                    out.push(ch);
                    let mut used = name.len();
                    if rest.get(used) == Some(&b';') {
                        used += 1;
                    }
                    i += 1 + used;
                    changed = true;
                    done = true;
                    break;
                }
            }
        }
        if !done {
            out.push(b'&');
            i += 1;
        }
    }
    changed
}

/// JavaScript / JSON escapes in any value: `\uXXXX`, `\u{X…}`, `\xXX`. Returns whether
/// anything changed.
fn js_escapes(input: &[u8], out: &mut Vec<u8>) -> bool {
    if !input.contains(&b'\\') {
        return false;
    }
    out.clear();
    let mut changed = false;
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'\\' {
            match input.get(i + 1) {
                Some(b'u' | b'U') => {
                    if let Some(v) = hex4(input, i + 2) {
                        push_char(out, u32::from(v));
                        i += 6;
                        changed = true;
                        continue;
                    }
                }
                Some(b'x' | b'X') => {
                    if let (Some(h), Some(l)) = (
                        input.get(i + 2).and_then(|&b| hex_value(b)),
                        input.get(i + 3).and_then(|&b| hex_value(b)),
                    ) {
                        out.push(h << 4 | l);
                        i += 4;
                        changed = true;
                        continue;
                    }
                }
                _ => {}
            }
        }
        out.push(input[i]);
        i += 1;
    }
    changed
}

/// Shortest value tried as Base64 (shorter ones are words as often as encodings).
pub const MIN_BASE64_CHARS: usize = 8;

/// The text a value encodes, when the value is (standard or URL-safe) Base64 — at least
/// [`MIN_BASE64_CHARS`] characters of the alphabet, correct padding — of printable UTF-8 text
/// (no control characters other than tab and line ends). Anything else (words, hex ids, binary)
/// gives `None`.
pub fn base64_text(value: &str) -> Option<String> {
    let v = value.as_bytes();
    if v.len() < MIN_BASE64_CHARS {
        return None;
    }
    let body = v
        .strip_suffix(b"==")
        .or_else(|| v.strip_suffix(b"="))
        .unwrap_or(v);
    if body.contains(&b'=') {
        return None;
    }
    if v.len() != body.len() && !v.len().is_multiple_of(4) {
        return None;
    }
    if body.len() % 4 == 1 {
        return None;
    }
    let sextet = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    // A value of digits only is a number. (Words and ids rarely decode to valid, printable
    // UTF-8, which is checked below.)
    if body.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Most values (a header with a space, a `.` or a `,`) are not Base64: no buffer for them.
    if !body.iter().all(|&b| sextet(b).is_some()) {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.chunks(4) {
        let mut acc = 0u32;
        for (k, &b) in chunk.iter().enumerate() {
            acc |= sextet(b)? << (18 - 6 * k);
        }
        let n = chunk.len() * 6 / 8;
        for k in 0..n {
            out.push((acc >> (16 - 8 * k)) as u8);
        }
    }
    let text = String::from_utf8(out).ok()?;
    let printable = text
        .chars()
        .all(|ch| !ch.is_control() || matches!(ch, '\t' | '\n' | '\r'));
    (printable && text.chars().any(|ch| !ch.is_whitespace())).then_some(text)
}

// ---------------------------------------------------------------------------------------------
// From parts to featurizer text, in windows

/// A request's segments as [`crate::Featurizer::transform_windows_segmented`] split them for
/// scoring, kept so that [`crate::Featurizer::placement_vectors_segmented`] (the audit line's
/// placement) does not split and read the request a second time. Opaque.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestSegments {
    /// The segments the windows were cut from.
    pub(crate) segments: Vec<Segment>,
    /// The split they were read from.
    pub(crate) split: Split,
    /// What the public priors called each part of `split`, where they were asked (one slot per
    /// part), so that an explanation of the same split does not run the detectors again.
    pub(crate) priors: Vec<Option<Priors>>,
}

/// One part as the featurizer reads it: its text, and its placement feature(s).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Segment {
    pub placement: Placement,
    /// `?name=value` for query and form pairs (so that value shapes read them as the seeds'
    /// query), `name=value` for other named parts, the value alone otherwise.
    pub text: String,
    /// Whether the value-shape family reads this text (query and form pairs).
    pub shapes: bool,
    /// Where the value begins in `text` (after `?name=` / `name=`; 0 for a part without a
    /// name).
    pub value_start: usize,
    /// Placement features (bodies after [`crate::PLACEMENT_PREFIX`]).
    pub marks: Marks,
    /// What the public priors call the value ([`Priors`]; all false where the family is off).
    pub priors: Priors,
}

/// A segment's placement features: `<placement>=<shape>`, and `b64=<shape>` for the
/// Base64-decoded form of a value; none for the request line read whole. Kept as their static
/// parts and joined only when read (into the caller's buffer), not as strings per segment:
/// every part of every request has them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Marks {
    /// `<placement>` (or none), then [`crate::BASE64_MARK`] (or none).
    heads: [Option<&'static str>; 2],
    /// The value's shape ([`crate::value_shape`], [`KNOWN_VALUE_SHAPE`] or
    /// [`OPAQUE_TOKEN_SHAPE`]).
    shape: &'static str,
}

impl Marks {
    /// `<placement>=<shape>`.
    fn of(placement: Placement, shape: &'static str) -> Self {
        Marks {
            heads: [Some(placement.as_str()), None],
            shape,
        }
    }

    /// These and `b64=<shape>`.
    fn with_base64(mut self) -> Self {
        self.heads[1] = Some(crate::BASE64_MARK);
        self
    }

    /// Calls `f` on each mark's body, in order, written into `buf`.
    pub(crate) fn for_each(&self, buf: &mut String, mut f: impl FnMut(&str)) {
        for head in self.heads.iter().flatten() {
            buf.clear();
            buf.push_str(head);
            buf.push('=');
            buf.push_str(self.shape);
            f(buf);
        }
    }
}

/// What the public priors call a value: libinjection's two detectors
/// ([`crate::FeaturizerConfig::libinjection`]) and the four attack signatures
/// ([`crate::FeaturizerConfig::signatures`]), each false where its family is off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Priors {
    /// [`libinjection_flags`], in [`crate::LIBINJECTION_FEATURES`] order.
    pub li: [bool; 2],
    /// [`crate::signature_flags`], in [`crate::SIGNATURE_FEATURES`] order.
    pub sig: [bool; 4],
}

impl Priors {
    /// What the families that are on call `value`.
    pub fn of(value: &[u8], libinjection: bool, signatures: bool) -> Priors {
        Priors {
            li: if libinjection {
                libinjection_flags(value)
            } else {
                [false; 2]
            },
            sig: if signatures {
                crate::signature_flags(value)
            } else {
                [false; 4]
            },
        }
    }

    /// The same with the families that are off cleared.
    fn masked(self, libinjection: bool, signatures: bool) -> Priors {
        Priors {
            li: self.li.map(|f| f && libinjection),
            sig: self.sig.map(|f| f && signatures),
        }
    }

    /// Either's flags.
    fn or(self, other: Priors) -> Priors {
        let mut out = self;
        for (a, b) in out.li.iter_mut().zip(other.li) {
            *a |= b;
        }
        for (a, b) in out.sig.iter_mut().zip(other.sig) {
            *a |= b;
        }
        out
    }

    /// The placement-feature bodies that fired.
    pub fn fired(&self) -> impl Iterator<Item = &'static str> + '_ {
        let li = self.li.iter().zip(crate::LIBINJECTION_FEATURES);
        let sig = self.sig.iter().zip(crate::SIGNATURE_FEATURES);
        li.chain(sig).filter(|(f, _)| **f).map(|(_, body)| body)
    }
}

/// Whether libinjection calls `value` SQL injection and XSS, in
/// [`crate::LIBINJECTION_FEATURES`] order. libinjection is not expected to panic on any input
/// (the crate's property tests feed it arbitrary bytes); should it ever, the value counts as
/// both, so a crafted input that crashes the detector does not pass as clean.
pub fn libinjection_flags(value: &[u8]) -> [bool; 2] {
    // A value of ASCII letters and digits only is one token (a number, a word, or a number
    // followed by a word) with no quote, comment or tag: libinjection calls none of them
    // injection (checked over every such value of up to 3 characters, every keyword of its
    // table with numeric prefixes and suffixes, and 3 million random ones; the test
    // `alphanumeric_values_are_never_injection` keeps checking it), and most parameter values
    // (ids, quantities, flags) are such, so the detectors are not run on them.
    if value.iter().all(u8::is_ascii_alphanumeric) {
        return [false, false];
    }
    std::panic::catch_unwind(|| {
        [
            libinjectionrs::detect_sqli(value).is_injection(),
            libinjectionrs::detect_xss(value).is_injection(),
        ]
    })
    .unwrap_or([true, true])
}

/// A request's segments under `placements` (`pc`), and whether a limit of the split was
/// reached: [`split_request`] then [`split_segments`].
pub(crate) fn request_segments(
    req: &crate::RequestParts,
    config: &crate::FeaturizerConfig,
    pc: &PlacementConfig,
    known: &KnownValues,
    line_text: Option<&str>,
) -> (Vec<Segment>, bool) {
    let kept = request_segments_kept(req, config, pc, known, line_text);
    let limited = kept.split.limited();
    (kept.segments, limited)
}

/// [`request_segments`], keeping the split and its parts' priors.
pub(crate) fn request_segments_kept(
    req: &crate::RequestParts,
    config: &crate::FeaturizerConfig,
    pc: &PlacementConfig,
    known: &KnownValues,
    line_text: Option<&str>,
) -> RequestSegments {
    let split = split_request(req, pc, config.decode_rounds, config.include_body);
    let mut priors = vec![None; split.parts.len()];
    let segments = split_segments(req, config, pc, known, line_text, &split, &mut priors);
    RequestSegments {
        segments,
        split,
        priors,
    }
}

/// The segments of `split` (a request's [`split_request`] under `pc`): [`segments`]; with
/// [`PlacementConfig::request_line_whole`], the request line and form body as one `request`
/// segment first, in place of their pairs (`line_text`: its text when the caller already
/// normalized it, read up to `max_bytes`). `priors`: what the public priors call each part of
/// the split, where known (one slot per part, filled here), so that a caller reading the same
/// split twice runs the detectors once per part.
pub(crate) fn split_segments(
    req: &crate::RequestParts,
    config: &crate::FeaturizerConfig,
    pc: &PlacementConfig,
    known: &KnownValues,
    line_text: Option<&str>,
    split: &Split,
    priors: &mut [Option<Priors>],
) -> Vec<Segment> {
    let read = Reading {
        opaque_tokens: pc.opaque_tokens,
        ..Reading::new(config, known)
    };
    if !pc.request_line_whole {
        return segments_where(split, |_| true, &read, priors);
    }
    let line = |p: &Part| {
        matches!(
            p.placement,
            Placement::Path | Placement::Query | Placement::Form
        ) && !p.encoded
            && !p.deep
    };
    let mut line_priors = Priors::default();
    if config.libinjection || config.signatures {
        for (p, slot) in split.parts.iter().zip(priors.iter_mut()) {
            if line(p) {
                line_priors = line_priors.or(*slot.get_or_insert_with(|| read.priors_of(p)));
            }
        }
    }
    let text = match line_text {
        Some(text) => text.to_owned(),
        None => {
            let form = crate::RequestParts {
                body: req.body.filter(|_| body_is_form(req)),
                ..*req
            };
            let mut scratch = crate::Scratch::default();
            crate::normalize::normalize_capped_into(config, &form, &mut scratch, pc.max_bytes);
            scratch.text
        }
    };
    let mut out = vec![Segment {
        placement: Placement::Request,
        text,
        shapes: true,
        value_start: 0,
        marks: Marks::default(),
        priors: line_priors,
    }];
    out.extend(segments_where(split, |p| !line(p), &read, priors));
    out
}

/// The known header values ([`PlacementConfig::known_header_permille`]): placement → name →
/// values, so that a part is looked up by reference (no key is built per header on the proxy's
/// hot path).
#[derive(Debug, Clone, Default)]
pub(crate) struct KnownValues {
    map: FxMap<&'static str, NameValues>,
    /// [`PlacementConfig::known_digit_runs`]: values are stored and looked up with their digit
    /// runs collapsed.
    digit_runs: bool,
    /// The site's most frequent paths (the rarity table's) with what every public prior calls
    /// each: a request's path is the same as many others', and libinjection on it costs as much
    /// as the rest of a typical request's request line.
    paths: FxMap<String, Priors>,
}

/// Most paths whose public priors [`KnownValues::with_paths`] computes ahead (the most
/// frequent): a bound on the work and memory of loading a bundle of a site with many paths.
pub(crate) const MAX_KNOWN_PATHS: usize = 4096;

/// A placement's known header names, their known values, and what the public priors call each
/// value (computed once, with every family, when the table is built: the same values recur in
/// every request, and libinjection on a User-Agent or Accept value costs more than the rest of
/// a request).
type NameValues = FxMap<String, FxMap<String, Priors>>;

/// The table's maps hash with FxHash, as the vocabulary does ([`crate::FxHasher`]): their keys
/// are the artifact's, inserted once; a request's values are only looked up (three lookups per
/// header, on every request).
type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<crate::FxHasher>>;

impl KnownValues {
    /// From [`known_key`]s (`placement`, name and value joined by tabs); a key of an unknown
    /// placement is skipped. With `digit_runs`, each value is stored with its digit runs
    /// collapsed ([`collapse_digit_runs`]); its priors are those of the value as given.
    pub(crate) fn from_keys<'k>(
        keys: impl IntoIterator<Item = &'k String>,
        digit_runs: bool,
    ) -> Self {
        let mut map: FxMap<&'static str, NameValues> = FxMap::default();
        for key in keys {
            let mut fields = key.splitn(3, '\t');
            let (Some(placement), Some(name), Some(value)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let Some(p) = Placement::ALL.into_iter().find(|p| p.as_str() == placement) else {
                continue;
            };
            let stored = if digit_runs {
                collapse_digit_runs(value).into_owned()
            } else {
                value.to_owned()
            };
            map.entry(p.as_str())
                .or_default()
                .entry(name.to_owned())
                .or_default()
                .entry(stored)
                .or_insert_with(|| Priors::of(value.as_bytes(), true, true));
        }
        KnownValues {
            map,
            digit_runs,
            paths: FxMap::default(),
        }
    }

    /// With the public priors of the [`MAX_KNOWN_PATHS`] most frequent of `paths` (path →
    /// number of requests; ties by path) computed once, for [`Reading`] to look up.
    pub(crate) fn with_paths<'p>(
        mut self,
        paths: impl IntoIterator<Item = (&'p String, &'p u32)>,
    ) -> Self {
        let mut paths: Vec<(&String, &u32)> = paths.into_iter().collect();
        paths.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        self.paths = paths
            .into_iter()
            .take(MAX_KNOWN_PATHS)
            .map(|(path, _)| (path.clone(), Priors::of(path.as_bytes(), true, true)))
            .collect();
        self
    }

    /// When `p` is a known header value: what every public prior calls it ([`Priors`]).
    pub(crate) fn get(&self, p: &Part) -> Option<Priors> {
        if self.map.is_empty() || !p.placement.is_header() {
            return None;
        }
        let values = self
            .map
            .get(p.placement.as_str())
            .and_then(|names| names.get(p.name.as_str()))?;
        if self.digit_runs && p.value.bytes().any(|b| b.is_ascii_digit()) {
            // One buffer per thread: no allocation per header on the proxy's request path.
            thread_local! {
                static COLLAPSED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
            }
            COLLAPSED.with_borrow_mut(|buf| {
                collapse_digit_runs_into(&p.value, buf);
                values.get(buf.as_str()).copied()
            })
        } else {
            values.get(p.value.as_str()).copied()
        }
    }
}

/// How [`segments`] reads parts.
pub(crate) struct Reading<'k> {
    pub libinjection: bool,
    pub signatures: bool,
    pub opaque_tokens: bool,
    pub known: &'k KnownValues,
}

impl<'k> Reading<'k> {
    /// What the families this reading has on call `p`'s value (a known path's from the table:
    /// the same function of the same string, computed once).
    fn priors_of(&self, p: &Part) -> Priors {
        if p.placement == Placement::Path && !self.known.paths.is_empty() {
            if let Some(priors) = self.known.paths.get(p.value.as_str()) {
                return priors.masked(self.libinjection, self.signatures);
            }
        }
        Priors::of(p.value.as_bytes(), self.libinjection, self.signatures)
    }

    /// How `config` reads parts (`opaque_tokens` only under `placements`).
    pub(crate) fn new(config: &crate::FeaturizerConfig, known: &'k KnownValues) -> Self {
        Reading {
            libinjection: config.libinjection,
            signatures: config.signatures,
            opaque_tokens: config
                .placements
                .as_ref()
                .is_some_and(|pc| pc.opaque_tokens),
            known,
        }
    }
}

/// The segments of a split request. A part repeated with the same placement and text counts
/// once: repeating a benign pair (`a=1&a=1&…`) would otherwise dilute the weight of an attack
/// in the same window (padding).
/// With `libinjection`, each segment also records what libinjection calls its value.
pub(crate) fn segments(split: &Split, read: &Reading) -> Vec<Segment> {
    segments_with_priors(split, read, &mut vec![None; split.parts.len()])
}

/// [`segments`] with `priors` (one slot per part of `split`; a filled slot is what
/// [`Reading::priors_of`] gives for that part, an empty one is filled).
pub(crate) fn segments_with_priors(
    split: &Split,
    read: &Reading,
    priors: &mut [Option<Priors>],
) -> Vec<Segment> {
    segments_where(split, |_| true, read, priors)
}

/// The segments of the view of single parts under [`PlacementConfig::part_values_only`]: each
/// named part's text cut to its value (the value-shape family, which reads names, off).
/// The `Host` header is not a part of this view: its value is the site's own name, the same on
/// every request, which a part model trained on an access log (which does not record it) has
/// never seen; the whole-request view still reads it.
pub(crate) fn values_only(segments: &mut Vec<Segment>) {
    segments.retain(|s| !(s.placement == Placement::HdrOther && s.text.starts_with("host=")));
    for seg in segments.iter_mut() {
        seg.text.drain(..seg.value_start);
        seg.value_start = 0;
        seg.shapes = false;
    }
}

/// [`segments`] of the parts of `split` that `keep` keeps; `priors` as in [`split_segments`].
fn segments_where(
    split: &Split,
    keep: impl Fn(&Part) -> bool,
    read: &Reading,
    priors: &mut [Option<Priors>],
) -> Vec<Segment> {
    let Reading {
        libinjection,
        signatures,
        opaque_tokens,
        known,
    } = *read;
    // The parts not Base64-decoded are distinct already: `split_request` reads a repeated one
    // once, and the other callers' splits have one part. Only decoded forms can repeat (two
    // encodings of one text), and only they are looked up (no set, no hashing, for most
    // requests).
    let mut seen_decoded = std::collections::HashSet::new();
    split
        .parts
        .iter()
        .zip(priors.iter_mut())
        .filter(|(p, _)| keep(p))
        .filter(|(p, _)| {
            !p.encoded || seen_decoded.insert((p.placement, p.name.as_str(), p.value.as_str()))
        })
        .map(|(p, slot)| {
            let pair = matches!(p.placement, Placement::Query | Placement::Form);
            if let Some(known_priors) = known.get(p) {
                // Its name is read, its value (the same in a share of all traffic) is not;
                // the public priors still look at it (once, when the table was built).
                let priors = known_priors.masked(libinjection, signatures);
                let text = [p.name.as_str(), "="].concat();
                return Segment {
                    placement: p.placement,
                    value_start: text.len(),
                    text,
                    shapes: false,
                    marks: Marks::of(p.placement, KNOWN_VALUE_SHAPE),
                    priors,
                };
            }
            if opaque_tokens && is_opaque_token(&p.value) {
                // Its name is read (a renamed cookie shows), its random value is not.
                let text = match (pair, p.name.is_empty()) {
                    (_, true) => String::new(),
                    (true, false) => ["?", p.name.as_str(), "="].concat(),
                    (false, false) => [p.name.as_str(), "="].concat(),
                };
                return Segment {
                    placement: p.placement,
                    value_start: text.len(),
                    text,
                    shapes: false,
                    marks: Marks::of(p.placement, OPAQUE_TOKEN_SHAPE),
                    priors: Priors::default(),
                };
            }
            let text = if pair {
                if p.name.is_empty() {
                    ["?", p.value.as_str()].concat()
                } else {
                    ["?", p.name.as_str(), "=", p.value.as_str()].concat()
                }
            } else if p.name.is_empty() {
                p.value.clone()
            } else {
                [p.name.as_str(), "=", p.value.as_str()].concat()
            };
            let shape = crate::value_shape(&p.value);
            let mut marks = Marks::of(p.placement, shape);
            if p.encoded {
                marks = marks.with_base64();
            }
            let priors = *slot.get_or_insert_with(|| read.priors_of(p));
            Segment {
                placement: p.placement,
                value_start: text.len() - p.value.len(),
                text,
                shapes: pair,
                marks,
                priors,
            }
        })
        .collect()
}

/// A byte range of one segment inside a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece {
    pub segment: usize,
    pub start: usize,
    pub end: usize,
}

/// Groups segments into windows of at most `window_bytes` bytes of text; a segment longer than
/// that is cut into overlapping pieces (`overlap` bytes, at character boundaries), each in a
/// window of its own. Every byte of every segment is in some window.
pub(crate) fn windows(
    segments: &[Segment],
    window_bytes: usize,
    overlap: usize,
) -> Vec<Vec<Piece>> {
    let window_bytes = window_bytes.max(1);
    let overlap = overlap.min(window_bytes / 2);
    let mut out: Vec<Vec<Piece>> = Vec::new();
    let mut current: Vec<Piece> = Vec::new();
    let mut used = 0usize;
    for (k, seg) in segments.iter().enumerate() {
        let len = seg.text.len();
        if len <= window_bytes {
            if used + len > window_bytes && !current.is_empty() {
                out.push(std::mem::take(&mut current));
                used = 0;
            }
            current.push(Piece {
                segment: k,
                start: 0,
                end: len,
            });
            used += len;
            continue;
        }
        if !current.is_empty() {
            out.push(std::mem::take(&mut current));
            used = 0;
        }
        let text = &seg.text;
        let mut start = 0usize;
        loop {
            let mut end = (start + window_bytes).min(len);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            out.push(vec![Piece {
                segment: k,
                start,
                end,
            }]);
            if end >= len {
                break;
            }
            let mut next = end.saturating_sub(overlap).max(start + 1);
            while !text.is_char_boundary(next) {
                next += 1;
            }
            start = next;
        }
    }
    if !current.is_empty() || out.is_empty() {
        out.push(current);
    }
    out
}

/// Calls `f` on every feature of a window: each piece's configured features (value shapes only
/// for the first piece of a query/form pair; `plain` is `config` without them) and, for a
/// segment's first piece, its placement features. Returns the number of features.
pub(crate) fn for_each_window_feature(
    config: &crate::FeaturizerConfig,
    plain: &crate::FeaturizerConfig,
    segments: &[Segment],
    window: &[Piece],
    gram: &mut String,
    mut f: impl FnMut(crate::FeatureKind, &str),
) -> u32 {
    let mut count = 0u32;
    for piece in window {
        let seg = &segments[piece.segment];
        let first = piece.start == 0;
        let cfg = if seg.shapes && first { config } else { plain };
        let text = &seg.text[piece.start..piece.end];
        count += crate::for_each_configured_feature(text, cfg, gram, &mut f);
        if first {
            seg.marks.for_each(&mut String::new(), |mark| {
                count += 1;
                f(crate::FeatureKind::Placement, mark);
            });
            for body in seg.priors.fired() {
                count += 1;
                f(crate::FeatureKind::Placement, body);
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Featurizer, FeaturizerConfig, RequestParts};

    /// A request whose path is one of the site's known paths gets the same vectors with the
    /// path's public priors read from the table as computed on the request (paths that
    /// libinjection and the signatures flag included).
    #[test]
    fn known_paths_carry_the_priors_computed_on_the_request() {
        let config = FeaturizerConfig {
            top_k: 500,
            params: true,
            rarity_min_count: Some(1),
            libinjection: true,
            signatures: true,
            placements: Some(PlacementConfig {
                request_line_whole: true,
                ..PlacementConfig::default()
            }),
            ..FeaturizerConfig::default()
        };
        let docs = [
            RequestParts::get("/a/../../etc/passwd?x=1"),
            RequestParts::get("/q'%20or%201=1--?y=2"),
            RequestParts::get("/%3Cscript%3Ealert(1)%3C/script%3E"),
            RequestParts::get("/plain/page.jsp?z=3"),
        ];
        let f = Featurizer::fit(config, docs.iter().copied()).expect("fit");
        let flagged = |p: &Priors| p.li.iter().chain(&p.sig).any(|&b| b);
        assert!(f.known.paths.values().filter(|p| flagged(p)).count() >= 3);
        let mut computed = f.clone();
        computed.known.paths.clear();
        for req in &docs {
            let pc = f.config().placements.clone().unwrap_or_default();
            let split = split_request(req, &pc, f.config().decode_rounds, true);
            let path = split.parts.iter().find(|p| p.placement == Placement::Path);
            assert!(f.known.paths.contains_key(&path.expect("path").value));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            f.transform_windows(req, &mut a);
            computed.transform_windows(req, &mut b);
            assert_eq!(a, b);
            assert_eq!(f.part_vectors(req), computed.part_vectors(req));
        }
    }
}
