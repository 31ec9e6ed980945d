//! What would settle an inconclusive check, in terms the user controls: the
//! `workload.requests_per_rung` (or, with repeats, the `load.repeats`) at which the interval
//! would clear its limits if the change stayed where it is.

use std::time::Duration;

use super::components::Drift;
use super::verdict_types::{Cond, Counts, Evidence, Scale};

/// What the user sizes a rung in, so that the advice names the key to change.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Unit {
    /// `workload.requests_per_rung` requests (the default).
    #[default]
    Requests,
    /// A rung run for `load.duration`: more requests means a longer rung.
    Duration(Duration),
    /// `workload.sessions`: `requests_per_rung` counts sessions of this many measured turns
    /// on average. Latency and throughput checks already count sessions (they resample
    /// whole sessions); an error rate counts turns.
    Sessions(f64),
}

/// "raise … to ≥ …" for `n` requests (or sessions) where the rung has `from` (said when
/// `say_from`).
fn raise(e: &Evidence, unit: Unit, n: u64, from: usize, say_from: bool) -> String {
    match unit {
        Unit::Duration(d) if from > 0 => {
            let need = d.as_secs_f64() * n as f64 / from as f64;
            let need = Duration::from_secs(need.ceil() as u64);
            format!(
                "run the rung longer: raise load.duration to ≥ {} (from {}, {from} requests)",
                humantime::format_duration(need),
                humantime::format_duration(d)
            )
        }
        Unit::Sessions(turns) if e.counts.is_some() && turns > 0.0 => format!(
            "raise workload.requests_per_rung to ≥ {} sessions (from {}; this check counts \
             their {n} turns)",
            (n as f64 / turns).ceil() as u64,
            (from as f64 / turns).round() as u64
        ),
        // The error-rate note has said the count already ("0 errors in 60 requests").
        _ if !say_from => format!("raise workload.requests_per_rung to ≥ {n}"),
        _ => format!("raise workload.requests_per_rung to ≥ {n} (from {from})"),
    }
}

/// A note's advice when a side of the comparison is a folder of vLLM result files: the
/// rung size is `workload.requests_per_rung` in a ladder run and `--num-prompts` in vLLM's
/// benchmark, and the note names both.
pub fn name_vllm_knob(note: &str) -> String {
    note.replace(
        "workload.requests_per_rung",
        "workload.requests_per_rung (a vLLM benchmark: --num-prompts)",
    )
}

/// Largest requests_per_rung a note suggests; beyond it the change is too close to call. A
/// rung of 100,000 requests is hours at the rates a single server takes (at 2 req/s, 14
/// hours): past it "raise to ≥ 2793743" (seen on the real llama.cpp server, a TPOT change of
/// +10.3 % against a +10 % threshold) names a number no user can reach.
const MAX_SUGGESTED: f64 = 1e5;

/// The largest count a note names: [`MAX_SUGGESTED`], or 100 times what the rung already has
/// (a long soak or many sessions count far more than 100,000 already).
fn cap(e: &Evidence) -> f64 {
    MAX_SUGGESTED.max(100.0 * e.requests as f64)
}

/// A too-few-samples note (`evidence`'s, which ends in "raise
/// workload.requests_per_rung to ≥ N") in `unit`: a soak is sized by its duration.
pub(super) fn resize(note: &str, e: &Evidence, unit: Unit) -> String {
    const TAIL: &str = "raise workload.requests_per_rung to ≥ ";
    let Some(at) = note.rfind(TAIL) else {
        return note.to_string();
    };
    match note[at + TAIL.len()..].parse::<u64>() {
        Ok(n) if matches!(unit, Unit::Duration(_)) => {
            format!("{}{}", &note[..at], raise(e, unit, n, e.requests, true))
        }
        _ => note.to_string(),
    }
}

/// What would settle an inconclusive check, in terms the user controls (`unit`); first, when
/// the requests were resampled in blocks, that they queued together.
pub(super) fn needed(e: &Evidence, conds: &[Cond], unit: Unit) -> String {
    let advice = needed_as_is(e, conds, unit);
    match e.blocks.iter().max() {
        Some(&b) if b > 1 => format!(
            "requests queued together (neighbours' latencies are correlated, so the interval \
             resamples blocks of up to {b} consecutive requests: a rung counts as about 1/{b} \
             as many independent draws); {advice}"
        ),
        _ => advice,
    }
}

