//! The terminal view of a history: a table per rung, then the change points with their
//! configuration diffs.

use std::fmt::Write;

use super::{head, header, rows, step_line, table, HistoryExporter};
use crate::history::History;
use crate::report::ReportError;

/// The tables `ladder history` prints (plain text: the caller escapes it for the terminal).
pub struct Terminal;

impl HistoryExporter for Terminal {
    fn render(&self, h: &History) -> Result<String, ReportError> {
        Ok(terminal(h))
    }
}

fn terminal(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "history: {}", header(h));
    for rate in &h.rates {
        let _ = writeln!(out, "\n{}", h.load.rung(*rate));
        let head = head(h);
        let rows = rows(h, *rate);
        table(&mut out, &head, &rows);
    }
    out.push_str(&super::capacity::terminal(h));
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
