//! The model of single parts (`student.public_examples.part_model`): a second model (linear,
//! or a small network: `part_model.training`) that scores each part of a request alone
//! ([`featurizer::Featurizer::transform_parts`]) where content alone is scored, each part's
//! score shifted by its placement's offset where `placement_offsets` chose them
//! (`stages::student::search_offsets`). Its training examples are public data only: the public files'
//! benign and attack values placed into the site's requests the teachers labelled benign, in
//! every spot ([`crate::public_examples::place`]); the parts the value makes are labelled by
//! the value, every other part of those requests benign.
use std::collections::HashMap;

use datasets::{Label, Record};
use featurizer::{Featurizer, SparseVector};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::PartModelConfig;
use crate::public_examples::{dress_as_browser, place, Spot, PLACEMENTS};

/// Whether a public value is in the tenth held out of the part model's training for the
/// content-only validation examples: its FNV-1a (64-bit) hash is 0 modulo 10. A rule of the
/// value alone, so that the bench (`bench/placements/replay.py --held-out-tenth`) can replay
/// the same tenth of the public file as validation.
pub fn held_out(value: &[u8]) -> bool {
    let hash = value.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % 10 == 0
}

/// Labelled parts to train the part model on.
#[derive(Debug, Default)]
pub struct PartExamples {
    /// One vector per part.
    pub parts: Vec<SparseVector>,
    /// Whether each part is malicious.
    pub malicious: Vec<bool>,
    /// How many times each part counts in training (a distinct benign part of the requests
    /// around the values once per occurrence, at most `copies_cap`; every other part 1).
    pub weights: Vec<f32>,
}

/// A feature vector as a hashable key (indices and the bits of the values).
fn key(v: &SparseVector) -> Vec<(u32, u32)> {
    v.indices
        .iter()
        .zip(&v.values)
        .map(|(&i, &x)| (i, x.to_bits()))
        .collect()
}

fn parts_of(featurizer: &Featurizer, record: &Record) -> Vec<SparseVector> {
    let mut out = Vec::new();
    featurizer.transform_parts(&record.parts(), &mut out);
    out
}

/// The parts of `template` with `value` placed at `spot` that the value makes, and the others:
/// the same template, spot and choices (the same random draws) with a one-letter value instead
/// tell them apart — what differs is the value's (the pair, the JSON string, the header ...),
/// what is the same is the request around it (its other pairs, its headers, the body's keys).
fn value_parts(
    featurizer: &Featurizer,
    template: &Record,
    value: &[u8],
    spot: Spot,
    encode: bool,
    seed: u64,
) -> (Vec<SparseVector>, Vec<SparseVector>) {
    let mut draws = ChaCha8Rng::seed_from_u64(seed);
    let mut same_draws = draws.clone();
    let placed = place(template, value, spot, encode, Label::Benign, &mut draws);
    let sentinel = place(template, b"x", spot, encode, Label::Benign, &mut same_draws);
    let mut around: HashMap<Vec<(u32, u32)>, usize> = HashMap::new();
    for v in parts_of(featurizer, &sentinel) {
        *around.entry(key(&v)).or_default() += 1;
    }
    let (mut mine, mut rest) = (Vec::new(), Vec::new());
    for v in parts_of(featurizer, &placed) {
        match around.get_mut(&key(&v)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                rest.push(v);
            }
            _ => mine.push(v),
        }
    }
    (mine, rest)
}

/// How [`examples`] dresses its templates beside stripping some to a bare client's headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dressing<'a> {
    /// Real browsers' User-Agents: a quarter of the templates dressed as one of them.
    pub user_agents: &'a [String],
    /// The share (in [0, 1]) of the templates given a load balancer's `X-Forwarded-For` and
    /// `X-Forwarded-Proto` (`student.forwarding_headers`): benign parts, so that an address or
    /// `https` there is not read as an attack's (public attack values carry addresses and URLs).
    pub forwarding_headers: f64,
    /// The share (in [0, 1]) of the templates given a `Referer` naming one of the templates'
    /// own pages (`student.site_referers`, [`crate::public_examples::add_site_referer`]).
    pub site_referers: f64,
}

