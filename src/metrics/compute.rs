//! Records → `RungSummary`, with vLLM's definitions (numpy-style linear percentiles,
//! population standard deviation) over the exact stored samples.

use std::collections::BTreeMap;
use std::time::Duration;

pub use super::flow::{
    achieved_rate, max_in_flight, max_in_flight_of, max_output_tokens_per_s, peak_output_rate,
};
pub use super::latency::{stats, stats_micros, stats_unordered};
use super::latency::{Latency, Stats};
use super::summary::RungSummary;
use super::tokens::TokenAccounting;
use crate::record::{ErrorClass, RequestRecord, TokenSource};
use crate::scenario::Slo;

/// Facts about a rung that are not in its records.
#[derive(Debug, Clone, Default)]
pub struct RungContext {
    /// Offered rate, req/s.
    pub rate: f64,
    /// Gamma shape (1.0 for Poisson and constant).
    pub burstiness: f64,
    /// Concurrency cap, if any (a concurrency rung's level).
    pub max_concurrency: Option<u32>,
    /// What `rate` counts (a concurrency rung's `rate` is its number of users).
    pub load: crate::scenario::LoadKind,
    /// The scenario's SLOs, for goodput.
    pub slo: Slo,
    /// Prompts whose token count missed the requested length.
    pub inexact_prompts: u64,
    /// The rung was cut short.
    pub interrupted: bool,
    /// The pooling API of a rung that generates no tokens (`embeddings`): its summary has
    /// no TTFT, TPOT or ITL. `None` for generation.
    pub pooling: Option<crate::scenario::Api>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// True when a successful request meets every SLO bound that is set.
pub fn meets_slo(r: &RequestRecord, slo: &Slo) -> bool {
    if !r.ok() {
        return false;
    }
    let within = |bound: Option<f64>, v: Option<Duration>| match (bound, v) {
        (None, _) => true,
        (Some(b), Some(v)) => ms(v) <= b,
        // A bound on TPOT is vacuous for one-token outputs, as in vLLM's goodput.
        (Some(_), None) => true,
    };
    within(slo.ttft_ms, r.ttft())
        && within(slo.tpot_ms, r.tpot())
        && within(slo.e2e_ms, Some(r.e2e()))
}

/// Summarise one rung. Warmup records count for concurrency only. Records of requests
/// abandoned in flight by a stop ([`RequestRecord::interrupted`]) are counted in
/// `interrupted_requests` and nowhere else.
pub fn summarize(records: &[RequestRecord], ctx: &RungContext) -> RungSummary {
    let abandoned = records.iter().filter(|r| r.interrupted()).count() as u64;
    if abandoned == 0 {
        return summarize_finished(records, ctx);
    }
    // Only an interrupted rung pays for this copy, once, at its end.
    let finished: Vec<RequestRecord> = records
        .iter()
        .filter(|r| !r.interrupted())
        .cloned()
        .collect();
    RungSummary {
        interrupted_requests: abandoned,
        ..summarize_finished(&finished, ctx)
    }
}

fn summarize_finished(records: &[RequestRecord], ctx: &RungContext) -> RungSummary {
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    let ok: Vec<&RequestRecord> = measured.iter().copied().filter(|r| r.ok()).collect();

    let errors_by_class = errors_by_class(&measured);

    let start = measured.iter().map(|r| r.sent).min().unwrap_or_default();
    let end = measured.iter().map(|r| r.end).max().unwrap_or_default();
    let duration_s = end.saturating_sub(start).as_secs_f64();
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };

    let total_input_tokens: u64 = ok.iter().map(|r| r.input_tokens as u64).sum();
    let total_output_tokens: u64 = ok.iter().map(|r| r.output_tokens as u64).sum();
    let good = ok.iter().filter(|r| meets_slo(r, &ctx.slo)).count();

    let achieved_rate = achieved_rate(
        measured.len() as u64,
        measured.iter().map(|r| r.sent).min(),
        measured.iter().map(|r| r.sent).max(),
    );

    let latency = latencies(&measured, &ok, ctx.pooling.is_some());

    RungSummary {
        rate: ctx.rate,
        load: ctx.load,
        burstiness: ctx.burstiness,
        max_concurrency: ctx.max_concurrency,
        num_prompts: measured.len() as u64,
        warmup_requests: records.iter().filter(|r| r.warmup).count() as u64,
        duration_s,
        completed: ok.len() as u64,
        failed: (measured.len() - ok.len()) as u64,
        errors_by_class,
        total_input_tokens,
        total_output_tokens,
        request_throughput: per_s(ok.len() as f64),
        request_goodput: per_s(good as f64),
        output_throughput: per_s(total_output_tokens as f64),
        total_token_throughput: per_s((total_input_tokens + total_output_tokens) as f64),
        achieved_rate,
        max_concurrent_requests: max_in_flight(records),
        max_output_tokens_per_s: max_output_tokens_per_s(&ok),
        retokenized_outputs: ok
            .iter()
            .filter(|r| r.token_source != TokenSource::Usage)
            .count() as u64,
        inexact_prompts: ctx.inexact_prompts,
        interrupted: ctx.interrupted,
        interrupted_requests: 0,
        tokens: TokenAccounting::of(&measured, &ok),
        reasoning: super::reasoning::Reasoning::of(&ok),
        prefix: super::prefix::PrefixSplit::of(&measured),
        sessions: super::sessions::SessionSummary::of(&measured),
        latency,
        // Filled in by the runner from its scrapes.
        server: Default::default(),
        repeats: Vec::new(),
        // Filled in by the runner for trace and ramp rungs.
        offered_rate: None,
        ramp: None,
        pooling: ctx.pooling,
        models: super::models::ModelSummary::of(&measured, duration_s, ctx.pooling.is_some()),
    }
}

