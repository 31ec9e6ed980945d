//! One big side against a small one: the usual CI case of a big blessed baseline (a soak,
//! a million-request golden run) and a short pull-request run.
//!
//! Bootstrapping the big side costs resamples × its requests (a million requests at a
//! gate's 20,000 resamples is hours), yet its statistic barely moves between resamples: the
//! small side's spread makes the interval. So the big side's resampled statistic is drawn
//! from its own large-sample estimate ([`super::large`]: value · exp(N(0, var of its log))),
//! the small side is bootstrapped as usual (within each of its repeats), and the percentile
//! intervals are read off the combined draws: cost resamples × small side, whatever the big
//! side's size. This is the within-run part; drift between runs is bounded apart
//! ([`super::components`]).

use super::groups::Groups;
use super::hier;
use super::large::{SideEstimate, LARGE_SAMPLE};
use super::stats::{self, BootstrapResult, Draws};
use crate::stats::SplitMix64;

/// Intervals at `level` when exactly one side (`base` or `cand`, each per repeat, per
/// request) holds at least [`LARGE_SAMPLE`] requests: that side through `estimate`, the
/// other bootstrapped with `stat` (a statistic of per-repeat resamples). None when both or
/// neither side is big, or the big side has no large-sample estimate (its statistic is not
/// positive): the caller then bootstraps both sides.
pub(crate) fn one_big(
    base: &[Groups],
    cand: &[Groups],
    estimate: impl Fn(&[Groups]) -> Option<SideEstimate>,
    level: f64,
    stat: impl Fn(&mut [Vec<f64>]) -> f64,
) -> Option<BootstrapResult> {
    let big = |s: &[Groups]| s.iter().map(Groups::units).sum::<usize>() >= LARGE_SAMPLE;
    let big_base = match (big(base), big(cand)) {
        (true, false) => true,
        (false, true) => false,
        _ => return None,
    };
    let (big, small) = if big_base { (base, cand) } else { (cand, base) };
    let usable = |s: &[Groups]| !s.is_empty() && s.iter().all(|r| !r.is_empty());
    if !usable(small) {
        return None;
    }
    let est = estimate(big)?;
    let whole =
        |side: &[Groups]| -> Vec<Vec<f64>> { side.iter().map(|r| r.values().to_vec()).collect() };
    let small0 = stat(&mut whole(small));
    // The big side's log-variance within runs; drift between runs is bounded apart
    // (super::components).
    let sd = est.within.sqrt();
    let resamples = stats::resamples_for(level);
    let mut rng = SplitMix64(stats::SEED);
    let mut bufs: Vec<Vec<f64>> = vec![Vec::new(); small.len()];
    let mut draws = Draws::with_capacity(resamples);
    for _ in 0..resamples {
        let big_draw = est.value * (sd * rng.normal()).exp();
        let small_draw = hier::draw(small, &mut bufs, &mut rng, &stat);
        if big_base {
            draws.push(big_draw, small_draw);
        } else {
            draws.push(small_draw, big_draw);
        }
    }
    let (b0, c0) = if big_base {
        (est.value, small0)
    } else {
        (small0, est.value)
    };
    Some(BootstrapResult {
        base: b0,
        cand: c0,
        ratio: stats::percentile_interval(draws.ratios, level),
        diff: stats::percentile_interval(draws.diffs, level),
        cand_ci: stats::percentile_interval(draws.cands, level),
    })
}

#[cfg(test)]
#[path = "mixed_tests.rs"]
mod tests;