/// Benign parts, each distinct one a row of its own whose weight counts its occurrences, at
/// most `cap` (as many copies, without the copies: a dense row of the featurizer's width each).
struct CappedBenign {
    row_of: HashMap<Vec<(u32, u32)>, usize>,
    cap: f32,
}

impl CappedBenign {
    fn add(&mut self, out: &mut PartExamples, part: SparseVector) {
        match self.row_of.get(&key(&part)) {
            Some(&row) => out.weights[row] = (out.weights[row] + 1.0).min(self.cap),
            None => {
                self.row_of.insert(key(&part), out.parts.len());
                out.parts.push(part);
                out.malicious.push(false);
                out.weights.push(1.0);
            }
        }
    }
}

/// The part model's examples: `config.per_spot` values of each class (`benign`, `malicious`)
/// at each of the 13 spots, each in a random request of `templates` (half stripped to `Host`
/// and `Connection`, half of the rest dressed as a browser of `user_agents`; one in five
/// encoded, as [`crate::public_examples::placed_in_every_spot`]; then a share
/// `dressing.forwarding_headers` of them, of both classes alike, behind a load balancer:
/// [`crate::public_examples::add_forwarding_headers`], and a share `dressing.site_referers`
/// with a Referer of one of the templates' pages), and every part of the templates
/// themselves; a benign part counted as often as it occurs, at most `config.copies_cap` times
/// ([`PartExamples::weights`]). Featurized by `featurizer` (the content-only one). Empty when a
/// list is empty.
pub fn examples(
    featurizer: &Featurizer,
    templates: &[&Record],
    benign: &[Vec<u8>],
    malicious: &[Vec<u8>],
    dressing: &Dressing,
    config: &PartModelConfig,
    rng: &mut impl Rng,
) -> PartExamples {
    let user_agents = dressing.user_agents;
    let mut out = PartExamples::default();
    if templates.is_empty() || benign.is_empty() || malicious.is_empty() {
        return out;
    }
    let mut capped = CappedBenign {
        row_of: HashMap::new(),
        cap: config.copies_cap as f32,
    };
    let pages: Vec<&[u8]> = templates.iter().map(|t| t.target.as_slice()).collect();
    for template in templates {
        for part in parts_of(featurizer, template) {
            capped.add(&mut out, part);
        }
    }
    for spot in PLACEMENTS {
        for (values, label) in [(benign, false), (malicious, true)] {
            for _ in 0..config.per_spot {
                let value = &values[rng.random_range(0..values.len())];
                let mut template = templates[rng.random_range(0..templates.len())].clone();
                match rng.random_range(0..4) {
                    0 | 1 => template.headers.retain(|(name, _)| {
                        name.eq_ignore_ascii_case("host") || name.eq_ignore_ascii_case("connection")
                    }),
                    2 if !user_agents.is_empty() => {
                        let ua = &user_agents[rng.random_range(0..user_agents.len())];
                        dress_as_browser(&mut template, ua, false, rng);
                    }
                    _ => {}
                }
                // Drawn only with forwarding headers, so that runs without are as before.
                if dressing.forwarding_headers > 0.0
                    && rng.random_range(0.0..1.0) < dressing.forwarding_headers
                {
                    crate::public_examples::add_forwarding_headers(&mut template, rng);
                }
                if dressing.site_referers > 0.0
                    && rng.random_range(0.0..1.0) < dressing.site_referers
                {
                    crate::public_examples::add_site_referer(&mut template, &pages, rng);
                }
                let encode = rng.random_range(0..5) == 0;
                let (mine, rest) =
                    value_parts(featurizer, &template, value, spot, encode, rng.random());
                for part in mine {
                    out.parts.push(part);
                    out.malicious.push(label);
                    out.weights.push(1.0);
                }
                for part in rest {
                    capped.add(&mut out, part);
                }
            }
        }
    }
    out
}

