//! A cruder test for latency checks whose samples are too few for the bootstrap (fewer than
//! [`super::stats::MIN_REQUESTS`] requests, or sessions, on a side): an exact rank test
//! (Mann–Whitney) of the candidate's values against the baseline's values moved to the
//! check's limit. A candidate 38 times slower is then a regression at ten requests a side,
//! instead of an inconclusive check that passes the gate.
//!
//! For a change bound `max_increase: T` with floor F on a "high is bad" metric, each baseline
//! value b becomes its limit `b' = max(b · (1 + T), b + F)` (a change counts past both).
//! With U the number of (candidate, moved baseline) pairs where the candidate is strictly
//! greater, the one-sided p-value P(U ≥ u) under "the candidate is the moved baseline" is
//! exact (no ties assumed; a tie counts against the verdict, which only makes the test
//! stricter):
//!
//! - **regression** when P(U ≥ u) ≤ α, α = (1 − per-check level) / 2 (one side of the
//!   two-sided per-check level the intervals use, so the family's budget is unchanged);
//! - **pass** (centre statistics only: medians and means) when the candidate is, by the same
//!   test, below the moved baseline;
//! - **improvement** when it is below `min(b · (1 − T), b − F)` by the same test;
//! - otherwise inconclusive, as before.
//!
//! One value per resampled unit: a request, or for sessions a session (its turns' median);
//! ITL takes each request's median gap. The test is about the whole distribution moving
//! past the limit, not about the named statistic alone, which is why a tail statistic
//! (p99) can only be called a regression or improvement this way, never a pass.

use super::groups::Groups;
use super::stats::Statistic;
use super::threshold::Bound;
use super::verdict::{Decision, Verdict};
use crate::scenario::Threshold;

/// Above this many pairs the exact distribution's table grows as (pairs)²: the normal
/// approximation (with continuity correction) is used instead.
const EXACT_PAIRS: usize = 4_000;

/// One value per group: the group's median (a lone sample is itself).
fn values(g: &Groups) -> Vec<f64> {
    g.iter()
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut v = s.to_vec();
            crate::stats::quantile(&mut v, 0.5)
        })
        .filter(|v| v.is_finite())
        .collect()
}

/// P(U ≥ u) for U the Mann–Whitney count of pairs (y > x) of `m` values y against `n`
/// values x drawn from one continuous distribution.
pub fn tail(n: usize, m: usize, u: usize) -> f64 {
    if u == 0 {
        return 1.0;
    }
    if u > n * m {
        return 0.0;
    }
    if n * m > EXACT_PAIRS {
        // Normal approximation: mean nm/2, variance nm(n + m + 1)/12.
        let (n, m) = (n as f64, m as f64);
        let z = (u as f64 - 0.5 - n * m / 2.0) / (n * m * (n + m + 1.0) / 12.0).sqrt();
        return 0.5 * erfc(z / std::f64::consts::SQRT_2);
    }
    // p[i][j][k]: P(U = k) with i x's and j y's. The largest of the i + j values is a y
    // (probability j / (i + j)) and then exceeds all i x's, or an x and exceeds no y.
    let mut prev: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect(); // i = 0: U = 0.
    for i in 1..=n {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        cur.push(vec![1.0]); // j = 0: U = 0.
        for j in 1..=m {
            let mut p = vec![0.0; i * j + 1];
            let (wx, wy) = (i as f64 / (i + j) as f64, j as f64 / (i + j) as f64);
            for (k, q) in prev[j].iter().enumerate() {
                p[k] += wx * q;
            }
            for (k, q) in cur[j - 1].iter().enumerate() {
                p[k + i] += wy * q;
            }
            cur.push(p);
        }
        prev = cur;
    }
    prev[m][u..].iter().sum::<f64>().min(1.0)
}

/// erfc by the Numerical Recipes Chebyshev fit (relative error below 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Count of pairs where `y` is strictly above (`above`) or strictly below the moved `x`.
fn pairs(x: &[f64], y: &[f64], above: bool) -> usize {
    y.iter()
        .map(|c| {
            x.iter()
                .filter(|b| if above { c > b } else { c < b })
                .count()
        })
        .sum()
}

