//! ONNX encoding of the student: a fully connected network with ReLU between layers and a sigmoid
//! at the end, written as an ONNX `ModelProto` with `prost` (no Python, no onnx crate).
//!
//! Graph (ONNX operators, opset [`OPSET_VERSION`]):
//! `features` float[batch, K] → `Gemm(transB=1)` → `Relu` → … → `Gemm(transB=1)` → `Sigmoid` →
//! `score` float[batch, 1]. `Gemm` computes `Y = X·Wᵀ + b` (ONNX operator spec, "Gemm", with
//! `alpha = beta = 1`), so a weight stored row-major `[out][in]` — the layout of
//! `torch.nn.Linear.weight` — is used as is.
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::proto::{
    AttributeProto, Dimension, DimensionValue, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, StringStringEntryProto, TensorProto, TensorShapeProto, TypeProto,
    TypeProtoTensor, ValueInfoProto, ATTRIBUTE_TYPE_INT, DATA_TYPE_FLOAT, DATA_TYPE_INT64,
};
use crate::{BundleError, InputProblem, LayerProblem, ModelProblem};

/// ONNX IR version written into the model (IR 8 = ONNX 1.10+, read by every ONNX Runtime ≥ 1.10).
pub const IR_VERSION: i64 = 8;
/// Default-domain operator set version (Gemm-13, Relu-14, Sigmoid-13 are the current versions).
pub const OPSET_VERSION: i64 = 17;
/// Name of the graph input: float[batch, K].
pub const INPUT_NAME: &str = "features";
/// Name of the graph output: float[batch, 1], the malicious probability.
pub const OUTPUT_NAME: &str = "score";
/// Symbolic name of the batch dimension.
pub const BATCH_DIM: &str = "batch";
/// Sparse-input graph ([`encode_sparse_onnx`]): positions of the non-zero features, int64[nnz].
pub const SPARSE_INDICES_NAME: &str = "indices";
/// Sparse-input graph: the non-zero feature values, float[1, nnz], in the order of the indices.
pub const SPARSE_VALUES_NAME: &str = "values";
/// Symbolic name of the number of non-zero features.
pub const NNZ_DIM: &str = "nnz";

/// One fully connected layer: `y = W·x + b`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dense {
    /// Input width.
    pub in_dim: usize,
    /// Output width.
    pub out_dim: usize,
    /// Weights, row-major `[out_dim][in_dim]` (the layout of `torch.nn.Linear.weight`).
    pub weight: Vec<f32>,
    /// Biases, `out_dim` values.
    pub bias: Vec<f32>,
}

/// A fully connected network: ReLU after every layer but the last, sigmoid after the last, whose
/// width must be 1 (one logit → the malicious probability).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mlp {
    /// The layers, input side first.
    pub layers: Vec<Dense>,
}

impl Dense {
    /// Checks the dimensions against the buffers and that every parameter is finite.
    fn validate(&self, index: usize) -> Result<(), BundleError> {
        let invalid = |problem: LayerProblem| {
            Err(BundleError::InvalidModel(ModelProblem::Layer {
                layer: index,
                problem,
            }))
        };
        let (in_dim, out_dim) = (self.in_dim, self.out_dim);
        if in_dim == 0 || out_dim == 0 {
            return invalid(LayerProblem::ZeroDimension { in_dim, out_dim });
        }
        let expected = match in_dim.checked_mul(out_dim) {
            Some(n) if n <= i64::MAX as usize / 4 => n,
            _ => return invalid(LayerProblem::TooLarge { in_dim, out_dim }),
        };
        if self.weight.len() != expected {
            return invalid(LayerProblem::WeightLength {
                found: self.weight.len(),
                out_dim,
                in_dim,
            });
        }
        if self.bias.len() != out_dim {
            return invalid(LayerProblem::BiasLength {
                found: self.bias.len(),
                out_dim,
            });
        }
        if let Some(i) = self.weight.iter().position(|w| !w.is_finite()) {
            return invalid(LayerProblem::Weight {
                index: i,
                value: self.weight[i],
            });
        }
        if let Some(i) = self.bias.iter().position(|b| !b.is_finite()) {
            return invalid(LayerProblem::Bias {
                index: i,
                value: self.bias[i],
            });
        }
        Ok(())
    }
}

