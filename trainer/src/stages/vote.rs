//! Stage 4, `vote`: privatize the queries (Lap(1/ρ) on the student side, optional) and let every
//! teacher vote on them.
use tch::Device;

use crate::config::RunConfig;
use crate::dense::DenseMatrix;
use crate::error::Result;
use crate::model_file::ModelFile;
use crate::pipeline;
use crate::rundir::{sets, RunDir};

use super::Env;

/// The queries as the teachers saw them and their votes.
pub struct Votes {
    /// The queries as sent (privatized when ρ is set).
    pub sent: DenseMatrix,
    /// `[benign, malicious]` teacher counts per query.
    pub votes: privacy::VoteMatrix,
}

/// The queries as sent to the teachers: Laplace noise of scale 1/ρ on every feature when `rho`
/// is set ((2ρ, 0)-local DP per query), the features as they are otherwise.
pub fn privatize(
    rho: Option<f64>,
    queries: &DenseMatrix,
    noise: &mut privacy::NoiseRng,
) -> Result<DenseMatrix> {
    let mut sent = queries.clone();
    if let Some(rho) = rho {
        privacy::privatize::laplace_rows(&mut sent.values, sent.cols, rho, noise)?;
    }
    Ok(sent)
}

/// Every teacher's vote on every row of `sent`.
pub fn vote(
    teachers: &[ModelFile],
    sent: &DenseMatrix,
    device: Device,
) -> Result<privacy::VoteMatrix> {
    pipeline::vote(teachers, sent, device)
}

/// The stage in a run: privatize with `privacy.rho`, then vote.
pub fn run(
    config: &RunConfig,
    teachers: &[ModelFile],
    queries: &DenseMatrix,
    noise: &mut privacy::NoiseRng,
    env: &Env,
) -> Result<Votes> {
    if let Some(rho) = config.privacy.rho {
        super::banner(
            &format!(
                "privatize {} queries with Lap(1/ρ), ρ = {rho}",
                queries.rows
            ),
            env.started,
        );
    }
    let sent = privatize(config.privacy.rho, queries, noise)?;
    super::banner(
        &format!("vote: {} teachers on {} queries", teachers.len(), sent.rows),
        env.started,
    );
    let votes = vote(teachers, &sent, env.device)?;
    Ok(Votes { sent, votes })
}

/// Writes `features/queries.sent.f32` and `votes.csv`.
pub fn write(run: &RunDir, v: &Votes) -> Result<()> {
    pipeline::write_matrix(&run.features(sets::QUERIES_SENT), &v.sent)?;
    privacy::votes::write_vote_file(&run.votes(), &v.votes)?;
    Ok(())
}