/// The rank test's decision on a latency check with too few samples for the bootstrap, or
/// `None` when it cannot decide (then the check stays inconclusive as the bootstrap left
/// it). `level` is the two-sided per-check level; `note` the bootstrap's "too few" note.
pub fn decide(
    bound: Bound,
    floor: f64,
    stat: Statistic,
    base: &Groups,
    cand: &Groups,
    level: f64,
) -> Option<Decision> {
    if matches!(stat, Statistic::Std) {
        return None;
    }
    let (threshold, sign) = match bound {
        Bound::Increase(t) => (t, 1.0),
        Bound::Decrease(t) => (t, -1.0),
        Bound::Max(_) | Bound::Min(_) => return None,
    };
    let (x, y) = (values(base), values(cand));
    if x.is_empty() || y.is_empty() {
        return None;
    }
    let floor = floor.max(0.0);
    // The baseline value moved to the check's limit on the bad (`bad = true`) or the good
    // side, for a metric where `sign` = +1 means high is bad.
    let moved = |b: f64, bad: bool| -> f64 {
        let s = if bad { sign } else { -sign };
        let by_threshold = match threshold {
            Threshold::Relative(t) => b * (1.0 + s * t),
            Threshold::Absolute(a) => b + s * a,
        };
        let by_floor = b + s * floor;
        if s > 0.0 {
            by_threshold.max(by_floor)
        } else {
            by_threshold.min(by_floor)
        }
    };
    let alpha = (1.0 - level) / 2.0;
    let (n, m) = (x.len(), y.len());
    let bad: Vec<f64> = x.iter().map(|b| moved(*b, true)).collect();
    let good: Vec<f64> = x.iter().map(|b| moved(*b, false)).collect();
    // "Worse than the bad limit": above it for sign +1, below it for sign −1.
    let worse = sign > 0.0;
    let u_bad = pairs(&bad, &y, worse);
    let p_bad = tail(n, m, u_bad);
    let u_within = pairs(&bad, &y, !worse);
    let p_within = tail(n, m, u_within);
    let u_good = pairs(&good, &y, !worse);
    let p_good = tail(n, m, u_good);
    let centre =
        matches!(stat, Statistic::Mean) || matches!(stat, Statistic::Quantile(q) if q == 0.5);
    let limit = |bad: bool| -> String {
        let s = if bad { sign } else { -sign };
        let t = match threshold {
            Threshold::Relative(t) => format!("x{}", crate::format::num(1.0 + s * t)),
            Threshold::Absolute(a) => format!(
                "{}{}",
                if s > 0.0 { "+" } else { "-" },
                crate::format::num(a)
            ),
        };
        if floor > 0.0 {
            format!(
                "{t} and {}{}",
                if s > 0.0 { "+" } else { "-" },
                crate::format::num(floor)
            )
        } else {
            t
        }
    };
    let say = |u: usize, p: f64, bad: bool, dir: &str| {
        format!(
            "too few for the bootstrap ({n} baseline, {m} candidate): exact rank test \
             (Mann–Whitney) of the candidate against each baseline value moved by {}: \
             {u} of {} pairs {dir}, one-sided p = {} ≤ {} (the per-check level's tail)",
            limit(bad),
            n * m,
            sci(p),
            sci(alpha)
        )
    };
    let (verdict, note) = if p_bad <= alpha {
        (
            Verdict::Regression,
            say(u_bad, p_bad, true, if worse { "above" } else { "below" }),
        )
    } else if p_good <= alpha {
        (
            Verdict::Improvement,
            say(u_good, p_good, false, if worse { "below" } else { "above" }),
        )
    } else if centre && p_within <= alpha {
        (
            Verdict::Pass,
            say(
                u_within,
                p_within,
                true,
                if worse { "below" } else { "above" },
            ),
        )
    } else {
        return None;
    };
    Some(Decision {
        verdict,
        interval: None,
        note,
    })
}

/// One rung's error counts: (failed, measured) of the baseline and of the candidate.
pub type Stratum = [(u64, u64); 2];

