//! `pate-trainer score`: scores requests with an exported bundle through ONNX Runtime, exactly as
//! `pate-proxy` does: the same function ([`bundle::score_request`]: with the featurizer's
//! `placements`, every window of the request scored and the highest score kept), the same
//! sparse-input graph as the proxy's default `scorer: onnxruntime`
//! ([`bundle::Scorer::score_request`], through [`crate::served::ServedScorer`]), the same
//! threshold rule ([`bundle::is_block`]) — so the same score and verdict for every request.
use std::io::Write;
use std::path::PathBuf;

use bundle::Bundle;
use featurizer::{Headers, RequestParts};

use crate::error::{Error, Result, UsageProblem};
use crate::served::ServedScorer;

/// Arguments of `pate-trainer score`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bundle directory (written by `pate-trainer export`).
    #[arg(long, value_name = "DIR")]
    pub bundle: PathBuf,
    /// One request target (path and query, as sent); prints one JSON object
    /// `{"score", "threshold", "verdict"}`.
    #[arg(long, conflicts_with = "input", required_unless_present = "input")]
    pub target: Option<String>,
    /// Method of the `--target` request.
    #[arg(long, default_value = "GET", requires = "target")]
    pub method: String,
    /// Body of the `--target` request (read as a form body unless the featurizer reads
    /// placements, which read it by its `Content-Type` header).
    #[arg(long, requires = "target", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Body of the `--target` request, the bytes of FILE (e.g. a multipart body with CRLFs).
    #[arg(long, value_name = "FILE", requires = "target")]
    pub body_file: Option<PathBuf>,
    /// A header of the `--target` request, `Name: value` (repeatable, in request order). Read
    /// only by a featurizer with placements; give the headers the proxy would see (e.g.
    /// `Host`, `Content-Type`, `User-Agent`) to get its score. With `Content-Encoding: gzip` or
    /// `deflate` (or `Transfer-Encoding: gzip, chunked`; the body given is the de-chunked one)
    /// the body is inflated first, as the proxy does.
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "target")]
    pub headers: Vec<String>,
    /// A dataset file; prints one JSON line per request
    /// `{"index", "line", "label", "score", "verdict"}`.
    #[arg(long, value_name = "FILE", requires = "format")]
    pub input: Option<PathBuf>,
    /// Format of `--input`: csic|fwaf|httpparams|csv|apache.
    #[arg(long)]
    pub format: Option<datasets::Format>,
    /// Give every `--input` record this label (benign|malicious), whatever the file says.
    #[arg(long, requires = "input")]
    pub label: Option<datasets::Label>,
    /// Apache format: a file with one label per log line.
    #[arg(long, requires = "input")]
    pub label_file: Option<PathBuf>,
    /// Override the bundle's threshold (with --no-format-checks: its content-only threshold).
    #[arg(long)]
    pub threshold: Option<f32>,
    /// Score without the featurizer's site format checks (`rare:*`, `unseen:path`, `odd:*`),
    /// as pate-proxy does with `format_checks: false`, at the bundle's content-only threshold
    /// where it has one (`content_only_threshold`), else at its threshold; with the bundle's
    /// part model (`part_model.onnx`), every part of the request alone too (each part's score
    /// shifted by its placement's `part_model_offsets` where the bundle has them), the highest
    /// score of windows and parts kept.
    #[arg(long)]
    pub no_format_checks: bool,
    /// Also print why each request scored what it did (`"explanation"`): the features that
    /// contributed most to its score (the model's weight × value, or integrated gradients for
    /// a network with hidden layers), each with the part of the request that carries it, and a
    /// coarse class where one is known; as pate-proxy's audit line gives them.
    #[arg(long)]
    pub explain: bool,
    /// How many features `--explain` lists.
    #[arg(long, value_name = "N", default_value_t = 5, requires = "explain")]
    pub explain_top: usize,
    /// ONNX Runtime library (default: $ORT_DYLIB_PATH, else the path set at build time).
    #[arg(long, value_name = "FILE")]
    pub onnxruntime: Option<PathBuf>,
}

