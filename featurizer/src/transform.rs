//! Transforming a request into its TF-IDF vector (dense, sparse, per placement window) and
//! explaining it.
use super::*;

/// What [`Featurizer::params_view`] wrote into `scratch.text`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParamsView<'r> {
    /// The request's method (the parameter families read it).
    pub(crate) method: &'r str,
    /// The view was cut at `max_input_bytes`.
    pub(crate) cut: bool,
}

/// Runs `f` with this thread's [`Scratch`]: its counts (one per vocabulary entry, 40 KB for
/// K = 10,000) and buffers are allocated and zeroed once per thread, not per request.
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
    }
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => f(&mut scratch),
        // A caller's callback featurizing again on this thread: a buffer of its own.
        Err(_) => f(&mut Scratch::default()),
    })
}

impl Featurizer {
    /// Vocabulary index of a feature of a kind (`feature` without the kind's prefix).
    #[inline]
    pub(crate) fn lookup_kind(&self, kind: FeatureKind, feature: &str) -> Option<u32> {
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
    pub(crate) fn lookup_kind_or_unseen(
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
    pub(crate) fn for_each_param_feature(
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
    pub(crate) fn lookup_char(&self, gram: &str) -> Option<u32> {
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
    pub(crate) fn for_each_char_ngram(
        &self,
        text: &str,
        lo: usize,
        hi: usize,
        add: &mut Counter,
    ) -> u32 {
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
    pub(crate) fn lookup(&self, feature: &str) -> Option<u32> {
        match feature.as_bytes() {
            &[b] if b < 128 => {
                Some(self.ascii_index[b as usize]).filter(|&i| i != NOT_IN_VOCABULARY)
            }
            _ => self.index.get(feature).copied(),
        }
    }

    /// The l1-normalized TF-IDF vector of a request, or the empty vector.
    ///
    /// Uses a per-thread [`Scratch`], so only the output vectors are allocated.
    pub fn transform(&self, req: &RequestParts) -> SparseVector {
        let mut out = SparseVector::default();
        with_scratch(|scratch| self.transform_into(req, scratch, &mut out));
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
            let view = self.params_view(req, scratch);
            let line = self.request_line_text(pc, view, scratch);
            let (segments, windows, limited) = self.placement_windows(req, pc, line);
            out.truncated = limited || windows.len() > 1;
            let method = view.map(|v| v.method);
            self.vectorize_window(&segments, &windows[0], method, scratch, out);
            return;
        }
        out.truncated = normalize_into(&self.content.config, req, scratch);
        let config = &self.content.config;
        // The features of `for_each_configured_feature` (what `fit` counts), family by family,
        // each looked up the fastest way; the order does not matter (only counts do).
        self.vectorize_scratch(scratch, out, Some(req.method), |text, gram, unseen, add| {
            self.count_text_features(text, config, gram, unseen, add)
        });
    }

    /// [`Featurizer::vectorize`] on `scratch`'s buffers: the features `count` adds (given the
    /// scratch's text and its n-gram and unseen-feature buffers), then, with `params_method`,
    /// the parameter and rarity features of the text.
    #[inline]
    fn vectorize_scratch(
        &self,
        scratch: &mut Scratch,
        out: &mut SparseVector,
        params_method: Option<&str>,
        count: impl FnOnce(&str, &mut String, &mut String, &mut Counter) -> u32,
    ) {
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
        self.vectorize(counts, touched, weights, out, |add| {
            let mut tokens = count(text, gram, unseen, add);
            if let Some(method) = params_method {
                tokens += self.for_each_param_feature(method, text, params, |i| add.add(i));
            }
            tokens
        });
    }

    /// The split, segments and windows of a request under [`FeaturizerConfig::placements`], and
    /// whether a limit of the split was reached. There is always at least one window.
    /// `line`: the request line's text for [`PlacementConfig::request_line_whole`] when the
    /// caller has it ([`Featurizer::request_line_text`]).
    pub(crate) fn placement_windows(
        &self,
        req: &RequestParts,
        pc: &PlacementConfig,
        line: Option<&str>,
    ) -> (Vec<placement::Segment>, Vec<Vec<placement::Piece>>, bool) {
        let (kept, windows) = self.placement_windows_kept(req, pc, line);
        let limited = kept.split.limited();
        (kept.segments, windows, limited)
    }

    /// [`Featurizer::placement_windows`], keeping the split and its parts' priors.
    fn placement_windows_kept(
        &self,
        req: &RequestParts,
        pc: &PlacementConfig,
        line: Option<&str>,
    ) -> (placement::RequestSegments, Vec<Vec<placement::Piece>>) {
        let config = &self.content.config;
        let kept = placement::request_segments_kept(req, config, pc, &self.known, line);
        let windows = placement::windows(
            &kept.segments,
            config.max_input_bytes,
            pc.window_overlap_bytes,
        );
        (kept, windows)
    }

    /// With [`FeaturizerConfig::placements`] and the parameter or rarity families on: writes the
    /// request's parameter view into `scratch.text` — the target and, when the body is a form,
    /// the body, normalized as without placements (the view those families were defined on) —
    /// and returns the method to read it with and whether it was cut; `None` (nothing written)
    /// otherwise.
    pub(crate) fn params_view<'r>(
        &self,
        req: &RequestParts<'r>,
        scratch: &mut Scratch,
    ) -> Option<ParamsView<'r>> {
        let config = &self.content.config;
        if config.placements.is_none() || (!config.params && self.rarity.is_none()) {
            return None;
        }
        let form = RequestParts {
            body: req.body.filter(|_| placement::body_is_form(req)),
            ..*req
        };
        let cut = normalize_into(config, &form, scratch);
        Some(ParamsView {
            method: req.method,
            cut,
        })
    }

    /// The parameter view's text (in `scratch.text`) when it is also the `request` part of
    /// [`PlacementConfig::request_line_whole`] — the same text, read up to `max_bytes` instead
    /// of `max_input_bytes`: it was not cut and `max_bytes` reads at least as far — so that the
    /// request line is normalized once per request, not twice.
    pub(crate) fn request_line_text<'s>(
        &self,
        pc: &PlacementConfig,
        view: Option<ParamsView>,
        scratch: &'s Scratch,
    ) -> Option<&'s str> {
        let reuse = pc.request_line_whole
            && pc.max_bytes >= self.content.config.max_input_bytes
            && view.is_some_and(|v| !v.cut);
        reuse.then_some(scratch.text.as_str())
    }

