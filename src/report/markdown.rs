//! `summary.md`: GitHub-flavoured Markdown, the rung table and the analysis of each run.

use std::fmt::Write;

use super::facts::{self, Fact};
use super::{
    prefix_table, reasoning_table, run_meta, rung_table, slo_text, Exporter, Report, ReportError,
    RunReport, PREFIX_NOTE,
};
use crate::escape::markdown::{inline, text};
use crate::results::rate_label;

/// The Markdown exporter.
pub struct Markdown;

/// A table cell: ladder's words with outside text escaped ([`inline`]), `|` escaped.
fn cell(s: &str) -> String {
    crate::escape::markdown::cell(&inline(s))
}

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>], right: &[bool]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = right
        .iter()
        .map(|&r| if r { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "| {} |", align.join(" | "));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}

fn run_section(out: &mut String, run: &RunReport, heading: &str) {
    let a = &run.analysis;
    let _ = writeln!(out, "{heading} {}\n", text(&run.label));
    let _ = writeln!(out, "{}\n", inline(&run_meta(run)));
    let _ = writeln!(out, "SLO: {}\n", inline(&slo_text(run)));
    if let Some(c) = &run.capacity {
        let _ = writeln!(out, "- **Capacity:** {}", inline(&c.text));
    }
    // A ramp is one rung: its windows below are its analysis, not a knee over rungs.
    let ramp = run.rungs.iter().find_map(|r| r.ramp.as_ref());
    if let Some(r) = ramp {
        let _ = writeln!(out, "- **Ramp:** {}", cell(&r.verdict()));
    } else {
        let _ = writeln!(out, "- **Knee:** {}", inline(&a.knee_text()));
        let within = run.info.load.within_slo();
        let _ = writeln!(out, "- **{within}:** {}", inline(&a.slo_text()));
        let _ = writeln!(
            out,
            "- **Best-value range:** {}",
            inline(&a.best_value_text())
        );
    }
    if let (Some(b), None) = (a.baseline_rate, ramp) {
        let _ = writeln!(
            out,
            "- **Baseline:** {} are against the {} rung",
            super::multiples_named(run),
            run.info.load.level(b)
        );
    }
    if let Some(line) = cache_line(run) {
        let _ = writeln!(out, "- **Prompt cache:** {}", cell(&line));
    }
    for w in &run.info.warnings {
        let _ = writeln!(out, "- **Warning:** {}", cell(w));
    }
    let (header, rows, never) = rung_table(run);
    if let Some(n) = never {
        let _ = writeln!(out, "- **Not recorded:** {}", cell(&n));
    }
    out.push('\n');
    let right: Vec<bool> = (0..header.len())
        .map(|i| i > 0 && i + 1 < header.len())
        .collect();
    table(out, &header, &rows, &right);
    out.push('\n');
    for ramp in run.rungs.iter().filter_map(|r| r.ramp.as_ref()) {
        let _ = writeln!(
            out,
            "Ramp {} -> {} req/s over {} s, by window of its scheduled send times (rates req/s, latencies ms):\n",
            ramp.from, ramp.to, ramp.over_s
        );
        out.push_str(&ramp.markdown_table());
        let _ = writeln!(out, "\n{}\n", inline(&ramp.verdict()));
    }
    if let Some((header, rows)) = reasoning_table(run) {
        let _ = writeln!(
            out,
            "Reasoning: TTFT is the first token of any kind; TTFC the first token of the \
             answer's content, after the model's reasoning.\n"
        );
        let right: Vec<bool> = (0..header.len()).map(|i| i > 0).collect();
        table(out, &header, &rows, &right);
        out.push('\n');
    }
    if let Some((header, rows)) = prefix_table(run) {
        let _ = writeln!(out, "Shared prefixes: {PREFIX_NOTE}\n");
        let right: Vec<bool> = (0..header.len()).map(|i| i > 0).collect();
        table(out, &header, &rows, &right);
        out.push('\n');
    }
    if let Some((header, rows)) = super::server_tokens_table(run) {
        let _ = writeln!(out, "Server-side tokens: {}\n", super::SERVER_TOKENS_NOTE);
        let right: Vec<bool> = (0..header.len()).map(|i| i > 0).collect();
        table(out, &header, &rows, &right);
        out.push('\n');
    }
    if let Some((header, rows)) = super::models::models_table(run) {
        let _ = writeln!(out, "Models: {}\n", super::models::MODELS_NOTE);
        let right: Vec<bool> = (0..header.len()).map(|i| i > 1).collect();
        table(out, &header, &rows, &right);
        out.push('\n');
    }
    if let Some((header, rows)) = super::sessions::sessions_table(run) {
        let _ = writeln!(out, "Sessions: {}\n", super::sessions::SESSIONS_NOTE);
        let right: Vec<bool> = (0..header.len()).map(|i| i > 0).collect();
        table(out, &header, &rows, &right);
        out.push('\n');
    }
    if let Some((header, rows)) = super::sessions::turns_table(run) {
        let _ = writeln!(
            out,
            "TTFT by turn: turn k carries the k earlier turns and their answers as history.\n"
        );
        let right: Vec<bool> = (0..header.len()).map(|i| i > 0).collect();
        table(out, &header, &rows, &right);
        out.push('\n');
    }
}

