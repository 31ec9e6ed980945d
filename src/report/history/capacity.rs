//! The capacity part of `ladder history` (docs/history.md, "Capacity"): a table of each
//! folder's capacity-search answer, point and interval, with the change points marked, for
//! the terminal, Markdown and HTML, and its chart over folder positions. Empty when the
//! history does not follow capacity.

use std::fmt::Write;

use super::{short_commit, table};
use crate::capacity::file::level_text;
use crate::capacity::Stop;
use crate::escape::{html::esc, markdown};
use crate::history::capacity::CapacitySeries;
use crate::history::History;
use crate::report::charts::{self, ChartSpec, Line, Marker};

/// The capacity series, when followed.
fn series(h: &History) -> Option<&CapacitySeries> {
    h.capacity.as_ref()
}

/// `capacity (req/s) at p90 TTFT <= 200 ms and error rate <= 0.05`.
fn title(c: &CapacitySeries) -> String {
    format!("capacity ({}) at {}", c.unit(), c.slo_text())
}

fn head() -> Vec<String> {
    ["#", "folder", "commit", "capacity", "interval", "stopped"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Why a search stopped, as capacity.json says it (`converged`, `above_max`, …).
fn stop_name(s: Stop) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// One row per folder with an answer: the point (`^`/`v` where a step starts), `[lo, hi]`
/// (`-` for an end the search did not find), why it stopped.
fn rows(h: &History, c: &CapacitySeries) -> Vec<Vec<String>> {
    let end = |x: Option<f64>| x.map_or("-".to_string(), level_text);
    c.answers
        .iter()
        .map(|a| {
            let f = &h.folders[a.folder];
            let step = h
                .steps
                .iter()
                .find(|s| s.rate.is_none() && s.folder == a.folder);
            let point = match (a.point(), step) {
                (None, _) => "-".to_string(),
                (Some(p), Some(s)) if s.change.after > s.change.before => {
                    format!("{} ^", level_text(p))
                }
                (Some(p), Some(_)) => format!("{} v", level_text(p)),
                (Some(p), None) => level_text(p),
            };
            let ans = &a.file.answer;
            vec![
                format!("{}", a.folder + 1),
                f.name.clone(),
                short_commit(f),
                point,
                format!("[{}, {}]", end(ans.lo), end(ans.hi)),
                stop_name(ans.status),
            ]
        })
        .collect()
}

/// The terminal's capacity table, after the rung tables.
pub fn terminal(h: &History) -> String {
    let Some(c) = series(h) else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(out, "\n{}", title(c));
    let head = head();
    let rows = rows(h, c);
    table(&mut out, &head, &rows);
    out
}

/// The Markdown summary's capacity table.
pub fn markdown(h: &History) -> String {
    let Some(c) = series(h) else {
        return String::new();
    };
    let cell = |s: &str| markdown::cell(&markdown::inline(s));
    let mut out = String::new();
    let _ = writeln!(out, "### {}\n", cell(&title(c)));
    let head = head();
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(head.len()));
    for r in rows(h, c) {
        let cells: Vec<String> = r.iter().map(|x| cell(x)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    out
}

/// The page's capacity table.
pub fn html_table(h: &History) -> String {
    let Some(c) = series(h) else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(out, "<h2>{}</h2>\n<table>\n<tr>", esc(&title(c)));
    for x in head() {
        let _ = write!(out, "<th>{}</th>", esc(&x));
    }
    let _ = writeln!(out, "</tr>");
    for r in rows(h, c) {
        let _ = write!(out, "<tr>");
        for x in r {
            let _ = write!(out, "<td class=\"num\">{}</td>", esc(&x));
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</table>");
    out
}

/// The capacity chart: the point of each folder's answer over folder positions, the ends of
/// its interval dashed, a marker at each change point.
pub fn chart(h: &History) -> Option<ChartSpec> {
    let c = series(h)?;
    let pos = |folder: usize| (folder + 1) as f64;
    let points = c.points().into_iter().map(|(f, p)| (pos(f), p)).collect();
    let end = |pick: fn(&crate::capacity::Answer) -> Option<f64>| -> Vec<(f64, f64)> {
        c.answers
            .iter()
            .filter_map(|a| pick(&a.file.answer).map(|x| (pos(a.folder), x)))
            .collect()
    };
    let unit = c.unit();
    let lines = vec![
        Line {
            label: format!("capacity ({unit})"),
            points,
            color: charts::color(0),
            dashed: false,
            under: false,
        },
        Line {
            label: "highest level inside the SLO".into(),
            points: end(|a| a.lo),
            color: charts::color(2),
            dashed: true,
            under: false,
        },
        Line {
            label: "lowest level outside it".into(),
            points: end(|a| a.hi),
            color: charts::color(3),
            dashed: true,
            under: false,
        },
    ];
    let markers = h
        .steps
        .iter()
        .filter(|s| s.rate.is_none())
        .map(|s| Marker {
            rate: pos(s.folder),
            label: format!(
                "#{} {}",
                s.folder + 1,
                s.change
                    .relative()
                    .map_or("n/a".into(), |r| format!("{:+.1} %", r * 100.0))
            ),
            color: charts::alert_color(),
        })
        .collect();
    Some(ChartSpec {
        id: "history",
        title: title(c),
        y_desc: format!("capacity ({unit})"),
        lines,
        markers,
        hline: None,
        x_max: h.folders.len() as f64,
        extra: Default::default(),
    })
}