    /// The vector of one window of a request's placement view; with `params_method` (from
    /// [`Featurizer::params_view`], whose text is in `scratch.text`), the request's parameter
    /// and rarity features too: they describe the whole request line and form, so every window
    /// carries them, as the first window the model was trained on does.
    pub(crate) fn vectorize_window(
        &self,
        segments: &[placement::Segment],
        window: &[placement::Piece],
        params_method: Option<&str>,
        scratch: &mut Scratch,
        out: &mut SparseVector,
    ) {
        self.vectorize_scratch(scratch, out, params_method, |_, gram, unseen, add| {
            self.count_window_features(segments, window, gram, unseen, add)
        });
    }

    /// Counts in `add` the token n-grams, character n-grams and value shapes of `text` that
    /// `config` asks for and the vocabulary holds; returns how many features `text` produced.
    #[inline]
    fn count_text_features(
        &self,
        text: &str,
        config: &FeaturizerConfig,
        gram: &mut String,
        unseen: &mut String,
        add: &mut Counter,
    ) -> u32 {
        let mut count = for_each_feature(text, config.ngram_max, gram, |feature| {
            if let Some(i) = self.lookup(feature) {
                add.add(i);
            }
        });
        if let Some([lo, hi]) = config.char_ngrams {
            count += self.for_each_char_ngram(text, lo, hi, add);
        }
        if config.value_shapes {
            count += for_each_shape_feature(text, gram, |feature| {
                if let Some(i) = self.lookup_kind_or_unseen(FeatureKind::Shape, feature, unseen) {
                    add.add(i);
                }
            });
        }
        count
    }

