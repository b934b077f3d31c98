//! `pate-experiments sweep` on the in-repo sample (data/sample) with a tiny grid: it writes its
//! tables and plots, and a rerun recomputes nothing (one deleted result is recomputed alone).
use std::path::{Path, PathBuf};

use experiments::sweep::config::{SplitName, SweepConfig};
use experiments::sweep::report::{self, ResultRow};
use experiments::sweep::{run_sweep, run_sweep_with};
use trainer::report::Report;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn write_configs(dir: &Path) -> PathBuf {
    let sample = repo().join("data/sample");
    let shared = repo().join("../shared/datasets");
    let base = format!(
        "seed: 7\nthreads: 1\ndevice: cpu\n\
split:\n\
\x20 simulate_from:\n\
\x20 - {{path: {s}/csic_normalTrafficTraining_sample.txt, format: csic, label: benign}}\n\
\x20 - {{path: {s}/csic_normalTrafficTest_A_sample.txt, format: csic, label: benign}}\n\
\x20 - {{path: {s}/csic_anomalousTrafficTest_A_sample.txt, format: csic, label: malicious}}\n\
\x20 private: 0.55\n\x20 public: 0.2\n\x20 validation: 0.1\n\x20 test: 0.15\n\
featurizer: {{config: {{top_k: 200, char_ngrams: null, sublinear_tf: false, params: false, rarity_min_count: null, odd_permille: [], odd_shape_path: false, odd_name_variants: false, norm: l1, placements: null, libinjection: false, signatures: false}}}}\n\
teachers:\n  count: 5\n  holdout_fraction: 0.2\n  tamperings: 0\n  training: {{hidden: [16], optimizer: adam, l1: 0, member_threshold: youden, max_epochs: 5, batch_size: 64, learning_rate: 0.01, patience: 2, class_balance: pos_weight}}\n\
student:\n  queries: 60\n  validation_max: 100\n  query_selection: distinct\n  threshold_rule: youden\n  multiplicity_cap: null\n  validation_labels: false\n  training: {{hidden: [16], optimizer: adam, l1: 0, max_epochs: 10, batch_size: 32, learning_rate: 0.01, patience: 3, class_balance: pos_weight}}\n\
privacy: {{mechanism: lnmax, gamma: 0.3, delta: 1.0e-5}}\n\
aggregation: {{malicious_vote_share: 0.5}}\n\
evaluation: {{ensemble_max: 300}}\n",
        s = sample.display()
    );
    std::fs::write(dir.join("base.yaml"), base).unwrap();
    let sweep = format!(
        r#"base: base.yaml
seed: 11
jobs: 2
experiments:
  - {{name: grid, kind: pate, teachers: [4, 5], rho: [null, 1.0], mechanisms: [{{kind: lnmax, gamma: 0.3}}], repeats: 2, epsilon_curve: [20, 60]}}
  - {{name: mechanisms, kind: pate, teachers: [5], mechanisms: [{{kind: lnmax, gamma: 0.3}}, {{kind: gnmax, sigma: matched}}, {{kind: confident_gnmax, threshold_share: 0.6, sigma1: 3, sigma2: matched}}], repeats: 1}}
  - {{name: curve, kind: pate, teachers: [5], queries: [20, 60], mechanisms: [{{kind: lnmax, gamma: 0.3}}], repeats: 1}}
  - {{name: baselines, kind: baselines, teachers: [5], repeats: 1}}
  - name: cross
    kind: pate
    teachers: [5]
    repeats: 1
    mechanisms: [{{kind: lnmax, gamma: 0.3}}]
    datasets:
      - {{path: {s}/csic_normalTrafficTraining_sample.txt, format: csic, label: benign}}
      - {{path: {s}/csic_anomalousTrafficTest_A_sample.txt, format: csic, label: malicious, splits: [public, student_validation, test]}}
      - {{path: {f}/fwaf/badqueries.txt, format: fwaf, label: malicious, limit: 1500, splits: [private]}}
"#,
        s = sample.display(),
        f = shared.display()
    );
    let path = dir.join("sweep.yaml");
    std::fs::write(&path, sweep).unwrap();
    path
}

