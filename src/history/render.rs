//! The history as text: the terminal table, the Markdown summary, the HTML page (with one
//! chart per metric, drawn by `report::charts`).

use std::fmt::Write;

use super::{History, Step};
use crate::escape::html::esc;
use crate::escape::markdown;
use crate::format::num;
use crate::report::charts::{self, ChartSpec, Line, Marker, XKind};
use crate::report::html::STYLE;
use crate::report::ReportError;
use crate::results::rate_label;

fn pct(s: &Step) -> String {
    match s.change.relative() {
        Some(r) => format!("{:+.1} %", r * 100.0),
        None => "n/a".into(),
    }
}

pub(super) fn direction(s: &Step) -> &'static str {
    if s.regression {
        "regression"
    } else if super::worse_direction(&s.metric).is_some() {
        "improvement"
    } else {
        "change"
    }
}

/// The series a step is of: `rate 10 median_ttft_ms`, or `capacity`.
fn series_name(s: &Step) -> String {
    match s.rate {
        Some(r) => format!("rate {} {}", rate_label(r), s.metric),
        None => s.metric.clone(),
    }
}

/// One line describing a change point.
pub fn step_line(h: &History, s: &Step) -> String {
    let f = &h.folders[s.folder];
    format!(
        "{}: step at #{} {} ({}): {} -> {} ({}), {}, p = {} ({})",
        series_name(s),
        s.folder + 1,
        f.name,
        f.dir.info.started_at.format("%Y-%m-%d %H:%M:%SZ"),
        num(s.change.before),
        num(s.change.after),
        pct(s),
        direction(s),
        num(s.change.p_value),
        s.change.test.name()
    )
}

/// The last line: what the exit code means here.
pub fn verdict_line(h: &History) -> String {
    let last = h.folders.len();
    let regs = h.latest_regressions();
    if regs.is_empty() {
        let at_last = h.steps.iter().filter(|s| s.folder + 1 == last).count();
        if at_last > 0 {
            format!("ok: the newest folder (#{last}) is a change point, but not a regression")
        } else {
            format!("ok: no change point at the newest folder (#{last})")
        }
    } else {
        let what: Vec<String> = regs
            .iter()
            .map(|s| match s.rate {
                Some(r) => format!("{} at rate {}", s.metric, rate_label(r)),
                None => s.metric.clone(),
            })
            .collect();
        format!(
            "regression: the newest folder (#{last}) is a change point for {}",
            what.join(", ")
        )
    }
}

fn header(h: &History) -> String {
    let (first, last) = (&h.folders[0], &h.folders[h.folders.len() - 1]);
    let rates = h
        .rates
        .iter()
        .map(|r| rate_label(*r))
        .collect::<Vec<_>>()
        .join(", ");
    let followed = match (h.rates.is_empty(), h.capacity.is_some()) {
        (false, false) => format!("rates {rates}"),
        (false, true) => format!("rates {rates} and capacity"),
        (true, _) => "capacity".to_string(),
    };
    format!(
        "{} folders from {} to {}; {followed}; alpha {} per test, {} permutations, seed {}",
        h.folders.len(),
        first.dir.info.started_at.format("%Y-%m-%d %H:%M:%SZ"),
        last.dir.info.started_at.format("%Y-%m-%d %H:%M:%SZ"),
        num(h.detect.alpha),
        h.detect.permutations,
        h.detect.seed
    )
}

/// The cell of one metric in one folder: value, with `▲`/`▼` where a step starts.
fn cell(h: &History, folder: usize, rate: f64, metric: &str) -> String {
    let Some(v) = h.folders[folder].value(rate, metric) else {
        return "-".into();
    };
    let step = h
        .steps
        .iter()
        .find(|s| s.folder == folder && s.rate == Some(rate) && s.metric == metric);
    match step {
        Some(s) if s.change.after > s.change.before => format!("{} ^", num(v)),
        Some(_) => format!("{} v", num(v)),
        None => num(v),
    }
}

