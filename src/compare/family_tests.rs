//! The family-wise false-alarm rate, measured: many unchanged comparisons of synthetic,
//! seeded samples through the real bootstrap and verdict rules, at the Bonferroni per-check
//! level; and the detection of a real +25 % shift at the same level.

use super::stats::{self, Statistic};
use super::threshold::Bound;
use super::verdict::{decide, Evidence, Method, Verdict};
use crate::scenario::Threshold;

/// Bootstrapped gates simulated, checks per gate (rungs × metrics), requests per side: kept
/// small because every check runs up to 20,000 resamples in a debug build.
const GATES: usize = 60;
const CHECKS: usize = 8;
const N: usize = 20;
/// Error-rate gates (Wilson / Newcombe: no resampling, so many more).
const P_GATES: usize = 200;
const P_CHECKS: usize = 20;

/// A seeded generator for the synthetic requests (xorshift64*), independent of the
/// bootstrap's own.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Standard normal by Box–Muller.
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    /// `n` requests of a lognormal latency with median `median` ms and log-sd `sigma`.
    fn requests(&mut self, n: usize, median: f64, sigma: f64) -> Vec<Vec<f64>> {
        (0..n)
            .map(|_| vec![median * (sigma * self.normal()).exp()])
            .collect()
    }
}

/// One check of two samples at `level`: mean latency, the given bound, no floor.
fn check(base: &[Vec<f64>], cand: &[Vec<f64>], bound: Bound, level: f64, seed: u64) -> Verdict {
    let r = stats::bootstrap(base, cand, Statistic::Mean, seed, level);
    let e = Evidence {
        base: r.base,
        cand: r.cand,
        ratio: Some(r.ratio),
        diff: Some(r.diff),
        cand_ci: Some(r.cand_ci),
        method: Method::Bootstrap,
        level,
        requests: base.len().min(cand.len()),
        counts: None,
        too_few: None,
        repeats: [1, 1],
    };
    decide(bound, 0.0, &e).verdict
}

/// Three binomial standard errors above the nominal rate at `gates` gates.
fn budget(gates: usize) -> f64 {
    let nominal = 1.0 - stats::CONFIDENCE;
    nominal + 3.0 * (nominal * (1.0 - nominal) / gates as f64).sqrt()
}

/// Share of `P_GATES` unchanged gates of `P_CHECKS` error-rate checks (5 % errors, 200
/// requests per side, `+0` absolute: any increase the interval is sure of) with a regression.
fn error_rate_false_alarms(level: f64) -> f64 {
    let mut rng = Rng(0x5eed_0003);
    let mut errors = || (0..200).filter(|_| rng.uniform() < 0.05).count() as u64;
    let bound = Bound::Increase(Threshold::Absolute(0.0));
    let mut alarms = 0;
    for _ in 0..P_GATES {
        let mut alarm = false;
        for _ in 0..P_CHECKS {
            let (kb, kc) = (errors(), errors());
            let e = Evidence {
                base: kb as f64 / 200.0,
                cand: kc as f64 / 200.0,
                ratio: None,
                diff: Some(stats::newcombe(kb, 200, kc, 200, level)),
                cand_ci: Some(stats::wilson(kc, 200, level)),
                method: Method::Proportion,
                level,
                requests: 200,
                counts: Some([(kb, 200), (kc, 200)]),
                too_few: None,
                repeats: [1, 1],
            };
            alarm |= decide(bound, 0.0, &e).verdict == Verdict::Regression;
        }
        alarms += usize::from(alarm);
    }
    alarms as f64 / P_GATES as f64
}

#[test]
fn error_rate_gates_keep_the_stated_false_alarm_rate() {
    let corrected = error_rate_false_alarms(stats::family_level(stats::CONFIDENCE, P_CHECKS));
    assert!(corrected <= budget(P_GATES), "family-wise rate {corrected}");
    // Each interval at 95 % (no correction): about 1 − 0.975^20 ≈ 40 % of unchanged gates
    // would fail. This is what the correction is for.
    let uncorrected = error_rate_false_alarms(stats::CONFIDENCE);
    assert!(uncorrected > 0.2, "uncorrected rate {uncorrected}");
}

/// Share of `GATES` unchanged gates with at least one regression, each check's interval
/// at `level`. The bound is `+0%`: any increase the interval is sure of is a regression, the
/// strictest setting for false alarms.
fn false_alarm_rate(level: f64) -> f64 {
    let mut rng = Rng(0x5eed_0001);
    let bound = Bound::Increase(Threshold::Relative(0.0));
    let mut alarms = 0;
    for g in 0..GATES {
        let alarm = (0..CHECKS).any(|k| {
            let base = rng.requests(N, 20.0, 0.3);
            let cand = rng.requests(N, 20.0, 0.3);
            check(&base, &cand, bound, level, (g * CHECKS + k) as u64) == Verdict::Regression
        });
        alarms += usize::from(alarm);
    }
    alarms as f64 / GATES as f64
}

#[test]
fn bootstrapped_gates_keep_the_stated_false_alarm_rate() {
    let corrected = false_alarm_rate(stats::family_level(stats::CONFIDENCE, CHECKS));
    assert!(
        corrected <= budget(GATES),
        "family-wise false-alarm rate {corrected} > {:.3}",
        budget(GATES)
    );
}

#[test]
fn a_25_percent_shift_is_still_detected_at_the_family_level() {
    let level = stats::family_level(stats::CONFIDENCE, CHECKS);
    let mut rng = Rng(0x5eed_0002);
    let bound = Bound::Increase(Threshold::Relative(0.10));
    let trials = 10;
    let detected = (0..trials)
        .filter(|&t| {
            // A TPOT-like metric: tight per-request spread, 200 requests per rung.
            let base = rng.requests(200, 20.0, 0.15);
            let cand = rng.requests(200, 25.0, 0.15);
            check(&base, &cand, bound, level, t) == Verdict::Regression
        })
        .count();
    assert!(detected >= 9, "only {detected} of {trials} detected");
}
