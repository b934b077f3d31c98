//! Test and benchmark fixtures written by code: a featurizer fitted on CSIC-2010-style requests
//! and a one-layer "student" whose weights are set by hand to put positive weight on tokens that
//! mark SQL injection and XSS, saved with the bundle crate's own [`bundle::write_bundle`].
//!
//! Not a trained model: it exists so that the proxy's tests and benchmarks can run without the
//! trainer, with verdicts that are predictable by construction (a request whose attack tokens
//! carry enough of its l1-normalized TF-IDF mass scores high).
//!
//! A workspace member of its own (`publish = false`), used only as a dev-dependency (proxy's
//! tests, benchmarks and `fixture_bundle` example; the end-to-end tests): nothing shipped links it.
#![forbid(unsafe_code)]

pub mod csic_requests;

use std::path::Path;

use bundle::{write_bundle, BundleContents, Dense, Manifest, Mlp};
use featurizer::{Featurizer, FeaturizerConfig, RequestParts};

/// Writing a fixture failed.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// Fitting the fixture featurizer failed.
    #[error("fixture featurizer: {0}")]
    Featurizer(#[from] featurizer::FeaturizerError),
    /// Writing the bundle failed.
    #[error("fixture bundle: {0}")]
    Bundle(#[from] bundle::BundleError),
}

/// Tokens (as the featurizer tokenizes: single punctuation characters or alphanumeric runs) that
/// the fixture model weighs as malicious.
pub const ATTACK_TOKENS: &[&str] = &[
    "'", "\"", "<", ">", ";", "(", ")", "*", "|", "-", "script", "select", "union", "drop", "from",
    "table", "alert", "or", "and", "where", "exec", "passwd", "etc", "cat",
];

/// Benign requests in the style of CSIC 2010's normal traffic (the shop `tienda1`).
pub const NORMAL_REQUESTS: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/tienda1/index.jsp", None),
    ("GET", "/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&precio=85&cantidad=49&B1=A%F1adir+al+carrito", None),
    ("GET", "/tienda1/publico/autenticar.jsp?modo=entrar&login=grimshaw&pwd=G%2F%2FlAc%2CIAr&remember=on&B1=Entrar", None),
    ("GET", "/tienda1/publico/caracteristicas.jsp?id=2", None),
    ("GET", "/tienda1/publico/productos.jsp", None),
    ("GET", "/tienda1/publico/pagar.jsp?modo=insertar&precio=5702&B1=Pasar+por+caja", None),
    ("GET", "/tienda1/miembros/editar.jsp?modo=registro&login=mantel&password=3nt0nces&nombre=Mantel&apellidos=Aguado+Veiga&email=mantel%40sanpedro.es&dni=22459112W&direccion=Plaza+Mayor+3&ciudad=Salamanca&cp=37001&provincia=Salamanca&ntc=8441418216426830&B1=Registrar", None),
    ("POST", "/tienda1/publico/anadir.jsp", Some("id=3&nombre=Queso+Manchego&precio=39&cantidad=61&B1=A%F1adir+al+carrito")),
    ("POST", "/tienda1/publico/autenticar.jsp", Some("modo=entrar&login=caesar&pwd=d1ab0l1c0&remember=off&B1=Entrar")),
    ("GET", "/tienda1/imagenes/logo.gif", None),
    ("GET", "/tienda1/publico/vaciar.jsp?B2=Vaciar+carrito", None),
    ("GET", "/tienda1/global/menum.jsp", None),
];

/// Attacks in the style of CSIC 2010's anomalous traffic.
pub const ATTACK_REQUESTS: &[(&str, &str, Option<&str>)] = &[
    ("GET", "/tienda1/publico/anadir.jsp?id=2&nombre=Jam%F3n+Ib%E9rico&precio=85&cantidad=%27%3B+DROP+TABLE+usuarios%3B+SELECT+*+FROM+datos+WHERE+nombre+LIKE+%27%25&B1=A%F1adir+al+carrito", None),
    ("GET", "/tienda1/publico/caracteristicas.jsp?id=%3Cscript%3Ealert%28%22XSS%22%29%3C%2Fscript%3E", None),
    ("GET", "/tienda1/publico/autenticar.jsp?modo=entrar&login=admin%27+or+%271%27%3D%271&pwd=x%27--&B1=Entrar", None),
    ("GET", "/tienda1/publico/productos.jsp?id=1+UNION+SELECT+password+FROM+usuarios--", None),
    ("POST", "/tienda1/publico/anadir.jsp", Some("id=3&nombre=%3Cscript%3Ealert%28document.cookie%29%3C%2Fscript%3E&precio=39&cantidad=1")),
    ("GET", "/tienda1/publico/pagar.jsp?modo=insertar&precio=1%7Ccat+%2Fetc%2Fpasswd", None),
];

