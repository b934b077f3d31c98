//! The simulated split (record by record) and the roles; the teacher partition is disjoint, roughly balanced, the same in every process, and
//! neighbouring data sets (one record more or less) differ in exactly one teacher's data.
use datasets::{Label, Record};
use trainer::config::SplitConfig;
use trainer::stages::split::{
    distinct, distinct_labelled, multiplicities_labelled, split_by_record,
};
use trainer::teachers::hash_partition;

fn record(i: usize, copy: usize) -> Record {
    Record {
        method: if i.is_multiple_of(3) {
            "POST".into()
        } else {
            "GET".into()
        },
        target: format!("/tienda1/item.jsp?id={i}").into_bytes(),
        body: i.is_multiple_of(3).then(|| format!("a={i}").into_bytes()),
        headers: Vec::new(),
        label: Some(if i.is_multiple_of(5) {
            Label::Malicious
        } else {
            Label::Benign
        }),
        line: 1 + 10 * i + copy,
        client: None,
    }
}

/// The simulation splits record by record: every record in exactly one split, deterministic,
/// fractions kept, and a recurring request spread over the splits (so the public pool and the
/// test split share recurring requests, as real traffic does); removing one record moves no other.
#[test]
fn simulated_split_is_by_record_deterministic_and_spreads_recurring_requests() {
    // 2,000 distinct requests, request i repeated 1 + i % 4 times, plus one request 400 times.
    let mut records = Vec::new();
    for copy in 0..4 {
        for i in 0..2000 {
            if copy <= i % 4 {
                records.push(record(i, copy));
            }
        }
    }
    for copy in 0..400 {
        records.push(record(5000, copy));
    }
    let config = SplitConfig {
        private: 0.6,
        public: 0.15,
        validation: 0.05,
        test: 0.2,
    };
    let splits = split_by_record(&records, &config);
    assert_eq!(splits, split_by_record(&records, &config), "deterministic");
    let mut all: Vec<usize> = [
        &splits.private,
        &splits.public,
        &splits.student_validation,
        &splits.test,
    ]
    .into_iter()
    .flatten()
    .copied()
    .collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..records.len()).collect::<Vec<_>>(),
        "each record once"
    );
    let total = records.len() as f64;
    for (got, want) in [
        (splits.private.len(), 0.6),
        (splits.public.len(), 0.15),
        (splits.test.len(), 0.2),
    ] {
        assert!(
            (got as f64 / total - want).abs() < 0.03,
            "{got} of {total} for fraction {want}"
        );
    }
    // The 400-times request is in every split, roughly in proportion.
    let target = record(5000, 0).target;
    let copies_in = |rows: &[usize]| {
        rows.iter()
            .filter(|&&i| records[i].target == target)
            .count()
    };
    let (p, q, v, t) = (
        copies_in(&splits.private),
        copies_in(&splits.public),
        copies_in(&splits.student_validation),
        copies_in(&splits.test),
    );
    assert!(p > 180 && q > 30 && v > 5 && t > 50, "{p} {q} {v} {t}");
    // Removing one record (any copy) leaves every other record where it was, up to which of
    // identical copies is which.
    let content = |recs: &[Record], rows: &[usize]| {
        let mut c: Vec<([u8; 32], Option<Label>)> = rows
            .iter()
            .map(|&i| {
                (
                    trainer::stages::split::request_hash(&recs[i]),
                    recs[i].label,
                )
            })
            .collect();
        c.sort_unstable();
        c
    };
    for removed in [0, 17, records.len() - 200] {
        let mut fewer = records.clone();
        fewer.remove(removed);
        let other = split_by_record(&fewer, &config);
        let moved = [
            (&splits.private, &other.private),
            (&splits.public, &other.public),
            (&splits.student_validation, &other.student_validation),
            (&splits.test, &other.test),
        ]
        .iter()
        .map(|(a, b)| {
            let (a, b) = (content(&records, a), content(&fewer, b));
            a.len().abs_diff(b.len()) + usize::from(a.len() == b.len() && a != b)
        })
        .sum::<usize>();
        assert_eq!(moved, 1, "removing record {removed}");
    }
    // A body or method difference is a different request.
    let a = record(3, 0);
    let mut b = a.clone();
    b.body = Some(b"a=4".to_vec());
    assert_ne!(
        trainer::stages::split::request_hash(&a),
        trainer::stages::split::request_hash(&b)
    );
    assert_eq!(
        distinct(&records, &(0..records.len()).collect::<Vec<_>>()).len(),
        2001
    );
}

