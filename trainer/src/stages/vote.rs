//! Stage 4, `vote`: privatize the queries (Lap(1/ρ) on the student side, optional) and let every
//! teacher vote on them.
use tch::Device;

use crate::config::RunConfig;
use crate::dense::DenseMatrix;
use crate::ensemble::{count_votes, Ensemble};
use crate::error::Result;
use crate::model_file::ModelFile;
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

/// Every teacher's vote on every query row: `[benign, malicious]` counts, the teachers batched.
pub fn vote(
    teachers: &[ModelFile],
    queries: &DenseMatrix,
    device: Device,
) -> Result<privacy::VoteMatrix> {
    let weights: Vec<_> = teachers.iter().map(|t| t.weights.clone()).collect();
    let thresholds: Vec<f32> = teachers.iter().map(|t| t.info.threshold).collect();
    let model = Ensemble::from_members(&weights, device)?;
    // Queries voted: a bar on a terminal; off one, the stage banner is the only line.
    let bar = crate::log::Progress::new(queries.rows as u64);
    let scores = model.scores_with(queries, |done| bar.set_position(done as u64))?;
    let votes = count_votes(&scores, &thresholds);
    let rows: Vec<[u64; 2]> = votes.iter().map(|v| [v[0] as u64, v[1] as u64]).collect();
    Ok(privacy::VoteMatrix::from_rows(&rows)?)
}

/// The teacher ensemble's score of each row: the fraction of teachers voting malicious (the
/// noiseless plurality decides at 0.5).
pub fn ensemble_vote_fraction(
    teachers: &[ModelFile],
    x: &DenseMatrix,
    device: Device,
) -> Result<Vec<f32>> {
    let votes = vote(teachers, x, device)?;
    Ok(votes
        .rows()
        .map(|r| r[1] as f32 / (r[0] + r[1]).max(1) as f32)
        .collect())
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
    crate::io::write_matrix(&run.features(sets::QUERIES_SENT), &v.sent)?;
    privacy::votes::write_vote_file(&run.votes(), &v.votes)?;
    Ok(())
}