/// Output of `score --target` (a struct rather than `json!` so that f32 values print in their
/// shortest f32 form, e.g. `0.51428175`, not widened to f64 digits).
#[derive(serde::Serialize)]
struct OneScore<'a> {
    score: f32,
    threshold: f32,
    verdict: &'static str,
    model_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<bundle::Explanation>,
}

/// One line of `score --input`.
#[derive(serde::Serialize)]
struct RecordScore {
    index: usize,
    line: usize,
    label: Option<datasets::Label>,
    score: f32,
    verdict: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<bundle::Explanation>,
}

fn verdict(score: f32, threshold: f32) -> &'static str {
    if bundle::is_block(score, threshold) {
        "block"
    } else {
        "allow"
    }
}

/// Runs `pate-trainer score`.
pub fn run(args: Args) -> Result<()> {
    let bundle = Bundle::load(&args.bundle)?;
    let threshold = threshold(&args, &bundle)?;
    bundle::init_onnxruntime(args.onnxruntime.as_deref())?;
    // Content alone: the bundle's model of single parts too, where it has one.
    let mut scorer = ServedScorer::new(&bundle, !args.no_format_checks)?;
    if args.explain {
        scorer = scorer.with_explanations(&bundle)?;
    }
    let mut score_one = |parts: &RequestParts| scorer.score_explained(parts, args.explain_top);

    if let Some(target) = &args.target {
        let headers = args
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>>>()?;
        let body = request_body(&args, &headers)?;
        let parts = RequestParts {
            method: &args.method,
            target: target.as_bytes(),
            body: body.as_deref(),
            headers: Headers::Owned(&headers),
            excluded_fields: Default::default(),
        };
        let (score, explanation) = score_one(&parts)?;
        let out = OneScore {
            score,
            threshold,
            verdict: verdict(score, threshold),
            model_version: &bundle.manifest.model_version,
            explanation,
        };
        println!(
            "{}",
            serde_json::to_string(&out).map_err(Error::serialize("the score"))?
        );
        return Ok(());
    }

    let (Some(input), Some(format)) = (&args.input, args.format) else {
        return Err(Error::Usage {
            command: "score",
            problem: UsageProblem::ScoreInput,
        });
    };
    let options = datasets::LoadOptions {
        label: args.label,
        label_file: args.label_file.clone(),
    };
    let records = datasets::load_with(format, input, &options)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (index, record) in records.iter().enumerate() {
        let (score, explanation) = score_one(&record.parts())?;
        let line = RecordScore {
            index,
            line: record.line,
            label: record.label,
            score,
            verdict: verdict(score, threshold),
            explanation,
        };
        let line = serde_json::to_string(&line).map_err(Error::serialize("the score"))?;
        if let Err(e) = writeln!(out, "{line}") {
            // A closed pipe (`| head`) ends the listing quietly.
            return if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(stdout_error(e))
            };
        }
    }
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(stdout_error(e)),
        _ => Ok(()),
    }
}

/// `--threshold`, else the bundle's for the mode scored; a probability.
fn threshold(args: &Args, bundle: &Bundle) -> Result<f32> {
    let threshold = args
        .threshold
        .unwrap_or(bundle.manifest.threshold_for(!args.no_format_checks));
    if !(threshold.is_finite() && (0.0..=1.0).contains(&threshold)) {
        return Err(Error::FlagValue {
            flag: "threshold",
            value: threshold.to_string(),
            problem: "is not a probability in [0, 1]",
        });
    }
    Ok(threshold)
}

