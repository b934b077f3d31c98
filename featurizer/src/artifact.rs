//! The fitted [`Featurizer`] as a versioned, hashed JSON artifact: its content, loading,
//! saving and accessors.
use super::*;

/// FxHash (the rustc hasher): a fast hash for the read-only vocabulary map. Hash flooding is not
/// a concern: attacker-controlled tokens are only looked up, never inserted, so the table's
/// chains are fixed when the artifact is loaded.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let v = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(SEED);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(SEED);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type VocabIndex = HashMap<Box<str>, u32, BuildHasherDefault<FxHasher>>;

pub(crate) const NOT_IN_VOCABULARY: u32 = u32::MAX;

/// What the artifact's hash covers: everything but the hash itself. Field order is the canonical
/// order (serde_json writes struct fields in declaration order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Content {
    pub(crate) kind: String,
    pub(crate) format_version: u32,
    pub(crate) token_pattern: String,
    pub(crate) idf_formula: String,
    pub(crate) config: FeaturizerConfig,
    pub(crate) documents: u64,
    pub(crate) vocabulary: Vec<String>,
    pub(crate) document_frequency: Vec<u64>,
    pub(crate) idf: Vec<f32>,
    /// The public-relative rarity table ([`FeaturizerConfig::rarity_min_count`]); absent (and not
    /// written) otherwise, so older artifacts keep their hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rarity: Option<RarityTable>,
    /// The known header values ([`PlacementConfig::known_header_permille`]), sorted keys
    /// (`placement`, name and value joined by tabs); absent (and not written) otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) known_header_values: Option<Vec<String>>,
}

/// The artifact as stored: the content plus its sha256.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Artifact {
    #[serde(flatten)]
    pub(crate) content: Content,
    pub(crate) content_hash: String,
}

/// Only the two fields needed to decide whether the rest can be read at all.
#[derive(Deserialize)]
pub(crate) struct ArtifactHeader {
    pub(crate) kind: Option<String>,
    pub(crate) format_version: Option<serde_json::Value>,
}

pub(crate) const IDF_FORMULA: &str = "ln((1+n)/(1+df))+1";

/// A fitted featurizer: settings, vocabulary and IDF. Serializes as the versioned artifact.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "Artifact", try_from = "Artifact")]
pub struct Featurizer {
    pub(crate) content: Content,
    pub(crate) content_hash: String,
    pub(crate) index: VocabIndex,
    /// Vocabulary index of each one-byte (ASCII) token, or `NOT_IN_VOCABULARY`: about half the
    /// tokens of a request are single symbols (`/`, `=`, `&`, ...), and this skips their hashing.
    pub(crate) ascii_index: [u32; 128],
    /// Vocabulary index of each character n-gram, keyed without its prefix (no copying on the
    /// hot path).
    pub(crate) char_index: VocabIndex,
    /// The character n-grams of at most [`PACKED_NGRAM_BYTES`] bytes again, by integer key (all
    /// of a 1–3-gram vocabulary of ASCII text): what the hot path looks them up in.
    pub(crate) char_table: NgramTable,
    /// Vocabulary index of each value-shape feature, keyed without its prefix.
    pub(crate) shape_index: VocabIndex,
    /// Vocabulary index of each parameter-aware or rarity feature, keyed without its prefix.
    pub(crate) param_index: VocabIndex,
    /// The rarity table in lookup form.
    pub(crate) rarity: Option<params::RarityLookup>,
    /// Vocabulary index of each placement feature, keyed without its prefix.
    pub(crate) placement_index: VocabIndex,
    /// The config without value shapes: what every part but a query/form pair is read with.
    pub(crate) plain_config: FeaturizerConfig,
    /// The known header values in lookup form (empty when off).
    pub(crate) known: placement::KnownValues,
    /// Vocabulary indices of the public priors' features with
    /// [`FeaturizerConfig::priors_undiluted`], ascending (empty when off): out of the norm.
    pub(crate) undiluted: Vec<u32>,
}

impl PartialEq for Featurizer {
    fn eq(&self, other: &Self) -> bool {
        self.content == other.content && self.content_hash == other.content_hash
    }
}

impl From<Featurizer> for Artifact {
    fn from(f: Featurizer) -> Self {
        Artifact {
            content: f.content,
            content_hash: f.content_hash,
        }
    }
}

impl TryFrom<Artifact> for Featurizer {
    type Error = FeaturizerError;
    fn try_from(a: Artifact) -> Result<Self, FeaturizerError> {
        Featurizer::from_artifact(a)
    }
}

