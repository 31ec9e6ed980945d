//! One latency distribution's statistics ([`Stats`]), which distribution it is ([`Latency`]),
//! and how the statistics are built from samples (vLLM's definitions: numpy-style linear
//! percentiles, population standard deviation, over the exact samples). Every file that
//! summarises a part of a rung (models, prefix, reasoning, sessions) builds its [`Stats`]
//! here, as [`super::compute`] does for the whole rung.

use crate::stats::{interpolate, linear_ranks, quantile_sorted};

/// Key prefix of the TTFC distribution: `median_ttfc_ms`, `count_ttfc`.
pub const TTFC: &str = "ttfc";

/// Summary statistics of one latency distribution, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stats {
    /// Number of samples.
    pub count: u64,
    pub mean: f64,
    pub median: f64,
    pub std: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub min: f64,
    pub max: f64,
}

/// A statistic's key prefix with its getter and setter.
type StatField = (&'static str, fn(&Stats) -> f64, fn(&mut Stats, f64));

impl Stats {
    /// The statistics of a distribution a rung cannot have: no samples, every value NaN.
    pub fn absent() -> Stats {
        let mut s = Stats::default();
        for (_, _, set) in Stats::FIELDS {
            set(&mut s, f64::NAN);
        }
        s
    }

    /// Statistic names as they prefix a key (`median` in `median_ttft_ms`), with accessors.
    pub(crate) const FIELDS: [StatField; 9] = [
        ("mean", |s| s.mean, |s, v| s.mean = v),
        ("median", |s| s.median, |s, v| s.median = v),
        ("std", |s| s.std, |s, v| s.std = v),
        ("p90", |s| s.p90, |s, v| s.p90 = v),
        ("p95", |s| s.p95, |s, v| s.p95 = v),
        ("p99", |s| s.p99, |s, v| s.p99 = v),
        ("p99.9", |s| s.p999, |s, v| s.p999 = v),
        ("min", |s| s.min, |s, v| s.min = v),
        ("max", |s| s.max, |s, v| s.max = v),
    ];
}

/// The latency distributions a rung reports, by the name used in keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Latency {
    /// Time to first token from the actual send (vLLM's TTFT).
    Ttft,
    /// Time per output token after the first (vLLM's TPOT).
    Tpot,
    /// Inter-token latency: gaps between token chunks (vLLM's ITL).
    Itl,
    /// End-to-end latency (vLLM's E2EL).
    E2el,
    /// TTFT measured from the scheduled send time (coordinated-omission aware).
    TtftSched,
    /// E2E measured from the scheduled send time.
    E2elSched,
    /// E2E of all measured requests, failures included (time to failure).
    E2elAll,
    /// Actual send time minus scheduled send time.
    DispatchLag,
    /// Time to the first content token (after a reasoning model's thinking). Not in
    /// [`Latency::ALL`]: its keys are written only for rungs that reasoned
    /// (`metrics::reasoning`).
    Ttfc,
}

impl Latency {
    /// Every distribution, in report order.
    pub const ALL: [Latency; 8] = [
        Latency::Ttft,
        Latency::Tpot,
        Latency::Itl,
        Latency::E2el,
        Latency::TtftSched,
        Latency::E2elSched,
        Latency::E2elAll,
        Latency::DispatchLag,
    ];

    /// True for the distributions of tokens in time (TTFT, TPOT, ITL, scheduled TTFT, TTFC):
    /// absent from a pooled rung (`api: embeddings`), which generates none.
    pub fn is_token_timing(self) -> bool {
        matches!(
            self,
            Latency::Ttft | Latency::Tpot | Latency::Itl | Latency::TtftSched | Latency::Ttfc
        )
    }

    /// Middle part of the JSON key: `ttft` in `median_ttft_ms`.
    pub fn key(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Tpot => "tpot",
            Latency::Itl => "itl",
            Latency::E2el => "e2el",
            Latency::TtftSched => "ttft_sched",
            Latency::E2elSched => "e2el_sched",
            Latency::E2elAll => "e2el_all",
            Latency::DispatchLag => "dispatch_lag",
            Latency::Ttfc => TTFC,
        }
    }
}