/// The `--body` or `--body-file` of a `--target` request, decoded as the proxy decodes it.
fn request_body(args: &Args, headers: &[(String, Vec<u8>)]) -> Result<Option<Vec<u8>>> {
    let body = match (&args.body, &args.body_file) {
        (Some(b), _) => b.as_bytes().to_vec(),
        (None, Some(path)) => std::fs::read(path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?,
        (None, None) => return Ok(None),
    };
    Ok(Some(inflate(headers, body)?))
}

fn stdout_error(source: std::io::Error) -> Error {
    Error::Io {
        path: PathBuf::from("<stdout>"),
        source,
    }
}

/// The body as pate-proxy scores it: inflated when a `--header 'Content-Encoding: ...'` (or a
/// transfer coding before the final `chunked` in `--header 'Transfer-Encoding: ...'`; the body
/// given is the de-chunked one) says it is gzip/deflate ([`bundle::encoding`]), up to the proxy's
/// largest (and default) `body_limit_bytes`, 64 KiB; a coding the proxy refuses is an error here.
fn inflate(headers: &[(String, Vec<u8>)], body: Vec<u8>) -> Result<Vec<u8>> {
    // Every Content-Encoding and Transfer-Encoding line, in order, as the proxy reads them (a
    // second line could otherwise hide a coding).
    let lines = |name: &str| -> Vec<&[u8]> {
        headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
            .collect()
    };
    let (content, transfer) = (lines("content-encoding"), lines("transfer-encoding"));
    let shown = || {
        let mut shown: Vec<String> = Vec::new();
        for (name, values) in [
            ("Content-Encoding", &content),
            ("Transfer-Encoding", &transfer),
        ] {
            if !values.is_empty() {
                let joined = values.join(&b","[..]);
                shown.push(format!("{name}: {}", String::from_utf8_lossy(&joined)));
            }
        }
        shown.join("; ")
    };
    let coding = match bundle::encoding::applied_codings(
        content.iter().copied(),
        transfer.iter().copied(),
    ) {
        Ok(coding) => coding,
        Err(_) => {
            return Err(Error::FlagValue {
                flag: "header",
                value: shown(),
                problem: "applies chunked twice or before another coding (pate-proxy answers 400)",
            })
        }
    };
    if coding.is_empty() {
        return Ok(body);
    }
    let problem = match bundle::encoding::decode(&coding, &body, 64 * 1024, true) {
        bundle::encoding::Decoded::AsSent => return Ok(body),
        bundle::encoding::Decoded::Body(b) | bundle::encoding::Decoded::OverLimit(b) => {
            return Ok(b)
        }
        bundle::encoding::Decoded::Unsupported(_) => {
            "is a coding pate-proxy cannot inflate (it answers 415; gzip, x-gzip, deflate it can)"
        }
        bundle::encoding::Decoded::Corrupt(_) => {
            "does not match the body, which does not inflate (pate-proxy answers 400)"
        }
    };
    Err(Error::FlagValue {
        flag: "header",
        value: shown(),
        problem,
    })
}

/// `Name: value` of `--header` as the proxy passes a header to the featurizer: the name
/// lowercased (HTTP names are case-insensitive; the proxy's parser lowercases them), the value
/// with surrounding whitespace trimmed.
fn parse_header(header: &str) -> Result<(String, Vec<u8>)> {
    match header.split_once(':') {
        Some((name, value))
            if !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b)) =>
        {
            Ok((
                name.to_ascii_lowercase(),
                value.trim_matches([' ', '\t']).as_bytes().to_vec(),
            ))
        }
        _ => Err(Error::FlagValue {
            flag: "header",
            value: format!("{header:?}"),
            problem: "is not `Name: value` with a valid header name",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_header;

    #[test]
    fn headers_parse_like_the_proxy_sees_them() {
        assert_eq!(
            parse_header("User-Agent:  sqlmap/1.0 ").unwrap(),
            ("user-agent".to_string(), b"sqlmap/1.0".to_vec())
        );
        assert_eq!(
            parse_header("X-A:").unwrap(),
            ("x-a".to_string(), Vec::new())
        );
        for bad in ["no colon", ": v", "bad name: v", "a/b: v"] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }
}
