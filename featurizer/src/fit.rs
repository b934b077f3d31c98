//! Fitting: vocabulary, document frequencies and IDF from a corpus (crate docs, steps 3 and 4).
use super::*;

impl Featurizer {
    /// Fits the vocabulary and IDF on `docs` (see the crate documentation, steps 3 and 4).
    /// Fewer than `top_k` distinct tokens give a smaller vocabulary ([`Featurizer::dim`]).
    pub fn fit<'a>(
        config: FeaturizerConfig,
        docs: impl IntoIterator<Item = RequestParts<'a>>,
    ) -> Result<Self, FeaturizerError> {
        Self::fit_with_known_headers(config, docs, std::iter::empty())
    }

    /// [`Featurizer::fit`], and every header value of `known_docs` is a known value
    /// ([`crate::PlacementConfig::known_header_permille`]) whatever its share of `docs`: header
    /// values known from public data other than the site's requests (the headers real browsers
    /// send, which one site's logs may never show). `known_docs` are not part of the corpus
    /// (no vocabulary, IDF or rarity counts from them). Without `placements` and
    /// `known_header_permille` they are not read.
    pub fn fit_with_known_headers<'a>(
        config: FeaturizerConfig,
        docs: impl IntoIterator<Item = RequestParts<'a>>,
        known_docs: impl IntoIterator<Item = RequestParts<'a>>,
    ) -> Result<Self, FeaturizerError> {
        validate_config(&config)?;
        let docs: Vec<RequestParts<'a>> = docs.into_iter().collect();
        let known_header_values = known_header_values(&config, &docs, known_docs);
        let known = placement::KnownValues::from_keys(
            known_header_values.iter().flatten(),
            config
                .placements
                .as_ref()
                .is_some_and(|pc| pc.known_digit_runs),
        );
        let mut scratch = Scratch::default();
        let counts = count_corpus(&config, &known, docs, &mut scratch);
        if counts.documents == 0 {
            return Err(FeaturizerError::EmptyCorpus);
        }
        let mut ranked = rank_by_document_frequency(counts.df);
        // The rarity table and its features (rare:<name> for the most frequent names, rare:any,
        // unseen:path), which take the very last places of the vocabulary.
        let (rarity, rarity_entries) =
            rarity_table_and_entries(&config, &counts.doc_texts, &mut scratch.params);
        let prior_entries = take_prior_entries(&config, &mut ranked);
        let reserved = rarity_entries.len()
            + prior_entries.len()
            + if config.value_shapes {
                UNSEEN_SHAPES.len()
            } else {
                0
            };
        if config.top_k <= reserved {
            return Err(FeaturizerError::Setting {
                key: "top_k",
                reason: format!(
                    "{} leaves no place for tokens: {reserved} places are reserved for the unseen-shape and rarity features",
                    config.top_k
                ),
            });
        }
        keep_top_tokens(&config, &mut ranked, reserved, &counts.doc_shapes);
        ranked.extend(prior_entries);
        ranked.extend(rarity_entries);
        fitted_featurizer(
            config,
            counts.documents,
            ranked,
            rarity,
            known_header_values,
        )
    }
}

/// What the one pass over the corpus counts.
struct CorpusCounts {
    /// Number of documents.
    documents: u64,
    /// Each vocabulary entry's document frequency.
    df: HashMap<String, u64>,
    /// Each document's value-shape features (for the second pass, with value_shapes only).
    doc_shapes: Vec<Vec<String>>,
    /// Each document's method and normalized text (for the rarity table, with
    /// rarity_min_count only).
    doc_texts: Vec<(String, String)>,
}

/// The document frequency of every feature of `docs`, and what the rarity table and the
/// unseen-shape features need of each document.
fn count_corpus(
    config: &FeaturizerConfig,
    known: &placement::KnownValues,
    docs: Vec<RequestParts>,
    scratch: &mut Scratch,
) -> CorpusCounts {
    let mut counts = CorpusCounts {
        documents: 0,
        df: HashMap::new(),
        doc_shapes: Vec::new(),
        doc_texts: Vec::new(),
    };
    let plain = FeaturizerConfig {
        value_shapes: false,
        ..config.clone()
    };
    for doc in docs {
        counts.documents += 1;
        let (distinct, shapes) =
            document_features(config, &plain, known, &doc, scratch, &mut counts.doc_texts);
        if config.value_shapes {
            counts.doc_shapes.push(shapes);
        }
        for tok in distinct {
            match counts.df.get_mut(&tok) {
                Some(c) => *c += 1,
                None => {
                    counts.df.insert(tok, 1);
                }
            }
        }
    }
    counts
}