pub(crate) fn hash_content(content: &Content) -> String {
    // Serializing plain data to a Vec cannot fail.
    let bytes = serde_json::to_vec(content).unwrap_or_default();
    hex::encode(Sha256::digest(&bytes))
}

impl Featurizer {
    pub(crate) fn from_artifact(a: Artifact) -> Result<Self, FeaturizerError> {
        let c = &a.content;
        check_content(c, &a.content_hash)?;
        let VocabIndices {
            index,
            char_index,
            shape_index,
            placement_index,
            param_index,
        } = vocab_indices(c)?;
        let mut ascii_index = [NOT_IN_VOCABULARY; 128];
        for (tok, &i) in &index {
            if let &[b] = tok.as_bytes() {
                if b < 128 {
                    ascii_index[b as usize] = i;
                }
            }
        }
        let packed: Vec<(u64, u32)> = char_index
            .iter()
            .filter(|(body, _)| body.len() <= PACKED_NGRAM_BYTES)
            .map(|(body, &i)| (packed_ngram_key(body.as_bytes()), i))
            .collect();
        let char_table = NgramTable::new(&packed);
        let rarity = c.rarity.as_ref().map(RarityTable::lookup);
        let mut known = placement::KnownValues::from_keys(
            c.known_header_values.iter().flatten(),
            c.config
                .placements
                .as_ref()
                .is_some_and(|pc| pc.known_digit_runs),
        );
        let priors = c.config.libinjection || c.config.signatures;
        if let (Some(table), true, true) = (&c.rarity, c.config.placements.is_some(), priors) {
            known = known.with_paths(&table.paths);
        }
        let plain_config = FeaturizerConfig {
            value_shapes: false,
            ..c.config.clone()
        };
        let mut undiluted: Vec<u32> = if c.config.priors_undiluted {
            c.config
                .libinjection
                .then_some(crate::LIBINJECTION_FEATURES.as_slice())
                .into_iter()
                .chain(
                    c.config
                        .signatures
                        .then_some(crate::SIGNATURE_FEATURES.as_slice()),
                )
                .flatten()
                .filter_map(|body| placement_index.get(*body).copied())
                .collect()
        } else {
            Vec::new()
        };
        undiluted.sort_unstable();
        Ok(Featurizer {
            content: a.content,
            content_hash: a.content_hash,
            index,
            ascii_index,
            char_index,
            char_table,
            shape_index,
            param_index,
            rarity,
            placement_index,
            plain_config,
            known,
            undiluted,
        })
    }

    /// This featurizer without the site's format checks: no `rare:*`, `unseen:path` or `odd:*`
    /// feature (a parameter value, name, method or path that the public pool rarely or never has)
    /// is emitted any more; every other feature is as before. Serving only (pate-proxy's
    /// `format_checks: false`): the artifact and its content hash are unchanged, and a model
    /// trained with these features scores on the rest. Why: they are a positive-security model
    /// of the site, and a request shape the public pool does not cover (a new page or field) is
    /// flagged however benign its content; where the operator knows the pool does not cover the
    /// site, content alone is judged.
    pub fn without_format_checks(mut self) -> Self {
        self.rarity = None;
        self
    }

    /// Whether the site's format checks are emitted (the artifact has a rarity table and
    /// [`Featurizer::without_format_checks`] was not applied).
    pub fn format_checks(&self) -> bool {
        self.rarity.is_some()
    }

    /// The vocabulary index of `unseen:path` — a request whose path the public pool holds fewer
    /// than `rarity_min_count` times carries it — where the site's format checks are emitted;
    /// `None` otherwise. What pate-proxy counts to tell an operator that the site's format model
    /// does not cover the traffic it serves (`patewaf_unseen_path_requests_total`).
    pub fn unseen_path_index(&self) -> Option<u32> {
        self.rarity.as_ref()?;
        self.lookup_kind(FeatureKind::Param, params::UNSEEN_PATH)
    }

    /// The settings it was fitted with.
    pub fn config(&self) -> &FeaturizerConfig {
        &self.content.config
    }

    /// Dimension of the feature vectors (vocabulary size; at most `top_k`).
    pub fn dim(&self) -> usize {
        self.content.vocabulary.len()
    }

    /// Number of requests it was fitted on.
    pub fn documents(&self) -> u64 {
        self.content.documents
    }

    /// The vocabulary; index i is feature i.
    pub fn vocabulary(&self) -> &[String] {
        &self.content.vocabulary
    }

    /// IDF of each vocabulary token.
    pub fn idf(&self) -> &[f32] {
        &self.content.idf
    }

