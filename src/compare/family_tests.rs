//! The family-wise false-alarm rate, measured: many unchanged comparisons of synthetic,
//! seeded samples through the real bootstrap and verdict rules, at the Bonferroni per-check
//! level; and the detection of a real +25 % shift at the same level.

use super::groups::Groups;
use super::stats::{self, Statistic};
use super::threshold::Bound;
use super::verdict::{decide, Counts, Evidence, Method, Verdict};
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
    let r = stats::bootstrap(
        &Groups::from(base),
        &Groups::from(cand),
        Statistic::Mean,
        seed,
        level,
    );
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
        drift: None,
        blocks: [1, 1],
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
                counts: Some(Counts::binomial((kb, 200), (kc, 200))),
                too_few: None,
                repeats: [1, 1],
                drift: None,
                blocks: [1, 1],
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

/// Coverage of the Newcombe interval of a difference of error rates when the rate itself
/// moves from run to run (each run's rate lognormal around 5 %, log-sd 0.5; 3 runs of 200
/// requests per side, both sides alike, so the true difference is 0): share of 400 seeded
/// comparisons whose 90 % interval holds 0, with and without the overdispersion φ.
fn overdispersed_coverage(use_dispersion: bool) -> f64 {
    let mut rng = Rng(0x5eed_0004);
    let level = 0.90;
    let side = |rng: &mut Rng| -> Vec<(u64, u64)> {
        (0..3)
            .map(|_| {
                let p = (0.05 * (0.5 * rng.normal()).exp()).min(1.0);
                ((0..200).filter(|_| rng.uniform() < p).count() as u64, 200)
            })
            .collect()
    };
    let trials = 400;
    let mut covered = 0;
    for _ in 0..trials {
        let (b, c) = (side(&mut rng), side(&mut rng));
        let total = |s: &[(u64, u64)]| s.iter().fold((0, 0), |a, r| (a.0 + r.0, a.1 + r.1));
        let ((kb, nb), (kc, nc)) = (total(&b), total(&c));
        let (db, dc) = if use_dispersion {
            (
                stats::dispersion(&b).unwrap(),
                stats::dispersion(&c).unwrap(),
            )
        } else {
            (1.0, 1.0)
        };
        let iv = stats::newcombe_p(
            kb as f64 / nb as f64,
            nb as f64 / db,
            kc as f64 / nc as f64,
            nc as f64 / dc,
            level,
        );
        covered += usize::from(iv.lo <= 0.0 && 0.0 <= iv.hi);
    }
    covered as f64 / trials as f64
}

#[test]
fn overdispersion_restores_error_rate_coverage_when_the_rate_drifts_between_runs() {
    let plain = overdispersed_coverage(false);
    let widened = overdispersed_coverage(true);
    // Counting every request as independent ignores the drift: the interval is too narrow.
    eprintln!("coverage at 90 %: {plain} binomial only, {widened} with φ");
    assert!(plain < 0.80, "binomial-only coverage {plain}");
    // φ from three runs per side (2 degrees of freedom each) is itself noisy, so coverage
    // comes near nominal, not to it.
    assert!(widened >= 0.82, "with overdispersion {widened}");
    assert!(widened > plain + 0.05, "{plain} -> {widened}");
}

#[test]
fn dispersion_is_one_for_binomial_runs_and_large_for_drifting_ones() {
    assert_eq!(stats::dispersion(&[(10, 200)]), None);
    assert_eq!(
        stats::dispersion(&[(0, 200), (0, 200), (0, 200)]),
        Some(1.0)
    );
    // Equal counts: no spread beyond chance, the floor.
    assert_eq!(stats::dispersion(&[(10, 200), (10, 200)]), Some(1.0));
    // 0, 10 and 20 of 200 at a pooled 5 %: χ² = (100 + 0 + 100) / 9.5 over 2 df.
    let d = stats::dispersion(&[(0, 200), (10, 200), (20, 200)]).unwrap();
    assert!((d - 200.0 / 9.5 / 2.0).abs() < 1e-9, "{d}");
    // Runs that measured nothing do not count.
    assert_eq!(stats::dispersion(&[(3, 100), (0, 0)]), None);
}

#[test]
fn an_overdispersed_error_rate_check_says_so_and_asks_for_more() {
    let level = 0.95;
    let (kb, kc) = (30u64, 54u64);
    let counts = Counts {
        sides: [(kb, 600), (kc, 600)],
        dispersion: [4.0, 4.0],
    };
    let e = Evidence {
        base: kb as f64 / 600.0,
        cand: kc as f64 / 600.0,
        ratio: None,
        diff: Some(stats::newcombe_p(0.05, 150.0, 0.09, 150.0, level)),
        cand_ci: Some(stats::wilson_p(0.09, 150.0, level)),
        method: Method::Proportion,
        level,
        requests: 600,
        counts: Some(counts),
        too_few: None,
        repeats: [3, 3],
        drift: None,
        blocks: [1, 1],
    };
    // With all 600 requests independent the +4 points would be told apart from +0; with
    // φ = 4 they are worth 150 each, and the check stays open.
    let plain = stats::newcombe(kb, 600, kc, 600, level);
    assert!(plain.lo > 0.0, "{plain:?}");
    let d = decide(Bound::Increase(Threshold::Absolute(0.0)), 0.0, &e);
    assert_eq!(d.verdict, Verdict::Inconclusive, "{}", d.note);
    assert!(
        d.note.contains("overdispersion φ 4.00 baseline"),
        "{}",
        d.note
    );
    assert!(
        d.note.contains("raise workload.requests_per_rung to ≥ "),
        "{}",
        d.note
    );
}
