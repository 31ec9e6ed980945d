//! The words of a verdict: how an interval reads and what an inconclusive check's note says
//! of its limits. The verdict code ([`super::verdict`]) decides; this module only phrases
//! what it decided, with the ground floor's number formatter, and knows nothing of the
//! output formats (every renderer is in `report`, which shows these words as they are).

use super::stats::Interval;
use super::verdict_types::{Cond, Scale};
use crate::format::{num, signed};

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

/// The interval and what it does at its limit: an inconclusive check's conditions each
/// either straddle their limit or lie wholly past it (one within its limit is a pass).
fn interval_text(c: &Cond) -> String {
    format!(
        "{} {}",
        interval(Some((c.scale, c.iv))),
        if c.beyond_bad() {
            "lies wholly past"
        } else {
            "straddles"
        }
    )
}

fn limit_text(scale: Scale, v: f64) -> String {
    match scale {
        Scale::Ratio => format!("the threshold x{}", num(v)),
        Scale::Diff => format!("the limit {}{}", if v >= 0.0 { "+" } else { "" }, num(v)),
        Scale::Value => format!("the bound {}", num(v)),
    }
}

/// The note of an inconclusive check: at which level, each condition's interval against
/// its limit, and `settle` (what would settle it).
pub(super) fn inconclusive(level: f64, conds: &[Cond], settle: &str) -> String {
    let limits: Vec<String> = conds
        .iter()
        .map(|c| format!("{} {}", interval_text(c), limit_text(c.scale, c.bad)))
        .collect();
    // Inconclusive with an interval wholly past its limit: another condition (the
    // floor, or the threshold) is not surely passed, and a change counts only past both.
    let (why, join) = if conds.iter().any(Cond::beyond_bad) {
        (
            " (a change counts only when it is past every limit)",
            " but ",
        )
    } else {
        ("", " and ")
    };
    format!(
        "at the per-check level {}, {}{why}; {settle}",
        super::stats::level_text(level),
        limits.join(join),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn difference_and_value_intervals_and_none() {
        let iv = Interval {
            lo: -0.01,
            hi: 0.02,
        };
        assert_eq!(interval(Some((Scale::Diff, iv))), "d[-0.01, +0.02]");
        let iv = Interval { lo: 12.0, hi: 15.0 };
        assert_eq!(interval(Some((Scale::Value, iv))), "[12, 15]");
        assert_eq!(interval(None), "-");
    }
}
