//! The hierarchical bootstrap: intervals that include run-to-run noise when a side holds
//! several repeats (`load.repeats`, or runs added to a golden baseline with `bless --add`).
//!
//! Each resample draws a side's repeats with replacement, then the requests of each drawn
//! repeat with replacement (a two-stage cluster bootstrap), and computes the statistic over
//! the pooled resample. A side with one run, compared with a side of several, borrows the
//! other side's run-to-run spread: its resampled statistic is multiplied by a relative run
//! effect (one repeat's statistic / the mean of the repeats' statistics) drawn from the
//! other side. With few repeats a bootstrap underestimates the spread (resampling R values
//! has variance (R − 1)/R of theirs, and the percentile interval has normal tails where a
//! t with R − 1 degrees of freedom belongs), so the percentile interval is widened around
//! the point estimate by `t_ν / z · sqrt(R / (R − 1))` (ν the repeats' degrees of freedom,
//! R the fewest repeats of a side that has several): the small-sample correction that
//! brings coverage to about nominal (`compare::hier` tests, docs/gate.md).

use super::groups::Groups;
use super::stats::{self, BootstrapResult, Interval, SplitMix64};

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

/// The widening factor of a hierarchical interval at `level`, for sides of `rb` and `rc`
/// repeats (at least one of them 2 or more).
pub fn widening(level: f64, rb: usize, rc: usize) -> f64 {
    let several: Vec<usize> = [rb, rc].into_iter().filter(|r| *r >= 2).collect();
    let df: usize = several.iter().map(|r| r - 1).sum();
    let r = several.iter().copied().min().unwrap_or(2) as f64;
    stats::z_for(level).recip() * t_for(level, df.max(1) as u32) * (r / (r - 1.0)).sqrt()
}

/// Hierarchical percentile bootstrap of `stat` (a statistic of per-repeat resamples) for
/// baseline and candidate, seeded; intervals at `level`, widened by [`widening`].
pub fn bootstrap(
    base: &Runs,
    cand: &Runs,
    seed: u64,
    level: f64,
    stat: impl Fn(&mut [Vec<f64>]) -> f64,
) -> BootstrapResult {
    let resamples = stats::resamples_for(level);
    let (rb, rc) = (base, cand);
    let whole =
        |side: &[Groups]| -> Vec<Vec<f64>> { side.iter().map(|r| r.values().to_vec()).collect() };
    let b0 = stat(&mut whole(rb));
    let c0 = stat(&mut whole(rc));
    // Relative run effects of each side: one repeat's statistic over their mean.
    let effects = |side: &[Groups]| -> Vec<f64> {
        let per: Vec<f64> = side
            .iter()
            .map(|r| stat(&mut [r.values().to_vec()]))
            .collect();
        let mean = per.iter().sum::<f64>() / per.len().max(1) as f64;
        per.iter()
            .map(|v| if mean != 0.0 { v / mean } else { 1.0 })
            .collect()
    };
    let (eb, ec) = (effects(rb), effects(rc));
    let mut rng = SplitMix64(seed);
    let mut bufs_b: Vec<Vec<f64>> = vec![Vec::new(); rb.len()];
    let mut bufs_c: Vec<Vec<f64>> = vec![Vec::new(); rc.len()];
    let mut draws = super::stats::Draws::with_capacity(resamples);
    let usable = |s: &[Groups]| !s.is_empty() && s.iter().all(|r| !r.is_empty());
    if usable(rb) && usable(rc) {
        for _ in 0..resamples {
            let b = draw(rb, &ec, &mut bufs_b, &mut rng, &stat);
            let c = draw(rc, &eb, &mut bufs_c, &mut rng, &stat);
            draws.push(b, c);
        }
    }
    widened(draws, b0, c0, level, widening(level, rb.len(), rc.len()))
}

