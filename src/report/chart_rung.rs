//! Charts of the rung looked at closely ([`super::focus`]): the CDF of its TTFT and of its
//! E2E (with the SLO as a vertical line), and its course over time.

use super::chart_model::{
    ChartSpec, Extra, Line, Marker, BLUE_, DARK, GREEN_, KNEE, ORANGE_, RED_,
};
use super::focus::Focus;
use super::{Report, RunReport};

/// Each run with its focus rung, label prefix and dash (base dashed in an overlay).
fn focused(report: &Report) -> Vec<(&RunReport, &Focus, String, bool)> {
    super::chart_data::runs(report)
        .into_iter()
        .filter_map(|(run, prefix, dashed)| run.focus.as_ref().map(|f| (run, f, prefix, dashed)))
        .collect()
}

/// `rung 8 req/s (knee)` for a title or a legend.
fn rung_name(run: &RunReport, f: &Focus) -> String {
    format!("{} ({})", run.info.load.level(f.rate), f.why)
}

/// The rung named once in a title when every run looks at the same one, else per legend.
fn shared_name(all: &[(&RunReport, &Focus, String, bool)]) -> Option<String> {
    let names: Vec<String> = all.iter().map(|(r, f, _, _)| rung_name(r, f)).collect();
    names
        .windows(2)
        .all(|w| w[0] == w[1])
        .then(|| names[0].clone())
}

fn line(
    label: String,
    points: Vec<(f64, f64)>,
    color: plotters::style::RGBColor,
    dashed: bool,
) -> Line {
    Line {
        label,
        points,
        color,
        dashed,
        under: false,
    }
}

/// The CDF charts (TTFT, E2E) and the time series of the focus rung; none without one.
pub fn specs(report: &Report) -> Vec<ChartSpec> {
    let all = focused(report);
    if all.is_empty() {
        return vec![];
    }
    let shared = shared_name(&all);
    let slo = report
        .runs
        .last()
        .map(|r| r.slo.clone())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (id, what, get, bound, color) in [
        (
            "cdf-ttft",
            "TTFT",
            (|f: &Focus| f.ttft.clone()) as fn(&Focus) -> Vec<(f64, f64)>,
            slo.ttft_ms,
            BLUE_,
        ),
        (
            "cdf-e2e",
            "E2E",
            |f: &Focus| f.e2e.clone(),
            slo.e2e_ms,
            GREEN_,
        ),
    ] {
        let lines: Vec<Line> = all
            .iter()
            .filter(|(_, f, _, _)| !get(f).is_empty())
            .map(|(run, f, prefix, dashed)| {
                let at = match &shared {
                    Some(_) => String::new(),
                    None => format!(" at {}", rung_name(run, f)),
                };
                line(format!("{prefix}{what}{at}"), get(f), color, *dashed)
            })
            .collect();
        if lines.is_empty() {
            continue;
        }
        out.push(ChartSpec {
            id,
            title: match &shared {
                Some(n) => format!("{what} distribution at {n}"),
                None => format!("{what} distribution at each run's rung"),
            },
            y_desc: "% of requests at or below".into(),
            lines,
            markers: bound
                .map(|b| Marker {
                    rate: b,
                    label: format!("SLO {what} {} ms", crate::results::rate_label(b)),
                    color: KNEE,
                })
                .into_iter()
                .collect(),
            hline: None,
            x_max: 0.0,
            extra: Extra {
                x_desc: Some(format!("{what} (ms)")),
                no_dots: true,
                ..Extra::default()
            },
        });
    }
    out.extend(timelines(report, &all, shared.as_deref()));
    out
}

/// The focus rung over time: sends, completions, failures and requests in flight; TTFT by
/// send time.
fn timelines(
    report: &Report,
    all: &[(&RunReport, &Focus, String, bool)],
    shared: Option<&str>,
) -> Vec<ChartSpec> {
    let mut load = Vec::new();
    let mut ttft = Vec::new();
    let mut markers = Vec::new();
    let mut repeats = false;
    for (run, f, prefix, dashed) in all {
        let Some(t) = &f.timeline else { continue };
        repeats |= t.first_of_repeats;
        let p = match shared {
            Some(_) => prefix.clone(),
            None => format!("{prefix}{} ", rung_name(run, f)),
        };
        load.push(line(format!("{p}sent/s"), t.sends.clone(), BLUE_, *dashed));
        load.push(line(
            format!("{p}completed/s"),
            t.completions.clone(),
            GREEN_,
            *dashed,
        ));
        if !t.failures.is_empty() {
            load.push(line(
                format!("{p}failed/s"),
                t.failures.clone(),
                RED_,
                *dashed,
            ));
        }
        load.push(line(
            format!("{p}in flight"),
            t.in_flight.clone(),
            ORANGE_,
            *dashed,
        ));
        if !t.ttft_median.is_empty() {
            ttft.push(line(
                format!("{p}TTFT median"),
                t.ttft_median.clone(),
                BLUE_,
                *dashed,
            ));
            ttft.push(line(
                format!("{p}TTFT max"),
                t.ttft_max.clone(),
                RED_,
                *dashed,
            ));
        }
        if let Some(w) = t.warmup_end {
            markers.push(Marker {
                rate: w,
                label: format!("{prefix}warmups end"),
                color: DARK,
            });
        }
    }
    let at = shared.map_or_else(|| "each run's rung".to_string(), str::to_string);
    let of = if repeats { " (first repeat)" } else { "" };
    let slo = report.runs.last().and_then(|r| r.slo.ttft_ms);
    let mut out = Vec::new();
    for (id, title, y_desc, lines, hlines) in [
        (
            "timeline",
            format!("Rung {at} over time{of}"),
            "req/s, or requests in flight",
            load,
            vec![],
        ),
        (
            "timeline-ttft",
            format!("TTFT by send time at {at}{of}"),
            "TTFT (ms)",
            ttft,
            slo.map(|s| (s, format!("SLO TTFT {} ms", crate::results::rate_label(s))))
                .into_iter()
                .collect(),
        ),
    ] {
        if lines.is_empty() {
            continue;
        }
        out.push(ChartSpec {
            id,
            title,
            y_desc: y_desc.into(),
            lines,
            markers: markers.clone(),
            hline: None,
            x_max: 0.0,
            extra: Extra {
                x_desc: Some("time since the rung's start (s), warmups included".into()),
                no_dots: true,
                hlines,
                ..Extra::default()
            },
        });
    }
    out
}