fn needed_as_is(e: &Evidence, conds: &[Cond], unit: Unit) -> String {
    if let Some(d) = e.drift.filter(|d| d.half > 0.0) {
        if let Some(advice) = drift_advice(e, &d, conds, unit) {
            return advice;
        }
    }
    let n = match e.counts {
        Some(counts) => proportion_needed(e, conds, counts),
        None => scaled_needed(e, conds, e.requests),
    };
    // What repeats would do, said first so that the request count ends the note.
    let every = match unit {
        Unit::Duration(_) => "the requests of every run count here (each run's load.duration)",
        _ => "the requests of every repeat count here (load.repeats × workload.requests_per_rung)",
    };
    let runs = match e.counts {
        Some(c) if c.overdispersed() => format!(
            "the error rate varies between repeats more than chance (overdispersion φ {:.2} \
             baseline, {:.2} candidate), so the interval counts measured / φ requests; \
             {every}; ",
            c.dispersion[0], c.dispersion[1]
        ),
        Some(_) => format!("{every}; "),
        // An assumed drift is in the interval, but the requests' noise is the larger part.
        None if e.drift.is_some_and(|d| d.df == 0) => {
            "the interval includes the assumed run-to-run drift (--drift), but the noise \
             between requests is the larger part; "
                .to_string()
        }
        // Runs measured no drift beyond their requests' noise: requests are what is short.
        None if e.repeats.iter().any(|&r| r >= 2) => {
            "the runs agree (their spread is what their requests explain), so more requests \
             per run settle it; "
                .to_string()
        }
        None if matches!(unit, Unit::Duration(_)) => {
            "run-to-run noise is unknown with one run per side (a second soak run, added to \
             the baseline with `ladder bless --add`, measures it); "
                .to_string()
        }
        None => {
            "run-to-run noise is unknown with one run per side (load.repeats ≥ 2 measures it); "
                .to_string()
        }
    };
    match n {
        Some(n) if n <= cap(e) => {
            let n = (n as u64).max(e.requests as u64 + 1);
            match e.counts.map(|c| c.sides) {
                Some([_, (k, m)]) if conds[0].scale == Scale::Value => format!(
                    "{runs}{k} errors in {m} requests cannot show {}: {}",
                    value_claim(conds[0]),
                    raise(e, unit, n, e.requests, false)
                ),
                _ => format!(
                    "{runs}{} to settle it if the change stays where it is",
                    raise(e, unit, n, e.requests, true)
                ),
            }
        }
        _ => format!(
            "{runs}the change sits (almost) on the threshold: no feasible {} (up to {} \
             requests) settles it; widen or tighten the threshold",
            match unit {
                Unit::Duration(_) => "load.duration",
                _ => "workload.requests_per_rung",
            },
            cap(e) as u64
        ),
    }
}

fn value_claim(c: Cond) -> String {
    let op = if c.sign > 0.0 { "<=" } else { ">=" };
    format!(
        "error_rate {op} {} at this level",
        crate::format::num(c.bad)
    )
}

/// Bootstrap intervals: the half-width shrinks as 1/sqrt(n) (on the log scale for ratios).
/// A regression needs every condition cleared, a pass one: with the point estimate where it
/// is, the verdict it heads for decides which.
fn scaled_needed(e: &Evidence, conds: &[Cond], now: usize) -> Option<f64> {
    if now == 0 {
        return None;
    }
    let mut per = Vec::new();
    for c in conds {
        let (point, lo, hi, limit) = match c.scale {
            Scale::Ratio if e.base > 0.0 && e.cand > 0.0 && c.iv.lo > 0.0 && c.bad > 0.0 => (
                (e.cand / e.base).ln(),
                c.iv.lo.ln(),
                c.iv.hi.ln(),
                c.bad.ln(),
            ),
            Scale::Ratio => return None,
            Scale::Diff => (e.cand - e.base, c.iv.lo, c.iv.hi, c.bad),
            Scale::Value => (e.cand, c.iv.lo, c.iv.hi, c.bad),
        };
        let half = (hi - lo) / 2.0;
        let dist = (point - limit).abs();
        let bad_side = c.sign * (point - limit) > 0.0;
        let n = if dist == 0.0 || half <= 0.0 || !point.is_finite() {
            f64::INFINITY
        } else {
            (now as f64 * (half / dist).powi(2)).ceil()
        };
        per.push((bad_side, n));
    }
    let n = if per.iter().all(|(bad, _)| *bad) {
        per.iter().map(|p| p.1).fold(0.0, f64::max)
    } else {
        per.iter()
            .filter(|p| !p.0)
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min)
    };
    n.is_finite().then_some(n)
}

