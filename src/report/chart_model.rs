//! What a chart is, before it is drawn: its curves, markers and additions ([`ChartSpec`]) and
//! the colours they take. Built by the report's chart files (`chart_specs`, `chart_rung`,
//! `chart_tokens`, `server_charts`) and by the history's, drawn by [`super::charts`].

use plotters::style::RGBColor;

/// One plotted curve.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend text.
    pub label: String,
    /// (offered rate, value) points, sorted by rate.
    pub points: Vec<(f64, f64)>,
    /// Stroke colour.
    pub color: RGBColor,
    /// Dashed (the base run in an overlay, reference lines).
    pub dashed: bool,
    /// Drawn wide and pale underneath, so a curve it coincides with stays visible.
    pub under: bool,
}

/// A vertical marker at a rate (the knee).
#[derive(Debug, Clone)]
pub struct Marker {
    pub rate: f64,
    pub label: String,
    pub color: RGBColor,
}

/// One chart.
#[derive(Debug, Clone)]
pub struct ChartSpec {
    /// HTML id (`chart-<id>`).
    pub id: &'static str,
    /// Caption drawn in the SVG.
    pub title: String,
    /// Y axis description.
    pub y_desc: String,
    /// The curves.
    pub lines: Vec<Line>,
    /// Knee markers.
    pub markers: Vec<Marker>,
    /// A horizontal reference (value, label), e.g. the error-rate SLO.
    pub hline: Option<(f64, String)>,
    /// Highest offered rate of the report: every chart shares the x axis, even one whose
    /// curves have no points at the top rungs.
    pub x_max: f64,
    /// What the newer charts add (their own x axis, notes, marked rungs); default for the
    /// ladder charts.
    pub extra: Extra,
}

/// A chart's additions to [`ChartSpec`]: default on the classic charts over the ladder.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// The x axis description when the x axis is not the ladder's (a CDF's milliseconds,
    /// a time series' seconds, a frontier's tokens/s); such an axis is linear from 0.
    pub x_desc: Option<String>,
    /// No dots on the curves (dense curves: a CDF, a time series).
    pub no_dots: bool,
    /// Text at a point (x, y): an overlay's % change, a frontier point's rung.
    pub notes: Vec<(f64, f64, String)>,
    /// Rungs marked with a pale line and their error rate at the foot of the chart, so a
    /// latency that falls because requests were turned away is not read as a gain.
    pub flags: Vec<(f64, String)>,
    /// Lines of explanation inside the plot (why a curve is absent).
    pub note: Vec<String>,
    /// Horizontal reference lines beyond [`ChartSpec::hline`] (SLO thresholds).
    pub hlines: Vec<(f64, String)>,
}

pub(super) const BLUE_: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
pub(super) const ORANGE_: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
pub(super) const GREEN_: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
pub(super) const RED_: RGBColor = RGBColor(0xd6, 0x27, 0x28);
pub(super) const PURPLE_: RGBColor = RGBColor(0x94, 0x67, 0xbd);
const BROWN_: RGBColor = RGBColor(0x8c, 0x56, 0x4b);
const PINK_: RGBColor = RGBColor(0xe3, 0x77, 0xc2);
const OLIVE_: RGBColor = RGBColor(0xbc, 0xbd, 0x22);
const CYAN_: RGBColor = RGBColor(0x17, 0xbe, 0xcf);
pub(super) const GREY_: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
pub(super) const DARK: RGBColor = RGBColor(0x22, 0x22, 0x22);
pub(super) const KNEE: RGBColor = RGBColor(0xc0, 0x00, 0x00);

/// Colours for error classes, in class-name order.
pub(super) const PALETTE: [RGBColor; 8] =
    [ORANGE_, RED_, PURPLE_, BROWN_, PINK_, OLIVE_, CYAN_, BLUE_];

/// Colour of the `i`-th of several curves of one kind (e.g. one per rung), cycling.
pub fn color(i: usize) -> RGBColor {
    const CURVES: [RGBColor; 9] = [
        BLUE_, ORANGE_, GREEN_, RED_, PURPLE_, BROWN_, PINK_, OLIVE_, CYAN_,
    ];
    CURVES[i % CURVES.len()]
}

/// Colour of a marker that flags something (the knee, a change point).
pub fn alert_color() -> RGBColor {
    KNEE
}

/// CSS form of a colour, for the HTML legend.
pub fn css(c: &RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}
