//! Training hyper-parameters: [`TrainConfig`] and the choices it names.
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How the positive (malicious) class is weighted in the loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassBalance {
    /// `pos_weight = negatives / positives` of the member's training data in
    /// `BCEWithLogits(pos_weight)`, so both classes weigh the same in total.
    PosWeight,
    /// Plain binary cross-entropy.
    None,
}

/// Hyper-parameters of one training (teachers or student).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// Hidden layer widths (the input width comes from the featurizer, the output is 1).
    pub hidden: Vec<usize>,
    /// Upper bound on epochs (early stopping usually ends training before).
    pub max_epochs: usize,
    /// Mini-batch size.
    pub batch_size: usize,
    /// Step size: Adam's α, or the fixed gradient step of [`Optimizer::Fista`].
    pub learning_rate: f64,
    /// Epochs without a lower held-out loss before a member stops.
    pub patience: usize,
    /// Class weighting in the loss.
    pub class_balance: ClassBalance,
    /// L2 penalty λ/2 · ‖W‖² on each member's weights (not the biases) added to its training
    /// loss; 0 (the default) = none. Logistic-regression teachers on ~200 requests with thousands
    /// of features need it (scikit-learn's LogisticRegression regularizes by default).
    pub weight_decay: f64,
    /// How each member's decision threshold is chosen: `youden` (Youden's J on its held-out
    /// samples, the default) or `half` (0.5: with class-balanced training the natural threshold,
    /// steadier than Youden's J on a few dozen held-out samples of a small shard).
    pub member_threshold: MemberThreshold,
    /// How the parameters are updated: `adam` (mini-batches, the default) or `fista` (full-batch
    /// proximal gradient, the one that honours `l1`).
    pub optimizer: Optimizer,
    /// L1 penalty λ₁ · ‖W‖₁ on each member's weights (not the biases); 0 (the default) = none.
    /// Needs `optimizer: fista`, whose proximal step sets weights exactly to zero: a
    /// logistic-regression teacher on ~166 records then keeps a few dozen of its 10,000
    /// features, and false-alarms far less on benign requests than the dense ℓ2 one (issue 16,
    /// EVALUATION.md). Adam's steps are normalized per weight, so an L1 term there would only
    /// make weights oscillate around zero: refused.
    pub l1: f64,
}

/// How a training updates the parameters ([`TrainConfig::optimizer`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Optimizer {
    /// Adam on mini-batches of `batch_size` rows (Kingma & Ba 2015).
    #[default]
    Adam,
    /// FISTA (Beck & Teboulle 2009): one step per epoch on ALL of a member's rows (`batch_size`
    /// is not used), a gradient step of size `learning_rate` on the smooth loss (class-weighted
    /// cross-entropy plus the ℓ2 `weight_decay`), then soft-thresholding of the weights by
    /// `learning_rate · l1` (the proximal map of the L1 penalty), with Nesterov's momentum. The
    /// step must stay below 1 / L, L the Lipschitz constant of the smooth loss's gradient (for
    /// a logistic regression on l2-normalized rows, L ≤ max(pos_weight, 1) / 4 · the largest
    /// eigenvalue of XᵀX / n ≤ max(pos_weight, 1) / 4).
    Fista,
}

/// How a member's threshold is chosen ([`TrainConfig::member_threshold`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberThreshold {
    /// Youden's J on the member's held-out samples.
    Youden,
    /// 0.5.
    Half,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            hidden: vec![512, 128],
            max_epochs: 100,
            batch_size: 64,
            learning_rate: 1e-3,
            patience: 5,
            class_balance: ClassBalance::PosWeight,
            weight_decay: 0.0,
            member_threshold: MemberThreshold::Youden,
            optimizer: Optimizer::Adam,
            l1: 0.0,
        }
    }
}

impl TrainConfig {
    /// Checks the values, naming the offending key under `prefix` (e.g. `teachers.batch_size`).
    pub fn validate(&self, prefix: &str) -> Result<()> {
        let bad = |key: &str, why: &str| Err(Error::key(format!("{prefix}.{key}"), why));
        if self.hidden.contains(&0) {
            return bad("hidden", "every hidden width must be at least 1");
        }
        if self.max_epochs == 0 {
            return bad("max_epochs", "must be at least 1");
        }
        if self.batch_size == 0 {
            return bad("batch_size", "must be at least 1");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return bad("learning_rate", "must be a positive number");
        }
        if self.patience == 0 {
            return bad("patience", "must be at least 1");
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return bad("weight_decay", "must be a non-negative number");
        }
        if !(self.l1.is_finite() && self.l1 >= 0.0) {
            return bad("l1", "must be a non-negative number");
        }
        if self.l1 > 0.0 && self.optimizer != Optimizer::Fista {
            return bad(
                "l1",
                "needs optimizer: fista (Adam's per-weight normalized steps cannot set a weight \
                 to zero)",
            );
        }
        Ok(())
    }

    /// Layer widths for `input` features: input, hidden..., 1.
    pub fn dims(&self, input: usize) -> Vec<usize> {
        let mut dims = vec![input];
        dims.extend(&self.hidden);
        dims.push(1);
        dims
    }
}

/// Batched (all members at once) or one member after the other. Teachers always train
/// `Sequential`: only then is each member's computation a function of its own data, bit for bit
/// (`Batched` pads every member's rows to the largest member's count, so one row more in the
/// largest changes every member's shapes and float rounding). `Batched` is for the benchmark
/// (`trainer/benches/ensemble.rs`) and the tests that compare the two; a one-member model (the
/// student, the part model) trains the same either way. Not a configuration option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One `[N, in, out]` model, one `bmm` per layer.
    Batched,
    /// N separate trainings of a one-member model.
    Sequential,
}
