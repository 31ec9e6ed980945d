//! Change points in one series (one metric at one rung across folders in time order).
//!
//! Two tests, each with false-alarm rate `alpha` on a series without change:
//!
//! * **E-divisive means** (Matteson & James 2014, as Hunter / Apache Otava use it) with a
//!   seeded permutation test: the split that maximises the energy-distance statistic
//!   `Q = m·k/(m+k) · (2·mean|x−y| − mean|x−x'| − mean|y−y'|)` is a change point when fewer
//!   than `alpha` of the series' random reorderings reach the same maximum. Accepted splits
//!   are tested again on each side (binary segmentation). Distribution-free, but a step needs
//!   a few folders after it (at `alpha` 0.01, about 4) before any reordering test can see it.
//! * **Recent folders**: so that CI hears of a step the first time it shows, and the history
//!   names it until the permutation test can, the last k = 1, 2, 3 folders are each checked
//!   against the folders since the last change point (at least 3): a Student-t prediction
//!   interval for k = 1, a pooled two-sample t test for k = 2, 3, each at `alpha / 3`
//!   (Bonferroni: at most `alpha` for the three; exact for normal noise). The most
//!   significant k is kept.

use crate::stats::SplitMix64;

/// Settings of the detection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// False-alarm rate of each test on a series without change.
    pub alpha: f64,
    /// Random reorderings per permutation test.
    pub permutations: usize,
    /// Seed of the reorderings: the same inputs give the same change points.
    pub seed: u64,
    /// Fewest values on each side of an E-divisive split.
    pub min_size: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            alpha: 0.01,
            permutations: 999,
            seed: 0,
            min_size: 3,
        }
    }
}

/// Which test found a change point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// E-divisive means with a permutation test.
    Permutation,
    /// The last 1–3 values against the values since the last change (t tests).
    Recent,
}

impl Test {
    /// How the test is named in output.
    pub fn name(self) -> &'static str {
        match self {
            Test::Permutation => "e-divisive permutation test",
            Test::Recent => "recent-folders t test",
        }
    }
}

/// A step: the series differs from `index` on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// Position in the series of the first value after the step.
    pub index: usize,
    /// Mean of the segment before (from the previous change point).
    pub before: f64,
    /// Mean of the segment after (up to the next change point).
    pub after: f64,
    /// The test's p-value.
    pub p_value: f64,
    pub test: Test,
}

impl ChangePoint {
    /// (after − before) / before; `None` when `before` is 0.
    pub fn relative(&self) -> Option<f64> {
        (self.before != 0.0).then(|| (self.after - self.before) / self.before)
    }
}

