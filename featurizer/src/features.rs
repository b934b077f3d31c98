//! The feature families: tokens and n-grams, character n-grams, parameter value shapes
//! ([`for_each_configured_feature`]), and the packed character n-gram table.
use super::*;

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
pub(crate) fn for_each_shape_feature(
    text: &str,
    gram: &mut String,
    mut f: impl FnMut(&str),
) -> u32 {
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
pub(crate) const PACKED_NGRAM_BYTES: usize = 7;

/// The key of an n-gram of at most [`PACKED_NGRAM_BYTES`] bytes: its bytes, first byte highest,
/// with the length in the top byte (so `a` and `\0a` differ). Never 0 (the empty slot).
#[inline]
pub(crate) fn packed_ngram_key(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |k, &b| k << 8 | u64::from(b)) | (bytes.len() as u64) << 56
}

/// The vocabulary index of each character n-gram of at most [`PACKED_NGRAM_BYTES`] bytes, keyed
/// by [`packed_ngram_key`]: an open-addressing table (linear probing, at most half full) on an
/// integer key, so the hot path neither hashes strings nor compares them. Built once from the
/// vocabulary; read-only afterwards (attacker-controlled n-grams are only looked up).
#[derive(Debug, Clone)]
pub(crate) struct NgramTable {
    pub(crate) keys: Vec<u64>,
    pub(crate) values: Vec<u32>,
    pub(crate) shift: u32,
}

impl NgramTable {
    pub(crate) fn new(entries: &[(u64, u32)]) -> Self {
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
    pub(crate) fn slot(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u32> {
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
