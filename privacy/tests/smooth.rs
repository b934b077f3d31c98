//! Smooth sensitivity: checked against its definition by brute force on small vote matrices.
//! For every neighbour D′ (one teacher changes its vote on any subset of the queries):
//! SS(D) ≥ |f(D′) − f(D)| (an upper bound on the local sensitivity) and SS(D′) ≤ e^β·SS(D)
//! (β-smoothness), where f is the data-dependent RDP total at the order.
use privacy::accountant::{account, rdp_epsilon, AccountOptions, Mechanism};
use privacy::aggregate::{ConfidentGnmax, Gnmax, GnmaxHead, Lnmax};
use privacy::smooth::smooth_sensitivity;
use privacy::VoteMatrix;

const DELTA: f64 = 1e-5;

/// Data-dependent RDP total at one order (λ → RDP of order λ + 1 for the moments accountant).
fn f(rows: &[[u64; 2]], m: &Mechanism, order: f64) -> f64 {
    let v = VoteMatrix::from_rows(rows).unwrap();
    let r = account(
        &v,
        m,
        &AccountOptions {
            delta: DELTA,
            orders: Some(vec![order]),
            answered: None,
        },
    )
    .unwrap();
    match m {
        // ε = (α_total + ln 1/δ)/λ, RDP(λ+1) = α_total/λ.
        Mechanism::Lnmax(_) => r.data_dependent_epsilon - (1.0 / DELTA).ln() / order,
        _ => r.data_dependent_epsilon - rdp_epsilon(0.0, order, (1.0 / DELTA).ln()),
    }
}

fn neighbours(rows: &[[u64; 2]]) -> Vec<Vec<[u64; 2]>> {
    // Per query: unchanged, one vote 0→1, or one vote 1→0 (the same teacher on every query).
    let mut out = vec![rows.to_vec()];
    for (i, _) in rows.iter().enumerate() {
        let mut next = Vec::new();
        for d in &out {
            next.push(d.clone());
            if d[i][0] > 0 {
                let mut e = d.clone();
                e[i] = [d[i][0] - 1, d[i][1] + 1];
                next.push(e);
            }
            if d[i][1] > 0 {
                let mut e = d.clone();
                e[i] = [d[i][0] + 1, d[i][1] - 1];
                next.push(e);
            }
        }
        out = next;
    }
    out.remove(0);
    out
}

fn check(rows: &[[u64; 2]], m: Mechanism, order: f64, beta: f64) {
    let v = VoteMatrix::from_rows(rows).unwrap();
    let ss = smooth_sensitivity(&v, &m, None, order, beta).unwrap();
    let f0 = f(rows, &m, order);
    assert!(ss.is_finite() && ss >= 0.0);
    let mut largest = 0.0f64;
    for n in neighbours(rows) {
        let diff = (f(&n, &m, order) - f0).abs();
        largest = largest.max(diff);
        assert!(
            ss >= diff - 1e-12,
            "{m:?} {rows:?} → {n:?}: SS {ss} < |Δf| {diff}"
        );
        let ss_n =
            smooth_sensitivity(&VoteMatrix::from_rows(&n).unwrap(), &m, None, order, beta).unwrap();
        assert!(
            ss_n <= beta.exp() * ss * (1.0 + 1e-9) + 1e-15,
            "{m:?} {rows:?} → {n:?}: SS′ {ss_n} > e^β·{ss}"
        );
    }
    // The case is not vacuous: the data-dependent value does move between neighbours.
    assert!(
        largest > 1e-6,
        "{m:?} {rows:?}: f constant over the neighbours"
    );
    eprintln!("{m:?}: SS = {ss:.6}, largest |Δf| = {largest:.6}");
}

#[test]
fn gnmax_smooth_sensitivity_bounds_local_sensitivity_and_is_smooth() {
    let rows = [[10, 0], [7, 3], [9, 1]];
    check(&rows, Mechanism::Gnmax(Gnmax::new(1.5)), 5.0, 0.08);
    check(
        &[[20, 0], [0, 20]],
        Mechanism::Gnmax(Gnmax::new(2.0)),
        8.0,
        0.05,
    );
}

