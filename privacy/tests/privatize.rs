//! Student-feature privatization: noise scale 1/ρ and local ε = 2ρ.
use privacy::privatize::{laplace, local_epsilon};
use privacy::NoiseRng;

#[test]
fn laplace_noise_has_scale_one_over_rho() {
    // Lap(1/ρ) with ρ = 4: E|noise| = 0.25, Var = 2/ρ² = 0.125, median |noise| = ln2/ρ = 0.17329.
    let rho = 4.0;
    let mut rng = NoiseRng::seeded_for_experiments(11);
    let original: Vec<f32> = (0..100_000)
        .map(|i| if i % 10 == 0 { 0.1 } else { 0.0 })
        .collect();
    let mut x = original.clone();
    laplace(&mut x, rho, &mut rng).unwrap();
    let noise: Vec<f64> = x
        .iter()
        .zip(&original)
        .map(|(a, b)| (*a - *b) as f64)
        .collect();
    let n = noise.len() as f64;
    let mean = noise.iter().sum::<f64>() / n;
    let mad = noise.iter().map(|v| v.abs()).sum::<f64>() / n;
    let var = noise.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    assert!(mean.abs() < 0.005, "mean {mean}");
    assert!((mad - 0.25).abs() < 0.005, "E|noise| {mad}");
    assert!((var - 0.125).abs() < 0.006, "var {var}");
    let mut abs: Vec<f64> = noise.iter().map(|v| v.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median = abs[abs.len() / 2];
    assert!((median - 0.17329).abs() < 0.005, "median {median}");
    // Every coordinate got noise.
    assert!(x.iter().zip(&original).all(|(a, b)| a != b));
}

#[test]
fn local_epsilon_is_two_rho_and_bad_rho_is_rejected() {
    assert_eq!(local_epsilon(0.5), 1.0);
    assert_eq!(local_epsilon(3.0), 6.0);
    let mut rng = NoiseRng::seeded_for_experiments(1);
    let mut x = vec![0.5f32, 0.5];
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(laplace(&mut x, bad, &mut rng).is_err());
    }
    assert_eq!(
        x,
        vec![0.5, 0.5],
        "a rejected call must not modify the data"
    );
}
