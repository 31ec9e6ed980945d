//! Confidence intervals a probe's SLO verdict rests on: a distribution-free interval for a
//! percentile (binomial order statistics) and the Wilson interval of an error rate.
//!
//! Both are computed at a two-sided `level`; a verdict reads one end of them, so each
//! verdict errs to one side with probability at most `(1 − level) / 2`.

/// The probabilities of Binomial(n, p), `pmf[k]` for `k` in `0..=n`, computed in log space
/// so that large `n` does not underflow.
fn binomial_pmf(n: usize, p: f64) -> Vec<f64> {
    let mut out = vec![0.0; n + 1];
    if p <= 0.0 {
        out[0] = 1.0;
        return out;
    }
    if p >= 1.0 {
        out[n] = 1.0;
        return out;
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut cur = n as f64 * lq;
    out[0] = cur;
    for (k, slot) in out.iter_mut().enumerate().skip(1) {
        cur += ((n - k + 1) as f64 / k as f64).ln() + lp - lq;
        *slot = cur;
    }
    let max = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    for v in out.iter_mut() {
        *v = (*v - max).exp();
    }
    let total: f64 = out.iter().sum();
    for v in out.iter_mut() {
        *v /= total;
    }
    out
}

/// The 1-based ranks `(l, u)` of the order statistics that bound the `q`-quantile of a
/// continuous distribution from `n` samples with probability at least `level`:
/// `P(X(l) ≤ ξ_q ≤ X(u)) ≥ level`, each end missing with probability at most
/// `(1 − level) / 2`. An end is `None` when `n` is too small to bound that side at all
/// (e.g. the p99's upper end needs about 300 samples at level 0.9).
///
/// With `Y` the number of samples at or below `ξ_q` (Binomial(n, q)): `X(l) ≤ ξ_q` iff
/// `Y ≥ l`, and `X(u) ≥ ξ_q` iff `Y ≤ u − 1`.
pub fn quantile_ranks(n: usize, q: f64, level: f64) -> (Option<usize>, Option<usize>) {
    if n == 0 {
        return (None, None);
    }
    let alpha = (1.0 - level) / 2.0;
    let pmf = binomial_pmf(n, q);
    let mut l = None;
    let mut cdf = 0.0;
    for (k, p) in pmf.iter().enumerate().take(n) {
        cdf += p;
        if cdf <= alpha {
            l = Some(k + 1);
        } else {
            break;
        }
    }
    let mut u = None;
    let mut tail = 0.0;
    for k in (1..=n).rev() {
        tail += pmf[k];
        if tail <= alpha {
            u = Some(k);
        } else {
            break;
        }
    }
    (l, u)
}

/// A percentile of a sample with its distribution-free interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileEstimate {
    /// The sample percentile, interpolated between order statistics as numpy (and vLLM) do
    /// ([`crate::stats`]' convention).
    pub value: f64,
    /// Lower end; `-inf` when the sample cannot bound it.
    pub lo: f64,
    /// Upper end; `+inf` when the sample cannot bound it (or when the samples there are
    /// failed requests, which count as infinitely slow).
    pub hi: f64,
    /// Samples behind it.
    pub n: usize,
}

/// The `q`-quantile of `values` (any order; `+inf` allowed) with its order-statistic
/// interval at `level`. `None` for no values.
pub fn quantile(values: &[f64], q: f64, level: f64) -> Option<QuantileEstimate> {
    quantile_blocked(values, q, level, 1.0)
}

/// [`quantile`] when the values are correlated with design effect `design` (≥ 1): the ranks
/// of the interval are those of n / design independent samples (rounded up), read back on
/// the n sorted values (the lower end rounded down, the upper up). `design` 1 is
/// [`quantile`].
pub fn quantile_blocked(
    values: &[f64],
    q: f64,
    level: f64,
    design: f64,
) -> Option<QuantileEstimate> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    // The one quantile convention (`crate::stats`); past a failure (`+inf`, infinitely slow)
    // the percentile is infinite, also between two failures (where interpolating gives NaN).
    let (k, above, frac) = crate::stats::linear_ranks(n, q);
    let value = if frac != 0.0 && v[above].is_infinite() {
        v[above]
    } else {
        crate::stats::interpolate(v[k], v[above], frac)
    };
    let m = ((n as f64 / design.max(1.0)).ceil() as usize).clamp(1, n);
    let (l, u) = quantile_ranks(m, q, level);
    // Rank r of m on n: the lower end at ⌊(r − 1)·n/m⌋ + 1, the upper at ⌈r·n/m⌉.
    let l = l.map(|r| (r - 1) * n / m + 1);
    let u = u.map(|r| (r * n).div_ceil(m).min(n));
    Some(QuantileEstimate {
        value,
        lo: l.map_or(f64::NEG_INFINITY, |l| v[l - 1]),
        hi: u.map_or(f64::INFINITY, |u| v[u - 1]),
        n,
    })
}

