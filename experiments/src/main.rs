//! `pate-experiments`: the evaluation grids and the replay client (not part of the product).
use experiments::cli;

#[derive(clap::Subcommand)]
enum Command {
    /// Replay labelled requests against a running WAF (Apache + CRS, pate-proxy); TPR/FPR.
    Replay(cli::replay::Args),
    /// The fresh runs behind EVALUATION.md, and its tables written from them.
    ///
    /// Runs every missing run of the evaluation (fresh OS randomness, no seed), then writes the
    /// tables into the documents' `<!-- evaluation:NAME -->` blocks. Run from the repository
    /// root after `cargo build --release -p trainer -p proxy -p experiments` (`make evaluation`
    /// does both). Parts: site (configs/site.yaml on the blog's log, bench/site/site_eval.py on
    /// its held-out tail; and without teachers), csic-site (configs/csic-site.yaml; with 200
    /// reviewed labels; without teachers; both), csic-test (configs/train.yaml), replay
    /// (bench/placements/run.sh through Apache + pate-proxy on the csic-test bundles; needs
    /// apache2). About 30 min on 2 idle CPU cores. A run whose result is there is kept: an
    /// interrupted evaluation resumes, and `rm -r OUT/PART` reruns a part.
    Evaluation(cli::evaluation::Args),
    /// The evaluation grids (teachers × ρ, mechanisms, baselines, learning curve), resumable.
    Sweep(cli::sweep::Args),
}

fn main() {
    trainer::log::run_binary(
        "pate-experiments",
        "pate-waf experiments: the evaluation grids and the replay of labelled requests against a WAF",
        |command| match command {
            Command::Evaluation(a) => cli::evaluation::run(a),
            Command::Replay(a) => cli::replay::run(a),
            Command::Sweep(a) => cli::sweep::run(a),
        },
    );
}