    /// Counts the features of a window that are in the vocabulary and returns the number of
    /// features ([`placement::for_each_window_feature`]'s, family by family, each looked up the
    /// fastest way, as [`Featurizer::transform_into`] does without placements: character
    /// n-grams by their packed bytes, never formed as strings; the order does not matter, only
    /// the counts).
    pub(crate) fn count_window_features(
        &self,
        segments: &[placement::Segment],
        window: &[placement::Piece],
        gram: &mut String,
        unseen: &mut String,
        add: &mut Counter,
    ) -> u32 {
        let mut count = 0u32;
        for piece in window {
            let seg = &segments[piece.segment];
            let first = piece.start == 0;
            let cfg = if seg.shapes && first {
                &self.content.config
            } else {
                &self.plain_config
            };
            let text = &seg.text[piece.start..piece.end];
            count += self.count_text_features(text, cfg, gram, unseen, add);
            if first {
                let mut mark = |body: &str| {
                    count += 1;
                    if let Some(&i) = self.placement_index.get(body) {
                        add.add(i);
                    }
                };
                seg.marks.for_each(unseen, &mut mark);
                seg.priors.fired().for_each(mark);
            }
        }
        count
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
        with_scratch(|scratch| self.transform_windows_with(req, scratch, out));
    }

    /// [`Featurizer::transform_windows`], keeping the request's segments (with
    /// [`FeaturizerConfig::placements`]; `None` without) for
    /// [`Featurizer::placement_vectors_segmented`].
    pub fn transform_windows_segmented(
        &self,
        req: &RequestParts,
        out: &mut Vec<SparseVector>,
    ) -> Option<placement::RequestSegments> {
        out.clear();
        with_scratch(|scratch| self.transform_windows_with(req, scratch, out))
    }

    fn transform_windows_with(
        &self,
        req: &RequestParts,
        scratch: &mut Scratch,
        out: &mut Vec<SparseVector>,
    ) -> Option<placement::RequestSegments> {
        let Some(pc) = &self.content.config.placements else {
            let mut v = SparseVector::default();
            self.transform_into(req, scratch, &mut v);
            out.push(v);
            return None;
        };
        let view = self.params_view(req, scratch);
        let line = self.request_line_text(pc, view, scratch);
        let (kept, windows) = self.placement_windows_kept(req, pc, line);
        let limited = kept.split.limited();
        let method = view.map(|v| v.method);
        self.push_windows(&kept.segments, &windows, limited, method, scratch, out);
        Some(kept)
    }

    /// The vectors of [`Featurizer::transform_windows`] for a request's `segments` and
    /// `windows` (`limited`: a limit of the split was reached; `method`: the parameter view's).
    fn push_windows(
        &self,
        segments: &[placement::Segment],
        windows: &[Vec<placement::Piece>],
        limited: bool,
        method: Option<&str>,
        scratch: &mut Scratch,
        out: &mut Vec<SparseVector>,
    ) {
        for (k, window) in windows.iter().enumerate() {
            let mut v = SparseVector::default();
            self.vectorize_window(segments, window, method, scratch, &mut v);
            // The first window is `transform`'s, which did not read the rest; together the
            // windows read everything but what a limit cut.
            v.truncated = limited || (k == 0 && windows.len() > 1);
            out.push(v);
        }
        let parts_alone = self
            .content
            .config
            .placements
            .as_ref()
            .is_some_and(|pc| pc.parts_alone);
        if parts_alone {
            // Each part of a window of several parts, alone (a part longer than a window is
            // already alone in its windows).
            for piece in windows.iter().filter(|w| w.len() > 1).flatten() {
                let mut v = SparseVector::default();
                // A part alone: without the request's parameter features.
                let alone = std::slice::from_ref(piece);
                self.vectorize_window(segments, alone, None, scratch, &mut v);
                v.truncated = limited;
                out.push(v);
            }
        }
    }

    /// [`Featurizer::transform_windows`] and [`Featurizer::part_vectors`] of one request (what
    /// content alone with a model of single parts scores), the request split and decoded once
    /// and each part's public priors computed once for both.
    pub fn windows_and_parts(
        &self,
        req: &RequestParts,
        windows: &mut Vec<SparseVector>,
        parts: &mut Vec<(Placement, SparseVector)>,
    ) {
        parts.clear();
        let Some(pc) = &self.content.config.placements else {
            // No parts without placements.
            return self.transform_windows(req, windows);
        };
        windows.clear();
        with_scratch(|scratch| {
            let config = &self.content.config;
            let view = self.params_view(req, scratch);
            let split =
                placement::split_request(req, pc, config.decode_rounds, config.include_body);
            let limited = split.limited();
            let mut priors = vec![None; split.parts.len()];
            let line = self.request_line_text(pc, view, scratch);
            let segments =
                placement::split_segments(req, config, pc, &self.known, line, &split, &mut priors);
            let (bytes, overlap) = (config.max_input_bytes, pc.window_overlap_bytes);
            let whole = placement::windows(&segments, bytes, overlap);
            let method = view.map(|v| v.method);
            self.push_windows(&segments, &whole, limited, method, scratch, windows);
            let per_pair = pc.part_view();
            let mut pairs = placement::split_segments(
                req,
                config,
                &per_pair,
                &self.known,
                None,
                &split,
                &mut priors,
            );
            if pc.part_values_only {
                placement::values_only(&mut pairs);
            }
            let pieces = placement::windows(&pairs, bytes, overlap);
            self.push_parts(&pairs, &pieces, limited, scratch, |p, v| parts.push((p, v)));
        });
    }

