//! Large-sample intervals: coverage on synthetic data with known truth (one sample per
//! request, clustered gaps, run-to-run effects), agreement with the bootstrap they replace,
//! and the fallback when a log is undefined.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Normal};

use super::*;

/// `n` requests of one lognormal sample each (median `scale`).
fn singles(rng: &mut ChaCha8Rng, n: usize, scale: f64) -> Vec<Vec<f64>> {
    let d = LogNormal::new(scale.ln(), 0.5).unwrap();
    (0..n).map(|_| vec![d.sample(rng)]).collect()
}

/// `n` requests of `k` gaps each, every request with its own speed (a shared factor of
/// sd 0.3 in logs): gaps of one request are correlated, as real ITLs are.
fn clustered(rng: &mut ChaCha8Rng, n: usize, k: usize) -> Vec<Vec<f64>> {
    let speed = LogNormal::new(0.0, 0.3).unwrap();
    let gap = LogNormal::new(10f64.ln(), 0.2).unwrap();
    (0..n)
        .map(|_| {
            let s = speed.sample(rng);
            (0..k).map(|_| s * gap.sample(rng)).collect()
        })
        .collect()
}

/// Share of `trials` unchanged comparisons whose ratio interval holds 1.
fn coverage(trials: u64, mut pair: impl FnMut(u64) -> BootstrapResult) -> f64 {
    let hit = (0..trials)
        .filter(|&seed| {
            let r = pair(seed);
            r.ratio.lo <= 1.0 && 1.0 <= r.ratio.hi
        })
        .count();
    hit as f64 / trials as f64
}

fn one(groups: Vec<Vec<f64>>) -> Vec<Groups> {
    vec![Groups::from(groups)]
}

#[test]
fn quantiles_and_means_of_single_samples_cover_at_the_nominal_level() {
    let z = stats::z_for(0.90);
    for stat in [
        Statistic::Quantile(0.5),
        Statistic::Quantile(0.9),
        Statistic::Quantile(0.99),
        Statistic::Mean,
        Statistic::Std,
    ] {
        let cov = coverage(200, |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let b = latency(&one(singles(&mut rng, 2_000, 30.0)), stat, z).unwrap();
            let c = latency(&one(singles(&mut rng, 2_000, 30.0)), stat, z).unwrap();
            compare(&b, &c, 0.90)
        });
        // 200 trials at 90 %: a binomial standard error of 2.1 points.
        assert!(
            (0.84..=0.96).contains(&cov),
            "{stat:?}: coverage {cov} at a nominal 90 %"
        );
    }
}

#[test]
fn clustered_gaps_cover_at_the_nominal_level_where_counting_gaps_alone_would_not() {
    let z = stats::z_for(0.90);
    let cov = coverage(200, |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let b = latency(
            &one(clustered(&mut rng, 1_000, 15)),
            Statistic::Quantile(0.5),
            z,
        );
        let c = latency(
            &one(clustered(&mut rng, 1_000, 15)),
            Statistic::Quantile(0.5),
            z,
        );
        compare(&b.unwrap(), &c.unwrap(), 0.90)
    });
    assert!(
        (0.84..=0.96).contains(&cov),
        "coverage {cov} at a nominal 90 %"
    );
    // Each gap as a request of its own (no clusters): the interval ignores the correlation
    // and is far too narrow, which is why requests are the clusters.
    let naive = coverage(200, |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let flat = |g: Vec<Vec<f64>>| one(g.into_iter().flatten().map(|x| vec![x]).collect());
        let b = latency(
            &flat(clustered(&mut rng, 1_000, 15)),
            Statistic::Quantile(0.5),
            z,
        );
        let c = latency(
            &flat(clustered(&mut rng, 1_000, 15)),
            Statistic::Quantile(0.5),
            z,
        );
        compare(&b.unwrap(), &c.unwrap(), 0.90)
    });
    assert!(naive < 0.75, "gap-level coverage {naive} should undercover");
}

/// A check as `compare` computes it with repeats: the within-run interval at half the budget,
/// the runs' drift (from each side's per-run statistics) at the other half.
fn with_drift(b: &SideEstimate, c: &SideEstimate, level: f64) -> BootstrapResult {
    let (lw, ld) = super::super::components::split_levels(level, level);
    let per = |s: &SideEstimate| {
        if s.runs.len() >= 2 {
            s.runs.clone()
        } else {
            Vec::new()
        }
    };
    super::super::components::with_drift(
        compare(b, c, lw),
        lw,
        ld,
        [&per(b), &per(c)],
        [b.runs.len(), c.runs.len()],
        None,
    )
    .0
}

