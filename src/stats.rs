//! Statistics on the ground floor, each written once: the quantile of a sample (one
//! convention), the seeded generator behind every resampling, the normal quantile, Student's
//! t (its quantile and its two-sided p-value), and the Wilson and Newcombe intervals of
//! proportions. Nothing here knows of
//! requests, rungs or verdicts: `metrics` builds summaries with it, `compare` its interval
//! engines (bootstrap, large-sample, hierarchical) and `history` its change points.
//!
//! **The quantile convention.** Linear interpolation between order statistics (numpy's
//! default, Hyndman and Fan's type 7, as vLLM's benchmark uses): the quantile at `p` in
//! [0, 1] of n sorted samples x₀ … xₙ₋₁ lies at position p·(n − 1), between the samples at
//! ⌊pos⌋ and ⌈pos⌉; exactly on a rank it is that sample. An empty sample has none (NaN). A
//! percentile `q` in 0..=100 is the quantile at `q / 100.0`, as numpy's `percentile` divides
//! (99.9 / 100 is one bit away from the literal 0.999, so callers given percents divide).
//!
//! Every sample percentile ladder computes uses it: a rung's percentiles and their checks
//! (`metrics::compute`), the bootstrap's percentile intervals and the engines' medians and
//! quantiles (`compare`), a capacity probe's percentile (`capacity::interval`, where a failed
//! request counts as `+inf` and a percentile past one is infinite) and the median of repeated
//! runs (`metrics::outliers`). Three things that look alike are not sample percentiles by
//! this convention, on purpose: a Prometheus histogram's quantile (`servermetrics::summary`)
//! interpolates within a bucket, as PromQL's `histogram_quantile` does; the `server_p95_*` of
//! a gauge over the scrapes is the nearest rank (a value the server did report); and a
//! report's empirical CDF and its timeline's median TTFT per bin (`report::focus`) read
//! order statistics directly (the CDF's steps, the lower middle sample).

/// Where the quantile at `p` (clamped to [0, 1]) of `n ≥ 1` sorted samples falls: the two
/// 0-based ranks it interpolates between and the weight of the upper one.
pub fn linear_ranks(n: usize, p: f64) -> (usize, usize, f64) {
    let pos = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    (lo, pos.ceil() as usize, pos - lo as f64)
}

/// The value at weight `frac` between the samples `a` and `b` at the ranks of
/// [`linear_ranks`]: `a` itself when `frac` is 0.
pub fn interpolate(a: f64, b: f64, frac: f64) -> f64 {
    if frac == 0.0 {
        a
    } else {
        a + (b - a) * frac
    }
}

/// The quantile at `p` of samples sorted in ascending order; NaN when there are none.
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let (lo, hi, frac) = linear_ranks(sorted.len(), p);
    interpolate(sorted[lo], sorted[hi], frac)
}

/// The quantile at `p` of samples in any order, found by selection (O(n)); reorders `v`.
/// NaN when `v` is empty.
pub fn quantile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let (k, _, frac) = linear_ranks(v.len(), p);
    let (_, kth, rest) = v.select_nth_unstable_by(k, f64::total_cmp);
    let lo = *kth;
    if frac == 0.0 || rest.is_empty() {
        return lo;
    }
    // The next order statistic is the smallest of what selection left above rank k.
    let hi = rest.iter().copied().fold(f64::INFINITY, f64::min);
    interpolate(lo, hi, frac)
}

/// SplitMix64: a tiny seeded generator, written out here so that verdicts and history's
/// change points reproduce bit for bit whatever the version of the `rand` crates (and stay
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

/// Two-sided p-value of Student's t statistic `t` with `df` degrees of freedom,
/// P(|T| ≥ |t|) = I_{df/(df+t²)}(df/2, 1/2), for `df` > 0 not necessarily whole.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// Regularised incomplete beta I_x(a, b) (Numerical Recipes' continued fraction).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    d = if d.abs() < TINY { TINY } else { d };
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 + aa * d;
            d = if d.abs() < TINY { TINY } else { d };
            c = 1.0 + aa / c;
            c = if c.abs() < TINY { TINY } else { c };
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// ln Γ(x), Lanczos approximation (g = 7, 9 terms), x > 0.
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let s = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |s, (i, g)| s + g / (x + 1.0 + i as f64));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
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

