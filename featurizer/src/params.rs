//! Parameter-aware features and public-relative rarity features (opt-in:
//! [`crate::FeaturizerConfig::params`] and [`crate::FeaturizerConfig::rarity_min_count`]).
//!
//! Why: most of CSIC 2010's anomalous requests are one tampered parameter (an e-mail with three
//! `@`, an 11-character DNI, `precio=2445?`), which character n-grams of the whole request show
//! only weakly. These features name the parameter:
//!
//! - `m:<method>`, `path:<path>` (the normalized path, before the first `?`);
//! - per `&`-separated pair of the query and form body: `n:<name>`, `s:<name>=<pattern>`
//!   ([`value_pattern`]: letter runs → `a`, each digit → `9`, other characters kept),
//!   `l:<name>=<bucket>` (⌊log₂(1 + characters)⌋) and `c:<name>=<char>` for each distinct
//!   character of the value that is neither a letter nor a digit.
//!
//! With [`crate::FeaturizerConfig::rarity_min_count`] = m, the featurizer also stores a
//! [`RarityTable`] fitted on its (public) corpus: how many corpus requests have each
//! (path, name, pattern) and each path. A request then gets `rare:<name>` and `rare:any` for each
//! parameter whose (path, name, pattern) occurs fewer than m times in that table, and
//! `unseen:path` when its path does. Teachers on small private shards cannot learn every
//! parameter's normal pattern, but they can learn that "a pattern the public traffic hardly has"
//! matters (issue 16: noiseless 250-teacher ensemble 78 % → 88 % TPR at 1 % FPR). The table
//! holds only public requests' paths, names and patterns (no private data), and is part of the
//! artifact (and of its content hash).
//!
//! With [`crate::FeaturizerConfig::odd_permille`] (levels τ in thousandths, e.g. `[10, 50]` for
//! 1 % and 5 %) the table also
//! counts, per parameter name, which character classes (letters, digits, each other character)
//! and length buckets its public values have, which names each path has and which methods: a
//! request gets `odd:<kind><τ` when one of its parameters has a character class, a length
//! bucket or a name (or the request a method) that fewer than a share τ of the public requests
//! with that name (path) have — or fewer than `rarity_min_count` of them —, for kind `char`,
//! `len`, `name`, `method`, and `odd:any<τ` when any kind is odd at τ. Why shares and not
//! counts: the public pool holds attacks too, and a site's attacks repeat (CSIC 2010 tampers the
//! same parameters the same way again and again), so a tampering that occurs 3 or more times
//! in the public pool is no longer "rare" by count, while it stays a small share of the values
//! of that name; and a site's benign values vary (random passwords) so exact patterns are rare
//! for benign requests too (`rare:any` fires on ~28 % of CSIC's benign requests), while their
//! character classes are not. Measured on CSIC 2010 (20 % public, the rest scored):
//! `odd:any<0.01` on 49 % of attacks and 0.5 % of benign requests, `odd:any<0.05` on 79 % and
//! 3.5 % (issue 16). Small teachers learn "odd" from a few dozen attacks; the public table
//! holds no private data.
//!
//! With [`crate::FeaturizerConfig::odd_shape_path`] two more kinds count at the same levels:
//! `odd:shape<τ`, a parameter's [`value_pattern`] that fewer than τ of the name's public values
//! have — only for names whose 3 most common patterns cover at least [`SHAPE_CONCENTRATION`] of
//! their values (postal codes, DNIs, card numbers, e-mails; not free text or passwords, whose
//! benign values rarely repeat a pattern) — and `odd:path<τ`, a path that fewer than τ of the
//! public requests have (a share, so a `.bak` or `.inc` the public pool repeats a few times stays
//! odd, where `unseen:path` counts). On CSIC 2010 (same 20 % public prototype) they take
//! `odd:any<0.01` from 49 % to 65 % of attacks, at 1.1 % of benign requests instead of 0.5 %.
//!
//! Every feature is written `p:` + its body in the vocabulary ([`crate::FeatureKind::Param`]).
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Longest value pattern kept, in characters (longer ones end with `…`).
pub const MAX_PATTERN_CHARS: usize = 40;
/// Longest parameter name or path kept in a feature, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// At most this many `rare:<name>` features are reserved in the vocabulary (the names most
/// frequent in the corpus); a rarer name still counts in `rare:any`.
pub const MAX_RARE_NAMES: usize = 256;
/// Body of the "some parameter is rare" feature.
pub const RARE_ANY: &str = "rare:any";
/// Body of the "path rare in the public corpus" feature.
pub const UNSEEN_PATH: &str = "unseen:path";
/// Prefix of the per-name rarity features.
pub const RARE_PREFIX: &str = "rare:";
/// Prefix of the share-based oddity features ([`crate::FeaturizerConfig::odd_permille`]).
pub const ODD_PREFIX: &str = "odd:";
/// The oddity kinds, in vocabulary order (per level): `method`, `name`, `char`, `len`, then
/// `any`.
pub const ODD_KINDS: [&str; 5] = ["method", "name", "char", "len", "any"];

/// The extra oddity kinds of [`crate::FeaturizerConfig::odd_shape_path`], in vocabulary order
/// after [`ODD_KINDS`]' own (per level): `shape` (a value pattern few of the name's public values
/// have, for names whose values keep to a few patterns) and `path` (a path few public requests
/// have).
pub const ODD_SHAPE_PATH_KINDS: [&str; 2] = ["shape", "path"];
/// A name's value patterns count for `odd:shape` only when its 3 most common patterns cover at
/// least this share of its public values (a format-bound field such as a postal code, a DNI or
/// an e-mail; free text and passwords have no usual pattern).
pub const SHAPE_CONCENTRATION: f64 = 0.8;
/// Body of the renamed-parameter feature ([`crate::FeaturizerConfig::odd_name_variants`]).
pub const ODD_NAME_VARIANT: &str = "odd:name-variant";
/// A name is a variant of another name of its path when it is one edit away from it and the
/// other is at least this many times as frequent among the path's public requests.
pub const NAME_VARIANT_RATIO: u32 = 10;

