//! Aggregators: label frequencies against exact probabilities of the discrete noise (numpy values
//! in the comments), tie-breaking, abstention. Fixed test seeds; 20 000 trials give SE ≤ 0.0035.
use privacy::aggregate::{Aggregator, ConfidentGnmax, Gnmax, GnmaxHead, Lnmax};
use privacy::{NoiseRng, VoteMatrix};

const TRIALS: usize = 20_000;

fn frequency_of(label: usize, agg: &dyn Aggregator, counts: &[u64], seed: u64) -> f64 {
    let mut rng = NoiseRng::seeded_for_experiments(seed);
    let hits = (0..TRIALS)
        .filter(|_| agg.aggregate_query(counts, &mut rng).unwrap() == Some(label))
        .count();
    hits as f64 / TRIALS as f64
}

#[test]
fn gnmax_label_frequencies_match_the_discrete_gaussian() {
    // Votes [130, 120], σ = 40: label 1 wins iff 120 + Z₁ > 130 + Z₀ (ties go to class 0), i.e.
    // Z₁ − Z₀ ≥ 11: P = 0.426372 (numpy, exact discrete Gaussian sums).
    let f = frequency_of(1, &Gnmax::new(40.0), &[130, 120], 1);
    assert!((f - 0.426372).abs() < 0.017, "{f}");
    // Votes [120, 130]: label 0 wins iff Z₀ − Z₁ ≥ 10 (ties favour class 0): P = 0.433315.
    let f0 = frequency_of(0, &Gnmax::new(40.0), &[120, 130], 2);
    assert!((f0 - 0.433315).abs() < 0.017, "{f0}");
}

#[test]
fn lnmax_label_frequencies_match_the_discrete_laplace() {
    // Votes [130, 120], γ = 0.05: P(Y ≥ 11) = c²p¹¹[(11 + (1+p²)/(1−p²))/(1−p) + p/(1−p)²],
    // p = e^{−0.05}, c = (1−p)/(1+p): 0.373379.
    let f = frequency_of(1, &Lnmax { gamma: 0.05 }, &[130, 120], 3);
    assert!((f - 0.373379).abs() < 0.017, "{f}");
}

#[test]
fn large_margins_and_tiny_noise_return_the_argmax() {
    let mut rng = NoiseRng::seeded_for_experiments(4);
    let votes = VoteMatrix::from_rows(&[[250u64, 0], [0, 250], [10, 200], [3, 2]]).unwrap();
    // γ = 100 (scale 0.01): P(any noise ≠ 0) is e^{-100}-small.
    assert_eq!(
        Lnmax { gamma: 100.0 }.aggregate(&votes, &mut rng).unwrap(),
        vec![Some(0), Some(1), Some(1), Some(0)]
    );
    let votes3 = VoteMatrix::from_rows(&[[0u64, 250, 0], [0, 0, 250]]).unwrap();
    // σ = 10 with a gap of 250: P(error) < erfc(250/20) ≈ 1e-69.
    assert_eq!(
        Gnmax::new(10.0).aggregate(&votes3, &mut rng).unwrap(),
        vec![Some(1), Some(2)]
    );
}

#[test]
fn confident_gnmax_abstains_below_the_threshold() {
    let mut rng = NoiseRng::seeded_for_experiments(5);
    let votes = VoteMatrix::from_rows(&vec![[200u64, 50]; 200]).unwrap();
    // T far above 250 with σ₁ = 1: never answers.
    let never = ConfidentGnmax {
        threshold: 400.0,
        sigma1: 1.0,
        sigma2: 10.0,
        max_answered: None,
    }
    .aggregate(&votes, &mut rng)
    .unwrap();
    assert!(never.iter().all(Option::is_none));
    // T = 0: always answers, and with σ₂ = 10 the answer is the argmax.
    let always = ConfidentGnmax {
        threshold: 0.0,
        sigma1: 1.0,
        sigma2: 10.0,
        max_answered: None,
    }
    .aggregate(&votes, &mut rng)
    .unwrap();
    assert!(always.iter().all(|l| *l == Some(0)));
    // max = 200, T = 210, σ₁ = 20: P(answer) = P(Z ≥ 10) = 0.317376 (numpy).
    let agg = ConfidentGnmax {
        threshold: 210.0,
        sigma1: 20.0,
        sigma2: 40.0,
        max_answered: None,
    };
    let mut answered = 0;
    for _ in 0..TRIALS {
        if agg.aggregate_query(&[200, 50], &mut rng).unwrap().is_some() {
            answered += 1;
        }
    }
    let f = answered as f64 / TRIALS as f64;
    assert!((f - 0.317376).abs() < 0.017, "{f}");
    // Non-integer T acts as ⌈T⌉: T = 209.5 behaves like 210.
    assert_eq!(
        ConfidentGnmax {
            threshold: 209.5,
            sigma1: 20.0,
            sigma2: 40.0,
            max_answered: None,
        }
        .integer_threshold()
        .unwrap(),
        210
    );
}

