//! From an interval and a bound to a verdict: pass, regression, improvement, inconclusive.

use std::fmt;

use super::stats::Interval;
use super::threshold::Bound;
use crate::scenario::Threshold;

/// The outcome of one check on one rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Within the threshold, beyond noise.
    Pass,
    /// Wholly beyond the threshold on the good side.
    Improvement,
    /// The interval straddles the threshold, or too few samples to tell.
    Inconclusive,
    /// Wholly beyond the threshold on the bad side.
    Regression,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "pass",
            Verdict::Improvement => "improvement",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Regression => "regression",
        })
    }
}

/// Which quantity an interval describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// candidate / baseline.
    Ratio,
    /// candidate − baseline.
    Diff,
    /// The candidate value itself.
    Value,
}

/// How an interval was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Seeded percentile bootstrap over requests.
    Bootstrap,
    /// Wilson interval / Newcombe difference interval of proportions.
    Proportion,
    /// No noise model: the summary values are compared as they are.
    Plain,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Bootstrap => "bootstrap",
            Method::Proportion => "wilson/newcombe",
            Method::Plain => "plain",
        })
    }
}

/// What the statistics say about one metric on one rung, before a bound is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// Summary values (`result_rate_<rate>.json`).
    pub base: f64,
    pub cand: f64,
    /// Intervals, when the method gives them.
    pub ratio: Option<Interval>,
    pub diff: Option<Interval>,
    pub cand_ci: Option<Interval>,
    pub method: Method,
    /// Requests per side behind the interval (the smaller side); 0 when not applicable.
    pub requests: usize,
    /// Set when the samples are too few for an interval: says how many are needed.
    pub too_few: Option<String>,
}

impl Evidence {
    /// Plain comparison of two values.
    pub fn plain(base: f64, cand: f64) -> Self {
        let ratio = if base == 0.0 {
            if cand == 0.0 {
                1.0
            } else {
                f64::INFINITY
            }
        } else {
            cand / base
        };
        Evidence {
            base,
            cand,
            ratio: Some(Interval::point(ratio)),
            diff: Some(Interval::point(cand - base)),
            cand_ci: Some(Interval::point(cand)),
            method: Method::Plain,
            requests: 0,
            too_few: None,
        }
    }
}

/// A decided check: the verdict, the interval it rests on and a note for humans.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub interval: Option<(Scale, Interval)>,
    pub note: String,
}

