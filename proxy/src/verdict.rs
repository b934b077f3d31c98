//! What the proxy decided about one request: the closed set of values that
//! `patewaf_requests_total{verdict}`, the shadow counters and the audit log use.

/// The outcome of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Scored below the threshold: forwarded.
    Allow,
    /// Scored at or above the threshold in block mode: answered 403, never forwarded.
    Block,
    /// Scored at or above the threshold in detect mode: forwarded and recorded.
    Flag,
    /// Scoring failed (no model, featurizer or ONNX Runtime error): `on_error` applied.
    Error,
    /// A route with `exclude: true`, or `mode: off`: forwarded unscored.
    Excluded,
    /// Refused on a protocol limit before any scoring (413, 414, 431, 408, 400): the proxy's
    /// own limits decided, not the model, so it is not counted as a block.
    Refused,
    /// Past a protocol limit or in a form the proxy cannot score, in detect mode: forwarded
    /// without a score (block mode refuses it instead), counted by reason in
    /// `patewaf_unscored_requests_total` ([`Unscored`]).
    Unscored,
}

impl Verdict {
    /// Every verdict, in the order of [`Verdict::index`].
    pub const ALL: [Verdict; 7] = [
        Verdict::Allow,
        Verdict::Block,
        Verdict::Flag,
        Verdict::Error,
        Verdict::Excluded,
        Verdict::Refused,
        Verdict::Unscored,
    ];

    /// The verdicts a scored request can get (from the active or the shadow model); the shadow
    /// counters are labelled with these.
    pub const SCORED: [Verdict; 4] = [
        Verdict::Allow,
        Verdict::Block,
        Verdict::Flag,
        Verdict::Error,
    ];

    /// The label value (metrics) and the audit log's `verdict`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Block => "block",
            Verdict::Flag => "flag",
            Verdict::Error => "error",
            Verdict::Excluded => "excluded",
            Verdict::Refused => "refused",
            Verdict::Unscored => "unscored",
        }
    }

    /// Position in [`Verdict::ALL`] (and, for scored verdicts, in [`Verdict::SCORED`]): metric
    /// children are resolved once into arrays indexed by it, so the request path does no label
    /// lookup.
    pub fn index(self) -> usize {
        match self {
            Verdict::Allow => 0,
            Verdict::Block => 1,
            Verdict::Flag => 2,
            Verdict::Error => 3,
            Verdict::Excluded => 4,
            Verdict::Refused => 5,
            Verdict::Unscored => 6,
        }
    }
}

/// Why a request was forwarded unscored in detect mode: the label values of
/// `patewaf_unscored_requests_total{reason}` (a closed set) and the start of the audit line's
/// `reason`. In block mode the same request is refused (414, 431, 415).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unscored {
    /// A target longer than `uri_limit_bytes` with `uri_over_limit: reject` (block mode: 414).
    UriTooLong,
    /// More header fields than `header_count_limit` (block mode: 431).
    TooManyHeaders,
    /// More bytes of header fields than `header_limit_bytes` (block mode: 431).
    HeadersTooLarge,
    /// A scored body with a content or transfer coding the proxy cannot undo, e.g. `br`
    /// (block mode: 415).
    UnsupportedEncoding,
}

impl Unscored {
    /// Every reason, in label order.
    pub const ALL: [Unscored; 4] = [
        Unscored::UriTooLong,
        Unscored::TooManyHeaders,
        Unscored::HeadersTooLarge,
        Unscored::UnsupportedEncoding,
    ];

    /// The metric label and the audit reason's prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            Unscored::UriTooLong => "uri_too_long",
            Unscored::TooManyHeaders => "too_many_headers",
            Unscored::HeadersTooLarge => "headers_too_large",
            Unscored::UnsupportedEncoding => "unsupported_encoding",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_the_position_in_all_and_scored() {
        for (i, v) in Verdict::ALL.iter().enumerate() {
            assert_eq!(v.index(), i);
        }
        for (i, v) in Verdict::SCORED.iter().enumerate() {
            assert_eq!(v.index(), i);
        }
    }
}
