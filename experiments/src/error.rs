//! The experiments' one error type.
use std::path::PathBuf;

/// Everything that can go wrong in `pate-experiments`. Each variant names what and where and
/// keeps the underlying error as its source.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trainer's stages, which the sweep calls, failed.
    #[error(transparent)]
    Trainer(#[from] trainer::Error),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A sweep file is invalid.
    #[error("invalid configuration: {path}: {source}")]
    ConfigFile {
        /// The sweep file.
        path: PathBuf,
        /// What is wrong in it.
        source: Box<Error>,
    },
    /// A sweep file's base config is invalid.
    #[error("{sweep}: its base config: {source}")]
    BaseConfig {
        /// The base config.
        base: PathBuf,
        /// The sweep file naming it.
        sweep: PathBuf,
        /// What is wrong in it.
        source: Box<trainer::Error>,
    },
    /// The YAML does not parse or does not match the schema (serde_yaml's message names the key,
    /// the line and the column).
    #[error("{0}")]
    ConfigYaml(#[from] serde_yaml::Error),
    /// A sweep key has a value it cannot have.
    #[error("{key}: {reason}")]
    ConfigKey {
        /// The key (`experiments[2].teachers`).
        key: String,
        /// What was expected.
        reason: String,
    },
    /// The sweep cannot compute what its file asks of its data.
    #[error("invalid configuration: {0}")]
    Sweep(SweepProblem),
    /// A cell's mechanism cannot be resolved (a `matched` parameter, say).
    #[error(
        "invalid configuration: experiments {experiment}: {mechanism} with {teachers} teachers, \
         {queries} queries: {source}"
    )]
    CellMechanism {
        /// The experiment's name.
        experiment: String,
        /// The mechanism's label.
        mechanism: String,
        /// The cell's teacher count.
        teachers: usize,
        /// The cell's query count.
        queries: usize,
        /// Why.
        source: Box<Error>,
    },
    /// A cell's run configuration (the base config with the cell's settings) is invalid (a
    /// mechanism with GNMax's head on a base config without `query_selection: head`, say).
    #[error("invalid configuration: experiments {experiment}: cell {cell}: {source}")]
    CellConfig {
        /// The experiment's name.
        experiment: String,
        /// The cell's id.
        cell: String,
        /// Why.
        source: Box<trainer::Error>,
    },
    /// A command-line flag has a value it cannot have.
    #[error("invalid configuration: --{flag} {value}: {problem}")]
    FlagValue {
        /// The flag (without `--`).
        flag: &'static str,
        /// The value given, quoted.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A numeric command-line flag is out of its range.
    #[error("invalid configuration: --{flag} must be {expected}")]
    FlagRange {
        /// The flag (without `--`).
        flag: &'static str,
        /// Its range (`at least 1`, `1-64`).
        expected: &'static str,
    },
    /// A result the sweep computed is missing when the tables are written.
    #[error("{path}: missing or unreadable result")]
    MissingResult {
        /// The result file.
        path: PathBuf,
    },
    /// A result file the evaluation's tables read does not parse.
    #[error("{path}: {problem}")]
    ResultFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A step of the evaluation (a trainer run, a site evaluation, a replay) failed.
    #[error("{step} failed ({status}); its output: {log}")]
    EvaluationStep {
        /// The command.
        step: String,
        /// Its exit status.
        status: String,
        /// Its stdout and stderr.
        log: PathBuf,
    },
    /// A document lacks a block the evaluation writes.
    #[error(
        "{path}: no block `{begin}` ... `{end}` (each table the evaluation writes sits between \
         these two lines, alone on their lines)"
    )]
    DocBlock {
        /// The document.
        path: PathBuf,
        /// The opening line.
        begin: String,
        /// The closing line.
        end: String,
    },
    /// One repeat of a sweep cell failed.
    #[error("{cell} repeat {repeat}: {source}")]
    Cell {
        /// The cell.
        cell: String,
        /// The repeat.
        repeat: usize,
        /// What failed.
        source: Box<Error>,
    },
    /// A sweep unit of the wrong kind reached a computation (a bug).
    #[error("internal: {0}")]
    Internal(&'static str),
    /// The replay target stopped answering.
    #[error(
        "replay to {addr}: {failures} requests in a row got no response, stopping (last: {last})"
    )]
    ReplayStalled {
        /// The target.
        addr: std::net::SocketAddr,
        /// Consecutive failures.
        failures: usize,
        /// The last one.
        last: String,
    },
    /// The privacy core rejected an input.
    #[error(transparent)]
    Privacy(#[from] privacy::PrivacyError),
    /// A dataset could not be loaded.
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

/// The experiments' result type.
pub type Result<T> = std::result::Result<T, Error>;

/// What the sweep cannot compute ([`Error::Sweep`]).
#[derive(Debug, thiserror::Error)]
pub enum SweepProblem {
    /// No σ meets a `matched` reference's ε.
    #[error(
        "no σ ≤ 1e4 brings the data-independent ε of {queries} queries down to the reference's \
         {target:.4} (for Confident-GNMax: σ₁'s threshold check alone costs more; raise σ₁)"
    )]
    NoMatchingSigma {
        /// The cell's queries.
        queries: usize,
        /// The reference's ε.
        target: f64,
    },
    /// `matched` as the first mechanism of a list.
    #[error("`matched` needs a reference mechanism first in the list")]
    NoReference,
    /// More queries than the public split has distinct requests.
    #[error(
        "experiment {experiment}: {queries} queries asked but the public split of data `{data}` \
         has only {distinct} distinct requests"
    )]
    TooManyQueries {
        /// The experiment.
        experiment: String,
        /// Queries asked.
        queries: usize,
        /// The data list's label.
        data: String,
        /// Distinct public requests.
        distinct: usize,
    },
    /// The base config is not a simulation.
    #[error("the sweep's base config must be a simulation (split: {{simulate_from: [...]}})")]
    BaseNotSimulation,
    /// A split of a data list is empty.
    #[error(
        "data `{data}`: a split is empty ({private} private, {public} public, {validation} student \
         validation, {test} test)"
    )]
    EmptySplit {
        /// The data list's label.
        data: String,
        /// Private requests.
        private: usize,
        /// Public requests.
        public: usize,
        /// Student-validation requests.
        validation: usize,
        /// Test requests.
        test: usize,
    },
    /// A split of a data list holds one class only.
    #[error("data `{data}`: the {split} split needs both benign and malicious requests")]
    SplitClasses {
        /// The data list's label.
        data: String,
        /// The split.
        split: &'static str,
    },
    /// Too few private requests for the teacher count.
    #[error(
        "{teachers} teachers need at least {needed} private requests, data `{data}` has {found}"
    )]
    TooFewPrivate {
        /// The teacher count.
        teachers: usize,
        /// 2 per teacher.
        needed: usize,
        /// The data list's label.
        data: String,
        /// Private requests.
        found: usize,
    },
}