/// Whether `a` and `b` are one edit apart: one character appended, removed or replaced. Runs
/// per parameter on the proxy's path, so it walks the characters without allocating.
pub fn one_edit_apart(a: &str, b: &str) -> bool {
    let (count_a, count_b) = (a.chars().count(), b.chars().count());
    let (short, long, extra) = if count_a <= count_b {
        (a, b, count_b - count_a)
    } else {
        (b, a, count_a - count_b)
    };
    match extra {
        0 => {
            short
                .chars()
                .zip(long.chars())
                .filter(|(x, y)| x != y)
                .count()
                == 1
        }
        1 => {
            // Matching equal characters greedily finds the first mismatch; the one extra
            // character is skipped there, and the rest must match.
            let mut rest = short.chars().peekable();
            let mut skipped = false;
            for c in long.chars() {
                if rest.peek() == Some(&c) {
                    rest.next();
                } else if !skipped {
                    skipped = true;
                } else {
                    return false;
                }
            }
            rest.next().is_none()
        }
        _ => false,
    }
}

/// The body of the oddity feature of `kind` (one of [`ODD_KINDS`]) at level `permille`
/// thousandths: `odd:<kind><<share>`, e.g. `odd:char<0.01` for 10.
pub fn odd_feature(kind: &str, permille: u32) -> String {
    format!("{ODD_PREFIX}{kind}<{}", f64::from(permille) / 1000.0)
}

/// The character class of a value's character in the oddity table: `a` for a letter, `9` for
/// a digit, the character itself otherwise.
fn char_class(c: char) -> char {
    if c.is_alphabetic() {
        'a'
    } else if c.is_numeric() {
        '9'
    } else {
        c
    }
}

/// How a feature vector is normalized ([`crate::FeaturizerConfig::norm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Norm {
    /// Σ|w| = 1 (the seeds'; required when the student-side privatizer adds Lap(1/ρ), whose
    /// analysis assumes ‖x‖₁ ≤ 1).
    #[default]
    L1,
    /// Σw² = 1 (the usual TF-IDF norm; better for linear models on many features).
    L2,
}

/// Writes the pattern of a (normalized) parameter value into `out`: each maximal run of letters
/// becomes one `a`, each digit a `9`, every other character stays as it is; at most
/// [`MAX_PATTERN_CHARS`] characters, then `…`. So `juan pérez` → `a a`, `12345678z` → `99999999a`,
/// `a@b.com` → `a@a.a`, `2445?` → `9999?`. Digits stay one per digit because their count is the
/// format (a DNI has 8); letter runs collapse because names and words vary in length.
pub fn value_pattern(value: &str, out: &mut String) {
    out.clear();
    let mut chars = 0usize;
    let mut in_letters = false;
    for c in value.chars() {
        if c.is_alphabetic() {
            if in_letters {
                continue;
            }
            in_letters = true;
        } else {
            in_letters = false;
        }
        if chars == MAX_PATTERN_CHARS {
            out.push('…');
            return;
        }
        chars += 1;
        out.push(if c.is_alphabetic() {
            'a'
        } else if c.is_numeric() {
            '9'
        } else {
            c
        });
    }
}

/// ⌊log₂(1 + characters)⌋ of a value: 0 for empty, 1 for 1–2 characters, 2 for 3–6, ...
pub fn length_bucket(value: &str) -> u32 {
    (value.chars().count() as u64 + 1).ilog2()
}

/// The first `max` characters of `s`.
fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        // At most `max` bytes, so at most `max` characters.
        return s;
    }
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The path (before the first `?`) and the `&`-separated pairs (name, value) of normalized
/// text; a pair without `=` has the empty value.
pub fn split_request(text: &str) -> (&str, impl Iterator<Item = (&str, &str)>) {
    let (path, query) = text.split_once('?').unwrap_or((text, ""));
    let pairs = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")));
    (clip(path, MAX_NAME_CHARS * 2), pairs)
}

/// Reusable buffers of the parameter features.
#[derive(Debug, Default, Clone)]
pub struct ParamScratch {
    feature: String,
    pattern: String,
    key: String,
}

/// Calls `f(body)` for each parameter-aware feature of a request (method and normalized text),
/// and, when `rarity` is given, for each rarity feature. Returns the number of features.
pub fn for_each_param_feature(
    method: &str,
    text: &str,
    params: bool,
    rarity: Option<&RarityLookup>,
    scratch: &mut ParamScratch,
    f: impl FnMut(&str),
) -> u32 {
    let ParamScratch {
        feature,
        pattern,
        key,
    } = scratch;
    let mut out = FeatureSink {
        feature,
        count: 0,
        f,
    };
    let (path, pairs) = split_request(text);
    if params {
        emit_method_path(method, path, pattern, &mut out);
    }
    let mut any_rare = false;
    let mut name_variant = false;
    let oddity = rarity.filter(|r| !r.odd_shares.is_empty());
    // The smallest share of each oddity kind (method, name, char, len, shape, path) over the
    // request.
    let mut odd = request_odd_shares(oddity, path, method, key);
    for (name, value) in pairs {
        let name = clip(name, MAX_NAME_CHARS);
        value_pattern(value, pattern);
        if let Some(r) = oddity {
            if !name_variant && !r.path_name_lists.is_empty() {
                name_variant = r.is_name_variant(path, name);
            }
            r.param_shares(path, name, value, key, &mut odd);
            if r.odd_shape_path {
                odd[4] = odd[4].min(r.pattern_share(name, pattern, key));
            }
        }
        if params {
            emit_pair_features(name, value, pattern, &mut out);
        }
        if let Some(r) = rarity {
            if r.shape_count(path, name, pattern, key) < r.min_count {
                any_rare = true;
                out.emit(&[RARE_PREFIX, name]);
            }
        }
    }
    if let Some(r) = rarity {
        emit_request_rarity(r, path, any_rare, name_variant, &odd, &mut out);
    }
    out.count
}