/// Proportions (error_rate): the Wilson / Newcombe interval at the same rates, level and
/// overdispersion, recomputed for growing n until the check is decided.
fn proportion_needed(e: &Evidence, conds: &[Cond], counts: Counts) -> Option<f64> {
    let [(kb, nb), (kc, nc)] = counts.sides;
    let [db, dc] = counts.dispersion;
    let rate = |k: u64, n: u64| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    let (pb, pc) = (rate(kb, nb), rate(kc, nc));
    let decided = |n: u64| {
        // Counts as the rates give them at n, so the interval moves as it would have.
        let p = |p: f64| (p * n as f64).round() / n as f64;
        let n = n as f64;
        let c = conds[0];
        let iv = match c.scale {
            Scale::Value => super::stats::wilson_p(p(pc), n / dc, e.level),
            _ => super::stats::newcombe_p(p(pb), n / db, p(pc), n / dc, e.level),
        };
        let c = Cond { iv, ..c };
        c.beyond_bad() || c.within() || c.beyond_good()
    };
    let mut lo = (e.requests as u64).max(1);
    let mut hi = lo;
    while !decided(hi) {
        if hi as f64 > cap(e) {
            return None;
        }
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if decided(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi as f64)
}

/// Most runs a side is advised to reach; beyond them the drift is too large to call.
const MAX_RUNS: [usize; 2] = [20, 10];

/// Advice for a check whose interval includes the runs' drift ([`Drift`]): the fewest runs
/// per side that would settle it if the change and the drift stayed where they are, or that
/// the drift alone is too wide. None when the within-run part dominates (more requests per
/// run is then the advice, as without repeats) or the check has no ratio condition.
fn drift_advice(e: &Evidence, d: &Drift, conds: &[Cond], unit: Unit) -> Option<String> {
    let c = conds.iter().find(|c| c.scale == Scale::Ratio)?;
    if !(e.base > 0.0 && e.cand > 0.0 && c.bad > 0.0) {
        return None;
    }
    if d.half < d.within_half {
        return None;
    }
    let dist = ((e.cand / e.base).ln() - c.bad.ln()).abs();
    let [rb, rc] = d.runs;
    let now = 1.0 / rb as f64 + 1.0 / rc as f64;
    let settles = |b: usize, c: usize| {
        let scale = ((1.0 / b as f64 + 1.0 / c as f64) / now).sqrt();
        let df = if d.df == 0 { 0 } else { b - 1 + c - 1 };
        d.within_half * scale + d.half_for(b, c, df) < dist
    };
    // The ratio is already settled with the runs there are: what holds the check back is
    // another condition (an absolute floor, `min_change`), which more requests decide.
    if settles(rb, rc) {
        return None;
    }
    let mut best: Option<(usize, usize)> = None;
    let c_max = if matches!(unit, Unit::Duration(_)) {
        rc
    } else {
        MAX_RUNS[1].max(rc)
    };
    for b in rb..=MAX_RUNS[0].max(rb) {
        for c in rc..=c_max {
            let cost = (b - rb) + (c - rc);
            if settles(b, c) && best.is_none_or(|(bb, cc)| cost < (bb - rb) + (cc - rc)) {
                best = Some((b, c));
            }
        }
    }
    let spread = format!(
        "run-to-run drift of about {:.1} % per run ({})",
        d.cv() * 100.0,
        if d.df == 0 {
            "assumed with --drift: one run per side cannot measure it".to_string()
        } else {
            format!("measured from the runs, {} degrees of freedom", d.df)
        }
    );
    let add = |side: &str, from: usize, to: usize, how: &str| {
        (to > from).then(|| format!("{side} to {to} runs (from {from}; {how})"))
    };
    // A soak (load.duration) cannot repeat: only the baseline gains runs, by bless --add.
    let soak = matches!(unit, Unit::Duration(_));
    Some(match best {
        Some((b, c)) => {
            let parts: Vec<String> = [
                add("the baseline", rb, b, "`ladder bless --add`"),
                add("the candidate", rc, c, "load.repeats"),
            ]
            .into_iter()
            .flatten()
            .collect();
            format!(
                "the {spread} dominates the interval, so more requests per run will not settle \
                 it; bring {} to settle it if the change stays where it is",
                parts.join(" and ")
            )
        }
        None => format!(
            "the {spread} alone is about as wide as the distance to the threshold: no feasible \
             number of runs (up to {} baseline, {} candidate) settles it; find what makes the \
             runs differ (a cold or warm cache, a restart, machine load) or widen the threshold",
            MAX_RUNS[0],
            if soak { rc } else { MAX_RUNS[1] }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::components::Drift;
    use crate::compare::stats::Interval;
    use crate::compare::verdict_types::Method;

    /// The calibration's case (3 vs 9, +25 % TPOT): the ratio interval x[1.130, 1.393] lies
    /// wholly past x1.1, but the difference d[+0.45, +1.36] straddles the 0.5 ms floor. The
    /// drift does not hold the check back, so the advice is about requests, never "bring  to
    /// settle it" with no runs named.
    #[test]
    fn a_check_held_back_by_its_floor_not_its_drift_is_advised_requests() {
        let drift = Drift {
            tau2: 0.058f64.powi(2),
            df: 10,
            runs: [9, 3],
            half: 0.07,
            within_half: 0.03,
            level: 0.975,
            pool: None,
        };
        let e = Evidence {
            base: 3.47,
            cand: 4.36,
            ratio: Some(Interval {
                lo: 1.130,
                hi: 1.393,
            }),
            diff: Some(Interval {
                lo: 0.4523,
                hi: 1.36,
            }),
            cand_ci: None,
            method: Method::Bootstrap,
            level: 0.9917,
            requests: 1800,
            counts: None,
            too_few: None,
            repeats: [9, 3],
            drift: Some(drift),
            blocks: [1, 1],
        };
        let conds = [
            Cond {
                scale: Scale::Ratio,
                iv: Interval {
                    lo: 1.130,
                    hi: 1.393,
                },
                bad: 1.1,
                good: None,
                sign: 1.0,
            },
            Cond {
                scale: Scale::Diff,
                iv: Interval {
                    lo: 0.4523,
                    hi: 1.36,
                },
                bad: 0.5,
                good: None,
                sign: 1.0,
            },
        ];
        let advice = needed(&e, &conds, Unit::Requests);
        assert!(!advice.contains("bring  to"), "{advice}");
        assert!(advice.contains("workload.requests_per_rung"), "{advice}");
    }

    /// The real llama.cpp server's case: median TPOT 22.05 -> 24.32 ms (+10.3 %) against a
    /// +10 % threshold, x[0.547, 2.081] from 40 requests a rung. Settling it would take
    /// millions of requests: the note says no feasible count does, instead of naming one.
    #[test]
    fn a_change_on_the_threshold_names_no_unreachable_request_count() {
        let iv = Interval {
            lo: 0.547,
            hi: 2.081,
        };
        let mut e = Evidence {
            base: 22.05,
            cand: 24.32,
            ratio: Some(iv),
            diff: None,
            cand_ci: None,
            method: Method::Bootstrap,
            level: 0.9984,
            requests: 40,
            counts: None,
            too_few: None,
            repeats: [1, 1],
            drift: None,
            blocks: [1, 1],
        };
        let conds = [Cond {
            scale: Scale::Ratio,
            iv,
            bad: 1.1,
            good: None,
            sign: 1.0,
        }];
        let advice = needed(&e, &conds, Unit::Requests);
        assert!(
            advice.ends_with(
                "the change sits (almost) on the threshold: no feasible \
                 workload.requests_per_rung (up to 100000 requests) settles it; widen or \
                 tighten the threshold"
            ),
            "{advice}"
        );
        // The same interval with the change at +30 %: a count within reach is named.
        e.cand = 22.05 * 1.3;
        let advice = needed(&e, &conds, Unit::Requests);
        assert!(
            advice.ends_with("to settle it if the change stays where it is"),
            "{advice}"
        );
        let n: u64 = advice
            .rsplit("≥ ")
            .next()
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .expect("a count");
        assert!((41..=100_000).contains(&n), "{advice}");
    }
}