/// With a head the bound still dominates every neighbour's change (each query at its own σ).
#[test]
fn gnmax_with_a_head_smooth_sensitivity_bounds_local_sensitivity_and_is_smooth() {
    let m = Mechanism::Gnmax(Gnmax {
        sigma: 3.0,
        head: Some(GnmaxHead {
            queries: 1,
            sigma: 1.5,
        }),
    });
    check(&[[10, 0], [7, 3], [9, 1]], m, 5.0, 0.08);
}

/// The smooth sensitivity takes each query at its own σ: a head covering every query is plain
/// GNMax at the head's σ; a head of k is neither plain σ nor plain σ_h; and which rows form the
/// head matters (contested rows at the smaller σ move the data-dependent bound more).
#[test]
fn gnmax_head_smooth_sensitivity_takes_each_query_at_its_sigma() {
    let head = |k: usize| {
        Mechanism::Gnmax(Gnmax {
            sigma: 40.0,
            head: Some(GnmaxHead {
                queries: k,
                sigma: 20.0,
            }),
        })
    };
    let ss = |rows: &[[u64; 2]], m: &Mechanism| {
        smooth_sensitivity(&VoteMatrix::from_rows(rows).unwrap(), m, None, 8.0, 0.05).unwrap()
    };
    let mut contested_first = vec![[150u64, 100]; 5];
    contested_first.extend(vec![[230u64, 20]; 5]);
    let mut unanimous_first = contested_first.clone();
    unanimous_first.reverse();
    assert_eq!(
        ss(&contested_first, &head(10)),
        ss(&contested_first, &Mechanism::Gnmax(Gnmax::new(20.0)))
    );
    let with_head = ss(&contested_first, &head(5));
    assert_ne!(
        with_head,
        ss(&contested_first, &Mechanism::Gnmax(Gnmax::new(40.0)))
    );
    assert_ne!(
        with_head,
        ss(&contested_first, &Mechanism::Gnmax(Gnmax::new(20.0)))
    );
    assert!(
        with_head > ss(&unanimous_first, &head(5)),
        "{with_head} vs {}",
        ss(&unanimous_first, &head(5))
    );
}

#[test]
fn lnmax_smooth_sensitivity_bounds_local_sensitivity_and_is_smooth() {
    check(
        &[[10, 0], [8, 2], [5, 5]],
        Mechanism::Lnmax(Lnmax { gamma: 0.5 }),
        3.0,
        0.1,
    );
}

#[test]
fn confident_gnmax_smooth_sensitivity_bounds_local_sensitivity_and_is_smooth() {
    let m = Mechanism::ConfidentGnmax(ConfidentGnmax {
        threshold: 8.0,
        sigma1: 1.0,
        sigma2: 1.5,
        max_answered: None,
    });
    check(&[[10, 0], [7, 3], [9, 1]], m, 5.0, 0.08);
}

/// The smooth-sensitivity bound evaluates the per-query bound on a grid of ln q and is exact when
/// that bound is non-decreasing in q (condition C5 of Papernot et al. 2018, App. B). Check it
/// densely for the parameter ranges we use.
#[test]
fn per_query_bounds_are_non_decreasing_in_q() {
    use privacy::accountant::{gnmax_rdp_data_dependent, lnmax_moment_data_dependent};
    let grid: Vec<f64> = (0..=4000)
        .map(|i| -2000.0 * (1.0 - i as f64 / 4000.0))
        .collect();
    for sigma in [0.5, 1.0, 5.0, 40.0, 150.0, 212.0] {
        for alpha in [1.25, 2.0, 5.0, 20.0, 100.0, 1000.0] {
            let mut prev = 0.0;
            for &lq in &grid {
                let v = gnmax_rdp_data_dependent(lq, sigma, alpha);
                assert!(
                    v + 1e-12 >= prev,
                    "σ={sigma} α={alpha} ln q={lq}: {v} < {prev}"
                );
                prev = v;
            }
        }
    }
    for gamma in [0.01, 0.05, 0.5, 2.0] {
        for lambda in [0.5, 1.0, 2.5, 10.0, 100.0] {
            let mut prev = 0.0;
            for &lq in &grid {
                let v = lnmax_moment_data_dependent(lq, gamma, lambda);
                assert!(
                    v + 1e-12 >= prev,
                    "γ={gamma} λ={lambda} ln q={lq}: {v} < {prev}"
                );
                prev = v;
            }
        }
    }
}