impl Mlp {
    /// Checks that the layers chain (`in_dim` of each = `out_dim` of the previous), that the last
    /// layer has one output, and every layer's buffers.
    pub fn validate(&self) -> Result<(), BundleError> {
        if self.layers.is_empty() {
            return Err(BundleError::InvalidModel(ModelProblem::NoLayers));
        }
        for (i, layer) in self.layers.iter().enumerate() {
            layer.validate(i)?;
            if i > 0 && layer.in_dim != self.layers[i - 1].out_dim {
                return Err(BundleError::InvalidModel(ModelProblem::Chain {
                    layer: i,
                    in_dim: layer.in_dim,
                    previous: i - 1,
                    previous_out: self.layers[i - 1].out_dim,
                }));
            }
        }
        let last = self.layers.len() - 1;
        if self.layers[last].out_dim != 1 {
            return Err(BundleError::InvalidModel(ModelProblem::LastWidth {
                layer: last,
                out_dim: self.layers[last].out_dim,
            }));
        }
        Ok(())
    }

    /// Layer widths, input first, ending in 1 for a valid network.
    pub fn dims(&self) -> Vec<usize> {
        let mut dims = vec![self.input_dim()];
        dims.extend(self.layers.iter().map(|l| l.out_dim));
        dims
    }

    /// Width of the input (`K`, the featurizer's dimension).
    pub fn input_dim(&self) -> usize {
        self.layers.first().map_or(0, |l| l.in_dim)
    }

    /// Number of parameters (weights and biases).
    pub fn parameter_count(&self) -> usize {
        self.layers
            .iter()
            .map(|l| l.weight.len() + l.bias.len())
            .sum()
    }

    /// Plain-Rust f32 forward pass of one input: the reference the ONNX graph is tested against.
    pub fn forward(&self, input: &[f32]) -> Result<f32, BundleError> {
        self.validate()?;
        if input.len() != self.input_dim() {
            return Err(BundleError::Input(InputProblem::Width {
                what: "input".into(),
                found: input.len(),
                expected: self.input_dim(),
            }));
        }
        let mut activation = input.to_vec();
        let last = self.layers.len() - 1;
        for (index, layer) in self.layers.iter().enumerate() {
            let mut next = layer.bias.clone();
            for (o, out) in next.iter_mut().enumerate() {
                let row = &layer.weight[o * layer.in_dim..(o + 1) * layer.in_dim];
                *out += row.iter().zip(&activation).map(|(w, x)| w * x).sum::<f32>();
                if index < last {
                    *out = out.max(0.0);
                }
            }
            activation = next;
        }
        Ok(sigmoid(activation[0]))
    }
}

/// The logistic function `1 / (1 + e^(−z))`.
pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

fn float_tensor(name: String, dims: Vec<i64>, values: &[f32]) -> TensorProto {
    // raw_data is the little-endian byte image of the values (onnx.proto, TensorProto.raw_data).
    let raw_data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    TensorProto {
        dims,
        data_type: DATA_TYPE_FLOAT,
        name,
        raw_data,
        ..Default::default()
    }
}

fn float_value_info(name: &str, dims: [DimensionValue; 2]) -> ValueInfoProto {
    value_info(name, DATA_TYPE_FLOAT, dims.into())
}

fn value_info(name: &str, elem_type: i32, dims: Vec<DimensionValue>) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .into_iter()
                        .map(|d| Dimension {
                            value: Some(d),
                            denotation: String::new(),
                        })
                        .collect(),
                }),
            }),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

fn node(
    op_type: &str,
    name: String,
    inputs: Vec<String>,
    output: String,
    attribute: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        input: inputs,
        output: vec![output],
        name,
        op_type: op_type.into(),
        attribute,
        ..Default::default()
    }
}

/// Encodes the network as a serialized ONNX `ModelProto` (see the module documentation for the
/// graph). Errors (never panics) when the layers do not fit together.
pub fn encode_onnx(mlp: &Mlp) -> Result<Vec<u8>, BundleError> {
    mlp.validate()?;
    let mut nodes = Vec::new();
    let mut initializers = Vec::new();
    let mut current = INPUT_NAME.to_string();
    for i in 0..mlp.layers.len() {
        current = push_dense_layer(mlp, i, current, &mut nodes, &mut initializers);
    }
    let batch = || DimensionValue::DimParam(BATCH_DIM.into());
    Ok(model_bytes(
        mlp,
        "PATE student: malicious-request probability from l1-normalized TF-IDF features",
        GraphProto {
            node: nodes,
            name: "pate_student".into(),
            initializer: initializers,
            input: vec![float_value_info(
                INPUT_NAME,
                [batch(), DimensionValue::DimValue(mlp.input_dim() as i64)],
            )],
            output: vec![float_value_info(
                OUTPUT_NAME,
                [batch(), DimensionValue::DimValue(1)],
            )],
            ..Default::default()
        },
    ))
}