/// ln k! for k up to `n`.
fn ln_factorials(n: u64) -> Vec<f64> {
    let mut v = Vec::with_capacity(n as usize + 1);
    v.push(0.0);
    for k in 1..=n {
        v.push(v[k as usize - 1] + (k as f64).ln());
    }
    v
}

/// The exact stratified test of "the candidate fails more often than the baseline" over
/// the rungs (`strata`): within each rung, given its total failures, the candidate's share
/// is hypergeometric when the two fail alike; the p-value is P(Σ candidate failures ≥ the
/// observed sum), from the convolution of the rungs' hypergeometric distributions (the
/// exact form of the Cochran–Mantel–Haenszel test). It pools rungs too small to judge one
/// by one: half of ten requests failing on each of three rungs is far past chance.
pub fn stratified_tail(strata: &[Stratum]) -> f64 {
    let top = strata
        .iter()
        .map(|[(_, nb), (_, nc)]| nb + nc)
        .max()
        .unwrap_or(0);
    let lf = ln_factorials(top);
    let ln_choose = |n: u64, k: u64| lf[n as usize] - lf[k as usize] - lf[(n - k) as usize];
    // Distribution of the sum so far, indexed by the candidate's failures.
    let mut dist = vec![1.0f64];
    let mut observed = 0u64;
    for &[(fb, nb), (fc, nc)] in strata {
        let (fb, fc) = (fb.min(nb), fc.min(nc));
        observed += fc;
        let (total, fails) = (nb + nc, fb + fc);
        let lo = fails.saturating_sub(nb);
        let hi = fails.min(nc);
        let pmf: Vec<f64> = (lo..=hi)
            .map(|k| (ln_choose(nc, k) + ln_choose(nb, fails - k) - ln_choose(total, fails)).exp())
            .collect();
        let mut next = vec![0.0; dist.len() + hi as usize];
        for (a, pa) in dist.iter().enumerate() {
            for (j, pk) in pmf.iter().enumerate() {
                next[a + lo as usize + j] += pa * pk;
            }
        }
        dist = next;
    }
    dist.iter().skip(observed as usize).sum::<f64>().min(1.0)
}

