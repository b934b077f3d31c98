//! Student-feature privatization: noise scale 1/ρ and local ε = 2ρ.
use privacy::privatize::{laplace, local_epsilon};
use privacy::NoiseRng;

#[test]
fn laplace_noise_has_scale_one_over_rho() {
    // Lap(1/ρ) with ρ = 4: E|noise| = 0.25, Var = 2/ρ² = 0.125, median |noise| = ln2/ρ = 0.17329.
    let rho = 4.0;
    let mut rng = NoiseRng::seeded_for_experiments(11);
    // 10,000 records of 10 coordinates, ‖x‖₁ = 0.1 each (no clipping).
    let original: Vec<f32> = (0..100_000)
        .map(|i| if i % 10 == 0 { 0.1 } else { 0.0 })
        .collect();
    let mut x = original.clone();
    privacy::privatize::laplace_rows(&mut x, 10, rho, &mut rng).unwrap();
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
    // Nearly every coordinate got noise (the discrete noise is 0 with probability ≈ ρ·g/2).
    let unchanged = x.iter().zip(&original).filter(|(a, b)| a == b).count();
    assert!(unchanged < 20, "{unchanged} coordinates unchanged");
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

/// The 2ρ bound needs ‖x‖₁ ≤ 1 for every record; `laplace` enforces it itself (it used to rely on
/// the CLI's loose check): with almost no noise, a record of l1 norm 3 comes out with norm ≈ 1,
/// and the same proportions.
#[test]
fn records_above_unit_l1_norm_are_clipped_before_the_noise() {
    let mut rng = NoiseRng::seeded_for_experiments(5);
    let mut x = vec![2.0f32, -1.0, 0.0, 0.0];
    laplace(&mut x, 1e6, &mut rng).unwrap();
    let l1: f64 = x.iter().map(|v| (*v as f64).abs()).sum();
    assert!(
        (l1 - 1.0).abs() < 1e-3,
        "l1 norm {l1} after privatization: {x:?}"
    );
    assert!((x[0] as f64 - 2.0 / 3.0).abs() < 1e-3 && (x[1] as f64 + 1.0 / 3.0).abs() < 1e-3);
    // A record already inside the ball is not rescaled.
    let mut y = vec![0.25f32, 0.25];
    laplace(&mut y, 1e6, &mut rng).unwrap();
    assert!(
        (y[0] - 0.25).abs() < 1e-3 && (y[1] - 0.25).abs() < 1e-3,
        "{y:?}"
    );
}

/// The noise is discrete: every output is an integer multiple of the grid step 2^−16 (no
/// floating-point Laplace, whose low-order bits leak the input, Mironov 2012), and each row of a
/// matrix is clipped on its own.
#[test]
fn outputs_lie_on_the_grid_and_rows_are_separate_records() {
    let mut rng = NoiseRng::seeded_for_experiments(8);
    let step = 1.0f64 / f64::from(1u32 << privacy::privatize::GRID_BITS);
    let mut m = vec![0.3f32, 0.7, 5.0, 5.0];
    privacy::privatize::laplace_rows(&mut m, 2, 1e6, &mut rng).unwrap();
    for v in &m {
        let units = *v as f64 / step;
        assert!(
            (units - units.round()).abs() < 1e-6,
            "{v} is not on the grid"
        );
    }
    assert!(
        (m[0] - 0.3).abs() < 1e-3 && (m[1] - 0.7).abs() < 1e-3,
        "{m:?}"
    );
    assert!(
        (m[2] - 0.5).abs() < 1e-3 && (m[3] - 0.5).abs() < 1e-3,
        "{m:?}"
    );
    assert!(privacy::privatize::laplace_rows(&mut m, 3, 1.0, &mut rng).is_err());
}
