//! The recommended recipe: the defaults of the run configuration's nested settings that differ
//! from the generic ones of their types (a training of the teachers, of the student, of the part
//! model; the featurizer's settings), and how a config's partial section is laid over them.
//!
//! A config states only what differs from the recommended recipe: a nested mapping it gives
//! (`teachers.training: {l1: 0.001}`) replaces those keys of the recommended value and keeps the
//! others ([`over`]).
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::{Deserialize, Serialize};

use crate::ensemble::{ClassBalance, MemberThreshold, Optimizer, TrainConfig};

/// The teachers' training: sparse logistic regressions (FISTA, L1 3e-4, step 4.0, 300 full-batch
/// steps), class-balanced, voting at 0.5.
pub fn teacher_training() -> TrainConfig {
    TrainConfig {
        hidden: Vec::new(),
        max_epochs: 300,
        learning_rate: 4.0,
        class_balance: ClassBalance::PosWeight,
        weight_decay: 0.0,
        member_threshold: MemberThreshold::Half,
        optimizer: Optimizer::Fista,
        l1: 3e-4,
        ..TrainConfig::default()
    }
}

/// The student's training: a sparse logistic regression (FISTA, L1 1e-4, step 2.0, at most 300
/// full-batch steps, early stopping with patience 300), class-balanced.
pub fn student_training() -> TrainConfig {
    TrainConfig {
        hidden: Vec::new(),
        max_epochs: 300,
        learning_rate: 2.0,
        patience: 300,
        class_balance: ClassBalance::PosWeight,
        weight_decay: 0.0,
        optimizer: Optimizer::Fista,
        l1: 1e-4,
        ..TrainConfig::default()
    }
}

/// The part model's training: one hidden layer of 64 (Adam, step 0.001, batches of 256, at most
/// 30 epochs, patience 5), without class balance.
pub fn part_model_training() -> TrainConfig {
    TrainConfig {
        hidden: vec![64],
        max_epochs: 30,
        batch_size: 256,
        learning_rate: 0.001,
        patience: 5,
        class_balance: ClassBalance::None,
        weight_decay: 0.0,
        optimizer: Optimizer::Adam,
        l1: 0.0,
        ..TrainConfig::default()
    }
}

/// The featurizer's settings: the whole request by placement (request line whole, opaque tokens,
/// known header values, Referer as a URL; single parts read by their value alone), 10,000
/// features of character 1–3-grams with sublinear tf and l2 norm, parameter features, the site's format model (rarity counts ≥ 3, odd values
/// under 1 % and 5 %, odd shapes and paths, renamed parameters), libinjection and signatures.
pub fn featurizer() -> featurizer::FeaturizerConfig {
    featurizer::FeaturizerConfig {
        top_k: 10_000,
        char_ngrams: Some([1, 3]),
        sublinear_tf: true,
        params: true,
        rarity_min_count: Some(3),
        odd_permille: vec![10, 50],
        odd_shape_path: true,
        odd_name_variants: true,
        norm: featurizer::Norm::L2,
        placements: Some(featurizer::PlacementConfig {
            referer_as_url: true,
            opaque_tokens: true,
            request_line_whole: true,
            part_values_only: true,
            known_header_permille: Some(10),
            known_digit_runs: true,
            ..featurizer::PlacementConfig::default()
        }),
        libinjection: true,
        signatures: true,
        ..featurizer::FeaturizerConfig::default()
    }
}

/// `deserialize_with` for `teachers.training`.
pub fn teacher_training_over<'de, D: Deserializer<'de>>(d: D) -> Result<TrainConfig, D::Error> {
    over(d, teacher_training())
}

/// `deserialize_with` for `student.training`.
pub fn student_training_over<'de, D: Deserializer<'de>>(d: D) -> Result<TrainConfig, D::Error> {
    over(d, student_training())
}