/// The token timings of successful requests `ok` (TTFT, TPOT, ITL, in ms) into `into`: a
/// rung's summary and each model's breakdown count them alike.
pub(crate) fn token_timings(
    ok: &[&crate::record::RequestRecord],
    into: &mut std::collections::BTreeMap<Latency, Stats>,
) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    into.insert(
        Latency::Ttft,
        stats(ok.iter().filter_map(|r| r.ttft()).map(ms).collect()),
    );
    into.insert(
        Latency::Tpot,
        stats(ok.iter().filter_map(|r| r.tpot()).map(ms).collect()),
    );
    into.insert(
        Latency::Itl,
        // Read in place: a copy of every gap would double the rung's memory at its peak.
        stats_micros(|| ok.iter().flat_map(|r| r.itl.micros().iter().copied())),
    );
}

/// Summary statistics of samples in milliseconds (zeroed when empty, like vLLM's `or 0`).
pub fn stats(mut samples: Vec<f64>) -> Stats {
    if samples.is_empty() {
        return Stats::default();
    }
    // Unstable is the same order here: total_cmp ties only identical bit patterns.
    samples.sort_unstable_by(f64::total_cmp);
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let var = samples.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    Stats {
        count: samples.len() as u64,
        mean,
        median: quantile_sorted(&samples, PERCENTILES[0]),
        std: var.sqrt(),
        p90: quantile_sorted(&samples, PERCENTILES[1]),
        p95: quantile_sorted(&samples, PERCENTILES[2]),
        p99: quantile_sorted(&samples, PERCENTILES[3]),
        p999: quantile_sorted(&samples, PERCENTILES[4]),
        min: samples[0],
        max: samples[samples.len() - 1],
    }
}

/// [`stats`] without the sort, for checking a summary against its samples: percentiles,
/// min and max are exactly [`stats`]'s (each order statistic found by selection, O(n) in
/// all against the sort's O(n log n)); mean and standard deviation are summed in the
/// samples' order, so they may differ from [`stats`]'s sorted-order sums by rounding.
/// Writers use [`stats`], whose every bit is independent of the samples' order.
pub fn stats_unordered(mut samples: Vec<f64>) -> Stats {
    let n = samples.len();
    if n == 0 {
        return Stats::default();
    }
    let mut ranks: Vec<usize> = PERCENTILES
        .iter()
        .flat_map(|&q| {
            let (lo, hi, _) = linear_ranks(n, q);
            [lo, hi]
        })
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    // After selecting rank r in samples[start..], everything past r is no smaller: the
    // next (higher) rank is selected in what is left.
    let mut start = 0;
    for r in ranks {
        samples[start..].select_nth_unstable_by(r - start, f64::total_cmp);
        start = r + 1;
    }
    let at = |q: f64| {
        let (lo, hi, frac) = linear_ranks(n, q);
        interpolate(samples[lo], samples[hi], frac)
    };
    let mean = samples.iter().sum::<f64>() / n as f64;
    let var = samples.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    let min = samples.iter().copied().min_by(f64::total_cmp);
    let max = samples.iter().copied().max_by(f64::total_cmp);
    Stats {
        count: n as u64,
        mean,
        median: at(PERCENTILES[0]),
        std: var.sqrt(),
        p90: at(PERCENTILES[1]),
        p95: at(PERCENTILES[2]),
        p99: at(PERCENTILES[3]),
        p999: at(PERCENTILES[4]),
        min: min.unwrap_or_default(),
        max: max.unwrap_or_default(),
    }
}

/// The percentiles a [`Stats`] reports, in field order, as the quantiles [`crate::stats`]
/// takes: vLLM's percents over 100, divided as numpy divides them (99.9 / 100 is not the
/// literal 0.999: this keeps every p99.9 numpy's, to the bit).
pub(super) const PERCENTILES: [f64; 5] = [
    50.0 / 100.0,
    90.0 / 100.0,
    95.0 / 100.0,
    99.0 / 100.0,
    99.9 / 100.0,
];

