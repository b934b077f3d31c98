//! Accountants: the published value, hand-computed cases (values from independent numpy
//! computations of the paper formulas, quoted in comments) and properties.
use privacy::accountant::{
    account, gnmax_ln_q, gnmax_rdp_data_dependent, lnmax_ln_q, lnmax_moment_data_dependent,
    rdp_epsilon, threshold_ln_q, AccountOptions, Mechanism, LABEL_DATA_DEPENDENT,
    LABEL_DATA_INDEPENDENT, LABEL_SANITIZED,
};
use privacy::aggregate::{ConfidentGnmax, Gnmax, GnmaxHead, Lnmax};
use privacy::smooth::{sanitize, SanitizeOptions};
use privacy::special::DiscreteGaussianTails;
use privacy::{EpsilonReport, NoiseRng, VoteMatrix};
use proptest::prelude::*;

fn votes(rows: &[[u64; 2]]) -> VoteMatrix {
    VoteMatrix::from_rows(rows).unwrap()
}

fn opts(delta: f64, orders: Option<Vec<f64>>) -> AccountOptions {
    AccountOptions {
        delta,
        orders,
        answered: None,
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

fn lnmax(gamma: f64) -> Mechanism {
    Mechanism::Lnmax(Lnmax { gamma })
}
fn gnmax(sigma: f64) -> Mechanism {
    Mechanism::Gnmax(Gnmax::new(sigma))
}
fn gnmax_head(sigma: f64, queries: usize, head_sigma: f64) -> Mechanism {
    Mechanism::Gnmax(Gnmax {
        sigma,
        head: Some(GnmaxHead {
            queries,
            sigma: head_sigma,
        }),
    })
}

#[test]
fn published_lnmax_value_t1000_gamma005_delta1e5() {
    // Papernot et al. 2017 / the seeds: α_total(λ) = 1000·2·0.05²·λ(λ+1) = 5λ(λ+1), so
    // ε(λ) = 5λ + 5 + ln(1e5)/λ, minimal at λ = √(11.512925/5) = 1.5174 with ε = 20.1743.
    let v = votes(&vec![[140, 110]; 1000]);
    let r = account(&v, &lnmax(0.05), &opts(1e-5, None)).unwrap();
    assert!(
        (r.data_independent_epsilon - 20.1743).abs() < 5e-5,
        "{}",
        r.data_independent_epsilon
    );
    assert!(
        (r.data_independent_order - 1.5174).abs() < 5e-5,
        "{}",
        r.data_independent_order
    );
    let c = r.continuous.as_ref().unwrap();
    assert_eq!(c.data_independent_epsilon, r.data_independent_epsilon);
    // The integer grid can only do worse: λ = 2 gives (30 + 11.512925)/2 = 20.756463.
    assert!((r.discrete.data_independent_epsilon - 20.756463).abs() < 1e-5);
    assert_eq!(r.discrete.data_independent_order, 2.0);
    assert_eq!(r.queries, 1000);
    assert_eq!(r.mechanism, "lnmax");
}

/// With the continuous LNMax minimum as headline, the integer grid's data-dependent ε (20.76 here:
/// gap 30 at γ = 0.05 is no agreement at all) is above the headline data-independent ε (20.17);
/// the report must not show such a pair: every data-dependent ε in the JSON is at most the
/// headline data-independent ε.
#[test]
fn report_shows_no_data_dependent_epsilon_above_the_headline() {
    let v = votes(&vec![[140, 110]; 1000]);
    let r = account(&v, &lnmax(0.05), &opts(1e-5, None)).unwrap();
    let json = serde_json::to_value(&r).unwrap();
    fn walk(v: &serde_json::Value, out: &mut Vec<f64>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    if k == "data_dependent_epsilon" {
                        out.push(x.as_f64().unwrap());
                    }
                    walk(x, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&json, &mut found);
    assert!(!found.is_empty());
    for e in found {
        assert!(
            e <= r.data_independent_epsilon + 1e-12,
            "{e} > {}: {json}",
            r.data_independent_epsilon
        );
    }
}

#[test]
fn lnmax_data_independent_with_given_orders() {
    // T = 10, γ = 0.1: α_total = 0.2λ(λ+1); ε(1) = 11.912925, ε(2) = 6.356463, ε(3) = 4.637642.
    let v = votes(&[[5, 5]; 10]);
    let r = account(&v, &lnmax(0.1), &opts(1e-5, Some(vec![1.0, 2.0, 3.0]))).unwrap();
    assert!((r.data_independent_epsilon - 4.637642).abs() < 1e-6);
    assert_eq!(r.data_independent_order, 3.0);
    assert_eq!(r.orders, vec![1.0, 2.0, 3.0]);
    assert!(
        r.continuous.is_none(),
        "--orders restricts to exactly the given orders"
    );
    // Ties everywhere: q ≥ 1/2 > 1/(e^{0.2}+1), Theorem 3 never applies.
    assert_eq!(r.data_dependent_epsilon, r.data_independent_epsilon);
    assert_eq!(r.data_dependent_queries, 0);
}

#[test]
fn lnmax_data_dependent_single_unanimous_query() {
    // Votes [250, 0], γ = 0.05: exact discrete-Laplace tail q = P(Y ≥ 250) = 1.3821017e-5
    // (Lemma 4's continuous value is 1.3509118e-5). Theorem 3:
    // α(λ) = ln((1−q)((1−q)/(1−e^{0.1}q))^λ + q e^{0.1λ}) = 2.90714e-6, 5.96714e-6, 9.19608e-6
    // for λ = 1, 2, 3 (data-independent 0.01, 0.03, 0.06); ε = min_λ (α + ln 1e5)/λ = 3.8376449
    // at λ = 3, data-independent 3.8576418.
    let q = lnmax_ln_q(&[250, 0], 0.05).exp();
    assert!(close(q, 1.382_101_693_965_545_5e-5, 1e-9), "{q}");
    assert!(q >= 1.350_911_774_878_518e-5);
    for (lambda, expected) in [
        (1.0, 2.907_135_967_518_479_7e-6),
        (2.0, 5.967_137_886_609_358_5e-6),
        (3.0, 9.196_082_019_520_182e-6),
    ] {
        let a = lnmax_moment_data_dependent(q.ln(), 0.05, lambda);
        assert!(close(a, expected, 1e-6), "λ={lambda}: {a} vs {expected}");
    }
    let r = account(
        &votes(&[[250, 0]]),
        &lnmax(0.05),
        &opts(1e-5, Some(vec![1.0, 2.0, 3.0])),
    )
    .unwrap();
    assert!((r.data_dependent_epsilon - 3.837_644_887_017_416_5).abs() < 1e-8);
    assert!((r.data_independent_epsilon - 3.857_641_821_656_743).abs() < 1e-8);
    assert_eq!(r.data_dependent_order, 3.0);
}

#[test]
fn gnmax_data_independent_with_given_orders() {
    // T = 100, σ = 40: RDP_total(α) = 100α/1600; converted at δ = 1e-5 as
    // RDP + (ln(1e5) − ln α)/(α − 1) + ln(1 − 1/α): ε(10) = 0.625 + (11.512925 − 2.302585)/9
    // + ln 0.9 = 1.543011 beats ε(2) = 10.251631 and ε(5) = 2.565228.
    let v = votes(&vec![[125, 125]; 100]);
    let r = account(&v, &gnmax(40.0), &opts(1e-5, Some(vec![2.0, 5.0, 10.0]))).unwrap();
    assert!((r.data_independent_epsilon - 1.543_011).abs() < 1e-6);
    assert_eq!(r.data_independent_order, 10.0);
}

#[test]
fn gnmax_data_dependent_hand_computed() {
    // Votes [200, 50], σ = 40: q = P(Z₁ − Z₂ ≥ 150) for iid discrete Gaussians = 0.00411062085
    // (exact sums; the continuous Proposition 7 value is erfc(150/80)/2 = 0.00400497).
    // Theorem 6 with μ₂ = σ√(ln 1/q), μ₁ = μ₂ + 1: RDP(α) = 1.021988e-3, 1.125066e-3,
    // 1.363252e-3, 2.274124e-3, 1.737735e-2 for α = 2, 5, 10, 20, 50.
    let tails = DiscreteGaussianTails::new(1600.0);
    let ln_q = gnmax_ln_q(&[200, 50], &tails);
    assert!(
        close(ln_q.exp(), 0.004_110_620_851_521_677, 1e-9),
        "{}",
        ln_q.exp()
    );
    for (alpha, expected) in [
        (2.0, 0.001_021_987_987_851_08),
        (5.0, 0.001_125_065_789_529_091_2),
        (10.0, 0.001_363_252_457_617_762_8),
        (20.0, 0.002_274_123_719_172_341_3),
        (50.0, 0.017_377_352_565_322_735),
    ] {
        let v = gnmax_rdp_data_dependent(ln_q, 40.0, alpha);
        assert!(close(v, expected, 1e-6), "α={alpha}: {v} vs {expected}");
        assert!(v < alpha / 1600.0);
    }
}

#[test]
fn confident_gnmax_threshold_step_hand_computed() {
    // max = 200, T = 100, σ₁ = 20: P[no answer] = P(Z ≥ 101) = 2.5103083e-7 < P[answer];
    // threshold RDP with σ₁√2 (Theorem 6): 1.593548e-7, 2.064868e-7, 3.885256e-7, 2.612365e-6
    // for α = 2, 5, 10, 20 (data-independent α/(2σ₁²) = 0.0025, 0.00625, 0.0125, 0.025).
    let tails = DiscreteGaussianTails::new(400.0);
    let ln_q = threshold_ln_q(200, 100, &tails);
    assert!(
        close(ln_q.exp(), 2.510_308_320_581_314e-7, 1e-8),
        "{}",
        ln_q.exp()
    );
    let s = 20.0 * std::f64::consts::SQRT_2;
    for (alpha, expected) in [
        (2.0, 1.593_548_359_530_570_4e-7),
        (5.0, 2.064_867_734_490_000_5e-7),
        (10.0, 3.885_256_239_185_223_7e-7),
        (20.0, 2.612_365_271_971_835_7e-6),
    ] {
        let v = gnmax_rdp_data_dependent(ln_q, s, alpha);
        assert!(close(v, expected, 1e-6), "α={alpha}: {v} vs {expected}");
    }
}

/// The published (data-independent) ε of Confident-GNMax must not depend on how many queries the
/// votes made it answer: that number is a function of the private votes. It charges the GNMax
/// step for every query, or for the cap on answers fixed in advance; only the data-dependent ε
/// (never published as is) charges the answered queries.
#[test]
fn confident_gnmax_data_independent_charges_the_cap_not_the_answers() {
    // 4 queries, σ₁ = 20, σ₂ = 40, α = 5. Every query charged: RDP = 4·5/(2·400) + 4·5/1600
    // = 0.0375, ε = 0.0375 + (ln(1e5) − ln 5)/4 + ln 0.8 = 2.290228. Cap 2: 4·5/800 + 2·5/1600
    // = 0.03125, ε = 2.283978.
    let v = votes(&[[200, 50], [130, 120], [250, 0], [125, 125]]);
    let confident = |max_answered| {
        Mechanism::ConfidentGnmax(ConfidentGnmax {
            threshold: 150.0,
            sigma1: 20.0,
            sigma2: 40.0,
            max_answered,
        })
    };
    let m = confident(None);
    let mut o = opts(1e-5, Some(vec![5.0]));
    let every = account(&v, &m, &o).unwrap();
    assert!(
        (every.data_independent_epsilon - 2.290_228).abs() < 1e-6,
        "{}",
        every.data_independent_epsilon
    );
    // Two answered, or none: the same data-independent ε (the bug this replaces charged 2).
    for answered in [
        vec![true, false, true, false],
        vec![false; 4],
        vec![true; 4],
    ] {
        o.answered = Some(answered.clone());
        let r = account(&v, &m, &o).unwrap();
        assert_eq!(
            r.data_independent_epsilon, every.data_independent_epsilon,
            "{answered:?}"
        );
        assert!(r.data_dependent_epsilon <= r.data_independent_epsilon);
    }
    // A cap of 2 fixed in advance: the filter's bound.
    let capped = confident(Some(2));
    o.answered = Some(vec![true, false, true, false]);
    let r = account(&v, &capped, &o).unwrap();
    assert!(
        (r.data_independent_epsilon - 2.283_978).abs() < 1e-6,
        "{}",
        r.data_independent_epsilon
    );
    assert_eq!(r.answered, Some(2));
    assert!(r.data_dependent_epsilon <= r.data_independent_epsilon);
    // Without an answered list the data-dependent analysis charges every query, yet never
    // reports more than the capped data-independent bound.
    o.answered = None;
    let r = account(&v, &capped, &o).unwrap();
    assert!((r.data_independent_epsilon - 2.283_978).abs() < 1e-6);
    assert!(r.data_dependent_epsilon <= r.data_independent_epsilon);
    // A cap above the number of queries charges every query.
    o.answered = None;
    let r = account(&v, &confident(Some(10)), &o).unwrap();
    assert_eq!(r.data_independent_epsilon, every.data_independent_epsilon);
    // An answered list this mechanism could not have produced is an error, not a smaller ε.
    o.answered = Some(vec![true, true, true, false]);
    let e = account(&v, &capped, &o).unwrap_err().to_string();
    assert!(e.contains("max_answered = 2"), "{e}");
    o.answered = Some(vec![true]);
    assert!(
        account(&v, &m, &o).is_err(),
        "answered list of the wrong length"
    );
}

fn all_finite(r: &EpsilonReport) {
    for e in &r.epsilons {
        assert!(
            e.epsilon.is_finite() && e.epsilon >= 0.0 && e.order.is_finite(),
            "{e:?}"
        );
    }
    let json = serde_json::to_string(r).unwrap();
    assert!(
        !json.contains("null") && !json.contains("NaN") && !json.contains("inf"),
        "{json}"
    );
}

#[test]
fn unanimous_binary_votes_work_for_every_mechanism() {
    // The reference implementations crash on these (log 0, division by zero).
    let unanimous = votes(&[[250, 0], [0, 250], [250, 0], [0, 0]]);
    for m in [
        lnmax(0.05),
        gnmax(40.0),
        gnmax(0.5),
        Mechanism::ConfidentGnmax(ConfidentGnmax {
            threshold: 200.0,
            sigma1: 150.0,
            sigma2: 40.0,
            max_answered: None,
        }),
        Mechanism::ConfidentGnmax(ConfidentGnmax {
            threshold: 10.0,
            sigma1: 0.5,
            sigma2: 0.5,
            max_answered: None,
        }),
    ] {
        for orders in [None, Some(vec![1.5, 2.0, 100.0])] {
            let o = opts(1e-5, orders);
            let mut r = account(&unanimous, &m, &o).unwrap();
            assert!(
                r.data_dependent_epsilon <= r.data_independent_epsilon,
                "{m:?}"
            );
            all_finite(&r);
            let mut rng = NoiseRng::seeded_for_experiments(9);
            sanitize(
                &unanimous,
                &m,
                &o,
                &mut r,
                &SanitizeOptions::default(),
                &mut rng,
            )
            .unwrap();
            all_finite(&r);
        }
    }
    // 1000 unanimous queries: the data-dependent bound is far below the data-independent one.
    let many = votes(&vec![[250, 0]; 1000]);
    let r = account(&many, &gnmax(40.0), &opts(1e-5, None)).unwrap();
    assert!(
        r.data_dependent_epsilon < 0.5 * r.data_independent_epsilon,
        "{r:?}"
    );
    assert_eq!(r.data_dependent_queries, 1000);
}

#[test]
fn labels_and_json_shape() {
    let v = votes(&vec![[200, 50]; 50]);
    let o = opts(1e-5, None);
    let m = gnmax(40.0);
    let mut r = account(&v, &m, &o).unwrap();
    let mut rng = NoiseRng::seeded_for_experiments(3);
    sanitize(&v, &m, &o, &mut r, &SanitizeOptions::default(), &mut rng).unwrap();
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    for key in [
        "mechanism",
        "queries",
        "delta",
        "data_independent_epsilon",
        "data_independent_order",
        "data_dependent_epsilon",
        "data_dependent_order",
        "orders_used",
        "orders",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    let labels: Vec<&str> = r.epsilons.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(
        labels,
        vec![
            LABEL_DATA_INDEPENDENT,
            LABEL_DATA_DEPENDENT,
            LABEL_SANITIZED
        ]
    );
    assert_eq!(
        LABEL_DATA_DEPENDENT,
        "data-dependent (not private to publish)"
    );
    let s = r.sanitized.as_ref().unwrap();
    assert_eq!(
        json["sanitized"]["rng"],
        serde_json::json!({"rng": "seeded", "seed": 3})
    );
    // The published value includes the release's own cost and the δ term.
    assert!(s.epsilon >= s.release_rdp_cost + (1e5f64).ln() / (s.rdp_order - 1.0) - 1e-12);
    assert!(s.noise_std.is_finite() && s.noise_std >= 0.0);
}

#[test]
fn epsilon_grows_with_queries_and_falls_with_noise() {
    let base: Vec<[u64; 2]> = (0..200)
        .map(|i| [150 + (i % 100), 100 - (i % 100)])
        .collect();
    let double: Vec<[u64; 2]> = base.iter().chain(base.iter()).copied().collect();
    for (small, big) in [(lnmax(0.05), lnmax(0.02)), (gnmax(40.0), gnmax(80.0))] {
        let r1 = account(&votes(&base), &small, &opts(1e-5, None)).unwrap();
        let r2 = account(&votes(&double), &small, &opts(1e-5, None)).unwrap();
        assert!(r2.data_independent_epsilon > r1.data_independent_epsilon);
        assert!(r2.data_dependent_epsilon > r1.data_dependent_epsilon);
        let r3 = account(&votes(&base), &big, &opts(1e-5, None)).unwrap();
        assert!(r3.data_independent_epsilon < r1.data_independent_epsilon);
        // (Not asserted for the data-dependent ε: with strong consensus, LESS noise makes q so
        // small that the data-dependent bound can shrink: it is not monotone in the noise.)
    }
    // Smaller δ costs more.
    let a = account(&votes(&base), &gnmax(40.0), &opts(1e-5, None)).unwrap();
    let b = account(&votes(&base), &gnmax(40.0), &opts(1e-8, None)).unwrap();
    assert!(b.data_independent_epsilon > a.data_independent_epsilon);
}

#[test]
fn invalid_options_are_errors() {
    let v = votes(&[[1, 2]]);
    assert!(account(&v, &lnmax(0.05), &opts(0.0, None)).is_err());
    assert!(account(&v, &lnmax(0.05), &opts(1.0, None)).is_err());
    assert!(account(&v, &lnmax(0.05), &opts(1e-5, Some(vec![]))).is_err());
    assert!(account(&v, &lnmax(0.05), &opts(1e-5, Some(vec![-1.0]))).is_err());
    assert!(
        account(&v, &gnmax(40.0), &opts(1e-5, Some(vec![1.0]))).is_err(),
        "RDP orders must be > 1"
    );
    assert!(account(&v, &gnmax(40.0), &opts(1e-5, Some(vec![f64::NAN]))).is_err());
    assert!(account(&v, &gnmax(-3.0), &opts(1e-5, None)).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// Data-dependent ε never exceeds data-independent ε (same orders), for any votes.
    #[test]
    fn data_dependent_never_exceeds_data_independent(
        rows in prop::collection::vec(prop::collection::vec(0u64..=250, 3), 1..40),
        gamma in 0.01f64..1.0,
        sigma in 1.0f64..100.0,
        threshold in 0.0f64..300.0,
    ) {
        let v = VoteMatrix::from_rows(&rows).unwrap();
        for m in [lnmax(gamma), gnmax(sigma), Mechanism::ConfidentGnmax(ConfidentGnmax { threshold, sigma1: sigma, sigma2: sigma, max_answered: None })] {
            for orders in [None, Some(vec![2.0, 8.0, 32.0])] {
                let r = account(&v, &m, &opts(1e-5, orders)).unwrap();
                prop_assert!(r.data_dependent_epsilon <= r.data_independent_epsilon + 1e-12, "{:?}", r);
                prop_assert!(r.discrete.data_dependent_epsilon <= r.discrete.data_independent_epsilon + 1e-12);
                prop_assert!(r.data_dependent_epsilon.is_finite() && r.data_dependent_epsilon > 0.0);
            }
        }
    }
}

#[test]
fn delta_must_be_well_below_one_over_the_private_records() {
    use privacy::accountant::delta_warning;
    assert!(delta_warning(1e-5, 9_999).is_none(), "1e-5 < 1/(10·9,999)");
    let w = delta_warning(1e-3, 5000).unwrap();
    assert!(w.contains("5000") && w.contains("1/(10n)"), "{w}");
    assert!(
        delta_warning(1e-5, 10_000).is_some(),
        "δ = 1/(10n) exactly is not below 1/(10n)"
    );
    // CSIC's ~41,000 private records with δ 1e-5: about 2.4× below 1/n, not ten times.
    assert!(delta_warning(1e-5, 41_000).is_some());
    assert!(delta_warning(1e-6, 41_000).is_none());
}

/// A head query at σ/2 costs exactly four queries at σ (RDP α/σ² per query): 1,000 votes with a
/// head of 50 at σ 20 and the rest at σ 40 are charged as 950 + 4·50 = 1,150 queries at σ 40, at
/// every order; a head beyond the matrix covers it all; no head, or a head of 0 queries, is plain
/// GNMax. The data-dependent ε never exceeds the data-independent one.
#[test]
fn gnmax_head_is_charged_at_its_own_sigma() {
    let o = opts(1e-5, None);
    let with_head = account(
        &votes(&vec![[250, 0]; 1000]),
        &gnmax_head(40.0, 50, 20.0),
        &o,
    )
    .unwrap();
    let as_queries = account(&votes(&vec![[250, 0]; 1150]), &gnmax(40.0), &o).unwrap();
    assert!(
        close(
            with_head.data_independent_epsilon,
            as_queries.data_independent_epsilon,
            1e-12
        ),
        "{} vs {}",
        with_head.data_independent_epsilon,
        as_queries.data_independent_epsilon
    );
    assert_eq!(with_head.parameters["head"]["queries"], 50);
    assert!(with_head.data_dependent_epsilon <= with_head.data_independent_epsilon);
    // Unanimous votes: the head's data-dependent bound is smaller still (larger margin in σ units).
    assert!(with_head.data_dependent_epsilon < as_queries.data_dependent_epsilon);
    let plain = account(&votes(&vec![[200, 50]; 300]), &gnmax(40.0), &o).unwrap();
    let empty_head = account(
        &votes(&vec![[200, 50]; 300]),
        &gnmax_head(40.0, 0, 20.0),
        &o,
    )
    .unwrap();
    assert_eq!(
        empty_head.data_independent_epsilon,
        plain.data_independent_epsilon
    );
    assert_eq!(
        empty_head.data_dependent_epsilon,
        plain.data_dependent_epsilon
    );
    let all_head = account(
        &votes(&vec![[200, 50]; 300]),
        &gnmax_head(40.0, 5000, 20.0),
        &o,
    )
    .unwrap();
    let at_20 = account(&votes(&vec![[200, 50]; 300]), &gnmax(20.0), &o).unwrap();
    assert!(close(
        all_head.data_independent_epsilon,
        at_20.data_independent_epsilon,
        1e-12
    ));
    assert!(close(
        all_head.data_dependent_epsilon,
        at_20.data_dependent_epsilon,
        1e-12
    ));
    // The ledger charges the same curve.
    let entry = privacy::ledger::LedgerEntry {
        time: "t".into(),
        by: "test".into(),
        mechanism: gnmax_head(40.0, 50, 20.0),
        queries: 1000,
        answered: 1000,
    };
    for alpha in [1.5, 2.0, 7.5, 32.0] {
        let expected = 950.0 * alpha / 1600.0 + 50.0 * alpha / 400.0;
        assert!(close(entry.rdp(alpha).unwrap(), expected, 1e-12));
    }
}

/// Each query is charged at the σ of ITS position: contested rows in the head and unanimous ones
/// after it give, at one order, exactly the head rows' data-dependent RDP at σ_h plus the rest's
/// at σ — not the same rows the other way round.
#[test]
fn gnmax_head_charges_the_first_rows_at_its_sigma() {
    let alpha = 8.0;
    let o = opts(1e-5, Some(vec![alpha]));
    let rdp = |rows: &[[u64; 2]], m: &Mechanism| {
        account(&votes(rows), m, &o).unwrap().data_dependent_epsilon
            - rdp_epsilon(0.0, alpha, (1e5f64).ln())
    };
    let mut rows = vec![[150u64, 100]; 20];
    rows.extend(vec![[250u64, 0]; 80]);
    let with_head = rdp(&rows, &gnmax_head(40.0, 20, 20.0));
    let parts = rdp(&rows[..20], &gnmax(20.0)) + rdp(&rows[20..], &gnmax(40.0));
    assert!(close(with_head, parts, 1e-9), "{with_head} vs {parts}");
    let mut reversed = rows.clone();
    reversed.reverse();
    let wrong_rows = rdp(&rows[80..], &gnmax(20.0)) + rdp(&rows[..80], &gnmax(40.0));
    assert!(
        !close(with_head, wrong_rows, 1e-3),
        "{with_head} vs {wrong_rows}"
    );
    assert!(close(
        rdp(&reversed, &gnmax_head(40.0, 20, 20.0)),
        rdp(&reversed[..20], &gnmax(20.0)) + rdp(&reversed[20..], &gnmax(40.0)),
        1e-9
    ));
}

fn model_average(sigma: f64) -> Mechanism {
    Mechanism::ModelAverage(privacy::average::ModelAverage {
        sigma,
        clip_norm: 75.0,
    })
}

/// Model averaging is ONE release: its ε is the same for 1 and 5,000 labelled queries, and it is
/// the Gaussian mechanism's α/(2σ²) converted as every RDP value is. σ 4.1: at α = 14,
/// 14/33.62 + (11.512925 − 2.639057)/13 + ln(13/14) = 0.416419 + 0.682605 − 0.074108 = 1.024916;
/// at α = 16, 0.475907 + (11.512925 − 2.772589)/15 − 0.064539 = 0.994058 (the smaller of the two).
#[test]
fn model_average_is_one_release_whatever_the_queries() {
    let orders = Some(vec![14.0, 16.0]);
    let one = account(
        &votes(&[[250, 0]]),
        &model_average(4.1),
        &opts(1e-5, orders.clone()),
    )
    .unwrap();
    let many = account(
        &votes(&vec![[125, 125]; 5000]),
        &model_average(4.1),
        &opts(1e-5, orders),
    )
    .unwrap();
    assert!(
        (one.data_independent_epsilon - 0.994_058).abs() < 1e-5,
        "{}",
        one.data_independent_epsilon
    );
    assert_eq!(one.data_independent_epsilon, many.data_independent_epsilon);
    // Nothing data-dependent: the data-dependent value is the data-independent one.
    assert_eq!(many.data_dependent_epsilon, many.data_independent_epsilon);
    // The default grid gives at most the ε published for the lab's σ (1.0 at 4.05-4.1).
    let default = account(&votes(&[[250, 0]]), &model_average(4.1), &opts(1e-5, None)).unwrap();
    assert!(
        default.data_independent_epsilon <= 1.0,
        "{}",
        default.data_independent_epsilon
    );
    assert_eq!(default.mechanism, "model-average");
    // A ledger entry of the release composes to the same ε (one release per entry).
    let entry = privacy::ledger::LedgerEntry {
        time: "t".into(),
        by: "test".into(),
        mechanism: model_average(4.1),
        queries: 5000,
        answered: 5000,
    };
    let (composed, _) = privacy::ledger::composed_epsilon(&[entry], 1e-5).unwrap();
    assert!(
        (composed - default.data_independent_epsilon).abs() < 1e-3,
        "{composed}"
    );
}

/// The mechanism is written `{"mechanism": "model_average", "sigma", "clip_norm"}` and refuses a vote
/// file (it releases models, not votes).
#[test]
fn model_average_round_trips_and_refuses_votes() {
    let m: Mechanism =
        serde_json::from_str(r#"{"mechanism": "model_average", "sigma": 4.1, "clip_norm": 75}"#)
            .unwrap();
    assert_eq!(m, model_average(4.1));
    assert!(
        serde_json::from_str::<Mechanism>(r#"{"mechanism": "model_average", "sigma": 4.1}"#)
            .is_err()
    );
    let e = m
        .aggregate(&votes(&[[1, 2]]), &mut NoiseRng::seeded_for_experiments(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("model_average"), "{e}");
}