/// `deserialize_with` for `student.public_examples.part_model.training`.
pub fn part_model_training_over<'de, D: Deserializer<'de>>(d: D) -> Result<TrainConfig, D::Error> {
    over(d, part_model_training())
}

/// `deserialize_with` for `featurizer.config`.
pub fn featurizer_over<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<featurizer::FeaturizerConfig, D::Error> {
    over(d, featurizer())
}

/// `serialize_with` for `featurizer.config`: every key written, those the featurizer's artifact
/// leaves out at their off value included, so that a run directory's config.yaml reads back as
/// the same settings (a key it left out would read as the recommended value).
pub fn featurizer_written<S: serde::Serializer>(
    config: &featurizer::FeaturizerConfig,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::Error as _;
    let value = |v: serde_yaml::Result<serde_yaml::Value>| v.map_err(S::Error::custom);
    let mut written = value(serde_yaml::to_value(config))?;
    let c = config;
    let placements = match &c.placements {
        None => serde_yaml::Value::Null,
        Some(p) => {
            let mut v = value(serde_yaml::to_value(p))?;
            for (key, field) in [
                ("parts_alone", p.parts_alone.into()),
                ("referer_as_url", p.referer_as_url.into()),
                ("opaque_tokens", p.opaque_tokens.into()),
                ("request_line_whole", p.request_line_whole.into()),
                ("part_values_only", p.part_values_only.into()),
                (
                    "known_header_permille",
                    value(serde_yaml::to_value(p.known_header_permille))?,
                ),
                ("known_digit_runs", p.known_digit_runs.into()),
            ] {
                insert(&mut v, key, field);
            }
            v
        }
    };
    for (key, field) in [
        ("ngram_max", c.ngram_max.into()),
        ("char_ngrams", value(serde_yaml::to_value(c.char_ngrams))?),
        ("value_shapes", c.value_shapes.into()),
        ("sublinear_tf", c.sublinear_tf.into()),
        ("params", c.params.into()),
        (
            "rarity_min_count",
            value(serde_yaml::to_value(c.rarity_min_count))?,
        ),
        (
            "odd_permille",
            value(serde_yaml::to_value(&c.odd_permille))?,
        ),
        ("odd_shape_path", c.odd_shape_path.into()),
        ("odd_name_variants", c.odd_name_variants.into()),
        ("norm", value(serde_yaml::to_value(c.norm))?),
        ("placements", placements),
        ("libinjection", c.libinjection.into()),
        ("signatures", c.signatures.into()),
        ("priors_undiluted", c.priors_undiluted.into()),
    ] {
        insert(&mut written, key, field);
    }
    written.serialize(s)
}

fn insert(mapping: &mut serde_yaml::Value, key: &str, value: serde_yaml::Value) {
    if let serde_yaml::Value::Mapping(m) = mapping {
        m.insert(key.into(), value);
    }
}

/// The section the config gives laid over `recommended`: its keys replace the recommended ones
/// (a nested mapping key by key), the keys it leaves out keep the recommended values. Unknown
/// keys and bad values are still refused by `T`'s own deserializer.
pub fn over<'de, D, T>(d: D, recommended: T) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Serialize + DeserializeOwned,
{
    let given = serde_yaml::Value::deserialize(d)?;
    let recommended = serde_yaml::to_value(recommended).map_err(D::Error::custom)?;
    let mut value = recommended.clone();
    merge(&mut value, given.clone());
    serde_yaml::from_value(value).map_err(|e| {
        // serde_yaml names the section and its line; name the key inside it too.
        match refused_key::<T>(&recommended, &given, &mut Vec::new()) {
            Some(key) => D::Error::custom(format!("{key}: {e}")),
            None => D::Error::custom(e),
        }
    })
}

