//! Noise samplers: moments and tails against closed forms (computed by hand / numpy, quoted in the
//! comments), with a fixed TEST seed. Sample sizes make each tolerance ≥ 5 standard errors.
use privacy::noise::{
    bernoulli_exp, discrete_gaussian, discrete_laplace, gaussian, laplace, DiscreteGaussian,
    DiscreteLaplace, Rational,
};
use privacy::rng::{NoiseRng, RngProvenance};

const N: usize = 200_000;

fn moments(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var)
}

#[test]
fn bernoulli_exp_matches_exp_minus_gamma() {
    let mut rng = NoiseRng::seeded_for_experiments(1);
    // e^{-0.7} = 0.496585, e^{-2.5} = 0.082085 (γ > 1 exercises the ⌊γ⌋ branch); SE ≤ 0.0012.
    for (num, den, expected) in [
        (7u128, 10u128, 0.496_585_3),
        (5, 2, 0.082_085_0),
        (0, 1, 1.0),
    ] {
        let hits = (0..N).filter(|_| bernoulli_exp(&mut rng, num, den)).count();
        let freq = hits as f64 / N as f64;
        assert!(
            (freq - expected).abs() < 0.006,
            "Bernoulli(exp(-{num}/{den})): {freq} vs {expected}"
        );
    }
}

#[test]
fn discrete_laplace_moments_and_tail() {
    // γ = 1/2, p = e^{-1/2}: Var = 2p/(1-p)² = 7.8354; P(|X| ≥ 5) = 2p⁵/(1+p) = 0.10219;
    // P(X = 0) = (1-p)/(1+p) = 0.24492. SD of X² is 17.74, so SE(var) ≈ 0.04.
    let mut rng = NoiseRng::seeded_for_experiments(2);
    let d = DiscreteLaplace::new(0.5).unwrap();
    assert_eq!(d.gamma, Rational { num: 1, den: 2 });
    let xs: Vec<f64> = (0..N).map(|_| d.sample(&mut rng) as f64).collect();
    let (mean, var) = moments(&xs);
    assert!(mean.abs() < 0.05, "mean {mean}");
    assert!((var - 7.8354).abs() < 0.25, "var {var}");
    let tail = xs.iter().filter(|x| x.abs() >= 5.0).count() as f64 / N as f64;
    assert!((tail - 0.10219).abs() < 0.004, "tail {tail}");
    let zero = xs.iter().filter(|x| **x == 0.0).count() as f64 / N as f64;
    assert!((zero - 0.24492).abs() < 0.005, "P(0) {zero}");
    // Symmetry: as many positive as negative values.
    let pos = xs.iter().filter(|x| **x > 0.0).count() as f64;
    let neg = xs.iter().filter(|x| **x < 0.0).count() as f64;
    assert!((pos - neg).abs() / N as f64 <= 0.01);
}

#[test]
fn discrete_laplace_with_lnmax_scale() {
    // γ = 0.05 (scale 20): Var = 2p/(1-p)² with p = e^{-0.05} = 799.8334 (≈ 2/γ² = 800).
    let mut rng = NoiseRng::seeded_for_experiments(3);
    let xs: Vec<f64> = (0..N)
        .map(|_| discrete_laplace(&mut rng, 1, 20) as f64)
        .collect();
    let (mean, var) = moments(&xs);
    let p = (-0.05f64).exp();
    let expected = 2.0 * p / ((1.0 - p) * (1.0 - p));
    assert!((expected - 799.8334).abs() < 0.001);
    assert!(mean.abs() < 0.4, "mean {mean}");
    assert!(
        (var / expected - 1.0).abs() < 0.03,
        "var {var} vs {expected}"
    );
}

#[test]
fn discrete_gaussian_moments_and_tail() {
    // σ = 3: Var = Σ z² e^{-z²/18} / Σ e^{-z²/18} = 9.0000 (numpy), P(|X| ≥ 6) = 0.065493,
    // P(X = 0) = 0.132981.
    let mut rng = NoiseRng::seeded_for_experiments(4);
    let d = DiscreteGaussian::new(3.0).unwrap();
    assert_eq!(d.sigma2, Rational { num: 9, den: 1 });
    let xs: Vec<f64> = (0..N).map(|_| d.sample(&mut rng) as f64).collect();
    let (mean, var) = moments(&xs);
    assert!(mean.abs() < 0.04, "mean {mean}");
    assert!((var - 9.0).abs() < 0.2, "var {var}");
    let tail = xs.iter().filter(|x| x.abs() >= 6.0).count() as f64 / N as f64;
    assert!((tail - 0.065493).abs() < 0.003, "tail {tail}");
    let zero = xs.iter().filter(|x| **x == 0.0).count() as f64 / N as f64;
    assert!((zero - 0.132981).abs() < 0.004, "P(0) {zero}");
    // Large σ as used by GNMax (σ = 40): variance 1600.
    let ys: Vec<f64> = (0..50_000)
        .map(|_| discrete_gaussian(&mut rng, 1600, 1) as f64)
        .collect();
    let (_, var40) = moments(&ys);
    assert!((var40 / 1600.0 - 1.0).abs() < 0.04, "var {var40}");
}

