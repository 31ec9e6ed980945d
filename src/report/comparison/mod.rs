//! The comparison's formats (`ladder compare`, `ladder gate`, and the verdicts of an overlay
//! report): one file per format, each a [`ComparisonExporter`] fed by the comparer's finished
//! [`Comparison`] (plain data: labels, the config diff, rows of numbers with their decision
//! and its note, whose words come from `compare::explain`). The words every format shares
//! (the summary line, the table's cells) are here.

pub mod json;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod terminal;

pub use junit::Junit;
pub use markdown::Markdown;
pub use terminal::Terminal;

use crate::compare::explain::interval;
use crate::compare::{Comparison, Row, Verdict};
use crate::format::{num, signed};

/// One text format of a comparison: the sibling of [`super::Exporter`] (whose view model is
/// one run or two) for the comparer's answer. `strict` counts inconclusive checks as
/// failures (`--strict`).
pub trait ComparisonExporter {
    /// The document.
    fn render(&self, c: &Comparison, strict: bool) -> String;
}

/// `+12.3%`, or `n/a` without a baseline.
pub fn pct(row: &Row) -> String {
    match row.pct() {
        Some(p) => format!("{}{:.1}%", if p > 0.0 { "+" } else { "" }, p),
        None => "n/a".into(),
    }
}

/// The rung column of a row: its level, or `search` for a capacity check (which judges the
/// two searches' answers, not one rung).
pub fn rung_cell(rate: f64) -> String {
    if rate.is_nan() {
        "search".into()
    } else {
        num(rate)
    }
}

/// Verdict word as shown in tables (regressions shouted).
pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Improvement => "improvement",
        Verdict::PastSaturation => "past saturation",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Regression => "REGRESSION",
    }
}

/// The table columns of a row.
pub fn cells(r: &Row) -> [String; 9] {
    [
        rung_cell(r.rate),
        r.check.label(),
        r.check.threshold_text(),
        num(r.base),
        num(r.cand),
        signed(r.delta()),
        pct(r),
        interval(r.decision.interval),
        verdict_word(r.decision.verdict).to_string(),
    ]
}

/// Column headers matching [`cells`].
pub const HEADERS: [&str; 9] = [
    "rate",
    "metric",
    "threshold",
    "base",
    "candidate",
    "delta",
    "%delta",
    "interval",
    "verdict",
];

/// [`HEADERS`] with the first column named for the ladder's kind (`rate` or `users`).
pub fn headers(load: crate::scenario::LoadKind) -> [&'static str; 9] {
    let mut h = HEADERS;
    match load {
        crate::scenario::LoadKind::Concurrency => h[0] = "users",
        crate::scenario::LoadKind::Trace => h[0] = "speed",
        _ => {}
    }
    h
}

/// Every distinct check with its floor (the floor applies to change bounds).
pub fn checks_listing(c: &Comparison) -> String {
    let mut seen: Vec<String> = Vec::new();
    for r in &c.rows {
        let t = match r.check.bound {
            crate::compare::Bound::Increase(_) | crate::compare::Bound::Decrease(_) => format!(
                "{} {},floor={}",
                r.check.label(),
                r.check.bound,
                crate::compare::threshold::floor_text(&r.check.metric, r.check.floor)
            ),
            _ => format!("{} {}", r.check.label(), r.check.bound),
        };
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    format!("  {}", seen.join("; "))
}

/// One-line overall summary.
pub fn summary_line(c: &Comparison, strict: bool) -> String {
    if !c.failed(strict) && c.no_verdict() {
        let saturated = match c.count(Verdict::PastSaturation) {
            0 => String::new(),
            n => format!(", {n} past saturation (not judged)"),
        };
        let kept_up = match c.schedule_passes() {
            0 => String::new(),
            n => format!(
                ", {n} throughput pass(es) below saturation (the offered rate, which both runs \
                 share: the server kept up, which says nothing of its speed)"
            ),
        };
        return format!(
            "NO VERDICT: nothing could be judged: {} of {} check(s) inconclusive{saturated}{kept_up} \
             (the notes say what would settle them); exit 2, neither pass nor fail",
            c.count(Verdict::Inconclusive),
            c.rows.len()
        );
    }
    let verdict = if c.failed(strict) { "FAIL" } else { "PASS" };
    let saturated = match c.count(Verdict::PastSaturation) {
        0 => String::new(),
        n => format!(", {n} past saturation (not judged)"),
    };
    format!(
        "{verdict}: {} regression(s), {} inconclusive{}, {} improvement(s), {} pass{saturated} over {} check(s)",
        c.count(Verdict::Regression),
        c.count(Verdict::Inconclusive),
        if strict { " (strict: counted as failures)" } else { "" },
        c.count(Verdict::Improvement),
        c.count(Verdict::Pass),
        c.rows.len()
    )
}

/// One per-model line: `rate 20  sql-lora  median_tpot_ms  29.8 → 35.1 (+17.8 %)`.
pub fn model_row_text(c: &Comparison, r: &crate::compare::ModelRow) -> String {
    let change = if r.base != 0.0 && r.base.is_finite() && r.cand.is_finite() {
        format!(" ({:+.1} %)", 100.0 * (r.cand - r.base) / r.base.abs())
    } else {
        String::new()
    };
    format!(
        "{} {}  {}  {}  {} → {}{change}",
        c.load.name(),
        rung_cell(r.rate),
        r.model,
        r.metric,
        num(r.base),
        num(r.cand)
    )
}

/// The comparison as the overlay report shows it: [`summary_line`] as its headline, and
/// [`rows`].
pub fn verdicts(c: &Comparison) -> super::Verdicts {
    super::Verdicts {
        headline: summary_line(c, false),
        rows: rows(c),
    }
}

/// The verdict table as the report's plain rows (`ladder report BASE CANDIDATE` overlays
/// them): change = `%delta interval`, detail = the threshold, the check's note, and for a
/// regression the server-side changes scraped at that rung.
pub fn rows(c: &Comparison) -> Vec<super::VerdictRow> {
    c.rows
        .iter()
        .map(|r| {
            let mut detail = r.check.threshold_text();
            if !r.decision.note.is_empty() {
                detail = format!("{detail}; {}", r.decision.note);
            }
            if r.decision.verdict == Verdict::Regression {
                for (_, n) in c.server_notes.iter().filter(|(rate, _)| *rate == r.rate) {
                    detail = format!("{detail}; server side: {n}");
                }
            }
            super::VerdictRow {
                rate: r.rate,
                metric: r.check.label(),
                base: r.base,
                candidate: r.cand,
                change: format!("{} {}", pct(r), interval(r.decision.interval)),
                verdict: verdict_word(r.decision.verdict).to_string(),
                detail,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_stable() {
        assert_eq!(num(5.0), "5");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(123.456), "123.5");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(0.012345), "0.0123");
        assert_eq!(signed(0.25), "+0.25");
        assert_eq!(num(f64::NAN), "n/a");
    }
}
