//! Operating thresholds: the score above which at most a budget of benign traffic lies, held at
//! a confidence over resamplings, and its variants.

use crate::metrics::{roc_curve, RocPoint};

/// The threshold of the highest-TPR point of the ROC of `scores` whose FPR is at most
/// `target_fpr` (ties: the highest threshold). `None` when a class is absent.
pub fn target_fpr_threshold(scores: &[f32], labels: &[bool], target_fpr: f64) -> Option<f32> {
    let curve = roc_curve(scores, labels);
    best_threshold_within(&curve, scores, |p| p.fpr <= target_fpr)
}

/// The threshold of the highest-TPR point of `curve` (the ROC of `scores`) that `within` accepts
/// (ties: the highest threshold). `None` when the curve is empty (a class is absent).
fn best_threshold_within(
    curve: &[RocPoint],
    scores: &[f32],
    within: impl Fn(&RocPoint) -> bool,
) -> Option<f32> {
    let mut best: Option<&RocPoint> = None;
    // Skip the +inf point unless nothing else is within (then nothing is flagged).
    for p in curve.iter().skip(1).filter(|p| within(p)) {
        if best.is_none_or(|b| p.tpr > b.tpr) {
            best = Some(p);
        }
    }
    match best {
        Some(p) => Some(p.threshold),
        // Nothing is within: flag nothing seen, with a threshold that is still a probability
        // (a bundle refuses +inf): just above the highest score, at most 1.
        None if !curve.is_empty() => {
            let highest = scores.iter().copied().fold(0.0f32, f32::max);
            Some(next_up(highest).min(1.0))
        }
        None => None,
    }
}

/// How many times [`confident_target_fpr_threshold`] resamples the validation traffic.
pub const THRESHOLD_REPLICATES: usize = 400;

/// [`target_fpr_threshold`] with its budget held at `confidence`: the highest-TPR point of the
/// ROC at which, over [`THRESHOLD_REPLICATES`] resamplings of the benign rows (each row counted
/// Poisson(1) times: the split draws the traffic record by record), the `confidence` quantile of
/// the share of benign rows flagged is at most `target_fpr`. A point estimate of a 1 % rate rests
/// on the ~30 benign requests above the threshold; chosen at the estimate, the rate on new traffic
/// is above the budget about half the time. `None` when a class is absent.
pub fn confident_target_fpr_threshold(
    scores: &[f32],
    labels: &[bool],
    target_fpr: f64,
    confidence: f64,
    rng: &mut impl rand::Rng,
) -> Option<f32> {
    let curve = roc_curve(scores, labels);
    if curve.is_empty() {
        return None;
    }
    let benign = highest_first(
        scores
            .iter()
            .zip(labels)
            .filter(|(_, &malicious)| !malicious)
            .map(|(&s, _)| s)
            .collect(),
    );
    let allowed_rows = confident_allowance(&benign, target_fpr, confidence, rng);
    let benign_rows = benign.len() as f64;
    best_threshold_within(&curve, scores, |p| {
        (p.fpr * benign_rows).round() as usize <= allowed_rows
    })
}

/// `scores` sorted highest first, NaN last (as `roc_curve` orders them).
fn highest_first(mut scores: Vec<f32>) -> Vec<f32> {
    scores.sort_by(|a, b| {
        b.partial_cmp(a)
            .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
    });
    scores
}

/// The lowest threshold at which at most a share `target_fpr` of the `benign` scores is at or
/// above it — held at `confidence` over resamplings as [`confident_target_fpr_threshold`] does
/// when given. A rate of benign values alone (no attack score decides where in a gap between
/// attack scores it falls). `None` when `benign` is empty.
pub fn lowest_benign_threshold(
    benign: &[f32],
    target_fpr: f64,
    confidence: Option<f64>,
    rng: &mut impl rand::Rng,
) -> Option<f32> {
    if benign.is_empty() {
        return None;
    }
    let allowed = benign_allowance(benign, target_fpr, confidence, rng);
    let benign = highest_first(benign.to_vec());
    // Flag the `allowed` highest rows at most: just above the next row's score (a row tied with
    // it stays below too).
    Some(match benign.get(allowed) {
        None => 0.0,
        Some(&next) => next_up(next).min(1.0),
    })
}

