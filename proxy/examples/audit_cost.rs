//! Times, per request of a target list (one path+query a line, bench/proxy.sh's mix), what
//! detect mode does for it in process: `score_at` (featurize + score) for every request, and for
//! flagged ones `worst_placement`, `explain` and the audit line's serialization.
//! `cargo run --release -p proxy --example audit_cost -- BUNDLE TARGETS [ROUNDS]`
#![allow(missing_docs)]
use std::path::PathBuf;
use std::time::Instant;

use featurizer::{Headers, RequestParts};
use proxy::model::ServingModel;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20);
    bundle::init_onnxruntime(None).unwrap();
    let model = ServingModel::load(&PathBuf::from(&args[0]), None, 1).unwrap();
    let targets: Vec<Vec<u8>> = std::fs::read(&args[1])
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    let host: &[u8] = b"127.0.0.1:18283";
    let pairs: Vec<(&str, &[u8])> = vec![("host", host)];
    let (mut t_score, mut t_place, mut t_explain, mut t_json) = (0.0, 0.0, 0.0, 0.0);
    let (mut n, mut flagged) = (0usize, 0usize);
    for _ in 0..rounds {
        for t in &targets {
            let req = RequestParts {
                method: "GET",
                target: t,
                body: None,
                headers: Headers::Pairs(&pairs),
                excluded_fields: Default::default(),
            };
            let a = Instant::now();
            let scored = model.score_at(&req, true, None).unwrap();
            let b = Instant::now();
            t_score += (b - a).as_secs_f64();
            n += 1;
            if !scored.malicious {
                continue;
            }
            flagged += 1;
            let p = model.worst_placement_of(&req, true, scored.segments.as_ref());
            let c = Instant::now();
            let e = model.explain(&req, &scored, true, 5).unwrap();
            let d = Instant::now();
            let line = serde_json::to_vec(&(&e, p.as_str())).unwrap();
            std::hint::black_box(line);
            let f = Instant::now();
            t_place += (c - b).as_secs_f64();
            t_explain += (d - c).as_secs_f64();
            t_json += (f - d).as_secs_f64();
        }
    }
    let us = |t: f64, k: usize| t / k as f64 * 1e6;
    println!(
        "{n} requests, {flagged} flagged; per request: score {:.2} µs; per flagged: worst_placement {:.2} µs, explain {:.2} µs, json {:.2} µs",
        us(t_score, n),
        us(t_place, flagged),
        us(t_explain, flagged),
        us(t_json, flagged)
    );
}