/// Summary statistics of microsecond samples, reported in milliseconds, without copying
/// the samples: `samples` is called once per pass over them (ITL gaps are read in place
/// from the records, which hold millions of them in a long rung).
///
/// Exact, not approximated: the order statistics each percentile needs are found by a
/// two-level radix count (the high 16 bits of every sample, then the low 16 bits of only
/// those high buckets that hold a wanted rank), so memory is a few 512 KiB count tables
/// whatever the number of samples, and every percentile, the min and the max equal what
/// [`stats`] gives on the sorted millisecond values. Mean and standard deviation come from
/// exact integer sums (at most a rounding step away from [`stats`]'s float sums).
pub fn stats_micros<I, F>(samples: F) -> Stats
where
    F: Fn() -> I,
    I: Iterator<Item = u32>,
{
    const BUCKETS: usize = 1 << 16;
    let (mut n, mut sum, mut sum_sq) = (0u64, 0u128, 0u128);
    let (mut min, mut max) = (u32::MAX, 0u32);
    let mut high = vec![0u64; BUCKETS];
    for us in samples() {
        n += 1;
        sum += u128::from(us);
        sum_sq += u128::from(us) * u128::from(us);
        min = min.min(us);
        max = max.max(us);
        high[(us >> 16) as usize] += 1;
    }
    if n == 0 {
        return Stats::default();
    }

    // The ranks (0-based, in sorted order) the percentiles interpolate between.
    let mut ranks: Vec<u64> = PERCENTILES
        .iter()
        .flat_map(|&q| {
            let (lo, hi, _) = linear_ranks(n as usize, q);
            [lo as u64, hi as u64]
        })
        .collect();
    ranks.sort_unstable();
    ranks.dedup();

    // Pass 1 result: each rank's high bucket and its rank within that bucket.
    let mut wanted: Vec<(u64, usize, u64)> = Vec::with_capacity(ranks.len());
    let mut below = 0u64;
    let mut next = ranks.iter().peekable();
    for (bucket, &count) in high.iter().enumerate() {
        while let Some(&&rank) = next.peek() {
            if rank >= below + count {
                break;
            }
            wanted.push((rank, bucket, rank - below));
            next.next();
        }
        below += count;
    }
    drop(high);

    // Pass 2: count the low 16 bits of the samples in the wanted high buckets only.
    const NOT_WANTED: u8 = u8::MAX;
    let mut slot = vec![NOT_WANTED; BUCKETS];
    let mut low: Vec<Vec<u64>> = Vec::new();
    for &(_, bucket, _) in &wanted {
        if slot[bucket] == NOT_WANTED {
            slot[bucket] = low.len() as u8;
            low.push(vec![0u64; BUCKETS]);
        }
    }
    for us in samples() {
        let s = slot[(us >> 16) as usize];
        if s != NOT_WANTED {
            low[s as usize][(us & 0xFFFF) as usize] += 1;
        }
    }
    let value_at = |rank: u64| -> u32 {
        let &(_, bucket, mut within) = wanted
            .iter()
            .find(|w| w.0 == rank)
            .expect("every needed rank was located in pass 1");
        for (lo_bits, &count) in low[slot[bucket] as usize].iter().enumerate() {
            if within < count {
                return ((bucket as u32) << 16) | lo_bits as u32;
            }
            within -= count;
        }
        unreachable!("pass 2 counts the same samples as pass 1")
    };
    stats_from_sums(n, sum, sum_sq, u64::from(min), u64::from(max), |rank| {
        u64::from(value_at(rank))
    })
}

/// [`Stats`] of `n` whole-microsecond samples from their exact sum and sum of squares,
/// extremes, and the sample at any 0-based sorted rank (`value_at`): shared by
/// [`stats_micros`] and `counts::MicrosCounts`, so both give the same bits.
pub(super) fn stats_from_sums(
    n: u64,
    sum: u128,
    sum_sq: u128,
    min: u64,
    max: u64,
    value_at: impl Fn(u64) -> u64,
) -> Stats {
    let ms = |us: u64| us as f64 / 1000.0;
    let percentile = |q: f64| {
        let (lo, hi, frac) = linear_ranks(n as usize, q);
        let (a, b) = (ms(value_at(lo as u64)), ms(value_at(hi as u64)));
        interpolate(a, b, frac)
    };
    let nf = n as f64;
    // n·Σx² − (Σx)² is exact in u128 for up to ~4·10⁹ samples; beyond, fall back to floats.
    let var_us = match (u128::from(n)).checked_mul(sum_sq) {
        Some(nss) => (nss - sum * sum) as f64 / (nf * nf),
        None => (sum_sq as f64 / nf - (sum as f64 / nf).powi(2)).max(0.0),
    };
    Stats {
        count: n,
        mean: sum as f64 / nf / 1000.0,
        median: percentile(PERCENTILES[0]),
        std: var_us.sqrt() / 1000.0,
        p90: percentile(PERCENTILES[1]),
        p95: percentile(PERCENTILES[2]),
        p99: percentile(PERCENTILES[3]),
        p999: percentile(PERCENTILES[4]),
        min: ms(min),
        max: ms(max),
    }
}
