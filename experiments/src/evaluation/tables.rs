//! EVALUATION.md's tables, rendered from the runs of [`super::plan`]: each run's `report.json`,
//! the blog runs' `eval/summary.json` (bench/site/site_eval.py) and the replay's JSON results
//! (bench/placements/replay.py). Every figure is per run, in run order, so the spread and the
//! worst run show.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use trainer::config::LabelsFrom;
use trainer::metrics::Metrics;
use trainer::report::Report;

use super::plan::{recipe, Layout, Part};
use crate::error::{Error, Result};

/// Blocked / total, as the bench scripts write them (`[blocked, total]`).
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Count(pub usize, pub usize);

impl Count {
    fn share(self) -> f64 {
        if self.1 == 0 {
            0.0
        } else {
            self.0 as f64 / self.1 as f64
        }
    }
}

/// Attack and benign values of one placement.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct PlacementCounts {
    /// Attacks blocked.
    pub attack: Count,
    /// Benign values blocked.
    pub benign: Count,
}

/// Normal requests of the held-out log blocked in one mode.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Heldout {
    /// Blocked.
    pub normal_blocked: usize,
    /// Scored.
    pub normal: usize,
}

/// What the tables read of `eval/summary.json` (bench/site/site_eval.py). Modes are `format`
/// (the site's format checks on) and `content` (content only).
#[derive(Debug, Clone, Deserialize)]
pub struct SiteSummary {
    /// Mode → the held-out normal requests blocked.
    pub heldout_results: BTreeMap<String, Heldout>,
    /// Host variant → mode → blocked of the held-out normal requests sent with that Host.
    pub heldout_with_host: BTreeMap<String, BTreeMap<String, Count>>,
    /// `"HOST MODE"` → ordinary pages blocked.
    pub ordinary_blocked: BTreeMap<String, usize>,
    /// Ordinary pages per Host variant and mode.
    pub ordinary_requests: usize,
    /// Placement → mode → attacks and benign values blocked (`none`: the carriers unchanged).
    pub placements: BTreeMap<String, BTreeMap<String, PlacementCounts>>,
}

/// What the tables read of a replay's result (bench/placements/replay.py).
#[derive(Debug, Clone, Deserialize)]
pub struct ReplayResult {
    /// Placement → attacks and benign values blocked.
    pub results: BTreeMap<String, PlacementCounts>,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|_| Error::MissingResult {
        path: path.to_owned(),
    })?;
    serde_json::from_str(&text).map_err(|e| Error::ResultFile {
        path: path.to_owned(),
        problem: e.to_string(),
    })
}

/// The reports of a recipe's runs, in run order.
fn reports(layout: &Layout, part: Part, name: &str) -> Result<Vec<Report>> {
    let dirs = layout.run_dirs(recipe(part, name)?);
    dirs.iter()
        .map(|d| read_json(&d.join("report.json")))
        .collect()
}

fn site_summaries(layout: &Layout, name: &str) -> Result<Vec<SiteSummary>> {
    let dirs = layout.run_dirs(recipe(Part::Site, name)?);
    dirs.iter()
        .map(|d| read_json(&d.join("eval").join("summary.json")))
        .collect()
}

fn replays(layout: &Layout, format_checks: bool) -> Result<Vec<ReplayResult>> {
    (1..=layout.runs)
        .map(|i| read_json(&layout.replay_result(i, format_checks)))
        .collect()
}

/// `98.3`: a share as a percentage, one decimal (two below 1 %).
fn pct(v: f64) -> String {
    let p = 100.0 * v;
    if p > 0.0 && p < 1.0 {
        format!("{p:.2}")
    } else {
        format!("{p:.1}")
    }
}

/// `98.3 / 97.6 / 98.3 %`: one value per run, in run order.
fn per_run(values: &[f64]) -> String {
    let parts: Vec<String> = values.iter().map(|&v| pct(v)).collect();
    format!("{} %", parts.join(" / "))
}

/// `97.6–98.3 %`: the spread over runs.
fn spread(values: &[f64]) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        "–".into()
    } else if pct(lo) == pct(hi) {
        format!("{} %", pct(lo))
    } else {
        format!("{}–{} %", pct(lo), pct(hi))
    }
}

