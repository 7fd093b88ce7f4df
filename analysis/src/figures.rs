//! The figures, drawn with plotters into PNG (bitmap backend) and SVG (string backend) from one
//! drawing function per kind, so both files always show the same picture.
//!
//! Fonts: plotters' `ab_glyph` backend reads no system font, so DejaVu Sans (Bitstream Vera
//! licence, in `assets/`) is embedded in the binary and registered as `sans-serif` on first use;
//! figures therefore render the same on a fresh machine. Sizes are fixed, so output is
//! deterministic.

use crate::AnalysisError;
use crate::output::write_atomic;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

pub(crate) fn register_font() {
    REGISTER.call_once(|| {
        // The embedded font is a valid TTF (checked by a test), so this cannot fail at run time;
        // if it ever did, text would be missing and the drawing call would report the error.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// Colors for sites, series and modes: colour-blind-safe (Okabe–Ito), fixed order.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
];
const OTHER_GREY: RGBColor = RGBColor(190, 190, 190);

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One panel of stacked bars: per category (block shape), segments bottom to top.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StackedPanel {
    pub title: String,
    pub categories: Vec<String>,
    /// Per category, one value per segment (same order as `segments`).
    pub values: Vec<Vec<f64>>,
}

/// One panel of lines over categories.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LinePanel {
    pub title: String,
    pub categories: Vec<String>,
    /// (series name, value per category; `None` where unknown).
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// What a figure shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FigureKind {
    /// Breakdown (fig. 5): stacked shares in %, one panel per probe mode, side by side.
    Stacked {
        segments: Vec<String>,
        panels: Vec<StackedPanel>,
        y_desc: String,
        y_max: f64,
    },
    /// Lines over categories (figs. 6–9: normalized to each series' maximum, `y_max` 1.1).
    Lines {
        panels: Vec<LinePanel>,
        y_desc: String,
        /// Top of the value axis (the axis starts at 0).
        y_max: f64,
        x_desc: String,
    },
    /// Per-warp bars (fig. 10).
    Bars {
        values: Vec<f64>,
        x_desc: String,
        y_desc: String,
    },
    /// Single-warp series (fig. 11): (access number, cycles, series index) per point.
    Series {
        points: Vec<(f64, f64, usize)>,
        series_names: Vec<String>,
        x_desc: String,
        y_desc: String,
    },
}

/// A figure with its title, written as `<stem>.png` and `<stem>.svg`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    pub stem: String,
    pub title: String,
    pub caption: String,
    pub kind: FigureKind,
    pub size: (u32, u32),
}

/// A drawn figure: its SVG text (for inlining in the HTML report) and file names.
#[derive(Debug, Clone)]
pub(crate) struct Drawn {
    pub stem: String,
    pub title: String,
    pub caption: String,
    pub svg: String,
}

impl Figure {
    /// Draws the figure into `dir/<stem>.png` and `dir/<stem>.svg`, both atomically.
    pub fn render(&self, dir: &Path) -> Result<Drawn, AnalysisError> {
        register_font();
        let svg_path = dir.join(format!("{}.svg", self.stem));
        let png_path = dir.join(format!("{}.png", self.stem));
        let plot_err = |path: &Path, reason: String| AnalysisError::Plot {
            path: path.to_path_buf(),
            reason,
        };
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            self.draw(&root).map_err(|r| plot_err(&svg_path, r))?;
            root.present()
                .map_err(|e| plot_err(&svg_path, e.to_string()))?;
        }
        write_atomic(&svg_path, svg.as_bytes())?;
        crate::output::write_atomic_path(
            &png_path,
            |tmp| {
                let root = BitMapBackend::new(tmp, self.size).into_drawing_area();
                self.draw(&root)?;
                root.present().map_err(|e| e.to_string())
            },
            |reason| plot_err(&png_path, reason),
        )?;
        Ok(Drawn {
            stem: self.stem.clone(),
            title: self.title.clone(),
            caption: self.caption.clone(),
            svg,
        })
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let body = root.titled(&self.title, ("sans-serif", 22)).map_err(e)?;
        match &self.kind {
            FigureKind::Stacked {
                segments,
                panels,
                y_desc,
                y_max,
            } => {
                let areas = body.split_evenly((1, panels.len().max(1)));
                for (i, (p, area)) in panels.iter().zip(&areas).enumerate() {
                    draw_stacked(area, p, segments, y_desc, *y_max, i == 0)?;
                }
            }
            FigureKind::Lines {
                panels,
                y_desc,
                y_max,
                x_desc,
            } => {
                let areas = body.split_evenly((1, panels.len().max(1)));
                for (i, (p, area)) in panels.iter().zip(&areas).enumerate() {
                    draw_lines(area, p, (x_desc, y_desc), *y_max, i == 0)?;
                }
            }
            FigureKind::Bars {
                values,
                x_desc,
                y_desc,
            } => draw_bars(&body, values, x_desc, y_desc)?,
            FigureKind::Series {
                points,
                series_names,
                x_desc,
                y_desc,
            } => draw_series(&body, points, series_names, x_desc, y_desc)?,
        }
        Ok(())
    }
}