/// Layer `i` of `mlp` as `Gemm(input, Wᵢ, bᵢ)` (transB) and its activation (`Relu`, or `Sigmoid`
/// into the output for the last layer); returns the name of the layer's output.
fn push_dense_layer(
    mlp: &Mlp,
    i: usize,
    input: String,
    nodes: &mut Vec<NodeProto>,
    initializers: &mut Vec<TensorProto>,
) -> String {
    let layer = &mlp.layers[i];
    let (w, b) = (format!("layer{i}.weight"), format!("layer{i}.bias"));
    initializers.push(float_tensor(
        w.clone(),
        vec![layer.out_dim as i64, layer.in_dim as i64],
        &layer.weight,
    ));
    initializers.push(float_tensor(
        b.clone(),
        vec![layer.out_dim as i64],
        &layer.bias,
    ));
    let trans_b = AttributeProto {
        name: "transB".into(),
        r#type: ATTRIBUTE_TYPE_INT,
        i: 1,
        ..Default::default()
    };
    let linear = linear_name(mlp, i);
    nodes.push(node(
        "Gemm",
        format!("layer{i}.gemm"),
        vec![input, w, b],
        linear.clone(),
        vec![trans_b],
    ));
    push_activation(mlp, i, linear, nodes)
}

/// The name of layer `i`'s affine output (`logit` for the last layer).
fn linear_name(mlp: &Mlp, i: usize) -> String {
    if i + 1 == mlp.layers.len() {
        "logit".to_string()
    } else {
        format!("layer{i}.linear")
    }
}

/// `Relu` after a hidden layer, `Sigmoid` into the model output after the last; returns the
/// activation's output name.
fn push_activation(mlp: &Mlp, i: usize, linear: String, nodes: &mut Vec<NodeProto>) -> String {
    if i + 1 == mlp.layers.len() {
        nodes.push(node(
            "Sigmoid",
            "sigmoid".into(),
            vec![linear],
            OUTPUT_NAME.into(),
            vec![],
        ));
        OUTPUT_NAME.into()
    } else {
        let relu = format!("layer{i}.relu");
        nodes.push(node(
            "Relu",
            relu.clone(),
            vec![linear],
            relu.clone(),
            vec![],
        ));
        relu
    }
}

/// The serialized `ModelProto` around `graph` (same header and metadata for every graph we write).
fn model_bytes(mlp: &Mlp, doc_string: &str, graph: GraphProto) -> Vec<u8> {
    ModelProto {
        ir_version: IR_VERSION,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: OPSET_VERSION,
        }],
        producer_name: "pate-waf".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        domain: "pate-waf".into(),
        model_version: 1,
        doc_string: doc_string.into(),
        graph: Some(graph),
        metadata_props: vec![StringStringEntryProto {
            key: "layers".into(),
            value: layer_summary(mlp),
        }],
    }
    .encode_to_vec()
}