fn write_csic(dir: &std::path::Path, name: &str, targets: &[&str]) -> std::path::PathBuf {
    let mut text = String::new();
    for t in targets {
        text.push_str(&format!(
            "GET http://localhost:8080{t} HTTP/1.1\nHost: localhost:8080\n\n"
        ));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Roles: the files play the roles they are listed under; public data may be unlabelled; the
/// same file under two roles (private and public, validation and test) is an error naming both
/// files and a line.
#[test]
fn roles_load_as_listed_and_a_private_record_cannot_be_public() {
    let tmp = tempfile::tempdir().unwrap();
    let private = write_csic(tmp.path(), "private.txt", &["/a?x=1", "/b?y=2"]);
    let public = write_csic(tmp.path(), "public.txt", &["/c", "/d", "/e"]);
    let validation = write_csic(tmp.path(), "validation.txt", &["/f"]);
    let test = write_csic(tmp.path(), "test.txt", &["/g", "/h"]);
    let copy = tmp.path().join("private-copy.txt");
    std::fs::copy(&private, &copy).unwrap();
    let yaml = |public_file: &std::path::Path| {
        format!(
            "private: [{{path: {}, format: csic, label: malicious}}]\n\
             public: [{{path: {}, format: csic}}]\n\
             validation: [{{path: {}, format: csic, label: benign}}]\n\
             test: [{{path: {}, format: csic, label: benign}}]\n",
            private.display(),
            public_file.display(),
            validation.display(),
            test.display()
        )
    };
    let config = trainer::config::RunConfig::parse(&yaml(&public)).unwrap();
    let data = trainer::stages::split::load_run_data(&config).unwrap();
    assert!(!data.simulation);
    let s = &data.splits;
    assert_eq!(
        (
            s.private.len(),
            s.public.len(),
            s.student_validation.len(),
            s.test.len()
        ),
        (2, 3, 1, 2)
    );
    assert!(
        s.public.iter().all(|&i| data.records[i].label.is_none()),
        "public unlabelled"
    );
    assert!(s.private.iter().all(|&i| data.files[i] == private));
    for both in [&private, &copy] {
        let config = trainer::config::RunConfig::parse(&yaml(both)).unwrap();
        let e = trainer::stages::split::load_run_data(&config)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("private.txt:1")
                && e.contains(&format!("{}:1", both.display()))
                && e.contains("under private: and public:"),
            "{e}"
        );
    }
    // Any two roles, not only private and public: the validation file again as the test file.
    let config = trainer::config::RunConfig::parse(&yaml(&public).replace(
        &test.display().to_string(),
        &validation.display().to_string(),
    ))
    .unwrap();
    let e = trainer::stages::split::load_run_data(&config)
        .unwrap_err()
        .to_string();
    assert!(e.contains("under validation: and test:"), "{e}");
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
    // Sizes are multinomial (mean 34.4 here, standard deviation ≈ 5.8): no shard empty or far off.
    let sizes: Vec<usize> = shards.iter().map(Vec::len).collect();
    assert!(sizes.iter().all(|&n| (12..=60).contains(&n)), "{sizes:?}");
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

/// Each teacher's data as a sorted list of (request hash, label) records: what it trains on.
/// Everything a teacher sees of a record: the request, its headers and its label — compared
/// independently of the key the partition hashes, so that a key that leaves something out shows.
type Content = ([u8; 32], Vec<(String, Vec<u8>)>, Option<Label>);

fn content(r: &Record) -> Content {
    (
        trainer::stages::split::request_hash(r),
        r.headers.clone(),
        r.label,
    )
}

fn teacher_contents(records: &[Record], private: &[usize], count: usize) -> Vec<Vec<Content>> {
    hash_partition(records, private, count)
        .into_iter()
        .map(|shard| {
            let mut c: Vec<Content> = shard
                .into_iter()
                .map(|j| content(&records[private[j]]))
                .collect();
            c.sort_unstable();
            c
        })
        .collect()
}

/// 300 distinct requests, request i repeated 1 + i % 7 times, interleaved.
fn repeated_records() -> Vec<Record> {
    let mut records = Vec::new();
    for copy in 0..7 {
        for i in 0..300 {
            if copy <= i % 7 {
                records.push(record(i, copy));
            }
        }
    }
    records
}

/// PATE's privacy argument needs a record added or removed to change one teacher's data only
/// (Papernot et al. 2017, §3.1). Check it for every record of a private set with heavy repeats,
/// removed in turn, and for a new record added at the front.
#[test]
fn neighbouring_private_sets_differ_in_exactly_one_teacher() {
    let records = repeated_records();
    let private: Vec<usize> = (0..records.len()).collect();
    let count = 20;
    let base = teacher_contents(&records, &private, count);
    // Copies of a request spread over teachers (the last request is repeated 7 times).
    let spread = base
        .iter()
        .filter(|c| {
            let last = &records[records.len() - 1];
            c.contains(&content(last))
        })
        .count();
    assert!(spread >= 2, "7 copies on {spread} teacher(s)");
    for removed in (0..records.len()).step_by(7) {
        let without: Vec<usize> = private.iter().copied().filter(|&i| i != removed).collect();
        let other = teacher_contents(&records, &without, count);
        let changed: Vec<usize> = (0..count).filter(|&t| base[t] != other[t]).collect();
        assert_eq!(
            changed.len(),
            1,
            "removing record {removed} changed teachers {changed:?}"
        );
        let t = changed[0];
        assert_eq!(base[t].len(), other[t].len() + 1);
    }
    let mut added = records.clone();
    added.push(record(5000, 0));
    let with: Vec<usize> = std::iter::once(added.len() - 1)
        .chain(private.iter().copied())
        .collect();
    let other = teacher_contents(&added, &with, count);
    let changed = (0..count).filter(|&t| base[t] != other[t]).count();
    assert_eq!(changed, 1, "adding one record changed {changed} teachers");
}

/// The other teachers keep not only their records but their ORDER: removing a copy of a
/// repeated request that is not its last renumbers the later copies (each still on a teacher
/// with the same multiset), and a teacher given the same rows in another order computes other
/// floating-point sums — a second teacher changed, in its last bits. Each shard comes in the
/// order of its records' keys, so the rows in training order are the same.
#[test]
fn neighbouring_private_sets_leave_the_other_teachers_rows_in_the_same_order() {
    let records = repeated_records();
    let private: Vec<usize> = (0..records.len()).collect();
    let count = 20;
    let sequences = |rows: &[usize]| -> Vec<Vec<Content>> {
        hash_partition(&records, rows, count)
            .into_iter()
            .map(|shard| {
                shard
                    .into_iter()
                    .map(|j| content(&records[rows[j]]))
                    .collect()
            })
            .collect()
    };
    let base = sequences(&private);
    // The first copy of each 7-times repeated request (i % 7 == 6): its removal renumbers six.
    for removed in (0..300).filter(|i| i % 7 == 6).take(10) {
        let without: Vec<usize> = private.iter().copied().filter(|&i| i != removed).collect();
        let other = sequences(&without);
        let changed = (0..count).filter(|&t| base[t] != other[t]).count();
        assert_eq!(
            changed, 1,
            "removing record {removed} reordered {changed} teachers"
        );
    }
}

/// Copies of ONE request with different labels (per-file `label:` settings make this easy) are
/// different records: removing any one of them, or adding one more under either label, must
/// still change exactly one teacher's (request, label) data. Keyed by the request alone, the
/// removal renumbered the other label's copies and moved 4–5 teachers (issue 13, point 3).
#[test]
fn conflicting_labels_of_one_request_still_move_one_teacher() {
    let mut records = Vec::new();
    // 40 copies of one request, labelled benign and malicious alternately, among 200 others.
    for copy in 0..40 {
        let mut r = record(7, copy);
        r.label = Some(if copy % 2 == 0 {
            Label::Benign
        } else {
            Label::Malicious
        });
        records.push(r);
        for i in 0..5 {
            records.push(record(1000 + 5 * copy + i, 0));
        }
    }
    let private: Vec<usize> = (0..records.len()).collect();
    let count = 20;
    let base = teacher_contents(&records, &private, count);
    for removed in 0..records.len() {
        let without: Vec<usize> = private.iter().copied().filter(|&i| i != removed).collect();
        let other = teacher_contents(&records, &without, count);
        let changed: Vec<usize> = (0..count).filter(|&t| base[t] != other[t]).collect();
        assert_eq!(
            changed.len(),
            1,
            "removing record {removed} ({:?}) changed teachers {changed:?}",
            records[removed].label
        );
    }
    for label in [Label::Benign, Label::Malicious] {
        let mut added = records.clone();
        let mut r = record(7, 99);
        r.label = Some(label);
        added.insert(0, r);
        let all: Vec<usize> = (0..added.len()).collect();
        let other = teacher_contents(&added, &all, count);
        let changed = (0..count).filter(|&t| base[t] != other[t]).count();
        assert_eq!(
            changed, 1,
            "adding a {label:?} copy changed {changed} teachers"
        );
    }
    // The weighted rows keep the same property: `cap:3` keeps 3 copies per (request, label).
    let kept = trainer::teachers::teacher_rows(
        &records,
        &private,
        trainer::config::TeacherMultiplicity::Cap(3),
    );
    let copies_of_7 = kept
        .iter()
        .filter(|&&i| records[i].target == record(7, 0).target)
        .count();
    assert_eq!(copies_of_7, 6, "3 benign + 3 malicious copies");
}

/// Copies of one request that differ only in a header (CSIC's per-session `Cookie`) are different
/// records to a featurizer that reads headers: removing or adding any one of them still changes
/// exactly one teacher's data (they were numbered as copies of one key, so removing the first
/// moved the others to other teachers).
#[test]
fn copies_differing_only_in_a_header_still_move_one_teacher() {
    let mut records = Vec::new();
    for copy in 0..30 {
        let mut r = record(8, copy);
        r.headers = vec![(
            "Cookie".into(),
            format!("JSESSIONID={:032X}", copy % 7).into_bytes(),
        )];
        records.push(r);
        for i in 0..4 {
            records.push(record(2000 + 4 * copy + i, 0));
        }
    }
    let private: Vec<usize> = (0..records.len()).collect();
    let count = 20;
    let base = teacher_contents(&records, &private, count);
    for removed in 0..records.len() {
        let without: Vec<usize> = private.iter().copied().filter(|&i| i != removed).collect();
        let other = teacher_contents(&records, &without, count);
        let changed: Vec<usize> = (0..count).filter(|&t| base[t] != other[t]).collect();
        assert_eq!(
            changed.len(),
            1,
            "removing record {removed} changed teachers {changed:?}"
        );
    }
    let mut added = records.clone();
    let mut r = record(8, 99);
    r.headers = vec![("Cookie".into(), b"JSESSIONID=NEW".to_vec())];
    added.insert(0, r);
    let all: Vec<usize> = (0..added.len()).collect();
    let other = teacher_contents(&added, &all, count);
    assert_eq!((0..count).filter(|&t| base[t] != other[t]).count(), 1);
}

/// `student.validation_labels` in deployment (roles): the public traffic is unlabelled and every
/// copy carries its own session cookie, while the validation file labels the same requests. A
/// drawn request the validation samples hold — same method, target and body — is known, not
/// asked, whatever its headers and its (absent) label; a request they do not hold is asked.
/// (Matched by the whole record, label and cookie included, nothing was ever known.)
#[test]
fn validation_labels_know_a_drawn_request_by_its_request_not_its_cookie_or_label() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_csic(tmp.path(), "x.txt", &["/x"]);
    let config = trainer::config::RunConfig::parse(&format!(
        "private: [{{path: {f}, format: csic, label: malicious}}]\n\
         public: [{{path: {f}, format: csic}}]\n\
         validation: [{{path: {f}, format: csic, label: benign}}]\n\
         test: [{{path: {f}, format: csic, label: benign}}]\n\
         student: {{queries: 3, validation_labels: true, query_selection: distinct}}\n",
        f = file.display()
    ))
    .unwrap();
    let with_cookie = |target: &str, cookie: usize, label: Option<Label>| Record {
        method: "GET".into(),
        target: target.as_bytes().to_vec(),
        body: None,
        headers: vec![(
            "Cookie".into(),
            format!("JSESSIONID={cookie:032X}").into_bytes(),
        )],
        label,
        line: 1 + cookie,
        client: None,
    };
    // Public: four distinct requests, /shop/home three times with three cookies; validation:
    // /shop/home (malicious, as the site's owner labelled it) and /about, with other cookies.
    let mut records = vec![
        with_cookie("/shop/home", 1, None),
        with_cookie("/shop/home", 2, None),
        with_cookie("/shop/item?id=1", 3, None),
        with_cookie("/shop/home", 4, None),
        with_cookie("/shop/item?id=2", 5, None),
        with_cookie("/shop/cart", 6, None),
        with_cookie("/about", 7, Some(Label::Benign)),
        with_cookie("/shop/home", 8, Some(Label::Malicious)),
    ];
    records.push(with_cookie("/private", 9, Some(Label::Benign)));
    let data = trainer::stages::split::RunData {
        files: vec![file.clone(); records.len()],
        records,
        splits: trainer::stages::split::Splits {
            private: vec![8],
            public: (0..6).collect(),
            student_validation: vec![6, 7],
            test: Vec::new(),
        },
        simulation: false,
        held_out_attacks: Vec::new(),
    };
    let mut known_in_some_draw = false;
    for seed in 0..20 {
        let rng = trainer::rng::RunRng::new(Some(seed)).unwrap();
        let plan = trainer::stages::split::plan(&config, &data, &rng).unwrap();
        let target = |i: usize| String::from_utf8_lossy(&data.records[i].target).into_owned();
        let asked: Vec<String> = plan.query_rows.iter().map(|&i| target(i)).collect();
        assert_eq!(asked.len(), 3, "seed {seed}: {asked:?}");
        assert!(
            !asked.contains(&"/shop/home".to_string()),
            "seed {seed}: the validation split labels /shop/home, yet it was asked: {asked:?}"
        );
        // Known only when the draw reached /shop/home before its last query; the pair is its
        // public copy (one of records 0, 1, 3) and the validation sample that labels it (7).
        for &position in &plan.validation_known {
            assert_eq!(target(plan.validation_rows[position]), "/shop/home");
        }
        let pairs: Vec<(usize, usize)> = plan.validation_known_pairs().collect();
        assert_eq!(pairs.len(), plan.validation_known.len());
        for (public, validation) in pairs {
            assert!(
                [0, 1, 3].contains(&public),
                "seed {seed}: public copy {public}"
            );
            assert_eq!(validation, 7);
        }
        let home_drawn_before_last = plan.query_order[..3 + plan.validation_known.len()]
            .iter()
            .any(|&i| target(plan.distinct_public[i]) == "/shop/home");
        assert_eq!(
            plan.validation_known.len(),
            usize::from(home_drawn_before_last)
        );
        known_in_some_draw |= home_drawn_before_last;
        assert!(plan
            .pool_rows
            .iter()
            .all(|&i| target(i) != "/shop/home" || !home_drawn_before_last));
    }
    assert!(
        known_in_some_draw,
        "20 draws never reached /shop/home early"
    );
}

/// `limit:` on private data (a private role or the simulation's pool) is refused unless the run
/// is a seeded experiment: keeping a file's first N records makes one removed record a replaced
/// one (line N + 1 comes in).
#[test]
fn limit_on_private_data_is_refused_for_a_private_run() {
    let yaml = |seed: &str, limit: &str| {
        format!(
            "seed: {seed}\nprivate: [{{path: p.txt, format: csic, label: malicious{limit}}}]\n\
             public: [{{path: q.txt, format: csic}}]\n\
             validation: [{{path: v.txt, format: csic, label: benign}}]\n\
             test: [{{path: t.txt, format: csic, label: benign}}]\n"
        )
    };
    let e = trainer::config::RunConfig::parse(&yaml("null", ", limit: 100"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("private") && e.contains("limit"), "{e}");
    assert!(trainer::config::RunConfig::parse(&yaml("7", ", limit: 100")).is_ok());
    assert!(trainer::config::RunConfig::parse(&yaml("null", "")).is_ok());
    let simulation = "seed: null\nsplit:\n  simulate_from: [{path: p.txt, format: csic, \
                      label: benign, limit: 10}]\n  private: 0.5\n  public: 0.2\n  \
                      validation: 0.1\n  test: 0.2\n";
    let e = trainer::config::RunConfig::parse(simulation)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("split.simulate_from") && e.contains("limit"),
        "{e}"
    );
}

/// An attack placed into a header or cookie of a site request keeps the request's line: the
/// validation rows keep it apart from its benign template (not one more copy of the template in
/// the threshold's traffic), and two attacks placed into the same template stay two rows.
#[test]
fn an_attack_placed_into_a_header_is_its_own_validation_row() {
    use rand::SeedableRng;
    use trainer::public_examples::{place, Spot};
    let template = Record::get("/feed?flav=rss", Some(Label::Benign));
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut records = vec![template.clone(), template.clone()];
    for (value, spot) in [
        (&b"' OR 1=1--"[..], Spot::UserAgent),
        (b"<script>", Spot::Cookie),
    ] {
        let attack = place(&template, value, spot, false, Label::Malicious, &mut rng);
        assert_eq!(
            attack.target, template.target,
            "{spot:?} keeps the request line"
        );
        records.push(attack);
    }
    let rows: Vec<usize> = (0..records.len()).collect();
    assert_eq!(
        distinct(&records, &rows),
        [0],
        "by request alone all four are one"
    );
    assert_eq!(distinct_labelled(&records, &rows), [0, 2, 3]);
    assert_eq!(multiplicities_labelled(&records, &rows), [2, 1, 1]);
}
