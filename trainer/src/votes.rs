//! Calibrated aggregation's shift of the vote counts (a function of the configuration only).

use crate::error::{Error, Result, VoteProblem};

/// The constant added to the malicious count by calibrated aggregation
/// ([`crate::config::AggregationConfig`]): c = round(N · (1 − 2s)) for `teachers` = N and vote
/// share s. A function of the configuration only: the same for every vote matrix (a test checks
/// it), which is what keeps the noisy-max analyses valid.
pub fn vote_share_shift(share: f64, teachers: usize) -> i64 {
    (teachers as f64 * (1.0 - 2.0 * share)).round() as i64
}

/// The vote counts the noisy aggregation sees under calibrated aggregation: (benign,
/// malicious + c) for c ≥ 0, (benign − c, malicious) for c < 0, with c = [`vote_share_shift`].
/// Adding a constant vector does not change how one teacher's vote can move the counts (the
/// sensitivity), so GNMax/LNMax/Confident-GNMax on the shifted counts keep their guarantees.
pub fn shift_votes(
    votes: &privacy::votes::VoteMatrix,
    share: f64,
    teachers: usize,
) -> Result<privacy::votes::VoteMatrix> {
    let c = vote_share_shift(share, teachers);
    if votes.classes() != 2 {
        return Err(Error::Votes(VoteProblem::Classes(votes.classes())));
    }
    let rows: Vec<[u64; 2]> = votes
        .rows()
        .map(|r| {
            if c >= 0 {
                [r[0], r[1] + c as u64]
            } else {
                [r[0] + c.unsigned_abs(), r[1]]
            }
        })
        .collect();
    Ok(privacy::votes::VoteMatrix::from_rows(&rows)?)
}