/// Encodes the network as an ONNX model with a **sparse input**, for scoring one request at a
/// time: inputs `indices` int64[nnz] (feature positions, each `< K`) and `values` float[1, nnz];
/// output `score` float[1, 1]. Same network, same maths as [`encode_onnx`]'s graph, but the first
/// layer only touches the rows of `W1ᵀ` the request uses:
///
/// `Gather(W1ᵀ, indices)` → float[nnz, H1] (ONNX operator spec, "Gather", axis 0), then
/// `Gemm(values, ·, b1)` = `Σ_j values[j] · W1[:, indices[j]] + b1` = `W1·x + b1` for the dense
/// `x` with `x[indices[j]] = values[j]` (indices distinct; a repeated index adds its values, as
/// [`crate::Scorer::score_sparse`] always did), then `Relu` and the remaining layers exactly as in
/// [`encode_onnx`]. The featurizer's l1-normalized vector has tens of non-zeros of K = 500, so the
/// first layer costs nnz·H1 multiply-adds instead of K·H1. Sums run in another order than the
/// dense `Gemm`'s, so scores agree with the dense graph to float rounding (~1e-7), not bit for
/// bit. `nnz` must be at least 1: feed index 0 with value 0 for an empty vector.
///
/// This graph is built in memory from `model.onnx` by the scorer; bundles keep the dense graph
/// (the contract of `model.onnx`, read by `pate-trainer score` and Python onnxruntime).
pub fn encode_sparse_onnx(mlp: &Mlp) -> Result<Vec<u8>, BundleError> {
    mlp.validate()?;
    let first = &mlp.layers[0];
    // W1ᵀ, row-major [in][out]: row i holds the weights from input feature i (what Gather picks).
    let mut transposed = vec![0.0f32; first.weight.len()];
    for o in 0..first.out_dim {
        for i in 0..first.in_dim {
            transposed[i * first.out_dim + o] = first.weight[o * first.in_dim + i];
        }
    }
    let mut nodes = Vec::new();
    let mut initializers = vec![
        float_tensor(
            "layer0.weight_t".into(),
            vec![first.in_dim as i64, first.out_dim as i64],
            &transposed,
        ),
        float_tensor(
            "layer0.bias".into(),
            vec![first.out_dim as i64],
            &first.bias,
        ),
    ];
    let axis = AttributeProto {
        name: "axis".into(),
        r#type: ATTRIBUTE_TYPE_INT,
        i: 0,
        ..Default::default()
    };
    nodes.push(node(
        "Gather",
        "layer0.gather".into(),
        vec!["layer0.weight_t".into(), SPARSE_INDICES_NAME.into()],
        "layer0.rows".into(),
        vec![axis],
    ));
    nodes.push(node(
        "Gemm",
        "layer0.gemm".into(),
        vec![
            SPARSE_VALUES_NAME.into(),
            "layer0.rows".into(),
            "layer0.bias".into(),
        ],
        linear_name(mlp, 0),
        vec![],
    ));
    let mut current = push_activation(mlp, 0, linear_name(mlp, 0), &mut nodes);
    for i in 1..mlp.layers.len() {
        current = push_dense_layer(mlp, i, current, &mut nodes, &mut initializers);
    }
    let nnz = || DimensionValue::DimParam(NNZ_DIM.into());
    Ok(model_bytes(
        mlp,
        "PATE student, sparse input: malicious-request probability of one request",
        GraphProto {
            node: nodes,
            name: "pate_student_sparse".into(),
            initializer: initializers,
            input: vec![
                value_info(SPARSE_INDICES_NAME, DATA_TYPE_INT64, vec![nnz()]),
                value_info(
                    SPARSE_VALUES_NAME,
                    DATA_TYPE_FLOAT,
                    vec![DimensionValue::DimValue(1), nnz()],
                ),
            ],
            output: vec![float_value_info(
                OUTPUT_NAME,
                [DimensionValue::DimValue(1), DimensionValue::DimValue(1)],
            )],
            ..Default::default()
        },
    ))
}

fn layer_summary(mlp: &Mlp) -> String {
    let mut widths = vec![mlp.input_dim().to_string()];
    widths.extend(mlp.layers.iter().map(|l| l.out_dim.to_string()));
    widths.join("-")
}