/// The sanitized ε is the min of two valid bounds: however large the sanitization noise, it never
/// exceeds the data-independent RDP total at the release order plus the release's own cost.
#[test]
fn sanitized_epsilon_never_exceeds_the_data_independent_bound_at_its_order() {
    use privacy::smooth::{sanitize, SanitizeOptions};
    use privacy::NoiseRng;
    let rows: Vec<[u64; 2]> = (0..40)
        .map(|i| if i % 3 == 0 { [6, 4] } else { [10, 0] })
        .collect();
    let v = VoteMatrix::from_rows(&rows).unwrap();
    let m = Mechanism::Gnmax(Gnmax::new(2.0));
    let alpha = 4.0;
    let opts = AccountOptions {
        delta: DELTA,
        orders: Some(vec![alpha]),
        answered: None,
    };
    let base = account(&v, &m, &opts).unwrap();
    // Data-independent RDP total at α: ε_ind(α) less the conversion's offset at α.
    let ln_inv_delta = (1.0 / DELTA).ln();
    let cap = base.data_independent_epsilon - rdp_epsilon(0.0, alpha, ln_inv_delta);
    let sopts = SanitizeOptions {
        noise_multiplier: 1e4,
        beta: Some(0.05),
        order: Some(alpha),
        ..SanitizeOptions::default()
    };
    let mut at_bound = 0;
    for seed in 0..200 {
        let mut report = base.clone();
        let mut rng = NoiseRng::seeded_for_experiments(seed);
        sanitize(&v, &m, &opts, &mut report, &sopts, &mut rng).unwrap();
        let s = report.sanitized.unwrap();
        let bound = rdp_epsilon(cap + s.release_rdp_cost, alpha, ln_inv_delta);
        assert!(
            s.epsilon <= bound + 1e-9,
            "seed {seed}: sanitized ε {} above the data-independent bound {bound}",
            s.epsilon
        );
        if (s.epsilon - bound).abs() < 1e-9 {
            at_bound += 1;
        }
    }
    assert!(
        at_bound > 20,
        "only {at_bound} of 200 draws reached the data-independent cap"
    );
}

/// The data-dependent RDP total at one RDP order α (GNMax).
fn dependent_rdp(v: &VoteMatrix, m: &Mechanism, alpha: f64) -> f64 {
    let r = account(
        v,
        m,
        &AccountOptions {
            delta: DELTA,
            orders: Some(vec![alpha]),
            answered: None,
        },
    )
    .unwrap();
    r.data_dependent_epsilon - rdp_epsilon(0.0, alpha, (1.0 / DELTA).ln())
}

/// The reproduction: 400 queries, 250 teachers, GNMax σ = 40, δ = 1e-5, default σ_s.
/// The old release was clamp(f + noise, 0, cap) and published a value BELOW the data-dependent
/// bound in most draws (the labels counted as free). The published value must upper-bound the
/// data-dependent RDP total (it fails with probability p = 1e-6 per draw), with no clamp at 0.
#[test]
fn sanitized_value_upper_bounds_the_data_dependent_total_in_every_draw() {
    use privacy::smooth::{sanitize, SanitizeOptions};
    use privacy::NoiseRng;
    let rows: Vec<[u64; 2]> = (0..400)
        .map(|i| match i % 5 {
            0 => [130, 120],
            1 => [200, 50],
            _ => [245, 5],
        })
        .collect();
    let v = VoteMatrix::from_rows(&rows).unwrap();
    let m = Mechanism::Gnmax(Gnmax::new(40.0));
    let opts = AccountOptions {
        delta: DELTA,
        orders: None,
        answered: None,
    };
    let base = account(&v, &m, &opts).unwrap();
    for seed in 0..30 {
        let mut report = base.clone();
        let mut rng = NoiseRng::seeded_for_experiments(seed);
        sanitize(
            &v,
            &m,
            &opts,
            &mut report,
            &SanitizeOptions::default(),
            &mut rng,
        )
        .unwrap();
        let s = report.sanitized.unwrap();
        let alpha = s.rdp_order;
        let dependent_epsilon =
            rdp_epsilon(dependent_rdp(&v, &m, alpha), alpha, (1.0 / DELTA).ln());
        assert!(
            s.epsilon >= dependent_epsilon,
            "seed {seed}: published ε {} below the data-dependent ε {dependent_epsilon} at α = {alpha}",
            s.epsilon
        );
        assert!(s.published_delta > DELTA);
    }
}