/// The entries by document frequency, highest first; ties by entry, ascending, so that the
/// vocabulary does not depend on the hash map's order.
fn rank_by_document_frequency(df: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut ranked: Vec<(String, u64)> = df.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked
}

/// With `rarity_min_count`, the rarity table counted on `doc_texts` and its vocabulary entries
/// ([`rarity_entries`]); without, none.
fn rarity_table_and_entries(
    config: &FeaturizerConfig,
    doc_texts: &[(String, String)],
    scratch: &mut params::ParamScratch,
) -> (Option<RarityTable>, Vec<(String, u64)>) {
    let Some(min_count) = config.rarity_min_count else {
        return (None, Vec::new());
    };
    let mut table = RarityTable::new(min_count)
        .with_odd_permille(config.odd_permille.clone())
        .with_odd_shape_path(config.odd_shape_path)
        .with_odd_name_variants(config.odd_name_variants);
    for (method, text) in doc_texts {
        table.add(method, text, scratch);
    }
    let entries = rarity_entries(&table, doc_texts, scratch);
    (Some(table), entries)
}

/// libinjection's and the signatures' entries, taken out of `ranked`: they have reserved places
/// (before the rarity entries), with their document frequency over the corpus (0 when no
/// document fired them).
fn take_prior_entries(
    config: &FeaturizerConfig,
    ranked: &mut Vec<(String, u64)>,
) -> Vec<(String, u64)> {
    let prior_bodies = config
        .libinjection
        .then_some(LIBINJECTION_FEATURES.as_slice())
        .into_iter()
        .chain(config.signatures.then_some(SIGNATURE_FEATURES.as_slice()))
        .flatten();
    prior_bodies
        .map(|body| {
            let entry = format!("{PLACEMENT_PREFIX}{body}");
            let d = ranked
                .iter()
                .position(|(t, _)| *t == entry)
                .map_or(0, |k| ranked.remove(k).1);
            (entry, d)
        })
        .collect()
}

/// Keeps the `top_k - reserved` most frequent entries of `ranked`, then, with value_shapes, adds
/// the "unseen name/shape" features.
fn keep_top_tokens(
    config: &FeaturizerConfig,
    ranked: &mut Vec<(String, u64)>,
    reserved: usize,
    doc_shapes: &[Vec<String>],
) {
    ranked.truncate(config.top_k - reserved);
    if config.value_shapes {
        // Their document frequency depends on which name/shape pairs made it into the
        // vocabulary: a second pass.
        let kept: std::collections::HashSet<&str> = ranked
            .iter()
            .filter_map(|(t, _)| t.strip_prefix(VALUE_SHAPE_PREFIX))
            .collect();
        let unseen_df = unseen_shape_df(&kept, doc_shapes);
        for (u, d) in UNSEEN_SHAPES.iter().zip(unseen_df) {
            ranked.push((format!("{VALUE_SHAPE_PREFIX}{u}"), d));
        }
    }
}

/// The featurizer of the final vocabulary `ranked` (entries with their document frequency, in
/// place order), fitted on `documents` requests.
fn fitted_featurizer(
    config: FeaturizerConfig,
    documents: u64,
    ranked: Vec<(String, u64)>,
    rarity: Option<RarityTable>,
    known_header_values: Option<Vec<String>>,
) -> Result<Featurizer, FeaturizerError> {
    let idf = ranked
        .iter()
        .map(|(_, d)| (((1.0 + documents as f64) / (1.0 + *d as f64)).ln() + 1.0) as f32)
        .collect();
    let (vocabulary, document_frequency) = ranked.into_iter().unzip();
    let content = Content {
        kind: ARTIFACT_KIND.into(),
        format_version: FORMAT_VERSION,
        token_pattern: TOKEN_PATTERN.into(),
        idf_formula: IDF_FORMULA.into(),
        config,
        documents,
        vocabulary,
        document_frequency,
        idf,
        rarity,
        known_header_values,
    };
    let content_hash = hash_content(&content);
    Featurizer::from_artifact(Artifact {
        content,
        content_hash,
    })
}

