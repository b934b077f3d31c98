//! The sweep's tables (results.csv, summary.csv, summary.md) and plots (box plots and line
//! plots drawn with plotters through `trainer::plot`, written as SVG and PNG).
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};
use trainer::plot::{render, DrawResult, Figure, Rendered, COLORS, FONT};

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

/// The columns of a cell's settings, the first ones of results.csv and of summary.csv.
const SETTINGS_COLUMNS: &str =
    "experiment,cell,data,model,teachers,queries,rho,local_epsilon,mechanism,mechanism_parameters";

/// A row's values of [`SETTINGS_COLUMNS`].
fn settings_fields(r: &ResultRow) -> [String; 10] {
    [
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
    ]
}

/// results.csv: one line per trained model.
pub fn results_csv(rows: &[ResultRow]) -> String {
    let mut out = format!(
        "{SETTINGS_COLUMNS},repeat,answered,label_agreement,data_independent_epsilon,data_dependent_epsilon,tpr,tnr,fpr,auc,tpr_at_1pct_fpr,tpr_distinct,tnr_distinct,threshold,test_samples,seconds\n",
    );
    for r in rows {
        let rest = [
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
        out += &format!("{},{}\n", settings_fields(r).join(","), rest.join(","));
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
    let mut out = format!("{SETTINGS_COLUMNS},students");
    for m in measures {
        out += &format!(",{m}_median,{m}_q1,{m}_q3");
    }
    out.push('\n');
    for c in cells {
        out += &format!("{},{}", settings_fields(c.first).join(","), c.n);
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
// Plots (trainer::plot: plotters, SVG and PNG)

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

fn format_tick(v: f64) -> String {
    if v == 0.0 || (v.abs() >= 0.01 && v.abs() < 1e4) {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0e}")
    }
}

/// A box plot (box = IQR, line = median, whiskers = min/max, dots = students) of one measure for
/// each group.
pub struct BoxPlot<'a> {
    /// Caption.
    pub title: &'a str,
    /// The measure.
    pub y_label: &'a str,
    /// (group name, values); a group without a finite value gets its name and no box.
    pub groups: &'a [(String, Vec<f64>)],
    /// The top of the axis.
    pub top: f64,
}

/// [`BoxPlot`] as SVG and PNG. `y_max` fixes the axis (1 for rates); `None` scales it to the data.
pub fn box_plot(
    title: &str,
    y_label: &str,
    groups: &[(String, Vec<f64>)],
    y_max: Option<f64>,
) -> trainer::error::Result<Rendered> {
    let all_max = groups
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0f64, f64::max);
    let top = y_max.unwrap_or_else(|| nice_max(all_max));
    render(&BoxPlot {
        title,
        y_label,
        groups,
        top,
    })
}

impl Figure for BoxPlot<'_> {
    fn size(&self) -> (u32, u32) {
        let plot_w = (56 * self.groups.len() as u32).max(200);
        (plot_w + 110, 520)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        // Segments 0..=last: one per group.
        let last = self.groups.len().max(1) as i32 - 1;
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, (FONT, 14))
            .margin(12)
            .x_label_area_size(150)
            .y_label_area_size(60)
            .build_cartesian_2d((0..last).into_segmented(), 0f64..self.top)?;
        let name = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) => self
                .groups
                .get(*i as usize)
                .map_or(String::new(), |g| g.0.clone()),
            _ => String::new(),
        };
        let tick = |v: &f64| format_tick(*v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(self.groups.len())
            .x_label_formatter(&name)
            .y_labels(5)
            .y_label_formatter(&tick)
            .y_desc(self.y_label)
            .label_style((FONT, 12))
            .x_label_style((FONT, 11).into_font().transform(FontTransform::Rotate90))
            .axis_desc_style((FONT, 13))
            .draw()?;
        let color = COLORS[0];
        let clamp = |v: f64| v.clamp(0.0, self.top);
        for (i, (_, values)) in self.groups.iter().enumerate() {
            let Some(s) = spread(values) else { continue };
            let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
            let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            // Pixel positions: the box is narrower than its slot, the dots beside it.
            let at = |v: f64| chart.backend_coord(&(SegmentValue::CenterOf(i as i32), clamp(v)));
            let left = chart.backend_coord(&(SegmentValue::Exact(i as i32), 0.0)).0;
            let (cx, _) = at(0.0);
            let half = ((cx - left) * 6 / 10).clamp(2, 18);
            root.draw(&PathElement::new(vec![at(lo), at(hi)], BLACK))?;
            let (q3, q1) = (at(s.q3).1, at(s.q1).1.max(at(s.q3).1 + 1));
            root.draw(&Rectangle::new(
                [(cx - half, q3), (cx + half, q1)],
                color.mix(0.3).filled(),
            ))?;
            root.draw(&Rectangle::new([(cx - half, q3), (cx + half, q1)], color))?;
            let m = at(s.median).1;
            root.draw(&PathElement::new(
                vec![(cx - half, m), (cx + half, m)],
                BLACK.stroke_width(2),
            ))?;
            for v in finite {
                root.draw(&Circle::new(
                    (cx + half + 5, at(v).1),
                    2,
                    RGBColor(0x33, 0x33, 0x33).mix(0.5).filled(),
                ))?;
            }
        }
        Ok(())
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

/// A line plot with linear axes from 0 and the legend below.
pub struct LinePlot<'a> {
    /// Caption.
    pub title: &'a str,
    /// X axis.
    pub x_label: &'a str,
    /// Y axis.
    pub y_label: &'a str,
    /// The lines, in [`COLORS`] order.
    pub series: &'a [Series],
}