/// What the run sent (`workload.cache`) and each rung's server cache share, where the server
/// exported one; `None` when no rung has a share.
fn cache_line(run: &RunReport) -> Option<String> {
    let shares: Vec<String> = run
        .rungs
        .iter()
        .filter_map(|r| {
            let c = r.server.cache_share()?;
            Some(format!("{} {:.1}%", rate_label(r.rate), c * 100.0))
        })
        .collect();
    if shares.is_empty() {
        return None;
    }
    let sent = match (
        &run.info.prompt_nonce,
        run.info.scenario["workload"]["cache"].as_str(),
    ) {
        (_, Some("warm")) => "the seed's prompts (workload.cache: warm)".to_string(),
        (Some(n), _) => format!("new prompts (workload.cache: cold, prompt_nonce {n})"),
        (None, _) => "the seed's prompts (no prompt nonce)".to_string(),
    };
    Some(format!(
        "sent {sent}; server cache share by rung: {}",
        shares.join(", ")
    ))
}

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "summary.md"
    }

    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let mut out = String::new();
        if report.is_overlay() {
            let names: Vec<String> = report
                .runs
                .iter()
                .map(|r| text(&r.info.scenario_name))
                .collect();
            let _ = writeln!(out, "# ladder comparison: {}\n", names.join(" vs "));
            if let Some(v) = &report.verdicts {
                let _ = writeln!(out, "**{}**\n", inline(&v.headline));
            }
            let facts: Vec<Vec<Fact>> = report
                .runs
                .iter()
                .map(|r| facts::of(&r.info, &r.rungs))
                .collect();
            let sides: Vec<&[Fact]> = facts.iter().map(Vec::as_slice).collect();
            let labels: Vec<&str> = report.runs.iter().map(|r| r.label.as_str()).collect();
            let _ = writeln!(out, "{}", facts::markdown(&sides, &labels));
            if let Some(v) = report.verdicts.as_ref().filter(|v| !v.rows.is_empty()) {
                let _ = writeln!(out, "## Verdicts\n");
                let rows: Vec<Vec<String>> = v
                    .rows
                    .iter()
                    .map(|r| {
                        vec![
                            if r.rate.is_nan() {
                                "search".to_string()
                            } else {
                                rate_label(r.rate)
                            },
                            r.metric.clone(),
                            format!("{:.3}", r.base),
                            format!("{:.3}", r.candidate),
                            r.change.clone(),
                            r.verdict.clone(),
                            r.detail.clone(),
                        ]
                    })
                    .collect();
                table(
                    &mut out,
                    &[
                        report.load().axis(),
                        "metric",
                        "base",
                        "candidate",
                        "change",
                        "verdict",
                        "detail",
                    ],
                    &rows,
                    &[true, false, true, true, true, false, false],
                );
                out.push('\n');
            }
            for run in &report.runs {
                run_section(&mut out, run, "##");
            }
        } else {
            let run = &report.runs[0];
            let _ = writeln!(out, "# ladder report: {}\n", text(&run.info.scenario_name));
            let facts = facts::of(&run.info, &run.rungs);
            let _ = writeln!(out, "{}", facts::markdown(&[&facts], &[]));
            run_section(&mut out, run, "## Run");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn pipes_and_newlines_cannot_break_a_table_row() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