/// The release order is fixed without looking at the votes: two vote matrices with the same
/// number of queries (and the same mechanism and δ) are released at the same order.
#[test]
fn sanitization_order_does_not_depend_on_the_votes() {
    use privacy::smooth::{sanitize, SanitizeOptions};
    use privacy::NoiseRng;
    let m = Mechanism::Gnmax(Gnmax::new(40.0));
    let opts = AccountOptions {
        delta: DELTA,
        orders: None,
        answered: None,
    };
    let order_for = |rows: Vec<[u64; 2]>| {
        let v = VoteMatrix::from_rows(&rows).unwrap();
        let mut r = account(&v, &m, &opts).unwrap();
        let mut rng = NoiseRng::seeded_for_experiments(1);
        sanitize(&v, &m, &opts, &mut r, &SanitizeOptions::default(), &mut rng).unwrap();
        r.sanitized.unwrap().rdp_order
    };
    let unanimous = order_for(vec![[250, 0]; 300]);
    let split = order_for(vec![[126, 124]; 300]);
    assert_eq!(unanimous, split);
}

/// The sanitized block is meant to be published: it carries the noisy bound and the release's
/// parameters, never the smooth sensitivity SS_β or the noise scale SS_β·σ_s, which are noiseless
/// functions of the vote margins.
#[test]
fn the_serialized_sanitized_release_carries_no_smooth_sensitivity() {
    use privacy::smooth::{sanitize, SanitizeOptions};
    use privacy::NoiseRng;
    let rows: Vec<[u64; 2]> = (0..50).map(|i| [200 - i, 50 + i]).collect();
    let v = VoteMatrix::from_rows(&rows).unwrap();
    let m = Mechanism::Gnmax(Gnmax::new(40.0));
    let opts = AccountOptions {
        delta: DELTA,
        orders: None,
        answered: None,
    };
    let mut report = account(&v, &m, &opts).unwrap();
    let mut rng = NoiseRng::seeded_for_experiments(3);
    sanitize(
        &v,
        &m,
        &opts,
        &mut report,
        &SanitizeOptions::default(),
        &mut rng,
    )
    .unwrap();
    let s = report.sanitized.as_ref().unwrap();
    assert!(s.smooth_sensitivity > 0.0);
    let json = serde_json::to_value(s).unwrap();
    for private in ["smooth_sensitivity", "noise_std"] {
        assert!(
            json.get(private).is_none(),
            "{private} is serialized: {json}"
        );
    }
    assert!(json.get("epsilon").is_some() && json.get("released_rdp_upper_bound").is_some());
}

/// The same votes give the same bits, whatever the order of the rows and however many times it
/// is computed: the sums over distinct rows add in one order (a hashed map's order differs
/// between maps, and floating-point addition is not associative).
#[test]
fn smooth_sensitivity_is_the_same_bits_in_any_row_order() {
    let mut rows: Vec<[u64; 2]> = (0..400u64)
        .map(|i| [(i * 37) % 251, 250 - (i * 37) % 251])
        .collect();
    let mechanisms = [
        Mechanism::Gnmax(Gnmax::new(40.0)),
        Mechanism::ConfidentGnmax(ConfidentGnmax {
            threshold: 200.0,
            sigma1: 150.0,
            sigma2: 40.0,
            max_answered: None,
        }),
        Mechanism::Lnmax(Lnmax { gamma: 0.05 }),
    ];
    for m in &mechanisms {
        let ss = |rows: &[[u64; 2]]| {
            smooth_sensitivity(&VoteMatrix::from_rows(rows).unwrap(), m, None, 8.0, 0.05)
                .unwrap()
                .to_bits()
        };
        let first = ss(&rows);
        for _ in 0..5 {
            assert_eq!(ss(&rows), first, "{m:?}");
        }
        rows.reverse();
        assert_eq!(ss(&rows), first, "{m:?}");
        rows.rotate_left(123);
        assert_eq!(ss(&rows), first, "{m:?}");
    }
}