impl PartExamples {
    /// The parts as dense rows of width `dim` (the featurizer's) with their labels, each
    /// distinct benign part once (its count is in [`PartExamples::weights`]).
    pub fn rows(&self, dim: usize) -> crate::ensemble::LabeledRows {
        let mut values = vec![0f32; self.parts.len() * dim];
        for (k, part) in self.parts.iter().enumerate() {
            part.write_dense(&mut values[k * dim..(k + 1) * dim]);
        }
        crate::ensemble::LabeledRows {
            x: crate::dense::DenseMatrix {
                rows: self.parts.len(),
                cols: dim,
                values,
            },
            y: self.malicious.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value's parts carry its label and nothing else does: every part with the attack's
    /// quote is labelled malicious (a JSON body's keys, a multipart Content-Type, the request's
    /// other pairs stay benign context); each of the 13 spots gives every placed attack a part
    /// with it; a part every request carries is one row counted up to the cap.
    #[test]
    fn the_value_labels_its_own_parts_and_the_context_is_benign() {
        let template = Record {
            method: "GET".into(),
            target: b"/shop/item.jsp?id=1&name=ana".to_vec(),
            body: None,
            headers: vec![
                ("Host".into(), b"shop.example".to_vec()),
                ("User-Agent".into(), b"Mozilla/5.0 (X11; Linux)".to_vec()),
            ],
            label: None,
            line: 1,
            client: None,
        };
        let config = featurizer::FeaturizerConfig {
            top_k: 2000,
            char_ngrams: Some([1, 3]),
            placements: Some(featurizer::PlacementConfig::default()),
            ..Default::default()
        };
        let docs = [
            featurizer::RequestParts::get("/shop/item.jsp?id=1&name=' or 1=1--"),
            template.parts(),
        ];
        let f = Featurizer::fit(config, docs).unwrap();
        let quote = f.vocabulary().iter().position(|t| t == "'").unwrap() as u32;
        let pm = PartModelConfig {
            per_spot: 3,
            copies_cap: 4,
            training: crate::ensemble::TrainConfig::default(),
            placement_offsets: false,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let out = examples(
            &f,
            &[&template],
            &[b"hola mundo".to_vec()],
            &[b"' or 1=1--".to_vec()],
            &Dressing::default(),
            &pm,
            &mut rng,
        );
        assert_eq!(out.parts.len(), out.malicious.len());
        assert_eq!(out.parts.len(), out.weights.len());
        // (A Base64-encoded attack's raw part is the value's too, without the quote.)
        for (part, &malicious) in out.parts.iter().zip(&out.malicious) {
            assert!(malicious || !part.indices.contains(&quote), "{part:?}");
        }
        let attacks = out
            .parts
            .iter()
            .zip(&out.malicious)
            .filter(|(p, &m)| m && p.indices.contains(&quote))
            .count();
        assert!(
            attacks >= 13 * 3,
            "{attacks} malicious parts with the quote"
        );
        // The template's own parts (its path, pairs, headers) are context wherever they occur.
        let context = parts_of(&f, &template);
        assert!(context.len() >= 4, "{context:?}");
        for (part, &malicious) in out.parts.iter().zip(&out.malicious) {
            assert!(!(malicious && context.contains(part)), "{part:?}");
        }
        assert!(out.weights.iter().all(|&w| (1.0..=4.0).contains(&w)));
        assert!(out.weights.contains(&4.0), "{:?}", out.weights);
    }

    #[test]
    fn the_held_out_tenth_is_a_rule_of_the_value() {
        // FNV-1a of the empty string is the offset basis, 14695981039346656037: 7 modulo 10.
        assert!(!held_out(b""));
        let values: Vec<Vec<u8>> = (0..10_000).map(|i| format!("v{i}").into_bytes()).collect();
        let held = values.iter().filter(|v| held_out(v)).count();
        assert!((800..1200).contains(&held), "{held} of 10,000 held out");
        // Python's FNV-1a of b"v5" is 634742598265772020 (the bench computes the same).
        assert!(held_out(b"v5"));
        assert!(!held_out(b"' or 1=1--"));
    }
}
