//! `pate-trainer`: the PATE pipeline, one subcommand per stage.
use clap::Parser;

/// Train a private malicious-request detector with PATE.
#[derive(Parser)]
#[command(name = "pate-trainer", version, about)]
enum Cli {}

fn main() {
    let _ = Cli::parse();
}
