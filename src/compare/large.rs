//! Large-sample intervals: what a check uses instead of the bootstrap when both sides hold
//! at least [`LARGE_SAMPLE`] requests with samples.
//!
//! A percentile bootstrap costs resamples × requests: at a gate's per-check level (up to
//! 20,000 resamples) and a million requests per rung that is hours, where the sampling
//! distribution it estimates is by then normal to within a fraction of a percent. So large
//! sides get the intervals a survey statistician would compute, by linearization, with
//! requests as clusters (a request's ITL gaps stay together, as in the bootstrap):
//!
//! - a **quantile** q: Woodruff's interval. The variance of the share of samples at or
//!   below the estimate ξ̂ is Σᵢ (cᵢ − q·mᵢ)² / M² (cᵢ of request i's mᵢ samples are ≤ ξ̂,
//!   M samples in all); the interval for ξ is the sample quantiles at q ∓ z·se; its log
//!   width over 2z is the standard error of ln ξ̂. With one sample per request this is the
//!   distribution-free binomial interval of a quantile.
//! - a **mean**: Σᵢ (Sᵢ − mᵢ·μ̂)² / M² (Sᵢ the sum of request i's samples).
//! - a **standard deviation**: the same for the variance's influence (x − μ̂)² − σ̂².
//! - a **throughput** (weight per second over the rung's window): the variance of the
//!   summed weights, n/(n − 1) Σ (wᵢ − w̄)², with the window taken as fixed (one arrival gap
//!   in a window of a million).
//!
//! Every variance has the n/(n − 1) cluster correction. The two sides are independent, so
//! the standard error of ln(candidate / baseline) is the root of the sum of their squares,
//! and the ratio's interval is exp(ln r ± z·se). That is the within-run part; with repeats,
//! the runs' drift is estimated from their statistics (`SideEstimate::runs`) and bounded
//! apart ([`super::components`]). A statistic that is not positive on either side (a log
//! is needed) falls back to the bootstrap.

use super::groups::Groups;
use super::stats::{self, BootstrapResult, Interval, Statistic};
use crate::stats::quantile_sorted;

/// Fewest requests with samples, on each side, for large-sample intervals. At this size a
/// bootstrap at a gate's per-check level already costs seconds per check, and the
/// linearized intervals agree with it (tests in `large_tests`).
pub const LARGE_SAMPLE: usize = 5_000;

/// One side's statistic and the variance of its logarithm.
#[derive(Debug, Clone, PartialEq)]
pub struct SideEstimate {
    /// The statistic on every sample of the side (all repeats pooled).
    pub value: f64,
    /// Variance of ln `value` from the requests (within runs).
    pub within: f64,
    /// The statistic of each repeat (one entry for a one-run side).
    pub runs: Vec<f64>,
}

/// A latency statistic of one side: per repeat, per request, that request's samples.
/// `z` is the two-sided normal quantile of the check's level (Woodruff's interval is
/// computed at it). None when the statistic is not positive or a variance is not finite.
pub fn latency(runs: &[Groups], stat: Statistic, z: f64) -> Option<SideEstimate> {
    let (value, within) = latency_of(runs, stat, z)?;
    let per: Option<Vec<f64>> = if runs.len() < 2 {
        Some(vec![value])
    } else {
        runs.iter()
            .map(|r| latency_of(std::slice::from_ref(r), stat, z).map(|(v, _)| v))
            .collect()
    };
    Some(SideEstimate {
        value,
        within,
        runs: per?,
    })
}

