//! The protected site's validation and test data, derived from its unlabelled traffic
//! (`site:`): a share of the traffic, chosen by a hash of each record, is held out and taken as
//! benign, and public attack values placed into copies of those requests are its attacks.
//! Public data only: nothing here reads a private record.
use datasets::{Label, Record};
use rand::{Rng, RngExt};
use sha2::{Digest, Sha256};

use crate::public_examples::{place, PLACEMENTS};

/// A number in [0, 1) for the `copy`-th record with content `key`, from the first 8 bytes of
/// sha256(`salt` ‖ key ‖ copy): a record's fate depends on nothing but itself.
pub fn unit(salt: &[u8], key: &[u8; 32], copy: u64) -> f64 {
    let digest = Sha256::new()
        .chain_update(salt)
        .chain_update(key)
        .chain_update(copy.to_le_bytes())
        .finalize();
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes")) as f64 / 2f64.powi(64)
}

/// How a record is keyed for its hash (the split's `record_key`: its whole content).
pub type RecordKey = fn(&Record) -> [u8; 32];

/// The salted [`unit`] of each of `rows`, the copies of a record numbered in order.
fn units(records: &[Record], key: RecordKey, rows: &[usize], salt: &[u8]) -> Vec<f64> {
    let mut copies: std::collections::HashMap<[u8; 32], u64> = std::collections::HashMap::new();
    rows.iter()
        .map(|&i| {
            let key = key(&records[i]);
            let k = copies.entry(key).or_insert(0);
            *k += 1;
            unit(salt, &key, *k - 1)
        })
        .collect()
}

/// Keeps as many of the malicious records of `rows` (simulated traffic) as make `share` of the
/// kept rows, each by its own hash; returns how many attacks were dropped.
pub fn thin_attacks(
    records: &[Record],
    key: RecordKey,
    rows: &mut Vec<usize>,
    share: f64,
) -> usize {
    let malicious = |i: usize| records[i].label == Some(Label::Malicious);
    let attacks = rows.iter().filter(|&&i| malicious(i)).count();
    let others = rows.len() - attacks;
    if attacks == 0 {
        return 0;
    }
    // Expected kept attacks a·p with a·p / (others + a·p) = share.
    let keep = (share * others as f64 / (1.0 - share) / attacks as f64).min(1.0);
    let u = units(records, key, rows, b"site-attack-share\0");
    let before = rows.len();
    let mut k = 0;
    rows.retain(|&i| {
        let kept = !malicious(i) || u[k] < keep;
        k += 1;
        kept
    });
    before - rows.len()
}

/// The site's traffic dealt into the public pool and the held-out validation and test traffic.
#[derive(Debug, Default)]
pub struct Dealt {
    /// What stays public (the featurizer corpus, the query pool).
    pub public: Vec<usize>,
    /// The held-out validation traffic.
    pub validation: Vec<usize>,
    /// The held-out test traffic (empty for a 0 share).
    pub test: Vec<usize>,
}

/// Deals `rows` by each record's own hash: `validation` of them to the validation traffic,
/// `test` to the test traffic, the rest public.
pub fn deal(
    records: &[Record],
    key: RecordKey,
    rows: &[usize],
    validation: f64,
    test: f64,
) -> Dealt {
    let u = units(records, key, rows, b"site\0");
    deal_by(rows, &u, validation, test)
}

/// Deals `rows` (in log order) by position: the last `test` of them to the test traffic, the
/// `validation` before them to the validation traffic, the first ones public — tomorrow's
/// traffic, with the pages a site adds, as the threshold will meet it.
pub fn deal_last(rows: &[usize], validation: f64, test: f64) -> Dealt {
    let n = rows.len();
    let tests = (n as f64 * test).round() as usize;
    let validations = ((n as f64 * validation).round() as usize).min(n - tests);
    let public_end = n - tests - validations;
    Dealt {
        public: rows[..public_end].to_vec(),
        validation: rows[public_end..n - tests].to_vec(),
        test: rows[n - tests..].to_vec(),
    }
}

fn deal_by(rows: &[usize], u: &[f64], validation: f64, test: f64) -> Dealt {
    let mut dealt = Dealt::default();
    for (&i, &u) in rows.iter().zip(u) {
        if u < validation {
            dealt.validation.push(i);
        } else if u < validation + test {
            dealt.test.push(i);
        } else {
            dealt.public.push(i);
        }
    }
    dealt
}

/// `count` copies of requests drawn from `templates`, each with an attack value drawn from
/// `values` placed at a spot drawn from every placement the featurizer reads (one in five
/// encoded), labelled malicious. Empty when either list is.
pub fn placed_attacks(
    templates: &[&Record],
    values: &[Vec<u8>],
    count: usize,
    rng: &mut impl Rng,
) -> Vec<Record> {
    if templates.is_empty() || values.is_empty() {
        return Vec::new();
    }
    (0..count)
        .map(|_| {
            let spot = PLACEMENTS[rng.random_range(0..PLACEMENTS.len())];
            let encode = rng.random_range(0..5) == 0;
            let value = &values[rng.random_range(0..values.len())];
            let template = templates[rng.random_range(0..templates.len())];
            place(template, value, spot, encode, Label::Malicious, rng)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(r: &Record) -> [u8; 32] {
        Sha256::new()
            .chain_update(&r.target)
            .chain_update([r.label == Some(Label::Malicious)].map(u8::from))
            .finalize()
            .into()
    }

    fn record(target: &str, label: Option<Label>) -> Record {
        Record::get(target, label)
    }

    #[test]
    fn thinning_keeps_the_benign_records_and_about_the_asked_share_of_attacks() {
        let mut records: Vec<Record> = (0..9000)
            .map(|k| record(&format!("/p{k}"), Some(Label::Benign)))
            .collect();
        records.extend((0..1000).map(|k| record(&format!("/a{k}"), Some(Label::Malicious))));
        let mut rows: Vec<usize> = (0..records.len()).collect();
        let dropped = thin_attacks(&records, key, &mut rows, 0.02);
        let attacks = rows.iter().filter(|&&i| i >= 9000).count();
        assert_eq!(rows.len() - attacks, 9000, "every benign record stays");
        assert_eq!(dropped, 1000 - attacks);
        let share = attacks as f64 / rows.len() as f64;
        assert!((0.012..0.028).contains(&share), "attack share {share}");
    }

    #[test]
    fn dealing_depends_on_each_record_alone() {
        let records: Vec<Record> = (0..2000)
            .map(|k| record(&format!("/p{}", k % 700), None))
            .collect();
        let rows: Vec<usize> = (0..records.len()).collect();
        let all = deal(&records, key, &rows, 0.2, 0.1);
        assert_eq!(
            all.public.len() + all.validation.len() + all.test.len(),
            2000
        );
        assert!((300..500).contains(&all.validation.len()));
        assert!((120..280).contains(&all.test.len()));
        // The last record removed: every other record keeps its place.
        let last = deal_last(&rows, 0.2, 0.1);
        assert_eq!(last.public, (0..1400).collect::<Vec<_>>());
        assert_eq!(last.validation, (1400..1800).collect::<Vec<_>>());
        assert_eq!(last.test, (1800..2000).collect::<Vec<_>>());
        let fewer = deal(&records, key, &rows[..1999], 0.2, 0.1);
        let without = |v: &[usize]| v.iter().copied().filter(|&i| i != 1999).collect::<Vec<_>>();
        assert_eq!(fewer.validation, without(&all.validation));
        assert_eq!(fewer.test, without(&all.test));
    }
}
