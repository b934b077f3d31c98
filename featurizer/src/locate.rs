//! Where a feature of a request's vector comes from: which part (placement, name, decoded value)
//! carries it. For explanations of a score (audit lines, `pate-trainer score --explain`), never
//! on the scoring path: it splits and reads the request once more, part by part.
//!
//! A part's features are those its value gives read alone (its placement marks and public
//! priors included); a parameter-aware or rarity feature (`p:n:<name>`, `p:rare:<name>`,
//! `p:path:…`, `p:unseen:path`) is placed by the name or path it carries. A feature several parts
//! carry is placed in the one that carries it most often (the first of equal counts); a
//! request-wide feature (`p:rare:any`, `p:odd:…`, `p:m:…`) has no part. Without placements,
//! the parts are the path, the query pairs and the form pairs (what the seeds' view reads).
use super::*;
use placement::{Piece, Priors, Reading};

/// The part of a request a feature comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeatureSource {
    /// Where the part rides.
    pub placement: Placement,
    /// The part's name (parameter, header, cookie, JSON key, …), decoded and lower-cased;
    /// empty where there is none (path, method, plain-text body).
    pub name: String,
    /// The part's decoded, lower-cased value (whole: cut it with [`snippet`]).
    pub value: String,
}

/// The longest snippet [`snippet`] returns, in characters.
pub const SNIPPET_CHARS: usize = 64;

/// At most [`SNIPPET_CHARS`] characters of `value`: where `needle` (a token) occurs, a window
/// that starts a few characters before its first occurrence; else the start of the value.
pub fn snippet(value: &str, needle: &str) -> String {
    let chars = value.chars().count();
    if chars <= SNIPPET_CHARS {
        return value.to_string();
    }
    let start_byte = if needle.is_empty() {
        None
    } else {
        value.find(needle)
    };
    let first = start_byte.map_or(0, |b| value[..b].chars().count().saturating_sub(8));
    let first = first.min(chars - SNIPPET_CHARS);
    value.chars().skip(first).take(SNIPPET_CHARS).collect()
}

impl Featurizer {
    /// The parts of `req` as the featurizer splits them for its placements (with the seeds'
    /// featurizer, the default placement split), one pair at a time.
    fn explained_parts(&self, req: &RequestParts) -> Split {
        let config = &self.content.config;
        let pc = PlacementConfig {
            request_line_whole: false,
            ..config.placements.clone().unwrap_or_default()
        };
        placement::split_request(req, &pc, config.decode_rounds, config.include_body)
    }

    /// Counts into `scratch.counts` the vocabulary indices of the features `part`'s value gives
    /// read alone, as scoring counts a window's ([`Featurizer::count_window_features`]); the
    /// indices counted are `scratch.touched`. Every other count is zero.
    fn count_part_features(&self, part: &Part, prior: Option<Priors>, scratch: &mut Scratch) {
        let config = &self.content.config;
        let one = Split {
            parts: vec![part.clone()],
            ..Split::default()
        };
        let read = Reading::new(config, &self.known);
        let segments = placement::segments_with_priors(&one, &read, &mut [prior]);
        let window: Vec<Piece> = segments
            .iter()
            .enumerate()
            .map(|(segment, s)| Piece {
                segment,
                start: 0,
                end: s.text.len(),
            })
            .collect();
        let Scratch {
            counts,
            touched,
            gram,
            unseen,
            ..
        } = scratch;
        clear_counts(counts, touched, self.dim());
        self.count_window_features(
            &segments,
            &window,
            gram,
            unseen,
            &mut Counter { counts, touched },
        );
    }

    /// For each of `indices` (vocabulary indices of a vector of `req`), the part of `req` that
    /// carries it (see the module documentation), or `None`.
    pub fn feature_sources(
        &self,
        req: &RequestParts,
        indices: &[u32],
    ) -> Vec<Option<FeatureSource>> {
        self.feature_sources_segmented(req, indices, None)
    }

