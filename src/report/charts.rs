//! The report's charts as inline SVG (plotters' SVG backend, which writes text as `<text>`
//! elements: no font files are read, the browser picks the font).
//!
//! [`specs`] turns a [`Report`] into chart descriptions; [`render_svg`] draws one. Legends are
//! left to the HTML page ([`ChartSpec::lines`] carries label, colour and dash), so they never
//! cover a curve.

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::ReportError;
use crate::results::rate_label;

pub use super::chart_model::{alert_color, color, css, ChartSpec, Line, Marker};
use super::chart_model::{DARK, GREY_, KNEE, RED_};

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (600, 380);

/// Tick label with as many decimals as the axis span needs.
fn tick(v: f64, span: f64) -> String {
    if span >= 20.0 {
        format!("{v:.0}")
    } else if span >= 2.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn chart_err(spec: &ChartSpec) -> impl Fn(String) -> ReportError + '_ {
    move |message| ReportError::Chart {
        chart: spec.id.to_string(),
        message,
    }
}

/// The x axis of a chart: linear from 0, or logarithmic when the offered rates span more
/// than [`LOG_AXIS_SPAN`] (a ladder 0.5 … 50 would crowd its low rungs into the left edge).
#[derive(Debug, Clone, Copy)]
struct XAxis {
    lo: f64,
    hi: f64,
    log: bool,
    /// Whole-number positions (folders in time order), not rates.
    index: bool,
}

/// What a chart's x axis holds: offered rates (the report's charts; a log scale when they
/// span more than [`LOG_AXIS_SPAN`]) or positions 1, 2, 3, … (e.g. `ladder history`'s
/// folders in time order), always linear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XKind {
    Rate,
    Index,
    /// A linear axis from 0 (milliseconds, seconds, tokens/s).
    Linear,
}

/// Ratio of highest to lowest offered rate above which the x axis is logarithmic.
pub const LOG_AXIS_SPAN: f64 = 10.0;

impl XAxis {
    fn of(spec: &ChartSpec, kind: XKind) -> XAxis {
        let xs = || spec.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
        let max = xs().fold(spec.x_max, f64::max);
        if kind == XKind::Index {
            return XAxis {
                lo: 0.5,
                hi: max.max(1.0) + 0.5,
                log: false,
                index: true,
            };
        }
        if kind == XKind::Linear {
            return XAxis {
                lo: 0.0,
                hi: if max > 0.0 {
                    (max * 1.05).min(f64::MAX / 4.0)
                } else {
                    1.0
                },
                log: false,
                index: false,
            };
        }
        let min_pos = xs()
            .chain(std::iter::once(spec.x_max))
            .filter(|x| *x > 0.0 && x.is_finite())
            .fold(f64::INFINITY, f64::min);
        if max > 0.0 && min_pos.is_finite() && max / min_pos > LOG_AXIS_SPAN {
            XAxis {
                lo: min_pos / 1.25,
                hi: (max * 1.25).min(f64::MAX / 4.0),
                log: true,
                index: false,
            }
        } else {
            XAxis {
                lo: 0.0,
                hi: if max > 0.0 {
                    (max * 1.05).min(f64::MAX / 4.0)
                } else {
                    1.0
                },
                log: false,
                index: false,
            }
        }
    }

    /// The point `frac` of the way across the axis (as drawn).
    fn at(&self, frac: f64) -> f64 {
        self.nudge(self.lo, frac)
    }

    /// `x` moved by `frac` of the drawn axis width.
    fn nudge(&self, x: f64, frac: f64) -> f64 {
        if self.log {
            x * (self.hi / self.lo).powf(frac)
        } else {
            x + frac * (self.hi - self.lo)
        }
    }

    /// Where `x` sits across the drawn axis, 0 to 1.
    fn frac(&self, x: f64) -> f64 {
        if self.log {
            (x / self.lo).ln() / (self.hi / self.lo).ln()
        } else {
            (x - self.lo) / (self.hi - self.lo)
        }
    }