/// A p-value for a note: four decimals, or scientific below 0.001.
pub fn sci(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.4}")
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Published exact values: P(U ≥ u) for small samples (Mann & Whitney 1947's table,
    /// by symmetry P(U ≤ nm − u)), and the all-above tail 1 / C(n + m, n).
    #[test]
    fn exact_tails_match_tables() {
        assert!((tail(3, 3, 9) - 0.05).abs() < 1e-12);
        assert!((tail(4, 4, 16) - 1.0 / 70.0).abs() < 1e-12);
        assert!((tail(4, 4, 15) - 2.0 / 70.0).abs() < 1e-12);
        // n = m = 5: P(U <= 2) = 4/252 (U = 0, 1, 2 have 1, 1, 2 arrangements).
        assert!((tail(5, 5, 23) - 4.0 / 252.0).abs() < 1e-12);
        assert!((tail(10, 10, 100) - 1.0 / 184_756.0).abs() < 1e-15);
        assert_eq!(tail(10, 10, 0), 1.0);
        // The middle: P(U ≥ nm/2) just over one half.
        let mid = tail(10, 12, 60);
        assert!(mid > 0.5 && mid < 0.56, "{mid}");
        // The normal approximation beyond the exact table agrees with it in the middle.
        let approx = tail(100, 100, 5_000);
        assert!((approx - 0.5).abs() < 0.01, "{approx}");
    }

    /// One rung: Fisher's exact one-sided test (0 of 10 against 5 of 10: 252 / 15,504);
    /// three such rungs together are far past any per-check level; equal counts are not.
    #[test]
    fn stratified_error_test_pools_small_rungs() {
        let one = stratified_tail(&[[(0, 10), (5, 10)]]);
        assert!((one - 252.0 / 15_504.0).abs() < 1e-12, "{one}");
        let three = stratified_tail(&[[(0, 10), (5, 10)]; 3]);
        assert!(three < 1e-4, "{three}");
        let same = stratified_tail(&[[(1, 10), (1, 10)]; 3]);
        assert!(same > 0.5, "{same}");
        assert_eq!(stratified_tail(&[[(0, 10), (0, 10)]]), 1.0);
    }

    fn groups(v: &[f64]) -> Groups {
        Groups::singles(v.to_vec())
    }

    /// Ten requests a side: a 38x slower TTFT is a regression; an unchanged one passes a
    /// +10 % check whose 2 ms floor is far above the jitter; a 20 % slower one against +10 %
    /// with a 1 ms spread is not decided either way by so few.
    #[test]
    fn ten_requests_a_side_decide_a_38x_change() {
        let base: Vec<f64> = (0..10).map(|i| 25.0 + 0.3 * i as f64).collect();
        let slow: Vec<f64> = base.iter().map(|v| v * 38.0).collect();
        let inc = Bound::Increase(Threshold::Relative(0.10));
        let level = 1.0 - 0.05 / 12.0;
        let d = decide(
            inc,
            2.0,
            Statistic::Quantile(0.5),
            &groups(&base),
            &groups(&slow),
            level,
        )
        .expect("decided");
        assert_eq!(d.verdict, Verdict::Regression);
        assert!(d.note.contains("100 of 100 pairs above"), "{}", d.note);
        let same: Vec<f64> = base.iter().rev().copied().collect();
        let d = decide(
            inc,
            2.0,
            Statistic::Quantile(0.5),
            &groups(&base),
            &groups(&same),
            level,
        )
        .expect("decided");
        assert_eq!(d.verdict, Verdict::Pass);
        // The same unchanged values on p99: never a pass by this test.
        assert!(decide(
            inc,
            2.0,
            Statistic::Quantile(0.99),
            &groups(&base),
            &groups(&same),
            level
        )
        .is_none());
        let spread: Vec<f64> = (0..10).map(|i| 25.0 + 3.0 * i as f64).collect();
        let up: Vec<f64> = spread.iter().map(|v| v * 1.2).collect();
        assert!(decide(
            inc,
            0.0,
            Statistic::Quantile(0.5),
            &groups(&spread),
            &groups(&up),
            level
        )
        .is_none());
        // 38x faster is an improvement; throughput-like decreases mirror it.
        let fast: Vec<f64> = base.iter().map(|v| v / 38.0).collect();
        let d = decide(
            inc,
            2.0,
            Statistic::Quantile(0.5),
            &groups(&base),
            &groups(&fast),
            level,
        )
        .unwrap();
        assert_eq!(d.verdict, Verdict::Improvement);
        let dec = Bound::Decrease(Threshold::Relative(0.05));
        let d = decide(
            dec,
            0.0,
            Statistic::Mean,
            &groups(&base),
            &groups(&fast),
            level,
        )
        .unwrap();
        assert_eq!(d.verdict, Verdict::Regression);
    }

    /// Unchanged small samples from one lognormal distribution (σ = 0.3, much noisier than
    /// the simulator): the rank test at a 12-check family's level raises no regression and
    /// no improvement in 2,000 trials of 10 v 10 (the nominal tail is 0.2 %).
    #[test]
    fn unchanged_small_samples_raise_no_false_alarm() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut u = move || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            ((s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut normal = move || {
            let (a, b) = (u(), u());
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        };
        let level = 1.0 - 0.05 / 12.0;
        let inc = Bound::Increase(Threshold::Relative(0.10));
        let mut alarms = 0;
        for _ in 0..2_000 {
            let mut draw =
                || -> Vec<f64> { (0..10).map(|_| 30.0 * (0.3 * normal()).exp()).collect() };
            let (b, c) = (draw(), draw());
            if let Some(d) = decide(
                inc,
                2.0,
                Statistic::Quantile(0.5),
                &groups(&b),
                &groups(&c),
                level,
            ) {
                if d.verdict != Verdict::Pass {
                    alarms += 1;
                }
            }
        }
        assert_eq!(alarms, 0);
    }
}
