//! Aggregation and accounting of 1 000 queries × 250 teachers (binary task).
// criterion_group! defines an undocumented `pub fn` (workspace lint missing_docs).
#![allow(missing_docs)]
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use privacy::accountant::{account, AccountOptions, Mechanism};
use privacy::aggregate::{Aggregator, ConfidentGnmax, Gnmax, Lnmax};
use privacy::smooth::{sanitize, SanitizeOptions};
use privacy::{NoiseRng, VoteMatrix};

fn votes() -> VoteMatrix {
    let mut rng = NoiseRng::seeded_for_experiments(1);
    let rows: Vec<[u64; 2]> = (0..1000)
        .map(|_| {
            let m = 125 + rng.uniform_below(126) as u64;
            [m, 250 - m]
        })
        .collect();
    VoteMatrix::from_rows(&rows).unwrap()
}

fn bench(c: &mut Criterion) {
    let v = votes();
    let mut rng = NoiseRng::seeded_for_experiments(2);
    let mut g = c.benchmark_group("1000 queries x 250 teachers");
    g.sample_size(10);
    g.bench_function("aggregate lnmax", |b| {
        b.iter(|| {
            Lnmax { gamma: 0.05 }
                .aggregate(black_box(&v), &mut rng)
                .unwrap()
        })
    });
    g.bench_function("aggregate gnmax", |b| {
        b.iter(|| Gnmax::new(40.0).aggregate(black_box(&v), &mut rng).unwrap())
    });
    g.bench_function("aggregate confident-gnmax", |b| {
        b.iter(|| {
            ConfidentGnmax {
                threshold: 200.0,
                sigma1: 150.0,
                sigma2: 40.0,
                max_answered: None,
            }
            .aggregate(black_box(&v), &mut rng)
            .unwrap()
        })
    });
    let o = AccountOptions {
        delta: 1e-5,
        orders: None,
        answered: None,
    };
    for (name, m) in [
        ("account lnmax", Mechanism::Lnmax(Lnmax { gamma: 0.05 })),
        ("account gnmax", Mechanism::Gnmax(Gnmax::new(40.0))),
        (
            "account confident-gnmax",
            Mechanism::ConfidentGnmax(ConfidentGnmax {
                threshold: 200.0,
                sigma1: 150.0,
                sigma2: 40.0,
                max_answered: None,
            }),
        ),
    ] {
        g.bench_function(name, |b| b.iter(|| account(black_box(&v), &m, &o).unwrap()));
    }
    let m = Mechanism::Gnmax(Gnmax::new(40.0));
    let report = account(&v, &m, &o).unwrap();
    g.bench_function("sanitize gnmax", |b| {
        b.iter(|| {
            let mut r = report.clone();
            sanitize(&v, &m, &o, &mut r, &SanitizeOptions::default(), &mut rng).unwrap();
            r
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