impl Featurizer {
    /// This featurizer with its rarity table (the site's format model: `rare:*`, `unseen:path`,
    /// `odd:*`) counted on `docs` instead of the corpus it was fitted on, with the same settings;
    /// the vocabulary, document frequencies and IDF are kept (the rarity features keep their
    /// places, and a name outside the reserved ones still has no `rare:<name>` entry). What the
    /// counts are taken from is the caller's choice: requests KNOWN to be benign (a labelled
    /// public split) make the table a model of the site's benign formats, where a pool that holds
    /// the site's attacks counts their characters as the site's own. Without a rarity table the
    /// featurizer is returned unchanged.
    pub fn with_rarity_from<'a>(
        &self,
        docs: impl IntoIterator<Item = RequestParts<'a>>,
    ) -> Result<Self, FeaturizerError> {
        self.with_rarity_by_client(docs.into_iter().map(|d| (d, None)), None)
    }

    /// [`Self::with_rarity_from`] with each request's client where known: with
    /// `per_client = Some(k)` a client adds at most k to any count ([`crate::params::ClientCaps`]),
    /// so that values one client repeats (a scanner's payloads) stay rare; a request without a
    /// client counts as its own client.
    pub fn with_rarity_by_client<'a>(
        &self,
        docs: impl IntoIterator<Item = (RequestParts<'a>, Option<&'a str>)>,
        per_client: Option<u32>,
    ) -> Result<Self, FeaturizerError> {
        let Some(fitted) = &self.content.rarity else {
            return Ok(self.clone());
        };
        let mut table = RarityTable::new(fitted.min_count)
            .with_odd_permille(fitted.odd_permille.clone())
            .with_odd_shape_path(fitted.odd_shape_path)
            .with_odd_name_variants(fitted.odd_name_variants);
        let mut caps = per_client.map(crate::params::ClientCaps::new);
        let mut scratch = Scratch::default();
        let mut n = 0u64;
        for (doc, client) in docs {
            n += 1;
            // The text the table's lookups read: the parameter view with placements (the
            // target and a form body), the whole normalized request without.
            if self.params_view(&doc, &mut scratch).is_none() {
                normalize_into(&self.content.config, &doc, &mut scratch);
            }
            match (&mut caps, client) {
                (Some(caps), Some(client)) => table.add_from_client(
                    doc.method,
                    &scratch.text,
                    &mut scratch.params,
                    client,
                    caps,
                ),
                _ => table.add(doc.method, &scratch.text, &mut scratch.params),
            }
        }
        if n == 0 {
            return Err(FeaturizerError::EmptyCorpus);
        }
        let mut content = self.content.clone();
        content.rarity = Some(table);
        let content_hash = hash_content(&content);
        Featurizer::from_artifact(Artifact {
            content,
            content_hash,
        })
    }
}

/// The rarity features' vocabulary entries (with their document frequency over the corpus
/// `docs`): `rare:<name>` for [`RarityTable::reserved_names`], then `rare:any` and `unseen:path`, then the
/// oddity features of each level ([`params::ODD_KINDS`], then [`params::ODD_SHAPE_PATH_KINDS`]
/// when on).
pub(crate) fn rarity_entries(
    table: &RarityTable,
    docs: &[(String, String)],
    scratch: &mut params::ParamScratch,
) -> Vec<(String, u64)> {
    let mut bodies: Vec<String> = table
        .reserved_names()
        .into_iter()
        .map(|n| format!("{}{n}", params::RARE_PREFIX))
        .collect();
    bodies.push(params::RARE_ANY.into());
    bodies.push(params::UNSEEN_PATH.into());
    for &permille in &table.odd_permille {
        for kind in params::ODD_KINDS {
            bodies.push(params::odd_feature(kind, permille));
        }
        if table.odd_shape_path {
            for kind in params::ODD_SHAPE_PATH_KINDS {
                bodies.push(params::odd_feature(kind, permille));
            }
        }
    }
    if table.odd_name_variants {
        bodies.push(params::ODD_NAME_VARIANT.into());
    }
    let position: HashMap<&str, usize> = bodies
        .iter()
        .enumerate()
        .map(|(k, b)| (b.as_str(), k))
        .collect();
    let lookup = table.lookup();
    let mut df = vec![0u64; bodies.len()];
    let mut seen = vec![false; bodies.len()];
    for (method, text) in docs {
        seen.iter_mut().for_each(|s| *s = false);
        params::for_each_param_feature(method, text, false, Some(&lookup), scratch, |f| {
            if let Some(&k) = position.get(f) {
                seen[k] = true;
            }
        });
        for (d, s) in df.iter_mut().zip(&seen) {
            *d += u64::from(*s);
        }
    }
    bodies
        .iter()
        .zip(df)
        .map(|(b, d)| (format!("{PARAM_PREFIX}{b}"), d))
        .collect()
}