/// The statistic over the groups of `runs` (pooled) and the variance of its log.
fn latency_of(runs: &[Groups], stat: Statistic, z: f64) -> Option<(f64, f64)> {
    let groups = || runs.iter().flat_map(Groups::iter);
    let n: usize = runs.iter().map(Groups::len).sum();
    let total: usize = runs.iter().map(Groups::samples).sum();
    if n < 2 || total == 0 {
        return None;
    }
    let big_m = total as f64;
    let correction = n as f64 / (n - 1) as f64;
    let (value, var_ln) = match stat {
        Statistic::Mean => {
            let mu = all(runs).sum::<f64>() / big_m;
            let v = groups()
                .map(|g| g.iter().map(|x| x - mu).sum::<f64>().powi(2))
                .sum::<f64>()
                / (big_m * big_m)
                * correction;
            (mu, v / (mu * mu))
        }
        Statistic::Std => {
            let mu = all(runs).sum::<f64>() / big_m;
            let var = all(runs).map(|x| (x - mu) * (x - mu)).sum::<f64>() / big_m;
            let v = groups()
                .map(|g| {
                    g.iter()
                        .map(|x| (x - mu) * (x - mu) - var)
                        .sum::<f64>()
                        .powi(2)
                })
                .sum::<f64>()
                / (big_m * big_m)
                * correction;
            (var.sqrt(), v / (4.0 * var * var))
        }
        Statistic::Quantile(q) => {
            let mut sorted: Vec<f64> = all(runs).collect();
            sorted.sort_unstable_by(f64::total_cmp);
            // Through percent and back (`q * 100.0 / 100.0`): the positions these intervals
            // were computed at when they took metrics' percentile, kept to the bit.
            let at = |q: f64| quantile_sorted(&sorted, q * 100.0 / 100.0);
            let xi = at(q);
            let v_f = groups()
                .map(|g| {
                    let c = g.iter().filter(|x| **x <= xi).count() as f64;
                    (c - q * g.len() as f64).powi(2)
                })
                .sum::<f64>()
                / (big_m * big_m)
                * correction;
            let half = z * v_f.sqrt();
            let lo = at((q - half).max(0.0));
            let hi = at((q + half).min(1.0));
            if lo.is_nan() || lo <= 0.0 {
                return None;
            }
            (xi, ((hi.ln() - lo.ln()) / (2.0 * z)).powi(2))
        }
    };
    (value > 0.0 && var_ln.is_finite()).then_some((value, var_ln))
}

/// Every sample of `runs`, run after run.
fn all(runs: &[Groups]) -> impl Iterator<Item = f64> + '_ {
    runs.iter().flat_map(|r| r.values().iter().copied())
}

/// A throughput of one side from per repeat, per request (or per session) `[sent_ms,
/// end_ms, weight]` triples: weight per second over each repeat's window, the windows summed over repeats.
pub fn throughput(runs: &[Groups]) -> Option<SideEstimate> {
    let (mut total, mut span, mut sq, mut n) = (0.0, 0.0, 0.0, 0usize);
    let mut per = Vec::with_capacity(runs.len());
    for r in runs {
        let (mut first, mut last, mut t) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
        // A group is one request's triple, or a session's triples one after another.
        let weight = |g: &[f64]| g.chunks_exact(3).map(|c| c[2]).sum::<f64>();
        for c in r.values().chunks_exact(3) {
            first = first.min(c[0]);
            last = last.max(c[1]);
            t += c[2];
        }
        let mean = t / r.len().max(1) as f64;
        sq += r.iter().map(|g| (weight(g) - mean).powi(2)).sum::<f64>();
        n += r.len();
        let s = if last > first { last - first } else { 0.0 };
        per.push(if s > 0.0 { t / (s / 1000.0) } else { f64::NAN });
        total += t;
        span += s;
    }
    if n < 2 || span <= 0.0 || total <= 0.0 || per.iter().any(|p| p.is_nan() || *p <= 0.0) {
        return None;
    }
    let var_total = sq * n as f64 / (n - 1) as f64;
    Some(SideEstimate {
        value: total / (span / 1000.0),
        within: var_total / (total * total),
        runs: per,
    })
}

/// Intervals at `level` of candidate / baseline, candidate − baseline and the candidate,
/// from two independent sides.
pub fn compare(base: &SideEstimate, cand: &SideEstimate, level: f64) -> BootstrapResult {
    // Within-run variances only: drift between runs is bounded apart (super::components).
    let (vb, vc) = (base.within, cand.within);
    let q = stats::z_for(level);
    let (b, c) = (base.value, cand.value);
    let lr = (c / b).ln();
    let se = (vb + vc).sqrt();
    let ratio = Interval {
        lo: (lr - q * se).exp(),
        hi: (lr + q * se).exp(),
    };
    // The difference by the delta method on the same log-scale variances.
    let se_diff = (b * b * vb + c * c * vc).sqrt();
    BootstrapResult {
        base: b,
        cand: c,
        ratio,
        diff: Interval {
            lo: c - b - q * se_diff,
            hi: c - b + q * se_diff,
        },
        cand_ci: Interval {
            lo: c * (-q * vc.sqrt()).exp(),
            hi: c * (q * vc.sqrt()).exp(),
        },
    }
}

#[cfg(test)]
#[path = "large_tests.rs"]
mod tests;
