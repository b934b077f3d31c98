//! Step 1: normalization (bounded input, percent-decoding rounds, lower-casing) and the
//! reusable buffers of the hot path ([`Scratch`]).
use super::*;

/// Reusable buffers for [`Featurizer::transform_into`], so that the hot path allocates nothing
/// once the buffers have grown.
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    pub(crate) raw: Vec<u8>,
    pub(crate) decoded: Vec<u8>,
    pub(crate) text: String,
    pub(crate) gram: String,
    pub(crate) counts: Vec<u32>,
    pub(crate) touched: Vec<u32>,
    pub(crate) weights: Weights,
    pub(crate) unseen: String,
    pub(crate) params: params::ParamScratch,
}

/// What [`Featurizer::vectorize`] hands to the feature enumerators: counts per vocabulary index
/// and the indices touched (a plain method call per feature, not a dynamic closure call).
pub(crate) struct Counter<'a> {
    pub(crate) counts: &'a mut [u32],
    pub(crate) touched: &'a mut Vec<u32>,
}

impl Counter<'_> {
    /// Counts one occurrence of vocabulary index `i`.
    #[inline]
    pub(crate) fn add(&mut self, i: u32) {
        let c = &mut self.counts[i as usize];
        if *c == 0 {
            self.touched.push(i);
        }
        *c += 1;
    }
}

/// Sizes `counts` to `dim` and zeroes the counts of `touched` (the only ones not zero), leaving
/// every count zero and `touched` empty.
pub(crate) fn clear_counts(counts: &mut Vec<u32>, touched: &mut Vec<u32>, dim: usize) {
    if counts.len() != dim {
        counts.clear();
        counts.resize(dim, 0);
    }
    for &i in touched.iter() {
        if let Some(c) = counts.get_mut(i as usize) {
            *c = 0;
        }
    }
    touched.clear();
}

/// The buffers of [`Featurizer::vectorize`] besides the counts.
#[derive(Debug, Default, Clone)]
pub(crate) struct Weights {
    /// Bit i set when index i was touched (how the touched indices are put in order when there
    /// are many of them, instead of sorting).
    pub(crate) bits: Vec<u64>,
    /// Each touched index's weight before normalization.
    pub(crate) weight: Vec<f64>,
}

/// Normalizes a request (see the crate documentation, step 1). Returns the text and whether the
/// input was truncated.
pub fn normalize(config: &FeaturizerConfig, req: &RequestParts) -> (String, bool) {
    let mut scratch = Scratch::default();
    let truncated = normalize_into(config, req, &mut scratch);
    (std::mem::take(&mut scratch.text), truncated)
}

/// Normalization into `scratch.text`; returns the truncation flag.
pub(crate) fn normalize_into(
    config: &FeaturizerConfig,
    req: &RequestParts,
    scratch: &mut Scratch,
) -> bool {
    normalize_capped_into(config, req, scratch, config.max_input_bytes)
}

/// [`normalize_into`] reading at most `max_bytes` of input instead of `max_input_bytes`.
pub(crate) fn normalize_capped_into(
    config: &FeaturizerConfig,
    req: &RequestParts,
    scratch: &mut Scratch,
    max_bytes: usize,
) -> bool {
    let Scratch {
        raw, decoded, text, ..
    } = scratch;
    // Copy at most one byte past the limit: enough to know that the input was too long, and the
    // work stays bounded whatever the size of the request.
    let cap = max_bytes.saturating_add(1);
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
    let truncated = raw.len() > max_bytes;
    if truncated {
        raw.truncate(max_bytes);
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
pub(crate) fn percent_decode(input: &[u8], plus_from: Option<usize>, out: &mut Vec<u8>) -> bool {
    percent_decode_from(input, plus_from, out)
}

/// One round of percent-decoding of all of `input` (`+` a space when `plus`); whether anything
/// changed (when not, `out` is not meaningful).
pub(crate) fn percent_decode_into(input: &[u8], plus: bool, out: &mut Vec<u8>) -> bool {
    percent_decode_from(input, plus.then_some(0), out)
}

pub(crate) fn percent_decode_from(
    input: &[u8],
    plus_from: Option<usize>,
    out: &mut Vec<u8>,
) -> bool {
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

pub(crate) fn push_lowercase(s: &str, out: &mut String) {
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

pub(crate) fn push_lowercase_char(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else {
        out.extend(c.to_lowercase());
    }
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