/// The lowest threshold at which at most a share `target_share` of `scores` (a site's
/// unlabelled traffic, nearly all benign) is at or above it, both on the traffic itself and held
/// at `confidence` over resamplings ([`lowest_benign_threshold`] with and without the
/// confidence; the higher of the two). `None` when `scores` is empty.
pub fn traffic_threshold(
    scores: &[f32],
    target_share: f64,
    confidence: f64,
    rng: &mut impl rand::Rng,
) -> Option<f32> {
    let point = lowest_benign_threshold(scores, target_share, None, rng)?;
    let confident = lowest_benign_threshold(scores, target_share, Some(confidence), rng)?;
    Some(point.max(confident))
}

/// The confidence at which each of `claims` budgets must be held for all of them to hold at
/// once at `confidence` (Bonferroni: the chances that one fails add up):
/// 1 − (1 − `confidence`) / `claims`. One budget per placement held at 0.95 each fails
/// somewhere far more often than one time in twenty.
pub fn joint_confidence(confidence: f64, claims: usize) -> f64 {
    1.0 - (1.0 - confidence) / claims.max(1) as f64
}

/// The fewest requests of which none flagged holds a share of `target_share` at `confidence`:
/// with 0 of n flagged, the exact one-sided binomial (Clopper–Pearson) upper bound of the share
/// is 1 − (1 − confidence)^(1/n), at most `target_share` from n = ln(1 − confidence) /
/// ln(1 − target_share) on (about 3/`target_share` at 0.95). Both in (0, 1).
pub fn min_requests_for_share(target_share: f64, confidence: f64) -> usize {
    let upper = |n: usize| 1.0 - (1.0 - confidence).powf(1.0 / n as f64);
    let mut n = ((1.0 - confidence).ln() / (1.0 - target_share).ln())
        .ceil()
        .max(1.0) as usize;
    while n > 1 && upper(n - 1) <= target_share {
        n -= 1;
    }
    while upper(n) > target_share {
        n += 1;
    }
    n
}

/// How many of the `benign` scores a threshold may flag with at most a share `target_fpr` of
/// them flagged — at `confidence` over resamplings as [`lowest_benign_threshold`] holds it when
/// given, whole groups of tied scores only.
pub fn benign_allowance(
    benign: &[f32],
    target_fpr: f64,
    confidence: Option<f64>,
    rng: &mut impl rand::Rng,
) -> usize {
    let benign = highest_first(benign.to_vec());
    match confidence {
        Some(c) => confident_allowance(&benign, target_fpr, c, rng),
        None => (target_fpr * benign.len() as f64).floor() as usize,
    }
}

