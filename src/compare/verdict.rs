//! From an interval and a bound to a verdict: pass, regression, improvement, inconclusive.

use super::stats::Interval;
use super::threshold::Bound;
use super::verdict_types::Cond;
pub use super::verdict_types::{Counts, Decision, Evidence, Method, Scale, Verdict};
use crate::scenario::Threshold;

/// Apply `bound` with its absolute `floor` to `e`.
///
/// A change bound (`Increase` / `Decrease`) is a **regression** only when the whole interval
/// lies past the threshold *and* the whole interval of the difference lies past the floor;
/// an **improvement** mirrors that on the good side; a **pass** when either interval lies
/// wholly within its limit; else **inconclusive**. A relative bound on a metric with only a
/// difference interval (error_rate) becomes the absolute bound `fraction × baseline`, and an
/// absolute bound's limit is `max(amount, floor)`. Value bounds (`Max` / `Min`) take no floor.
pub fn decide(bound: Bound, floor: f64, e: &Evidence) -> Decision {
    decide_in(bound, floor, e, super::settle::Unit::Requests)
}

/// [`decide`], with the advice of an inconclusive check in `unit` (a rung run for a
/// duration, or one of sessions).
pub fn decide_in(bound: Bound, floor: f64, e: &Evidence, unit: super::settle::Unit) -> Decision {
    let floor = floor.max(0.0);
    let diff_cond = |limit: f64, sign: f64| Cond {
        scale: Scale::Diff,
        iv: e.diff.unwrap_or(UNBOUNDED),
        bad: sign * limit,
        good: Some(-sign * limit),
        sign,
    };
    let (sign, rel) = match bound {
        Bound::Increase(t) => (1.0, t),
        Bound::Decrease(t) => (-1.0, t),
        Bound::Max(v) | Bound::Min(v) => {
            let sign = if matches!(bound, Bound::Max(_)) {
                1.0
            } else {
                -1.0
            };
            return finish(
                e,
                &[Cond {
                    scale: Scale::Value,
                    iv: e.cand_ci.unwrap_or(UNBOUNDED),
                    bad: v,
                    good: None,
                    sign,
                }],
                unit,
            );
        }
    };
    let conds: Vec<Cond> = match rel {
        Threshold::Relative(t) if e.ratio.is_some() => {
            let mut c = vec![Cond {
                scale: Scale::Ratio,
                iv: e.ratio.unwrap_or(UNBOUNDED),
                bad: 1.0 + sign * t,
                good: Some(1.0 - sign * t),
                sign,
            }];
            if floor > 0.0 {
                c.push(diff_cond(floor, sign));
            }
            c
        }
        t => vec![diff_cond(abs(t, e.base).max(floor), sign)],
    };
    finish(e, &conds, unit)
}

const UNBOUNDED: Interval = Interval {
    lo: f64::NEG_INFINITY,
    hi: f64::INFINITY,
};

fn finish(e: &Evidence, conds: &[Cond], unit: super::settle::Unit) -> Decision {
    let main = conds[0];
    if let Some(why) = &e.too_few {
        return Decision {
            verdict: Verdict::Inconclusive,
            interval: None,
            note: super::settle::resize(why, e, unit),
        };
    }
    if conds.iter().any(|c| !c.iv.is_bounded()) {
        return Decision {
            verdict: Verdict::Inconclusive,
            interval: main.iv.is_bounded().then_some((main.scale, main.iv)),
            note: "the interval is unbounded (a baseline of zero?)".into(),
        };
    }
    let verdict = if conds.iter().all(Cond::beyond_bad) {
        Verdict::Regression
    } else if conds.iter().all(Cond::beyond_good) {
        Verdict::Improvement
    } else if conds.iter().any(Cond::within) {
        Verdict::Pass
    } else {
        Verdict::Inconclusive
    };
    let note = if verdict == Verdict::Inconclusive {
        super::explain::inconclusive(e.level, conds, &super::settle::needed(e, conds, unit))
    } else {
        String::new()
    };
    Decision {
        verdict,
        interval: Some((main.scale, main.iv)),
        note,
    }
}

