//! The sweep's tables (results.csv, summary.csv, summary.md) and plots (hand-written SVG in the
//! style of `metrics::roc_svg`: no plotting dependency).
use serde::{Deserialize, Serialize};

/// ε accounted after the first `queries` queries of a student.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpsilonPoint {
    /// Queries asked so far.
    pub queries: usize,
    /// Of which answered (Confident-GNMax may decline).
    pub answered: usize,
    /// Data-independent ε after them.
    pub data_independent: f64,
    /// Data-dependent ε after them (not private to publish).
    pub data_dependent: f64,
}

/// One trained model's result (one line of results.csv; one JSON file per result under
/// `cells/`, which is what makes the sweep resumable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// The experiment's name.
    pub experiment: String,
    /// The cell id (unique across the sweep).
    pub cell: String,
    /// The data the teachers saw: `base` or the experiment's own datasets.
    pub data: String,
    /// `pate-student`, `teacher-ensemble`, `majority-vote-student` or `non-private`.
    pub model: String,
    /// Teacher count (none for the non-private model).
    pub teachers: Option<usize>,
    /// Student queries asked.
    pub queries: Option<usize>,
    /// Student-side noise ρ (Lap(1/ρ) per feature).
    pub rho: Option<f64>,
    /// The privatizer's local ε = 2ρ per query (Yovine et al. 2021; `privacy::privatize`).
    pub local_epsilon: Option<f64>,
    /// Aggregation mechanism label.
    pub mechanism: String,
    /// Its effective parameters (matched σ solved, T in votes).
    pub mechanism_parameters: String,
    /// Which student of the cell (0-based).
    pub repeat: usize,
    /// Queries answered (the student's training set size).
    pub answered: Option<usize>,
    /// Share of answered queries whose aggregated label equals the true label (diagnostic).
    pub label_agreement: Option<f64>,
    /// Data-independent ε of the aggregation (δ of the base config).
    pub data_independent_epsilon: Option<f64>,
    /// Data-dependent ε (a function of the private votes: not private to publish).
    pub data_dependent_epsilon: Option<f64>,
    /// TPR on the test split at the model's threshold.
    pub tpr: Option<f64>,
    /// TNR on the test split.
    pub tnr: Option<f64>,
    /// FPR on the test split.
    pub fpr: Option<f64>,
    /// ROC AUC on the test split.
    pub auc: Option<f64>,
    /// Highest TPR on the test ROC curve at FPR ≤ 1%.
    pub tpr_at_1pct_fpr: Option<f64>,
    /// TPR over the DISTINCT test requests (each request once: CSIC repeats a few requests
    /// hundreds of times, which dominate the traffic-weighted rates).
    #[serde(default)]
    pub tpr_distinct: Option<f64>,
    /// TNR over the distinct test requests.
    #[serde(default)]
    pub tnr_distinct: Option<f64>,
    /// The decision threshold.
    pub threshold: Option<f32>,
    /// Test requests scored.
    pub test_samples: usize,
    /// Wall time of this result (informative; CPU shared).
    pub seconds: f64,
    /// Randomness provenance.
    pub rng: privacy::RngProvenance,
    /// ε after prefixes of the queries.
    #[serde(default)]
    pub epsilon_curve: Vec<EpsilonPoint>,
}

/// Quantile by linear interpolation between order statistics (numpy's default, Hyndman & Fan
/// 1996 type 7). `None` for no values.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let h = (v.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    Some(v[lo] + (h - lo as f64) * (v[hi] - v[lo]))
}

/// Median, first and third quartile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// First quartile.
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
}

/// The spread of the finite values, if any.
pub fn spread(values: &[f64]) -> Option<Spread> {
    Some(Spread {
        median: quantile(values, 0.5)?,
        q1: quantile(values, 0.25)?,
        q3: quantile(values, 0.75)?,
    })
}