#[test]
fn parameters_round_towards_more_noise() {
    // γ is rounded DOWN to a multiple of 1e-6, σ² UP.
    assert_eq!(
        DiscreteLaplace::new(0.05).unwrap().gamma,
        Rational { num: 1, den: 20 }
    );
    assert_eq!(
        DiscreteLaplace::new(0.123_456_78).unwrap().gamma,
        Rational::new(123_456, 1_000_000)
    );
    let g = DiscreteGaussian::new(1.000_000_1).unwrap();
    assert!(g.sigma2.to_f64() >= 1.000_000_2);
    assert!(DiscreteLaplace::new(0.0).is_err());
    assert!(DiscreteLaplace::new(f64::NAN).is_err());
    assert!(DiscreteLaplace::new(1e-9).is_err());
    assert!(DiscreteGaussian::new(-1.0).is_err());
    assert!(DiscreteGaussian::new(f64::INFINITY).is_err());
}

#[test]
fn continuous_samplers() {
    // Lap(b): E|X| = b, Var = 2b². N(0, σ²): Var = σ².
    let mut rng = NoiseRng::seeded_for_experiments(5);
    let xs: Vec<f64> = (0..N).map(|_| laplace(&mut rng, 0.5)).collect();
    let (mean, var) = moments(&xs);
    let mad = xs.iter().map(|x| x.abs()).sum::<f64>() / N as f64;
    assert!(
        mean.abs() < 0.01 && (var - 0.5).abs() < 0.02 && (mad - 0.5).abs() < 0.01,
        "{mean} {var} {mad}"
    );
    // Tail: P(|X| ≥ 2b) = e^{-2} = 0.135335.
    let tail = xs.iter().filter(|x| x.abs() >= 1.0).count() as f64 / N as f64;
    assert!((tail - 0.135335).abs() < 0.004, "tail {tail}");
    let gs: Vec<f64> = (0..N).map(|_| gaussian(&mut rng, 2.0)).collect();
    let (gm, gv) = moments(&gs);
    assert!(gm.abs() < 0.03 && (gv - 4.0).abs() < 0.1, "{gm} {gv}");
    // P(|Z| ≥ 2σ) = 0.0455.
    let gt = gs.iter().filter(|x| x.abs() >= 4.0).count() as f64 / N as f64;
    assert!((gt - 0.0455).abs() < 0.003, "tail {gt}");
}

#[test]
fn seeded_rng_is_reproducible_and_recorded_os_rng_is_not_reproducible() {
    let mut a = NoiseRng::seeded_for_experiments(42);
    let mut b = NoiseRng::seeded_for_experiments(42);
    let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
    let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
    assert_eq!(va, vb);
    assert_eq!(
        serde_json::to_string(&a.provenance()).unwrap(),
        r#"{"rng":"seeded","seed":42}"#
    );
    let mut o1 = NoiseRng::from_os().unwrap();
    let mut o2 = NoiseRng::from_os().unwrap();
    assert_eq!(
        serde_json::to_string(&o1.provenance()).unwrap(),
        r#"{"rng":"os"}"#
    );
    assert!(!o1.provenance().is_seeded() && a.provenance().is_seeded());
    let w1: Vec<u64> = (0..4).map(|_| o1.next_u64()).collect();
    let w2: Vec<u64> = (0..4).map(|_| o2.next_u64()).collect();
    assert_ne!(w1, w2);
    assert_eq!(
        serde_json::from_str::<RngProvenance>(r#"{"rng":"seeded","seed":7}"#).unwrap(),
        RngProvenance::Seeded { seed: 7 }
    );
    // Debug never prints the generator state.
    assert!(!format!("{a:?}").contains("state"));
}

#[test]
fn uniform_below_is_uniform() {
    // 6 buckets, 60k draws: each 10000 ± 5·91.
    let mut rng = NoiseRng::seeded_for_experiments(6);
    let mut counts = [0usize; 6];
    for _ in 0..60_000 {
        counts[rng.uniform_below(6) as usize] += 1;
    }
    for c in counts {
        assert!((c as i64 - 10_000).abs() < 460, "{counts:?}");
    }
}