/// The oddity shares before the first parameter: the method's and, with `odd_shape_path`, the
/// path's; every other kind starts at infinity (below no level until a parameter lowers it).
#[inline]
fn request_odd_shares(
    oddity: Option<&RarityLookup>,
    path: &str,
    method: &str,
    key: &mut String,
) -> [f64; 6] {
    let mut odd = [f64::INFINITY; 6];
    if let Some(r) = oddity {
        odd[0] = r.method_share(path, method, key);
        if r.odd_shape_path {
            odd[5] = r.path_share(path);
        }
    }
    odd
}

/// Where [`for_each_param_feature`] writes its features: each is assembled from its parts in
/// one reused buffer (no allocation per feature), counted and handed to the caller's `f`.
struct FeatureSink<'s, F> {
    feature: &'s mut String,
    count: u32,
    f: F,
}

impl<F: FnMut(&str)> FeatureSink<'_, F> {
    #[inline]
    fn emit(&mut self, parts: &[&str]) {
        self.feature.clear();
        for p in parts {
            self.feature.push_str(p);
        }
        self.count += 1;
        (self.f)(self.feature);
    }
}

/// The request's `m:<method>` (lower-cased, at most 16 characters) and `path:<path>` features;
/// `pattern` is the buffer the method is lower-cased in.
#[inline]
fn emit_method_path<F: FnMut(&str)>(
    method: &str,
    path: &str,
    pattern: &mut String,
    out: &mut FeatureSink<'_, F>,
) {
    pattern.clear();
    for c in clip(method, 16).chars() {
        pattern.push(c.to_ascii_lowercase());
    }
    out.emit(&["m:", pattern]);
    out.emit(&["path:", path]);
}

/// One parameter's features: its name, `name=pattern` (`pattern` is the value's
/// [`value_pattern`]), `name=length bucket`, and `name=c` for each distinct special character
/// of the value.
#[inline]
fn emit_pair_features<F: FnMut(&str)>(
    name: &str,
    value: &str,
    pattern: &str,
    out: &mut FeatureSink<'_, F>,
) {
    out.emit(&["n:", name]);
    out.emit(&["s:", name, "=", pattern]);
    let bucket = length_bucket(value);
    let mut digits = [0u8; 10];
    out.emit(&["l:", name, "=", u32_str(bucket, &mut digits)]);
    // Each distinct special character once, in order of first appearance (ASCII ones
    // remembered in a bit set, others by searching the value before them).
    let mut ascii_seen = 0u128;
    for (i, c) in value.char_indices() {
        if c.is_alphanumeric() {
            continue;
        }
        if c.is_ascii() {
            let bit = 1u128 << (c as u32);
            if ascii_seen & bit != 0 {
                continue;
            }
            ascii_seen |= bit;
        } else if value[..i].contains(c) {
            continue;
        }
        let mut buf = [0u8; 4];
        out.emit(&["c:", name, "=", c.encode_utf8(&mut buf)]);
    }
}

/// The rarity features of the whole request, after its parameters': `rare:any` (when
/// `any_rare`), `unseen:path`, the oddity features of each level whose share in `odd` is below
/// it (and `odd:any` at that level when one is), and `odd:name-variant`.
#[inline]
fn emit_request_rarity<F: FnMut(&str)>(
    r: &RarityLookup,
    path: &str,
    any_rare: bool,
    name_variant: bool,
    odd: &[f64; 6],
    out: &mut FeatureSink<'_, F>,
) {
    if any_rare {
        out.emit(&[RARE_ANY]);
    }
    if r.path_count(path) < r.min_count {
        out.emit(&[UNSEEN_PATH]);
    }
    for (level, &tau) in r.odd_shares.iter().enumerate() {
        let mut any = false;
        for (kind, &share) in odd[..4].iter().enumerate() {
            if share < tau {
                any = true;
                out.emit(&[&r.odd_tokens[level][kind]]);
            }
        }
        if r.odd_shape_path {
            for (kind, &share) in odd[4..].iter().enumerate() {
                if share < tau {
                    any = true;
                    out.emit(&[&r.odd_shape_path_tokens[level][kind]]);
                }
            }
        }
        if any {
            out.emit(&[&r.odd_tokens[level][4]]);
        }
    }
    if name_variant {
        out.emit(&[ODD_NAME_VARIANT]);
    }
}

fn u32_str(v: u32, buf: &mut [u8; 10]) -> &str {
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("0")
}

fn shape_key(path: &str, name: &str, pattern: &str, key: &mut String) {
    key.clear();
    key.push_str(path);
    key.push('\t');
    key.push_str(name);
    key.push('\t');
    key.push_str(pattern);
}

/// [`RarityTable::count`]'s map of paths.
const MAP_PATHS: u8 = 6;
/// [`RarityTable::count`]'s map of (path, name, pattern) shapes.
const MAP_SHAPES: u8 = 7;

/// How much each client may add to a [`RarityTable`] ([`RarityTable::add_from_client`]): every
/// key at most `per_client` times per client. Held while counting only; the table keeps counts,
/// never a client.
#[derive(Debug, Default)]
pub struct ClientCaps {
    per_client: u32,
    ids: std::collections::HashMap<String, u32>,
    /// (client id, hash of map and key) → times counted.
    counted: std::collections::HashMap<(u32, u64), u32>,
}

impl ClientCaps {
    /// Each client counts each key at most `per_client` times (at least once).
    pub fn new(per_client: u32) -> Self {
        ClientCaps {
            per_client: per_client.max(1),
            ..Default::default()
        }
    }

