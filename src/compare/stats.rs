//! The statistics behind a verdict: a seeded percentile bootstrap over requests, the
//! per-check levels and the distribution-free sample size a quantile needs. Every parameter
//! is documented in docs/gate.md. The quantile, the generator, the normal quantile and the
//! Wilson / Newcombe intervals are the ground floor's (`crate::stats`); the intervals are
//! re-exported here for the engines beside this file.

pub use crate::stats::{newcombe, newcombe_p, wilson, wilson_p, z_for, Interval};
use crate::stats::{quantile, SplitMix64};

/// Fewest bootstrap resamples per check (the count at a 95 % interval).
pub const RESAMPLES: usize = 2000;
/// Most bootstrap resamples per check (reached at per-check levels beyond 99.875 %).
pub const MAX_RESAMPLES: usize = 20_000;
/// Resamples wanted beyond each end of a percentile interval, so that its ends are order
/// statistics with some support rather than the two most extreme resamples.
const TAIL_RESAMPLES: f64 = 25.0;
/// Family-wise confidence level of a whole comparison: the chance that no check of an
/// unchanged configuration reports a regression or an improvement (see [`family_level`]).
pub const CONFIDENCE: f64 = 0.95;
/// Seed of every bootstrap, fixed so that verdicts reproduce exactly.
pub const SEED: u64 = 0x1add_e5ed;
/// Fewest requests per side for any bootstrap.
pub const MIN_REQUESTS: usize = 20;

/// Bonferroni: the two-sided level of each of `checks` intervals so that all of them cover
/// at once with probability at least `family` (1 − (1 − family) / checks).
pub fn family_level(family: f64, checks: usize) -> f64 {
    1.0 - (1.0 - family) / checks.max(1) as f64
}

/// A level for humans: `95 %`, `99.72 %` (two decimals, trailing zeros dropped).
pub fn level_text(level: f64) -> String {
    format!("{} %", crate::format::trimmed(level * 100.0, 2))
}

/// Bootstrap resamples for a percentile interval at `level`: [`RESAMPLES`], raised so that
/// about 25 resamples fall beyond each end, at most [`MAX_RESAMPLES`].
pub fn resamples_for(level: f64) -> usize {
    let tail = ((1.0 - level) / 2.0).max(1e-12);
    ((TAIL_RESAMPLES / tail).ceil() as usize).clamp(RESAMPLES, MAX_RESAMPLES)
}

/// A statistic of one sample of values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    Mean,
    Std,
    /// Quantile in (0, 1); the median is 0.5.
    Quantile(f64),
}

impl Statistic {
    /// The statistic named by a key prefix (`median`, `p99`, `p99.9`, `mean`, `std`).
    pub fn from_prefix(p: &str) -> Option<Statistic> {
        Some(match p {
            "mean" => Statistic::Mean,
            "std" => Statistic::Std,
            "median" => Statistic::Quantile(0.5),
            "p90" => Statistic::Quantile(0.90),
            "p95" => Statistic::Quantile(0.95),
            "p99" => Statistic::Quantile(0.99),
            "p99.9" => Statistic::Quantile(0.999),
            _ => return None,
        })
    }

    /// Compute it on `v` (reordered in place). NaN when `v` is empty.
    pub fn compute(self, v: &mut [f64]) -> f64 {
        if v.is_empty() {
            return f64::NAN;
        }
        match self {
            Statistic::Mean => v.iter().sum::<f64>() / v.len() as f64,
            Statistic::Std => {
                let m = v.iter().sum::<f64>() / v.len() as f64;
                (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
            }
            Statistic::Quantile(q) => quantile(v, q),
        }
    }

    /// Fewest samples per side for a meaningful interval at `level`: for a quantile q, the
    /// smallest n with `q^n <= 1 - level`, i.e. the sample maximum is a distribution-free
    /// upper bound at that level on the q-quantile (299 for p99 at 95 %, 5 for the median);
    /// for means and deviations, [`MIN_REQUESTS`].
    pub fn min_samples(self, level: f64) -> usize {
        match self {
            Statistic::Quantile(q) => {
                let n = ((1.0 - level).ln() / q.ln()).ceil() as usize;
                n.max(MIN_REQUESTS)
            }
            _ => MIN_REQUESTS,
        }
    }
}

/// Percentile-bootstrap results for one baseline/candidate pair of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapResult {
    /// The statistic on the full baseline / candidate samples.
    pub base: f64,
    pub cand: f64,
    /// Interval of candidate / baseline.
    pub ratio: Interval,
    /// Interval of candidate − baseline.
    pub diff: Interval,
    /// Interval of the candidate statistic alone.
    pub cand_ci: Interval,
}

/// Empirical (lo, hi) quantiles of the bootstrap distribution at `level`.
pub(crate) fn percentile_interval(mut v: Vec<f64>, level: f64) -> Interval {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return Interval {
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
        };
    }
    let a = (1.0 - level) / 2.0;
    Interval {
        lo: quantile(&mut v, a),
        hi: quantile(&mut v, 1.0 - a),
    }
}

/// One side of a comparison: a value (or several, e.g. ITL gaps) per request. The bootstrap
/// resamples requests, so values of one request stay together.
pub use super::groups::Groups;