/// One cell of summary.csv: the spreads over its students.
#[derive(Debug, Clone)]
pub struct CellSummary<'a> {
    /// The cell's first row (its settings).
    pub first: &'a ResultRow,
    /// Students in the cell.
    pub n: usize,
    /// TPR, TNR, AUC, TPR at 1% FPR, answered, data-independent ε, data-dependent ε.
    pub tpr: Option<Spread>,
    /// TNR.
    pub tnr: Option<Spread>,
    /// AUC.
    pub auc: Option<Spread>,
    /// TPR at FPR ≤ 1%.
    pub tpr_at_1pct_fpr: Option<Spread>,
    /// TPR over distinct test requests.
    pub tpr_distinct: Option<Spread>,
    /// TNR over distinct test requests.
    pub tnr_distinct: Option<Spread>,
    /// Answered queries.
    pub answered: Option<Spread>,
    /// Data-independent ε.
    pub data_independent_epsilon: Option<Spread>,
    /// Data-dependent ε.
    pub data_dependent_epsilon: Option<Spread>,
}

/// Groups rows by cell (in order of first appearance) and summarizes each.
pub fn summarize(rows: &[ResultRow]) -> Vec<CellSummary<'_>> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: std::collections::HashMap<&str, Vec<&ResultRow>> = Default::default();
    for r in rows {
        let g = groups.entry(&r.cell).or_default();
        if g.is_empty() {
            order.push(&r.cell);
        }
        g.push(r);
    }
    order
        .into_iter()
        .map(|cell| {
            let g = &groups[cell];
            let s = |f: &dyn Fn(&ResultRow) -> Option<f64>| {
                spread(&g.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
            };
            CellSummary {
                first: g[0],
                n: g.len(),
                tpr: s(&|r| r.tpr),
                tnr: s(&|r| r.tnr),
                auc: s(&|r| r.auc),
                tpr_at_1pct_fpr: s(&|r| r.tpr_at_1pct_fpr),
                tpr_distinct: s(&|r| r.tpr_distinct),
                tnr_distinct: s(&|r| r.tnr_distinct),
                answered: s(&|r| r.answered.map(|a| a as f64)),
                data_independent_epsilon: s(&|r| r.data_independent_epsilon),
                data_dependent_epsilon: s(&|r| r.data_dependent_epsilon),
            }
        })
        .collect()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// results.csv: one line per trained model.
pub fn results_csv(rows: &[ResultRow]) -> String {
    let mut out = String::from(
        "experiment,cell,data,model,teachers,queries,rho,local_epsilon,mechanism,mechanism_parameters,repeat,answered,label_agreement,data_independent_epsilon,data_dependent_epsilon,tpr,tnr,fpr,auc,tpr_at_1pct_fpr,tpr_distinct,tnr_distinct,threshold,test_samples,seconds\n",
    );
    for r in rows {
        let fields = [
            csv_field(&r.experiment),
            csv_field(&r.cell),
            csv_field(&r.data),
            csv_field(&r.model),
            opt(r.teachers),
            opt(r.queries),
            opt(r.rho),
            opt(r.local_epsilon),
            csv_field(&r.mechanism),
            csv_field(&r.mechanism_parameters),
            r.repeat.to_string(),
            opt(r.answered),
            opt(r.label_agreement.map(|v| format!("{v:.4}"))),
            opt(r.data_independent_epsilon.map(|v| format!("{v:.4}"))),
            opt(r.data_dependent_epsilon.map(|v| format!("{v:.4}"))),
            opt(r.tpr.map(|v| format!("{v:.4}"))),
            opt(r.tnr.map(|v| format!("{v:.4}"))),
            opt(r.fpr.map(|v| format!("{v:.4}"))),
            opt(r.auc.map(|v| format!("{v:.4}"))),
            opt(r.tpr_at_1pct_fpr.map(|v| format!("{v:.4}"))),
            opt(r.tpr_distinct.map(|v| format!("{v:.4}"))),
            opt(r.tnr_distinct.map(|v| format!("{v:.4}"))),
            opt(r.threshold.map(|v| format!("{v:.5}"))),
            r.test_samples.to_string(),
            format!("{:.1}", r.seconds),
        ];
        out += &fields.join(",");
        out.push('\n');
    }
    out
}

/// summary.csv: one line per cell, median / q1 / q3 of each measure.
pub fn summary_csv(cells: &[CellSummary]) -> String {
    let measures = [
        "tpr",
        "tnr",
        "auc",
        "tpr_at_1pct_fpr",
        "tpr_distinct",
        "tnr_distinct",
        "answered",
        "data_independent_epsilon",
        "data_dependent_epsilon",
    ];
    let mut out = String::from(
        "experiment,cell,data,model,teachers,queries,rho,local_epsilon,mechanism,mechanism_parameters,students",
    );
    for m in measures {
        out += &format!(",{m}_median,{m}_q1,{m}_q3");
    }
    out.push('\n');
    for c in cells {
        let r = c.first;
        out += &[
            csv_field(&r.experiment),
            csv_field(&r.cell),
            csv_field(&r.data),
            csv_field(&r.model),
            opt(r.teachers),
            opt(r.queries),
            opt(r.rho),
            opt(r.local_epsilon),
            csv_field(&r.mechanism),
            csv_field(&r.mechanism_parameters),
            c.n.to_string(),
        ]
        .join(",");
        for s in [
            c.tpr,
            c.tnr,
            c.auc,
            c.tpr_at_1pct_fpr,
            c.tpr_distinct,
            c.tnr_distinct,
            c.answered,
            c.data_independent_epsilon,
            c.data_dependent_epsilon,
        ] {
            match s {
                Some(s) => out += &format!(",{:.4},{:.4},{:.4}", s.median, s.q1, s.q3),
                None => out += ",,,",
            }
        }
        out.push('\n');
    }
    out
}

fn md_spread(s: Option<Spread>, percent: bool) -> String {
    match s {
        None => "–".into(),
        Some(s) if percent => format!(
            "{:.1}% [{:.1}–{:.1}]",
            100.0 * s.median,
            100.0 * s.q1,
            100.0 * s.q3
        ),
        Some(s) => format!("{:.2} [{:.2}–{:.2}]", s.median, s.q1, s.q3),
    }
}

/// summary.md: one table per experiment (median [IQR] of each measure).
pub fn summary_md(cells: &[CellSummary], header: &str) -> String {
    let mut out = format!("{header}\n");
    let mut experiments: Vec<&str> = Vec::new();
    for c in cells {
        if !experiments.contains(&c.first.experiment.as_str()) {
            experiments.push(&c.first.experiment);
        }
    }
    for e in experiments {
        out += &format!(
            "\n### {e}\n\n| model | teachers | queries | ρ | local ε = 2ρ | mechanism | n | TPR | TNR | AUC | TPR at FPR ≤ 1% | TPR distinct | TNR distinct | answered | ε data-independent | ε data-dependent (not private to publish) |\n|---|---:|---:|---:|---:|---|---:|---|---|---|---|---|---|---:|---:|---|\n"
        );
        for c in cells.iter().filter(|c| c.first.experiment == e) {
            let r = c.first;
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.model,
                opt(r.teachers),
                opt(r.queries),
                r.rho.map_or("none".into(), |v| v.to_string()),
                r.local_epsilon.map_or("–".into(), |v| v.to_string()),
                if r.mechanism_parameters.is_empty() {
                    r.mechanism.clone()
                } else {
                    format!("{} ({})", r.mechanism, r.mechanism_parameters)
                },
                c.n,
                md_spread(c.tpr, true),
                md_spread(c.tnr, true),
                md_spread(c.auc, false),
                md_spread(c.tpr_at_1pct_fpr, true),
                md_spread(c.tpr_distinct, true),
                md_spread(c.tnr_distinct, true),
                c.answered.map_or("–".into(), |s| format!("{:.0}", s.median)),
                c.data_independent_epsilon
                    .map_or("∞ (not private)".into(), |s| format!("{:.2}", s.median)),
                md_spread(c.data_dependent_epsilon, false),
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// SVG

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

fn svg_frame(width: f64, height: f64, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
        width / 2.0,
        xml_escape(title)
    )
}

/// A box plot (box = IQR, line = median, whiskers = min/max, dots = students) of one measure for
/// each group. `y_max` fixes the axis (1 for rates); `None` scales it to the data.
pub fn box_plot(
    title: &str,
    y_label: &str,
    groups: &[(String, Vec<f64>)],
    y_max: Option<f64>,
) -> String {
    const PLOT_H: f64 = 300.0;
    const LEFT: f64 = 70.0;
    const TOP: f64 = 40.0;
    let slot = 56.0;
    let plot_w = (slot * groups.len() as f64).max(200.0);
    let width = LEFT + plot_w + 20.0;
    let height = TOP + PLOT_H + 150.0;
    let all_max = groups
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0f64, f64::max);
    let top = y_max.unwrap_or_else(|| nice_max(all_max));
    let y = |v: f64| TOP + PLOT_H * (1.0 - (v / top).clamp(0.0, 1.0));
    let mut svg = svg_frame(width, height, title);
    svg += &format!(
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{PLOT_H}\" fill=\"none\" stroke=\"black\"/>\n"
    );
    for tick in 0..=4 {
        let v = top * tick as f64 / 4.0;
        svg += &format!(
            "<line x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{x2}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\n<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            LEFT - 6.0,
            y(v) + 4.0,
            format_tick(v),
            yy = y(v),
            x2 = LEFT + plot_w,
        );
    }
    svg += &format!(
        "<text x=\"16\" y=\"{c}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {c})\">{}</text>\n",
        xml_escape(y_label),
        c = TOP + PLOT_H / 2.0
    );
    let slot = plot_w / groups.len().max(1) as f64;
    for (i, (name, values)) in groups.iter().enumerate() {
        let cx = LEFT + slot * (i as f64 + 0.5);
        svg += &format!(
            "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"end\" transform=\"rotate(-40 {cx:.1} {:.1})\">{}</text>\n",
            TOP + PLOT_H + 16.0,
            TOP + PLOT_H + 16.0,
            xml_escape(name)
        );
        let Some(s) = spread(values) else { continue };
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let half = (slot * 0.3).min(18.0);
        let color = COLORS[0];
        svg += &format!(
            "<line x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\" stroke=\"black\"/>\n",
            y(lo),
            y(hi)
        );
        svg += &format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\" fill-opacity=\"0.3\" stroke=\"{color}\"/>\n",
            cx - half,
            y(s.q3),
            2.0 * half,
            (y(s.q1) - y(s.q3)).max(0.5)
        );
        svg += &format!(
            "<line x1=\"{:.1}\" y1=\"{m:.1}\" x2=\"{:.1}\" y2=\"{m:.1}\" stroke=\"black\" stroke-width=\"2\"/>\n",
            cx - half,
            cx + half,
            m = y(s.median)
        );
        for v in finite {
            svg += &format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\" fill=\"#333\" fill-opacity=\"0.5\"/>\n",
                cx + half + 5.0,
                y(v)
            );
        }
    }
    svg += "</svg>\n";
    svg
}