/// Wilson score interval of a proportion `k / n` at `level`.
pub fn wilson(k: u64, n: u64, level: f64) -> Interval {
    if n == 0 {
        return Interval { lo: 0.0, hi: 1.0 };
    }
    wilson_p(k as f64 / n as f64, n as f64, level)
}

/// Wilson score interval of a proportion `p` seen over `n` trials, where `n` may be an
/// effective (non-integer) count: the measured requests over an overdispersion
/// (`compare::stats::dispersion`).
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

/// The block length for resampling a time-ordered series whose neighbours may be correlated
/// (requests that queued together): 1 when no autocorrelation is significant, else Politis
/// and White's automatic choice for the circular block bootstrap (2004, with Patton, Politis
/// and White's 2009 correction), at most ⌈√n⌉ so that a resample draws at least √n blocks.
///
/// The rule: with ρ̂(k) the sample autocorrelations and K = max(5, ⌈√log₁₀ n⌉), m̂ is the
/// smallest lag m after which K lags in a row stay inside ±2·√(log₁₀ n / n). m̂ = 0 (none of
/// the first K is significant) gives 1: independent samples are resampled one by one, as
/// before. Otherwise, with M = 2·m̂ and the flat-top window λ (1 up to ½, falling linearly to
/// 0 at 1), Ĝ = Σ λ(k/M)·|k|·R̂(k) and ĝ = Σ λ(k/M)·R̂(k) over |k| ≤ M, the block length is
/// (2Ĝ² / (4/3·ĝ²))^⅓ · n^⅓, rounded up. Lags are examined up to 64 (with ⌈√n⌉ + K below
/// that): a longer memory is cut at the cap anyway, and a million samples then cost a few
/// passes.
pub fn block_length(series: &[f64]) -> usize {
    let Some(f) = FlatTop::of(series) else {
        return 1;
    };
    let nf = series.len() as f64;
    let cap = nf.sqrt().ceil() as usize;
    let d = 4.0 / 3.0 * f.g0 * f.g0;
    if d.is_nan() || d <= 0.0 {
        return cap;
    }
    let b = (2.0 * f.g_big * f.g_big / d).cbrt() * nf.cbrt();
    if !b.is_finite() {
        return cap;
    }
    (b.ceil() as usize).clamp(1, cap)
}

/// The design effect of a time-ordered series: its long-run variance (the flat-top estimate
/// ĝ of [`block_length`], i.e. Σ λ(k/M)·R̂(k) over |k| ≤ M) over its variance R̂(0). The mean
/// of n such samples varies as much as the mean of n / design effect independent ones. 1 when
/// no autocorrelation is significant (by the rule of [`block_length`]); at least 1 and at
/// most √n (the most that n samples can tell: about √n independent stretches).
pub fn design_effect(series: &[f64]) -> f64 {
    let Some(f) = FlatTop::of(series) else {
        return 1.0;
    };
    let r = f.g0 / f.c0;
    if r.is_finite() {
        r.clamp(1.0, (series.len() as f64).sqrt())
    } else {
        1.0
    }
}

/// The flat-top lag-window estimates behind [`block_length`] and [`design_effect`]; None
/// when the series is short, constant, or shows no significant autocorrelation (m̂ = 0).
struct FlatTop {
    c0: f64,
    g0: f64,
    g_big: f64,
}

