//! The terminal view of a comparison: config diff first, then the verdict table.

use std::fmt::Write;

use super::stats::Interval;
use super::verdict::{Scale, Verdict};
use super::{Comparison, Row};
use crate::format::num;

/// A signed number (`+1.5`, `-0.2`).
pub fn signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", num(v))
    } else {
        num(v)
    }
}

/// `+12.3%`, or `n/a` without a baseline.
pub fn pct(row: &Row) -> String {
    match row.pct() {
        Some(p) => format!("{}{:.1}%", if p > 0.0 { "+" } else { "" }, p),
        None => "n/a".into(),
    }
}

/// The interval a verdict rests on: `x[0.93, 1.08]` (ratio), `d[-0.01, +0.02]`
/// (difference), `[12, 15]` (value), `-` when there is none.
pub fn interval(i: Option<(Scale, Interval)>) -> String {
    match i {
        None => "-".into(),
        Some((Scale::Ratio, i)) => {
            let (lo, hi) = ratio_ends(i.lo, i.hi);
            format!("x[{lo}, {hi}]")
        }
        Some((Scale::Diff, i)) => format!("d[{}, {}]", signed(i.lo), signed(i.hi)),
        Some((Scale::Value, i)) => format!("[{}, {}]", num(i.lo), num(i.hi)),
    }
}

/// The ends of a ratio interval: three decimals below 10 (`1.062`, `1.118`: a verdict
/// against a 10 % threshold can be read off them), fewer beyond, and more when two
/// different ends would still print alike.
fn ratio_ends(lo: f64, hi: f64) -> (String, String) {
    if !lo.is_finite() || !hi.is_finite() {
        return (num(lo), num(hi));
    }
    let a = lo.abs().max(hi.abs());
    let mut decimals = if a < 10.0 {
        3
    } else if a < 100.0 {
        2
    } else {
        1
    };
    loop {
        let (l, h) = (format!("{lo:.decimals$}"), format!("{hi:.decimals$}"));
        if l != h || lo == hi || decimals >= 6 {
            return (l, h);
        }
        decimals += 1;
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
            super::Bound::Increase(_) | super::Bound::Decrease(_) => format!(
                "{} {},floor={}",
                r.check.label(),
                r.check.bound,
                super::threshold::floor_text(&r.check.metric, r.check.floor)
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
        return format!(
            "NO VERDICT: nothing could be judged: {} of {} check(s) inconclusive{saturated} (the \
             notes say what would settle them); exit 2, neither pass nor fail",
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

/// The full terminal report.
pub fn terminal(c: &Comparison, strict: bool) -> String {
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

/// One per-model line: `rate 20  sql-lora  median_tpot_ms  29.8 → 35.1 (+17.8 %)`.
pub fn model_row_text(c: &Comparison, r: &super::ModelRow) -> String {
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
/// [`report_rows`].
pub fn report_verdicts(c: &Comparison) -> crate::report::Verdicts {
    crate::report::Verdicts {
        headline: summary_line(c, false),
        rows: report_rows(c),
    }
}

/// The verdict table as the report's plain rows (`ladder report BASE CANDIDATE` overlays
/// them): change = `%delta interval`, detail = the threshold, the check's note, and for a
/// regression the server-side changes scraped at that rung.
pub fn report_rows(c: &Comparison) -> Vec<crate::report::VerdictRow> {
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
            crate::report::VerdictRow {
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

    /// Ratio ends that differ print differently: x[1.1, 1.1] told nothing.
    #[test]
    fn ratio_intervals_show_ends_that_differ() {
        let r = |lo, hi| interval(Some((Scale::Ratio, Interval { lo, hi })));
        assert_eq!(r(1.0623, 1.1184), "x[1.062, 1.118]");
        assert_eq!(r(1.098, 1.104), "x[1.098, 1.104]");
        assert_eq!(r(1.1, 1.1), "x[1.100, 1.100]");
        assert_eq!(r(1.00011, 1.00014), "x[1.00011, 1.00014]");
        assert_eq!(r(12.34, 56.78), "x[12.34, 56.78]");
        assert_eq!(r(0.5, f64::INFINITY), "x[0.5, inf]");
    }
}
