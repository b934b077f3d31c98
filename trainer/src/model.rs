//! The detector's model: a fully connected network with one real-valued output (the logit of the
//! malicious probability), as in the seeds: by default 500 → 512 → 128 → 1 with ReLU (≈ 322 k
//! parameters).
//!
//! Weights live on the CPU as [`Mlp`] (what is saved, exported and compared) and on the
//! training device inside an [`crate::ensemble::Ensemble`], which holds N such networks stacked
//! (`[N, in, out]`), N = 1 for the student.
use rand::{Rng, RngExt};

/// The one network type of the workspace (trainer, bundle and proxy): [`bundle::onnx::Mlp`].
pub use bundle::onnx::{Dense, Mlp};

/// Random initial weights for the layer widths `dims` (input first, ending in 1): every weight
/// and bias uniform in ±1/√fan_in, PyTorch's `nn.Linear` default (He et al. 2015, "Delving Deep
/// into Rectifiers", §2.2, with a = √5 as torch uses), drawn from `rng` so that a teacher's
/// initialization depends only on its own random stream, not on how many teachers train along.
pub fn init_mlp(dims: &[usize], rng: &mut impl Rng) -> Mlp {
    let layers = dims
        .windows(2)
        .map(|w| {
            let (in_dim, out_dim) = (w[0], w[1]);
            let bound = 1.0 / (in_dim as f32).sqrt();
            let mut draw = |n: usize| {
                (0..n)
                    .map(|_| rng.random_range(-bound..bound))
                    .collect::<Vec<f32>>()
            };
            let weight = draw(in_dim * out_dim);
            let bias = draw(out_dim);
            Dense {
                in_dim,
                out_dim,
                weight,
                bias,
            }
        })
        .collect();
    Mlp { layers }
}
