//! N networks of the same shape trained at once as one batched model: layer `l` holds weights
//! `[N, in, out]` and biases `[N, 1, out]`, the forward pass is one `bmm` per layer, and each
//! member sees only its own batch (`[N, B, in]`).
//!
//! The loss is the sum over members of each member's mean binary cross-entropy, so member k's
//! gradient is exactly the gradient of its own loss (the other terms do not depend on its weights).
//! Adam is applied elementwise with per-member step counts and a per-member mask (Kingma & Ba
//! 2015, "Adam", Algorithm 1): a masked member's parameters and moments stay bit-for-bit unchanged,
//! so training N members together equals N independent trainings, each with its own early
//! stopping (Prechelt 1998, "Early Stopping — But When?": keep the weights of the epoch with the
//! lowest held-out loss, stop after `patience` epochs without improvement). PATE (Papernot et
//! al. 2017, §2.1) trains its teachers independently on disjoint partitions; this is the same
//! computation, only batched.
mod config;
mod data;
mod model;
mod optimizer;
mod rows;
mod train;
mod votes;

pub use config::{ClassBalance, MemberThreshold, Mode, Optimizer, TrainConfig};
pub use data::{LabeledRows, MemberData};
pub use model::{init_members, Ensemble};
pub use optimizer::Trainer;
pub use rows::InputLayout;
pub use train::{train, MemberReport};
pub use votes::count_votes;