    /// Points that can be drawn on this axis (a log axis has no 0).
    fn drawable(&self, points: &[(f64, f64)]) -> Vec<(f64, f64)> {
        points
            .iter()
            .copied()
            .filter(|p| !self.log || p.0 > 0.0)
            .collect()
    }

    fn tick(&self, v: f64) -> String {
        if self.index {
            format!("{v:.0}")
        } else if self.log {
            rate_label(v)
        } else {
            tick(v, self.hi)
        }
    }
}

/// Draw one chart as an SVG document string (on the rate axis).
#[cfg(test)]
pub fn render_svg(spec: &ChartSpec) -> Result<String, ReportError> {
    render_svg_x(spec, XKind::Rate, "offered rate (req/s)")
}

/// Draw one chart whose x axis holds `kind`, described as `x_desc` (a log rate axis says
/// "log scale" inside its closing parenthesis). [`Marker::rate`] is then an x position of that kind.
pub fn render_svg_x(spec: &ChartSpec, kind: XKind, x_desc: &str) -> Result<String, ReportError> {
    let err = chart_err(spec);
    let x = XAxis::of(spec, kind);
    let y_top = spec
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .chain(spec.hline.iter().map(|h| h.0))
        .chain(spec.extra.hlines.iter().map(|h| h.0))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    // Headroom above the highest point for the knee labels (finite even for absurd values).
    let y_max = if y_top > 0.0 {
        (y_top * 1.18).min(f64::MAX / 4.0)
    } else {
        1.0
    };
    // Every coordinate inside the axes: a point outside them (a negative or absurd value
    // read from a tampered file) would overflow the pixel arithmetic of the plotting crate.
    let mut inside = spec.clone();
    for l in &mut inside.lines {
        l.points.retain(|p| p.0.is_finite() && p.1.is_finite());
        for p in &mut l.points {
            *p = (p.0.clamp(x.lo, x.hi), p.1.clamp(0.0, y_max));
        }
    }
    inside.markers.retain(|m| m.rate.is_finite());
    for m in &mut inside.markers {
        m.rate = m.rate.clamp(x.lo, x.hi);
    }
    for h in inside
        .hline
        .iter_mut()
        .chain(inside.extra.hlines.iter_mut())
    {
        h.0 = if h.0.is_finite() {
            h.0.clamp(0.0, y_max)
        } else {
            y_max
        };
    }
    inside
        .extra
        .notes
        .retain(|n| n.0.is_finite() && n.1.is_finite());
    for n in &mut inside.extra.notes {
        n.0 = n.0.clamp(x.lo, x.hi);
        n.1 = n.1.clamp(0.0, y_max);
    }
    inside.extra.flags.retain(|f| f.0.is_finite());
    for f in &mut inside.extra.flags {
        f.0 = f.0.clamp(x.lo, x.hi);
    }
    let spec = &inside;

    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(&spec.title, ("sans-serif", caption_size(&spec.title)))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(72);
        if x.log {
            let chart = builder
                .build_cartesian_2d((x.lo..x.hi).log_scale(), 0.0..y_max)
                .map_err(|e| err(e.to_string()))?;
            let log_desc = match x_desc.strip_suffix(')') {
                Some(open) => format!("{open}, log scale)"),
                None => format!("{x_desc} (log scale)"),
            };
            draw(chart, spec, x, y_max, &log_desc)?;
        } else {
            let chart = builder
                .build_cartesian_2d(x.lo..x.hi, 0.0..y_max)
                .map_err(|e| err(e.to_string()))?;
            draw(chart, spec, x, y_max, x_desc)?;
        }
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(compact(&buf))
}

