//! The `capacity` check: two capacity searches' answers (`capacity.json`), judged from
//! their intervals against a `max_decrease` or `min` bound (docs/capacity.md, "Gate").
//!
//! Each answer is a point with an interval `[lo, hi]` (highest level judged inside the SLO,
//! lowest judged outside). The candidate's capacity relative to the baseline's then lies in
//! `[cand.lo / base.hi, cand.hi / base.lo]` whenever both intervals hold their capacities.
//! `max_decrease: t` is a regression only when that whole ratio interval lies below
//! `1 − t`, a pass when it lies at or above `1 − t`, an improvement when it lies above
//! `1 + t`, and inconclusive when it straddles `1 − t`. `min: v` reads the candidate's own
//! interval the same way. The row's rung column says `search`.

use super::stats::Interval;
use super::threshold::{Bound, Check};
use super::verdict::{Decision, Method, Scale, Verdict};
use super::Row;
use crate::capacity::file::level_text;
use crate::capacity::{CapacityFile, CAPACITY_FILE};
use crate::scenario::Threshold;

/// The rung column of a capacity row: not a rung, the whole search.
pub const SEARCH_RATE: f64 = f64::NAN;

/// The row of one capacity check.
pub fn row(check: &Check, base: Option<&CapacityFile>, cand: Option<&CapacityFile>) -> Row {
    let point = |f: Option<&CapacityFile>| f.and_then(|f| f.answer.capacity).unwrap_or(f64::NAN);
    Row {
        rate: SEARCH_RATE,
        check: check.clone(),
        base: point(base),
        cand: point(cand),
        method: Method::Search,
        decision: decide(check.bound, base, cand),
        errors: None,
        schedule_bound: false,
    }
}

fn inconclusive(note: String) -> Decision {
    Decision {
        verdict: Verdict::Inconclusive,
        interval: None,
        note,
    }
}

/// An answer's interval; an end the search did not find is 0 below, infinity above.
fn ends(f: &CapacityFile) -> (f64, f64) {
    (
        f.answer.lo.unwrap_or(0.0),
        f.answer.hi.unwrap_or(f64::INFINITY),
    )
}

fn show(f: &CapacityFile) -> String {
    let (lo, hi) = ends(f);
    let end = |x: f64| {
        if x.is_finite() {
            level_text(x)
        } else {
            "inf".into()
        }
    };
    format!("[{}, {}] {}", end(lo), end(hi), f.unit)
}

