//! The within-run bootstrap of a side with several repeats (`load.repeats`, or runs added to
//! a golden baseline with `bless --add`).
//!
//! Each resample redraws every repeat's requests from that repeat (a bootstrap stratified by
//! run), so the interval measures the noise of the requests the runs happened to draw. The
//! runs' own drift is a second variance component, estimated and bounded in
//! [`super::components`]: resampling three runs as if they were three requests, as a
//! two-stage cluster bootstrap does, both understates it (R values resampled have (R − 1)/R
//! of their variance) and, corrected by t with R − 1 degrees of freedom, widens the
//! well-measured within-run noise as if it too had two degrees of freedom.

use super::groups::Groups;
use super::stats::{self, BootstrapResult};
use crate::stats::SplitMix64;

/// A side's samples: per repeat, its requests' values grouped by request.
pub type Runs = [Groups];

/// Stratified percentile bootstrap of `stat` (a statistic of per-repeat resamples) for
/// baseline and candidate, seeded; intervals at `level`. Each resample redraws the requests
/// of every repeat from that repeat (the runs stay as they were): the within-run part of a
/// check's noise. The run-to-run part is bounded apart ([`super::components`]).
pub fn bootstrap(
    base: &Runs,
    cand: &Runs,
    seed: u64,
    level: f64,
    stat: impl Fn(&mut [Vec<f64>]) -> f64,
) -> BootstrapResult {
    let resamples = stats::resamples_for(level);
    let whole =
        |side: &[Groups]| -> Vec<Vec<f64>> { side.iter().map(|r| r.values().to_vec()).collect() };
    let b0 = stat(&mut whole(base));
    let c0 = stat(&mut whole(cand));
    let mut rng = SplitMix64(seed);
    let mut bufs_b: Vec<Vec<f64>> = vec![Vec::new(); base.len()];
    let mut bufs_c: Vec<Vec<f64>> = vec![Vec::new(); cand.len()];
    let mut draws = super::stats::Draws::with_capacity(resamples);
    let usable = |s: &[Groups]| !s.is_empty() && s.iter().all(|r| !r.is_empty());
    if usable(base) && usable(cand) {
        for _ in 0..resamples {
            let b = draw(base, &mut bufs_b, &mut rng, &stat);
            let c = draw(cand, &mut bufs_c, &mut rng, &stat);
            draws.push(b, c);
        }
    }
    BootstrapResult {
        base: b0,
        cand: c0,
        ratio: stats::percentile_interval(draws.ratios, level),
        diff: stats::percentile_interval(draws.diffs, level),
        cand_ci: stats::percentile_interval(draws.cands, level),
    }
}

/// One side's resampled statistic: the requests of every repeat redrawn from that repeat.
pub(crate) fn draw(
    side: &[Groups],
    bufs: &mut [Vec<f64>],
    rng: &mut SplitMix64,
    stat: &impl Fn(&mut [Vec<f64>]) -> f64,
) -> f64 {
    for (r, buf) in side.iter().zip(bufs.iter_mut()) {
        r.resample(rng, buf);
    }
    stat(&mut bufs[..side.len()])
}