/// The SVG with each run of consecutive `<polyline>`s of one style merged into one `<path>`
/// (a dashed line is a polyline per dash: a third of a chart's bytes), drawn the same.
pub fn compact(svg: &str) -> String {
    const OPEN: &str = "<polyline ";
    const POINTS: &str = "points=\"";
    let mut out = String::with_capacity(svg.len());
    let mut run: Option<(String, String)> = None; // (style, path data)
    let flush = |out: &mut String, run: &mut Option<(String, String)>| {
        if let Some((style, d)) = run.take() {
            out.push_str(&format!("<path {style}d=\"{}\"/>\n", d.trim_end()));
        }
    };
    for line in svg.lines() {
        let parsed = line
            .strip_prefix(OPEN)
            .and_then(|rest| rest.strip_suffix("\"/>"))
            .and_then(|rest| rest.split_once(POINTS))
            .filter(|(style, _)| !style.contains('"') || style.ends_with("\" "))
            .filter(|(_, pts)| !pts.contains('"'));
        match parsed {
            Some((style, pts)) => {
                let mut d = String::new();
                for (i, p) in pts.split_whitespace().enumerate() {
                    d.push(if i == 0 { 'M' } else { 'L' });
                    d.push_str(p);
                    d.push(' ');
                }
                match &mut run {
                    Some((s, acc)) if s == style => acc.push_str(&d),
                    _ => {
                        flush(&mut out, &mut run);
                        run = Some((style.to_string(), d));
                    }
                }
            }
            None => {
                flush(&mut out, &mut run);
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    flush(&mut out, &mut run);
    out
}

/// Caption font size: 22 px, smaller for a long title so it fits the chart's width (a
/// sans-serif character is about 0.55 em wide; the chart is [`SIZE`] wide less margins).
fn caption_size(title: &str) -> u32 {
    let chars = title.chars().count().max(1) as f64;
    let fits = (SIZE.0 as f64 - 40.0) / (0.56 * chars);
    fits.clamp(12.0, 22.0) as u32
}

/// Mesh, reference line, knee markers and curves, on either kind of x axis.
fn draw<X>(
    mut chart: ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, RangedCoordf64>>,
    spec: &ChartSpec,
    x: XAxis,
    y_max: f64,
    x_desc: &str,
) -> Result<(), ReportError>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let err = chart_err(spec);
    let x_fmt = |v: &f64| x.tick(*v);
    let y_fmt = |v: &f64| tick(*v, y_max);
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(spec.y_desc.as_str())
        .x_labels(8)
        .y_labels(7)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 17))
        .max_light_lines(0)
        .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
        .draw()
        .map_err(|e| err(e.to_string()))?;

    for (v, label) in spec.hline.iter().chain(spec.extra.hlines.iter()) {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x.lo, *v), (x.hi, *v)],
                4,
                4,
                KNEE.mix(0.6).stroke_width(1),
            ))
            .map_err(|e| err(e.to_string()))?;
        chart
            .draw_series(std::iter::once(Text::new(
                label.clone(),
                (x.at(0.01), *v),
                ("sans-serif", 15).into_font().color(&KNEE),
            )))
            .map_err(|e| err(e.to_string()))?;
    }
    extras(&mut chart, spec, x, y_max)?;

    for (i, m) in spec.markers.iter().enumerate() {
        if x.log && m.rate <= 0.0 {
            continue;
        }
        chart
            .draw_series(DashedLineSeries::new(
                vec![(m.rate, 0.0), (m.rate, y_max)],
                6,
                4,
                m.color.stroke_width(2),
            ))
            .map_err(|e| err(e.to_string()))?;
        // Label right of the line, or left of it near the right edge; stacked if several.
        let right_side = x.frac(m.rate) < 0.7;
        let (at, anchor) = if right_side {
            (x.nudge(m.rate, 0.01), Pos::new(HPos::Left, VPos::Top))
        } else {
            (x.nudge(m.rate, -0.01), Pos::new(HPos::Right, VPos::Top))
        };
        chart
            .draw_series(std::iter::once(Text::new(
                m.label.clone(),
                (at, y_max * (0.99 - 0.07 * i as f64)),
                ("sans-serif", 17).into_font().color(&m.color).pos(anchor),
            )))
            .map_err(|e| err(e.to_string()))?;
    }

    for line in &spec.lines {
        let style = if line.under {
            line.color.mix(0.45).stroke_width(6)
        } else {
            line.color.stroke_width(2)
        };
        let points = x.drawable(&line.points);
        if line.dashed {
            chart
                .draw_series(DashedLineSeries::new(points.clone(), 7, 4, style))
                .map_err(|e| err(e.to_string()))?;
        } else {
            chart
                .draw_series(LineSeries::new(points.clone(), style))
                .map_err(|e| err(e.to_string()))?;
        }
        // Points only on measured curves, not on the ideal reference line nor dense curves.
        if !line.label.starts_with("ideal") && !spec.extra.no_dots {
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&p| Circle::new(p, 3, line.color.filled())),
                )
                .map_err(|e| err(e.to_string()))?;
        }
    }
    let empty = spec
        .lines
        .iter()
        .filter(|l| !l.label.starts_with("ideal"))
        .all(|l| l.points.is_empty());
    if empty && spec.extra.note.is_empty() {
        chart
            .draw_series(std::iter::once(Text::new(
                "no successful request at any rung: nothing to plot",
                (x.at(0.5), y_max / 2.0),
                ("sans-serif", 17)
                    .into_font()
                    .color(&GREY_)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            )))
            .map_err(|e| err(e.to_string()))?;
    }
    Ok(())
}