/// Wilson score interval `(lo, hi)` of the proportion `k / n` at two-sided `level`;
/// `(0, 1)` for `n = 0` (the ground floor's, [`crate::stats::wilson`]).
pub fn wilson(k: u64, n: u64, level: f64) -> (f64, f64) {
    let iv = crate::stats::wilson(k, n, level);
    (iv.lo, iv.hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::z_for;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn binomial_probabilities_sum_to_one_and_match_small_cases() {
        let p = binomial_pmf(3, 0.5);
        for (a, b) in p.iter().zip([0.125, 0.375, 0.375, 0.125]) {
            assert!((a - b).abs() < 1e-12, "{p:?}");
        }
        let big = binomial_pmf(100_000, 0.99);
        assert!((big.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(big[99_000] > big[98_000]);
    }

    #[test]
    fn the_p99_upper_end_needs_about_three_hundred_samples_at_ninety_percent() {
        // 0.99^n <= 0.05 first at n = 299.
        assert_eq!(quantile_ranks(298, 0.99, 0.9).1, None);
        assert_eq!(quantile_ranks(299, 0.99, 0.9).1, Some(299));
        // The median of 100 at 95 %: ranks 40 and 61 (the textbook table).
        assert_eq!(quantile_ranks(100, 0.5, 0.95), (Some(40), Some(61)));
    }

    #[test]
    fn order_statistic_intervals_cover_at_least_their_level_on_synthetic_data() {
        // Exponential latencies: the true p90 is ln(10) × scale.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let truth = 10f64.ln() * 100.0;
        let (mut covered, trials) = (0, 2000);
        for _ in 0..trials {
            let v: Vec<f64> = (0..300)
                .map(|_| -100.0 * (1.0 - rng.gen::<f64>()).ln())
                .collect();
            let e = quantile(&v, 0.9, 0.9).unwrap();
            if e.lo <= truth && truth <= e.hi {
                covered += 1;
            }
        }
        let rate = covered as f64 / trials as f64;
        // Nominal 0.90, conservative by construction; 2000 trials give ±0.013 at 2 sigma.
        assert!((0.885..0.96).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn quantiles_interpolate_like_numpy_and_failures_push_the_upper_end_to_infinity() {
        let e = quantile(&[1.0, 2.0, 3.0, 4.0], 0.5, 0.9).unwrap();
        assert_eq!(e.value, 2.5);
        let mut v = vec![10.0; 400];
        v.extend([f64::INFINITY; 20]);
        let e = quantile(&v, 0.99, 0.9).unwrap();
        assert!(e.hi.is_infinite() && e.value.is_infinite());
        assert!(
            e.lo.is_infinite(),
            "20 of 420 failed: even the lower end is past them"
        );
    }

    #[test]
    fn wilson_matches_known_values() {
        let (lo, hi) = wilson(0, 200, 0.95);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.01884).abs() < 1e-4, "{hi}");
        let (lo, hi) = wilson(10, 100, 0.95);
        assert!((lo - 0.05523).abs() < 1e-4 && (hi - 0.17437).abs() < 1e-4);
        assert!((z_for(0.9) - 1.644854).abs() < 1e-5);
    }
    #[test]
    fn blocked_intervals_are_wider_and_block_one_is_the_plain_interval() {
        let v: Vec<f64> = (1..=600).map(f64::from).collect();
        let plain = quantile(&v, 0.5, 0.95).unwrap();
        assert_eq!(quantile_blocked(&v, 0.5, 0.95, 1.0).unwrap(), plain);
        let blocked = quantile_blocked(&v, 0.5, 0.95, 10.0).unwrap();
        assert_eq!(blocked.value, plain.value);
        assert!(
            blocked.lo < plain.lo && blocked.hi > plain.hi,
            "{blocked:?} vs {plain:?}"
        );
        // 60 effective samples cannot bound a p99 from above at 95 %.
        assert_eq!(
            quantile_blocked(&v, 0.99, 0.95, 10.0).unwrap().hi,
            f64::INFINITY
        );
    }
}