fn format_tick(v: f64) -> String {
    if v == 0.0 || (v.abs() >= 0.01 && v.abs() < 1e4) {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0e}")
    }
}

/// One line of a line plot.
pub struct Series {
    /// Legend.
    pub name: String,
    /// Points (x, y), drawn in order.
    pub points: Vec<(f64, f64)>,
    /// Dashed (e.g. a data-independent bound).
    pub dashed: bool,
}

/// A line plot with linear axes from 0.
pub fn line_plot(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    const W: f64 = 420.0;
    const H: f64 = 300.0;
    const LEFT: f64 = 70.0;
    const TOP: f64 = 40.0;
    let legend_h = 18.0 * series.len() as f64;
    let width = LEFT + W + 20.0;
    let height = TOP + H + 50.0 + legend_h;
    let pts = || {
        series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.0.is_finite() && p.1.is_finite())
    };
    let x_top = nice_max(pts().map(|p| p.0).fold(0.0, f64::max));
    let y_top = nice_max(pts().map(|p| p.1).fold(0.0, f64::max));
    let x = |v: f64| LEFT + W * (v / x_top).clamp(0.0, 1.0);
    let y = |v: f64| TOP + H * (1.0 - (v / y_top).clamp(0.0, 1.0));
    let mut svg = svg_frame(width, height, title);
    svg += &format!(
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{W}\" height=\"{H}\" fill=\"none\" stroke=\"black\"/>\n"
    );
    for tick in 0..=4 {
        let f = tick as f64 / 4.0;
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n<line x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{x2}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\n",
            x(f * x_top),
            TOP + H + 16.0,
            format_tick(f * x_top),
            LEFT - 6.0,
            y(f * y_top) + 4.0,
            format_tick(f * y_top),
            yy = y(f * y_top),
            x2 = LEFT + W,
        );
    }
    svg += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text x=\"16\" y=\"{c}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {c})\">{}</text>\n",
        LEFT + W / 2.0,
        TOP + H + 34.0,
        xml_escape(x_label),
        xml_escape(y_label),
        c = TOP + H / 2.0
    );
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let dash = if s.dashed {
            " stroke-dasharray=\"5 4\""
        } else {
            ""
        };
        let path: Vec<String> = s
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|&(a, b)| format!("{:.1},{:.1}", x(a), y(b)))
            .collect();
        svg += &format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} points=\"{}\"/>\n",
            path.join(" ")
        );
        for p in &path {
            let (px, py) = p.split_once(',').expect("formatted with a comma");
            svg += &format!("<circle cx=\"{px}\" cy=\"{py}\" r=\"2.5\" fill=\"{color}\"/>\n");
        }
        let ly = TOP + H + 56.0 + 18.0 * i as f64;
        svg += &format!(
            "<line x1=\"{LEFT}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>\n<text x=\"{}\" y=\"{}\">{}</text>\n",
            LEFT + 24.0,
            LEFT + 30.0,
            ly + 4.0,
            xml_escape(&s.name)
        );
    }
    svg += "</svg>\n";
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert_eq!(quantile(&v, 0.25), Some(1.75));
        assert_eq!(quantile(&v, 0.75), Some(3.25));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[f64::NAN, 7.0], 0.5), Some(7.0));
    }

    #[test]
    fn box_plot_draws_one_box_per_group_with_data() {
        let svg = box_plot(
            "t",
            "TPR",
            &[
                ("a".into(), vec![0.1, 0.2, 0.3]),
                ("b".into(), vec![]),
                ("c<".into(), vec![0.5]),
            ],
            Some(1.0),
        );
        assert_eq!(svg.matches("fill-opacity=\"0.3\"").count(), 2);
        assert!(svg.contains("c&lt;"));
        assert!(svg.ends_with("</svg>\n"));
    }
}

/// `DIR/splits/<data>.json`: how one data list was split (requests and distinct requests of each
/// label per split).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitTable {
    /// The data list's label.
    pub data: String,
    /// The base config's fractions.
    pub fractions: trainer::config::SplitConfig,
    /// The files of the list.
    pub files: Vec<SplitTableFile>,
    /// One row per split.
    pub splits: Vec<SplitTableRow>,
}

/// One file of a data list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitTableFile {
    /// Its path.
    pub path: std::path::PathBuf,
    /// Its format.
    pub format: datasets::Format,
    /// The label it forces, if any.
    pub label: Option<datasets::Label>,
    /// At most this many records.
    pub limit: Option<usize>,
    /// The splits it may go to (None: all).
    pub splits: Option<Vec<super::config::SplitName>>,
}

/// Requests and distinct requests of each label in one split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitTableRow {
    /// The split.
    pub split: super::config::SplitName,
    /// Benign requests.
    pub benign: usize,
    /// Malicious requests.
    pub malicious: usize,
    /// Distinct benign requests.
    pub distinct_benign: usize,
    /// Distinct malicious requests.
    pub distinct_malicious: usize,
}