/// A float axis with one unit per category; labels come from [`label_at`] at whole numbers.
fn category_axis(n: usize) -> std::ops::Range<f64> {
    -0.5f64..(n.max(1) as f64 - 0.5)
}

/// Whole-number tick labels only: an index axis has no access 2.5.
fn int_label(x: &f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        format!("{}", i as i64)
    } else {
        String::new()
    }
}

fn label_at(categories: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        categories.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

fn draw_stacked<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &StackedPanel,
    segments: &[String],
    y_desc: &str,
    y_max: f64,
    legend: bool,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let n = p.categories.len();
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(category_axis(n), 0f64..y_max)
        .map_err(e)?;
    let fmt = |x: &f64| label_at(&p.categories, *x);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&fmt)
        .x_desc("block shape")
        .y_desc(y_desc)
        .draw()
        .map_err(e)?;
    for (s, name) in segments.iter().enumerate() {
        let c = if s + 1 == segments.len() {
            OTHER_GREY
        } else {
            color(s)
        };
        let rects: Vec<Rectangle<(f64, f64)>> = p
            .values
            .iter()
            .enumerate()
            .map(|(i, vals)| {
                let base: f64 = vals[..s.min(vals.len())].iter().sum();
                let top = base + vals.get(s).copied().unwrap_or(0.0);
                let x = i as f64;
                Rectangle::new([(x - 0.35, base), (x + 0.35, top)], c.filled())
            })
            .collect();
        let drawn = chart.draw_series(rects).map_err(e)?;
        if legend {
            drawn
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
    }
    if legend {
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, 14)?;
    }
    Ok(())
}

fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &LinePanel,
    (x_desc, y_desc): (&str, &str),
    y_max: f64,
    legend: bool,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let n = p.categories.len();
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(category_axis(n), 0f64..y_max)
        .map_err(e)?;
    let fmt = |x: &f64| label_at(&p.categories, *x);
    chart
        .configure_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&fmt)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(e)?;
    for (s, (name, vals)) in p.series.iter().enumerate() {
        let c = color(s);
        let pts: Vec<(f64, f64)> = vals
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i as f64, v)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(e)?;
        let drawn = chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
            .map_err(e)?;
        if legend {
            drawn.label(name.as_str()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
            });
        }
    }
    if legend {
        draw_legend(&mut chart, SeriesLabelPosition::LowerLeft, 14)?;
    }
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    values: &[f64],
    x_desc: &str,
    y_desc: &str,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let y_max = values.iter().copied().fold(0.0, f64::max).max(1.0) * 1.05;
    let n = values.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y_max)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.min(20))
        .x_label_formatter(&int_label)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(e)?;
    chart
        .draw_series(values.iter().enumerate().map(|(i, &v)| {
            let x = i as f64;
            Rectangle::new([(x - 0.4, 0.0), (x + 0.4, v)], color(0).filled())
        }))
        .map_err(e)?;
    Ok(())
}

fn draw_series<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[(f64, f64, usize)],
    names: &[String],
    x_desc: &str,
    y_desc: &str,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let x_max = points.iter().map(|p| p.0).fold(0.0, f64::max).max(1.0);
    // Headroom above the points for the legend.
    let y_max = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.3;
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..x_max + 0.5, 0f64..y_max)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels((x_max as usize + 1).min(20))
        .x_label_formatter(&int_label)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(e)?;
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|p| (p.0, p.1)),
            BLACK.mix(0.4).stroke_width(1),
        ))
        .map_err(e)?;
    for (s, name) in names.iter().enumerate() {
        let c = color(s);
        let drawn = chart
            .draw_series(
                points
                    .iter()
                    .filter(|p| p.2 == s)
                    .map(|p| Circle::new((p.0, p.1), 3, c.filled())),
            )
            .map_err(e)?;
        drawn
            .label(name.as_str())
            .legend(move |(x, y)| Circle::new((x + 6, y), 4, c.filled()));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight, 14)?;
    Ok(())
}

/// The legend of every warpscope figure: translucent white box, black border, at `position`.
pub(crate) fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
    font_px: u32,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(position)
        .label_font(("sans-serif", font_px))
        .draw()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_font_parses() {
        register_font();
        assert!(plotters::style::register_font("check", FontStyle::Normal, FONT).is_ok());
    }

    #[test]
    fn renders_png_and_svg_with_text() {
        let dir = tempfile::tempdir().unwrap();
        let f = Figure {
            stem: "bars".into(),
            title: "Per-warp mean access time".into(),
            caption: String::new(),
            kind: FigureKind::Bars {
                values: vec![1.0, 3.0, 2.0],
                x_desc: "warp".into(),
                y_desc: "cycles".into(),
            },
            size: (400, 300),
        };
        let d = f.render(dir.path()).unwrap();
        assert!(d.svg.contains("Per-warp mean access time"));
        let png = std::fs::read(dir.path().join("bars.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(dir.path().join("bars.svg").is_file());
        assert!(!trace::temp_path(&dir.path().join("bars.png")).exists());
    }
}
