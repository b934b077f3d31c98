//! The saved form of one trained network (a teacher or the student): a safetensors file
//! (`layer{l}.weight` as `[out, in]`, `layer{l}.bias` as `[out]`, f32 little-endian) whose
//! metadata key `pate_waf` holds [`ModelInfo`] as JSON. Written atomically.
use std::collections::HashMap;
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde::{Deserialize, Serialize};

use crate::ensemble::MemberReport;
use crate::error::{Error, ModelFileProblem, Result, TeacherProblem};
use crate::model::{Dense, Mlp};

/// Version of the model file layout.
pub const MODEL_FILE_VERSION: u32 = 1;
const METADATA_KEY: &str = "pate_waf";

/// Which role a model file plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRole {
    /// A teacher trained on one shard of private data.
    Teacher,
    /// The student trained on privately labelled public queries.
    Student,
    /// The model of single parts, trained on public values alone
    /// (`student.public_examples.part_model`).
    PartModel,
}

/// What is known about a saved model besides its weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    /// [`MODEL_FILE_VERSION`].
    pub format_version: u32,
    /// Teacher or student.
    pub role: ModelRole,
    /// Teachers: the shard index (0-based).
    pub shard: Option<usize>,
    /// Teachers: the number of shards.
    pub shards: Option<usize>,
    /// sha256 of what the model was trained on (featurizer hash, sample features, labels and
    /// training config); a resumed run keeps a saved teacher only when this matches.
    pub data_hash: String,
    /// `content_hash` of the featurizer whose features the model reads.
    pub featurizer_hash: String,
    /// Decision threshold on the malicious probability (Youden's J on held-out samples).
    pub threshold: f32,
    /// Training summary.
    pub training: MemberReport,
    /// `{"rng": "os"}` or `{"rng": "seeded", "seed": N}`.
    pub rng: privacy::RngProvenance,
    /// Version of pate-trainer that wrote the file.
    pub trainer_version: String,
    /// Students: the threshold for scoring content alone (without the site's format checks),
    /// when `student.public_examples.content_only_validation` chose one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_only_threshold: Option<f32>,
    /// Students: the part model's offsets per placement, chosen with the content-only threshold
    /// (`student.public_examples.part_model.placement_offsets`).
    #[serde(default, skip_serializing_if = "bundle::PartOffsets::is_empty")]
    pub part_model_offsets: bundle::PartOffsets,
}

impl ModelInfo {
    /// The record of a freshly trained model of `role`: its training report (whose threshold it
    /// takes), the hash of its data and of its featurizer, the randomness, this trainer's version;
    /// no shard, content-only threshold or part offsets.
    pub fn trained(
        role: ModelRole,
        training: MemberReport,
        data_hash: String,
        featurizer_hash: String,
        rng: privacy::RngProvenance,
    ) -> ModelInfo {
        ModelInfo {
            format_version: MODEL_FILE_VERSION,
            role,
            shard: None,
            shards: None,
            data_hash,
            featurizer_hash,
            threshold: training.threshold,
            training,
            rng,
            trainer_version: env!("CARGO_PKG_VERSION").into(),
            content_only_threshold: None,
            part_model_offsets: Default::default(),
        }
    }
}

/// A network and its [`ModelInfo`].
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFile {
    /// The weights.
    pub weights: Mlp,
    /// Everything else.
    pub info: ModelInfo,
}

fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