impl FlatTop {
    fn of(series: &[f64]) -> Option<FlatTop> {
        let n = series.len();
        if n < 8 {
            return None;
        }
        let nf = n as f64;
        let mean = series.iter().sum::<f64>() / nf;
        let c0 = series.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / nf;
        // A constant series (to rounding: its mean is not exactly any of its values) has no
        // correlation to speak of.
        if c0.is_nan() || c0 <= 1e-24 * (1.0 + mean * mean) || !c0.is_finite() {
            return None;
        }
        let cov = |k: usize| -> f64 {
            series[..n - k]
                .iter()
                .zip(&series[k..])
                .map(|(a, b)| (a - mean) * (b - mean))
                .sum::<f64>()
                / nf
        };
        let kn = 5usize.max(nf.log10().sqrt().ceil() as usize);
        let m_max = (nf.sqrt().ceil() as usize + kn).min(64).min(n - 1);
        let threshold = 2.0 * (nf.log10() / nf).sqrt();
        // Autocovariances computed as the search needs them.
        let mut r: Vec<f64> = vec![c0];
        let at = |k: usize, r: &mut Vec<f64>| -> f64 {
            while r.len() <= k {
                let next = cov(r.len());
                r.push(next);
            }
            r[k]
        };
        let mut m_hat = None;
        for m in 0..=m_max.saturating_sub(kn) {
            if (1..=kn).all(|k| at(m + k, &mut r).abs() / c0 < threshold) {
                m_hat = Some(m);
                break;
            }
        }
        let m_hat = m_hat.unwrap_or(m_max);
        if m_hat == 0 {
            return None;
        }
        let big_m = (2 * m_hat).min(m_max);
        let lambda = |t: f64| {
            let t = t.abs();
            if t <= 0.5 {
                1.0
            } else if t <= 1.0 {
                2.0 * (1.0 - t)
            } else {
                0.0
            }
        };
        let (mut g_big, mut g0) = (0.0, c0);
        for k in 1..=big_m {
            let w = lambda(k as f64 / big_m as f64) * at(k, &mut r);
            g_big += 2.0 * k as f64 * w;
            g0 += 2.0 * w;
        }
        Some(FlatTop { c0, g0, g_big })
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
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&sorted, 0.5), 2.5);
        assert!((quantile_sorted(&sorted, 0.99) - 3.97).abs() < 1e-12);
        assert_eq!(quantile_sorted(&sorted, 0.0), 1.0);
        assert_eq!(quantile_sorted(&sorted, 1.0), 4.0);
        assert_eq!(quantile_sorted(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn selection_and_sorted_quantiles_agree_bit_for_bit_and_empty_is_nan() {
        let mut r = SplitMix64(5);
        let v: Vec<f64> = (0..1001).map(|_| r.normal().exp()).collect();
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        for p in [0.0, 0.25, 0.5, 0.9, 0.95, 0.99, 99.9 / 100.0, 0.999, 1.0] {
            let mut w = v.clone();
            assert_eq!(quantile(&mut w, p), quantile_sorted(&sorted, p), "{p}");
        }
        assert!(quantile(&mut [], 0.5).is_nan());
        assert!(quantile_sorted(&[], 0.5).is_nan());
        // On a rank the sample itself, even an infinite one.
        assert_eq!(quantile_sorted(&[1.0, f64::INFINITY], 1.0), f64::INFINITY);
    }

    #[test]
    fn a_percentile_is_the_quantile_at_q_over_100_as_numpy_divides() {
        assert_ne!(99.9 / 100.0, 0.999, "why callers given percents divide");
        let (lo, hi, frac) = linear_ranks(1001, 99.9 / 100.0);
        assert_eq!((lo, hi), (999, 1000));
        assert!(frac > 0.0, "99.9/100 × 1000 lies just above rank 999");
        assert_eq!(linear_ranks(1001, 0.999), (999, 999, 0.0));
    }

    #[test]
    fn split_mix_is_the_published_sequence() {
        // SplitMix64 seeded with 1234567 (Vigna's reference output).
        let mut r = SplitMix64(1234567);
        assert_eq!(r.next(), 6457827717110365317);
        assert_eq!(r.next(), 3203168211198807973);
        let mut r = SplitMix64(3);
        assert!((0..1000).all(|_| r.below(7) < 7));
    }

    #[test]
    fn z_and_t_quantiles_match_tables() {
        assert!((z_for(0.95) - 1.959_963_985).abs() < 1e-8);
        assert!((z_for(0.99) - 2.575_829_304).abs() < 1e-8);
        for (df, want) in [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (10, 2.228)] {
            let t = t_for(0.95, df);
            assert!((t - want).abs() < 2e-3, "df {df}: {t}");
        }
        assert!((t_for(0.99, 4) - 4.604).abs() < 2e-3);
        // Many degrees of freedom: the normal's z.
        assert!((t_for(0.95, 2000) - 1.9612).abs() < 1e-3);
    }

    #[test]
    fn t_p_values_match_tables() {
        // t = 2.776 at 4 df is the two-sided 5 % point; t = 12.706 at 1 df likewise.
        let p = t_two_sided_p;
        assert!((p(2.776, 4.0) - 0.05).abs() < 5e-4, "{}", p(2.776, 4.0));
        assert!((p(12.706, 1.0) - 0.05).abs() < 5e-4);
        assert!((p(0.0, 10.0) - 1.0).abs() < 1e-12);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-10);
    }

    #[test]
    fn wilson_matches_known_values() {
        // 0/200: upper bound z²/(n+z²) = 0.01884.
        let w = wilson(0, 200, 0.95);
        assert_eq!(w.lo, 0.0);
        assert!((w.hi - 0.018_84).abs() < 1e-4, "{w:?}");
        // 10/100: Wilson 95 % is [0.0552, 0.1744].
        let w = wilson(10, 100, 0.95);
        assert!(
            (w.lo - 0.0552).abs() < 1e-3 && (w.hi - 0.1744).abs() < 1e-3,
            "{w:?}"
        );
    }

    #[test]
    fn newcombe_matches_newcombe_1998_example() {
        // Newcombe (1998), example (56/70 vs 48/80): difference 0.2, 95 % CI 0.0524 to 0.3339.
        let i = newcombe(48, 80, 56, 70, 0.95);
        assert!(
            (i.lo - 0.0524).abs() < 1e-3 && (i.hi - 0.3339).abs() < 1e-3,
            "{i:?}"
        );
    }
    #[test]
    fn independent_samples_get_blocks_of_one_and_a_queue_gets_long_blocks() {
        // Independent draws: no significant autocorrelation, so no blocks (in 19 of 20 seeds
        // at least: the rule tests five lags at about 3 standard errors).
        let mut ones = 0;
        for seed in 0..20 {
            let mut rng = SplitMix64(seed);
            let v: Vec<f64> = (0..200).map(|_| rng.normal()).collect();
            ones += usize::from(block_length(&v) == 1);
        }
        assert!(
            ones >= 19,
            "{ones} of 20 independent series got blocks of 1"
        );
        // An AR(1) series with φ = 0.9 (a queue that builds and drains): long blocks, capped
        // at ⌈√n⌉.
        let mut rng = SplitMix64(3);
        let mut x = 0.0;
        let v: Vec<f64> = (0..400)
            .map(|_| {
                x = 0.9 * x + rng.normal();
                x
            })
            .collect();
        let b = block_length(&v);
        assert!((8..=20).contains(&b), "AR(1) 0.9 over 400: block {b}");
        // A weaker memory gets a shorter block than a stronger one.
        let mut rng = SplitMix64(3);
        let mut y = 0.0;
        let w: Vec<f64> = (0..400)
            .map(|_| {
                y = 0.5 * y + rng.normal();
                y
            })
            .collect();
        let bw = block_length(&w);
        assert!(bw > 1 && bw < b, "AR(1) 0.5: {bw}, 0.9: {b}");
        // Degenerate inputs.
        assert_eq!(block_length(&[1.0; 50]), 1);
        assert_eq!(block_length(&[1.0, 2.0, 3.0]), 1);
    }
    #[test]
    fn the_design_effect_of_an_ar1_series_is_near_its_long_run_variance_ratio() {
        // AR(1) with φ: the mean's variance ratio is (1 + φ) / (1 − φ): 3 at φ = 0.5.
        let mut rng = SplitMix64(8);
        let mut x = 0.0;
        let v: Vec<f64> = (0..4000)
            .map(|_| {
                x = 0.5 * x + rng.normal();
                x
            })
            .collect();
        let d = design_effect(&v);
        assert!((2.2..=3.8).contains(&d), "design effect {d}");
        let mut rng = SplitMix64(9);
        let iid: Vec<f64> = (0..4000).map(|_| rng.normal()).collect();
        assert_eq!(design_effect(&iid), 1.0);
    }
}
