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
}

impl Verdict {
    /// Every verdict, in the order of [`Verdict::index`].
    pub const ALL: [Verdict; 6] = [
        Verdict::Allow,
        Verdict::Block,
        Verdict::Flag,
        Verdict::Error,
        Verdict::Excluded,
        Verdict::Refused,
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