    /// One vector per part of the request, each part alone (a part longer than a window: each
    /// of its windows alone; the path, query and form pair by pair even with
    /// [`PlacementConfig::request_line_whole`]), without the request's parameter features, and
    /// none for a part without a feature of the vocabulary; empty without
    /// [`FeaturizerConfig::placements`]. What a model of single values reads: no other part of
    /// the request shares the part's norm.
    pub fn transform_parts(&self, req: &RequestParts, out: &mut Vec<SparseVector>) {
        out.clear();
        self.for_each_part(req, |_, v| out.push(v));
    }

    /// [`Featurizer::transform_parts`] with each part's placement: which placement's part
    /// scores highest, for audit lines and metrics.
    pub fn part_vectors(&self, req: &RequestParts) -> Vec<(Placement, SparseVector)> {
        let mut out = Vec::new();
        self.for_each_part(req, |p, v| out.push((p, v)));
        out
    }

    fn for_each_part(&self, req: &RequestParts, f: impl FnMut(Placement, SparseVector)) {
        with_scratch(|scratch| self.for_each_part_with(req, scratch, f));
    }

    fn for_each_part_with(
        &self,
        req: &RequestParts,
        scratch: &mut Scratch,
        f: impl FnMut(Placement, SparseVector),
    ) {
        let Some(pc) = &self.content.config.placements else {
            return;
        };
        let per_pair = pc.part_view();
        let config = &self.content.config;
        let (mut segments, limited) =
            placement::request_segments(req, config, &per_pair, &self.known, None);
        if pc.part_values_only {
            placement::values_only(&mut segments);
        }
        let windows =
            placement::windows(&segments, config.max_input_bytes, pc.window_overlap_bytes);
        self.push_parts(&segments, &windows, limited, scratch, f);
    }

    /// The vectors of [`Featurizer::part_vectors`] for a request's pair-by-pair `segments` and
    /// their `windows`: each piece alone, passed to `f` with its placement.
    fn push_parts(
        &self,
        segments: &[placement::Segment],
        windows: &[Vec<placement::Piece>],
        limited: bool,
        scratch: &mut Scratch,
        mut f: impl FnMut(Placement, SparseVector),
    ) {
        for piece in windows.iter().flatten() {
            let mut v = SparseVector::default();
            let alone = std::slice::from_ref(piece);
            self.vectorize_window(segments, alone, None, scratch, &mut v);
            v.truncated = limited;
            // A part none of whose features is in the vocabulary says nothing.
            if !v.indices.is_empty() {
                f(segments[piece.segment].placement, v);
            }
        }
    }

    /// One vector per window of the parts of each placement found in the request (placements in
    /// [`Placement::ALL`] order): which placement looks most like an attack, for audit lines and
    /// metrics. Without [`FeaturizerConfig::placements`], `transform`'s vector as
    /// [`Placement::Request`].
    pub fn placement_vectors(&self, req: &RequestParts) -> Vec<(Placement, SparseVector)> {
        with_scratch(|scratch| self.placement_vectors_with(req, scratch))
    }

    fn placement_vectors_with(
        &self,
        req: &RequestParts,
        scratch: &mut Scratch,
    ) -> Vec<(Placement, SparseVector)> {
        let Some(pc) = &self.content.config.placements else {
            let mut v = SparseVector::default();
            self.transform_into(req, scratch, &mut v);
            return vec![(Placement::Request, v)];
        };
        let config = &self.content.config;
        let view = self.params_view(req, scratch);
        let line = self.request_line_text(pc, view, scratch);
        let (segments, _) = placement::request_segments(req, config, pc, &self.known, line);
        let method = view.map(|v| v.method);
        self.placement_vectors_of(&segments, method, scratch)
    }

