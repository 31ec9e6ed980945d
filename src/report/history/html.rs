//! The HTML page of a history (`ladder history --html`): one chart per metric (drawn by
//! `report::charts`), the tables, the change points with their diffs.

use std::fmt::Write;

use super::{head, header, pct, rows, step_line, verdict_line, HistoryExporter};
use crate::escape::html::esc;
use crate::history::History;
use crate::report::charts::{self, ChartSpec, Line, Marker, XKind};
use crate::report::html::STYLE;
use crate::report::ReportError;

/// The HTML page (`--html`): header, verdict, charts, tables, change points with diffs.
pub struct Html;

impl HistoryExporter for Html {
    fn render(&self, h: &History) -> Result<String, ReportError> {
        html(h)
    }
}

/// One chart per metric: a curve per rate over folder positions, a marker per change point;
/// then the capacity chart.
fn specs(h: &History) -> Vec<ChartSpec> {
    let mut specs = rung_specs(h);
    specs.extend(super::capacity::chart(h));
    specs
}

fn rung_specs(h: &History) -> Vec<ChartSpec> {
    h.metrics
        .iter()
        .map(|metric| {
            let lines = h
                .rates
                .iter()
                .enumerate()
                .map(|(i, rate)| Line {
                    label: h.load.rung(*rate),
                    points: crate::history::series::series(&h.folders, *rate, metric)
                        .into_iter()
                        .map(|(f, v)| ((f + 1) as f64, v))
                        .collect(),
                    color: charts::color(i),
                    dashed: false,
                    under: false,
                })
                .collect();
            let markers = h
                .steps
                .iter()
                .filter(|s| &s.metric == metric)
                .map(|s| Marker {
                    rate: (s.folder + 1) as f64,
                    label: format!("#{} {}", s.folder + 1, pct(s)),
                    color: charts::alert_color(),
                })
                .collect();
            ChartSpec {
                id: "history",
                title: metric.clone(),
                y_desc: metric.clone(),
                lines,
                markers,
                hline: None,
                x_max: h.folders.len() as f64,
                extra: Default::default(),
            }
        })
        .collect()
}

fn html(h: &History) -> Result<String, ReportError> {
    let mut out = String::new();
    let title = format!("ladder history: {}", h.folders[0].dir.info.scenario_name);
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p class=\"meta\">{}</p>\n<p><strong>{}</strong></p>",
        esc(&title),
        esc(&title),
        esc(&header(h)),
        esc(&verdict_line(h))
    );
    let _ = writeln!(out, "<h2>Charts</h2>\n<div class=\"charts\">");
    for (n, spec) in specs(h).iter().enumerate() {
        let svg = charts::render_svg_x(spec, XKind::Index, "folder (# in time order)")?;
        let _ = writeln!(out, "<figure class=\"chart\" id=\"chart-{n}\">");
        out.push_str(svg.trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
        let _ = writeln!(out, "\n<figcaption>");
        for l in &spec.lines {
            let _ = writeln!(
                out,
                "<span><span class=\"sw\" style=\"border-color:{}\"></span>{}</span>",
                charts::css(&l.color),
                esc(&l.label)
            );
        }
        let _ = writeln!(out, "</figcaption>\n</figure>");
    }
    let _ = writeln!(out, "</div>");
    for rate in &h.rates {
        let _ = writeln!(out, "<h2>{}</h2>\n<table>\n<tr>", h.load.rung(*rate));
        for c in head(h) {
            let _ = write!(out, "<th>{}</th>", esc(&c));
        }
        let _ = writeln!(out, "</tr>");
        for r in rows(h, *rate) {
            let _ = write!(out, "<tr>");
            for c in r {
                let _ = write!(out, "<td class=\"num\">{}</td>", esc(&c));
            }
            let _ = writeln!(out, "</tr>");
        }
        let _ = writeln!(out, "</table>");
    }
    out.push_str(&super::capacity::html_table(h));
    let _ = writeln!(out, "<h2>Change points</h2>");
    if h.steps.is_empty() {
        let _ = writeln!(out, "<p>None.</p>");
    }
    for s in &h.steps {
        let class = if s.regression { "regression" } else { "" };
        let _ = writeln!(out, "<p class=\"{class}\">{}</p>", esc(&step_line(h, s)));
        match &s.config_diff {
            None => {
                let _ = writeln!(
                    out,
                    "<p class=\"meta\">configuration unchanged from #{}</p>",
                    s.previous + 1
                );
            }
            Some(d) => {
                let _ = writeln!(out, "<pre>{}</pre>", esc(d));
            }
        }
    }
    if !h.skipped.is_empty() {
        let _ = writeln!(out, "<h2>Skipped folders</h2>\n<ul>");
        for s in &h.skipped {
            let _ = writeln!(
                out,
                "<li><code>{}</code>: {}</li>",
                esc(&s.path.display().to_string()),
                esc(&s.reason)
            );
        }
        let _ = writeln!(out, "</ul>");
    }
    let _ = writeln!(out, "</body>\n</html>");
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn index_charts_have_a_linear_whole_number_axis() {
        use super::*;
        let spec = ChartSpec {
            id: "history",
            title: "median_ttft_ms".into(),
            y_desc: "median_ttft_ms".into(),
            lines: vec![Line {
                label: "rate 5 req/s".into(),
                points: (1..=40).map(|i| (i as f64, 50.0)).collect(),
                color: charts::color(0),
                dashed: false,
                under: false,
            }],
            markers: vec![],
            hline: None,
            x_max: 40.0,
            extra: Default::default(),
        };
        let svg = charts::render_svg_x(&spec, XKind::Index, "folder (# in time order)").unwrap();
        assert!(
            svg.contains("folder (# in time order)"),
            "no log scale on an index axis"
        );
        assert!(!svg.contains("log scale"));
        let ticks: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split('>').nth(1))
            .map(|t| t.split('<').next().unwrap_or("").trim())
            .collect();
        assert!(ticks.contains(&"40") || ticks.contains(&"35"), "{ticks:?}");
        assert!(
            !ticks.iter().any(|t| t.ends_with(".0")),
            "whole numbers: {ticks:?}"
        );
        // The rate axis keeps its description.
        let svg = charts::render_svg(&spec).unwrap();
        assert!(svg.contains("offered rate (req/s, log scale)"));
    }
}
