//! The split by request hash: deterministic, duplicates never straddle splits, fractions roughly
//! kept; the teacher partition is disjoint, balanced and the same in every process.
use datasets::{Label, Record};
use trainer::config::SplitConfig;
use trainer::pipeline::{distinct, hash_partition, split_by_hash};

fn record(i: usize, copy: usize) -> Record {
    Record {
        method: if i % 3 == 0 {
            "POST".into()
        } else {
            "GET".into()
        },
        target: format!("/tienda1/item.jsp?id={i}").into_bytes(),
        body: (i % 3 == 0).then(|| format!("a={i}").into_bytes()),
        label: Some(if i % 5 == 0 {
            Label::Malicious
        } else {
            Label::Benign
        }),
        line: 1 + 10 * i + copy,
    }
}

#[test]
fn duplicates_never_straddle_splits_and_the_split_is_deterministic() {
    // 2,000 distinct requests, request i repeated 1 + i % 4 times, interleaved.
    let mut records = Vec::new();
    for copy in 0..4 {
        for i in 0..2000 {
            if copy <= i % 4 {
                records.push(record(i, copy));
            }
        }
    }
    let config = SplitConfig {
        private: 0.6,
        public: 0.15,
        student_validation: 0.05,
        test: 0.2,
    };
    let splits = split_by_hash(&records, &config);
    assert_eq!(splits, split_by_hash(&records, &config), "deterministic");
    let mut where_is = std::collections::HashMap::new();
    for (name, idx) in [
        ("private", &splits.private),
        ("public", &splits.public),
        ("validation", &splits.student_validation),
        ("test", &splits.test),
    ] {
        for &i in idx {
            let key = (
                records[i].method.clone(),
                records[i].target.clone(),
                records[i].body.clone(),
            );
            let previous = where_is.insert(key, name);
            assert!(
                previous.is_none() || previous == Some(name),
                "request {i} is in {name} and {previous:?}"
            );
        }
    }
    let total = records.len() as f64;
    assert_eq!(
        splits.private.len()
            + splits.public.len()
            + splits.student_validation.len()
            + splits.test.len(),
        records.len()
    );
    for (got, want) in [
        (splits.private.len(), 0.6),
        (splits.public.len(), 0.15),
        (splits.test.len(), 0.2),
    ] {
        assert!(
            (got as f64 / total - want).abs() < 0.05,
            "{got} of {total} for fraction {want}"
        );
    }
    // A body or method difference is a different request.
    let a = record(3, 0);
    let mut b = a.clone();
    b.body = Some(b"a=4".to_vec());
    assert_ne!(
        trainer::pipeline::request_hash(&a),
        trainer::pipeline::request_hash(&b)
    );
    assert_eq!(
        distinct(&records, &(0..records.len()).collect::<Vec<_>>()).len(),
        2000
    );
}

#[test]
fn teacher_partition_is_disjoint_balanced_and_process_independent() {
    let records: Vec<Record> = (0..1003).map(|i| record(i, 0)).collect();
    let private: Vec<usize> = (0..1003).filter(|i| i % 7 != 0).collect();
    let shards = hash_partition(&records, &private, 25);
    assert_eq!(shards, hash_partition(&records, &private, 25));
    let mut all: Vec<usize> = shards.iter().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..private.len()).collect::<Vec<_>>(),
        "every private row in exactly one shard"
    );
    let sizes: Vec<usize> = shards.iter().map(Vec::len).collect();
    assert!(
        sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
        "{sizes:?}"
    );
    // The same requests in another order (another process reading another copy) get the same
    // teachers.
    let reversed: Vec<usize> = private.iter().rev().copied().collect();
    let other = hash_partition(&records, &reversed, 25);
    for (a, b) in shards.iter().zip(&other) {
        let mut ra: Vec<usize> = a.iter().map(|&j| private[j]).collect();
        let mut rb: Vec<usize> = b.iter().map(|&j| reversed[j]).collect();
        ra.sort_unstable();
        rb.sort_unstable();
        assert_eq!(ra, rb);
    }
}
