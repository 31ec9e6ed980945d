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
