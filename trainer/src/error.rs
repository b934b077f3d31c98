//! The trainer's one error type.
use std::path::PathBuf;

/// Everything that can go wrong in `pate-trainer`. Each variant names what and where (the file,
/// the line, the key, what was expected) and keeps the underlying error as its source.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON artifact could not be read as what it should be.
    #[error("{path}: not valid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error (line and column).
        source: serde_json::Error,
    },
    /// A value could not be written as JSON.
    #[error("{what}: cannot serialize: {source}")]
    Serialize {
        /// What was being written (a file, the summary, ...).
        what: String,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// A value could not be written as YAML.
    #[error("{what}: cannot serialize: {source}")]
    SerializeYaml {
        /// What was being written.
        what: String,
        /// The serializer's error.
        source: serde_yaml::Error,
    },
    /// A configuration file is invalid.
    #[error("{path}: {source}")]
    ConfigFile {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong in it.
        source: Box<Error>,
    },
    /// The YAML of a configuration does not parse or does not match the schema (serde_yaml's
    /// message names the key, the line and the column).
    #[error("invalid configuration: {source}")]
    ConfigYaml {
        /// The parser's error.
        #[from]
        source: serde_yaml::Error,
    },
    /// A configuration key has a value it cannot have.
    #[error("invalid configuration: {key}: {reason}")]
    ConfigKey {
        /// The key (dotted: `teachers.count`).
        key: String,
        /// What was expected, and what was found.
        reason: String,
    },
    /// A subcommand's flags do not fit together (a usage error).
    #[error("invalid configuration: {command}: {problem}")]
    Usage {
        /// The subcommand (`aggregate`, `teach`, `score`).
        command: &'static str,
        /// What is wrong.
        problem: UsageProblem,
    },
    /// A command-line flag that another one requires is missing.
    #[error("invalid configuration: --{flag} is required with {with}")]
    FlagRequired {
        /// The missing flag (without `--`).
        flag: &'static str,
        /// What requires it (`--mechanism lnmax`).
        with: String,
    },
    /// A command-line flag was given where it has no effect.
    #[error("invalid configuration: --{flag} only applies {applies}")]
    FlagNotApplicable {
        /// The flag (without `--`).
        flag: &'static str,
        /// Where it applies (`to --mechanism confident-gnmax`).
        applies: &'static str,
    },
    /// A command-line flag has a value it cannot have.
    #[error("invalid configuration: --{flag} {value} {problem}")]
    FlagValue {
        /// The flag (without `--`).
        flag: &'static str,
        /// The value given, as written in the message.
        value: String,
        /// What is wrong with it (`is not a probability in [0, 1]`).
        problem: &'static str,
    },
    /// A stage command's input or output is given neither by its flag nor by `--run`.
    #[error("invalid configuration: {command}: pass --{flag} or --run RUN_DIR")]
    MissingPath {
        /// The subcommand.
        command: String,
        /// The flag that gives it (without `--`).
        flag: String,
    },
    /// `export` lacks an input that neither its flag nor `--run` gives.
    #[error("invalid configuration: export: no {what}: pass --{flag} FILE or --run RUN_DIR")]
    ExportInput {
        /// The input (`student`, `featurizer`, `output directory`).
        what: &'static str,
        /// The flag that gives it (without `--`).
        flag: &'static str,
    },
    /// `export` of a run report without a privacy report, without `--not-private`.
    #[error(
        "invalid configuration: export: {report} has no privacy report (`privacy`), so no ε can be \
         claimed; pass --not-private to export a bundle that claims none"
    )]
    NoPrivacyReport {
        /// The report file.
        report: String,
    },
    /// `export` of a run that is not private, without `--not-private`.
    #[error(
        "invalid configuration: export: the run of {report} is not private ({source}): its ε does \
         not hold; pass --not-private to export it with no ε (the dashboard then says so)"
    )]
    NotPrivate {
        /// The report file.
        report: String,
        /// Why its ε does not hold.
        source: privacy::report::NotPrivate,
    },
    /// `export` finds no threshold: neither `--threshold` nor the student file records one.
    #[error("invalid configuration: export: no threshold: {} does not record one; pass --threshold", .student.display())]
    NoThreshold {
        /// The student model file.
        student: PathBuf,
    },
    /// The CUDA device asked for (`device: cuda:<i>`, `--device`) cannot be used.
    #[error("invalid configuration: device cuda:{index}: {problem}")]
    Cuda {
        /// The device index asked for.
        index: usize,
        /// Why it cannot be used.
        problem: CudaProblem,
    },
    /// A malicious vote share (`aggregation.malicious_vote_share`, `--malicious-vote-share`)
    /// outside (0, 1).
    #[error("invalid configuration: malicious vote share: must be in (0, 1), got {0}")]
    VoteShare(f64),
    /// A split the evaluation needs holds one class only.
    #[error(
        "invalid configuration: the {split} split needs both benign and malicious requests; add \
         data or change split"
    )]
    SplitClasses {
        /// The split (`student validation`, `test`).
        split: &'static str,
    },
    /// The same file is listed under two roles.
    #[error(
        "invalid configuration: {}:{line} is a {first_role} record and also a {second_role} one \
         ({}:{line}): the same file is under {first_role}: and {second_role}:; a record plays one \
         role (a private record under another role would be published, a validation or test \
         record would judge what it trained)",
        first.display(),
        second.display()
    )]
    FileInTwoRoles {
        /// The role listed first (`private`, `public`, `validation`, `test`).
        first_role: &'static str,
        /// The file under it.
        first: PathBuf,
        /// The other role.
        second_role: &'static str,
        /// The file under it.
        second: PathBuf,
        /// The first record's 1-based line.
        line: usize,
    },
    /// A line of a label file is not a label the input needs.
    #[error("{path}:{line}: {found} (expected {expected})")]
    Label {
        /// The label file.
        path: PathBuf,
        /// Its 1-based line.
        line: usize,
        /// What the line holds.
        found: String,
        /// What it should hold.
        expected: &'static str,
    },
    /// A line of a file of header values (`public_examples.user_agents`) is not one.
    #[error("{path}:{line}: {problem}")]
    HeaderValueLine {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A request of a dataset has no label where one is needed.
    #[error("{path}:{line}: request has no label (give the dataset a `label:` in the config)")]
    Unlabelled {
        /// The dataset file.
        path: PathBuf,
        /// The request's 1-based line.
        line: usize,
    },
    /// A request (of a set whose file is not known here) has no label where one is needed.
    #[error("request at line {line} has no label")]
    UnlabelledRecord {
        /// The request's 1-based line in its file.
        line: usize,
    },
    /// Two inputs that must have as many rows do not.
    #[error("{path} has {found} {what} for {expected} rows of {other}")]
    RowCount {
        /// The file with the wrong count.
        path: PathBuf,
        /// What it holds (`labels`).
        what: &'static str,
        /// How many it holds.
        found: usize,
        /// The file it must match.
        other: PathBuf,
        /// How many rows that one has.
        expected: usize,
    },
    /// Not one multiplicity per row.
    #[error("{what}: {found} multiplicities for {rows} rows")]
    Multiplicities {
        /// The rows (`answered queries`, `validation`).
        what: &'static str,
        /// Multiplicities given.
        found: usize,
        /// Rows.
        rows: usize,
    },
    /// A feature matrix does not have the width the model or featurizer takes.
    #[error("{what}: {found} features, expected {expected} (the width of {of})")]
    FeatureWidth {
        /// The matrix (a file or a set).
        what: String,
        /// Its columns.
        found: usize,
        /// What sets the width (`the featurizer F`, `the teachers in D`, `the model`).
        of: String,
        /// The width it takes.
        expected: usize,
    },
    /// Data files without a single request.
    #[error("no records in {paths:?}")]
    NoRecords {
        /// The files.
        paths: Vec<PathBuf>,
    },
    /// An input that must not be empty is.
    #[error("{what}: {missing}")]
    Empty {
        /// The input (a file, the aggregation).
        what: String,
        /// What is missing.
        missing: &'static str,
    },
    /// A directory of teachers is not one teacher set.
    #[error("{path}: {problem}")]
    Teachers {
        /// The directory or teacher file.
        path: PathBuf,
        /// What is wrong.
        problem: TeacherProblem,
    },
    /// A model file cannot be read or written.
    #[error("{path}: {problem}")]
    ModelFile {
        /// The model file.
        path: PathBuf,
        /// What is wrong.
        problem: ModelFileProblem,
    },
    /// The safetensors codec refused a model.
    #[error("{what}: safetensors: {source}")]
    Safetensors {
        /// The file or tensor.
        what: String,
        /// The codec's error.
        source: safetensors::SafeTensorError,
    },
    /// A network is not a valid MLP.
    #[error("{what}: {source}")]
    Network {
        /// The file or ensemble member.
        what: String,
        /// What the validation found (boxed: `BundleError` would make every `Result` of the
        /// crate large).
        source: Box<bundle::BundleError>,
    },
    /// The models of an ensemble, or the data given to train it, do not fit together.
    #[error("ensemble: {0}")]
    Ensemble(EnsembleProblem),
    /// One teacher's training data is unusable.
    #[error("teacher {teacher}: {source}")]
    Teacher {
        /// The teacher (shard) index.
        teacher: usize,
        /// What is wrong.
        source: Box<Error>,
    },
    /// A shard too small to hold out samples from.
    #[error("a shard of {samples} samples cannot be split into training and held-out samples")]
    ShardTooSmall {
        /// Samples in the shard.
        samples: usize,
    },
    /// Votes that are not one teacher set's votes on two classes.
    #[error("votes: {0}")]
    Votes(VoteProblem),
    /// A student threshold rule cannot choose a threshold.
    #[error("cannot choose the student's threshold: {0}")]
    Threshold(&'static str),
    /// `privacy.mechanism: model_average` cannot release or label with these teachers or data.
    #[error("privacy.mechanism model_average: {0}")]
    ModelAverage(String),
    /// The operating system gave no entropy.
    #[error("no OS entropy: {0}")]
    Entropy(#[source] rand::rngs::SysError),
    /// The featurizer a model was trained with is not the one given.
    #[error("{model} was trained with featurizer {trained_with}, but {featurizer} is {found}")]
    FeaturizerMismatch {
        /// The model file.
        model: PathBuf,
        /// The featurizer hash it records.
        trained_with: String,
        /// The featurizer file given.
        featurizer: PathBuf,
        /// Its hash.
        found: String,
    },
    /// The exported bundle does not hold what was written.
    #[error("{dir}: {problem}")]
    Export {
        /// The bundle directory.
        dir: PathBuf,
        /// What differs.
        problem: String,
    },
    /// `calibrate` cannot hold the share asked on the traffic given.
    #[error("calibrate: {bundle}: {problem}")]
    Calibrate {
        /// The bundle directory.
        bundle: PathBuf,
        /// What cannot be done.
        problem: String,
    },
    /// Drawing a plot failed (plotters' message).
    #[error("plot: {0}")]
    Plot(String),
    /// The privacy whitelist refused the run's privacy report.
    #[error("privacy whitelist: {0}")]
    Whitelist(#[source] privacy::report::NotPrivate),
    /// The featurizer failed.
    #[error(transparent)]
    Featurizer(#[from] featurizer::FeaturizerError),
    /// A dataset could not be loaded.
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    /// The privacy core rejected an input.
    #[error(transparent)]
    Privacy(#[from] privacy::PrivacyError),
    /// A bundle could not be written or loaded.
    #[error(transparent)]
    Bundle(#[from] bundle::BundleError),
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

/// What is wrong with a directory of teachers.
#[derive(Debug, thiserror::Error)]
pub enum TeacherProblem {
    /// No teacher files.
    #[error("no teacher-*.safetensors files")]
    None,
    /// Not as many teacher files as shards.
    #[error("{found} teacher files, expected {expected} (remove stale files)")]
    Count {
        /// Files found.
        found: usize,
        /// Shards.
        expected: usize,
    },
    /// A model file that is not a teacher.
    #[error("not a teacher model")]
    NotATeacher,
    /// Teachers trained on different featurizers.
    #[error(
        "trained on featurizer {hash}, {first} on {first_hash}: teachers must share one featurizer"
    )]
    Featurizer {
        /// This teacher's featurizer hash.
        hash: String,
        /// The first teacher's file.
        first: PathBuf,
        /// Its featurizer hash.
        first_hash: String,
    },
    /// Teachers of different layer widths.
    #[error("layer widths {widths:?} differ from {first_widths:?} of {first}")]
    Widths {
        /// This teacher's widths.
        widths: Vec<usize>,
        /// The first teacher's file.
        first: PathBuf,
        /// Its widths.
        first_widths: Vec<usize>,
    },
}

/// What is wrong with a model file.
#[derive(Debug, thiserror::Error)]
pub enum ModelFileProblem {
    /// Not safetensors.
    #[error("not a safetensors file: {0}")]
    NotSafetensors(#[source] safetensors::SafeTensorError),
    /// No pate-waf metadata.
    #[error("no `{0}` metadata: not a pate-waf model file")]
    NoMetadata(&'static str),
    /// The metadata is not a model info.
    #[error("model info: {0}")]
    Info(#[source] serde_json::Error),
    /// Another format version.
    #[error("model file version {found} (this pate-trainer reads {expected})")]
    Version {
        /// The file's version.
        found: u32,
        /// The version this trainer reads.
        expected: u32,
    },
    /// A tensor is missing.
    #[error("missing tensor {0}")]
    MissingTensor(String),
    /// A tensor has the wrong type or rank.
    #[error("tensor {name}: expected {expected}, got {found}")]
    Tensor {
        /// The tensor.
        name: String,
        /// What it should be.
        expected: String,
        /// What it is.
        found: String,
    },
}

/// The models of an ensemble, or the data given to train it, do not fit together.
#[derive(Debug, thiserror::Error)]
pub enum EnsembleProblem {
    /// No members.
    #[error("an ensemble needs at least one member")]
    NoMembers,
    /// Members of different widths.
    #[error("member {member} has layer widths {widths:?}, member 0 has {first:?}")]
    Widths {
        /// The member.
        member: usize,
        /// Its widths.
        widths: Vec<usize>,
        /// Member 0's.
        first: Vec<usize>,
    },
    /// Not one entry per member.
    #[error("{members} members but {found} {what}")]
    PerMember {
        /// Members.
        members: usize,
        /// What was given per member.
        what: &'static str,
        /// How many.
        found: usize,
    },
    /// A mix of members with and without held-out samples.
    #[error("members without held-out samples need member_threshold: half")]
    FixedEpochsThreshold,
    /// A member without training (or held-out) samples.
    #[error(
        "member {member} has {train} training and {holdout} held-out samples; both must be at least 1 \
         (or every member has no held-out samples)"
    )]
    Samples {
        /// The member.
        member: usize,
        /// Training samples.
        train: usize,
        /// Held-out samples.
        holdout: usize,
    },
    /// A member's training-row weights are not one finite positive number per row.
    #[error("member {member}: {weights} training-row weights for {rows} rows (one finite positive weight per row)")]
    Weights {
        /// The member.
        member: usize,
        /// Weights given.
        weights: usize,
        /// Training rows.
        rows: usize,
    },
    /// A member's data has the wrong shape.
    #[error("member {member}: {set} set has {rows} rows of {cols} features and {labels} labels (model takes {input})")]
    Shape {
        /// The member.
        member: usize,
        /// `training` or `held-out`.
        set: &'static str,
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// Labels.
        labels: usize,
        /// The model's input width.
        input: usize,
    },
}

/// Votes that are not one teacher set's votes on two classes.
#[derive(Debug, thiserror::Error)]
pub enum VoteProblem {
    /// The vote file has no query.
    #[error("the vote file has no query")]
    NoQuery,
    /// Queries with different vote sums.
    #[error("the queries' vote counts have different sums: not one teacher set's votes, so the vote share is undefined")]
    UnequalSums,
    /// A vote share on other than two classes.
    #[error("aggregation.malicious_vote_share needs 2 classes, the votes have {0}")]
    Classes(usize),
    /// Organizations' vote files of different shapes.
    #[error(
        "{path} has {queries} queries × {classes} classes but {first} has {first_queries} × {first_classes}: \
         every organization must vote on the same queries with the same classes"
    )]
    Shape {
        /// This vote file.
        path: PathBuf,
        /// Its queries.
        queries: usize,
        /// Its classes.
        classes: usize,
        /// The first vote file.
        first: PathBuf,
        /// Its queries.
        first_queries: usize,
        /// Its classes.
        first_classes: usize,
    },
}

impl Error {
    /// A value of configuration key `key` that it cannot have.
    pub fn key(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::ConfigKey {
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// A JSON serialization error while writing `what`.
    pub fn serialize(what: impl std::fmt::Display) -> impl FnOnce(serde_json::Error) -> Self {
        let what = what.to_string();
        move |source| Error::Serialize { what, source }
    }
}

/// The trainer's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Why a CUDA device cannot be used ([`Error::Cuda`]).
#[derive(Debug, thiserror::Error)]
pub enum CudaProblem {
    /// libtorch_cuda.so did not load.
    #[error("cannot load libtorch_cuda.so: {0}")]
    Load(String),
    /// It loaded, but libtorch sees no device.
    #[error("{} loaded but libtorch sees no CUDA device", .0.display())]
    NoDevice(PathBuf),
    /// Fewer devices than the index asked for.
    #[error("only {0} CUDA device(s)")]
    Count(usize),
}

/// How a subcommand's flags do not fit together ([`Error::Usage`]).
#[derive(Debug, thiserror::Error)]
pub enum UsageProblem {
    /// `aggregate` without a vote file.
    #[error("no --votes file")]
    NoVotes,
    /// `aggregate --malicious-vote-share` on noisy shares.
    #[error("--malicious-vote-share needs clean vote files, not noisy shares")]
    VoteShareWithShares,
    /// `aggregate` of noisy shares with another mechanism than the shares' GNMax.
    #[error(
        "the vote shares carry distributed GNMax noise with sigma {sigma} on every query; pass \
         --mechanism gnmax --sigma {sigma} without a head (got {} {:?})",
        .got.name(),
        .got
    )]
    ShareSigma {
        /// The shares' σ.
        sigma: f64,
        /// The mechanism given (boxed: it would make every `Result` of the crate larger).
        got: Box<privacy::Mechanism>,
    },
    /// `aggregate` of noisy shares and clean vote files together.
    #[error(
        "{shares} of the {files} --votes files are noisy shares and the others clean vote files; \
         give all of one kind"
    )]
    MixedVoteFiles {
        /// Files that are noisy shares.
        shares: usize,
        /// All files.
        files: usize,
    },
    /// A stage reading the config of a run directory an older trainer wrote.
    #[error(
        "{config} was written by an older pate-trainer (run format {version}) whose defaults \
         differ; pass --config with the settings of that run"
    )]
    OldRunConfig {
        /// The run directory's config.yaml.
        config: PathBuf,
        /// Its manifest's `format_version`.
        version: u32,
    },
    /// `score` with neither `--target` nor `--input` and `--format`.
    #[error("pass --target or --input FILE --format F")]
    ScoreInput,
    /// `run --public` with a simulation config, which has no roles.
    #[error(
        "--public replaces the config's public: role, and this config simulates the roles from \
         one pool (split:); give a config with the four roles"
    )]
    PublicWithSimulation,
    /// `teach` with neither `--config` nor `--data`.
    #[error("pass --config CFG, or --shard i/N with --data FILE")]
    TeachInput,
    /// `teach --data` without a fitted featurizer.
    #[error(
        "{} does not exist; pass --featurizer with the featurizer fitted on the public side",
        .0.display()
    )]
    MissingFeaturizer(PathBuf),
    /// `teach` without `--data` and without `--config`.
    #[error("without --data, --config is needed for the datasets")]
    ConfigForDatasets,
    /// `teach --shard i/N` with N other than the config's `teachers.count`.
    #[error("--shard i/{shards} but teachers.count is {config} in the config; they must agree")]
    ShardCount {
        /// N of `--shard i/N`.
        shards: usize,
        /// The config's `teachers.count`.
        config: usize,
    },
}
