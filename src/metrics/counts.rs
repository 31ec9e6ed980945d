//! A latency distribution kept as a count of each whole-microsecond value: mergeable, exact
//! at microsecond resolution, and as large as the number of *distinct* values (bounded by
//! the spread of the latencies), never by the number of requests. A soak rung folds its
//! records into these instead of keeping them (see [`super::fold`]).
//!
//! The statistics reproduce [`super::compute::stats`] and [`super::compute::stats_micros`]
//! to the bit on the same microsecond values: the same numpy-style linear percentiles on the
//! same order statistics, and, for `stats`, the same sequence of float additions (the sorted
//! samples one by one) for the mean and the standard deviation.

use std::collections::HashMap;
use std::time::Duration;

use super::latency::{stats_from_sums, Stats, PERCENTILES};
use crate::stats::{interpolate, linear_ranks};

/// Count of each whole-microsecond value seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MicrosCounts {
    counts: HashMap<u64, u64>,
    n: u64,
}

/// `d` in whole microseconds, rounded to the nearest (as `record::ItlGaps` rounds gaps).
pub fn micros_of(d: Duration) -> u64 {
    u64::try_from((d.as_nanos() + 500) / 1000).unwrap_or(u64::MAX)
}

impl MicrosCounts {
    /// Count `d`, rounded to the nearest microsecond.
    pub fn add(&mut self, d: Duration) {
        self.add_micros(micros_of(d));
    }

    /// Count a value already in whole microseconds.
    pub fn add_micros(&mut self, us: u64) {
        *self.counts.entry(us).or_default() += 1;
        self.n += 1;
    }

    /// Add every count of `other` (the merge of two distributions).
    #[cfg(test)]
    pub fn merge(&mut self, other: &MicrosCounts) {
        for (&us, &c) in &other.counts {
            *self.counts.entry(us).or_default() += c;
        }
        self.n += other.n;
    }

    /// Number of samples.
    #[cfg(test)]
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Distinct values held (what the memory is proportional to).
    pub fn distinct(&self) -> usize {
        self.counts.len()
    }

    fn sorted(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self.counts.iter().map(|(&k, &c)| (k, c)).collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    }

    /// What [`super::compute::stats`] gives on these values as milliseconds converted from
    /// `Duration`s (`as_secs_f64() * 1000`), bit for bit.
    pub fn stats(&self) -> Stats {
        let ms = |us: u64| Duration::from_micros(us).as_secs_f64() * 1000.0;
        let sorted = self.sorted();
        if self.n == 0 {
            return Stats::default();
        }
        let n = self.n as f64;
        // One addition per sample in sorted order, as `stats` sums its sorted vector.
        let mean = sorted
            .iter()
            .flat_map(|&(us, c)| std::iter::repeat_n(ms(us), c as usize))
            .sum::<f64>()
            / n;
        let var = sorted
            .iter()
            .flat_map(|&(us, c)| std::iter::repeat_n(ms(us), c as usize))
            .map(|x| (x - mean) * (x - mean))
            .sum::<f64>()
            / n;
        let at = Ranked::new(&sorted);
        let pct = |q: f64| {
            let (lo, hi, frac) = linear_ranks(self.n as usize, q);
            let (a, b) = (ms(at.value(lo as u64)), ms(at.value(hi as u64)));
            interpolate(a, b, frac)
        };
        Stats {
            count: self.n,
            mean,
            median: pct(PERCENTILES[0]),
            std: var.sqrt(),
            p90: pct(PERCENTILES[1]),
            p95: pct(PERCENTILES[2]),
            p99: pct(PERCENTILES[3]),
            p999: pct(PERCENTILES[4]),
            min: ms(sorted[0].0),
            max: ms(sorted[sorted.len() - 1].0),
        }
    }

    /// What [`super::compute::stats_micros`] gives on these values (milliseconds as
    /// `us / 1000`, mean and standard deviation from exact integer sums), bit for bit.
    pub fn stats_micros(&self) -> Stats {
        let sorted = self.sorted();
        if self.n == 0 {
            return Stats::default();
        }
        let (mut sum, mut sum_sq) = (0u128, 0u128);
        for &(us, c) in &sorted {
            sum += u128::from(us) * u128::from(c);
            sum_sq += u128::from(us) * u128::from(us) * u128::from(c);
        }
        let at = Ranked::new(&sorted);
        stats_from_sums(
            self.n,
            sum,
            sum_sq,
            sorted[0].0,
            sorted[sorted.len() - 1].0,
            |rank| at.value(rank),
        )
    }
}

/// Sorted values with their cumulative counts, to find the value at a rank.
struct Ranked {
    values: Vec<u64>,
    /// Samples up to and including each value.
    upto: Vec<u64>,
}

impl Ranked {
    fn new(sorted: &[(u64, u64)]) -> Ranked {
        let mut acc = 0u64;
        let upto = sorted
            .iter()
            .map(|&(_, c)| {
                acc += c;
                acc
            })
            .collect();
        Ranked {
            values: sorted.iter().map(|e| e.0).collect(),
            upto,
        }
    }

    /// The value at 0-based `rank` in sorted order.
    fn value(&self, rank: u64) -> u64 {
        let i = self.upto.partition_point(|&u| u <= rank);
        self.values[i.min(self.values.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::compute::{stats, stats_micros};

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    fn assert_bits(a: Stats, b: Stats, label: &str) {
        assert_eq!(a.count, b.count, "{label}");
        for (name, get, _) in Stats::FIELDS {
            assert_eq!(
                get(&a).to_bits(),
                get(&b).to_bits(),
                "{name} of {label}: {} vs {}",
                get(&a),
                get(&b)
            );
        }
    }

    #[test]
    fn counts_give_the_sorted_vector_stats_to_the_bit() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for (n, spread) in [(1, 10), (2, 10), (7, 3), (1000, 50), (20_011, 2_000_000)] {
            let us: Vec<u64> = (0..n).map(|_| next() % spread).collect();
            let mut c = MicrosCounts::default();
            for &u in &us {
                c.add(Duration::from_micros(u));
            }
            let want = stats(
                us.iter()
                    .map(|&u| Duration::from_micros(u).as_secs_f64() * 1000.0)
                    .collect(),
            );
            assert_bits(c.stats(), want, &format!("{n} samples"));
            let want = stats_micros(|| us.iter().map(|&u| u as u32));
            assert_bits(c.stats_micros(), want, &format!("{n} samples (micros)"));
        }
        assert_eq!(MicrosCounts::default().stats(), Stats::default());
        assert_eq!(MicrosCounts::default().stats_micros(), Stats::default());
    }

    #[test]
    fn merged_counts_equal_counts_of_the_union() {
        let (mut a, mut b, mut all) = Default::default();
        let mut next = xorshift(42);
        for i in 0..5000 {
            let us = next() % 10_000;
            let half: &mut MicrosCounts = if i % 3 == 0 { &mut a } else { &mut b };
            half.add_micros(us);
            MicrosCounts::add_micros(&mut all, us);
        }
        a.merge(&b);
        assert_eq!(a, all);
        assert!(a.distinct() <= 5000 && a.len() == 5000);
    }

    #[test]
    fn durations_round_to_the_nearest_microsecond() {
        assert_eq!(micros_of(Duration::from_nanos(1_499)), 1);
        assert_eq!(micros_of(Duration::from_nanos(1_500)), 2);
    }
}
