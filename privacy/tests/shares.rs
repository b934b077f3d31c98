//! Distributed noise (`privacy::shares`) and the privacy ledger (`privacy::ledger`).
use privacy::aggregate::{Gnmax, Lnmax};
use privacy::shares::{argmax_labels, format_share, noisy_share, parse_share, sum_shares};
use privacy::{Mechanism, NoiseRng, VoteMatrix};
use std::path::PathBuf;

/// n organizations each add N_Z(0, σ²/n): the summed noise has variance σ² (here 40² = 1600,
/// within 4 %), mean 0, and a single share's noise has variance σ²/n (the aggregator sees no
/// clean count).
#[test]
fn shares_sum_to_the_gnmax_noise_and_no_share_is_clean() {
    let n = 4;
    let sigma = 40.0;
    let clean = VoteMatrix::from_rows(&vec![[1u64, 0]; 5000]).unwrap();
    let shares: Vec<(PathBuf, privacy::shares::NoisyShare)> = (0..n)
        .map(|i| {
            let mut rng = NoiseRng::seeded_for_experiments(100 + i as u64);
            (
                PathBuf::from(format!("org{i}.csv")),
                noisy_share(&clean, sigma, n, &mut rng).unwrap(),
            )
        })
        .collect();
    let sum = sum_shares(&shares).unwrap();
    let noise: Vec<f64> = sum.iter().map(|r| (r[0] - n as i64) as f64).collect();
    let mean = noise.iter().sum::<f64>() / noise.len() as f64;
    let var = noise.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / noise.len() as f64;
    assert!(mean.abs() < 2.0, "mean {mean}");
    assert!((var / 1600.0 - 1.0).abs() < 0.04, "variance {var}");
    let one: Vec<f64> = shares[0].1.rows.iter().map(|r| (r[0] - 1) as f64).collect();
    let var1 = one.iter().map(|v| v * v).sum::<f64>() / one.len() as f64;
    assert!(
        (var1 / 400.0 - 1.0).abs() < 0.06,
        "one share's variance {var1}"
    );
    let unchanged = one.iter().filter(|v| **v == 0.0).count();
    assert!(unchanged < 100, "{unchanged} counts sent in clear");
    // The file round-trips, and the labels are the argmax of the sum.
    let text = format_share(&shares[1].1);
    assert!(privacy::shares::is_share(&text));
    assert_eq!(
        parse_share(&text, std::path::Path::new("x")).unwrap(),
        shares[1].1
    );
    assert_eq!(
        argmax_labels(&[vec![3, 7], vec![5, 5], vec![-2, -9]]),
        [Some(1), Some(0), Some(0)]
    );
}

#[test]
fn shares_that_do_not_belong_together_are_refused_naming_the_files() {
    let clean = VoteMatrix::from_rows(&[[1u64, 0]; 10]).unwrap();
    let other = VoteMatrix::from_rows(&[[1u64, 0]; 11]).unwrap();
    let mut rng = NoiseRng::seeded_for_experiments(1);
    let a = noisy_share(&clean, 40.0, 2, &mut rng).unwrap();
    let b = noisy_share(&other, 40.0, 2, &mut rng).unwrap();
    let c = noisy_share(&clean, 30.0, 2, &mut rng).unwrap();
    let named = |p: &str, s: &privacy::shares::NoisyShare| (PathBuf::from(p), s.clone());
    let e = sum_shares(&[named("a.csv", &a), named("b.csv", &b)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b.csv") && e.contains("a.csv") && e.contains("queries"),
        "{e}"
    );
    let e = sum_shares(&[named("a.csv", &a), named("c.csv", &c)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("c.csv") && e.contains("sigma"), "{e}");
    let e = sum_shares(&[named("a.csv", &a)]).unwrap_err().to_string();
    assert!(e.contains("organizations=2"), "{e}");
    // Shares too small to sum to a discrete Gaussian closely enough are refused.
    assert!(noisy_share(&clean, 3.0, 4, &mut rng).is_err());
    let e = parse_share(
        "# pate-waf noisy vote share: mechanism=gnmax sigma=40 organizations=2\n1,x\n",
        std::path::Path::new("s.csv"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("s.csv:2"), "{e}");
}

/// The ledger composes every aggregation: two identical GNMax aggregations cost more than one,
/// and exactly what one aggregation of twice the queries costs (RDP adds up).
#[test]
fn ledger_composes_every_aggregation_that_used_the_teachers() {
    use privacy::ledger::{append, composed_epsilon, read, LedgerEntry};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.jsonl");
    assert!(read(&path).unwrap().is_empty());
    let entry = |queries| LedgerEntry {
        time: "2026-11-23T00:00:00Z".into(),
        by: "test".into(),
        mechanism: Mechanism::Gnmax(Gnmax::new(40.0)),
        queries,
        answered: queries,
    };
    append(&path, &entry(500)).unwrap();
    let (one, _) = composed_epsilon(&read(&path).unwrap(), 1e-5).unwrap();
    append(&path, &entry(500)).unwrap();
    let entries = read(&path).unwrap();
    assert_eq!(entries.len(), 2);
    let (two, _) = composed_epsilon(&entries, 1e-5).unwrap();
    let (double, _) = composed_epsilon(&[entry(1000)], 1e-5).unwrap();
    assert!(two > one * 1.2, "{one} {two}");
    assert!((two - double).abs() < 1e-12);
    // The same value as the accountant's data-independent GNMax ε for 1,000 queries.
    let v = VoteMatrix::from_rows(&vec![[125u64, 125]; 1000]).unwrap();
    let r = privacy::accountant::account(
        &v,
        &Mechanism::Gnmax(Gnmax::new(40.0)),
        &privacy::accountant::AccountOptions {
            delta: 1e-5,
            orders: None,
            answered: None,
        },
    )
    .unwrap();
    assert!(
        double <= r.data_independent_epsilon + 1e-9,
        "{double} {}",
        r.data_independent_epsilon
    );
    assert!(double > r.data_independent_epsilon * 0.98);
    // LNMax entries compose too (RDP 2γ²α per query).
    let l = LedgerEntry {
        mechanism: Mechanism::Lnmax(Lnmax { gamma: 0.05 }),
        ..entry(100)
    };
    assert!(composed_epsilon(&[l.clone(), entry(500)], 1e-5).unwrap().0 > one);
    // Confident-GNMax: the entry's answered count (data-dependent) is never charged; the cap
    // fixed in advance is, or every query without one.
    let confident = |max_answered, answered| LedgerEntry {
        mechanism: Mechanism::ConfidentGnmax(privacy::aggregate::ConfidentGnmax {
            threshold: 200.0,
            sigma1: 150.0,
            sigma2: 40.0,
            max_answered,
        }),
        answered,
        ..entry(1000)
    };
    let eps = |e: LedgerEntry| composed_epsilon(&[e], 1e-5).unwrap().0;
    assert_eq!(eps(confident(None, 10)), eps(confident(None, 1000)));
    assert_eq!(
        eps(confident(Some(400), 10)),
        eps(confident(Some(400), 400))
    );
    assert!(eps(confident(Some(400), 10)) < eps(confident(None, 10)));
    assert!(
        eps(confident(None, 10)) > double,
        "the threshold step costs on top of GNMax"
    );
    std::fs::write(&path, "{not json}\n").unwrap();
    let e = read(&path).unwrap_err().to_string();
    assert!(e.contains("ledger.jsonl:1"), "{e}");
}