    fn id(&mut self, client: &str) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(client.to_owned()).or_insert(next)
    }

    /// Whether client `id` may count `key` of `map` once more (and counts it if so).
    fn admit(&mut self, id: u32, map: u8, key: &str) -> bool {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (map, key).hash(&mut h);
        let n = self.counted.entry((id, h.finish())).or_insert(0);
        if *n >= self.per_client {
            return false;
        }
        *n += 1;
        true
    }
}

/// How often each (path, parameter name, value pattern) and each path occurs in the corpus the
/// featurizer was fitted on (the public side): the stored form of the rarity features.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RarityTable {
    /// `rare:` when a count is below this (the 3).
    pub min_count: u32,
    /// `path \t name \t pattern` → number of corpus requests with it.
    pub shapes: BTreeMap<String, u32>,
    /// path → number of corpus requests with it.
    pub paths: BTreeMap<String, u32>,
    /// The oddity levels τ in thousandths ([`crate::FeaturizerConfig::odd_permille`]); empty:
    /// no oddity features, and none of the oddity counts below (not written when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub odd_permille: Vec<u32>,
    /// name → number of corpus requests with a parameter of that name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, u32>,
    /// `name \t class` → number of corpus requests with a value of that name holding a
    /// character of that class (`a` letter, `9` digit, else the character).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub name_classes: BTreeMap<String, u32>,
    /// `name \t length bucket` → number of corpus requests with such a value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub name_lengths: BTreeMap<String, u32>,
    /// `path \t name` → number of corpus requests of that path with that name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub path_names: BTreeMap<String, u32>,
    /// `path \t method` → number of corpus requests of that path with that method.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub path_methods: BTreeMap<String, u32>,
    /// [`crate::FeaturizerConfig::odd_shape_path`]: also `odd:shape<τ` and `odd:path<τ` (not
    /// written when off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub odd_shape_path: bool,
    /// With `odd_shape_path`: `name \t pattern` → corpus requests whose value of that name has
    /// that [`value_pattern`] (not written when empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub name_patterns: BTreeMap<String, u32>,
    /// [`crate::FeaturizerConfig::odd_name_variants`]: also `odd:name-variant`, from
    /// `path_names` (not written when off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub odd_name_variants: bool,
}

impl RarityTable {
    /// An empty table.
    pub fn new(min_count: u32) -> Self {
        RarityTable {
            min_count,
            ..Default::default()
        }
    }

    /// With the oddity levels `odd_permille` (thousandths, ascending, each in 1..1000; empty
    /// for none).
    pub fn with_odd_permille(mut self, odd_permille: Vec<u32>) -> Self {
        self.odd_permille = odd_permille;
        self
    }

    /// With (or without) the `shape` and `path` oddity kinds (needs oddity levels).
    pub fn with_odd_shape_path(mut self, on: bool) -> Self {
        self.odd_shape_path = on;
        self
    }

    /// With (or without) the renamed-parameter feature (needs oddity levels).
    pub fn with_odd_name_variants(mut self, on: bool) -> Self {
        self.odd_name_variants = on;
        self
    }

    /// Counts one corpus request (method and normalized text); each key once per request.
    pub fn add(&mut self, method: &str, text: &str, scratch: &mut ParamScratch) {
        for (map, key) in self.request_keys(method, text, scratch) {
            self.count(map, key);
        }
    }

    /// [`Self::add`] for a request of `client`, where `clients` caps what each client adds: a
    /// key counts at most `clients.per_client` times per client, so one client repeating a
    /// value (a scanner, an attacker replaying a payload) cannot make it the site's own.
    pub fn add_from_client(
        &mut self,
        method: &str,
        text: &str,
        scratch: &mut ParamScratch,
        client: &str,
        clients: &mut ClientCaps,
    ) {
        let id = clients.id(client);
        for (map, key) in self.request_keys(method, text, scratch) {
            if clients.admit(id, map, &key) {
                self.count(map, key);
            }
        }
    }