/// Seeded percentile bootstrap of `stat` for baseline and candidate, resampling requests
/// independently on each side ([`resamples_for`] `level` times); intervals at `level`.
pub fn bootstrap(
    base: &Groups,
    cand: &Groups,
    stat: Statistic,
    seed: u64,
    level: f64,
) -> BootstrapResult {
    bootstrap_with(base, cand, seed, level, |v| stat.compute(v))
}

/// As [`bootstrap`], with any statistic of the flattened resample.
pub fn bootstrap_with(
    base: &Groups,
    cand: &Groups,
    seed: u64,
    level: f64,
    stat: impl Fn(&mut [f64]) -> f64,
) -> BootstrapResult {
    let resamples = resamples_for(level);
    let b0 = stat(&mut base.values().to_vec());
    let c0 = stat(&mut cand.values().to_vec());
    let mut rng = SplitMix64(seed);
    let mut draws = Draws::with_capacity(resamples);
    let (mut bb, mut cb) = (Vec::new(), Vec::new());
    if !base.is_empty() && !cand.is_empty() {
        for _ in 0..resamples {
            base.resample(&mut rng, &mut bb);
            cand.resample(&mut rng, &mut cb);
            let b = stat(&mut bb);
            let c = stat(&mut cb);
            draws.push(b, c);
        }
    }
    BootstrapResult {
        base: b0,
        cand: c0,
        ratio: percentile_interval(draws.ratios, level),
        diff: percentile_interval(draws.diffs, level),
        cand_ci: percentile_interval(draws.cands, level),
    }
}

/// Overdispersion of a side's per-run error counts `(failed, measured)`: Pearson's χ² of the
/// runs against their pooled rate over its R − 1 degrees of freedom, at least 1 (the
/// quasi-binomial dispersion φ, or a design effect). With φ > 1 the error rate varies between
/// runs more than chance alone would make it, and the runs' requests are worth measured / φ
/// independent ones. `None` with fewer than two runs that measured anything; 1 when no run
/// failed (or every request did), where the runs show no spread.
pub fn dispersion(runs: &[(u64, u64)]) -> Option<f64> {
    let runs: Vec<(f64, f64)> = runs
        .iter()
        .filter(|r| r.1 > 0)
        .map(|&(k, n)| (k as f64, n as f64))
        .collect();
    if runs.len() < 2 {
        return None;
    }
    let (k, n) = runs.iter().fold((0.0, 0.0), |(k, n), r| (k + r.0, n + r.1));
    let p = k / n;
    if p <= 0.0 || p >= 1.0 {
        return Some(1.0);
    }
    let chi2: f64 = runs
        .iter()
        .map(|&(k, n)| (k - n * p).powi(2) / (n * p * (1.0 - p)))
        .sum();
    Some((chi2 / (runs.len() - 1) as f64).max(1.0))
}

/// A bootstrap's draws: candidate / baseline (1 when both are 0, infinite when only the
/// baseline is), candidate − baseline, and the candidate alone.
pub(crate) struct Draws {
    pub ratios: Vec<f64>,
    pub diffs: Vec<f64>,
    pub cands: Vec<f64>,
}

impl Draws {
    pub fn with_capacity(n: usize) -> Draws {
        Draws {
            ratios: Vec::with_capacity(n),
            diffs: Vec::with_capacity(n),
            cands: Vec::with_capacity(n),
        }
    }

    /// One resample's baseline `b` and candidate `c`.
    pub fn push(&mut self, b: f64, c: f64) {
        self.ratios.push(if b == 0.0 {
            if c == 0.0 {
                1.0
            } else {
                f64::INFINITY
            }
        } else {
            c / b
        });
        self.diffs.push(c - b);
        self.cands.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_needs_299_samples() {
        assert_eq!(Statistic::Quantile(0.99).min_samples(CONFIDENCE), 299);
        assert_eq!(Statistic::Quantile(0.999).min_samples(CONFIDENCE), 2995);
        assert_eq!(
            Statistic::Quantile(0.5).min_samples(CONFIDENCE),
            MIN_REQUESTS
        );
        // At a per-check level of 99.75 % (20 checks), p99 needs more.
        assert_eq!(Statistic::Quantile(0.99).min_samples(0.9975), 597);
    }

    #[test]
    fn bootstrap_is_reproducible_and_identical_samples_give_unit_ratio() {
        let g = Groups::from((0..100).map(|i| vec![f64::from(i)]).collect::<Vec<_>>());
        let a = bootstrap(&g, &g, Statistic::Quantile(0.5), SEED, CONFIDENCE);
        let b = bootstrap(&g, &g, Statistic::Quantile(0.5), SEED, CONFIDENCE);
        assert_eq!(a, b);
        assert_eq!(a.base, a.cand);
        assert!(a.ratio.lo < 1.0 && a.ratio.hi > 1.0);
    }

    #[test]
    fn per_check_levels_z_and_resamples() {
        // 95 % family-wise over 18 checks: each interval at 99.72 %, z = 2.991.
        let l = family_level(0.95, 18);
        assert!((l - 0.997_222).abs() < 1e-6, "{l}");
        assert!((z_for(l) - 2.9913).abs() < 1e-3);
        assert_eq!(family_level(0.95, 1), 0.95);
        assert_eq!(resamples_for(0.95), RESAMPLES);
        assert!((17_999..=18_001).contains(&resamples_for(l)));
        assert_eq!(resamples_for(0.999_99), MAX_RESAMPLES);
    }
}
