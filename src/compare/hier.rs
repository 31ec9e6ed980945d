//! The within-run bootstrap of a side with several repeats (`load.repeats`, or runs added to
//! a golden baseline with `bless --add`), and Student's t quantiles.
//!
//! Each resample redraws every repeat's requests from that repeat (a bootstrap stratified by
//! run), so the interval measures the noise of the requests the runs happened to draw. The
//! runs' own drift is a second variance component, estimated and bounded in
//! [`super::components`]: resampling three runs as if they were three requests, as a
//! two-stage cluster bootstrap does, both understates it (R values resampled have (R − 1)/R
//! of their variance) and, corrected by t with R − 1 degrees of freedom, widens the
//! well-measured within-run noise as if it too had two degrees of freedom.

use super::groups::Groups;
use super::stats::{self, BootstrapResult, SplitMix64};

/// A side's samples: per repeat, its requests' values grouped by request.
pub type Runs = [Groups];

/// Two-sided quantile of Student's t with `df` degrees of freedom at `level` (e.g. 2.776
/// for 4 df at 95 %), by bisection on its distribution function.
pub fn t_for(level: f64, df: u32) -> f64 {
    let want = level.clamp(0.0, 1.0 - 1e-15);
    let (mut lo, mut hi) = (0.0, 1.0);
    while t_central(hi, df) < want {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_central(mid, df) < want {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// P(|T| < t) for Student's t with `df` (≥ 1) degrees of freedom: the closed forms in
/// θ = atan(t/√ν) (Abramowitz & Stegun 26.7.3 and 26.7.4).
fn t_central(t: f64, df: u32) -> f64 {
    let df = df.max(1);
    let theta = (t / f64::from(df).sqrt()).atan();
    let (s, c) = theta.sin_cos();
    let c2 = c * c;
    if df % 2 == 1 {
        // (2/π)(θ + sin θ cos θ (1 + 2/3 cos²θ + … + (2·4…(ν−3))/(1·3…(ν−2)) cos^(ν−3) θ))
        let mut sum = 0.0;
        if df > 1 {
            let mut term = 1.0;
            sum = 1.0;
            let mut k = 1;
            while 2 * k + 1 < df {
                term *= c2 * f64::from(2 * k) / f64::from(2 * k + 1);
                sum += term;
                k += 1;
            }
        }
        (2.0 / std::f64::consts::PI) * (theta + s * c * sum)
    } else {
        // sin θ (1 + 1/2 cos²θ + (1·3)/(2·4) cos⁴θ + … + (1·3…(ν−3))/(2·4…(ν−2)) cos^(ν−2) θ)
        let mut term = 1.0;
        let mut sum = 1.0;
        let mut k = 1;
        while 2 * k < df {
            term *= c2 * f64::from(2 * k - 1) / f64::from(2 * k);
            sum += term;
            k += 1;
        }
        s * sum
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        for (df, want) in [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (10, 2.228)] {
            let t = t_for(0.95, df);
            assert!((t - want).abs() < 2e-3, "df {df}: {t}");
        }
        assert!((t_for(0.99, 4) - 4.604).abs() < 2e-3);
        // Many degrees of freedom: the normal's z.
        assert!((t_for(0.95, 2000) - 1.9612).abs() < 1e-3);
    }
}