/// The cap on answers is a stopping rule: the aggregator answers at most `max_answered` queries
/// and declines every later one, whatever its votes (the accountant's data-independent ε charges
/// the GNMax step this many times).
#[test]
fn confident_gnmax_stops_answering_at_the_cap() {
    let mut rng = NoiseRng::seeded_for_experiments(9);
    let votes = VoteMatrix::from_rows(&vec![[250u64, 0]; 50]).unwrap();
    let capped = |max_answered| ConfidentGnmax {
        threshold: 0.0,
        sigma1: 1.0,
        sigma2: 10.0,
        max_answered,
    };
    let labels = capped(Some(7)).aggregate(&votes, &mut rng).unwrap();
    assert!(labels[..7].iter().all(|l| *l == Some(0)), "{labels:?}");
    assert!(labels[7..].iter().all(Option::is_none), "{labels:?}");
    // Unanswered queries do not count: with T above every count nothing is answered, and the
    // cap never binds.
    let mixed = VoteMatrix::from_rows(
        &(0..40)
            .map(|i| if i % 2 == 0 { [120u64, 130] } else { [250, 0] })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let labels = ConfidentGnmax {
        threshold: 200.0,
        ..capped(Some(5))
    }
    .aggregate(&mixed, &mut rng)
    .unwrap();
    let answered: Vec<usize> = (0..40).filter(|&i| labels[i].is_some()).collect();
    assert_eq!(answered, vec![1, 3, 5, 7, 9], "{labels:?}");
    assert_eq!(
        capped(Some(0))
            .aggregate_query(&[250, 0], &mut rng)
            .unwrap(),
        None
    );
    assert_eq!(capped(Some(0)).gnmax_steps_bound(50), 0);
    assert_eq!(capped(Some(70)).gnmax_steps_bound(50), 50);
    assert_eq!(capped(None).gnmax_steps_bound(50), 50);
    // It parses in the config's tagged form.
    let m: privacy::Mechanism = serde_json::from_str(
        r#"{"mechanism": "confident_gnmax", "threshold": 200, "sigma1": 150, "sigma2": 40, "max_answered": 1500}"#,
    )
    .unwrap();
    assert_eq!(
        m,
        privacy::Mechanism::ConfidentGnmax(ConfidentGnmax {
            threshold: 200.0,
            sigma1: 150.0,
            sigma2: 40.0,
            max_answered: Some(1500),
        })
    );
}

#[test]
fn invalid_parameters_are_errors_not_panics() {
    let mut rng = NoiseRng::seeded_for_experiments(6);
    assert!(Lnmax { gamma: -1.0 }
        .aggregate_query(&[1, 2], &mut rng)
        .is_err());
    assert!(Gnmax::new(0.0).aggregate_query(&[1, 2], &mut rng).is_err());
    assert!(ConfidentGnmax {
        threshold: f64::NAN,
        sigma1: 1.0,
        sigma2: 1.0,
        max_answered: None,
    }
    .aggregate_query(&[1, 2], &mut rng)
    .is_err());
    assert!(Gnmax::new(1.0).aggregate_query(&[], &mut rng).is_err());
}

/// One mechanism type, tagged by `mechanism`, with exactly its own parameters.
#[test]
fn mechanism_is_tagged_and_rejects_other_mechanisms_parameters() {
    use privacy::Mechanism;
    let ok: Mechanism = serde_json::from_str(r#"{"mechanism": "lnmax", "gamma": 0.05}"#).unwrap();
    assert_eq!(
        ok,
        Mechanism::Lnmax(privacy::aggregate::Lnmax { gamma: 0.05 })
    );
    let c: Mechanism = serde_json::from_str(
        r#"{"mechanism": "confident_gnmax", "threshold": 200, "sigma1": 150, "sigma2": 40}"#,
    )
    .unwrap();
    assert_eq!(c.name(), "confident-gnmax");
    let e = serde_json::from_str::<Mechanism>(r#"{"mechanism": "lnmax", "sigma": 12}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("sigma") || e.contains("gamma"), "{e}");
    let e =
        serde_json::from_str::<Mechanism>(r#"{"mechanism": "lnmax", "gamma": 0.05, "sigma": 12}"#)
            .unwrap_err()
            .to_string();
    assert!(e.contains("sigma"), "{e}");
    assert!(serde_json::from_str::<Mechanism>(r#"{"mechanism": "laplace", "gamma": 1}"#).is_err());
    let back = serde_json::to_value(c).unwrap();
    assert_eq!(back["mechanism"], "confident_gnmax");
    assert!(Mechanism::Gnmax(privacy::aggregate::Gnmax::new(-1.0))
        .check()
        .is_err());
}

/// The head's σ applies to exactly the first `queries` queries: with σ_h = 0.5 a margin of 20 is
/// never overturned (P < 1e-100), with σ = 200 it is about half the time; so every head row is
/// answered right and the rest is not. 200 rows per part: P(all 200 rest rows right) ≈ 0.54²⁰⁰.
#[test]
fn gnmax_head_answers_the_first_queries_with_its_own_sigma() {
    let mut rng = NoiseRng::seeded_for_experiments(21);
    let votes = VoteMatrix::from_rows(&vec![[110u64, 90]; 400]).unwrap();
    let m = Gnmax {
        sigma: 200.0,
        head: Some(GnmaxHead {
            queries: 200,
            sigma: 0.5,
        }),
    };
    let labels = m.aggregate(&votes, &mut rng).unwrap();
    assert!(labels[..200].iter().all(|l| *l == Some(0)));
    let wrong = labels[200..].iter().filter(|l| **l == Some(1)).count();
    assert!(
        (60..=140).contains(&wrong),
        "{wrong} of 200 flipped at σ 200"
    );
    // A head longer than the vote matrix covers every query.
    let all = Gnmax {
        sigma: 200.0,
        head: Some(GnmaxHead {
            queries: 10_000,
            sigma: 0.5,
        }),
    };
    assert!(all
        .aggregate(&votes, &mut rng)
        .unwrap()
        .iter()
        .all(|l| *l == Some(0)));
    // The head's σ is checked like the run's.
    let bad = Gnmax {
        sigma: 40.0,
        head: Some(GnmaxHead {
            queries: 3,
            sigma: 0.0,
        }),
    };
    assert!(bad.aggregate(&votes, &mut rng).is_err());
    assert!(privacy::Mechanism::Gnmax(bad).check().is_err());
}
