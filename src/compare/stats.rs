//! The statistics behind a verdict: percentiles, a seeded percentile bootstrap over
//! requests, Wilson / Newcombe intervals for error rates, and the distribution-free sample
//! size a quantile needs. Every parameter is documented in docs/gate.md.

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
    let s = format!("{:.2}", level * 100.0);
    format!("{} %", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Bootstrap resamples for a percentile interval at `level`: [`RESAMPLES`], raised so that
/// about 25 resamples fall beyond each end, at most [`MAX_RESAMPLES`].
pub fn resamples_for(level: f64) -> usize {
    let tail = ((1.0 - level) / 2.0).max(1e-12);
    ((TAIL_RESAMPLES / tail).ceil() as usize).clamp(RESAMPLES, MAX_RESAMPLES)
}

/// z of a two-sided normal interval at `level` (1.96 at 95 %): the standard normal quantile
/// at 1 − (1 − level)/2, by Acklam's rational approximation (relative error below 1.2e-9).
pub fn z_for(level: f64) -> f64 {
    normal_quantile(1.0 - (1.0 - level) / 2.0)
}

fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// A closed interval `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// `[v, v]`.
    pub fn point(v: f64) -> Self {
        Interval { lo: v, hi: v }
    }
    /// True when both ends are finite numbers.
    pub fn is_bounded(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }
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

/// Quantile with linear interpolation between order statistics (numpy's default, as vLLM
/// uses). Reorders `v`; O(n) by selection.
pub fn quantile(v: &mut [f64], q: f64) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let k = pos.floor() as usize;
    let frac = pos - k as f64;
    let (_, kth, rest) = v.select_nth_unstable_by(k, |a, b| a.total_cmp(b));
    let lo = *kth;
    if frac == 0.0 || rest.is_empty() {
        return lo;
    }
    let hi = rest.iter().copied().fold(f64::INFINITY, f64::min);
    lo + frac * (hi - lo)
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

/// SplitMix64: a tiny seeded generator, written out here so that verdicts (and history's
/// change points) reproduce bit for bit whatever the version of the `rand` crates (and stay
/// fast in debug builds).
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform index in `0..n` (n < 2^32), by multiply-shift.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }

    /// A standard normal draw, by Box-Muller.
    pub(crate) fn normal(&mut self) -> f64 {
        let mut u = || ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let (a, b) = (u(), u());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }
}

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

/// Wilson score interval of a proportion `k / n` at `level`.
pub fn wilson(k: u64, n: u64, level: f64) -> Interval {
    if n == 0 {
        return Interval { lo: 0.0, hi: 1.0 };
    }
    wilson_p(k as f64 / n as f64, n as f64, level)
}

/// Wilson score interval of a proportion `p` seen over `n` trials, where `n` may be an
/// effective (non-integer) count: the measured requests over an overdispersion
/// ([`dispersion`]).
pub fn wilson_p(p: f64, n: f64, level: f64) -> Interval {
    if n <= 0.0 {
        return Interval { lo: 0.0, hi: 1.0 };
    }
    let z = z_for(level);
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // The exact ends at p = 0 and p = 1 (the formula gives them up to rounding).
    Interval {
        lo: if p <= 0.0 {
            0.0
        } else {
            (centre - half).max(0.0)
        },
        hi: if p >= 1.0 {
            1.0
        } else {
            (centre + half).min(1.0)
        },
    }
}

/// Newcombe's hybrid score interval (method 10) of the difference of two proportions,
/// `k_c/n_c − k_b/n_b` at `level`, built from the two Wilson intervals.
pub fn newcombe(k_b: u64, n_b: u64, k_c: u64, n_c: u64, level: f64) -> Interval {
    let rate = |k: u64, n: u64| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    newcombe_p(
        rate(k_b, n_b),
        n_b as f64,
        rate(k_c, n_c),
        n_c as f64,
        level,
    )
}

/// [`newcombe`] of proportions `p_b`, `p_c` over (possibly effective) counts `n_b`, `n_c`.
pub fn newcombe_p(p_b: f64, n_b: f64, p_c: f64, n_c: f64, level: f64) -> Interval {
    let wb = wilson_p(p_b, n_b, level);
    let wc = wilson_p(p_c, n_c, level);
    let d = p_c - p_b;
    Interval {
        lo: d - ((p_c - wc.lo).powi(2) + (wb.hi - p_b).powi(2)).sqrt(),
        hi: d + ((wc.hi - p_c).powi(2) + (p_b - wb.lo).powi(2)).sqrt(),
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
    fn quantiles_interpolate_like_numpy() {
        let mut v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.5), 5.5);
        assert_eq!(quantile(&mut v, 0.0), 1.0);
        assert_eq!(quantile(&mut v, 1.0), 10.0);
        assert!((quantile(&mut v, 0.99) - 9.91).abs() < 1e-12);
    }

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
    fn wilson_matches_known_values() {
        // 0/200: upper bound z²/(n+z²) = 0.01884.
        let w = wilson(0, 200, CONFIDENCE);
        assert_eq!(w.lo, 0.0);
        assert!((w.hi - 0.018_84).abs() < 1e-4, "{w:?}");
        // 10/100: Wilson 95 % is [0.0552, 0.1744].
        let w = wilson(10, 100, CONFIDENCE);
        assert!(
            (w.lo - 0.0552).abs() < 1e-3 && (w.hi - 0.1744).abs() < 1e-3,
            "{w:?}"
        );
    }

    #[test]
    fn newcombe_matches_newcombe_1998_example() {
        // Newcombe (1998), example (56/70 vs 48/80): difference 0.2, 95 % CI 0.0524 to 0.3339.
        let i = newcombe(48, 80, 56, 70, CONFIDENCE);
        assert!(
            (i.lo - 0.0524).abs() < 1e-3 && (i.hi - 0.3339).abs() < 1e-3,
            "{i:?}"
        );
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
        assert!((z_for(0.95) - 1.959_963_985).abs() < 1e-8);
        assert!((z_for(0.99) - 2.575_829_304).abs() < 1e-8);
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