fn abs(t: Threshold, base: f64) -> f64 {
    match t {
        Threshold::Relative(r) => r * base.abs(),
        Threshold::Absolute(a) => a,
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
            level: 0.95,
            requests: 200,
            counts: None,
            too_few: None,
            repeats: [1, 1],
            drift: None,
            blocks: [1, 1],
        }
    }

    #[test]
    fn increase_bounds() {
        let b = Bound::Increase(Threshold::Relative(0.10));
        assert_eq!(decide(b, 0.0, &ev(1.15, 1.3)).verdict, Verdict::Regression);
        let d = decide(b, 0.0, &ev(1.05, 1.2));
        assert_eq!(d.verdict, Verdict::Inconclusive);
        // Point x1.125, half-width ~0.067 on the log scale, 0.0225 from ln 1.1: ~1,800.
        assert!(
            d.note.contains("raise workload.requests_per_rung to ≥ 1"),
            "{}",
            d.note
        );
        assert_eq!(decide(b, 0.0, &ev(0.95, 1.05)).verdict, Verdict::Pass);
        assert_eq!(decide(b, 0.0, &ev(0.85, 0.95)).verdict, Verdict::Pass);
        assert_eq!(decide(b, 0.0, &ev(0.6, 0.8)).verdict, Verdict::Improvement);
    }

    #[test]
    fn decrease_and_absolute_bounds() {
        let b = Bound::Decrease(Threshold::Relative(0.05));
        assert_eq!(decide(b, 0.0, &ev(0.8, 0.9)).verdict, Verdict::Regression);
        assert_eq!(decide(b, 0.0, &ev(0.9, 1.0)).verdict, Verdict::Inconclusive);
        assert_eq!(decide(b, 0.0, &ev(0.97, 1.02)).verdict, Verdict::Pass);
        assert_eq!(decide(b, 0.0, &ev(1.1, 1.2)).verdict, Verdict::Improvement);
        let a = Bound::Increase(Threshold::Absolute(10.0));
        assert_eq!(decide(a, 0.0, &ev(1.11, 1.2)).verdict, Verdict::Regression);
        assert_eq!(
            decide(Bound::Max(120.0), 0.0, &ev(1.0, 1.1)).verdict,
            Verdict::Pass
        );
        assert_eq!(
            decide(Bound::Max(105.0), 0.0, &ev(1.0, 1.1)).verdict,
            Verdict::Inconclusive
        );
        assert_eq!(
            decide(Bound::Min(120.0), 0.0, &ev(1.0, 1.1)).verdict,
            Verdict::Regression
        );
    }

    #[test]
    fn too_few_samples_is_inconclusive_with_the_reason() {
        let mut e = ev(2.0, 3.0);
        e.too_few = Some("need 299".into());
        let d = decide(Bound::Increase(Threshold::Relative(0.1)), 0.0, &e);
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert_eq!(d.note, "need 299");
    }

    /// A TTFT of 22 ms that rose by 12 ms, with a tight interval d[+10, +14] (x[1.45, 1.64]).
    fn ttft_12ms_up() -> Evidence {
        Evidence {
            base: 22.0,
            cand: 34.0,
            ratio: Some(Interval { lo: 1.45, hi: 1.64 }),
            diff: Some(Interval { lo: 10.0, hi: 14.0 }),
            cand_ci: Some(Interval { lo: 32.0, hi: 36.0 }),
            method: Method::Bootstrap,
            level: 0.95,
            requests: 200,
            counts: None,
            too_few: None,
            repeats: [1, 1],
            drift: None,
            blocks: [1, 1],
        }
    }

    #[test]
    fn a_change_needs_both_the_threshold_and_the_floor() {
        let b = Bound::Increase(Threshold::Relative(0.10));
        let e = ttft_12ms_up();
        // Past +10 % and wholly past a 5 ms floor: regression.
        assert_eq!(decide(b, 5.0, &e).verdict, Verdict::Regression);
        // Past +10 % but wholly within a 15 ms floor: nobody cares, pass.
        assert_eq!(decide(b, 15.0, &e).verdict, Verdict::Pass);
        // The floor straddles the difference interval: inconclusive, and the note names both.
        let d = decide(b, 12.0, &e);
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert!(
            d.note.contains("x1.1") && d.note.contains("+12"),
            "{}",
            d.note
        );
        // Said as it is: the ratio is wholly past its threshold, the difference straddles.
        assert!(
            d.note
                .contains("x[1.450, 1.640] lies wholly past the threshold x1.1")
                && d.note.contains("d[+10, +14] straddles the limit +12")
                && !d.note.contains("x[1.450, 1.640] straddles"),
            "{}",
            d.note
        );
        // An absolute threshold takes the larger of amount and floor.
        let a = Bound::Increase(Threshold::Absolute(3.0));
        assert_eq!(decide(a, 5.0, &e).verdict, Verdict::Regression);
        assert_eq!(decide(a, 15.0, &e).verdict, Verdict::Pass);
        // Decreases mirror it: a 0.4 req/s drop of 4 req/s is past -5 %, not past 0.5.
        let t = Evidence {
            base: 4.0,
            cand: 3.6,
            ratio: Some(Interval { lo: 0.88, hi: 0.92 }),
            diff: Some(Interval {
                lo: -0.48,
                hi: -0.32,
            }),
            cand_ci: None,
            ..ttft_12ms_up()
        };
        let dec = Bound::Decrease(Threshold::Relative(0.05));
        assert_eq!(decide(dec, 0.0, &t).verdict, Verdict::Regression);
        assert_eq!(decide(dec, 0.5, &t).verdict, Verdict::Pass);
        assert_eq!(decide(dec, 0.3, &t).verdict, Verdict::Regression);
        // An improvement needs the floor too.
        let better = Evidence {
            base: 34.0,
            cand: 22.0,
            ratio: Some(Interval { lo: 0.61, hi: 0.69 }),
            diff: Some(Interval {
                lo: -14.0,
                hi: -10.0,
            }),
            ..ttft_12ms_up()
        };
        assert_eq!(decide(b, 5.0, &better).verdict, Verdict::Improvement);
        assert_eq!(decide(b, 15.0, &better).verdict, Verdict::Pass);
        // Value bounds take no floor.
        assert_eq!(
            decide(Bound::Max(30.0), 100.0, &e).verdict,
            Verdict::Regression
        );
    }

    /// A soak's advice is a longer duration; a sessions rung's error rate counts turns but
    /// is sized in sessions; a latency check of sessions already counts sessions.
    #[test]
    fn advice_names_the_key_the_rung_is_sized_by() {
        use super::super::settle::Unit;
        use std::time::Duration;
        let b = Bound::Increase(Threshold::Relative(0.10));
        let plain = decide(b, 0.0, &ev(1.05, 1.2));
        let n: u64 = plain
            .note
            .split("requests_per_rung to ≥ ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .expect("a count in the note");
        // 200 requests in 60 s: n requests take 60·n/200 s.
        let soak = decide_in(
            b,
            0.0,
            &ev(1.05, 1.2),
            Unit::Duration(Duration::from_secs(60)),
        );
        let want = humantime::format_duration(Duration::from_secs((60 * n).div_ceil(200)));
        assert!(
            soak.note.contains(&format!(
                "raise load.duration to ≥ {want} (from 1m, 200 requests)"
            )),
            "{}",
            soak.note
        );
        assert!(!soak.note.contains("requests_per_rung to"), "{}", soak.note);
        // load.repeats does not combine with load.duration: more runs come from bless --add.
        assert!(!soak.note.contains("load.repeats"), "{}", soak.note);
        assert!(soak.note.contains("a second soak run"), "{}", soak.note);
        // Drift that dominates the interval: the advice is runs, per side, never requests.
        let mut runs = ev(1.05, 1.2);
        runs.repeats = [2, 2];
        runs.drift = Some(super::super::components::Drift {
            tau2: 0.00004,
            df: 2,
            runs: [2, 2],
            half: 0.05,
            within_half: 0.01,
            level: 0.975,
            pool: None,
        });
        let soak = decide_in(b, 0.0, &runs, Unit::Duration(Duration::from_secs(60)));
        assert!(
            soak.note.contains("bring the baseline to ") && soak.note.contains("bless --add"),
            "{}",
            soak.note
        );
        assert!(!soak.note.contains("load.repeats"), "{}", soak.note);
        assert!(!soak.note.contains("requests_per_rung"), "{}", soak.note);
        let plain_runs = decide(b, 0.0, &runs);
        assert!(
            plain_runs.note.contains("runs (from 2;")
                && plain_runs
                    .note
                    .contains("more requests per run will not settle it"),
            "{}",
            plain_runs.note
        );
        let mut few = ev(1.05, 1.2);
        few.too_few = Some(
            "p99_ttft_ms needs at least 408 samples per side (have 200 \
                            baseline, 200 candidate): raise workload.requests_per_rung to ≥ 408"
                .into(),
        );
        let d = decide_in(b, 0.0, &few, Unit::Duration(Duration::from_secs(5)));
        assert!(
            d.note.ends_with(
                "(have 200 baseline, 200 candidate): run the rung longer: raise load.duration \
                 to ≥ 11s (from 5s, 200 requests)"
            ),
            "{}",
            d.note
        );
        assert_eq!(decide(b, 0.0, &few).note, few.too_few.clone().unwrap());
        let latency = decide_in(b, 0.0, &ev(1.05, 1.2), Unit::Sessions(4.0));
        assert_eq!(latency.note, plain.note);
        let e = Evidence {
            base: 0.0,
            cand: 0.0,
            ratio: None,
            diff: Some(super::super::stats::newcombe(0, 60, 0, 60, 0.95)),
            cand_ci: Some(super::super::stats::wilson(0, 60, 0.95)),
            method: Method::Proportion,
            level: 0.95,
            requests: 60,
            counts: Some(Counts::binomial((0, 60), (0, 60))),
            too_few: None,
            repeats: [1, 1],
            drift: None,
            blocks: [1, 1],
        };
        let d = decide_in(Bound::Max(0.02), 0.0, &e, Unit::Sessions(4.0));
        assert!(
            d.note
                .contains("raise workload.requests_per_rung to ≥ 48 sessions (from 15; this check counts their 189 turns)"),
            "{}",
            d.note
        );
    }

    #[test]
    fn inconclusive_error_rate_names_the_requests_that_settle_it() {
        let level = 0.95;
        let e = Evidence {
            base: 0.0,
            cand: 0.0,
            ratio: None,
            diff: Some(super::super::stats::newcombe(0, 60, 0, 60, level)),
            cand_ci: Some(super::super::stats::wilson(0, 60, level)),
            method: Method::Proportion,
            level,
            requests: 60,
            counts: Some(Counts::binomial((0, 60), (0, 60))),
            too_few: None,
            repeats: [1, 1],
            drift: None,
            blocks: [1, 1],
        };
        let d = decide(Bound::Max(0.02), 0.0, &e);
        assert_eq!(d.verdict, Verdict::Inconclusive);
        // Wilson's upper end at 0 of n is z²/(n + z²) <= 0.02 from n = 189.
        assert!(
            d.note.contains(
                "0 errors in 60 requests cannot show error_rate <= 0.02 at this level: raise workload.requests_per_rung to ≥ 189"
            ),
            "{}",
            d.note
        );
        // At a per-check level of 99.75 % (20 checks) it takes more.
        let l = super::super::stats::family_level(0.95, 20);
        let e2 = Evidence {
            cand_ci: Some(super::super::stats::wilson(0, 60, l)),
            level: l,
            ..e.clone()
        };
        let d = decide(Bound::Max(0.02), 0.0, &e2);
        assert!(
            d.note.contains("at the per-check level 99.75 %"),
            "{}",
            d.note
        );
        assert!(d.note.contains("requests_per_rung to ≥ 4"), "{}", d.note);
        // A difference bound on the error rate: the Newcombe interval, recomputed.
        let d = decide(Bound::Increase(Threshold::Absolute(0.01)), 0.0, &e);
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert!(
            d.note.contains("raise workload.requests_per_rung to ≥ "),
            "{}",
            d.note
        );
    }
}