impl ModelFile {
    /// Serializes to safetensors bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.weights.validate()?;
        let mut buffers = Vec::new();
        for (l, layer) in self.weights.layers.iter().enumerate() {
            buffers.push((
                format!("layer{l}.weight"),
                vec![layer.out_dim, layer.in_dim],
                le_bytes(&layer.weight),
            ));
            buffers.push((
                format!("layer{l}.bias"),
                vec![layer.out_dim],
                le_bytes(&layer.bias),
            ));
        }
        let views = buffers
            .iter()
            .map(|(name, shape, bytes)| {
                TensorView::new(Dtype::F32, shape.clone(), bytes)
                    .map(|v| (name.clone(), v))
                    .map_err(|source| Error::Safetensors {
                        what: format!("tensor {name}"),
                        source,
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let info = serde_json::to_string(&self.info).map_err(Error::serialize("model info"))?;
        let metadata = Some(HashMap::from([(METADATA_KEY.to_string(), info)]));
        safetensors::tensor::serialize(views, &metadata).map_err(|source| Error::Safetensors {
            what: "model".into(),
            source,
        })
    }

    /// Parses safetensors bytes; `path` names the file in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self> {
        let bad = |problem: ModelFileProblem| Error::ModelFile {
            path: path.to_owned(),
            problem,
        };
        let (_, metadata) = SafeTensors::read_metadata(bytes)
            .map_err(|e| bad(ModelFileProblem::NotSafetensors(e)))?;
        let info_json = metadata
            .metadata()
            .as_ref()
            .and_then(|m| m.get(METADATA_KEY))
            .ok_or_else(|| bad(ModelFileProblem::NoMetadata(METADATA_KEY)))?;
        let info: ModelInfo =
            serde_json::from_str(info_json).map_err(|e| bad(ModelFileProblem::Info(e)))?;
        if info.format_version != MODEL_FILE_VERSION {
            return Err(bad(ModelFileProblem::Version {
                found: info.format_version,
                expected: MODEL_FILE_VERSION,
            }));
        }
        let tensors = SafeTensors::deserialize(bytes)
            .map_err(|e| bad(ModelFileProblem::NotSafetensors(e)))?;
        let read = |name: &str, dims: usize| -> Result<(Vec<usize>, Vec<f32>)> {
            let t = tensors
                .tensor(name)
                .map_err(|_| bad(ModelFileProblem::MissingTensor(name.into())))?;
            if t.dtype() != Dtype::F32 || t.shape().len() != dims {
                return Err(bad(ModelFileProblem::Tensor {
                    name: name.into(),
                    expected: format!("{dims}-d f32"),
                    found: format!("{:?} {:?}", t.dtype(), t.shape()),
                }));
            }
            let values = t
                .data()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            Ok((t.shape().to_vec(), values))
        };
        let layer_count = tensors
            .names()
            .iter()
            .filter(|n| n.ends_with(".weight"))
            .count();
        let mut layers = Vec::with_capacity(layer_count);
        for l in 0..layer_count {
            let (shape, weight) = read(&format!("layer{l}.weight"), 2)?;
            let (_, bias) = read(&format!("layer{l}.bias"), 1)?;
            layers.push(Dense {
                in_dim: shape[1],
                out_dim: shape[0],
                weight,
                bias,
            });
        }
        let weights = Mlp { layers };
        weights.validate().map_err(|source| Error::Network {
            what: path.display().to_string(),
            source: Box::new(source),
        })?;
        Ok(ModelFile { weights, info })
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        featurizer::write_atomic(path, &bytes).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Reads and checks a model file.
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_bytes(&bytes, path)
    }
}

/// The file name of teacher `shard` (0-based).
pub fn teacher_file_name(shard: usize) -> String {
    format!("teacher-{shard:05}.safetensors")
}

/// Loads every `teacher-*.safetensors` of `dir`, sorted by shard; checks that they agree on the
/// shard count, featurizer and shape.
pub fn load_teachers(dir: &Path) -> Result<Vec<ModelFile>> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Io {
            path: dir.to_owned(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("teacher-") && name.ends_with(".safetensors") {
            paths.push(entry.path());
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(Error::Teachers {
            path: dir.to_owned(),
            problem: TeacherProblem::None,
        });
    }
    let teachers = paths
        .iter()
        .map(|p| ModelFile::load(p))
        .collect::<Result<Vec<_>>>()?;
    let first = &teachers[0];
    for (t, p) in teachers.iter().zip(&paths) {
        if t.info.role != ModelRole::Teacher {
            return Err(Error::Teachers {
                path: p.clone(),
                problem: TeacherProblem::NotATeacher,
            });
        }
        if t.info.featurizer_hash != first.info.featurizer_hash {
            return Err(Error::Teachers {
                path: p.clone(),
                problem: TeacherProblem::Featurizer {
                    hash: t.info.featurizer_hash.clone(),
                    first: paths[0].clone(),
                    first_hash: first.info.featurizer_hash.clone(),
                },
            });
        }
        if t.weights.dims() != first.weights.dims() {
            return Err(Error::Teachers {
                path: p.clone(),
                problem: TeacherProblem::Widths {
                    widths: t.weights.dims(),
                    first: paths[0].clone(),
                    first_widths: first.weights.dims(),
                },
            });
        }
    }
    Ok(teachers)
}