/// The dotted path of the first key of `given` that `T` refuses laid over `recommended` alone.
fn refused_key<T: DeserializeOwned>(
    recommended: &serde_yaml::Value,
    given: &serde_yaml::Value,
    path: &mut Vec<serde_yaml::Value>,
) -> Option<String> {
    let serde_yaml::Value::Mapping(given) = given else {
        let mut one = given.clone();
        for key in path.iter().rev() {
            let mut m = serde_yaml::Mapping::new();
            m.insert(key.clone(), one);
            one = serde_yaml::Value::Mapping(m);
        }
        let mut value = recommended.clone();
        merge(&mut value, one);
        let refused = serde_yaml::from_value::<T>(value).is_err();
        let name = |k: &serde_yaml::Value| serde_yaml::to_string(k).unwrap_or_default();
        let dotted: Vec<String> = path.iter().map(|k| name(k).trim().to_string()).collect();
        return refused.then(|| dotted.join("."));
    };
    for (key, value) in given {
        path.push(key.clone());
        let found = refused_key::<T>(recommended, value, path);
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Lays `given` over `base`: mappings key by key, anything else replaced.
fn merge(base: &mut serde_yaml::Value, given: serde_yaml::Value) {
    match (base, given) {
        (serde_yaml::Value::Mapping(base), serde_yaml::Value::Mapping(given)) => {
            for (key, value) in given {
                match base.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Holder {
        #[serde(deserialize_with = "teacher_training_over")]
        training: TrainConfig,
        #[serde(deserialize_with = "featurizer_over")]
        config: featurizer::FeaturizerConfig,
    }

    #[test]
    fn a_partial_section_keeps_the_recommended_rest() {
        let h: Holder = serde_yaml::from_str(
            "training: {l1: 0.001}\nconfig: {top_k: 300, placements: {opaque_tokens: false}}\n",
        )
        .unwrap();
        assert_eq!(h.training.l1, 0.001);
        assert_eq!(h.training.optimizer, Optimizer::Fista);
        assert_eq!(h.training.max_epochs, 300);
        assert_eq!(h.config.top_k, 300);
        assert!(h.config.signatures);
        let p = h.config.placements.unwrap();
        assert!(!p.opaque_tokens);
        assert!(p.request_line_whole);
        let none: Holder =
            serde_yaml::from_str("training: {}\nconfig: {placements: null}\n").unwrap();
        assert!(none.config.placements.is_none());
        assert_eq!(none.training, teacher_training());
    }

    /// A featurizer setting at the artifact's off value (left out of featurizer.json) is still
    /// written, so it reads back as itself and not as the recommended value.
    #[test]
    fn a_written_featurizer_section_reads_back_as_itself() {
        #[derive(Debug, Serialize, Deserialize)]
        struct Section {
            #[serde(
                deserialize_with = "featurizer_over",
                serialize_with = "featurizer_written"
            )]
            config: featurizer::FeaturizerConfig,
        }
        let mut off = featurizer();
        off.norm = featurizer::Norm::L1;
        off.libinjection = false;
        off.odd_permille.clear();
        off.char_ngrams = None;
        if let Some(p) = &mut off.placements {
            p.opaque_tokens = false;
            p.known_header_permille = None;
        }
        for config in [
            off.clone(),
            featurizer(),
            featurizer::FeaturizerConfig::default(),
        ] {
            let text = serde_yaml::to_string(&Section {
                config: config.clone(),
            })
            .unwrap();
            let back: Section = serde_yaml::from_str(&text).unwrap();
            assert_eq!(back.config, config, "{text}");
        }
    }

    #[test]
    fn unknown_keys_are_still_refused() {
        let e = serde_yaml::from_str::<Holder>("training: {l3: 1}\nconfig: {}\n").unwrap_err();
        assert!(e.to_string().contains("l3"), "{e}");
        let e = serde_yaml::from_str::<Holder>("config: {}\ntraining: {l1: 0.1, hidden: 64}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("hidden: invalid type"), "{e}");
        let e = serde_yaml::from_str::<Holder>("training: {}\nconfig: {placements: {x: 1}}\n")
            .unwrap_err();
        assert!(e.to_string().contains('x'), "{e}");
    }
}