/// Every measured request's error, counted by class (every class present, zero or not).
fn errors_by_class(measured: &[&RequestRecord]) -> BTreeMap<String, u64> {
    let mut errors_by_class: BTreeMap<String, u64> = ErrorClass::ALL
        .iter()
        .map(|c| (c.key().to_string(), 0))
        .collect();
    for r in measured {
        if let Some(e) = &r.error {
            *errors_by_class
                .entry(e.class.key().to_string())
                .or_default() += 1;
        }
    }
    errors_by_class
}

/// The latency statistics of a rung: the token timings and end-to-end latency of its
/// successful requests, end-to-end and dispatch lag of all of them; a pooling rung's have
/// no token timings.
fn latencies(
    measured: &[&RequestRecord],
    ok: &[&RequestRecord],
    pooling: bool,
) -> BTreeMap<Latency, Stats> {
    let mut latency = BTreeMap::new();
    super::latency::token_timings(ok, &mut latency);
    latency.insert(
        Latency::E2el,
        stats(ok.iter().map(|r| ms(r.e2e())).collect()),
    );
    latency.insert(
        Latency::TtftSched,
        stats(
            ok.iter()
                .filter_map(|r| r.ttft_from_scheduled())
                .map(ms)
                .collect(),
        ),
    );
    latency.insert(
        Latency::E2elSched,
        stats(ok.iter().map(|r| ms(r.e2e_from_scheduled())).collect()),
    );
    latency.insert(
        Latency::E2elAll,
        stats(measured.iter().map(|r| ms(r.e2e())).collect()),
    );
    latency.insert(
        Latency::DispatchLag,
        stats(measured.iter().map(|r| ms(r.dispatch_lag())).collect()),
    );
    // A pooled answer has no tokens in time: its token latencies are absent, not zero.
    if pooling {
        latency.retain(|which, _| !which.is_token_timing());
    }
    latency
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::latency::Stats;
    use crate::record::RequestError;

    fn ms_(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn ok_rec(i: u32, sent: u64, first: u64, end: u64, out: u32) -> RequestRecord {
        RequestRecord {
            index: i,
            scheduled: ms_(sent),
            sent: ms_(sent),
            first_token: Some(ms_(first)),
            end: ms_(end),
            input_tokens: 10,
            output_tokens: out,
            ..Default::default()
        }
    }

    #[test]
    fn peak_output_rate_counts_chunks_per_whole_second_as_vllm_does() {
        // Request 0: first chunk at 0.5 s, then 3 gaps of 200 ms (0.7, 0.9, 1.1 s).
        // Request 1: sent at 0.2 s, first chunk at 0.95 s, one gap of 100 ms (1.05 s).
        let mut a = ok_rec(0, 0, 500, 1100, 4);
        a.itl = vec![ms_(200); 3].into_iter().collect();
        let mut b = ok_rec(1, 200, 950, 1050, 2);
        b.itl = vec![ms_(100)].into_iter().collect();
        // Second 0 holds 0.5, 0.7, 0.9, 0.95; second 1 holds 1.05 and 1.1.
        assert_eq!(max_output_tokens_per_s(&[&a, &b]), 4.0);
        assert_eq!(max_output_tokens_per_s(&[]), 0.0);
    }

    #[test]
    fn percentiles_match_numpy_linear() {
        let s = stats(vec![2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.std, 2.0);
        assert_eq!(s.median, 4.5);
    }

    /// `stats_unordered` gives `stats`'s order statistics bit for bit, and its sums within
    /// rounding, on ties, single samples and skewed data in any order.
    #[test]
    fn unordered_stats_select_what_the_sort_gives() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [1usize, 2, 3, 7, 10, 999, 1000, 1001, 20_000] {
            let v: Vec<f64> = (0..n)
                .map(|_| match next() % 4 {
                    0 => 5.0, // ties
                    1 => (next() % 1000) as f64 / 7.0,
                    _ => ((next() % 10_000) as f64 / 1000.0).exp(), // a long tail
                })
                .collect();
            let (a, b) = (stats(v.clone()), stats_unordered(v));
            let same = [
                (a.median, b.median),
                (a.p90, b.p90),
                (a.p95, b.p95),
                (a.p99, b.p99),
                (a.p999, b.p999),
                (a.min, b.min),
                (a.max, b.max),
            ];
            for (i, (x, y)) in same.into_iter().enumerate() {
                assert_eq!(x.to_bits(), y.to_bits(), "n {n}, order statistic {i}");
            }
            assert_eq!(a.count, b.count);
            assert!((a.mean - b.mean).abs() <= 1e-9 * a.mean.abs(), "n {n}");
            assert!(
                (a.std - b.std).abs() <= 1e-9 * a.std.abs().max(1e-12),
                "n {n}"
            );
        }
        assert_eq!(stats_unordered(vec![]).count, 0);
    }

    /// `stats_micros` must give `stats`'s percentiles exactly, whatever the spread.
    fn assert_same_as_sorted_floats(us: &[u32]) {
        let fast = stats_micros(|| us.iter().copied());
        let slow = stats(us.iter().map(|&u| f64::from(u) / 1000.0).collect());
        let label = format!("{} samples", us.len());
        assert_eq!(fast.count, slow.count, "{label}");
        for (name, f, s) in [
            ("median", fast.median, slow.median),
            ("p90", fast.p90, slow.p90),
            ("p95", fast.p95, slow.p95),
            ("p99", fast.p99, slow.p99),
            ("p99.9", fast.p999, slow.p999),
            ("min", fast.min, slow.min),
            ("max", fast.max, slow.max),
        ] {
            assert_eq!(f.to_bits(), s.to_bits(), "{name} of {label}: {f} vs {s}");
        }
        for (name, f, s) in [("mean", fast.mean, slow.mean), ("std", fast.std, slow.std)] {
            assert!(
                (f - s).abs() <= 1e-9 * s.abs().max(1.0),
                "{name}: {f} vs {s}"
            );
        }
    }

    #[test]
    fn micros_stats_are_exact_numpy_percentiles() {
        assert_eq!(stats_micros(std::iter::empty), Stats::default());
        assert_same_as_sorted_floats(&[7]);
        assert_same_as_sorted_floats(&[3, 1]);
        assert_same_as_sorted_floats(&[5; 1000]);
        // A deterministic spread with ties, across many high buckets (values above 65.5 ms)
        // and up to the saturation value.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut us: Vec<u32> = (0..20_011)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match i % 4 {
                    0 => (x % 50) as u32,
                    1 => (x % 200_000) as u32,
                    2 => 12_345,
                    _ => (x >> 32) as u32,
                }
            })
            .collect();
        us.push(u32::MAX);
        assert_same_as_sorted_floats(&us);
        assert_same_as_sorted_floats(&us[..101]);
    }

    #[test]
    fn hand_computed_rung() {
        // Two successes and one rate-limited failure over a 2 s window.
        let mut records = vec![
            ok_rec(0, 0, 100, 1000, 10),
            ok_rec(1, 500, 700, 2000, 10),
            RequestRecord {
                index: 2,
                scheduled: ms_(900),
                sent: ms_(1000),
                end: ms_(1010),
                error: Some(RequestError {
                    class: ErrorClass::RateLimit,
                    status: Some(429),
                    detail: "slow down".into(),
                }),
                ..Default::default()
            },
        ];
        records[0].itl = vec![ms_(100); 9].into();
        let ctx = RungContext {
            rate: 1.5,
            burstiness: 1.0,
            slo: Slo {
                ttft_ms: Some(150.0),
                ..Default::default()
            },
            ..Default::default()
        };
        let s = summarize(&records, &ctx);
        assert_eq!(s.completed, 2);
        assert_eq!(s.failed, 1);
        assert_eq!(s.errors_by_class["rate_limit"], 1);
        assert_eq!(s.errors_by_class["auth"], 0);
        assert_eq!(s.duration_s, 2.0);
        assert_eq!(s.request_throughput, 1.0);
        assert_eq!(s.output_throughput, 10.0);
        assert_eq!(s.total_token_throughput, 20.0);
        // Only request 0 meets TTFT <= 150 ms.
        assert_eq!(s.request_goodput, 0.5);
        assert!((s.error_rate() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.stats(Latency::Ttft).median, 150.0);
        // TPOT: (900/9, 1300/9) ms.
        // Durations are whole nanoseconds, so compare at 1 ns.
        assert!((s.stats(Latency::Tpot).mean - 2200.0 / 18.0).abs() < 1e-6);
        assert_eq!(s.stats(Latency::Itl).count, 9);
        assert_eq!(s.stats(Latency::E2elAll).count, 3);
        assert_eq!(s.stats(Latency::DispatchLag).max, 100.0);
        // Request 0 ends at 1000 ms as request 2 starts: at most two at once.
        assert_eq!(s.max_concurrent_requests, 2);
        assert_eq!(s.achieved_rate, 2.0);
    }

    #[test]
    fn warmup_is_excluded_and_empty_rung_is_zero() {
        let mut w = ok_rec(0, 0, 10, 20, 2);
        w.warmup = true;
        let s = summarize(&[w], &RungContext::default());
        assert_eq!(s.num_prompts, 0);
        assert_eq!(s.warmup_requests, 1);
        assert_eq!(s.request_throughput, 0.0);
        assert_eq!(s.error_rate(), 0.0);
    }
}
