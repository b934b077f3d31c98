//! Scores one CSIC request in a loop, for counting instructions per request with callgrind
//! (deterministic, unlike timings on a shared machine): `cargo run --release -p proxy --example
//! score_loop -- BUNDLE typical|long checks|content [CALLS]`, e.g. under
//! `valgrind --tool=callgrind --toggle-collect='proxy::model::ServingModel::score_at*'`, then
//! divide the total by CALLS. The request is the benchmark's (`proxy/benches/score.rs`): the
//! typical (median length of those with a query or body) or the longest of the live half of
//! CSIC 2010's test files (the full files under `../shared/datasets/csic2010` when present,
//! `data/sample` otherwise), with its headers; the bundle is loaded as pate-proxy loads it
//! (`scorer: auto`).

use std::path::PathBuf;
use std::process::ExitCode;

use datasets::Record;
use proxy::model::ServingModel;
use test_support::csic_requests;

/// The benchmark's typical or long request.
fn request(which: &str) -> Option<Record> {
    let records = csic_requests::csic_records();
    let [typical, long] = csic_requests::typical_and_long(&csic_requests::live(&records))?;
    match which {
        "typical" => Some(typical.1),
        "long" => Some(long.1),
        _ => None,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: score_loop BUNDLE typical|long checks|content [CALLS]";
    let (Some(dir), Some(which), Some(mode)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let calls: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(300);
    let checks = mode == "checks";
    let Some(record) = request(which) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    if let Err(e) = bundle::init_onnxruntime(None) {
        eprintln!("ONNX Runtime: {e}");
        return ExitCode::FAILURE;
    }
    let model = match ServingModel::load(&PathBuf::from(dir), None, 1) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{dir}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let req = record.parts();
    let mut last = 0.0f32;
    for _ in 0..calls {
        match model.score_checked(std::hint::black_box(&req), checks) {
            Ok(scored) => last = scored.score,
            Err(e) => {
                eprintln!("score: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "{which} {} ({} bytes, {} headers), {mode}: {calls} calls, score {last}",
        record.method,
        record.target.len() + record.body.as_ref().map_or(0, Vec::len),
        record.headers.len()
    );
    ExitCode::SUCCESS
}
