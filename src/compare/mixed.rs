//! One big side against a small one: the usual CI case of a big blessed baseline (a soak,
//! a million-request golden run) and a short pull-request run.
//!
//! Bootstrapping the big side costs resamples × its requests (a million requests at a
//! gate's 20,000 resamples is hours), yet its statistic barely moves between resamples: the
//! small side's spread makes the interval. So the big side's resampled statistic is drawn
//! from its own large-sample estimate ([`super::large`]: value · exp(N(0, var of its log)),
//! with its run-to-run variance when it has repeats), the small side is bootstrapped as
//! usual, and the percentile intervals are read off the combined draws: cost resamples ×
//! small side, whatever the big side's size. Run effects are borrowed between sides and
//! the interval widened for few repeats as in [`super::hier`].

use super::groups::Groups;
use super::hier;
use super::large::{SideEstimate, LARGE_SAMPLE};
use super::stats::{self, BootstrapResult, Draws, SplitMix64};

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
    let big = |s: &[Groups]| s.iter().map(Groups::len).sum::<usize>() >= LARGE_SAMPLE;
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
    // Relative run effects (one repeat's statistic over their mean), for a one-run side to
    // borrow from a side of several.
    let effects = |per: &[f64]| -> Vec<f64> {
        if per.len() < 2 {
            return Vec::new();
        }
        let mean = per.iter().sum::<f64>() / per.len() as f64;
        per.iter()
            .map(|v| if mean != 0.0 { v / mean } else { 1.0 })
            .collect()
    };
    let small_per: Vec<f64> = if small.len() >= 2 {
        small
            .iter()
            .map(|r| stat(&mut [r.values().to_vec()]))
            .collect()
    } else {
        Vec::new()
    };
    let (big_effects, small_effects) = (effects(&est.runs), effects(&small_per));
    // The big side's log-variance: within runs, or its repeats' spread over R when larger.
    let sd = match est.run_variance() {
        Some(v) => est.within.max(v / est.runs.len() as f64),
        None => est.within,
    }
    .sqrt();
    let resamples = stats::resamples_for(level);
    let mut rng = SplitMix64(stats::SEED);
    let mut bufs: Vec<Vec<f64>> = vec![Vec::new(); small.len()];
    let mut draws = Draws::with_capacity(resamples);
    let big_draw = |rng: &mut SplitMix64| {
        let v = est.value * (sd * rng.normal()).exp();
        if big.len() < 2 && !small_effects.is_empty() {
            v * small_effects[rng.below(small_effects.len())]
        } else {
            v
        }
    };
    for _ in 0..resamples {
        if big_base {
            let b = big_draw(&mut rng);
            let c = hier::draw(small, &big_effects, &mut bufs, &mut rng, &stat);
            draws.push(b, c);
        } else {
            let b = hier::draw(small, &big_effects, &mut bufs, &mut rng, &stat);
            let c = big_draw(&mut rng);
            draws.push(b, c);
        }
    }
    let (b0, c0) = if big_base {
        (est.value, small0)
    } else {
        (small0, est.value)
    };
    let repeats = base.len() >= 2 || cand.len() >= 2;
    Some(if repeats {
        hier::widened(
            draws,
            b0,
            c0,
            level,
            hier::widening(level, base.len(), cand.len()),
        )
    } else {
        BootstrapResult {
            base: b0,
            cand: c0,
            ratio: stats::percentile_interval(draws.ratios, level),
            diff: stats::percentile_interval(draws.diffs, level),
            cand_ci: stats::percentile_interval(draws.cands, level),
        }
    })
}

#[cfg(test)]
#[path = "mixed_tests.rs"]
mod tests;
