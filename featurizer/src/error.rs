//! [`FeaturizerError`].
use super::*;

/// Errors of the featurizer crate.
#[derive(Debug, thiserror::Error)]
pub enum FeaturizerError {
    /// Reading or writing an artifact failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bytes are not a featurizer artifact (bad JSON or missing fields).
    #[error("not a featurizer artifact: {0}")]
    Parse(#[source] serde_json::Error),
    /// The artifact is of another kind or format version.
    #[error("featurizer artifact is {found}, expected {ARTIFACT_KIND} version {FORMAT_VERSION}; refit the featurizer with this version")]
    Version {
        /// What the file says it is.
        found: String,
    },
    /// The stored content hash does not match the content (the file was edited or corrupted).
    #[error("featurizer artifact content hash mismatch: file says {stored}, content hashes to {computed}")]
    HashMismatch {
        /// The hash written in the file.
        stored: String,
        /// The hash of the content as read.
        computed: String,
    },
    /// A featurizer setting has a value it cannot have.
    #[error("invalid featurizer setting: {key}: {reason}")]
    Setting {
        /// The setting (`top_k`, `char_ngrams`, ...).
        key: &'static str,
        /// What was expected, and what was found.
        reason: String,
    },
    /// Fitting on no request.
    #[error("cannot fit on an empty corpus (0 requests)")]
    EmptyCorpus,
    /// The artifact is inconsistent (e.g. vocabulary and IDF lengths differ).
    #[error("invalid featurizer artifact: {0}")]
    Artifact(ArtifactProblem),
    /// An error while loading a file, with the file named.
    #[error("{path}: {source}")]
    InFile {
        /// The artifact file.
        path: PathBuf,
        /// What went wrong.
        source: Box<FeaturizerError>,
    },
}

/// What is inconsistent in a featurizer artifact.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactProblem {
    /// Written by a build with another tokenizer or IDF.
    #[error("artifact uses token pattern {token_pattern:?} and IDF {idf_formula:?}; this build uses {TOKEN_PATTERN:?} and {IDF_FORMULA:?}")]
    Build {
        /// The artifact's token pattern.
        token_pattern: String,
        /// The artifact's IDF formula.
        idf_formula: String,
    },
    /// Vocabulary, IDF and document frequencies of different lengths.
    #[error("vocabulary has {vocabulary} tokens but idf has {idf} and document_frequency {document_frequency}")]
    Lengths {
        /// Vocabulary tokens.
        vocabulary: usize,
        /// IDF values.
        idf: usize,
        /// Document frequencies.
        document_frequency: usize,
    },
    /// More tokens than `top_k`.
    #[error("vocabulary has {tokens} tokens, more than top_k = {top_k}")]
    TooManyTokens {
        /// Vocabulary tokens.
        tokens: usize,
        /// The setting.
        top_k: usize,
    },
    /// An IDF value that is not a positive finite number.
    #[error("idf value {0} is not a positive finite number")]
    Idf(f64),
    /// The rarity table and `rarity_min_count` / `odd_permille` / `odd_shape_path` disagree.
    #[error("rarity table ({}) does not match rarity_min_count {min_count:?}, odd_permille {odd_permille:?} and odd_shape_path {odd_shape_path}", table.as_ref().map_or("absent".to_string(), |(t, o, s)| format!("min_count {t}, odd_permille {o:?}, odd_shape_path {s}")))]
    Rarity {
        /// The table's min_count, oddity levels and shape/path kinds (None: no table).
        table: Option<(u64, Vec<u32>, bool)>,
        /// The setting.
        min_count: Option<u64>,
        /// The oddity levels setting.
        odd_permille: Vec<u32>,
        /// The shape/path oddity setting.
        odd_shape_path: bool,
    },
    /// The rarity table and `odd_name_variants` disagree.
    #[error("rarity table has odd_name_variants {table}, the settings {setting}")]
    RarityNameVariants {
        /// The table's.
        table: bool,
        /// The setting.
        setting: bool,
    },
    /// A vocabulary entry of a feature family the settings do not have.
    #[error("vocabulary entry {index} ({token:?}) {problem}")]
    Entry {
        /// Its index.
        index: usize,
        /// The token.
        token: String,
        /// Which family it is and which setting excludes it.
        problem: String,
    },
    /// A token listed twice.
    #[error("vocabulary token {0:?} appears twice")]
    Duplicate(String),
}