#[test]
fn run_to_run_effects_are_covered_with_repeats_and_borrowed_by_a_single_run() {
    // Every run has its own speed (5 % sd), which requests within it cannot show.
    let runs = |rng: &mut ChaCha8Rng, r: usize| -> Vec<Groups> {
        let effect = LogNormal::new(0.0, 0.05).unwrap();
        (0..r)
            .map(|_| {
                let e = effect.sample(rng);
                Groups::from(singles(rng, 2_000, 30.0 * e))
            })
            .collect()
    };
    let z = stats::z_for(0.90);
    let med = Statistic::Quantile(0.5);
    let three = coverage(200, |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let b = latency(&runs(&mut rng, 3), med, z).unwrap();
        let c = latency(&runs(&mut rng, 3), med, z).unwrap();
        with_drift(&b, &c, 0.90)
    });
    // The union of two bounds at 95 % each is conservative: at least nominal.
    assert!(
        (0.84..=1.0).contains(&three),
        "3 v 3 repeats: coverage {three}"
    );
    let borrowed = coverage(200, |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let b = latency(&runs(&mut rng, 5), med, z).unwrap();
        let c = latency(&runs(&mut rng, 1), med, z).unwrap();
        with_drift(&b, &c, 0.90)
    });
    assert!(
        (0.84..=1.0).contains(&borrowed),
        "5 v 1 repeats: coverage {borrowed}"
    );
    // The same runs pooled as if each side were one run: within-run noise only.
    let pooled = coverage(200, |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let flat = |r: Vec<Groups>| {
            one(r
                .iter()
                .flat_map(|g| g.iter().map(<[f64]>::to_vec))
                .collect())
        };
        let b = latency(&flat(runs(&mut rng, 3)), med, z).unwrap();
        let c = latency(&flat(runs(&mut rng, 3)), med, z).unwrap();
        compare(&b, &c, 0.90)
    });
    assert!(
        pooled < 0.6,
        "pooled runs: coverage {pooled} should undercover"
    );
}

#[test]
fn intervals_agree_with_the_bootstrap_they_replace() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let level = 0.95;
    let z = stats::z_for(level);
    let (b, c) = (
        singles(&mut rng, 5_000, 30.0),
        singles(&mut rng, 5_000, 33.0),
    );
    for stat in [
        Statistic::Quantile(0.5),
        Statistic::Quantile(0.9),
        Statistic::Mean,
    ] {
        let boot = stats::bootstrap(
            &Groups::from(b.as_slice()),
            &Groups::from(c.as_slice()),
            stat,
            stats::SEED,
            level,
        );
        let lin = compare(
            &latency(&one(b.clone()), stat, z).unwrap(),
            &latency(&one(c.clone()), stat, z).unwrap(),
            level,
        );
        let (wb, wl) = (boot.ratio.hi - boot.ratio.lo, lin.ratio.hi - lin.ratio.lo);
        assert!(
            (wl / wb - 1.0).abs() < 0.15,
            "{stat:?}: widths {wl} (linearized) vs {wb} (bootstrap)"
        );
        let mid = |i: Interval| (i.lo + i.hi) / 2.0;
        assert!(
            (mid(lin.ratio) - mid(boot.ratio)).abs() < 0.25 * wb,
            "{stat:?}: centres {:?} vs {:?}",
            lin.ratio,
            boot.ratio
        );
        let d = lin.cand - lin.base;
        assert!(
            lin.diff.lo < d && d < lin.diff.hi,
            "{stat:?}: {:?} misses {d}",
            lin.diff
        );
        assert!(lin.cand_ci.lo < lin.cand && lin.cand < lin.cand_ci.hi);
    }
    // Throughput of output tokens: [sent, end, weight] per request over one window.
    let tokens: Normal<f64> = Normal::new(200.0, 60.0).unwrap();
    let triples = |rng: &mut ChaCha8Rng| -> Vec<Vec<f64>> {
        (0..5_000)
            .map(|i| {
                let t = i as f64 * 10.0;
                vec![t, t + 500.0, tokens.sample(rng).max(1.0).round()]
            })
            .collect()
    };
    let (tb, tc) = (triples(&mut rng), triples(&mut rng));
    let rate = |v: &mut [f64]| {
        let (mut first, mut last, mut total) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
        for t in v.chunks_exact(3) {
            first = first.min(t[0]);
            last = last.max(t[1]);
            total += t[2];
        }
        total / ((last - first) / 1000.0)
    };
    let boot = stats::bootstrap_with(
        &Groups::from(tb.as_slice()),
        &Groups::from(tc.as_slice()),
        stats::SEED,
        level,
        rate,
    );
    let lin = compare(
        &throughput(&one(tb.clone())).unwrap(),
        &throughput(&one(tc.clone())).unwrap(),
        level,
    );
    let (wb, wl) = (boot.ratio.hi - boot.ratio.lo, lin.ratio.hi - lin.ratio.lo);
    assert!(
        (wl / wb - 1.0).abs() < 0.2,
        "throughput widths {wl} (linearized) vs {wb} (bootstrap)"
    );
}

#[test]
fn a_statistic_that_is_not_positive_has_no_large_sample_interval() {
    let z = stats::z_for(0.95);
    let zeros: Vec<Vec<f64>> = (0..6_000).map(|i| vec![f64::from(i % 3) - 1.0]).collect();
    assert!(latency(&one(zeros.clone()), Statistic::Quantile(0.5), z).is_none());
    assert!(latency(&one(zeros), Statistic::Mean, z).is_none());
    let idle: Vec<Vec<f64>> = (0..6_000)
        .map(|i| vec![f64::from(i), f64::from(i), 0.0])
        .collect();
    assert!(throughput(&one(idle)).is_none());
}
