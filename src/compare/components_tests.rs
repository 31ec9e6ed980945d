use super::*;
use crate::compare::groups::Groups;
use crate::stats::SplitMix64;

/// `repeats` runs of `n` requests: 100 · exp(run effect, sd `run_sd`) · exp(request noise,
/// sd 0.2), times `scale`.
fn side(rng: &mut SplitMix64, repeats: usize, n: usize, run_sd: f64, scale: f64) -> Vec<Groups> {
    (0..repeats)
        .map(|_| {
            let run = (run_sd * rng.normal()).exp();
            Groups::singles(
                (0..n)
                    .map(|_| scale * 100.0 * run * (0.2 * rng.normal()).exp())
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

/// A check's ratio interval as `compare` computes it: the within-run bootstrap at half the
/// budget, then the drift measured from the runs (or `assumed`) at the other half.
fn check(
    b: &[Groups],
    c: &[Groups],
    per_check: f64,
    family: f64,
    assumed: Option<f64>,
) -> (BootstrapResult, Option<Drift>) {
    let (lw, ld) = split_levels(per_check, family);
    let within = crate::compare::hier::bootstrap(b, c, 7, lw, mean_of);
    let per = |s: &[Groups]| -> Vec<f64> {
        if s.len() < 2 {
            return Vec::new();
        }
        s.iter()
            .map(|r| mean_of(&mut [r.values().to_vec()]))
            .collect()
    };
    let (pb, pc) = (per(b), per(c));
    with_drift(within, lw, ld, [&pb, &pc], [b.len(), c.len()], assumed)
}

fn log_width(iv: Interval) -> f64 {
    iv.hi.ln() - iv.lo.ln()
}

/// The case: three baseline runs that agree to 0.1 % and one candidate run. The
/// interval is (about) the one of one run against one, not the whole interval raised to a
/// power of t with 2 degrees of freedom.
#[test]
fn three_runs_that_agree_give_about_the_within_interval() {
    let mut rng = SplitMix64(42);
    let base = side(&mut rng, 3, 24, 0.001, 1.0);
    let cand = side(&mut rng, 1, 24, 0.0, 1.0);
    let level = crate::compare::stats::family_level(0.95, 16);
    let one_v_one =
        crate::compare::stats::bootstrap_with(&base[0], &cand[0], 7, level, |v: &mut [f64]| {
            v.iter().sum::<f64>() / v.len() as f64
        });
    let (three, drift) = check(&base, &cand, level, 0.95, None);
    let d = drift.expect("repeats measure drift");
    assert_eq!(d.df, 2);
    // Pooling three runs narrows the baseline's part; the split budget widens a little.
    let ratio = log_width(three.ratio) / log_width(one_v_one.ratio);
    assert!(
        ratio < 1.15,
        "3 agreeing runs widen the 1-v-1 interval by {ratio}"
    );
    assert!(d.half < 0.25 * d.within_half, "{d:?}");
}

/// -np 4 -> -np 1 on the real server: median TTFT ×8 against a 3-run baseline that agrees.
/// Decided as far past +10 %, at 16 checks' level.
#[test]
fn a_large_change_against_agreeing_runs_is_decided() {
    let mut rng = SplitMix64(3);
    let base = side(&mut rng, 3, 24, 0.01, 1.0);
    let cand = side(&mut rng, 1, 24, 0.0, 8.0);
    let level = crate::compare::stats::family_level(0.95, 16);
    let (r, _) = check(&base, &cand, level, 0.95, None);
    assert!(r.ratio.lo > 1.1, "{:?}", r.ratio);
    assert!(r.ratio.hi < 100.0, "{:?}", r.ratio);
}

/// Coverage of the ratio interval of two unchanged sides over `trials` seeds.
fn coverage(trials: u64, rb: usize, rc: usize, run_sd: f64, level: f64, drift: bool) -> f64 {
    let mut covered = 0;
    for t in 0..trials {
        let mut rng = SplitMix64(0xC0FFEE ^ t.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let (b, c) = (
            side(&mut rng, rb, 30, run_sd, 1.0),
            side(&mut rng, rc, 30, run_sd, 1.0),
        );
        let r = if drift {
            check(&b, &c, level, level, None).0
        } else {
            crate::compare::hier::bootstrap(&b, &c, t, level, mean_of)
        };
        if r.ratio.lo <= 1.0 && 1.0 <= r.ratio.hi {
            covered += 1;
        }
    }
    f64::from(covered) / trials as f64
}

/// Known run-to-run noise (a run effect of 8 %, larger than the request noise of a
/// 30-request mean): with the drift component the interval covers at least its nominal
/// 90 % (the union of two bounds at 95 % each is conservative), where an interval over
/// requests alone covers far less.
#[test]
fn drift_components_cover_run_to_run_noise() {
    let (trials, level, run_sd) = (200, 0.90, 0.08);
    let within_only = coverage(trials, 3, 3, run_sd, level, false);
    let three = coverage(trials, 3, 3, run_sd, level, true);
    let borrowed = coverage(trials, 3, 1, run_sd, level, true);
    eprintln!("coverage at 90 %: requests only {within_only}, 3 v 3 {three}, 3 v 1 {borrowed}");
    assert!(within_only < 0.7, "{within_only}");
    // 200 trials: one binomial standard error is about 2.1 %.
    assert!((0.86..=1.0).contains(&three), "{three}");
    assert!((0.86..=1.0).contains(&borrowed), "{borrowed}");
}

/// Without runs to estimate it from, drift is assumed only when asked (`--drift`), as known.
#[test]
fn drift_is_pooled_over_sides_and_assumed_only_without_repeats() {
    let none = SideRuns {
        per_run: &[],
        within: 0.0,
    };
    assert_eq!(estimate(none, none, None), None);
    assert_eq!(estimate(none, none, Some(0.05)), Some((0.05 * 0.05, 0)));
    let b = SideRuns {
        per_run: &[100.0, 110.0, 90.0],
        within: 0.0,
    };
    let c = SideRuns {
        per_run: &[100.0, 100.0],
        within: 0.0,
    };
    let (tau2, df) = estimate(b, c, Some(0.5)).unwrap();
    assert_eq!(df, 3);
    let logs = [100f64.ln(), 110f64.ln(), 90f64.ln()];
    let m = logs.iter().sum::<f64>() / 3.0;
    let s2 = logs.iter().map(|l| (l - m).powi(2)).sum::<f64>() / 2.0;
    assert!((tau2 - s2 * 2.0 / 3.0).abs() < 1e-12, "{tau2} vs {s2}");
    // Within-run noise that explains the spread leaves no drift.
    let noisy = SideRuns {
        per_run: &[100.0, 110.0, 90.0],
        within: 1.0,
    };
    assert_eq!(estimate(noisy, none, None), Some((0.0, 2)));
}

/// Borrowing strength over rungs: five rungs whose runs share one run effect (a run's drift
/// is the run's: 8 % a run, larger than a 30-request mean's noise), 3 runs against 1. The
/// τ² pooled over the five rungs (10 degrees of freedom instead of 2) holds the truth in
/// every rung's interval at once about as often as the nominal 90 % (each rung's own
/// estimate, from 2 degrees of freedom, is sometimes tiny by chance and misses more often)
/// and narrows the intervals by about a third.
#[test]
fn drift_pooled_over_rungs_keeps_the_family_level_and_narrows_the_intervals() {
    let (trials, family, rungs, run_sd) = (120u64, 0.90, 5, 0.08);
    let per_check = 1.0 - (1.0 - family) / rungs as f64;
    let (mut own_ok, mut pooled_ok) = (0, 0);
    let (mut own_w, mut pooled_w) = (0.0, 0.0);
    for t in 0..trials {
        let mut rng = SplitMix64(0xBEEF ^ t.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let effects = |rng: &mut SplitMix64, r: usize| -> Vec<f64> {
            (0..r).map(|_| (run_sd * rng.normal()).exp()).collect()
        };
        let (eb, ec) = (effects(&mut rng, 3), effects(&mut rng, 1));
        let side = |rng: &mut SplitMix64, eff: &[f64]| -> Vec<Groups> {
            eff.iter()
                .map(|run| {
                    Groups::singles(
                        (0..30)
                            .map(|_| 100.0 * run * (0.2 * rng.normal()).exp())
                            .collect(),
                    )
                })
                .collect()
        };
        let checks: Vec<(BootstrapResult, Drift)> = (0..rungs)
            .map(|_| {
                let (b, c) = (side(&mut rng, &eb), side(&mut rng, &ec));
                let (r, d) = check(&b, &c, per_check, family, None);
                (r, d.expect("three runs measure drift"))
            })
            .collect();
        let inputs: Vec<PoolInput> = checks.iter().filter_map(|(_, d)| d.pool).collect();
        assert_eq!(inputs.len(), rungs);
        let (tau2, df) = pool(&inputs).unwrap();
        assert_eq!(
            df,
            2 * rungs,
            "each rung's 3 runs give 2 degrees of freedom"
        );
        let pooled: Vec<BootstrapResult> = checks
            .iter()
            .map(|(_, d)| rewiden(d, tau2, df).unwrap().0)
            .collect();
        let holds = |r: &BootstrapResult| r.ratio.lo <= 1.0 && 1.0 <= r.ratio.hi;
        own_ok += u32::from(checks.iter().all(|(r, _)| holds(r)));
        pooled_ok += u32::from(pooled.iter().all(holds));
        own_w += checks.iter().map(|(r, _)| log_width(r.ratio)).sum::<f64>();
        pooled_w += pooled.iter().map(|r| log_width(r.ratio)).sum::<f64>();
    }
    let (own, pooled) = (
        f64::from(own_ok) / trials as f64,
        f64::from(pooled_ok) / trials as f64,
    );
    eprintln!(
        "family coverage at 90 %: own {own}, pooled {pooled}; mean log width own {:.3}, pooled {:.3}",
        own_w / (trials as f64 * rungs as f64),
        pooled_w / (trials as f64 * rungs as f64)
    );
    // 120 trials: one binomial standard error is about 2.7 %.
    assert!((0.84..=1.0).contains(&pooled), "{pooled}");
    assert!(pooled >= own, "pooled {pooled} vs own {own}");
    assert!(pooled_w < 0.8 * own_w, "pooled {pooled_w} vs own {own_w}");
}

/// The pool averages the unfloored excesses by their degrees of freedom and floors the
/// result: a negative excess (runs that agree more than their requests suggest) offsets a
/// chance positive one rather than counting as 0.
#[test]
fn the_pool_averages_unfloored_excesses_by_degrees_of_freedom() {
    let iv = Interval { lo: 1.0, hi: 1.0 };
    let within = BootstrapResult {
        base: 1.0,
        cand: 1.0,
        ratio: iv,
        diff: iv,
        cand_ci: iv,
    };
    let input = |b: Option<(f64, usize)>, c: Option<(f64, usize)>| PoolInput {
        within,
        excess: [b, c],
    };
    let a = input(Some((0.004, 2)), None);
    let b = input(Some((-0.002, 2)), Some((0.001, 2)));
    let (tau2, df) = pool([&a, &b]).unwrap();
    assert_eq!(df, 6);
    assert!(
        (tau2 - (0.008 - 0.004 + 0.002) / 6.0).abs() < 1e-15,
        "{tau2}"
    );
    let neg = input(Some((-0.01, 2)), None);
    assert_eq!(pool([&neg]), Some((0.0, 2)));
    assert_eq!(pool([&input(None, None)]), None);
}

/// A within-run result of baseline `b` whose intervals agree: d = b · (r − 1).
fn agreeing(b: f64, r_lo: f64, r_hi: f64) -> BootstrapResult {
    let p = (r_lo * r_hi).sqrt();
    BootstrapResult {
        base: b,
        cand: b * p,
        ratio: Interval { lo: r_lo, hi: r_hi },
        diff: Interval {
            lo: b * (r_lo - 1.0),
            hi: b * (r_hi - 1.0),
        },
        cand_ci: Interval {
            lo: b * p * 0.9,
            hi: b * p * 1.1,
        },
    }
}

/// τ² that gives drift half-width `h` for 3 v 3 runs at `level` with `df` degrees of freedom.
fn tau2_for(h: f64, level: f64, df: usize) -> f64 {
    (h / quantile(level, df)).powi(2) / (2.0 / 3.0)
}

fn judged(r: &BootstrapResult, floor: f64) -> crate::compare::Verdict {
    use crate::compare::verdict::{decide, Evidence};
    let e = Evidence {
        base: r.base,
        cand: r.cand,
        ratio: Some(r.ratio),
        diff: Some(r.diff),
        cand_ci: Some(r.cand_ci),
        method: crate::compare::Method::Bootstrap,
        level: 0.9969,
        requests: 200,
        counts: None,
        too_few: None,
        repeats: [3, 3],
        drift: None,
        blocks: [12, 12],
    };
    let b = crate::compare::Bound::Increase(crate::scenario::Threshold::Relative(0.25));
    decide(b, floor, &e).verdict
}

/// The real server's `-np 1` check (docs/gate.md, "Why `-np 1` was missed"): a 661 ms
/// baseline, a ratio widened by drift to x[2.38, 32.3]. The difference is widened by the
/// same move of the ratio's bounds, so it lies wholly past the 10 ms floor: a regression.
/// The old widening (at the candidate's point value) gave d[−365, …] and held it back.
#[test]
fn drift_widens_the_difference_as_it_widens_the_ratio() {
    let (level, df) = (0.9984, 4);
    let h = (4.0f64 / 2.38).ln();
    let within = agreeing(661.0, 4.0, 32.3 * (-h).exp());
    let (w, d) = widen(within, tau2_for(h, level, df), df, [3, 3], level);
    assert!((d.half - h).abs() < 1e-9, "{}", d.half);
    assert!((w.ratio.lo - 2.38).abs() < 1e-9, "{:?}", w.ratio);
    assert!((w.ratio.hi - 32.3).abs() < 1e-9, "{:?}", w.ratio);
    // One story: each bound of the difference is b · (the ratio's bound − 1).
    for (dd, rr) in [(w.diff.lo, w.ratio.lo), (w.diff.hi, w.ratio.hi)] {
        assert!((dd - 661.0 * (rr - 1.0)).abs() < 1e-6, "{dd} vs {rr}");
    }
    assert!(w.diff.lo > 900.0, "{:?}", w.diff);
    // The data exercise the defect: the candidate's point value put the bound below zero.
    let old_lo = within.diff.lo - within.cand * (1.0 - (-h).exp());
    assert!(old_lo < 0.0, "{old_lo}");
    assert_eq!(judged(&w, 10.0), crate::compare::Verdict::Regression);
}

/// The floor still keeps small absolute changes from being called regressions: a ratio past
/// +25 % whose difference straddles the 10 ms floor stays inconclusive, one wholly under it
/// passes, and an unchanged ratio (straddling x1) is never a regression.
#[test]
fn drift_widening_keeps_the_floor_for_small_absolute_changes() {
    use crate::compare::Verdict;
    let (level, df) = (0.9984, 4);
    let tau2 = tau2_for(0.05, level, df);
    let widen3 = |r: BootstrapResult| widen(r, tau2, df, [3, 3], level).0;
    // 20 ms → about 29 ms: x[1.28, 1.68] past x1.25, d[+5.7, +13.7] straddles +10.
    let straddles = widen3(agreeing(20.0, 1.35, 1.6));
    assert!(straddles.ratio.lo > 1.25 && straddles.diff.lo < 10.0 && straddles.diff.hi > 10.0);
    assert_eq!(judged(&straddles, 10.0), Verdict::Inconclusive);
    // 10 ms → about 14.7 ms: past x1.25 but d[+2.8, +6.8] is wholly within the floor.
    let tiny = widen3(agreeing(10.0, 1.35, 1.6));
    assert!(
        tiny.ratio.lo > 1.25 && tiny.diff.hi < 10.0,
        "{:?}",
        tiny.diff
    );
    assert_eq!(judged(&tiny, 10.0), Verdict::Pass);
    // Unchanged at 661 ms with a wide drift: the ratio straddles x1, never a regression.
    let h = 0.5;
    let same = widen(
        agreeing(661.0, 0.9, 1.1),
        tau2_for(h, level, df),
        df,
        [3, 3],
        level,
    )
    .0;
    assert!(same.diff.lo < 0.0 && same.diff.hi > 0.0);
    assert_ne!(judged(&same, 10.0), Verdict::Regression);
    // The widening never narrows the difference's interval.
    let within = agreeing(661.0, 0.9, 1.1);
    assert!(same.diff.lo < within.diff.lo && same.diff.hi > within.diff.hi);
}
