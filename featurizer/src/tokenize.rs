//! Step 2: the tokenizer ([`tokenize`], equal to [`TOKEN_PATTERN`]).
use super::*;

pub(crate) fn token_regex() -> &'static regex::Regex {
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
pub(crate) enum CharClass {
    Word,
    Space,
    Symbol,
}

/// First code point past the precomputed table (the two-byte UTF-8 range).
pub(crate) const TABLE_END: u32 = 0x800;

pub(crate) fn class_by_regex(c: char) -> CharClass {
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
pub(crate) fn char_class(c: char) -> CharClass {
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
    pub(crate) text: &'t str,
    pub(crate) pos: usize,
}

impl<'t> Tokens<'t> {
    /// The class and byte length of the character at byte `i`.
    #[inline]
    pub(crate) fn class_at(&self, i: usize) -> (CharClass, usize) {
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
