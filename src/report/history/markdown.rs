//! The Markdown summary of a history (`ladder history --summary`).

use std::fmt::Write;

use super::{head, header, rows, step_line, verdict_line, HistoryExporter};
use crate::escape::markdown;
use crate::history::History;
use crate::report::ReportError;

/// The Markdown summary (`--summary`).
pub struct Markdown;

impl HistoryExporter for Markdown {
    fn render(&self, h: &History) -> Result<String, ReportError> {
        Ok(self::markdown(h))
    }
}

/// Ladder's words with outside text in them (a folder's reason, a path), on one line.
fn md_cell(s: &str) -> String {
    markdown::cell(&markdown::inline(s))
}

fn markdown(h: &History) -> String {
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
    out.push_str(&super::capacity::markdown(h));
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