/// One document's distinct features (vocabulary entries, sorted: document frequency counts each
/// once per request) and its value-shape features; with `rarity_min_count`, its method and
/// normalized text go to `doc_texts`.
fn document_features(
    config: &FeaturizerConfig,
    plain: &FeaturizerConfig,
    known: &placement::KnownValues,
    doc: &RequestParts,
    scratch: &mut Scratch,
    doc_texts: &mut Vec<(String, String)>,
) -> (Vec<String>, Vec<String>) {
    // Document frequency counts each distinct feature once per request.
    let mut distinct: Vec<String> = Vec::new();
    let mut shapes: Vec<String> = Vec::new();
    let mut collect = |kind: FeatureKind, feature: &str| {
        if kind == FeatureKind::Shape {
            shapes.push(feature.to_owned());
        }
        let mut entry = String::with_capacity(kind.prefix().len() + feature.len());
        entry.push_str(kind.prefix());
        entry.push_str(feature);
        distinct.push(entry);
    };
    if let Some(pc) = &config.placements {
        // The document is the request's first window (what `transform` reads).
        let (segments, _) = placement::request_segments(doc, config, pc, known, None);
        let windows =
            placement::windows(&segments, config.max_input_bytes, pc.window_overlap_bytes);
        placement::for_each_window_feature(
            config,
            plain,
            &segments,
            &windows[0],
            &mut scratch.gram,
            &mut collect,
        );
        if config.params || config.rarity_min_count.is_some() {
            // The parameter view (`Featurizer::params_view`): the target and a form body.
            let form = RequestParts {
                body: doc.body.filter(|_| placement::body_is_form(doc)),
                ..*doc
            };
            normalize_into(config, &form, scratch);
        }
    } else {
        normalize_into(config, doc, scratch);
        for_each_configured_feature(&scratch.text, config, &mut scratch.gram, collect);
    }
    // `scratch.text` now holds the view the parameter and rarity families read.
    if config.params {
        params::for_each_param_feature(
            doc.method,
            &scratch.text,
            true,
            None,
            &mut scratch.params,
            |feature| distinct.push(format!("{PARAM_PREFIX}{feature}")),
        );
    }
    if config.rarity_min_count.is_some() {
        doc_texts.push((doc.method.to_owned(), scratch.text.clone()));
    }
    distinct.sort_unstable();
    distinct.dedup();
    (distinct, shapes)
}

/// The header values that at least `known_header_permille` thousandths of `docs` carry
/// ([`PlacementConfig::known_header_permille`]), as sorted [`placement::known_key`]s; `None`
/// when the setting is off.
fn known_header_values<'a>(
    config: &FeaturizerConfig,
    docs: &[RequestParts],
    known_docs: impl IntoIterator<Item = RequestParts<'a>>,
) -> Option<Vec<String>> {
    let pc = config.placements.as_ref()?;
    let permille = pc.known_header_permille?;
    let mut counts: HashMap<String, u64> = HashMap::new();
    for doc in docs {
        let split = placement::split_request(doc, pc, config.decode_rounds, config.include_body);
        let mut keys: Vec<String> = split
            .parts
            .iter()
            .filter_map(placement::known_key)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            *counts.entry(k).or_default() += 1;
        }
    }
    let n = docs.len() as u64;
    let mut known: Vec<String> = counts
        .into_iter()
        .filter(|(_, c)| c * 1000 >= u64::from(permille) * n)
        .map(|(k, _)| k)
        .collect();
    for doc in known_docs {
        let split = placement::split_request(&doc, pc, config.decode_rounds, config.include_body);
        known.extend(split.parts.iter().filter_map(placement::known_key));
    }
    known.sort_unstable();
    known.dedup();
    Some(known)
}

/// The document frequency of each "unseen name/shape" feature: the documents with a value-shape
/// pair not `kept` in the vocabulary, by shape.
fn unseen_shape_df(
    kept: &std::collections::HashSet<&str>,
    doc_shapes: &[Vec<String>],
) -> [u64; UNSEEN_SHAPES.len()] {
    let mut unseen_df = [0u64; UNSEEN_SHAPES.len()];
    for pairs in doc_shapes {
        let mut seen = [false; UNSEEN_SHAPES.len()];
        for body in pairs {
            if !kept.contains(body.as_str()) {
                let shape = body.rsplit_once('=').map_or("", |(_, shape)| shape);
                if let Some(k) = UNSEEN_SHAPES
                    .iter()
                    .position(|u| u.strip_prefix(UNSEEN_NAME) == Some(shape))
                {
                    seen[k] = true;
                }
            }
        }
        for (d, s) in unseen_df.iter_mut().zip(seen) {
            *d += u64::from(s);
        }
    }
    unseen_df
}
