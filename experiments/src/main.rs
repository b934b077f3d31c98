//! `pate-experiments`: the evaluation grids and the replay client (not part of the product).
use clap::Parser;
use experiments::cli;

/// pate-waf experiments: the evaluation grids and the replay of labelled requests against a WAF.
#[derive(Parser)]
#[command(name = "pate-experiments", version, about, long_about = None)]
enum Cli {
    /// Replay labelled requests against a running WAF (Apache + CRS, pate-proxy); TPR/FPR.
    Replay(cli::replay::Args),
    /// The evaluation grids (teachers × ρ, mechanisms, baselines, learning curve), resumable.
    Sweep(cli::sweep::Args),
}

fn main() {
    let result = match Cli::parse() {
        Cli::Replay(a) => cli::replay::run(a),
        Cli::Sweep(a) => cli::sweep::run(a),
    };
    if let Err(e) = result {
        eprintln!("pate-experiments: error: {e}");
        std::process::exit(1);
    }
}