fn rate(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

/// The published ε of a run, `–` without a release (no teachers).
fn epsilon(reports: &[Report]) -> String {
    let eps: Vec<String> = reports
        .iter()
        .map(|r| match r.labels_from {
            LabelsFrom::AssumeBenign => "–".to_string(),
            LabelsFrom::Release => format!("{:.3}", r.data_independent_epsilon),
        })
        .collect();
    let mut distinct = eps.clone();
    distinct.dedup();
    if distinct.len() == 1 {
        distinct.remove(0)
    } else {
        eps.join(" / ")
    }
}

/// A Markdown table of figures: the first column left-aligned, the others right-aligned.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    aligned_table(header, rows, true)
}

fn aligned_table(header: &[&str], rows: &[Vec<String>], figures: bool) -> String {
    let mut out = format!("| {} |\n|---|", header.join(" | "));
    let other = if figures { "---:|" } else { "---|" };
    out.push_str(&other.repeat(header.len().saturating_sub(1)));
    out.push('\n');
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

fn runs_cell(n: usize) -> String {
    format!("{n} fresh")
}

/// The figures of one trainer recipe on its labelled test data.
struct TestFigures {
    tpr: Vec<f64>,
    fpr: Vec<f64>,
    roc_1pct: Vec<f64>,
    auc: Vec<f64>,
}

impl TestFigures {
    fn of(metrics: &[(&Metrics, Option<f64>)]) -> Self {
        TestFigures {
            tpr: metrics.iter().map(|(m, _)| rate(m.tpr)).collect(),
            fpr: metrics.iter().map(|(m, _)| rate(m.fpr)).collect(),
            roc_1pct: metrics.iter().map(|(_, r)| rate(*r)).collect(),
            auc: metrics.iter().map(|(m, _)| rate(m.roc_auc)).collect(),
        }
    }

    fn students(reports: &[Report]) -> Self {
        let m: Vec<_> = reports
            .iter()
            .map(|r| (&r.metrics, r.student_tpr_at_fpr.and_then(|t| t.fpr_0_01)))
            .collect();
        Self::of(&m)
    }

    /// The teachers' noiseless vote on the test requests (non-private).
    fn noiseless_vote(reports: &[Report]) -> Option<Self> {
        let m: Option<Vec<_>> = reports
            .iter()
            .map(|r| {
                let m = r.teacher_ensemble_metrics.as_ref()?;
                Some((m, r.teacher_ensemble_tpr_at_fpr.and_then(|t| t.fpr_0_01)))
            })
            .collect();
        m.map(|m| Self::of(&m))
    }

    fn cells(&self) -> [String; 4] {
        let auc: Vec<String> = self.auc.iter().map(|a| format!("{a:.4}")).collect();
        [
            per_run(&self.tpr),
            per_run(&self.fpr),
            per_run(&self.roc_1pct),
            auc.join(" / "),
        ]
    }
}

/// The CSIC-without-labels table (`csic-site`), with `configs/train.yaml` beside it when its
/// runs are there.
pub fn csic_site(layout: &Layout) -> Result<String> {
    let mut rows = Vec::new();
    let recipes = [
        ("pate", "**`configs/csic-site.yaml`**"),
        ("review-200", "the same, `site.review: 200`"),
        (
            "no-teachers",
            "no teachers (`student.labels_from: assume_benign`)",
        ),
        ("no-teachers-review-200", "no teachers, `site.review: 200`"),
    ];
    let mut pate = Vec::new();
    for (name, label) in recipes {
        let reports = reports(layout, Part::CsicSite, name)?;
        let labels = reports
            .first()
            .map_or(0, |r| r.student_side_labels)
            .to_string();
        let mut row = vec![label.to_string(), runs_cell(reports.len()), labels];
        row.extend(TestFigures::students(&reports).cells());
        row.push(epsilon(&reports));
        rows.push(row);
        if name == "pate" {
            pate = reports;
        }
    }
    if let Some(vote) = TestFigures::noiseless_vote(&pate) {
        let mut row = vec![
            "the teachers' noiseless vote (non-private; a sample of the test split)".to_string(),
            "the same runs".into(),
            "–".into(),
        ];
        row.extend(vote.cells());
        row.push("none".into());
        rows.push(row);
    }
    if let Ok(train) = reports(layout, Part::CsicTest, "pate") {
        let labels = train
            .first()
            .map_or(0, |r| r.splits.student_validation)
            .to_string();
        let mut row = vec![
            "`configs/train.yaml` (the labelled validation split)".to_string(),
            runs_cell(train.len()),
            labels,
        ];
        row.extend(TestFigures::students(&train).cells());
        row.push(epsilon(&train));
        rows.push(row);
    }
    Ok(table(
        &[
            "recipe",
            "runs",
            "student-side labels",
            "TPR at the threshold",
            "FPR at the threshold",
            "TPR at FPR ≤ 1 % (ROC)",
            "AUC",
            "ε",
        ],
        &rows,
    ))
}

/// The CSIC test split table (`csic-test`): `configs/train.yaml`.
pub fn csic_test(layout: &Layout) -> Result<String> {
    let reports = reports(layout, Part::CsicTest, "pate")?;
    let mut rows = Vec::new();
    let mut row = vec![
        "**`configs/train.yaml`**".to_string(),
        runs_cell(reports.len()),
    ];
    row.extend(TestFigures::students(&reports).cells());
    let novel: Vec<f64> = reports
        .iter()
        .map(|r| {
            rate(
                r.student_novel_test
                    .as_ref()
                    .and_then(|v| v.tpr_at_fpr)
                    .and_then(|t| t.fpr_0_01),
            )
        })
        .collect();
    row.push(per_run(&novel));
    row.push(epsilon(&reports));
    rows.push(row);
    if let Some(vote) = TestFigures::noiseless_vote(&reports) {
        let mut row = vec![
            "the teachers' noiseless vote (non-private; a sample of the test split)".to_string(),
            "the same runs".into(),
        ];
        row.extend(vote.cells());
        row.push("–".into());
        row.push("none".into());
        rows.push(row);
    }
    Ok(table(
        &[
            "recipe",
            "runs",
            "TPR at the threshold",
            "FPR at the threshold",
            "TPR at FPR ≤ 1 % (ROC)",
            "AUC",
            "novel requests: TPR at FPR ≤ 1 % of their ROC",
            "ε",
        ],
        &rows,
    ))
}

/// One blog run's figures (content only unless named).
struct SiteFigures {
    normal_content: f64,
    normal_format: f64,
    behind_proxy: Option<f64>,
    ordinary_blocked: usize,
    ordinary_total: usize,
    placed_mean: f64,
    worst_attack: (f64, String),
    worst_benign: (f64, String),
}

const CONTENT: &str = "content";
const BEHIND_PROXY: &str = "behind a proxy";

impl SiteFigures {
    fn of(s: &SiteSummary, path: &Path) -> Result<Self> {
        let missing = |what: &str| Error::ResultFile {
            path: path.to_owned(),
            problem: format!("no {what}"),
        };
        let heldout = |mode: &str| {
            s.heldout_results
                .get(mode)
                .map(|h| Count(h.normal_blocked, h.normal).share())
                .ok_or_else(|| missing(&format!("heldout_results.{mode}")))
        };
        let content: Vec<(&String, &PlacementCounts)> = s
            .placements
            .iter()
            .filter(|(name, _)| name.as_str() != "none")
            .filter_map(|(name, modes)| modes.get(CONTENT).map(|c| (name, c)))
            .collect();
        let share_of = |name: &str| {
            content
                .iter()
                .find(|(n, _)| n.as_str() == name)
                .map(|(_, c)| c.attack.share())
                .ok_or_else(|| missing(&format!("placements.{name}.content")))
        };
        let placed_mean = (share_of("query")? + share_of("query-new")? + share_of("path")?) / 3.0;
        let worst = |pick: fn(&PlacementCounts) -> Count, low: bool| {
            content
                .iter()
                .map(|(n, c)| (pick(c).share(), n.to_string()))
                .reduce(|a, b| if (b.0 < a.0) == low { b } else { a })
                .ok_or_else(|| missing("placements"))
        };
        let content_ordinary: Vec<usize> = s
            .ordinary_blocked
            .iter()
            .filter(|(k, _)| k.ends_with(CONTENT))
            .map(|(_, &v)| v)
            .collect();
        Ok(SiteFigures {
            normal_content: heldout(CONTENT)?,
            normal_format: heldout("format")?,
            behind_proxy: s
                .heldout_with_host
                .get(BEHIND_PROXY)
                .and_then(|m| m.get(CONTENT))
                .map(|c| c.share()),
            ordinary_blocked: content_ordinary.iter().sum(),
            ordinary_total: content_ordinary.len() * s.ordinary_requests,
            placed_mean,
            worst_attack: worst(|c| c.attack, true)?,
            worst_benign: worst(|c| c.benign, false)?,
        })
    }
}

fn named(values: &[(f64, String)]) -> String {
    let parts: Vec<String> = values
        .iter()
        .map(|(v, n)| format!("{} ({n})", pct(*v)))
        .collect();
    format!("{} %", parts.join(" / "))
}

fn site_figures(layout: &Layout, name: &str) -> Result<Vec<SiteFigures>> {
    let dirs = layout.run_dirs(recipe(Part::Site, name)?);
    let summaries = site_summaries(layout, name)?;
    summaries
        .iter()
        .zip(&dirs)
        .map(|(s, d)| SiteFigures::of(s, &d.join("eval").join("summary.json")))
        .collect()
}

/// The second site's table (`site`).
pub fn site(layout: &Layout) -> Result<String> {
    let mut rows = Vec::new();
    for (name, label) in [
        (
            "pate",
            "**`configs/site.yaml`** (CSIC's labelled logs as the teachers' private data)",
        ),
        (
            "no-teachers",
            "the same, no teachers (`student.labels_from: assume_benign`)",
        ),
    ] {
        let figures = site_figures(layout, name)?;
        let reports = reports(layout, Part::Site, name)?;
        let col = |f: fn(&SiteFigures) -> f64| figures.iter().map(f).collect::<Vec<_>>();
        let behind: Option<Vec<f64>> = figures.iter().map(|f| f.behind_proxy).collect();
        let ordinary: Vec<String> = figures
            .iter()
            .map(|f| format!("{} of {}", f.ordinary_blocked, f.ordinary_total))
            .collect();
        rows.push(vec![
            label.to_string(),
            runs_cell(figures.len()),
            format!(
                "{} ({})",
                per_run(&col(|f| f.normal_content)),
                per_run(&col(|f| f.normal_format))
            ),
            behind.map_or("–".into(), |b| per_run(&b)),
            ordinary.join(" / "),
            per_run(&col(|f| f.placed_mean)),
            named(
                &figures
                    .iter()
                    .map(|f| f.worst_attack.clone())
                    .collect::<Vec<_>>(),
            ),
            named(
                &figures
                    .iter()
                    .map(|f| f.worst_benign.clone())
                    .collect::<Vec<_>>(),
            ),
            epsilon(&reports),
        ]);
    }
    Ok(table(
        &[
            "recipe",
            "runs",
            "held-out normal requests blocked, content only (format checks on)",
            "the same with Host and a load balancer's X-Forwarded-For",
            "ordinary pages blocked (any Host)",
            "attacks placed in a query value, a new parameter, the path (mean)",
            "the placement with the fewest attacks blocked",
            "the placement with the most benign values blocked",
            "ε",
        ],
        &rows,
    ))
}

/// The generic replay's table (`replay`): every placement, each `csic-test` bundle.
pub fn replay(layout: &Layout) -> Result<String> {
    let content = replays(layout, false)?;
    let checks = replays(layout, true)?;
    let placements: Vec<&String> = content
        .first()
        .map(|r| r.results.keys().collect())
        .unwrap_or_default();
    let column = |results: &[ReplayResult], p: &str, pick: fn(&PlacementCounts) -> Count| {
        let values: Option<Vec<f64>> = results
            .iter()
            .map(|r| r.results.get(p).map(|c| pick(c).share()))
            .collect();
        values.map_or("–".into(), |v| per_run(&v))
    };
    let rows: Vec<Vec<String>> = placements
        .iter()
        .map(|p| {
            vec![
                format!("`{p}`"),
                column(&content, p, |c| c.attack),
                column(&content, p, |c| c.benign),
                column(&checks, p, |c| c.attack),
                column(&checks, p, |c| c.benign),
            ]
        })
        .collect();
    Ok(table(
        &[
            "placement",
            "attacks blocked, content only",
            "benign values blocked, content only",
            "attacks blocked, format checks on",
            "benign values blocked, format checks on",
        ],
        &rows,
    ))
}

/// The answers of the summary table, one line per question, from the same runs; the rows of
/// evaluations this command does not rerun (CRS, browsers, the non-private reference) cite
/// their reference files.
pub fn summary(layout: &Layout) -> Result<String> {
    let site = site_figures(layout, "pate")?;
    let site_reports = reports(layout, Part::Site, "pate")?;
    let site_nt = site_figures(layout, "no-teachers")?;
    let csic = TestFigures::students(&reports(layout, Part::CsicSite, "pate")?);
    let csic_eps = epsilon(&reports(layout, Part::CsicSite, "pate")?);
    let review = TestFigures::students(&reports(layout, Part::CsicSite, "review-200")?);
    let csic_nt = TestFigures::students(&reports(layout, Part::CsicSite, "no-teachers")?);
    let train_reports = reports(layout, Part::CsicTest, "pate")?;
    let train = TestFigures::students(&train_reports);
    let col = |f: fn(&SiteFigures) -> f64, figures: &[SiteFigures]| {
        figures.iter().map(f).collect::<Vec<_>>()
    };
    let worst_attack: Vec<f64> = site.iter().map(|f| f.worst_attack.0).collect();
    let worst_benign: Vec<f64> = site.iter().map(|f| f.worst_benign.0).collect();
    let ordinary: usize = site.iter().map(|f| f.ordinary_blocked).sum();
    let ordinary_total: usize = site.iter().map(|f| f.ordinary_total).sum();
    let mut rows = vec![
        vec![
            "a second real site (a blog), `configs/site.yaml` on its unlabelled log, held-out tail, content only".into(),
            format!(
                "{} of its normal requests blocked; each of its placements ≥ {} of attacks, benign values ≤ {}; ordinary pages blocked: {ordinary} of {ordinary_total}; ε {}",
                spread(&col(|f| f.normal_content, &site)),
                spread(&[worst_attack.iter().copied().fold(f64::INFINITY, f64::min)]),
                spread(&[worst_benign.iter().copied().fold(0.0, f64::max)]),
                epsilon(&site_reports),
            ),
            "[Any site, no labels](EVALUATION.md#any-site-no-labels)".into(),
        ],
        vec![
            "CSIC with no labelled data of the site (`configs/csic-site.yaml`), at the bundle's threshold".into(),
            format!(
                "{} of attacks at {} of normal requests; {} at FPR ≤ 1 % (ROC); ε {csic_eps}",
                spread(&csic.tpr),
                spread(&csic.fpr),
                spread(&csic.roc_1pct)
            ),
            "[Any site, no labels](EVALUATION.md#any-site-no-labels)".into(),
        ],
        vec![
            "the same with 200 labels (an operator's review, `site.review: 200`)".into(),
            format!("{} at {}; {} at FPR ≤ 1 % (ROC)", spread(&review.tpr), spread(&review.fpr), spread(&review.roc_1pct)),
            "[Any site, no labels](EVALUATION.md#any-site-no-labels)".into(),
        ],
        vec![
            "what the private data buys (the same recipes, no teachers)".into(),
            format!(
                "CSIC: {} at the threshold, {} at FPR ≤ 1 % (ROC); the blog: {} of normal requests blocked, worst placement {} of attacks",
                spread(&csic_nt.tpr),
                spread(&csic_nt.roc_1pct),
                spread(&col(|f| f.normal_content, &site_nt)),
                spread(&site_nt.iter().map(|f| f.worst_attack.0).collect::<Vec<_>>()),
            ),
            "[Any site, no labels](EVALUATION.md#any-site-no-labels)".into(),
        ],
        vec![
            "CSIC 2010 test split, `configs/train.yaml` (labelled validation split), at the bundle's threshold".into(),
            format!(
                "{} of attacks at {} of normal requests; {} at FPR ≤ 1 % (ROC); ε {}",
                spread(&train.tpr),
                spread(&train.fpr),
                spread(&train.roc_1pct),
                epsilon(&train_reports)
            ),
            "[CSIC test split](EVALUATION.md#csic-test-split)".into(),
        ],
    ];
    if let (Ok(content), Ok(checks)) = (replays(layout, false), replays(layout, true)) {
        rows.push(vec![
            "held-out public attacks and benign values in every placement, through pate-proxy + Apache (`configs/train.yaml` bundles)".into(),
            format!(
                "content only: attacks ≥ {}, benign values ≤ {} (the worst placement of every run); format checks on: attacks ≥ {}, benign values in headers and bodies ≤ {}",
                worst_of(&content, |c| c.attack, true, &[]),
                worst_of(&content, |c| c.benign, false, &[]),
                worst_of(&checks, |c| c.attack, true, &[]),
                worst_of(&checks, |c| c.benign, false, BY_DESIGN),
            ),
            "[Generic attacks](EVALUATION.md#generic-attacks-in-every-placement)".into(),
        ]);
    }
    rows.extend(
        REFERENCE_ROWS
            .iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect()),
    );
    Ok(aligned_table(
        &["question", "answer (over the runs)", "section"],
        &rows,
        false,
    ))
}