/// Decodes a model written by [`encode_onnx`] back into the network. Anything else (other
/// operators, other input/output names, missing initializers) is an error: the bundle loader uses
/// this to check that `model.onnx` is the graph the proxy expects and to learn its input width.
pub fn decode_onnx(bytes: &[u8]) -> Result<Mlp, BundleError> {
    let bad = graph_error;
    let model = ModelProto::decode(bytes)
        .map_err(|e| BundleError::InvalidModel(ModelProblem::Decode(e)))?;
    let graph = model.graph.ok_or_else(|| bad("has no graph".into()))?;
    if graph.input.len() != 1 || graph.input[0].name != INPUT_NAME {
        return Err(bad(format!(
            "expected exactly one input named `{INPUT_NAME}`"
        )));
    }
    if graph.output.len() != 1 || graph.output[0].name != OUTPUT_NAME {
        return Err(bad(format!(
            "expected exactly one output named `{OUTPUT_NAME}`"
        )));
    }
    let tensor = |name: &str| initializer(&graph, name);
    let mut layers = Vec::new();
    let mut current = INPUT_NAME.to_string();
    let mut nodes = graph.node.iter().peekable();
    while let Some(gemm) = nodes.next() {
        let i = layers.len();
        if gemm.op_type != "Gemm"
            || gemm.input.len() != 3
            || gemm.input[0] != current
            || gemm.output.len() != 1
        {
            return Err(bad(format!(
                "node {} (`{}`) is not the Gemm of layer {i} reading `{current}`",
                gemm.name, gemm.op_type
            )));
        }
        let trans_b = gemm
            .attribute
            .iter()
            .any(|a| a.name == "transB" && a.i == 1);
        let other_attrs = gemm.attribute.iter().any(|a| a.name != "transB");
        if !trans_b || other_attrs {
            return Err(bad(format!("Gemm of layer {i} must have exactly transB=1")));
        }
        let (wdims, weight) = tensor(&gemm.input[1])?;
        let (bdims, bias) = tensor(&gemm.input[2])?;
        if wdims.len() != 2 || bdims.len() != 1 || wdims.iter().chain(&bdims).any(|&d| d <= 0) {
            return Err(bad(format!(
                "layer {i}: weight dims {wdims:?} / bias dims {bdims:?} are not [out, in] / [out]"
            )));
        }
        layers.push(Dense {
            in_dim: wdims[1] as usize,
            out_dim: wdims[0] as usize,
            weight,
            bias,
        });
        let activation = nodes
            .next()
            .ok_or_else(|| bad(format!("layer {i} has no activation")))?;
        if activation.input.len() != 1
            || activation.input[0] != gemm.output[0]
            || activation.output.len() != 1
        {
            return Err(bad(format!(
                "node {} does not read layer {i}'s Gemm",
                activation.name
            )));
        }
        current = activation.output[0].clone();
        match (activation.op_type.as_str(), nodes.peek().is_none()) {
            ("Relu", false) => {}
            ("Sigmoid", true) if current == OUTPUT_NAME => {}
            (op, _) => return Err(bad(format!("unexpected `{op}` after layer {i}: expected Relu between layers and Sigmoid → `{OUTPUT_NAME}` at the end"))),
        }
    }
    let mlp = Mlp { layers };
    mlp.validate().map_err(|e| match e {
        BundleError::InvalidModel(p) => {
            BundleError::InvalidModel(ModelProblem::GraphNetwork(Box::new(p)))
        }
        other => other,
    })?;
    // The declared shapes must be what the proxy feeds and reads: [batch, K] → [batch, 1].
    check_declared_shape(&graph.input[0], mlp.input_dim())?;
    check_declared_shape(&graph.output[0], 1)?;
    Ok(mlp)
}

/// A structural mismatch of a decoded graph ([`ModelProblem::Graph`]).
fn graph_error(msg: String) -> BundleError {
    BundleError::InvalidModel(ModelProblem::Graph(msg))
}

/// The dims and float values of the graph's initializer `name` (raw little-endian bytes or
/// `float_data`).
fn initializer(graph: &GraphProto, name: &str) -> Result<(Vec<i64>, Vec<f32>), BundleError> {
    let t = graph
        .initializer
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| graph_error(format!("initializer `{name}` is missing")))?;
    if t.data_type != DATA_TYPE_FLOAT {
        return Err(graph_error(format!(
            "initializer `{name}` is not float (data_type {})",
            t.data_type
        )));
    }
    let values = if !t.raw_data.is_empty() {
        if t.raw_data.len() % 4 != 0 {
            return Err(graph_error(format!(
                "initializer `{name}` has {} raw bytes, not a multiple of 4",
                t.raw_data.len()
            )));
        }
        t.raw_data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    } else {
        t.float_data.clone()
    };
    Ok((t.dims.clone(), values))
}

/// Refuses a graph input or output not declared `float[batch, width]` (a named batch dimension).
fn check_declared_shape(value: &ValueInfoProto, width: usize) -> Result<(), BundleError> {
    let tensor_type = value.r#type.as_ref().and_then(|t| t.tensor_type.as_ref());
    let dims: Vec<Option<&DimensionValue>> = tensor_type
        .and_then(|t| t.shape.as_ref())
        .map(|s| s.dim.iter().map(|d| d.value.as_ref()).collect())
        .unwrap_or_default();
    let shape_ok = tensor_type.is_some_and(|t| t.elem_type == DATA_TYPE_FLOAT)
        && dims.len() == 2
        && matches!(dims[0], Some(DimensionValue::DimParam(_)))
        && dims[1] == Some(&DimensionValue::DimValue(width as i64));
    if !shape_ok {
        return Err(graph_error(format!(
            "`{}` is not declared float[{BATCH_DIM}, {width}]",
            value.name
        )));
    }
    Ok(())
}