/// Every change point of `xs`, in series order.
pub fn detect(xs: &[f64], cfg: &Config) -> Vec<ChangePoint> {
    let mut found: Vec<(usize, f64, Test)> = Vec::new();
    let mut todo = vec![(0, xs.len())];
    while let Some((a, b)) = todo.pop() {
        if let Some((tau, p)) = best_split(&xs[a..b], cfg, seed_for(cfg.seed, a, b)) {
            found.push((a + tau, p, Test::Permutation));
            todo.push((a, a + tau));
            todo.push((a + tau, b));
        }
    }
    found.sort_by_key(|f| f.0);
    // A last split at the edge the permutation test may use (`min_size` from the end) can be
    // a step in the last folders placed too early: the recent test, from the change point
    // before it, places it when it is the more significant.
    let n = xs.len();
    let at_edge = found.last().is_some_and(|f| f.0 + cfg.min_size.max(1) == n);
    if at_edge {
        let before = found.len().checked_sub(2).map_or(0, |i| found[i].0);
        if let Some((at, p)) = recent_split(xs, before, cfg) {
            if p < found[found.len() - 1].1 {
                found.pop();
                found.push((at, p, Test::Recent));
            }
        }
    } else if let Some((at, p)) = recent_split(xs, found.last().map_or(0, |f| f.0), cfg) {
        found.push((at, p, Test::Recent));
    }
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().map(|f| f.0))
        .chain(std::iter::once(xs.len()))
        .collect();
    found
        .iter()
        .enumerate()
        .map(|(i, &(index, p_value, test))| ChangePoint {
            index,
            before: mean(&xs[bounds[i]..bounds[i + 1]]),
            after: mean(&xs[bounds[i + 1]..bounds[i + 2]]),
            p_value,
            test,
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// A segment's own seed, so its result does not depend on the order segments are tested in.
fn seed_for(seed: u64, a: usize, b: usize) -> u64 {
    let mut r = SplitMix64(seed ^ ((a as u64) << 32) ^ b as u64);
    r.next()
}

/// The E-divisive split of `x` and its permutation p-value, when significant.
fn best_split(x: &[f64], cfg: &Config, seed: u64) -> Option<(usize, f64)> {
    let n = x.len();
    let min = cfg.min_size.max(1);
    if n < 2 * min {
        return None;
    }
    let (tau, q) = max_q(x, min);
    if q <= 0.0 {
        return None;
    }
    // Stop once enough reorderings reach q that p can no longer be at most alpha.
    let limit = (cfg.alpha * (cfg.permutations + 1) as f64).floor() as usize;
    let mut rng = SplitMix64(seed);
    let mut y = x.to_vec();
    let mut at_least = 0usize;
    for _ in 0..cfg.permutations {
        for i in (1..n).rev() {
            y.swap(i, rng.below(i + 1));
        }
        if max_q(&y, min).1 >= q * (1.0 - 1e-12) {
            at_least += 1;
            if at_least + 1 > limit {
                return None;
            }
        }
    }
    let p = (at_least + 1) as f64 / (cfg.permutations + 1) as f64;
    (p <= cfg.alpha).then_some((tau, p))
}

/// The split `tau` (`min..=n-min`) maximising Q, and that maximum, in O(n²).
fn max_q(x: &[f64], min: usize) -> (usize, f64) {
    let n = x.len();
    let d = |i: usize, j: usize| (x[i] - x[j]).abs();
    let total: f64 = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .map(|(i, j)| d(i, j))
        .sum();
    // left = Σ within x[..tau], between = Σ across the split; right follows from total.
    let (mut left, mut between) = (0.0, 0.0);
    let mut best = (0, f64::NEG_INFINITY);
    for tau in 1..n {
        // Move x[tau - 1] from the right side to the left.
        let t = tau - 1;
        let to_left: f64 = (0..t).map(|i| d(i, t)).sum();
        let to_right: f64 = (t + 1..n).map(|j| d(t, j)).sum();
        left += to_left;
        between += to_right - to_left;
        if tau < min || n - tau < min {
            continue;
        }
        let right = total - left - between;
        let (m, k) = (tau as f64, (n - tau) as f64);
        let pairs = |c: f64| if c > 1.0 { c * (c - 1.0) / 2.0 } else { 1.0 };
        let e = 2.0 * between / (m * k) - left / pairs(m) - right / pairs(k);
        let q = m * k / (m + k) * e;
        if q > best.1 {
            best = (tau, q);
        }
    }
    best
}

/// How many of the newest folders the recent test looks at.
const RECENT: usize = 3;

/// The most significant of the last 1..=[`RECENT`] folders of `xs` against `xs[start..]`
/// before them, when significant at `alpha / RECENT`.
fn recent_split(xs: &[f64], start: usize, cfg: &Config) -> Option<(usize, f64)> {
    (1..=RECENT)
        .filter(|k| xs.len() >= start + k + 3)
        .filter_map(|k| {
            let at = xs.len() - k;
            recent_p(&xs[start..at], &xs[at..]).map(|p| (at, p))
        })
        .filter(|(_, p)| *p <= cfg.alpha / RECENT as f64)
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Two-sided p-value that `tail` comes from the population of `prev` (at least 3 values):
/// for one value a Student-t prediction interval, for more a pooled two-sample t test.
fn recent_p(prev: &[f64], tail: &[f64]) -> Option<f64> {
    let (n, k) = (prev.len(), tail.len());
    if n < 3 || k == 0 {
        return None;
    }
    let (m, mt) = (mean(prev), mean(tail));
    let ss = |v: &[f64], c: f64| v.iter().map(|x| (x - c).powi(2)).sum::<f64>();
    let df = (n + k - 2) as f64;
    let var = (ss(prev, m) + ss(tail, mt)) / df;
    let scale = m.abs().max(mt.abs()).max(f64::MIN_POSITIVE);
    if var.sqrt() <= 1e-12 * scale {
        // Values that never varied: any real difference is a change.
        return Some(if (mt - m).abs() <= 1e-9 * scale {
            1.0
        } else {
            0.0
        });
    }
    let t = (mt - m) / (var * (1.0 / n as f64 + 1.0 / k as f64)).sqrt();
    Some(crate::stats::t_two_sided_p(t, df))
}

/// A standard normal draw (Box–Muller), for the tests' synthetic series.
#[cfg(test)]
fn normal(r: &mut SplitMix64) -> f64 {
    let u = ((r.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let v = (r.next() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values of mean 100 and sd 5, shifted by `step` from `at` on.
    fn series(seed: u64, n: usize, at: usize, step: f64) -> Vec<f64> {
        let mut r = SplitMix64(seed);
        (0..n)
            .map(|i| 100.0 + 5.0 * normal(&mut r) + if i >= at { step } else { 0.0 })
            .collect()
    }

    fn cfg(alpha: f64, seed: u64) -> Config {
        Config {
            alpha,
            permutations: 999,
            seed,
            min_size: 3,
        }
    }

    #[test]
    fn a_known_step_is_found_at_its_folder() {
        for seed in 0..20 {
            let xs = series(seed, 12, 7, 30.0);
            let cps = detect(&xs, &cfg(0.01, seed));
            assert_eq!(cps.len(), 1, "seed {seed}: {cps:?} in {xs:?}");
            let cp = cps[0];
            assert_eq!((cp.index, cp.test), (7, Test::Permutation), "seed {seed}");
            assert!(cp.p_value <= 0.01);
            assert!((cp.after - cp.before - 30.0).abs() < 10.0, "{cp:?}");
            assert!(cp.relative().unwrap() > 0.15);
        }
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut xs = series(3, 30, 10, 40.0);
        for x in &mut xs[20..] {
            *x -= 80.0;
        }
        let cps = detect(&xs, &cfg(0.01, 1));
        let at: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(at, vec![10, 20], "{cps:?}");
    }

    #[test]
    fn a_step_in_the_last_three_folders_is_found_by_the_recent_test() {
        for after in 1..=3 {
            for seed in 0..20 {
                // A 10-sd step after 10 folders.
                let xs = series(seed, 10 + after, 10, 50.0);
                let cps = detect(&xs, &cfg(0.01, seed));
                assert_eq!(cps.len(), 1, "{after} after, seed {seed}: {cps:?}");
                if after < 3 {
                    assert_eq!((cps[0].index, cps[0].test), (10, Test::Recent), "{cps:?}");
                } else {
                    // From 3 folders after, the permutation test may see it first, and then
                    // place it by its own statistic (a noisy folder can move it by one).
                    assert!((9..=11).contains(&cps[0].index), "{cps:?}");
                }
            }
        }
        // And a constant series that moves at the end is a change; one that does not is not.
        let flat = [5.0; 6];
        assert!(detect(&flat, &cfg(0.01, 0)).is_empty());
        let mut moved = flat.to_vec();
        moved.push(6.0);
        assert_eq!(detect(&moved, &cfg(0.01, 0))[0].index, 6);
    }

    #[test]
    fn same_seed_same_answer() {
        let xs = series(9, 40, 25, 6.0);
        assert_eq!(detect(&xs, &cfg(0.05, 4)), detect(&xs, &cfg(0.05, 4)));
    }

    /// The measured false-alarm rate on flat noisy series, per test, is near alpha.
    #[test]
    fn false_alarm_rate_on_flat_series_is_near_alpha() {
        let runs = 200;
        for alpha in [0.05, 0.01] {
            let (mut perm, mut recent) = (0, 0);
            for seed in 0..runs {
                let xs = series(1000 + seed, 20, usize::MAX, 0.0);
                let cps = detect(&xs, &cfg(alpha, seed));
                perm += usize::from(cps.iter().any(|c| c.test == Test::Permutation));
                recent += usize::from(cps.iter().any(|c| c.test == Test::Recent));
            }
            // Binomial(200, alpha): mean 10 (sd 3.1) at 0.05, mean 2 (sd 1.4) at 0.01.
            eprintln!("alpha {alpha}: {perm} permutation and {recent} recent-folders false alarms in {runs} flat series");
            let hi = (runs as f64 * alpha + 4.0 * (runs as f64 * alpha).sqrt()).ceil() as usize;
            for (what, n) in [("permutation", perm), ("recent", recent)] {
                assert!(
                    n <= hi,
                    "{what}: {n} false alarms in {runs} at alpha {alpha}"
                );
                if alpha == 0.05 {
                    assert!(n >= 3, "{what}: {n} of {runs}: the test is too timid");
                }
            }
        }
    }
}
