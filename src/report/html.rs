//! `report.html`: one self-contained page (inline CSS and SVG, no scripts, nothing fetched):
//! the analysis, the charts with their legends, the verdicts of an overlay, the rung table.

use std::fmt::Write;

use super::charts::{self, css};
use super::facts::{self, Fact};
use super::{
    prefix_table, reasoning_table, run_meta, rung_table, slo_text, Exporter, Report, ReportError,
    RunReport, PREFIX_NOTE,
};
use crate::escape::html::esc;
use crate::results::rate_label;

/// The HTML exporter.
pub struct Html;

/// The page style, shared with `ladder history`'s page.
pub const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 24px; color: #222; max-width: 1280px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #555; font-size: 13px; margin: 2px 0; }
dl.analysis { display: grid; grid-template-columns: max-content auto; gap: 4px 16px; margin: 8px 0; }
dl.analysis dt { font-weight: 600; }
dl.analysis dd { margin: 0; }
.warn { color: #8a5300; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(600px, 1fr)); gap: 16px; }
figure.chart { margin: 0; border: 1px solid #e4e4e4; border-radius: 4px; padding: 6px; background: #fff; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 12px; display: flex; flex-wrap: wrap; gap: 4px 14px; padding: 4px 8px; }
.sw { display: inline-block; width: 22px; height: 0; border-top: 3px solid; vertical-align: middle; margin-right: 5px; }
.sw.dashed { border-top-style: dashed; }
.sw.under { border-top-width: 6px; opacity: 0.45; }
table { border-collapse: collapse; font-size: 12.5px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 7px; }
th { background: #f4f4f4; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
tr.knee td { background: #fdecec; }
tr.miss td:last-child { color: #b00; }
.regression { color: #b00; font-weight: 600; }
.improvement { color: #070; font-weight: 600; }
table.facts th { text-align: left; font-weight: 600; white-space: nowrap; }
table.facts tr.differs th, table.facts tr.differs td { background: #fff4d6; }
p.headline { font-size: 16px; font-weight: 600; padding: 6px 10px; border-radius: 4px; margin: 10px 0; }
p.headline.pass { background: #e6f4e6; color: #064; }
p.headline.fail { background: #fdecec; color: #a00; }
p.headline.none { background: #f1f1f1; color: #444; }
";

fn analysis_block(out: &mut String, run: &RunReport) {
    let a = &run.analysis;
    let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&run_meta(run)));
    let _ = writeln!(out, "<dl class=\"analysis\">");
    let mut item = |k: &str, v: String| {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    };
    item("SLO", slo_text(run));
    if let Some(c) = &run.capacity {
        item("Capacity", c.text.clone());
    }
    // A ramp is one rung: where its windows broke is its analysis, not a knee over rungs.
    let ramp = run.rungs.iter().find_map(|r| r.ramp.as_ref());
    if let Some(r) = ramp {
        item("Ramp", r.verdict());
    } else {
        item("Knee", a.knee_text());
        item(run.info.load.within_slo(), a.slo_text());
        item("Best-value range", a.best_value_text());
    }
    if let (Some(b), None) = (a.baseline_rate, ramp) {
        item(
            "Baseline",
            format!(
                "{} are against the {} rung",
                super::multiples_named(run),
                run.info.load.level(b)
            ),
        );
    }
    let _ = writeln!(out, "</dl>");
    for w in &run.info.warnings {
        let _ = writeln!(out, "<p class=\"warn\">Warning: {}</p>", esc(w));
    }
    if let (_, _, Some(n)) = rung_table(run) {
        let _ = writeln!(out, "<p class=\"meta\">Not recorded: {}</p>", esc(&n));
    }
}

/// The "what was run" block: one run's facts, or two side by side with the lines that
/// differ marked.
fn facts_block(out: &mut String, report: &Report) {
    let facts: Vec<Vec<Fact>> = report
        .runs
        .iter()
        .map(|r| facts::of(&r.info, &r.rungs))
        .collect();
    let _ = writeln!(out, "<table class=\"facts\"><tbody>");
    match facts.as_slice() {
        [one] => {
            for f in one {
                let _ = writeln!(
                    out,
                    "<tr><th>{}</th><td>{}</td></tr>",
                    esc(f.key),
                    esc(&f.value)
                );
            }
        }
        [a, b, ..] => {
            let _ = writeln!(
                out,
                "<tr><th>what was run</th><th>{}</th><th>{}</th></tr>",
                esc(&report.runs[0].label),
                esc(&report.runs[1].label)
            );
            for r in facts::pair(a, b) {
                let (cls, mark) = match r.differs {
                    true => (" class=\"differs\"", " (differs)"),
                    false => ("", ""),
                };
                let _ = writeln!(
                    out,
                    "<tr{cls}><th>{}{mark}</th><td>{}</td><td>{}</td></tr>",
                    esc(r.key),
                    esc(&r.values[0]),
                    esc(&r.values[1])
                );
            }
        }
        [] => {}
    }
    let _ = writeln!(out, "</tbody></table>");
}

/// The comparer's one-line verdict, coloured by what it says.
fn headline(out: &mut String, v: &super::Verdicts) {
    let cls = if v.headline.starts_with("PASS") {
        "pass"
    } else if v.headline.starts_with("FAIL") {
        "fail"
    } else {
        "none"
    };
    let _ = writeln!(out, "<p class=\"headline {cls}\">{}</p>", esc(&v.headline));
}

fn reasoning_table_html(out: &mut String, run: &RunReport) {
    side_table_html(
        out,
        "Reasoning",
        "TTFT is the first token of any kind; TTFC the first token of the answer's content, \
         after the model's reasoning.",
        reasoning_table(run),
    );
}

fn prefix_table_html(out: &mut String, run: &RunReport) {
    side_table_html(out, "Shared prefixes", PREFIX_NOTE, prefix_table(run));
}

/// A table beside the rung table, with its title and a note; nothing without a table.
fn side_table_html(
    out: &mut String,
    title: &str,
    note: &str,
    table: Option<(Vec<&'static str>, Vec<Vec<String>>)>,
) {
    let Some((header, rows)) = table else {
        return;
    };
    let _ = writeln!(out, "<h3>{}</h3>\n<p>{}</p>", esc(title), esc(note));
    let _ = writeln!(out, "<table class=\"rungs\"><thead><tr>");
    for h in &header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    for row in rows {
        let _ = write!(out, "<tr>");
        for (i, c) in row.iter().enumerate() {
            let cls = if i > 0 { " class=\"num\"" } else { "" };
            let _ = write!(out, "<td{cls}>{}</td>", esc(c));
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</tbody></table>");
}

/// A ramp rung's windows (docs/ramp.md), with the windows that missed the SLO marked.
fn ramp_table_html(out: &mut String, run: &RunReport) {
    for ramp in run.rungs.iter().filter_map(|r| r.ramp.as_ref()) {
        let _ = writeln!(
            out,
            "<h3>Ramp {} &rarr; {} req/s by window</h3>\n<p>Rates in req/s, latencies in ms, \
             windows by scheduled send time.</p>",
            ramp.from, ramp.to
        );
        let _ = writeln!(out, "<table class=\"rungs\"><thead><tr>");
        for h in crate::metrics::ramp_report::RampReport::HEADERS {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        let _ = writeln!(out, "</tr></thead><tbody>");
        for (w, row) in ramp.windows.iter().zip(ramp.rows()) {
            let miss = if w.meets_slo == Some(false) {
                " class=\"miss\""
            } else {
                ""
            };
            let _ = write!(out, "<tr{miss}>");
            for (i, c) in row.iter().enumerate() {
                let cls = if i > 0 { " class=\"num\"" } else { "" };
                let _ = write!(out, "<td{cls}>{}</td>", esc(c));
            }
            let _ = writeln!(out, "</tr>");
        }
        let _ = writeln!(out, "</tbody></table>");
    }
}

fn rung_table_html(out: &mut String, run: &RunReport) {
    let (header, rows, _) = rung_table(run);
    let knee = run.analysis.knee.as_ref().map(|k| k.rate);
    let _ = writeln!(out, "<table class=\"rungs\"><thead><tr>");
    for h in &header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    for (r, row) in run.rungs.iter().zip(rows) {
        let mut class = Vec::new();
        if Some(r.rate) == knee {
            class.push("knee");
        }
        if run.analysis.rung(r.rate).is_some_and(|a| !a.meets_slo) {
            class.push("miss");
        }
        let _ = write!(out, "<tr class=\"{}\">", class.join(" "));
        let last = row.len() - 1;
        for (i, c) in row.iter().enumerate() {
            let cls = if i > 0 && i < last {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{cls}>{}</td>", esc(c));
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</tbody></table>");
}

fn verdict_table(out: &mut String, rows: &[super::VerdictRow], axis: &str) {
    let _ = write!(
        out,
        "<h2>Verdicts</h2>\n<table class=\"verdicts\"><thead><tr><th>{}</th>",
        esc(axis)
    );
    let _ = writeln!(out, "<th>metric</th><th>base</th><th>candidate</th><th>change</th><th>verdict</th><th>detail</th></tr></thead><tbody>");
    for r in rows {
        let cls = r.verdict.to_lowercase().replace(' ', "-");
        let _ = writeln!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            esc(&if r.rate.is_nan() {
                "search".to_string()
            } else {
                rate_label(r.rate)
            }),
            esc(&r.metric),
            r.base,
            r.candidate,
            esc(&r.change),
            esc(&cls),
            esc(&r.verdict),
            esc(&r.detail)
        );
    }
    let _ = writeln!(out, "</tbody></table>");
}

impl Exporter for Html {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let title = if report.is_overlay() {
            format!(
                "ladder comparison: {}",
                report
                    .runs
                    .iter()
                    .map(|r| format!("{} ({})", r.info.scenario_name, r.label))
                    .collect::<Vec<_>>()
                    .join(" vs ")
            )
        } else {
            format!("ladder report: {}", report.runs[0].info.scenario_name)
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
            esc(&title)
        );
        let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
        if let Some(v) = &report.verdicts {
            headline(&mut out, v);
        }
        facts_block(&mut out, report);
        if report.is_overlay() {
            let _ = writeln!(
                out,
                "<p class=\"meta\">Dashed curves: base; solid curves: candidate.</p>"
            );
        }
        for run in &report.runs {
            if report.is_overlay() {
                let _ = writeln!(
                    out,
                    "<h2>{} <span class=\"meta\">{}</span></h2>",
                    esc(&run.label),
                    esc(&run.dir.display().to_string())
                );
            }
            analysis_block(&mut out, run);
        }
        if let Some(v) = report.verdicts.as_ref().filter(|v| !v.rows.is_empty()) {
            verdict_table(&mut out, &v.rows, report.load().axis());
        }

        let _ = writeln!(out, "<h2>Charts</h2>\n<div class=\"charts\">");
        for spec in super::chart_specs::specs(report) {
            let svg = match &spec.extra.x_desc {
                Some(d) => charts::render_svg_x(&spec, charts::XKind::Linear, d)?,
                None => charts::render_svg_x(&spec, charts::XKind::Rate, report.x_desc())?,
            };
            let _ = writeln!(out, "<figure class=\"chart\" id=\"chart-{}\">", spec.id);
            out.push_str(svg.trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
            let _ = writeln!(out, "\n<figcaption>");
            for l in &spec.lines {
                let _ = writeln!(
                    out,
                    "<span><span class=\"sw{}\" style=\"border-color:{}\"></span>{}</span>",
                    match (l.dashed, l.under) {
                        (true, true) => " dashed under",
                        (true, false) => " dashed",
                        (false, true) => " under",
                        (false, false) => "",
                    },
                    css(&l.color),
                    esc(&l.label)
                );
            }
            let _ = writeln!(out, "</figcaption>\n</figure>");
        }
        let _ = writeln!(out, "</div>");

        for run in &report.runs {
            let _ = writeln!(
                out,
                "<h2>Rungs{}</h2>",
                if report.is_overlay() {
                    format!(": {}", esc(&run.label))
                } else {
                    String::new()
                }
            );
            rung_table_html(&mut out, run);
            reasoning_table_html(&mut out, run);
            ramp_table_html(&mut out, run);
            prefix_table_html(&mut out, run);
            side_table_html(
                &mut out,
                "Server-side tokens",
                super::SERVER_TOKENS_NOTE,
                super::server_tokens_table(run),
            );
            side_table_html(
                &mut out,
                "Models",
                super::models::MODELS_NOTE,
                super::models::models_table(run),
            );
            side_table_html(
                &mut out,
                "Sessions",
                super::sessions::SESSIONS_NOTE,
                super::sessions::sessions_table(run),
            );
            side_table_html(
                &mut out,
                "TTFT by turn",
                "turn k carries the k earlier turns and their answers as history.",
                super::sessions::turns_table(run),
            );
        }
        let _ = writeln!(out, "</body>\n</html>");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn markup_in_run_data_is_escaped() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}
