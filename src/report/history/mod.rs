//! The history's formats (`ladder history`): one file per format, each a [`HistoryExporter`]
//! fed by the [`History`] that `history::analyze` builds (the folders in time order, the
//! series' change points with their config diffs, notes). The words every format shares (a
//! step's line, the verdict line, the table's cells) are here.

pub(crate) mod capacity;
pub(crate) mod html;
pub mod json;
pub(crate) mod markdown;
pub(crate) mod terminal;

pub use html::Html;
pub use markdown::Markdown;
pub use terminal::Terminal;

use std::fmt::Write;

use super::ReportError;
use crate::format::num;
use crate::history::{Folder, History, Step};
use crate::results::rate_label;

/// One text format of a history: the sibling of [`super::Exporter`] for `ladder history`.
pub trait HistoryExporter {
    /// The document.
    fn render(&self, h: &History) -> Result<String, ReportError>;
}

pub(super) fn pct(s: &Step) -> String {
    match s.change.relative() {
        Some(r) => format!("{:+.1} %", r * 100.0),
        None => "n/a".into(),
    }
}

pub(super) fn direction(s: &Step) -> &'static str {
    if s.regression {
        "regression"
    } else if crate::history::worse_direction(&s.metric).is_some() {
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
    if regs.is_empty() && h.newest_unjudged() {
        format!(
            "no verdict: the newest folder (#{last}) has no capacity answer to judge (the note \
             above says why); run its search again, or follow its rungs with --metric"
        )
    } else if regs.is_empty() {
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

pub(super) fn header(h: &History) -> String {
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

pub(super) fn rows(h: &History, rate: f64) -> Vec<Vec<String>> {
    (0..h.folders.len())
        .map(|i| {
            let f = &h.folders[i];
            let mut row = vec![format!("{}", i + 1), f.name.clone(), short_commit(f)];
            row.extend(h.metrics.iter().map(|m| cell(h, i, rate, m)));
            row
        })
        .collect()
}

pub(super) fn head(h: &History) -> Vec<String> {
    let mut v = vec!["#".to_string(), "folder".into(), "commit".into()];
    v.extend(h.metrics.iter().cloned());
    v
}

/// `head` and `rows` as left-aligned columns, two spaces apart and indented two, one line
/// each (a rung's table, and the capacity table of [`capacity`]).
/// A folder's git commit as its table shows it: the first 10 characters, `-` without one.
pub(super) fn short_commit(f: &Folder) -> String {
    f.dir
        .info
        .git_commit
        .as_deref()
        .map(|c| crate::format::first_chars(c, 10).to_string())
        .unwrap_or_else(|| "-".into())
}

pub(super) fn table(out: &mut String, head: &[String], rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..head.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain(std::iter::once(head[c].len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(head).chain(rows.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
}