/// How many of the `benign` rows (highest first) a threshold may flag with the share flagged
/// at most `target_fpr` at `confidence` over [`THRESHOLD_REPLICATES`] Poisson(1) resamplings;
/// whole groups of tied rows only.
fn confident_allowance(
    benign: &[f32],
    target_fpr: f64,
    confidence: f64,
    rng: &mut impl rand::Rng,
) -> usize {
    use rand_distr::Distribution;
    // Rows of equal score (the copies of one request, mostly) go together: a threshold cannot
    // split them, and their Poisson(1) counts sum to one Poisson(rows) count, so memory grows
    // with the distinct scores, not the traffic.
    let mut groups: Vec<usize> = Vec::new();
    for (k, s) in benign.iter().enumerate() {
        let tied = k > 0 && (benign[k - 1] == *s || (s.is_nan() && benign[k - 1].is_nan()));
        match groups.last_mut() {
            Some(rows) if tied => *rows += 1,
            _ => groups.push(1),
        }
    }
    let laws: Vec<rand_distr::Poisson<f64>> = groups
        .iter()
        .map(|&rows| rand_distr::Poisson::new(rows as f64).expect("a positive rate is valid"))
        .collect();
    // cumulative[b][g]: the copies of the benign rows of the g highest groups in replicate b.
    let cumulative: Vec<Vec<u32>> = (0..THRESHOLD_REPLICATES)
        .map(|_| {
            let mut total = 0u32;
            std::iter::once(0)
                .chain(laws.iter().map(|law| {
                    total = total.saturating_add(law.sample(rng) as u32);
                    total
                }))
                .collect()
        })
        .collect();
    let g = groups.len();
    let rank = ((confidence * THRESHOLD_REPLICATES as f64).ceil() as usize)
        .clamp(1, THRESHOLD_REPLICATES)
        - 1;
    let within_budget = |k: usize| {
        let mut shares: Vec<f64> = cumulative
            .iter()
            .map(|c| f64::from(c[k]) / f64::from(c[g].max(1)))
            .collect();
        shares.sort_by(f64::total_cmp);
        shares[rank] <= target_fpr
    };
    // The share grows with k in every replicate, so its quantile does: the most groups within
    // the budget by bisection (none always is).
    let (mut allowed, mut above) = (0usize, g + 1);
    while above - allowed > 1 {
        let mid = (allowed + above) / 2;
        if within_budget(mid) {
            allowed = mid;
        } else {
            above = mid;
        }
    }
    groups[..allowed].iter().sum()
}

/// The threshold above which a share of at most `max_share` of the weighted benign mass lies: the
/// smallest score t such that Σ{w : score > t} ≤ max_share · Σw (ties: all rows at t are below).
/// `None` without rows.
pub fn weighted_quantile_threshold(
    scores: &[f32],
    weights: &[usize],
    max_share: f64,
) -> Option<f32> {
    if scores.is_empty() {
        return None;
    }
    let mut rows: Vec<(f32, usize)> = scores
        .iter()
        .copied()
        .zip(weights.iter().copied().chain(std::iter::repeat(1)))
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    let total: f64 = rows.iter().map(|r| r.1.max(1) as f64).sum();
    let allowed = max_share * total;
    let mut above = 0.0f64;
    let mut k = 0;
    // Walk groups of equal scores from the top; a group can go above the threshold only whole.
    while k < rows.len() {
        let score = rows[k].0;
        let mut group = 0.0;
        let mut j = k;
        while j < rows.len() && rows[j].0 == score {
            group += rows[j].1.max(1) as f64;
            j += 1;
        }
        if above + group > allowed {
            // Scores strictly above `score` are flagged; a threshold just above it.
            return Some(next_up(score));
        }
        above += group;
        k = j;
    }
    // Everything fits under the allowance: flag all (threshold at the lowest score).
    Some(rows[rows.len() - 1].0)
}

fn next_up(x: f32) -> f32 {
    if x.is_nan() || x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let bits = x.to_bits();
    f32::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}