/// Marked rungs, notes at points and the lines of explanation of [`Extra`].
fn extras<X>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, RangedCoordf64>>,
    spec: &ChartSpec,
    x: XAxis,
    y_max: f64,
) -> Result<(), ReportError>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let err = chart_err(spec);
    let drawable = |v: f64| !x.log || v > 0.0;
    for (at, label) in spec.extra.flags.iter().filter(|f| drawable(f.0)) {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(*at, 0.0), (*at, y_max)],
                RED_.mix(0.25).stroke_width(8),
            )))
            .map_err(|e| err(e.to_string()))?;
        chart
            .draw_series(std::iter::once(Text::new(
                label.clone(),
                (*at, y_max * 0.01),
                ("sans-serif", 13)
                    .into_font()
                    .color(&KNEE)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            )))
            .map_err(|e| err(e.to_string()))?;
    }
    for (px, py, label) in spec.extra.notes.iter().filter(|n| drawable(n.0)) {
        chart
            .draw_series(std::iter::once(Text::new(
                label.clone(),
                (*px, *py + y_max * 0.015),
                ("sans-serif", 13)
                    .into_font()
                    .color(&DARK)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            )))
            .map_err(|e| err(e.to_string()))?;
    }
    for (i, line) in spec.extra.note.iter().enumerate() {
        chart
            .draw_series(std::iter::once(Text::new(
                line.clone(),
                (x.at(0.02), y_max * (0.9 - 0.06 * i as f64)),
                ("sans-serif", 14)
                    .into_font()
                    .color(&GREY_)
                    .pos(Pos::new(HPos::Left, VPos::Top)),
            )))
            .map_err(|e| err(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::compact;

    #[test]
    fn consecutive_polylines_of_one_style_become_one_path() {
        let svg = "<svg>\n<polyline fill=\"none\" stroke=\"#000\" points=\"1,2 3,4 \"/>\n\
                   <polyline fill=\"none\" stroke=\"#000\" points=\"5,6 7,8 \"/>\n\
                   <polyline fill=\"none\" stroke=\"#f00\" points=\"9,9 \"/>\n<text>a</text>\n\
                   <polyline fill=\"none\" stroke=\"#000\" points=\"1,1 2,2 \"/>\n</svg>";
        assert_eq!(
            compact(svg),
            "<svg>\n<path fill=\"none\" stroke=\"#000\" d=\"M1,2 L3,4 M5,6 L7,8\"/>\n\
             <path fill=\"none\" stroke=\"#f00\" d=\"M9,9\"/>\n<text>a</text>\n\
             <path fill=\"none\" stroke=\"#000\" d=\"M1,1 L2,2\"/>\n</svg>\n"
        );
    }
}
