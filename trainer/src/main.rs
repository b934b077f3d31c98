//! `pate-trainer`: the PATE pipeline, one subcommand per stage, each reading and writing a typed
//! artifact.
use trainer::cli;

#[derive(clap::Subcommand)]
enum Command {
    /// Inspect datasets (`data stats`).
    Data(cli::data::Args),
    /// Fit or inspect the featurizer artifact.
    Featurize(cli::featurize::Args),
    /// Train teachers on disjoint shards of the private data.
    Teach(cli::teach::Args),
    /// Add Laplace noise to the student's query features (local DP, "Trusted Curator B").
    Privatize(cli::privatize::Args),
    /// Let trained teachers vote on the student's queries; writes a vote file.
    Vote(cli::vote::Args),
    /// Noisy aggregation of a vote file into labels (LNMax, GNMax, Confident-GNMax).
    Aggregate(cli::aggregate::Args),
    /// Privacy accounting of a vote file; prints one JSON object.
    Account(cli::account::Args),
    /// Train the student on the privately labelled queries.
    Student(cli::student::Args),
    /// Evaluate a model on a labelled test set.
    Evaluate(cli::evaluate::Args),
    /// Export the student as an ONNX bundle for pate-proxy.
    Export(cli::export::Args),
    /// Score requests with an exported bundle through ONNX Runtime.
    Score(cli::score::Args),
    /// Run the whole pipeline from a YAML config.
    Run(cli::run::Args),
    /// Re-pick a bundle's threshold from the site's own unlabelled traffic (learning mode).
    #[command(long_about = cli::calibrate::LONG_ABOUT)]
    Calibrate(cli::calibrate::Args),
}

fn main() {
    trainer::log::run_binary(
        "pate-trainer",
        "Train a malicious-request detector with PATE (Private Aggregation of Teacher Ensembles)",
        |command| match command {
            Command::Data(a) => cli::data::run(a),
            Command::Featurize(a) => cli::featurize::run(a),
            Command::Teach(a) => cli::teach::run(a),
            Command::Privatize(a) => cli::privatize::run(a),
            Command::Vote(a) => cli::vote::run(a),
            Command::Aggregate(a) => cli::aggregate::run(a),
            Command::Account(a) => cli::account::run(a),
            Command::Student(a) => cli::student::run(a),
            Command::Evaluate(a) => cli::evaluate::run(a),
            Command::Export(a) => cli::export::run(a),
            Command::Score(a) => cli::score::run(a),
            Command::Run(a) => cli::run::run(a),
            Command::Calibrate(a) => cli::calibrate::run(a),
        },
    );
}