#[cfg(test)]
mod lever_tests {
    use super::*;
    use crate::stages::split::head_then_uniform;
    use crate::votes::{shift_votes, vote_share_shift};
    use privacy::votes::VoteMatrix;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn the_vote_share_shift_depends_on_the_configuration_only() {
        // Two very different vote matrices of 250 teachers: the same constant is added.
        let a = VoteMatrix::from_rows(&[[250u64, 0], [0, 250], [125, 125]]).unwrap();
        let b = VoteMatrix::from_rows(&[[1u64, 249], [200, 50]]).unwrap();
        let c = vote_share_shift(0.3, 250);
        assert_eq!(c, 100);
        for m in [&a, &b] {
            let shifted = shift_votes(m, 0.3, 250).unwrap();
            for (r, s) in m.rows().zip(shifted.rows()) {
                assert_eq!((s[0], s[1]), (r[0], r[1] + 100));
            }
        }
        // Without noise, argmax of the shifted counts = "at least 30 % vote malicious".
        for malicious in 0..=250u64 {
            let m = VoteMatrix::from_rows(&[[250 - malicious, malicious]]).unwrap();
            let s = shift_votes(&m, 0.3, 250).unwrap();
            let r = s.row(0);
            assert_eq!(r[1] > r[0], malicious * 10 > 750, "{malicious}");
        }
        // 0.5 is plurality (no shift); above 0.5 the benign count is raised.
        assert_eq!(vote_share_shift(0.5, 250), 0);
        let s = shift_votes(&a, 0.6, 250).unwrap();
        assert_eq!(s.row(1), &[50, 250]);
    }