    /// [`Featurizer::feature_sources`], with `segments` what
    /// [`Featurizer::transform_windows_segmented`] kept of the same `req`: where its split is
    /// the one read here, what the public priors called each part is taken from it rather than
    /// asked again (the same sources).
    pub fn feature_sources_segmented(
        &self,
        req: &RequestParts,
        indices: &[u32],
        segments: Option<&placement::RequestSegments>,
    ) -> Vec<Option<FeatureSource>> {
        // The kept split is the one read here: `split_request` of the same request under the
        // same placements (`request_line_whole` shapes the segments, not the split).
        let (split, mut priors) = match segments {
            Some(kept) if self.content.config.placements.is_some() => {
                debug_assert!(kept.split == self.explained_parts(req));
                (std::borrow::Cow::Borrowed(&kept.split), kept.priors.clone())
            }
            _ => {
                let mut split = self.explained_parts(req);
                if self.content.config.placements.is_none() {
                    // The seeds' featurizer reads the target and a form body only.
                    split.parts.retain(|p| {
                        matches!(
                            p.placement,
                            Placement::Path | Placement::Query | Placement::Form
                        )
                    });
                }
                let none = vec![None; split.parts.len()];
                (std::borrow::Cow::Owned(split), none)
            }
        };
        // Per wanted index: (count, part) of the part that carries it most.
        let mut best: Vec<(u32, Option<usize>)> = vec![(0, None); indices.len()];
        transform::with_scratch(|scratch| {
            for (k, part) in split.parts.iter().enumerate() {
                // `priors` has a slot per part of `split` (all `None` where no split was kept).
                let prior = priors.get_mut(k).and_then(Option::take);
                self.count_part_features(part, prior, scratch);
                for (slot, &wanted) in best.iter_mut().zip(indices) {
                    let count = scratch.counts.get(wanted as usize).copied().unwrap_or(0);
                    if count > slot.0 {
                        *slot = (count, Some(k));
                    }
                }
            }
            clear_counts(&mut scratch.counts, &mut scratch.touched, self.dim());
        });
        let source = |p: &Part| FeatureSource {
            placement: p.placement,
            name: p.name.clone(),
            value: p.value.clone(),
        };
        best.iter()
            .zip(indices)
            .map(|(&(_, found), &i)| match found {
                Some(k) => Some(source(&split.parts[k])),
                None => self.named_part(&split, i).map(|k| source(&split.parts[k])),
            })
            .collect()
    }

    /// The part a parameter-aware or rarity feature names: `p:<n|s|l|c|rare>:<name>…` the first
    /// query or form pair of that name, `p:path:…`, `p:unseen:path` and `p:odd:path…` the path.
    fn named_part(&self, split: &Split, index: u32) -> Option<usize> {
        let feature = self.content.vocabulary.get(index as usize)?;
        let body = feature.strip_prefix(PARAM_PREFIX)?;
        let is_path = body.starts_with("path:")
            || body == params::UNSEEN_PATH
            || body.starts_with("odd:path");
        if is_path {
            return split
                .parts
                .iter()
                .position(|p| p.placement == Placement::Path);
        }
        let (family, rest) = body.split_once(':')?;
        if !matches!(family, "n" | "s" | "l" | "c" | "rare") {
            return None;
        }
        let name = match family {
            "n" | "rare" => rest,
            _ => rest.split_once('=').map_or(rest, |(name, _)| name),
        };
        split.parts.iter().position(|p| {
            matches!(p.placement, Placement::Query | Placement::Form) && p.name == name
        })
    }

    /// The part of `req` whose vector alone (a window of it, for a part longer than a window) is
    /// `vector` (a vector of [`Featurizer::part_vectors`] of `placement`): which part a model
    /// of single parts scored.
    pub fn part_of_vector(
        &self,
        req: &RequestParts,
        placement: Placement,
        vector: &SparseVector,
    ) -> Option<FeatureSource> {
        let pc = self.content.config.placements.as_ref()?;
        let config = &self.content.config;
        let split = self.explained_parts(req);
        let mut scratch = Scratch::default();
        let mut v = SparseVector::default();
        for part in split.parts.iter().filter(|p| p.placement == placement) {
            let one = Split {
                parts: vec![part.clone()],
                ..Split::default()
            };
            let read = Reading::new(config, &self.known);
            let mut segments = placement::segments(&one, &read);
            if pc.part_values_only {
                placement::values_only(&mut segments);
            }
            let windows =
                placement::windows(&segments, config.max_input_bytes, pc.window_overlap_bytes);
            for piece in windows.iter().flatten() {
                let alone = std::slice::from_ref(piece);
                self.vectorize_window(&segments, alone, None, &mut scratch, &mut v);
                if v.indices == vector.indices && v.values == vector.values {
                    return Some(FeatureSource {
                        placement: part.placement,
                        name: part.name.clone(),
                        value: part.value.clone(),
                    });
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snippet_is_bounded_and_shows_the_token() {
        assert_eq!(snippet("short", "x"), "short");
        let long = format!("{}union select{}", "a".repeat(100), "b".repeat(100));
        let s = snippet(&long, "union");
        assert_eq!(s.chars().count(), SNIPPET_CHARS);
        assert!(s.contains("union select"), "{s}");
        let s = snippet(&"é".repeat(200), "");
        assert_eq!(s.chars().count(), SNIPPET_CHARS);
    }
}
