//! The terminal view of a comparison: config diff first, then the verdict table.

use std::fmt::Write;

use super::{
    cells, checks_listing, headers, model_row_text, rung_cell, summary_line, ComparisonExporter,
};
use crate::compare::{Comparison, Row};
use crate::format::num;

/// The verdict table as `ladder compare` prints it (plain text: the CLI escapes it for the
/// terminal and colours its verdict words).
pub struct Terminal;

impl ComparisonExporter for Terminal {
    fn render(&self, c: &Comparison, strict: bool) -> String {
        terminal(c, strict)
    }
}

/// The full terminal report.
fn terminal(c: &Comparison, strict: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "baseline:  {}", c.base_label);
    let _ = writeln!(o, "candidate: {}", c.cand_label);
    let _ = writeln!(o);
    match &c.config_diff {
        None => {
            let _ = writeln!(o, "no configuration change");
        }
        Some(d) => {
            let _ = writeln!(o, "configuration diff:");
            o.push_str(d);
        }
    }
    for ch in &c.config_changes {
        let _ = writeln!(
            o,
            "WARNING: {ch} (compared because of --allow-config-change)"
        );
    }
    for w in &c.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{}", c.knee.describe());
    let _ = writeln!(o, "checks: {}", c.checks_source);
    let _ = writeln!(o, "{}", checks_listing(c));
    let _ = writeln!(o, "level: {}", c.family.describe());
    let _ = writeln!(o, "{}", c.run_noise.describe());
    let _ = writeln!(o);
    let rows: Vec<[String; 9]> = c.rows.iter().map(cells).collect();
    let headers = headers(c.load);
    let mut width = headers.map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(width).enumerate() {
            // Numbers right-aligned, words left-aligned.
            if (3..=6).contains(&i) {
                let _ = write!(s, "{cell:>w$}  ");
            } else {
                let _ = write!(s, "{cell:<w$}  ");
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(o, "{}", line(&headers.map(String::from)));
    for r in &rows {
        let _ = writeln!(o, "{}", line(r));
    }
    let notes: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| !r.decision.note.is_empty())
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(o);
        for r in notes {
            let _ = writeln!(
                o,
                "note: {} {} {}: {}",
                c.load.name(),
                rung_cell(r.rate),
                r.check,
                r.decision.note
            );
        }
    }
    if !c.server_notes.is_empty() {
        let _ = writeln!(o);
        for (rate, n) in &c.server_notes {
            let _ = writeln!(o, "server side, {} {}: {n}", c.load.name(), num(*rate));
        }
    }
    if !c.model_rows.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "per model (shown, not judged; a gate rule with `model:` judges one):"
        );
        for r in &c.model_rows {
            let _ = writeln!(o, "  {}", model_row_text(c, r));
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{}", summary_line(c, strict));
    o
}
