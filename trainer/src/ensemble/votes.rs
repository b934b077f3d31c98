//! Counting the members' votes.

/// Counts member votes: `votes[r] = [benign, malicious]`, member k voting malicious on row r when
/// its probability reaches its threshold (`scores[k][r] >= thresholds[k]`).
pub fn count_votes(scores: &[Vec<f32>], thresholds: &[f32]) -> Vec<[u32; 2]> {
    let rows = scores.first().map_or(0, |s| s.len());
    let mut votes = vec![[0u32; 2]; rows];
    for (member, &t) in scores.iter().zip(thresholds) {
        for (v, &s) in votes.iter_mut().zip(member) {
            v[usize::from(s >= t)] += 1;
        }
    }
    votes
}