/// Apply `bound` to `e`. A relative bound on a metric with only a difference interval
/// (error_rate) becomes the absolute bound `fraction × baseline`.
pub fn decide(bound: Bound, e: &Evidence) -> Decision {
    // (scale, interval, bad limit, good limit, true when a high value is bad)
    let (scale, iv, bad, good, high_bad) = match bound {
        Bound::Increase(Threshold::Relative(t)) if e.ratio.is_some() => {
            (Scale::Ratio, e.ratio, 1.0 + t, Some(1.0 - t), true)
        }
        Bound::Increase(t) => (
            Scale::Diff,
            e.diff,
            abs(t, e.base),
            Some(-abs(t, e.base)),
            true,
        ),
        Bound::Decrease(Threshold::Relative(t)) if e.ratio.is_some() => {
            (Scale::Ratio, e.ratio, 1.0 - t, Some(1.0 + t), false)
        }
        Bound::Decrease(t) => (
            Scale::Diff,
            e.diff,
            -abs(t, e.base),
            Some(abs(t, e.base)),
            false,
        ),
        Bound::Max(v) => (Scale::Value, e.cand_ci, v, None, true),
        Bound::Min(v) => (Scale::Value, e.cand_ci, v, None, false),
    };
    if let Some(why) = &e.too_few {
        return Decision {
            verdict: Verdict::Inconclusive,
            interval: None,
            note: why.clone(),
        };
    }
    let Some(iv) = iv.filter(Interval::is_bounded) else {
        return Decision {
            verdict: Verdict::Inconclusive,
            interval: iv.map(|i| (scale, i)),
            note: "the interval is unbounded (a baseline of zero?)".into(),
        };
    };
    // Map to "high is bad" so one set of comparisons serves both directions.
    let s = if high_bad { 1.0 } else { -1.0 };
    let (lo, hi) = if high_bad {
        (iv.lo, iv.hi)
    } else {
        (-iv.hi, -iv.lo)
    };
    let (bad_s, good_s) = (s * bad, good.map(|g| s * g));
    let verdict = if lo > bad_s {
        Verdict::Regression
    } else if good_s.is_some_and(|g| hi < g) {
        Verdict::Improvement
    } else if hi > bad_s {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    let note = match verdict {
        Verdict::Inconclusive => format!(
            "interval straddles the threshold {}; {}",
            limit_text(scale, bad),
            needed(scale, iv, e, bad)
        ),
        _ => String::new(),
    };
    Decision {
        verdict,
        interval: Some((scale, iv)),
        note,
    }
}

/// How many requests per side would make the interval clear the threshold if the point
/// estimate stayed where it is: the half-width shrinks as 1/sqrt(n) (on the log scale for
/// ratios).
fn needed(scale: Scale, iv: Interval, e: &Evidence, bad: f64) -> String {
    let (point, lo, hi, limit) = match scale {
        Scale::Ratio if e.base > 0.0 && e.cand > 0.0 && iv.lo > 0.0 && bad > 0.0 => {
            ((e.cand / e.base).ln(), iv.lo.ln(), iv.hi.ln(), bad.ln())
        }
        Scale::Ratio => (f64::NAN, 0.0, 0.0, 0.0),
        Scale::Diff => (e.cand - e.base, iv.lo, iv.hi, bad),
        Scale::Value => (e.cand, iv.lo, iv.hi, bad),
    };
    let half = (hi - lo) / 2.0;
    let dist = (point - limit).abs();
    if e.requests == 0 || !point.is_finite() || dist == 0.0 || half <= 0.0 {
        return "more requests per rung (or repeated runs) would settle it".into();
    }
    let n = (e.requests as f64 * (half / dist).powi(2)).ceil();
    format!(
        "about {} requests per rung would settle it if the change stays where it is",
        n as u64
    )
}

fn abs(t: Threshold, base: f64) -> f64 {
    match t {
        Threshold::Relative(r) => r * base.abs(),
        Threshold::Absolute(a) => a,
    }
}

fn limit_text(scale: Scale, v: f64) -> String {
    match scale {
        Scale::Ratio => format!("x{}", super::render::num(v)),
        Scale::Diff => format!(
            "{}{}",
            if v >= 0.0 { "+" } else { "" },
            super::render::num(v)
        ),
        Scale::Value => super::render::num(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(lo: f64, hi: f64) -> Evidence {
        Evidence {
            base: 100.0,
            cand: 100.0 * (lo + hi) / 2.0,
            ratio: Some(Interval { lo, hi }),
            diff: Some(Interval {
                lo: 100.0 * (lo - 1.0),
                hi: 100.0 * (hi - 1.0),
            }),
            cand_ci: Some(Interval {
                lo: 100.0 * lo,
                hi: 100.0 * hi,
            }),
            method: Method::Bootstrap,
            requests: 200,
            too_few: None,
        }
    }

    #[test]
    fn increase_bounds() {
        let b = Bound::Increase(Threshold::Relative(0.10));
        assert_eq!(decide(b, &ev(1.15, 1.3)).verdict, Verdict::Regression);
        let d = decide(b, &ev(1.05, 1.2));
        assert_eq!(d.verdict, Verdict::Inconclusive);
        // Point x1.125, half-width ~0.067 on the log scale, 0.0225 from ln 1.1: ~1,800.
        assert!(
            d.note.contains("about 1") && d.note.contains("requests per rung"),
            "{}",
            d.note
        );
        assert_eq!(decide(b, &ev(0.95, 1.05)).verdict, Verdict::Pass);
        assert_eq!(decide(b, &ev(0.85, 0.95)).verdict, Verdict::Pass);
        assert_eq!(decide(b, &ev(0.6, 0.8)).verdict, Verdict::Improvement);
    }

    #[test]
    fn decrease_and_absolute_bounds() {
        let b = Bound::Decrease(Threshold::Relative(0.05));
        assert_eq!(decide(b, &ev(0.8, 0.9)).verdict, Verdict::Regression);
        assert_eq!(decide(b, &ev(0.9, 1.0)).verdict, Verdict::Inconclusive);
        assert_eq!(decide(b, &ev(0.97, 1.02)).verdict, Verdict::Pass);
        assert_eq!(decide(b, &ev(1.1, 1.2)).verdict, Verdict::Improvement);
        let a = Bound::Increase(Threshold::Absolute(10.0));
        assert_eq!(decide(a, &ev(1.11, 1.2)).verdict, Verdict::Regression);
        assert_eq!(
            decide(Bound::Max(120.0), &ev(1.0, 1.1)).verdict,
            Verdict::Pass
        );
        assert_eq!(
            decide(Bound::Max(105.0), &ev(1.0, 1.1)).verdict,
            Verdict::Inconclusive
        );
        assert_eq!(
            decide(Bound::Min(120.0), &ev(1.0, 1.1)).verdict,
            Verdict::Regression
        );
    }

    #[test]
    fn too_few_samples_is_inconclusive_with_the_reason() {
        let mut e = ev(2.0, 3.0);
        e.too_few = Some("need 299".into());
        let d = decide(Bound::Increase(Threshold::Relative(0.1)), &e);
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert_eq!(d.note, "need 299");
    }
}