/// [`LinePlot`] as SVG and PNG.
pub fn line_plot(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> trainer::error::Result<Rendered> {
    render(&LinePlot {
        title,
        x_label,
        y_label,
        series,
    })
}

/// Height of one legend line below a line plot.
const LEGEND_LINE: u32 = 18;

impl Figure for LinePlot<'_> {
    fn size(&self) -> (u32, u32) {
        (520, 420 + LEGEND_LINE * self.series.len() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
        let pts = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter())
                .filter(finite)
        };
        let x_top = nice_max(pts().map(|p| p.0).fold(0.0, f64::max));
        let y_top = nice_max(pts().map(|p| p.1).fold(0.0, f64::max));
        let legend_h = 10 + LEGEND_LINE * self.series.len() as u32;
        let (plot, legend) = root.split_vertically(root.dim_in_pixel().1 - legend_h);
        let mut chart = ChartBuilder::on(&plot)
            .caption(self.title, (FONT, 14))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_top, 0f64..y_top)?;
        let tick = |v: &f64| format_tick(*v);
        chart
            .configure_mesh()
            .x_labels(5)
            .y_labels(5)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .x_desc(self.x_label)
            .y_desc(self.y_label)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()?;
        for (i, s) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let points: Vec<(f64, f64)> = s.points.iter().filter(finite).copied().collect();
            let style = color.stroke_width(2);
            if s.dashed {
                chart.draw_series(DashedLineSeries::new(points.clone(), 5, 4, style))?;
            } else {
                chart.draw_series(LineSeries::new(points.clone(), style))?;
            }
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            let y = 5 + (LEGEND_LINE * i as u32) as i32 + LEGEND_LINE as i32 / 2;
            if s.dashed {
                legend.draw(&PathElement::new(vec![(70, y), (78, y)], style))?;
                legend.draw(&PathElement::new(vec![(84, y), (92, y)], style))?;
            } else {
                legend.draw(&PathElement::new(vec![(70, y), (92, y)], style))?;
            }
            legend.draw(&Text::new(
                s.name.clone(),
                (100, y),
                (FONT, 12)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
        Ok(())
    }
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

    /// The contents of the SVG's `<text>` elements.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect()
    }

    #[test]
    fn box_plot_draws_one_box_per_group_with_data() {
        let r = box_plot(
            "t",
            "TPR",
            &[
                ("a".into(), vec![0.1, 0.2, 0.3]),
                ("b".into(), vec![]),
                ("c<".into(), vec![0.5]),
            ],
            Some(1.0),
        )
        .unwrap();
        let svg = &r.svg;
        // The filled boxes (IQR), one per group with data; every group is named on the axis.
        assert_eq!(svg.matches("opacity=\"0.3\"").count(), 2, "{svg}");
        let labels = texts(svg);
        for label in ["t", "a", "b", "c&lt;", "TPR"] {
            assert!(labels.contains(&label), "{label}: {labels:?}");
        }
        // One dot per student value.
        assert_eq!(svg.matches("<circle").count(), 4, "{svg}");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(&r.png[..8], b"\x89PNG\r\n\x1a\n");
        // One group, and one without any finite value: drawn, not a panic.
        let one = box_plot("one", "ε", &[("x".into(), vec![f64::NAN])], None).unwrap();
        assert!(texts(&one.svg).contains(&"x"));
        assert_eq!(one.svg.matches("opacity=\"0.3\"").count(), 0);
    }

    #[test]
    fn line_plot_draws_each_series_with_its_legend_and_axis_labels() {
        let series = [
            Series {
                name: "data-dependent, gnmax".into(),
                points: vec![(0.0, 0.0), (10.0, 1.5), (20.0, f64::NAN), (30.0, 2.5)],
                dashed: false,
            },
            Series {
                name: "data-independent, gnmax".into(),
                points: vec![(0.0, 0.0), (30.0, 4.0)],
                dashed: true,
            },
        ];
        let r = line_plot("ε vs queries", "answered queries", "ε", &series).unwrap();
        let svg = &r.svg;
        let labels = texts(svg);
        for label in [
            "ε vs queries",
            "answered queries",
            "ε",
            "data-dependent, gnmax",
            "data-independent, gnmax",
        ] {
            assert!(labels.contains(&label), "{label}: {labels:?}");
        }
        // The solid series is one polyline through its 3 finite points; a marker per point.
        let c = COLORS[0];
        let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        assert!(
            svg.lines().any(|l| l.contains("<polyline")
                && l.contains(&stroke)
                && l.matches(',').count() == 3),
            "{svg}"
        );
        assert_eq!(svg.matches("<circle").count(), 5, "{svg}");
        assert_eq!(&r.png[..8], b"\x89PNG\r\n\x1a\n");
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