/// The placements where the format checks block benign values by design (a value or path the
/// site's requests never have is what CSIC labels anomalous).
const BY_DESIGN: &[&str] = &["query", "form", "path"];

/// `99.5 % (path)`: the worst placement over every run, `skip` left out.
fn worst_of(
    results: &[ReplayResult],
    pick: fn(&PlacementCounts) -> Count,
    low: bool,
    skip: &[&str],
) -> String {
    results
        .iter()
        .flat_map(|r| r.results.iter())
        .filter(|(p, _)| !skip.contains(&p.as_str()))
        .map(|(p, c)| (pick(c).share(), p.clone()))
        .reduce(|a, b| if (b.0 < a.0) == low { b } else { a })
        .map_or("–".into(), |(v, p)| format!("{} % ({p})", pct(v)))
}

/// Rows of evaluations this command does not rerun: each cites its reference file's figures.
const REFERENCE_ROWS: &[[&str; 3]] = &[
    [
        "CSIC without privacy: logistic regression on the private split's true labels (results/nonprivate-lr.txt)",
        "99.9 % at FPR ≤ 1 % (ROC)",
        "[Non-private baseline](EVALUATION.md#non-private-baseline)",
    ],
    [
        "through pate-proxy + Apache, against ModSecurity CRS, same requests (results/crs-test-split.md)",
        "98.4 % at 0.8 %; CRS PL1 29.1 % at 0.0 %, PL2 32.9 % at 0.9 %",
        "[Against ModSecurity CRS](EVALUATION.md#against-modsecurity-crs)",
    ],
    [
        "real browsers' headers on the site's normal requests (results/browsers.txt)",
        "3.0 % blocked (1.3 % as recorded)",
        "[Other replays](EVALUATION.md#other-replays)",
    ],
    [
        "a `configs/train.yaml` bundle (CSIC's labels) on another site's traffic",
        "nearly every normal request blocked: not usable there",
        "[Known limits](EVALUATION.md#known-limits)",
    ],
];

