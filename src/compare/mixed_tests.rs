//! One big side against a small one: the big side is never resampled, and the intervals
//! agree with the brute-force bootstrap they replace.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

use super::super::evidence::{evidence, Side, Slo};
use super::super::groups::RESAMPLED;
use super::super::stats::{self, Groups, Statistic};
use super::super::verdict::Method;
use crate::metrics::RungSummary;
use crate::results::RequestLine;

/// `n` lognormal values (median `median`, log-sd 0.4).
fn lognormal(rng: &mut ChaCha8Rng, n: usize, median: f64) -> Vec<f64> {
    let d = LogNormal::new(median.ln(), 0.4).unwrap();
    (0..n).map(|_| d.sample(rng)).collect()
}

/// A measured request line, sent at `i` · 10 ms, with TTFT `ttft` ms.
fn line(i: usize, ttft: f64) -> RequestLine {
    let t = i as f64 * 10.0;
    RequestLine {
        index: i as u32,
        scheduled_ms: t,
        sent_ms: t,
        first_token_ms: Some(t + ttft),
        end_ms: t + ttft + 20.0,
        ttft_ms: Some(ttft),
        tpot_ms: Some(1.0),
        e2e_ms: ttft + 20.0,
        input_tokens: 8,
        output_tokens: 20,
        itl_ms: vec![1.0, 1.0],
        ok: true,
        status: Some(200),
        ..RequestLine::default()
    }
}

fn lines(v: &[f64]) -> Vec<RequestLine> {
    v.iter().enumerate().map(|(i, t)| line(i, *t)).collect()
}

/// A big baseline (or candidate) against 60 requests: the big side's requests are not
/// resampled (at most the small side's, per resample), and the interval holds the truth.
#[test]
fn a_big_side_against_a_small_one_is_not_resampled() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let big = lines(&lognormal(&mut rng, 20_000, 100.0));
    let small = lines(&lognormal(&mut rng, 60, 100.0));
    let summary = |n: usize| RungSummary {
        completed: n as u64,
        num_prompts: n as u64,
        ..Default::default()
    };
    let (sb, ss) = (summary(big.len()), summary(small.len()));
    let big_side = Side {
        summary: &sb,
        lines: &big,
        slo: Slo::default(),
    };
    let small_side = Side {
        summary: &ss,
        lines: &small,
        slo: Slo::default(),
    };
    let level = 0.95;
    let per_resample = small.len() * stats::resamples_for(level);
    for key in ["median_ttft_ms", "mean_ttft_ms", "request_throughput"] {
        for (base, cand) in [(&big_side, &small_side), (&small_side, &big_side)] {
            RESAMPLED.with(|c| c.set(0));
            let e = evidence(
                key,
                base,
                cand,
                super::super::evidence::Levels::new(level, level),
            )
            .unwrap();
            let drawn = RESAMPLED.with(std::cell::Cell::get);
            assert!(
                drawn <= per_resample,
                "{key}: {drawn} requests resampled, more than the small side's {per_resample}"
            );
            assert_eq!(e.method, Method::Bootstrap, "{key}");
            let r = e.ratio.unwrap();
            assert!(
                r.lo < r.hi && r.lo.is_finite() && r.hi.is_finite(),
                "{key}: {r:?}"
            );
        }
    }
}

/// log(hi / lo) of an interval.
fn log_width(i: stats::Interval) -> f64 {
    (i.hi / i.lo).ln()
}

/// The mixed interval's ends are within `tol` of the brute-force interval's log width.
fn agree(what: &str, mixed: stats::Interval, brute: stats::Interval, tol: f64) {
    let w = log_width(brute);
    let (dl, dh) = ((mixed.lo / brute.lo).ln(), (mixed.hi / brute.hi).ln());
    assert!(
        dl.abs() <= tol * w && dh.abs() <= tol * w,
        "{what}: mixed {mixed:?} vs brute force {brute:?} (ends off by {dl:.4}, {dh:.4} in logs; width {w:.4})"
    );
}

#[test]
fn big_against_small_agrees_with_the_brute_force_bootstrap() {
    let level = 0.95;
    let z = stats::z_for(level);
    for stat in [
        Statistic::Quantile(0.5),
        Statistic::Quantile(0.9),
        Statistic::Mean,
    ] {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let big = Groups::singles(lognormal(&mut rng, 8_000, 100.0));
        let small = Groups::singles(lognormal(&mut rng, 60, 110.0));
        let f = |v: &mut [Vec<f64>]| stat.compute(&mut v.concat());
        let est = |r: &[Groups]| super::super::large::latency(r, stat, z);
        for big_base in [true, false] {
            let (b, c) = if big_base {
                (&big, &small)
            } else {
                (&small, &big)
            };
            let brute = stats::bootstrap_with(b, c, stats::SEED, level, |v| stat.compute(v));
            let mixed = super::one_big(
                std::slice::from_ref(b),
                std::slice::from_ref(c),
                est,
                level,
                f,
            )
            .expect("one side is big");
            let what = format!("{stat:?}, big baseline {big_base}");
            agree(&what, mixed.ratio, brute.ratio, 0.1);
            // The small side dominates: the interval is far wider than the big side's own.
            let big_alone = if big_base { brute.base } else { brute.cand };
            assert!(
                log_width(mixed.ratio) > 0.1,
                "{what}: {:?} ({big_alone})",
                mixed.ratio
            );
        }
    }
}

/// With repeats (a golden baseline of three runs, a candidate of one): the big side's
/// within-run interval agrees with the bootstrap stratified by run (drift is added apart).
#[test]
fn big_repeats_against_a_small_run_agree_with_the_stratified_bootstrap() {
    let level = 0.95;
    let z = stats::z_for(level);
    let stat = Statistic::Quantile(0.5);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let base: Vec<Groups> = [100.0, 108.0, 95.0]
        .iter()
        .map(|m| Groups::singles(lognormal(&mut rng, 3_000, *m)))
        .collect();
    let cand = vec![Groups::singles(lognormal(&mut rng, 60, 100.0))];
    let f = |v: &mut [Vec<f64>]| stat.compute(&mut v.concat());
    let brute = super::super::hier::bootstrap(&base, &cand, stats::SEED, level, f);
    let mixed = super::one_big(
        &base,
        &cand,
        |r| super::super::large::latency(r, stat, z),
        level,
        f,
    )
    .expect("the baseline is big");
    agree("3 big runs v 1 small", mixed.ratio, brute.ratio, 0.15);
}

/// Two small sides, or two big ones, are not this path's.
#[test]
fn only_one_big_side_takes_the_mixed_path() {
    let small = [Groups::singles(vec![1.0; 60])];
    let big = [Groups::singles(vec![1.0; super::LARGE_SAMPLE])];
    let stat = Statistic::Mean;
    let est = |r: &[Groups]| super::super::large::latency(r, stat, 1.96);
    let f = |v: &mut [Vec<f64>]| stat.compute(&mut v.concat());
    assert!(super::one_big(&small, &small, est, 0.95, f).is_none());
    assert!(super::one_big(&big, &big, est, 0.95, f).is_none());
}