/// Percentile intervals of `draws` at `level`, widened by `k` ([`widening`]) around the
/// point estimates from `b0` and `c0`.
pub(crate) fn widened(
    draws: stats::Draws,
    b0: f64,
    c0: f64,
    level: f64,
    k: f64,
) -> BootstrapResult {
    let ratio = stats::percentile_interval(draws.ratios, level);
    let p = if b0 != 0.0 { c0 / b0 } else { f64::NAN };
    let ratio = if p > 0.0 && ratio.lo > 0.0 && ratio.hi.is_finite() {
        Interval {
            lo: p * (ratio.lo / p).powf(k),
            hi: p * (ratio.hi / p).powf(k),
        }
    } else {
        ratio
    };
    let widen = |iv: Interval, p: f64| Interval {
        lo: p + k * (iv.lo - p),
        hi: p + k * (iv.hi - p),
    };
    BootstrapResult {
        base: b0,
        cand: c0,
        ratio,
        diff: widen(stats::percentile_interval(draws.diffs, level), c0 - b0),
        cand_ci: widen(stats::percentile_interval(draws.cands, level), c0),
    }
}

/// One side's resampled statistic: repeats then requests when it has several, else its
/// requests times a run effect borrowed from the other side.
pub(crate) fn draw(
    side: &[Groups],
    other_effects: &[f64],
    bufs: &mut [Vec<f64>],
    rng: &mut SplitMix64,
    stat: &impl Fn(&mut [Vec<f64>]) -> f64,
) -> f64 {
    if side.len() >= 2 {
        for buf in bufs.iter_mut() {
            let r = &side[rng.below(side.len())];
            r.resample(rng, buf);
        }
        stat(bufs)
    } else {
        side[0].resample(rng, &mut bufs[0]);
        let v = stat(&mut bufs[..1]);
        if other_effects.len() >= 2 {
            v * other_effects[rng.below(other_effects.len())]
        } else {
            v
        }
    }
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

    /// Standard normal draws by Box-Muller from the comparison's own generator.
    fn normal(rng: &mut SplitMix64) -> f64 {
        let u = |r: &mut SplitMix64| ((r.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let (a, b) = (u(rng), u(rng));
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }

    /// `repeats` runs of `n` requests: 100 · exp(run effect, sd `run_sd`) · exp(request
    /// noise, sd 0.2).
    fn side(rng: &mut SplitMix64, repeats: usize, n: usize, run_sd: f64) -> Vec<Groups> {
        (0..repeats)
            .map(|_| {
                let run = (run_sd * normal(rng)).exp();
                Groups::singles(
                    (0..n)
                        .map(|_| 100.0 * run * (0.2 * normal(rng)).exp())
                        .collect(),
                )
            })
            .collect()
    }

    fn mean_of(v: &mut [Vec<f64>]) -> f64 {
        let (s, n) = v
            .iter()
            .flatten()
            .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
        s / n as f64
    }

    /// Coverage of the ratio interval of two unchanged sides over `trials` seeds.
    fn coverage(trials: u64, rb: usize, rc: usize, run_sd: f64, level: f64) -> f64 {
        let mut covered = 0;
        for t in 0..trials {
            let mut rng = SplitMix64(0xC0FFEE ^ t.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let (b, c) = (
                side(&mut rng, rb, 30, run_sd),
                side(&mut rng, rc, 30, run_sd),
            );
            let r = if rb == 1 && rc == 1 {
                stats::bootstrap_with(&b[0], &c[0], t, level, |v| {
                    v.iter().sum::<f64>() / v.len() as f64
                })
            } else {
                bootstrap(&b, &c, t, level, mean_of)
            };
            if r.ratio.lo <= 1.0 && 1.0 <= r.ratio.hi {
                covered += 1;
            }
        }
        f64::from(covered) / trials as f64
    }

    /// Known run-to-run noise (a run effect of 8 %, larger than the request noise of a
    /// 30-request mean): the hierarchical interval covers close to its nominal 90 %, where
    /// an interval over requests alone covers far less.
    #[test]
    fn hierarchical_intervals_cover_run_to_run_noise() {
        let (trials, level, run_sd) = (200, 0.90, 0.08);
        let within_only = coverage(trials, 1, 1, run_sd, level);
        let three = coverage(trials, 3, 3, run_sd, level);
        let borrowed = coverage(trials, 3, 1, run_sd, level);
        eprintln!("coverage at 90 %: requests only {within_only}, 3 v 3 {three}, 3 v 1 {borrowed}");
        assert!(within_only < 0.7, "{within_only}");
        // 200 trials: one binomial standard error is about 2.1 %.
        assert!((0.84..=0.97).contains(&three), "{three}");
        assert!((0.84..=0.99).contains(&borrowed), "{borrowed}");
    }
}