/// `RequestParts` of a `(method, target, body)` triple.
pub fn parts<'a>(request: &'a (&'a str, &'a str, Option<&'a str>)) -> RequestParts<'a> {
    RequestParts {
        method: request.0,
        target: request.1.as_bytes(),
        body: request.2.map(str::as_bytes),
        headers: Default::default(),
        excluded_fields: Default::default(),
    }
}

/// The featurizer fitted (default settings, K = 500) on the fixture's normal and attack requests.
pub fn fixture_featurizer() -> Result<Featurizer, FixtureError> {
    let docs = NORMAL_REQUESTS.iter().chain(ATTACK_REQUESTS).map(parts);
    Ok(Featurizer::fit(FeaturizerConfig::default(), docs)?)
}

/// A one-layer logistic model over `featurizer`'s vocabulary: weight `attack_weight` on every
/// vocabulary token listed in `attack_tokens`, 0 elsewhere, bias `bias`. The score of a request
/// is `sigmoid(bias + attack_weight · m)` where `m ∈ [0, 1]` is the l1 mass of its attack tokens.
pub fn token_mlp(
    featurizer: &Featurizer,
    attack_tokens: &[&str],
    attack_weight: f32,
    bias: f32,
) -> Mlp {
    let weight = featurizer
        .vocabulary()
        .iter()
        .map(|t| {
            if attack_tokens.contains(&t.as_str()) {
                attack_weight
            } else {
                0.0
            }
        })
        .collect();
    Mlp {
        layers: vec![Dense {
            in_dim: featurizer.dim(),
            out_dim: 1,
            weight,
            bias: vec![bias],
        }],
    }
}

/// Headers sent with every fixture request fitted into [`placement_fixture_featurizer`].
pub const FIXTURE_HEADERS: &[(&str, &[u8])] = &[
    ("Host", b"localhost:8080"),
    (
        "User-Agent",
        b"Mozilla/5.0 (compatible; Konqueror/3.5; Linux)",
    ),
    ("Connection", b"close"),
];

/// The fixture featurizer with the whole request read by placement
/// ([`featurizer::FeaturizerConfig::placements`]): fitted on the fixture's requests, with
/// [`FIXTURE_HEADERS`] and a form Content-Type for those with a body.
pub fn placement_fixture_featurizer() -> Result<Featurizer, FixtureError> {
    placement_fixture_featurizer_with(true)
}

/// [`placement_fixture_featurizer`] with `parts_alone` as given.
fn placement_fixture_featurizer_with(parts_alone: bool) -> Result<Featurizer, FixtureError> {
    const FORM_HEADERS: &[(&str, &[u8])] = &[
        ("Host", b"localhost:8080"),
        (
            "User-Agent",
            b"Mozilla/5.0 (compatible; Konqueror/3.5; Linux)",
        ),
        ("Content-Type", b"application/x-www-form-urlencoded"),
        ("Connection", b"close"),
    ];
    let docs = NORMAL_REQUESTS.iter().chain(ATTACK_REQUESTS).map(|r| {
        let mut p = parts(r);
        p.headers = featurizer::Headers::Pairs(if r.2.is_some() {
            FORM_HEADERS
        } else {
            FIXTURE_HEADERS
        });
        p
    });
    let config = FeaturizerConfig {
        // Every part of a shared window also scored alone: distinct padding pairs cannot
        // dilute an attack (tests/tests/placements.rs).
        placements: Some(featurizer::PlacementConfig {
            parts_alone,
            ..featurizer::PlacementConfig::default()
        }),
        ..FeaturizerConfig::default()
    };
    Ok(Featurizer::fit(config, docs)?)
}

/// [`write_fixture_bundle`] with [`placement_fixture_featurizer`] (the same hand-set model on
/// [`ATTACK_TOKENS`]).
pub fn write_placement_fixture_bundle(
    dir: &Path,
    threshold: f32,
) -> Result<Manifest, FixtureError> {
    let featurizer = placement_fixture_featurizer()?;
    write_fixture_with(
        dir,
        &featurizer,
        ATTACK_TOKENS,
        threshold,
        "placements-fixture",
    )
}

/// A bundle of the placement fixture featurizer WITHOUT `parts_alone` (windows of many parts
/// share one norm) and [`token_mlp`] (weight 12, bias −3 on [`ATTACK_TOKENS`]); with
/// `part_model`, the same token model as the bundle's model of single parts
/// (`part_model.onnx`), which pate-proxy scores on every part alone where content alone is
/// scored (`format_checks: false`).
pub fn write_part_model_fixture_bundle(
    dir: &Path,
    threshold: f32,
    part_model: bool,
) -> Result<Manifest, FixtureError> {
    let featurizer = placement_fixture_featurizer_with(false)?;
    let mlp = token_mlp(&featurizer, ATTACK_TOKENS, 12.0, -3.0);
    write_bundle(
        dir,
        &BundleContents {
            mlp: &mlp,
            featurizer: &featurizer,
            threshold,
            content_only_threshold: None,
            part_model: part_model.then_some(&mlp),
            part_model_offsets: Default::default(),
            privacy: None,
            metrics: serde_json::Value::Null,
            model_version: Some(format!("part-model-fixture-{part_model}")),
            format_checks: None,
        },
    )
    .map_err(FixtureError::from)
}

/// Writes a fixture bundle into `dir` (atomically, with the bundle crate's writer): the fixture
/// featurizer and [`token_mlp`] with weight 12 and bias −3 on [`ATTACK_TOKENS`], so a request
/// whose attack tokens carry more than a quarter of its TF-IDF mass scores above 0.5.
/// `attack_tokens` = `None` uses [`ATTACK_TOKENS`].
pub fn write_fixture_bundle(
    dir: &Path,
    attack_tokens: Option<&[&str]>,
    threshold: f32,
    model_version: &str,
) -> Result<Manifest, FixtureError> {
    let featurizer = fixture_featurizer()?;
    write_fixture_with(
        dir,
        &featurizer,
        attack_tokens.unwrap_or(ATTACK_TOKENS),
        threshold,
        model_version,
    )
}

/// Writes `featurizer` with [`token_mlp`] (weight 12, bias −3 on `attack_tokens`) as a bundle.
fn write_fixture_with(
    dir: &Path,
    featurizer: &Featurizer,
    attack_tokens: &[&str],
    threshold: f32,
    model_version: &str,
) -> Result<Manifest, FixtureError> {
    let mlp = token_mlp(featurizer, attack_tokens, 12.0, -3.0);
    write_bundle(
        dir,
        &BundleContents {
            mlp: &mlp,
            featurizer,
            threshold,
            content_only_threshold: None,
            part_model: None,
            part_model_offsets: Default::default(),
            // A fixture (weights set by code, not trained) with a typed privacy section, so the
            // dashboard labels can be checked end to end.
            privacy: Some(bundle::PublishedPrivacy {
                mechanism: privacy::Mechanism::Gnmax(privacy::aggregate::Gnmax::new(40.0)),
                delta: 1e-5,
                answered_queries: 1000,
                rng: privacy::RngProvenance::Os,
                featurizer: privacy::FeaturizerProvenance {
                    fit_on: privacy::FitSide::Public,
                    content_hash: featurizer.content_hash().to_string(),
                },
                published_epsilon: Some(8.0),
                published_epsilon_kind: privacy::report::kind::DATA_INDEPENDENT.to_string(),
            }),
            metrics: serde_json::Value::Null,
            model_version: Some(model_version.to_string()),
            format_checks: None,
        },
    )
    .map_err(FixtureError::from)
}