fn rows(h: &History, rate: f64) -> Vec<Vec<String>> {
    (0..h.folders.len())
        .map(|i| {
            let f = &h.folders[i];
            let mut row = vec![
                format!("{}", i + 1),
                f.name.clone(),
                f.dir
                    .info
                    .git_commit
                    .as_deref()
                    .map(|c| c[..c.len().min(10)].to_string())
                    .unwrap_or_else(|| "-".into()),
            ];
            row.extend(h.metrics.iter().map(|m| cell(h, i, rate, m)));
            row
        })
        .collect()
}

fn head(h: &History) -> Vec<String> {
    let mut v = vec!["#".to_string(), "folder".into(), "commit".into()];
    v.extend(h.metrics.iter().cloned());
    v
}

/// The terminal view.
pub fn terminal(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "history: {}", header(h));
    for rate in &h.rates {
        let _ = writeln!(out, "\n{}", h.load.rung(*rate));
        let head = head(h);
        let rows = rows(h, *rate);
        let widths: Vec<usize> = (0..head.len())
            .map(|c| {
                rows.iter()
                    .map(|r| r[c].chars().count())
                    .chain(std::iter::once(head[c].len()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for r in std::iter::once(&head).chain(rows.iter()) {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
        }
    }
    out.push_str(&crate::report::history_capacity::terminal(h));
    let _ = writeln!(out, "\nchange points (^ up, v down in the tables):");
    if h.steps.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for s in &h.steps {
        let _ = writeln!(out, "  {}", step_line(h, s));
        match &s.config_diff {
            None => {
                let _ = writeln!(out, "    configuration: unchanged from #{}", s.previous + 1);
            }
            Some(d) => {
                let _ = writeln!(
                    out,
                    "    configuration diff #{} -> #{}:",
                    s.previous + 1,
                    s.folder + 1
                );
                for l in d.lines() {
                    let _ = writeln!(out, "      {l}");
                }
            }
        }
    }
    out
}

/// Ladder's words with outside text in them (a folder's reason, a path), on one line.
fn md_cell(s: &str) -> String {
    markdown::cell(&markdown::inline(s))
}

/// The Markdown summary (`--summary`).
pub fn markdown(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## ladder history\n\n{}\n\n**{}**\n",
        md_cell(&header(h)),
        md_cell(&verdict_line(h))
    );
    for rate in &h.rates {
        let _ = writeln!(out, "### {}\n", h.load.rung(*rate));
        let head = head(h);
        let _ = writeln!(out, "| {} |", head.join(" | "));
        let _ = writeln!(out, "|{}", " --- |".repeat(head.len()));
        for r in rows(h, *rate) {
            let cells: Vec<String> = r.iter().map(|c| md_cell(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out.push('\n');
    }
    out.push_str(&crate::report::history_capacity::markdown(h));
    let _ = writeln!(out, "### Change points\n");
    if h.steps.is_empty() {
        let _ = writeln!(out, "None.\n");
    }
    for s in &h.steps {
        let _ = writeln!(out, "- {}", md_cell(&step_line(h, s)));
        match &s.config_diff {
            None => {
                let _ = writeln!(out, "  - configuration unchanged from #{}", s.previous + 1);
            }
            Some(d) => {
                let _ = write!(out, "\n{}", indent(&markdown::fenced("diff", d), "  "));
            }
        }
    }
    if !h.skipped.is_empty() {
        let _ = writeln!(out, "\n### Skipped folders\n");
        for s in &h.skipped {
            let _ = writeln!(
                out,
                "- {}: {}",
                markdown::code(&s.path.display().to_string()),
                md_cell(&s.reason)
            );
        }
    }
    out
}

fn indent(text: &str, by: &str) -> String {
    text.lines().map(|l| format!("{by}{l}\n")).collect()
}

/// One chart per metric: a curve per rate over folder positions, a marker per change point;
/// then the capacity chart.
fn specs(h: &History) -> Vec<ChartSpec> {
    let mut specs = rung_specs(h);
    specs.extend(crate::report::history_capacity::chart(h));
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
                    points: super::series::series(&h.folders, *rate, metric)
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

/// The HTML page (`--html`): header, verdict, charts, tables, change points with diffs.
pub fn html(h: &History) -> Result<String, ReportError> {
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
    out.push_str(&crate::report::history_capacity::html_table(h));
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
