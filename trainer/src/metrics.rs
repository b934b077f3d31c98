//! Binary-classification metrics: ROC curve, AUC, Youden's J threshold, confusion counts.
//!
//! Convention everywhere: the positive class is "malicious", a score is a malicious probability
//! (or a vote fraction), and a request is predicted malicious when `score >= threshold`.
use serde::{Deserialize, Serialize};

/// One point of an ROC curve: predicting positive when `score >= threshold` gives this
/// (false-positive rate, true-positive rate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RocPoint {
    /// The decision threshold.
    pub threshold: f32,
    /// False-positive rate FP / (FP + TN).
    pub fpr: f64,
    /// True-positive rate TP / (TP + FN).
    pub tpr: f64,
}

/// The ROC curve of `scores` against `labels` (true = malicious), from (0, 0) to (1, 1), one point
/// per distinct score in decreasing order of threshold (as scikit-learn's `roc_curve` without
/// dropping collinear points). The first point has threshold +inf (nothing predicted positive).
/// Empty when either class is absent (the rates are undefined).
pub fn roc_curve(scores: &[f32], labels: &[bool]) -> Vec<RocPoint> {
    assert_eq!(scores.len(), labels.len(), "one label per score");
    let positives = labels.iter().filter(|&&l| l).count();
    let negatives = labels.len() - positives;
    if positives == 0 || negatives == 0 {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // NaN scores sort last (treated as the lowest score) so they never win a threshold.
    order.sort_by(|&a, &b| {
        scores[b]
            .partial_cmp(&scores[a])
            .unwrap_or_else(|| scores[a].is_nan().cmp(&scores[b].is_nan()))
    });
    let mut points = vec![RocPoint {
        threshold: f32::INFINITY,
        fpr: 0.0,
        tpr: 0.0,
    }];
    let (mut tp, mut fp) = (0usize, 0usize);
    let mut i = 0;
    while i < order.len() {
        let threshold = scores[order[i]];
        // Take every sample tied at this score together: a threshold cannot separate them.
        while i < order.len()
            && (scores[order[i]] == threshold || (threshold.is_nan() && scores[order[i]].is_nan()))
        {
            if labels[order[i]] {
                tp += 1;
            } else {
                fp += 1;
            }
            i += 1;
        }
        points.push(RocPoint {
            threshold,
            fpr: fp as f64 / negatives as f64,
            tpr: tp as f64 / positives as f64,
        });
    }
    points
}

/// Area under the ROC curve by the trapezoidal rule (equals the probability that a random
/// malicious sample scores above a random benign one, ties counting one half). `None` when a
/// class is absent.
pub fn roc_auc(scores: &[f32], labels: &[bool]) -> Option<f64> {
    let curve = roc_curve(scores, labels);
    if curve.is_empty() {
        return None;
    }
    Some(
        curve
            .windows(2)
            .map(|w| (w[1].fpr - w[0].fpr) * (w[1].tpr + w[0].tpr) / 2.0)
            .sum(),
    )
}

/// The threshold that maximizes Youden's J statistic J = TPR − FPR over the ROC curve
/// (Youden 1950, "Index for rating diagnostic tests", Cancer 3(1)), as the seeds chose each
/// model's threshold on held-out samples. Ties go to the highest threshold (the first maximum
/// along the curve, like `thresholds[argmax(tpr - fpr)]`). `None` when a class is absent.
pub fn youden_threshold(scores: &[f32], labels: &[bool]) -> Option<f32> {
    let curve = roc_curve(scores, labels);
    let mut best: Option<(f64, f32)> = None;
    // Skip the +inf point: it predicts nothing positive and is never a useful operating point
    // unless every other point is worse, which J = 0 at (0,0) and (1,1) makes impossible to prefer.
    for p in curve.iter().skip(1) {
        let j = p.tpr - p.fpr;
        if best.is_none_or(|(bj, _)| j > bj) {
            best = Some((j, p.threshold));
        }
    }
    best.map(|(_, t)| t)
}

/// Test-set metrics at one threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Number of samples.
    pub samples: usize,
    /// Malicious samples.
    pub positives: usize,
    /// Benign samples.
    pub negatives: usize,
    /// True positives.
    pub tp: usize,
    /// False positives.
    pub fp: usize,
    /// True negatives.
    pub tn: usize,
    /// False negatives.
    pub fn_: usize,
    /// TP / (TP + FN) (recall, detection rate); null when there are no malicious samples.
    pub tpr: Option<f64>,
    /// TN / (TN + FP); null when there are no benign samples.
    pub tnr: Option<f64>,
    /// FP / (FP + TN); null when there are no benign samples.
    pub fpr: Option<f64>,
    /// TP / (TP + FP); null when nothing was predicted malicious.
    pub precision: Option<f64>,
    /// Harmonic mean of precision and TPR; null when either is undefined or both are zero.
    pub f1: Option<f64>,
    /// (TP + TN) / samples.
    pub accuracy: Option<f64>,
    /// Area under the ROC curve of the scores (threshold-free); null when a class is absent.
    pub roc_auc: Option<f64>,
    /// The decision threshold: malicious when `score >= threshold`.
    pub threshold: f32,
}

fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

impl Metrics {
    /// Computes the metrics of `scores` against `labels` (true = malicious) at `threshold`.
    pub fn compute(scores: &[f32], labels: &[bool], threshold: f32) -> Self {
        assert_eq!(scores.len(), labels.len(), "one label per score");
        let (mut tp, mut fp, mut tn, mut fn_) = (0, 0, 0, 0);
        for (&s, &l) in scores.iter().zip(labels) {
            match (s >= threshold, l) {
                (true, true) => tp += 1,
                (true, false) => fp += 1,
                (false, false) => tn += 1,
                (false, true) => fn_ += 1,
            }
        }
        let tpr = ratio(tp, tp + fn_);
        let precision = ratio(tp, tp + fp);
        let f1 = match (precision, tpr) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
            _ => None,
        };
        Metrics {
            samples: scores.len(),
            positives: tp + fn_,
            negatives: tn + fp,
            tp,
            fp,
            tn,
            fn_,
            tpr,
            tnr: ratio(tn, tn + fp),
            fpr: ratio(fp, fp + tn),
            precision,
            f1,
            accuracy: ratio(tp + tn, scores.len()),
            roc_auc: roc_auc(scores, labels),
            threshold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_of_perfect_and_inverted_scores() {
        let labels = [false, false, true, true];
        assert_eq!(roc_auc(&[0.1, 0.2, 0.8, 0.9], &labels), Some(1.0));
        assert_eq!(roc_auc(&[0.9, 0.8, 0.2, 0.1], &labels), Some(0.0));
        assert_eq!(roc_auc(&[0.5, 0.5, 0.5, 0.5], &labels), Some(0.5));
        assert_eq!(roc_auc(&[0.5, 0.5], &[true, true]), None);
    }

    #[test]
    fn metrics_at_threshold() {
        let m = Metrics::compute(&[0.1, 0.6, 0.7, 0.4], &[false, false, true, true], 0.5);
        assert_eq!((m.tp, m.fp, m.tn, m.fn_), (1, 1, 1, 1));
        assert_eq!(m.tpr, Some(0.5));
        assert_eq!(m.precision, Some(0.5));
    }
}
