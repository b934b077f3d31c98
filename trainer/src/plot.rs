//! Plots through `plotters`: a [`Figure`] draws itself on any plotters backend, and [`render`]
//! gives it as SVG (`plotters-svg`) and as PNG (plotters' bitmap backend, encoded with `png`).
//!
//! Text is laid out and, in the PNG, rasterized with DejaVu Sans (the `dejavu` crate, embedded
//! in the binary, registered as `sans-serif` for plotters' `ab_glyph` font backend): no system
//! font, no fontconfig, the same pixels on every machine. The SVG names `sans-serif` and leaves
//! the font to the viewer.
//!
//! The trainer draws the ROC curves ([`Roc`], `roc.svg` and `roc.png` in a run directory); the
//! sweep (`pate-experiments`) draws its box and line plots with the same [`render`].

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::error::{Error, Result};
use crate::metrics::RocPoint;

/// The font family every figure uses (registered once, see [`render`]).
pub const FONT: &str = "sans-serif";

/// Series colours, in order (matplotlib's first six).
pub const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// What a drawing step returns on any backend.
pub type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A plot that can draw itself on any plotters backend.
pub trait Figure {
    /// Width and height in pixels (SVG user units).
    fn size(&self) -> (u32, u32);
    /// Draws on `root`, the whole (white) canvas.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// A figure as SVG text and PNG bytes.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The SVG document.
    pub svg: String,
    /// The PNG file (8-bit RGB).
    pub png: Vec<u8>,
}

impl Rendered {
    /// Writes the SVG to `svg` and the PNG to `png`, each atomically.
    pub fn write(&self, svg: &Path, png: &Path) -> Result<()> {
        crate::io::write_file(svg, self.svg.as_bytes())?;
        crate::io::write_file(png, &self.png)
    }
}

fn plot_error(e: impl std::fmt::Display) -> Error {
    Error::Plot(e.to_string())
}

/// Registers DejaVu Sans as [`FONT`] with plotters (once per process).
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "the embedded DejaVu Sans font does not parse".to_string())
        })
        .clone()
        .map_err(plot_error)
}

/// Renders `figure` as SVG and PNG.
pub fn render(figure: &impl Figure) -> Result<Rendered> {
    register_font()?;
    let (w, h) = figure.size();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        figure.draw(&root).map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    let mut pixels = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        figure.draw(&root).map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    let mut png = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png, w, h);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(plot_error)?;
        writer.write_image_data(&pixels).map_err(plot_error)?;
    }
    Ok(Rendered { svg, png })
}

/// ROC curves on the test split, `(name, points)` each, with the diagonal for reference.
pub struct Roc<'a> {
    /// The curves, drawn in [`COLORS`] order.
    pub curves: &'a [(&'a str, &'a [RocPoint])],
}

impl Figure for Roc<'_> {
    fn size(&self) -> (u32, u32) {
        (520, 540)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let mut chart = ChartBuilder::on(root)
            .caption("ROC on the test split", (FONT, 16))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(52)
            .build_cartesian_2d(0f64..1f64, 0f64..1f64)?;
        chart
            .configure_mesh()
            .x_labels(6)
            .y_labels(6)
            .x_desc("false-positive rate")
            .y_desc("true-positive rate")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .light_line_style(WHITE)
            .draw()?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 0.0), (1.0, 1.0)],
            RGBColor(0x99, 0x99, 0x99),
        )))?;
        for (i, (name, points)) in self.curves.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|p| (p.fpr, p.tpr)),
                    color.stroke_width(2),
                ))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font((FONT, 12))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(fpr: f64, tpr: f64) -> RocPoint {
        RocPoint {
            threshold: 0.5,
            fpr,
            tpr,
        }
    }

    #[test]
    fn roc_renders_an_svg_with_its_curves_axes_and_legend_and_a_png() {
        let student = [point(0.0, 0.0), point(0.1, 0.7), point(1.0, 1.0)];
        let ensemble = [point(0.0, 0.0), point(0.2, 0.9), point(1.0, 1.0)];
        let curves = [
            ("10 teachers <vote>", &ensemble[..]),
            ("student", &student[..]),
        ];
        let r = render(&Roc { curves: &curves }).unwrap();
        assert!(
            r.svg.starts_with("<svg") && r.svg.ends_with("</svg>\n"),
            "{:?} ... {:?}",
            &r.svg[..80.min(r.svg.len())],
            &r.svg[r.svg.len().saturating_sub(40)..]
        );
        for text in [
            "ROC on the test split",
            "false-positive rate",
            "true-positive rate",
            "student",
            "10 teachers &lt;vote&gt;",
        ] {
            assert!(r.svg.contains(text), "{text}");
        }
        // One polyline per curve in its colour, each with its points (plus the legend's).
        for (i, (_, points)) in curves.iter().enumerate() {
            let c = COLORS[i];
            let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
            let lines: Vec<&str> = r
                .svg
                .lines()
                .filter(|l| l.contains("<polyline") && l.contains(&stroke))
                .collect();
            assert!(
                lines.iter().any(|l| l.matches(',').count() == points.len()),
                "curve {i}: {lines:?}"
            );
        }
        assert_eq!(&r.png[..8], b"\x89PNG\r\n\x1a\n");
        let decoder = png::Decoder::new(std::io::Cursor::new(&r.png));
        let info = decoder.read_info().unwrap();
        assert_eq!((info.info().width, info.info().height), (520, 540));
    }
}