/// The verdict of `bound` on the two answers.
pub fn decide(bound: Bound, base: Option<&CapacityFile>, cand: Option<&CapacityFile>) -> Decision {
    let missing = |which: &str| {
        inconclusive(format!(
            "the {which} has no {CAPACITY_FILE}: it is not a capacity search (load.search), or \
             its search was stopped before it wrote one; run the scenario's search on both sides"
        ))
    };
    let Some(c) = cand else {
        return missing("candidate");
    };
    if let Bound::Min(v) = bound {
        let (lo, hi) = ends(c);
        let iv = Interval { lo, hi };
        let verdict = if hi < v {
            Verdict::Regression
        } else if lo >= v {
            Verdict::Pass
        } else {
            Verdict::Inconclusive
        };
        let note = match verdict {
            Verdict::Inconclusive => format!(
                "the candidate's capacity interval {} contains the floor {v}: narrow it \
                 (search.precision, more requests per probe, or a higher budget)",
                show(c)
            ),
            _ => String::new(),
        };
        return Decision {
            verdict,
            interval: Some((Scale::Value, iv)),
            note,
        };
    }
    let Some(b) = base else {
        return missing("baseline");
    };
    if !b.same_quantity(c) {
        return inconclusive(format!(
            "the two searches held different SLOs or levels (baseline {} over {}, candidate {} \
             over {}): their capacities are different quantities",
            b.text, b.over, c.text, c.over
        ));
    }
    let ((bl, bh), (cl, ch)) = (ends(b), ends(c));
    let (scale, iv, bad, good) = match bound {
        Bound::Decrease(Threshold::Relative(t)) => {
            let lo = if bh.is_finite() { cl / bh } else { 0.0 };
            let hi = if bl > 0.0 { ch / bl } else { f64::INFINITY };
            (Scale::Ratio, Interval { lo, hi }, 1.0 - t, 1.0 + t)
        }
        Bound::Decrease(Threshold::Absolute(a)) => (
            Scale::Diff,
            Interval {
                lo: cl - bh,
                hi: ch - bl,
            },
            -a,
            a,
        ),
        Bound::Increase(_) | Bound::Max(_) => {
            return inconclusive(
                "a capacity is gated on its fall: use `max_decrease` or `min` (a rise or a \
                 ceiling is not a regression)"
                    .into(),
            )
        }
        Bound::Min(_) => unreachable!("handled above"),
    };
    let verdict = if iv.hi < bad {
        Verdict::Regression
    } else if iv.lo > good {
        Verdict::Improvement
    } else if iv.lo >= bad {
        Verdict::Pass
    } else {
        Verdict::Inconclusive
    };
    let note = match verdict {
        Verdict::Inconclusive => format!(
            "the capacity intervals (baseline {}, candidate {}) allow both a fall beyond the \
             threshold and none: narrow them (search.precision, more requests per probe, or a \
             higher budget)",
            show(b),
            show(c)
        ),
        Verdict::Regression => format!(
            "even the candidate's highest capacity in its interval ({}) is below the threshold \
             from the baseline's lowest ({})",
            show(c),
            show(b)
        ),
        _ => String::new(),
    };
    Decision {
        verdict,
        interval: Some((scale, iv)),
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::{Answer, Stop};

    fn file(capacity: f64, lo: f64, hi: f64) -> CapacityFile {
        CapacityFile {
            format_version: 1,
            over: "rate".into(),
            unit: "req/s".into(),
            slo: vec![crate::capacity::file::SloLine {
                metric: "p99_ttft_ms".into(),
                max: Some(500.0),
                min: None,
                per_request: None,
            }],
            confidence: 0.9,
            precision: "5%".into(),
            probes: vec![],
            answer: Answer {
                status: Stop::Converged,
                capacity: Some(capacity),
                lo: Some(lo),
                hi: Some(hi),
            },
            text: String::new(),
            requests: 0,
            spent_s: 0.0,
            warnings: vec![],
        }
    }

    fn drop5() -> Bound {
        Bound::Decrease(Threshold::Relative(0.05))
    }

    #[test]
    fn a_regression_needs_the_whole_ratio_interval_below_the_threshold() {
        let base = file(40.0, 39.0, 41.0);
        // 30 in [29, 31]: at most 31 / 39 = 0.79 of the baseline.
        let d = decide(drop5(), Some(&base), Some(&file(30.0, 29.0, 31.0)));
        assert_eq!(d.verdict, Verdict::Regression, "{d:?}");
        let (_, iv) = d.interval.unwrap();
        assert!((iv.hi - 31.0 / 39.0).abs() < 1e-12);
        // 38 in [36, 40]: the ratio lies in [0.878, 1.026], straddling 0.95.
        let d = decide(drop5(), Some(&base), Some(&file(38.0, 36.0, 40.0)));
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
        assert!(d.note.contains("narrow them"));
        // 40 in [39.5, 40.5]: at least 39.5 / 41 = 0.963.
        let d = decide(drop5(), Some(&base), Some(&file(40.0, 39.5, 40.5)));
        assert_eq!(d.verdict, Verdict::Pass, "{d:?}");
        // 50 in [49, 51]: at least 49 / 41 = 1.195 > 1.05.
        let d = decide(drop5(), Some(&base), Some(&file(50.0, 49.0, 51.0)));
        assert_eq!(d.verdict, Verdict::Improvement, "{d:?}");
    }

    #[test]
    fn an_open_end_never_proves_a_regression_or_a_pass_it_cannot() {
        let base = file(40.0, 39.0, 41.0);
        let mut above = file(0.0, 200.0, 0.0);
        above.answer = Answer {
            status: Stop::AboveMax,
            capacity: None,
            lo: Some(200.0),
            hi: None,
        };
        assert_eq!(
            decide(drop5(), Some(&base), Some(&above)).verdict,
            Verdict::Improvement
        );
        // The baseline at least 200, the candidate at most 41: a fall whatever the open end.
        let d = decide(drop5(), Some(&above), Some(&base));
        assert_eq!(d.verdict, Verdict::Regression, "{d:?}");
        // The candidate at least 200 against a baseline at least 200: unknown.
        let d = decide(drop5(), Some(&above), Some(&above));
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
    }

    #[test]
    fn a_floor_reads_the_candidates_own_interval() {
        let c = file(30.0, 29.0, 31.0);
        assert_eq!(
            decide(Bound::Min(32.0), None, Some(&c)).verdict,
            Verdict::Regression
        );
        assert_eq!(
            decide(Bound::Min(28.0), None, Some(&c)).verdict,
            Verdict::Pass
        );
        assert_eq!(
            decide(Bound::Min(30.0), None, Some(&c)).verdict,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn different_slos_or_a_missing_file_give_no_verdict() {
        let base = file(40.0, 39.0, 41.0);
        let mut other = file(30.0, 29.0, 31.0);
        other.slo[0].max = Some(400.0);
        let d = decide(drop5(), Some(&base), Some(&other));
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert!(d.note.contains("different SLOs"));
        let d = decide(drop5(), None, Some(&base));
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert!(d.note.contains("baseline has no capacity.json"));
    }
}