    /// [`Featurizer::placement_vectors`] of `req` from `segments`, what
    /// [`Featurizer::transform_windows_segmented`] of the same `req` kept (the request is not
    /// split again; its parameter view is read again, for the parameter features).
    pub fn placement_vectors_segmented(
        &self,
        req: &RequestParts,
        segments: &placement::RequestSegments,
    ) -> Vec<(Placement, SparseVector)> {
        with_scratch(|scratch| {
            if self.content.config.placements.is_none() {
                return self.placement_vectors_with(req, scratch);
            }
            let view = self.params_view(req, scratch);
            let method = view.map(|v| v.method);
            self.placement_vectors_of(&segments.segments, method, scratch)
        })
    }

    /// The vectors of [`Featurizer::placement_vectors`] for a request's `segments` (`method`: its
    /// parameter view's, whose text is in `scratch.text`).
    fn placement_vectors_of(
        &self,
        segments: &[placement::Segment],
        method: Option<&str>,
        scratch: &mut Scratch,
    ) -> Vec<(Placement, SparseVector)> {
        let Some(pc) = &self.content.config.placements else {
            return Vec::new();
        };
        let config = &self.content.config;
        let mut out = Vec::new();
        for p in Placement::ALL {
            // The parameter features belong to the request line and the form body.
            let params_method = method.filter(|_| {
                matches!(
                    p,
                    Placement::Request | Placement::Path | Placement::Query | Placement::Form
                )
            });
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
                self.vectorize_window(&mine, &window, params_method, scratch, &mut v);
                out.push((p, v));
            }
        }
        out
    }

    /// Counts the vocabulary indices that `features` adds (it returns the number of features
    /// seen, in the vocabulary or not) and writes their normalized TF-IDF weights into `out` (the
    /// shared second half of every transform).
    pub(crate) fn vectorize(
        &self,
        counts: &mut Vec<u32>,
        touched: &mut Vec<u32>,
        weights: &mut Weights,
        out: &mut SparseVector,
        features: impl FnOnce(&mut Counter) -> u32,
    ) {
        out.indices.clear();
        out.values.clear();
        // Every count is zero between calls (each is taken below); should a call have unwound
        // mid-count, the counts it left are those of `touched`. The buffers are reused across
        // requests, so leave none behind.
        clear_counts(counts, touched, self.dim());
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
        let undiluted =
            |i: u32| !self.undiluted.is_empty() && self.undiluted.binary_search(&i).is_ok();
        let mut sum = 0.0f64;
        weights.weight.clear();
        for &i in touched.iter() {
            let count = std::mem::take(&mut counts[i as usize]);
            let w = tf_of(count) * f64::from(idf[i as usize]);
            weights.weight.push(w);
            if !undiluted(i) {
                sum += if l2 { w * w } else { w };
            }
        }
        let norm = if l2 { sum.sqrt() } else { sum };
        out.indices.extend_from_slice(touched);
        out.values
            .extend(touched.iter().zip(&weights.weight).map(|(&i, &w)| {
                if undiluted(i) {
                    1.0
                } else {
                    (w / norm) as f32
                }
            }));
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
                let (segments, windows, limited) = self.placement_windows(req, pc, None);
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
                let mut scratch = Scratch::default();
                if let Some(ParamsView { method, .. }) = self.params_view(req, &mut scratch) {
                    let Scratch {
                        text: view, params, ..
                    } = &mut scratch;
                    self.for_each_param_feature(method, view, params, |i| {
                        *counts.entry(i).or_default() += 1
                    });
                }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window features counted the fast way (packed character n-grams, per-family lookups)
    /// equal the plain enumeration's ([`placement::for_each_window_feature`], each feature
    /// looked up by string), on requests with non-ASCII text, n-grams longer than the packed
    /// key, value shapes, placement marks and libinjection's verdicts, cut into windows.
    #[test]
    fn window_features_counted_fast_equal_the_plain_enumeration() {
        let config = FeaturizerConfig {
            top_k: 5000,
            max_input_bytes: 48,
            char_ngrams: Some([1, 8]),
            value_shapes: true,
            libinjection: true,
            placements: Some(PlacementConfig {
                window_overlap_bytes: 8,
                ..PlacementConfig::default()
            }),
            ..FeaturizerConfig::default()
        };
        let headers: &[(&str, &[u8])] = &[
            ("User-Agent", "Mözilla/5.0 (X11; ünïcode ☃ 𝄞)".as_bytes()),
            ("Cookie", b"sid=abc123; theme=dark"),
            ("Content-Type", b"application/x-www-form-urlencoded"),
        ];
        let body = "name=Jos%C3%A9+Garc%EDa&q=%27+or+1%3D1--&long=".to_owned() + &"añ".repeat(40);
        let requests = [
            RequestParts::get("/a/b.jsp?id=3&x=%3Cscript%3Ealert(1)%3C/script%3E"),
            RequestParts::get("/caf%C3%A9?q=na%EFve+%E2%82%AC+%F0%9F%98%80&n="),
            RequestParts {
                method: "POST",
                target: b"/login?next=/home",
                body: Some(body.as_bytes()),
                headers: Headers::Pairs(headers),
                excluded_fields: Default::default(),
            },
        ];
        let f = Featurizer::fit(config, requests.iter().copied()).expect("fit");
        let mut checked = 0;
        for req in &requests {
            let pc = f.config().placements.clone().expect("placements");
            let (segments, windows, _) = f.placement_windows(req, &pc, None);
            for window in &windows {
                let mut plain: HashMap<u32, u32> = HashMap::new();
                let plain_total = placement::for_each_window_feature(
                    f.config(),
                    &f.plain_config,
                    &segments,
                    window,
                    &mut String::new(),
                    |kind, feature| {
                        let i = f.lookup_kind_or_unseen(kind, feature, &mut String::new());
                        if let Some(i) = i {
                            *plain.entry(i).or_default() += 1;
                        }
                    },
                );
                let mut counts = vec![0u32; f.dim()];
                let mut touched = Vec::new();
                let mut add = Counter {
                    counts: &mut counts,
                    touched: &mut touched,
                };
                let total = f.count_window_features(
                    &segments,
                    window,
                    &mut String::new(),
                    &mut String::new(),
                    &mut add,
                );
                let fast: HashMap<u32, u32> =
                    touched.iter().map(|&i| (i, counts[i as usize])).collect();
                assert_eq!((total, fast), (plain_total, plain));
                checked += 1;
            }
        }
        assert!(checked > requests.len(), "{checked} windows");
    }

    /// `windows_and_parts` (one split for both views) gives `transform_windows`' and
    /// `part_vectors`' vectors, for the request line read whole or pair by pair, with Base64,
    /// JSON and over-limit requests.
    #[test]
    fn windows_and_parts_equal_the_two_views() {
        let json: &[(&str, &[u8])] = &[
            ("Content-Type", b"application/json"),
            ("Referer", b"http://x/a?b=%27+or+1=1--"),
        ];
        let requests = [
            RequestParts::get("/a/YWRtaW4nLS0=?id=3&x=%3Cscript%3E&id=3&q=Jm5ic3A7&opaque=Zx9kQ2mN7pL4tR8v"),
            RequestParts {
                method: "POST",
                target: b"/api?v=1",
                body: Some(br#"{"a": "' union select 1--", "b": [1, "x"], "c": {"d": "../../etc/passwd"}}"#),
                headers: Headers::Pairs(json),
                excluded_fields: Default::default(),
            },
            RequestParts::get(&*Box::leak(
                format!("/p?{}", "k=v%26%2526&".repeat(60)).into_boxed_str(),
            )),
        ];
        for whole in [false, true] {
            let config = FeaturizerConfig {
                top_k: 3000,
                max_input_bytes: 64,
                char_ngrams: Some([1, 3]),
                params: true,
                libinjection: true,
                signatures: true,
                placements: Some(PlacementConfig {
                    request_line_whole: whole,
                    opaque_tokens: true,
                    max_parts: 20,
                    ..PlacementConfig::default()
                }),
                ..FeaturizerConfig::default()
            };
            let f = Featurizer::fit(config, requests.iter().copied()).expect("fit");
            for req in &requests {
                let (mut windows, mut parts, mut want) = (Vec::new(), Vec::new(), Vec::new());
                f.windows_and_parts(req, &mut windows, &mut parts);
                f.transform_windows(req, &mut want);
                assert_eq!(windows, want);
                assert_eq!(parts, f.part_vectors(req));
                assert!(!parts.is_empty());
            }
        }
    }
}