    /// sha256 (hex) of the canonical JSON of the artifact's content (everything but the hash).
    pub fn content_hash(&self) -> &str {
        &self.content_hash
    }

    /// The artifact as pretty JSON (deterministic; ends with a newline).
    pub fn to_json(&self) -> Vec<u8> {
        let artifact = Artifact {
            content: self.content.clone(),
            content_hash: self.content_hash.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&artifact).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Reads an artifact, checking its kind, format version, content hash and consistency.
    pub fn from_json(bytes: &[u8]) -> Result<Self, FeaturizerError> {
        // Check kind and version first, so that an artifact of another version gets a version
        // error rather than a confusing "missing field".
        let header: ArtifactHeader =
            serde_json::from_slice(bytes).map_err(FeaturizerError::Parse)?;
        let kind = header.kind.unwrap_or_else(|| "(no kind)".into());
        let version_ok = header.format_version.as_ref().and_then(|v| v.as_u64())
            == Some(u64::from(FORMAT_VERSION));
        if kind != ARTIFACT_KIND || !version_ok {
            let version = header
                .format_version
                .map(|v| v.to_string())
                .unwrap_or_else(|| "(none)".into());
            return Err(FeaturizerError::Version {
                found: format!("{kind} version {version}"),
            });
        }
        let artifact: Artifact = serde_json::from_slice(bytes).map_err(FeaturizerError::Parse)?;
        Featurizer::from_artifact(artifact)
    }

    /// Writes the artifact atomically ([`write_atomic`]).
    pub fn save(&self, path: &Path) -> Result<(), FeaturizerError> {
        write_atomic(path, &self.to_json()).map_err(|source| FeaturizerError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Reads and checks an artifact file (errors name the file).
    pub fn load(path: &Path) -> Result<Self, FeaturizerError> {
        let bytes = std::fs::read(path).map_err(|source| FeaturizerError::Io {
            path: path.to_owned(),
            source,
        })?;
        Featurizer::from_json(&bytes).map_err(|e| FeaturizerError::InFile {
            path: path.to_owned(),
            source: Box::new(e),
        })
    }
}

/// Checks everything of an artifact's content but its vocabulary entries: kind, version, hash
/// (against `content_hash`), rules, settings, sizes, IDF and the rarity table.
fn check_content(c: &Content, content_hash: &str) -> Result<(), FeaturizerError> {
    if c.kind != ARTIFACT_KIND || c.format_version != FORMAT_VERSION {
        return Err(FeaturizerError::Version {
            found: format!("{} version {}", c.kind, c.format_version),
        });
    }
    let computed = hash_content(c);
    if computed != content_hash {
        return Err(FeaturizerError::HashMismatch {
            stored: content_hash.to_string(),
            computed,
        });
    }
    if c.token_pattern != TOKEN_PATTERN || c.idf_formula != IDF_FORMULA {
        return Err(FeaturizerError::Artifact(ArtifactProblem::Build {
            token_pattern: c.token_pattern.clone(),
            idf_formula: c.idf_formula.clone(),
        }));
    }
    validate_config(&c.config)?;
    let k = c.vocabulary.len();
    if c.idf.len() != k || c.document_frequency.len() != k {
        return Err(FeaturizerError::Artifact(ArtifactProblem::Lengths {
            vocabulary: k,
            idf: c.idf.len(),
            document_frequency: c.document_frequency.len(),
        }));
    }
    if k > c.config.top_k || k > u32::MAX as usize {
        return Err(FeaturizerError::Artifact(ArtifactProblem::TooManyTokens {
            tokens: k,
            top_k: c.config.top_k,
        }));
    }
    if let Some(bad) = c.idf.iter().find(|v| !v.is_finite() || **v <= 0.0) {
        return Err(FeaturizerError::Artifact(ArtifactProblem::Idf(f64::from(
            *bad,
        ))));
    }
    match (&c.rarity, c.config.rarity_min_count) {
        (None, None) => {}
        (Some(t), Some(m))
            if t.min_count == m
                && m > 0
                && t.odd_permille == c.config.odd_permille
                && t.odd_shape_path == c.config.odd_shape_path => {}
        _ => {
            return Err(FeaturizerError::Artifact(ArtifactProblem::Rarity {
                table: c
                    .rarity
                    .as_ref()
                    .map(|t| (t.min_count as u64, t.odd_permille.clone(), t.odd_shape_path)),
                min_count: c.config.rarity_min_count.map(|m| m as u64),
                odd_permille: c.config.odd_permille.clone(),
                odd_shape_path: c.config.odd_shape_path,
            }))
        }
    }
    if let Some(t) = &c.rarity {
        if t.odd_name_variants != c.config.odd_name_variants {
            return Err(FeaturizerError::Artifact(
                ArtifactProblem::RarityNameVariants {
                    table: t.odd_name_variants,
                    setting: c.config.odd_name_variants,
                },
            ));
        }
    }
    Ok(())
}

/// The vocabulary's entries by family (the maps from a feature to its index).
struct VocabIndices {
    index: VocabIndex,
    char_index: VocabIndex,
    shape_index: VocabIndex,
    placement_index: VocabIndex,
    param_index: VocabIndex,
}

/// Sorts every vocabulary entry into its family's map, refusing an entry its settings cannot
/// produce and a duplicate.
fn vocab_indices(c: &Content) -> Result<VocabIndices, FeaturizerError> {
    let k = c.vocabulary.len();
    let mut v = VocabIndices {
        index: VocabIndex::with_capacity_and_hasher(k, Default::default()),
        char_index: VocabIndex::default(),
        shape_index: VocabIndex::default(),
        placement_index: VocabIndex::default(),
        param_index: VocabIndex::default(),
    };
    for (i, tok) in c.vocabulary.iter().enumerate() {
        let (family, key) = entry_family(c, tok).map_err(|problem| {
            FeaturizerError::Artifact(ArtifactProblem::Entry {
                index: i,
                token: tok.to_string(),
                problem,
            })
        })?;
        let map = match family {
            Family::Token => &mut v.index,
            Family::Char => &mut v.char_index,
            Family::Shape => &mut v.shape_index,
            Family::Placement => &mut v.placement_index,
            Family::Param => &mut v.param_index,
        };
        if map.insert(key.into(), i as u32).is_some() {
            return Err(FeaturizerError::Artifact(ArtifactProblem::Duplicate(
                tok.to_string(),
            )));
        }
    }
    Ok(v)
}

/// The vocabulary families ([`VocabIndices`]).
enum Family {
    Token,
    Char,
    Shape,
    Placement,
    Param,
}

/// The family of a vocabulary entry and its key there (the entry without its family's prefix);
/// `Err`: why the featurizer's settings cannot produce it.
fn entry_family<'t>(c: &Content, tok: &'t str) -> Result<(Family, &'t str), String> {
    if let Some(body) = tok.strip_prefix(PLACEMENT_PREFIX) {
        let known = body
            .rsplit_once('=')
            .is_some_and(|(p, _)| p == BASE64_MARK || Placement::from_name(p).is_some())
            || (c.config.libinjection && LIBINJECTION_FEATURES.contains(&body))
            || (c.config.signatures && crate::SIGNATURE_FEATURES.contains(&body));
        if c.config.placements.is_none() || !known {
            return Err(
                "is a placement feature, but placements is off or it names no placement (or libinjection's or a signature's, but that family is off)"
                    .into(),
            );
        }
        return Ok((Family::Placement, body));
    }
    if let Some(body) = tok.strip_prefix(PARAM_PREFIX) {
        if !c.config.params && c.config.rarity_min_count.is_none() {
            return Err("is a parameter feature, but params and rarity_min_count are off".into());
        }
        return Ok((Family::Param, body));
    }
    if let Some(body) = tok.strip_prefix(CHAR_NGRAM_PREFIX) {
        let n = body.chars().count();
        return match c.config.char_ngrams {
            Some([lo, hi]) if (lo..=hi).contains(&n) => Ok((Family::Char, body)),
            _ => Err(format!(
                "is a character {n}-gram, but char_ngrams is {:?}",
                c.config.char_ngrams
            )),
        };
    }
    if let Some(body) = tok.strip_prefix(VALUE_SHAPE_PREFIX) {
        if !c.config.value_shapes || !body.contains('=') {
            return Err(format!(
                "is a value shape, but value_shapes is {} or it has no '='",
                c.config.value_shapes
            ));
        }
        return Ok((Family::Shape, body));
    }
    let pieces: Vec<&str> = tok.split(' ').collect();
    let well_formed = pieces.len() <= c.config.ngram_max
        && pieces.iter().all(|piece| {
            let mut toks = tokenize(piece);
            toks.next() == Some(*piece) && toks.next().is_none()
        });
    if !well_formed {
        return Err(format!(
            "is not a token or an n-gram of at most {} tokens",
            c.config.ngram_max
        ));
    }
    Ok((Family::Token, tok))
}