/// Every block the evaluation writes: its name and renderer.
pub type Renderer = fn(&Layout) -> Result<String>;

/// The blocks, by name (`<!-- evaluation:NAME -->` in the documents).
pub const BLOCKS: &[(&str, Renderer)] = &[
    ("summary", summary),
    ("site", site),
    ("csic-site", csic_site),
    ("csic-test", csic_test),
    ("replay", replay),
];

/// Writes each rendered block to `OUT/tables/NAME.md` and returns them; a block whose runs are
/// missing is left out with a warning naming the file.
pub fn render_all(layout: &Layout) -> Result<Vec<(&'static str, String)>> {
    let mut rendered = Vec::new();
    for (name, render) in BLOCKS {
        match render(layout) {
            Ok(text) => {
                let path: PathBuf = layout.out.join("tables").join(format!("{name}.md"));
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|source| Error::Io {
                        path: parent.to_owned(),
                        source,
                    })?;
                }
                atomic_write::write_atomic(&path, text.as_bytes())
                    .map_err(|source| Error::Io { path, source })?;
                rendered.push((*name, text));
            }
            Err(Error::MissingResult { path }) => {
                tracing::warn!(
                    "evaluation: table {name} left as it is: {} is missing",
                    path.display()
                );
            }
            Err(e) => return Err(e),
        }
    }
    Ok(rendered)
}
