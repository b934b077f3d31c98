//! `pate-experiments`: the evaluation grids and the replay client (not part of the product).
use clap::Parser;
use experiments::cli;

/// pate-waf experiments: the evaluation grids and the replay of labelled requests against a WAF.
#[derive(Parser)]
#[command(name = "pate-experiments", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    verbosity: trainer::log::Verbosity,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Replay labelled requests against a running WAF (Apache + CRS, pate-proxy); TPR/FPR.
    Replay(cli::replay::Args),
    /// The fresh runs behind EVALUATION.md, and its tables written from them.
    Evaluation(cli::evaluation::Args),
    /// The evaluation grids (teachers × ρ, mechanisms, baselines, learning curve), resumable.
    Sweep(cli::sweep::Args),
}

fn main() {
    let parsed = Cli::parse();
    trainer::log::init(parsed.verbosity);
    let result = match parsed.command {
        Command::Evaluation(a) => cli::evaluation::run(a),
        Command::Replay(a) => cli::replay::run(a),
        Command::Sweep(a) => cli::sweep::run(a),
    };
    if let Err(e) = result {
        tracing::error!("pate-experiments: error: {e}");
        std::process::exit(1);
    }
}