/// The files below `dir` that `keep` accepts, sorted.
fn files_below(dir: &Path, keep: fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn result_files(dir: &Path) -> Vec<PathBuf> {
    files_below(dir, |p| p.extension().is_some_and(|x| x == "json"))
}

/// The plots of the sweep of `write_configs` in `dir`: SVG and PNG.
fn assert_plots(dir: &Path) {
    for plot in [
        "grid-t4-tpr.svg",
        "grid-t5-tnr.svg",
        "grid-t5-epsilon.svg",
        "grid-epsilon-vs-queries.svg",
        "curve-t5-accuracy-vs-queries.svg",
        "baselines-tall-tpr.svg",
    ] {
        let svg = std::fs::read_to_string(dir.join(plot)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.ends_with("</svg>\n"),
            "{plot}"
        );
        let png = std::fs::read(dir.join(plot).with_extension("png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{plot}");
    }
}

#[test]
fn sweep_writes_tables_and_resumes_without_recomputing() {
    let tmp = tempfile::tempdir().unwrap();
    let (config, base) = SweepConfig::load(&write_configs(tmp.path())).unwrap();
    let out = tmp.path().join("out");
    // grid 2 teacher counts × 2 ρ × 2 repeats = 8; mechanisms 3; curve 2; baselines 1 + 1 + 1;
    // cross 1.
    let expected = 8 + 3 + 2 + 3 + 1;
    let first = run_sweep(&config, &base, &out, config.jobs).unwrap();
    assert_eq!((first.computed, first.reused), (expected, 0));

    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(results.lines().count(), 1 + expected, "{results}");
    // Every noisy aggregation is in the ledger beside the teachers it used: the 14 PATE students
    // (baselines aggregate without noise and spend nothing private).
    let ledgers = files_below(&out.join("work"), |p| {
        p.file_name().is_some_and(|n| n == "ledger.jsonl")
    });
    let entries: usize = ledgers
        .iter()
        .map(|l| privacy::ledger::read(l).unwrap().len())
        .sum();
    assert_eq!(entries, 8 + 3 + 2 + 1, "{ledgers:?}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    // grid 4 cells, mechanisms 3, curve 2, baselines 3, cross 1.
    assert_eq!(summary.lines().count(), 1 + 13, "{summary}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for e in [
        "### grid",
        "### mechanisms",
        "### curve",
        "### baselines",
        "### cross",
        "data-dependent",
    ] {
        assert!(md.contains(e), "summary.md lacks {e}");
    }
    // Matched mechanisms: GNMax has the LNMax reference's data-independent ε; Confident-GNMax
    // was matched with every query charged, and is charged only for those it answered.
    let di: Vec<f64> = result_files(&out.join("cells/mechanisms"))
        .iter()
        .map(|p| {
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
            v["data_independent_epsilon"].as_f64().unwrap()
        })
        .collect();
    // Sorted paths: cgnmax, gnmax, lnmax.
    assert_eq!(di.len(), 3);
    assert!(
        (di[1] - di[2]).abs() < 1e-3 && di[0] <= di[2] + 1e-3,
        "{di:?}"
    );
    // The split table: the cross-dataset teachers never see CSIC anomalous requests, and its
    // test split is the same CSIC requests' test split as the base data's.
    let splits = std::fs::read_to_string(out.join("splits.csv")).unwrap();
    let row = |data: &str, split: &str| -> Vec<u64> {
        let l = splits
            .lines()
            .find(|l| l.starts_with(&format!("{data},{split},")))
            .unwrap();
        l.split(',').skip(2).map(|v| v.parse().unwrap()).collect()
    };
    assert_eq!(row("cross", "test")[1], row("base", "test")[1]);
    assert!(row("cross", "private")[1] > 0 && row("cross", "private")[1] <= 1500);
    assert_plots(&out.join("plots"));

    // Rerun: nothing recomputed, no result rewritten.
    let cells = out.join("cells");
    let before: Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> = result_files(&cells)
        .into_iter()
        .map(|p| {
            (
                p.clone(),
                std::fs::read(&p).unwrap(),
                std::fs::metadata(&p).unwrap().modified().unwrap(),
            )
        })
        .collect();
    assert_eq!(before.len(), expected);
    let second = run_sweep(&config, &base, &out, config.jobs).unwrap();
    assert_eq!((second.computed, second.reused), (0, expected));
    for (p, bytes, mtime) in &before {
        assert_eq!(&std::fs::read(p).unwrap(), bytes);
        assert_eq!(&std::fs::metadata(p).unwrap().modified().unwrap(), mtime);
    }
    assert_eq!(
        std::fs::read_to_string(out.join("results.csv")).unwrap(),
        results
    );

    // One result lost: --report-only tables leave it out and compute nothing; a run computes
    // only it again.
    std::fs::remove_file(&before[0].0).unwrap();
    let report = run_sweep_with(&config, &base, &out, 1, true).unwrap();
    assert_eq!((report.computed, report.reused), (0, expected - 1));
    assert_eq!(
        std::fs::read_to_string(out.join("results.csv"))
            .unwrap()
            .lines()
            .count(),
        expected
    );
    assert!(!before[0].0.exists());
    let third = run_sweep(&config, &base, &out, 1).unwrap();
    assert_eq!((third.computed, third.reused), (1, expected - 1));
    assert!(before[0].0.exists());
}

#[test]
fn bad_sweep_files_are_rejected_with_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    write_configs(tmp.path());
    let path = tmp.path().join("bad.yaml");
    std::fs::write(&path, "base: base.yaml\nexperiments:\n  - {name: g, kind: pate, teachers: [5], repeats: 1, mechanisms: [{kind: lnmax, gamma: 0.3}], rhoo: [1]}\n").unwrap();
    let e = SweepConfig::load(&path).unwrap_err().to_string();
    assert!(e.contains("rhoo") && e.contains("bad.yaml"), "{e}");
    std::fs::write(&path, "base: base.yaml\nexperiments:\n  - {name: g, kind: pate, teachers: [5], repeats: 0, mechanisms: [{kind: lnmax, gamma: 0.3}]}\n").unwrap();
    let e = SweepConfig::load(&path).unwrap_err().to_string();
    assert!(e.contains("repeats"), "{e}");
    std::fs::write(&path, "base: missing.yaml\nexperiments: []\n").unwrap();
    let e = SweepConfig::load(&path).unwrap_err().to_string();
    assert!(e.contains("missing.yaml"), "{e}");
    // More queries than the sample's public split holds: a clear error, no result written.
    std::fs::write(&path, "base: base.yaml\nexperiments:\n  - {name: g, kind: pate, teachers: [5], queries: [100000], repeats: 1, mechanisms: [{kind: lnmax, gamma: 0.3}]}\n").unwrap();
    let (config, base) = SweepConfig::load(&path).unwrap();
    let out = tmp.path().join("out");
    let e = run_sweep(&config, &base, &out, 1).unwrap_err().to_string();
    assert!(e.contains("100000") && e.contains("distinct"), "{e}");
    assert!(!out.join("cells").exists());
    // GNMax's head on a base config that does not ask the most frequent requests first: refused
    // before anything trains, naming the cell and the key (as `run` refuses that config).
    std::fs::write(&path, "base: base.yaml\nexperiments:\n  - {name: g, kind: pate, teachers: [5], repeats: 1, mechanisms: [{kind: gnmax, sigma: 3, head: {queries: 5, sigma: 2}}]}\n").unwrap();
    let (config, base) = SweepConfig::load(&path).unwrap();
    let e = run_sweep(&config, &base, &out, 1).unwrap_err().to_string();
    assert!(
        e.contains("gnmax-s3-head5_s2") && e.contains("privacy.head.queries"),
        "{e}"
    );
    assert!(!out.join("cells").exists());
    std::fs::write(&path, "base: base.yaml\nexperiments:\n  - {name: g, kind: pate, teachers: [5], repeats: 1, mechanisms: [{kind: gnmax, sigma: 3, head: {queries: 0, sigma: 2}}]}\n").unwrap();
    let e = SweepConfig::load(&path).unwrap_err().to_string();
    assert!(e.contains("mechanisms[0]"), "{e}");
}

/// An experiment's dataset is `pate-trainer run`'s dataset keys plus `splits`, read and written as
/// one flat map: `splits` may be given or left out; any other key is refused, naming it and the
/// keys there are.
#[test]
fn sweep_datasets_are_run_datasets_plus_splits() {
    let tmp = tempfile::tempdir().unwrap();
    write_configs(tmp.path());
    let path = tmp.path().join("datasets.yaml");
    let load = |dataset: &str| {
        let sweep = format!("base: base.yaml\nexperiments:\n  - {{name: c, kind: pate, teachers: [5], repeats: 1, mechanisms: [{{kind: lnmax, gamma: 0.3}}], datasets: [{dataset}]}}\n");
        std::fs::write(&path, sweep).unwrap();
        SweepConfig::load(&path).map(|(c, _)| c.experiments[0].datasets.clone().unwrap())
    };
    let file = serde_json::to_string(&tmp.path().join("a.txt")).unwrap();
    let d =
        load("{path: a.txt, format: csic, label: malicious, limit: 10, splits: [private, test]}")
            .unwrap();
    assert_eq!(d[0].splits, Some(vec![SplitName::Private, SplitName::Test]));
    assert_eq!(
        serde_json::to_string(&d).unwrap(),
        format!(
            r#"[{{"path":{file},"format":"csic","label":"malicious","limit":10,"splits":["private","test"]}}]"#
        )
    );
    let d = load("{path: a.txt, format: csic}").unwrap();
    assert_eq!(d[0].splits, None);
    assert_eq!(
        serde_json::to_string(&d).unwrap(),
        format!(r#"[{{"path":{file},"format":"csic","label":null,"limit":null,"splits":null}}]"#)
    );
    for (dataset, key) in [
        ("{path: a.txt, format: csic, splitz: [test]}", "splitz"),
        (
            "{path: a.txt, splits: [test], format: csic, bogus: 1}",
            "bogus",
        ),
    ] {
        let e = load(dataset).unwrap_err().to_string();
        assert!(
            e.contains(&format!("unknown field `{key}`, expected one of `path`, `format`, `label`, `limit`, `splits`"))
                && e.contains("datasets.yaml"),
            "{e}"
        );
    }
    let e = load("{path: a.txt, format: csic, splits: [test], splits: [public]}").unwrap_err();
    assert!(e.to_string().contains("duplicate field `splits`"), "{e}");
    let e = load("{format: csic, splits: [test]}").unwrap_err();
    assert!(e.to_string().contains("missing field `path`"), "{e}");
}

/// A sweep cell is `pate-trainer run` of the base config with the cell's settings: the first
/// repeat of a cell and `run` with the sweep's seed produce the same aggregated labels (answered
/// count, agreement, ε) and the same student (threshold, test metrics), with `run` options the
/// sweep used to ignore (query selection, traffic weights, threshold rule, vote share) set.
#[test]
fn a_sweep_cell_is_a_run_with_the_same_config_and_seed() {
    let dir = tempfile::tempdir().unwrap();
    write_configs(dir.path());
    let base = dir.path().join("base.yaml");
    let text = std::fs::read_to_string(&base)
        .unwrap()
        .replace(
            "  query_selection: distinct\n",
            "  query_selection: head\n  head_share: 0.5\n",
        )
        .replace("  multiplicity_cap: null\n", "  multiplicity_cap: 20\n")
        .replace(
            "  threshold_rule: youden\n",
            "  threshold_rule: answered_benign\n  target_fpr: 0.05\n",
        );
    // GNMax with a head: the cell must answer (and charge) its first queries at the head's σ.
    let text = text.replace(
        "privacy: {mechanism: lnmax, gamma: 0.3, delta: 1.0e-5}",
        "privacy: {mechanism: gnmax, sigma: 3, head: {queries: 5, sigma: 2}, delta: 1.0e-5}",
    );
    let text = text.replace("seed: 7", "seed: 11").replace(
        "aggregation: {malicious_vote_share: 0.5}",
        "aggregation: {malicious_vote_share: 0.4}",
    );
    std::fs::write(&base, text).unwrap();
    let sweep = dir.path().join("one.yaml");
    std::fs::write(
        &sweep,
        "base: base.yaml\nseed: 11\njobs: 1\nexperiments:\n  - {name: one, kind: pate, teachers: [5], mechanisms: [{kind: gnmax, sigma: 3, head: {queries: 5, sigma: 2}}], repeats: 1}\n",
    )
    .unwrap();
    let (config, base_config) = SweepConfig::load(&sweep).unwrap();
    let out = dir.path().join("sweep");
    run_sweep(&config, &base_config, &out, 1).unwrap();
    let cell = result_files(&out.join("cells/one"));
    assert_eq!(cell.len(), 1, "{cell:?}");
    let cell: ResultRow = serde_json::from_slice(&std::fs::read(&cell[0]).unwrap()).unwrap();

    // `pate-trainer run` of the base config: the stages it calls, in the library.
    let run_dir = dir.path().join("run");
    let run_config = trainer::config::RunConfig::load(&base).unwrap();
    trainer::stages::run(
        &run_config,
        &trainer::rundir::RunDir::new(&run_dir),
        std::time::Instant::now(),
    )
    .unwrap();
    let report: Report = trainer::report::read(&run_dir.join("report.json")).unwrap();
    assert!(
        format!("{:?}", report.mechanism_parameters).contains("head: Some"),
        "{:?}",
        report.mechanism_parameters
    );
    assert_eq!(cell.answered, Some(report.answered), "answered");
    let pairs = [
        (
            "label_agreement",
            cell.label_agreement,
            report.aggregated_label_agreement,
        ),
        (
            "data_dependent_epsilon",
            cell.data_dependent_epsilon,
            Some(report.data_dependent_epsilon),
        ),
        (
            "data_independent_epsilon",
            cell.data_independent_epsilon,
            Some(report.data_independent_epsilon),
        ),
        ("tpr", cell.tpr, report.metrics.tpr),
        ("tnr", cell.tnr, report.metrics.tnr),
        ("auc", cell.auc, report.metrics.roc_auc),
        (
            "tpr_distinct",
            cell.tpr_distinct,
            report.student_distinct_test.metrics.tpr,
        ),
    ];
    for (key, got, expected) in pairs {
        assert!(expected.is_some(), "report lacks {key}: {report:?}");
        assert_eq!(got, expected, "{key}: sweep cell {cell:?}");
    }
    assert_eq!(cell.threshold, Some(report.threshold));
    // The cell's teachers are `run`'s teachers: same shards, same seed, same files.
    let teachers = out.join("work");
    let sweep_teacher = std::fs::read_dir(&teachers)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("teachers-5/teacher-00000.safetensors");
    let run_teacher = run_dir.join("teachers/teacher-00000.safetensors");
    let weights = |p: &Path| trainer::model_file::ModelFile::load(p).unwrap().weights;
    assert_eq!(weights(&sweep_teacher), weights(&run_teacher));
}

/// results.csv and summary.csv of fixed cell results (as `cells/*.json` holds them): the columns
/// and their formatting are pinned (other tools read these files), and a cell file reads and
/// writes back unchanged.
#[test]
fn result_tables_of_fixed_cells() {
    const CELLS: &str = r#"[
{"experiment":"grid","cell":"grid-t5-q60-rnone-lnmax-g0.3","data":"base","model":"pate-student","teachers":5,"queries":60,"rho":null,"local_epsilon":null,"mechanism":"lnmax-g0.3","mechanism_parameters":"γ = 0.3, \"x\"","repeat":0,"answered":60,"label_agreement":0.95,"data_independent_epsilon":12.5,"data_dependent_epsilon":3.25,"tpr":0.9,"tnr":0.8,"fpr":0.2,"auc":0.93,"tpr_at_1pct_fpr":0.4,"tpr_distinct":0.85,"tnr_distinct":0.75,"threshold":0.5,"test_samples":300,"seconds":1.25,"rng":{"rng":"seeded","seed":11},"epsilon_curve":[{"queries":20,"answered":20,"data_independent":4.0,"data_dependent":1.0}]},
{"experiment":"grid","cell":"grid-t5-q60-rnone-lnmax-g0.3","data":"base","model":"pate-student","teachers":5,"queries":60,"rho":1.0,"local_epsilon":2.0,"mechanism":"lnmax-g0.3","mechanism_parameters":"γ = 0.3, \"x\"","repeat":1,"answered":58,"label_agreement":0.9,"data_independent_epsilon":12.5,"data_dependent_epsilon":3.5,"tpr":0.7,"tnr":0.9,"fpr":0.1,"auc":0.9,"tpr_at_1pct_fpr":0.3,"tpr_distinct":0.65,"tnr_distinct":0.95,"threshold":0.45,"test_samples":300,"seconds":2.0,"rng":{"rng":"os"},"epsilon_curve":[]},
{"experiment":"baselines","cell":"baselines-non-private","data":"base","model":"non-private","teachers":null,"queries":null,"rho":null,"local_epsilon":null,"mechanism":"none (labels known)","mechanism_parameters":"900 private requests, batch 256","repeat":0,"answered":null,"label_agreement":null,"data_independent_epsilon":null,"data_dependent_epsilon":null,"tpr":0.99,"tnr":0.98,"fpr":0.02,"auc":0.999,"tpr_at_1pct_fpr":0.9,"tpr_distinct":null,"tnr_distinct":null,"threshold":0.61234,"test_samples":300,"seconds":10.0,"rng":{"rng":"os"},"epsilon_curve":[]}
]"#;
    let rows: Vec<ResultRow> = serde_json::from_str(CELLS).unwrap();
    assert_eq!(
        serde_json::to_string(&rows).unwrap(),
        CELLS.replace('\n', "")
    );
    assert_eq!(
        report::results_csv(&rows),
        r#"experiment,cell,data,model,teachers,queries,rho,local_epsilon,mechanism,mechanism_parameters,repeat,answered,label_agreement,data_independent_epsilon,data_dependent_epsilon,tpr,tnr,fpr,auc,tpr_at_1pct_fpr,tpr_distinct,tnr_distinct,threshold,test_samples,seconds
grid,grid-t5-q60-rnone-lnmax-g0.3,base,pate-student,5,60,,,lnmax-g0.3,"γ = 0.3, ""x""",0,60,0.9500,12.5000,3.2500,0.9000,0.8000,0.2000,0.9300,0.4000,0.8500,0.7500,0.50000,300,1.2
grid,grid-t5-q60-rnone-lnmax-g0.3,base,pate-student,5,60,1,2,lnmax-g0.3,"γ = 0.3, ""x""",1,58,0.9000,12.5000,3.5000,0.7000,0.9000,0.1000,0.9000,0.3000,0.6500,0.9500,0.45000,300,2.0
baselines,baselines-non-private,base,non-private,,,,,none (labels known),"900 private requests, batch 256",0,,,,,0.9900,0.9800,0.0200,0.9990,0.9000,,,0.61234,300,10.0
"#
    );
    assert_eq!(
        report::summary_csv(&report::summarize(&rows)),
        r#"experiment,cell,data,model,teachers,queries,rho,local_epsilon,mechanism,mechanism_parameters,students,tpr_median,tpr_q1,tpr_q3,tnr_median,tnr_q1,tnr_q3,auc_median,auc_q1,auc_q3,tpr_at_1pct_fpr_median,tpr_at_1pct_fpr_q1,tpr_at_1pct_fpr_q3,tpr_distinct_median,tpr_distinct_q1,tpr_distinct_q3,tnr_distinct_median,tnr_distinct_q1,tnr_distinct_q3,answered_median,answered_q1,answered_q3,data_independent_epsilon_median,data_independent_epsilon_q1,data_independent_epsilon_q3,data_dependent_epsilon_median,data_dependent_epsilon_q1,data_dependent_epsilon_q3
grid,grid-t5-q60-rnone-lnmax-g0.3,base,pate-student,5,60,,,lnmax-g0.3,"γ = 0.3, ""x""",2,0.8000,0.7500,0.8500,0.8500,0.8250,0.8750,0.9150,0.9075,0.9225,0.3500,0.3250,0.3750,0.7500,0.7000,0.8000,0.8500,0.8000,0.9000,59.0000,58.5000,59.5000,12.5000,12.5000,12.5000,3.3750,3.3125,3.4375
baselines,baselines-non-private,base,non-private,,,,,none (labels known),"900 private requests, batch 256",1,0.9900,0.9900,0.9900,0.9800,0.9800,0.9800,0.9990,0.9990,0.9990,0.9000,0.9000,0.9000,,,,,,,,,,,,,,,
"#
    );
}

/// The committed sweep file and its base config load.
#[test]
fn the_committed_sweep_config_loads() {
    let path = repo().join("configs/sweep.yaml");
    if let Err(e) = SweepConfig::load(&path) {
        panic!("{}: {e}", path.display());
    }
}

/// A split table written before the split's third share was renamed `validation` (its old name,
/// `student_validation`, in `fractions` and in a row) still reads: `--report-only` rebuilds
/// splits.csv/.md from the `splits/*.json` of an earlier sweep's output. The fixture is the
/// `base` table such a sweep wrote (`results/sweep/splits/base.json` at 868f4b0).
#[test]
fn a_split_table_of_an_earlier_sweep_reads() {
    const OLD_TABLE: &str = r#"{
  "data": "base",
  "files": [
    {"format": "csic", "label": "benign", "limit": null, "splits": null,
     "path": "configs/../../shared/datasets/csic2010/normalTrafficTraining.txt"},
    {"format": "csic", "label": "benign", "limit": null, "splits": null,
     "path": "configs/../../shared/datasets/csic2010/normalTrafficTest_A.txt"},
    {"format": "csic", "label": "malicious", "limit": null, "splits": null,
     "path": "configs/../../shared/datasets/csic2010/anomalousTrafficTest_A.txt"}
  ],
  "fractions": {"private": 0.6, "public": 0.15, "student_validation": 0.05, "test": 0.2},
  "splits": [
    {"benign": 31443, "distinct_benign": 8403, "distinct_malicious": 4811, "malicious": 7702, "split": "private"},
    {"benign": 4330, "distinct_benign": 2214, "distinct_malicious": 1199, "malicious": 1564, "split": "public"},
    {"benign": 2758, "distinct_benign": 712, "distinct_malicious": 415, "malicious": 673, "split": "student_validation"},
    {"benign": 17902, "distinct_benign": 2770, "distinct_malicious": 1592, "malicious": 2910, "split": "test"}
  ]
}"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("base.json");
    std::fs::write(&path, OLD_TABLE).unwrap();
    let table: experiments::sweep::report::SplitTable =
        trainer::report::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let f = table.fractions;
    assert!((f.validation - 0.05).abs() < 1e-12, "{f:?}");
    assert!(
        (f.private + f.public + f.validation + f.test - 1.0).abs() < 1e-9,
        "{f:?}"
    );
    assert_eq!(table.files.len(), 3);
    assert_eq!(table.splits.len(), 4);
    assert_eq!(table.splits[2].benign, 2758);
}