    /// The keys one request adds to (each once): `(map, key)`, the map as [`Self::count`] reads it.
    fn request_keys(
        &self,
        method: &str,
        text: &str,
        scratch: &mut ParamScratch,
    ) -> Vec<(u8, String)> {
        let (path, pairs) = split_request(text);
        let mut keys: Vec<(u8, String)> = vec![(MAP_PATHS, path.to_owned())];
        let odd = !self.odd_permille.is_empty();
        if odd {
            let mut key = format!("{path}\t");
            push_method_key(method, &mut key);
            keys.push((4, key));
        }
        for (name, value) in pairs {
            if odd {
                let name = clip(name, MAX_NAME_CHARS);
                keys.push((0, name.to_owned()));
                keys.push((3, format!("{path}\t{name}")));
                keys.push((2, format!("{name}\t{}", length_bucket(value))));
                for c in value.chars() {
                    keys.push((1, format!("{name}\t{}", char_class(c))));
                }
            }
            value_pattern(value, &mut scratch.pattern);
            if odd && self.odd_shape_path {
                let name = clip(name, MAX_NAME_CHARS);
                keys.push((5, format!("{name}\t{}", scratch.pattern)));
            }
            shape_key(
                path,
                clip(name, MAX_NAME_CHARS),
                &scratch.pattern,
                &mut scratch.key,
            );
            keys.push((MAP_SHAPES, scratch.key.clone()));
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Adds one to `key` of `map` (0 names, 1 name classes, 2 name lengths, 3 path names,
    /// 4 path methods, 5 name patterns, [`MAP_PATHS`], [`MAP_SHAPES`]).
    fn count(&mut self, map: u8, key: String) {
        let map = match map {
            0 => &mut self.names,
            1 => &mut self.name_classes,
            2 => &mut self.name_lengths,
            3 => &mut self.path_names,
            4 => &mut self.path_methods,
            5 => &mut self.name_patterns,
            MAP_PATHS => &mut self.paths,
            _ => &mut self.shapes,
        };
        *map.entry(key).or_default() += 1;
    }

    /// The parameter names that get their own `rare:<name>` feature: the
    /// [`MAX_RARE_NAMES`] names with the most corpus requests (ties by name).
    pub fn reserved_names(&self) -> Vec<String> {
        let mut by_name: BTreeMap<&str, u64> = BTreeMap::new();
        for (k, &c) in &self.shapes {
            let mut parts = k.split('\t');
            if let (Some(_), Some(name)) = (parts.next(), parts.next()) {
                *by_name.entry(name).or_default() += u64::from(c);
            }
        }
        let mut names: Vec<(&str, u64)> = by_name.into_iter().collect();
        names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        names
            .into_iter()
            .take(MAX_RARE_NAMES)
            .map(|(n, _)| n.to_owned())
            .collect()
    }

    /// The names whose 3 most common value patterns cover at least [`SHAPE_CONCENTRATION`] of
    /// their corpus values (the only ones `odd:shape` looks at), with their number of values.
    fn pattern_bound_names(&self) -> crate::VocabIndex {
        let mut by_name: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for (k, &c) in &self.name_patterns {
            if let Some((name, _)) = k.split_once('\t') {
                by_name.entry(name).or_default().push(c);
            }
        }
        by_name
            .into_iter()
            .filter_map(|(name, mut counts)| {
                let of = self.names.get(name).copied().unwrap_or(0);
                counts.sort_unstable_by(|a, b| b.cmp(a));
                let top: u64 = counts.iter().take(3).map(|&c| u64::from(c)).sum();
                (of >= self.min_count && top as f64 >= SHAPE_CONCENTRATION * f64::from(of))
                    .then(|| (name.into(), of))
            })
            .collect()
    }

    /// Per path, its names with the number of public requests of the path that have each
    /// (what a renamed parameter is compared with).
    fn path_name_lists(&self) -> std::collections::HashMap<Box<str>, Vec<(Box<str>, u32)>> {
        let mut lists: std::collections::HashMap<Box<str>, Vec<(Box<str>, u32)>> =
            Default::default();
        for (k, &c) in &self.path_names {
            if let Some((path, name)) = k.split_once('\t') {
                lists.entry(path.into()).or_default().push((name.into(), c));
            }
        }
        lists
    }

    /// The lookup form (hash maps) of the table.
    pub fn lookup(&self) -> RarityLookup {
        let index = |m: &BTreeMap<String, u32>| -> crate::VocabIndex {
            m.iter().map(|(k, &v)| (k.as_str().into(), v)).collect()
        };
        RarityLookup {
            odd_shares: self
                .odd_permille
                .iter()
                .map(|&p| f64::from(p) / 1000.0)
                .collect(),
            odd_tokens: self
                .odd_permille
                .iter()
                .map(|&p| ODD_KINDS.map(|kind| odd_feature(kind, p)))
                .collect(),
            odd_shape_path: self.odd_shape_path,
            odd_shape_path_tokens: self
                .odd_permille
                .iter()
                .map(|&p| ODD_SHAPE_PATH_KINDS.map(|kind| odd_feature(kind, p)))
                .collect(),
            requests: self.paths.values().map(|&c| u64::from(c)).sum(),
            pattern_names: self.pattern_bound_names(),
            name_patterns: index(&self.name_patterns),
            names: index(&self.names),
            name_classes: index(&self.name_classes),
            name_lengths: index(&self.name_lengths),
            path_names: index(&self.path_names),
            path_methods: index(&self.path_methods),
            path_name_lists: if self.odd_name_variants {
                self.path_name_lists()
            } else {
                Default::default()
            },
            min_count: self.min_count,
            shapes: self
                .shapes
                .iter()
                .map(|(k, &v)| (k.as_str().into(), v))
                .collect(),
            paths: self
                .paths
                .iter()
                .map(|(k, &v)| (k.as_str().into(), v))
                .collect(),
        }
    }
}

/// A [`RarityTable`] ready for lookups on the hot path.
#[derive(Debug, Clone, Default)]
pub struct RarityLookup {
    min_count: u32,
    shapes: crate::VocabIndex,
    paths: crate::VocabIndex,
    odd_shares: Vec<f64>,
    /// Per level, the feature body of each of [`ODD_KINDS`].
    odd_tokens: Vec<[String; 5]>,
    odd_shape_path: bool,
    /// Per level, the feature body of each of [`ODD_SHAPE_PATH_KINDS`].
    odd_shape_path_tokens: Vec<[String; 2]>,
    /// Corpus requests (for the path share).
    requests: u64,
    /// Names `odd:shape` looks at → their number of corpus values.
    pattern_names: crate::VocabIndex,
    name_patterns: crate::VocabIndex,
    names: crate::VocabIndex,
    name_classes: crate::VocabIndex,
    name_lengths: crate::VocabIndex,
    path_names: crate::VocabIndex,
    path_methods: crate::VocabIndex,
    /// With `odd_name_variants`: per path, its names and their counts.
    path_name_lists: std::collections::HashMap<Box<str>, Vec<(Box<str>, u32)>>,
}

/// Appends the method as the table keys it (lower case, at most 16 characters) to `key`,
/// without allocating (it runs per scored request).
fn push_method_key(method: &str, key: &mut String) {
    key.extend(clip(method, 16).chars().map(|c| c.to_ascii_lowercase()));
}

impl RarityLookup {
    fn shape_count(&self, path: &str, name: &str, pattern: &str, key: &mut String) -> u32 {
        shape_key(path, name, pattern, key);
        self.shapes.get(key.as_str()).copied().unwrap_or(0)
    }

    fn path_count(&self, path: &str) -> u32 {
        self.paths.get(path).copied().unwrap_or(0)
    }

    /// `count / of`, or 0 when `count` is below the minimum count (a share of a handful of
    /// requests says little; fewer than `min_count` is odd at any level).
    fn share(&self, count: u32, of: u32) -> f64 {
        if count < self.min_count || of == 0 {
            0.0
        } else {
            f64::from(count) / f64::from(of)
        }
    }

    fn count(map: &crate::VocabIndex, key: &str) -> u32 {
        map.get(key).copied().unwrap_or(0)
    }

    /// The share of the corpus requests with this path (0 below the minimum count).
    fn path_share(&self, path: &str) -> f64 {
        let count = self.path_count(path);
        if count < self.min_count || self.requests == 0 {
            0.0
        } else {
            f64::from(count) / self.requests as f64
        }
    }

    /// The share of the name's corpus values with this value pattern; ∞ for a name whose values
    /// keep to no few patterns (or that the corpus hardly has: `odd:name` covers it).
    fn pattern_share(&self, name: &str, pattern: &str, key: &mut String) -> f64 {
        let Some(&of) = self.pattern_names.get(name) else {
            return f64::INFINITY;
        };
        key.clear();
        key.push_str(name);
        key.push('\t');
        key.push_str(pattern);
        self.share(Self::count(&self.name_patterns, key), of)
    }

    /// The share of the path's corpus requests with this method (∞ for a path too rare to say:
    /// `unseen:path` covers it).
    fn method_share(&self, path: &str, method: &str, key: &mut String) -> f64 {
        let of = self.path_count(path);
        if of < self.min_count {
            return f64::INFINITY;
        }
        key.clear();
        key.push_str(path);
        key.push('\t');
        push_method_key(method, key);
        self.share(Self::count(&self.path_methods, key), of)
    }

    /// Whether `name` is a renamed parameter of `path`: one edit away from a name of the path
    /// that at least [`NAME_VARIANT_RATIO`] times as many of its public requests have.
    fn is_name_variant(&self, path: &str, name: &str) -> bool {
        let Some(names) = self.path_name_lists.get(path) else {
            return false;
        };
        // The path's few names, scanned: no key to build, no second hash lookup per parameter.
        let own = names
            .iter()
            .find(|(n, _)| &**n == name)
            .map_or(0, |&(_, c)| c)
            .max(1);
        names.iter().any(|(other, count)| {
            *count >= self.min_count
                && *count >= own.saturating_mul(NAME_VARIANT_RATIO)
                && one_edit_apart(name, other)
        })
    }

    /// Lowers `odd` ([method, name, char, len, shape, path]; this sets name, char, len) to the
    /// shares of one parameter: its name among
    /// the path's requests, and each character class and the length bucket of its value among
    /// the name's values.
    fn param_shares(
        &self,
        path: &str,
        name: &str,
        value: &str,
        key: &mut String,
        odd: &mut [f64; 6],
    ) {
        let of_path = self.path_count(path);
        if of_path >= self.min_count {
            key.clear();
            key.push_str(path);
            key.push('\t');
            key.push_str(name);
            odd[1] = odd[1].min(self.share(Self::count(&self.path_names, key), of_path));
        }
        let of_name = Self::count(&self.names, name);
        if of_name < self.min_count {
            // A name the corpus hardly has: its values' classes say nothing more.
            odd[1] = 0.0;
            return;
        }
        let mut seen_ascii = 0u128;
        for (i, c) in value.char_indices() {
            let class = char_class(c);
            if class.is_ascii() {
                let bit = 1u128 << (class as u32);
                if seen_ascii & bit != 0 {
                    continue;
                }
                seen_ascii |= bit;
            } else if value[..i].chars().any(|d| char_class(d) == class) {
                continue;
            }
            key.clear();
            key.push_str(name);
            key.push('\t');
            key.push(class);
            odd[2] = odd[2].min(self.share(Self::count(&self.name_classes, key), of_name));
        }
        key.clear();
        key.push_str(name);
        key.push('\t');
        let mut digits = [0u8; 10];
        key.push_str(u32_str(length_bucket(value), &mut digits));
        odd[3] = odd[3].min(self.share(Self::count(&self.name_lengths, key), of_name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(v: &str) -> String {
        let mut s = String::new();
        value_pattern(v, &mut s);
        s
    }

    #[test]
    fn patterns_collapse_letters_and_keep_digits_and_symbols() {
        assert_eq!(pattern("juan pérez"), "a a");
        assert_eq!(pattern("12345678z"), "99999999a");
        assert_eq!(pattern("1234567890z"), "9999999999a");
        assert_eq!(pattern("a@b.com"), "a@a.a");
        assert_eq!(pattern("a@b@c@d.es"), "a@a@a@a.a");
        assert_eq!(pattern("2445?"), "9999?");
        assert_eq!(pattern(""), "");
        assert_eq!(
            pattern(&"9".repeat(100)).chars().count(),
            MAX_PATTERN_CHARS + 1
        );
        assert_eq!(length_bucket(""), 0);
        assert_eq!(length_bucket("ab"), 1);
        assert_eq!(length_bucket("abc"), 2);
        assert_eq!(length_bucket(&"x".repeat(63)), 6);
    }

    fn features(method: &str, text: &str, rarity: Option<&RarityLookup>) -> Vec<String> {
        let mut out = Vec::new();
        let n = for_each_param_feature(
            method,
            text,
            true,
            rarity,
            &mut ParamScratch::default(),
            |f| out.push(f.to_owned()),
        );
        assert_eq!(n as usize, out.len());
        out
    }

    #[test]
    fn parameter_features_name_method_path_and_each_parameter() {
        let f = features("POST", "/shop/buy.jsp?id=2/&email=a@b.es", None);
        assert_eq!(
            f,
            [
                "m:post",
                "path:/shop/buy.jsp",
                "n:id",
                "s:id=9/",
                "l:id=1",
                "c:id=/",
                "n:email",
                "s:email=a@a.a",
                "l:email=2",
                "c:email=@",
                "c:email=.",
            ]
        );
    }

    #[test]
    fn special_characters_count_once_each_in_order_of_first_appearance() {
        let f = features("GET", "/p?v='a'';b€c€' ;~\u{7f}\u{7f}€", None);
        let specials: Vec<&str> = f.iter().filter_map(|f| f.strip_prefix("c:v=")).collect();
        assert_eq!(specials, ["'", ";", "€", " ", "~", "\u{7f}"]);
    }

    #[test]
    fn rarity_is_relative_to_the_fitted_corpus() {
        let mut table = RarityTable::new(3);
        let mut s = ParamScratch::default();
        for _ in 0..3 {
            table.add("GET", "/shop/buy.jsp?id=2&email=a@b.es", &mut s);
        }
        table.add("GET", "/shop/rare.jsp?id=2", &mut s);
        let lookup = table.lookup();
        let rare = |text: &str| -> Vec<String> {
            features("GET", text, Some(&lookup))
                .into_iter()
                .filter(|f| f.starts_with("rare:") || f.starts_with("unseen:"))
                .collect()
        };
        // Same pattern as three corpus requests: nothing rare.
        assert!(rare("/shop/buy.jsp?id=7&email=x@y.com").is_empty());
        // One tampered parameter: rare:<name> and rare:any.
        assert_eq!(
            rare("/shop/buy.jsp?id=7&email=x@y@z.com"),
            ["rare:email", "rare:any"]
        );
        // A path seen once (< 3): unseen:path, and its parameter is rare too.
        assert_eq!(
            rare("/shop/rare.jsp?id=2"),
            ["rare:id", "rare:any", "unseen:path"]
        );
        assert_eq!(table.reserved_names(), ["id", "email"].map(String::from));
        assert_eq!(table.paths["/shop/buy.jsp"], 3);
    }

    #[test]
    fn oddity_is_a_share_of_the_corpus_values_not_a_count() {
        // 200 corpus requests of one path: e-mails with letters, '@' and '.'; ids of 1 digit
        // (a '/' tampering 4 times: 2 %, so "rare" by count no more, but odd at 5 %); a PUT
        // 3 times (1.5 %); a tampered name `idA` 4 times (2 %).
        let mut table = RarityTable::new(3).with_odd_permille(vec![10, 50]);
        let mut s = ParamScratch::default();
        for k in 0..200 {
            let method = if k < 3 { "PUT" } else { "GET" };
            let id = if (10..14).contains(&k) { "7/" } else { "7" };
            let name = if (20..24).contains(&k) { "idA" } else { "id" };
            let text = format!("/shop/buy.jsp?{name}={id}&email=ab{k}@c.es");
            table.add(method, &text, &mut s);
        }
        let lookup = table.lookup();
        let odd = |method: &str, text: &str| -> Vec<String> {
            features(method, text, Some(&lookup))
                .into_iter()
                .filter(|f| f.starts_with(ODD_PREFIX))
                .collect()
        };
        // A value like the corpus's (digits in an e-mail are common: every corpus one has).
        assert!(odd("GET", "/shop/buy.jsp?id=3&email=zz9@q.org").is_empty());
        // A character class no corpus value of that name has: odd at both levels.
        assert_eq!(
            odd("GET", "/shop/buy.jsp?id=3'&email=zz@q.org"),
            [
                "odd:char<0.01",
                "odd:any<0.01",
                "odd:char<0.05",
                "odd:any<0.05"
            ]
        );
        // '/' in 2 % of the ids: odd at 5 %, not at 1 %.
        assert_eq!(
            odd("GET", "/shop/buy.jsp?id=3/&email=zz@q.org"),
            ["odd:char<0.05", "odd:any<0.05"]
        );
        // A length bucket no id has (1 character → bucket 1; 20 characters → bucket 4).
        assert_eq!(
            odd(
                "GET",
                &format!("/shop/buy.jsp?id={}&email=zz@q.org", "9".repeat(20))
            ),
            [
                "odd:len<0.01",
                "odd:any<0.01",
                "odd:len<0.05",
                "odd:any<0.05"
            ]
        );
        // A name 2 % of the path's requests have, and a method 1.5 % have.
        assert_eq!(
            odd("GET", "/shop/buy.jsp?idA=3&email=zz@q.org"),
            ["odd:name<0.05", "odd:any<0.05"]
        );
        assert_eq!(
            odd("PUT", "/shop/buy.jsp?id=3&email=zz@q.org"),
            ["odd:method<0.05", "odd:any<0.05"]
        );
        // A name the corpus never has: odd at every level.
        assert_eq!(
            odd("GET", "/shop/buy.jsp?id=3&x=1"),
            [
                "odd:name<0.01",
                "odd:any<0.01",
                "odd:name<0.05",
                "odd:any<0.05"
            ]
        );
        // The table round-trips through the artifact's serde form; without levels it has no
        // oddity counts (older artifacts keep their bytes).
        let json = serde_json::to_string(&table).unwrap();
        assert_eq!(serde_json::from_str::<RarityTable>(&json).unwrap(), table);
        let mut plain = RarityTable::new(3);
        plain.add("GET", "/shop/buy.jsp?id=1", &mut s);
        let json = serde_json::to_string(&plain).unwrap();
        assert!(
            !json.contains("odd_permille") && !json.contains("name_classes"),
            "{json}"
        );
    }

    #[test]
    fn shape_and_path_oddity_look_only_at_format_bound_names_and_rare_paths() {
        // 200 corpus requests: /a.jsp 196 times, /b.jsp 4 times (2 %). `cp` is 5 digits in
        // 196 of them and 6 digits in 4 (2 %: odd at 5 %); `txt` is free text of many patterns
        // (never looked at for its pattern).
        let table_with = |on: bool| {
            let mut table = RarityTable::new(3)
                .with_odd_permille(vec![10, 50])
                .with_odd_shape_path(on);
            let mut s = ParamScratch::default();
            for k in 0..200 {
                let path = if k < 4 { "/b.jsp" } else { "/a.jsp" };
                let cp = if (10..14).contains(&k) {
                    "123456"
                } else {
                    "12345"
                };
                let words = ["x", "x y", "x y z", "x-y", "x.y", "x 9", "9 x y", "x,y"][k % 8];
                table.add("GET", &format!("{path}?cp={cp}&txt={words}"), &mut s);
            }
            table
        };
        let table = table_with(true);
        let lookup = table.lookup();
        let odd = |text: &str| -> Vec<String> {
            features("GET", text, Some(&lookup))
                .into_iter()
                .filter(|f| f.starts_with(ODD_PREFIX))
                .collect()
        };
        assert!(odd("/a.jsp?cp=54321&txt=x y").is_empty());
        // A 4-digit cp: a pattern no corpus cp has (its length bucket, 2, is that of 5 and 6).
        assert_eq!(
            odd("/a.jsp?cp=4321&txt=x"),
            [
                "odd:shape<0.01",
                "odd:any<0.01",
                "odd:shape<0.05",
                "odd:any<0.05"
            ]
        );
        // 6 digits: 2 % of the cps, odd at 5 % only.
        assert_eq!(
            odd("/a.jsp?cp=654321&txt=x"),
            ["odd:shape<0.05", "odd:any<0.05"]
        );
        // Free text keeps to no few patterns: a new one is not odd.
        assert!(odd("/a.jsp?cp=54321&txt=x.y z").is_empty());
        // A path 2 % of the corpus requests have.
        assert_eq!(
            odd("/b.jsp?cp=54321&txt=x"),
            ["odd:path<0.05", "odd:any<0.05"]
        );
        // Off: the same requests get none of the new kinds, and the table stores no patterns.
        let plain = table_with(false);
        let plain_lookup = plain.lookup();
        for text in ["/a.jsp?cp=4321&txt=x", "/b.jsp?cp=54321&txt=x"] {
            assert!(
                features("GET", text, Some(&plain_lookup))
                    .iter()
                    .all(|f| !f.starts_with(ODD_PREFIX)),
                "{text}"
            );
        }
        assert!(plain.name_patterns.is_empty());
        let json = serde_json::to_string(&plain).unwrap();
        assert!(
            !json.contains("odd_shape_path") && !json.contains("name_patterns"),
            "{json}"
        );
        let json = serde_json::to_string(&table).unwrap();
        assert_eq!(serde_json::from_str::<RarityTable>(&json).unwrap(), table);
    }

    #[test]
    fn names_one_edit_apart() {
        for (a, b) in [
            ("login", "loginA"),
            ("loginA", "login"),
            ("pwd", "pwe"),
            ("id", "xid"),
        ] {
            assert!(one_edit_apart(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("login", "login"),
            ("id", "idAB"),
            ("pwd", "dwp"),
            ("nombre", "precio"),
        ] {
            assert!(!one_edit_apart(a, b), "{a} {b}");
        }
        assert!(one_edit_apart("año", "años") && one_edit_apart("añoX", "año"));
    }

    /// `odd:name-variant`: a name one edit from a name of the path at least ten times as
    /// frequent, even when the public pool repeats the renamed one (`loginA`, 3 % of the path's
    /// requests: not odd at 1 %); not for a name of its own standing, an unrelated name, or
    /// with the setting off (then nothing is written).
    #[test]
    fn a_renamed_parameter_is_a_name_variant_of_the_frequent_one() {
        let table_with = |on: bool| {
            let mut table = RarityTable::new(3)
                .with_odd_permille(vec![10])
                .with_odd_name_variants(on);
            let mut s = ParamScratch::default();
            for k in 0..100 {
                let login = if k < 3 { "loginA" } else { "login" };
                // `pw` and `pwd`: two names of their own, each on half the requests.
                let pw = if k % 2 == 0 { "pw" } else { "pwd" };
                table.add(
                    "POST",
                    &format!("/a.jsp?{login}=u{k}&{pw}=x&B1=Entrar"),
                    &mut s,
                );
            }
            table
        };
        let table = table_with(true);
        let lookup = table.lookup();
        let variant = |text: &str| {
            features("POST", text, Some(&lookup)).contains(&ODD_NAME_VARIANT.to_string())
        };
        assert!(variant("/a.jsp?loginA=u&pwd=x&B1=Entrar"));
        assert!(
            variant("/a.jsp?login=u&pwd=x&B2=Entrar"),
            "never seen, one edit from B1"
        );
        assert!(
            variant("/a.jsp?logi=u&pwd=x&B1=Entrar"),
            "a character removed"
        );
        assert!(!variant("/a.jsp?login=u&pwd=x&B1=Entrar"));
        assert!(
            !variant("/a.jsp?login=u&pw=x&B1=Entrar"),
            "pw and pwd are as frequent"
        );
        assert!(
            !variant("/a.jsp?login=u&pwd=x&B1=Entrar&zzz=1"),
            "unrelated name"
        );
        assert!(!variant("/b.jsp?loginA=u"), "another path");
        let json = serde_json::to_string(&table).unwrap();
        assert_eq!(serde_json::from_str::<RarityTable>(&json).unwrap(), table);

        let plain = table_with(false);
        let plain_lookup = plain.lookup();
        assert!(!features(
            "POST",
            "/a.jsp?loginA=u&pwd=x&B1=Entrar",
            Some(&plain_lookup)
        )
        .contains(&ODD_NAME_VARIANT.to_string()));
        assert!(!serde_json::to_string(&plain)
            .unwrap()
            .contains("odd_name_variants"));
    }
}