    #[test]
    fn head_selection_asks_the_most_frequent_requests_first_then_every_other_once() {
        let multiplicities = [1, 50, 3, 1000, 1, 7, 1, 1];
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let order = head_then_uniform(&multiplicities, 3, &mut rng);
        assert_eq!(&order[..3], &[3, 1, 5]);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..multiplicities.len()).collect::<Vec<_>>());
    }

    #[test]
    fn the_weighted_quantile_threshold_keeps_the_benign_traffic_above_it_under_the_share() {
        // One page of weight 1000 scoring 0.1, ten rows of weight 1 scoring 0.5..0.95.
        let mut scores = vec![0.1f32];
        let mut weights = vec![1000usize];
        for k in 0..10 {
            scores.push(0.5 + 0.05 * k as f32);
            weights.push(1);
        }
        let t = weighted_quantile_threshold(&scores, &weights, 0.01).unwrap();
        let above: usize = scores
            .iter()
            .zip(&weights)
            .filter(|(s, _)| **s >= t)
            .map(|(_, w)| w)
            .sum();
        assert!(above as f64 <= 0.01 * 1010.0, "{above} above {t}");
        assert!(t > 0.1 && t <= 0.95, "{t}");
        // Heavy page at the top: it must stay below the threshold.
        let t = weighted_quantile_threshold(&[0.9, 0.2], &[1000, 10], 0.01).unwrap();
        assert!(t > 0.9);
        assert_eq!(weighted_quantile_threshold(&[], &[], 0.01), None);
    }
}
#[cfg(test)]
mod threshold_tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// One validation draw: `benign` scores uniform on [0, 1) (so a threshold t flags 1 − t of
    /// new benign traffic) and as many attacks uniform on [0.9, 1) (every lower threshold
    /// catches more of them, so the rule goes as low as its budget lets it).
    fn draw(benign: usize, rng: &mut ChaCha20Rng) -> (Vec<f32>, Vec<bool>) {
        let mut scores: Vec<f32> = (0..benign).map(|_| rng.random::<f32>()).collect();
        let mut labels = vec![false; benign];
        scores.extend((0..benign).map(|_| 0.9 + 0.1 * rng.random::<f32>()));
        labels.extend(std::iter::repeat_n(true, benign));
        (scores, labels)
    }

    /// The claim of `target_fpr_confidence`: at the point estimate a 1 % budget is exceeded on
    /// new traffic about half the time; held at confidence 0.95, seldom — at a small cost.
    #[test]
    fn a_budget_held_at_confidence_is_seldom_exceeded_on_new_traffic() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let trials = 60;
        let (mut point_over, mut confident_over) = (0, 0);
        let (mut point_fpr, mut confident_fpr) = (0.0, 0.0);
        for _ in 0..trials {
            let (scores, labels) = draw(2000, &mut rng);
            let point = target_fpr_threshold(&scores, &labels, 0.01).unwrap();
            let confident =
                confident_target_fpr_threshold(&scores, &labels, 0.01, 0.95, &mut rng).unwrap();
            // The validation rows themselves: never more than the budget either way.
            let flagged = |t: f32| {
                let benign = labels.iter().filter(|&&l| !l).count() as f64;
                scores
                    .iter()
                    .zip(&labels)
                    .filter(|&(&s, &l)| !l && s >= t)
                    .count() as f64
                    / benign
            };
            assert!(flagged(point) <= 0.01 && flagged(confident) <= 0.01);
            assert!(confident >= point, "{confident} < {point}");
            let (p, c) = (1.0 - f64::from(point), 1.0 - f64::from(confident));
            point_over += usize::from(p > 0.01);
            confident_over += usize::from(c > 0.01);
            point_fpr += p / trials as f64;
            confident_fpr += c / trials as f64;
        }
        assert!(
            (15..=45).contains(&point_over),
            "point estimate over the budget in {point_over} of {trials}"
        );
        assert!(
            confident_over <= 6,
            "held at 0.95, over the budget in {confident_over} of {trials}"
        );
        // The price: a lower rate than the budget, not a collapse.
        assert!(
            (0.005..0.01).contains(&confident_fpr) && point_fpr > confident_fpr,
            "mean new-traffic FPR {point_fpr} (point), {confident_fpr} (0.95)"
        );
    }

    /// The claim of `joint_confidence`: 13 budgets (one per placement, 300 values each) each
    /// held at 0.95 are exceeded somewhere on new data in most trials; each held at the joint
    /// confidence of 0.95, in a few (the resamplings' far tail is somewhat optimistic: about one
    /// trial in six, not one in twenty).
    #[test]
    fn budgets_held_at_the_joint_confidence_are_seldom_exceeded_anywhere() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let (trials, claims, budget) = (60, 13, 0.05);
        assert!((joint_confidence(0.95, claims) - (1.0 - 0.05 / 13.0)).abs() < 1e-12);
        assert_eq!(joint_confidence(0.95, 1), 0.95);
        let (mut each_over, mut joint_over) = (0, 0);
        for _ in 0..trials {
            let (mut each_any, mut joint_any) = (false, false);
            for _ in 0..claims {
                // 300 benign values per placement, uniform: a threshold t flags 1 − t of new ones.
                let benign: Vec<f32> = (0..300).map(|_| rng.random::<f32>()).collect();
                for (confidence, any) in [
                    (0.95, &mut each_any),
                    (joint_confidence(0.95, claims), &mut joint_any),
                ] {
                    let t = lowest_benign_threshold(&benign, budget, Some(confidence), &mut rng)
                        .unwrap();
                    *any |= 1.0 - f64::from(t) > budget;
                }
            }
            each_over += usize::from(each_any);
            joint_over += usize::from(joint_any);
        }
        assert!(
            each_over >= 25,
            "each at 0.95: over somewhere in {each_over} of {trials}"
        );
        assert!(
            joint_over <= 15,
            "at the joint confidence: over somewhere in {joint_over} of {trials} (each at 0.95: {each_over})"
        );
    }

    /// `lowest_benign_threshold`: the lowest threshold at which at most the budget's share of the
    /// benign scores is at or above it (a tie stays on one side), at confidence at least as
    /// high; nothing to hold: none; a budget of all: 0.
    #[test]
    fn the_lowest_benign_threshold_holds_its_budget_and_no_lower_one_does() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let benign: Vec<f32> = (0..100).map(|k| k as f32 / 100.0).collect();
        let flagged = |t: f32| benign.iter().filter(|&&s| s >= t).count();
        let t = lowest_benign_threshold(&benign, 0.05, None, &mut rng).unwrap();
        assert_eq!(flagged(t), 5, "{t}");
        assert_eq!(flagged(0.94), 6, "0.94 is the next score down");
        assert!(t > 0.94 && t <= 0.95, "{t}");
        let confident = lowest_benign_threshold(&benign, 0.05, Some(0.95), &mut rng).unwrap();
        assert!(confident >= t && flagged(confident) < 5, "{confident}");
        let mut tied = vec![0.5f32; 10];
        tied.extend([0.1; 90]);
        let t = lowest_benign_threshold(&tied, 0.05, None, &mut rng).unwrap();
        assert_eq!(
            flagged_in(&tied, t),
            0,
            "ten tied rows cannot be split: {t}"
        );
        assert_eq!(lowest_benign_threshold(&[], 0.05, None, &mut rng), None);
        assert_eq!(
            lowest_benign_threshold(&[0.3, 0.4], 1.0, None, &mut rng),
            Some(0.0)
        );
    }

    /// The smallest traffic that can hold a budget: 299 requests for 1 % at 0.95 (the "rule of
    /// three"), 59 for 5 % at 0.95, 459 for 1 % at 0.99.
    #[test]
    fn the_fewest_requests_for_a_share_at_a_confidence() {
        assert_eq!(min_requests_for_share(0.01, 0.95), 299);
        assert_eq!(min_requests_for_share(0.05, 0.95), 59);
        assert_eq!(min_requests_for_share(0.01, 0.99), 459);
        let n = min_requests_for_share(0.001, 0.9);
        assert!(1.0 - 0.1f64.powf(1.0 / n as f64) <= 0.001);
        assert!(1.0 - 0.1f64.powf(1.0 / (n - 1) as f64) > 0.001);
    }

    /// The traffic threshold flags at most the share of the traffic itself, at confidence too.
    #[test]
    fn the_traffic_threshold_flags_at_most_the_share_of_the_traffic() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let scores: Vec<f32> = (0..1000).map(|_| rng.random::<f32>()).collect();
        for (share, confidence) in [(0.01, 0.95), (0.05, 0.5), (0.2, 0.99)] {
            let t = traffic_threshold(&scores, share, confidence, &mut rng).unwrap();
            assert!(
                flagged_in(&scores, t) as f64 <= share * 1000.0,
                "{share} {t}"
            );
            let point = lowest_benign_threshold(&scores, share, None, &mut rng).unwrap();
            assert!(t >= point);
        }
        assert_eq!(traffic_threshold(&[], 0.01, 0.95, &mut rng), None);
    }

    fn flagged_in(scores: &[f32], t: f32) -> usize {
        scores.iter().filter(|&&s| s >= t).count()
    }

    /// Ties, one class, and a budget nothing meets behave as `target_fpr_threshold`'s.
    #[test]
    fn confident_threshold_edge_cases() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        assert_eq!(
            confident_target_fpr_threshold(&[0.1, 0.2], &[false, false], 0.01, 0.9, &mut rng),
            None
        );
        // Every benign row above every attack: nothing may be flagged, so nothing is.
        let t = confident_target_fpr_threshold(
            &[0.9, 0.8, 0.1],
            &[false, false, true],
            0.01,
            0.9,
            &mut rng,
        )
        .unwrap();
        assert!(t > 0.9 && t <= 1.0, "{t}");
        // Attacks above every benign row: the lowest attack score, at any confidence.
        let t = confident_target_fpr_threshold(
            &[0.2, 0.1, 0.7, 0.8, 0.8],
            &[false, false, true, true, true],
            0.01,
            0.99,
            &mut rng,
        )
        .unwrap();
        assert_eq!(t, 0.7);
        // Copies of one request score alike and go together: a benign page of 20 copies (2 % of
        // the benign traffic) above an attack is never flagged within a 1 % budget.
        let mut scores = vec![0.1f32; 980];
        scores.extend([0.8; 20]);
        scores.extend([0.5, 0.9]);
        let mut labels = vec![false; 1000];
        labels.extend([true, true]);
        let t = confident_target_fpr_threshold(&scores, &labels, 0.01, 0.5, &mut rng).unwrap();
        assert_eq!(t, 0.9);
    }
}
