//! `pate-trainer privatize`: adds Lap(1/ρ) to every coordinate of the student's l1-normalized
//! feature vectors ((2ρ, 0)-local DP per record; Yovine et al. 2021, "Trusted Curator B").
//!
//! ```text
//! pate-trainer privatize --rho 5 --in features.bin --out noisy.bin
//! ```
//! Input and output are `privacy::matrix` files (dense, magic `PATEF32\0`, or compressed rows,
//! `PATESPF\0`; the noisy output, noise on every coordinate, is dense). The output is written
//! atomically, with a JSON summary (ρ, local ε,
//! rng provenance) on stdout and beside it as `<out>.json`.
use std::path::PathBuf;

use crate::error::{Error, Result};

/// Arguments of `pate-trainer privatize`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// ρ: the Laplace noise scale is 1/ρ; each record gets local ε = 2ρ.
    #[arg(long)]
    pub rho: f64,
    /// Input feature matrix (l1-normalized rows).
    #[arg(long = "in")]
    pub input: PathBuf,
    /// Output (noisy) feature matrix.
    #[arg(long)]
    pub out: PathBuf,
    /// EXPERIMENTS ONLY: fixed noise seed (recorded; the output is then NOT private).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Runs `pate-trainer privatize`.
pub fn run(args: Args) -> Result<()> {
    privacy::privatize::check_rho(args.rho)?;
    let mut m = privacy::matrix::read_f32_matrix(&args.input)?;
    // Each row is one record: `laplace_rows` clips it to ‖x‖₁ ≤ 1 itself, so the local ε = 2ρ
    // holds for any input.
    let mut rng = privacy::NoiseRng::from_option(args.seed)?;
    privacy::privatize::laplace_rows(&mut m.values, m.cols, args.rho, &mut rng)?;
    privacy::matrix::write_f32_matrix(&args.out, &m)?;
    let summary = PrivatizeSummary {
        rho: args.rho,
        local_epsilon: privacy::privatize::local_epsilon(args.rho),
        local_epsilon_label: "local (2rho, 0)-DP per record".into(),
        rows: m.rows,
        cols: m.cols,
        input: args.input.clone(),
        output: args.out.clone(),
        rng: rng.provenance(),
    };
    let mut sidecar = args.out.clone().into_os_string();
    sidecar.push(".json");
    let text = serde_json::to_string_pretty(&summary).map_err(Error::serialize("the summary"))?;
    privacy::write_atomic(&PathBuf::from(sidecar), format!("{text}\n").as_bytes())?;
    println!(
        "{}",
        serde_json::to_string(&summary).map_err(Error::serialize("the summary"))?
    );
    Ok(())
}

/// What `privatize` did (printed, and written beside the output as `<out>.json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PrivatizeSummary {
    /// ρ of the Laplace noise.
    pub rho: f64,
    /// The local ε of each record (2ρ).
    pub local_epsilon: f64,
    /// What that ε is.
    pub local_epsilon_label: String,
    /// Rows privatized.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// The input matrix.
    pub input: PathBuf,
    /// The privatized matrix.
    pub output: PathBuf,
    /// The noise's randomness.
    pub rng: privacy::RngProvenance,
}
