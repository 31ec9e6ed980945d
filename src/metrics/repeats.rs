//! A rung measured several times (`load.repeats`): the pooled summary built from the
//! per-repeat ones. The run-level spread of the main metrics and the `repeats` JSON are
//! written and read with the summary's JSON ([`super::summary`]), since it holds the repeats'
//! own summaries.
//!
//! Pooling: counts and token totals add up; the wall time is the sum of the repeats' wall
//! times, so a throughput is all completions over all measured time; peaks (concurrency,
//! output rate) are the largest repeat's; latency statistics come from every measured
//! request of every repeat (the caller computes them from the pooled records).

use std::collections::BTreeMap;

use super::latency::{Latency, Stats};
use super::summary::RungSummary;
use super::tokens::TokenAccounting;

/// The pooled summary of `runs` (two or more repeats of one rung, in order), with the
/// latency statistics of all their measured requests together.
///
/// `reasoning` is likewise computed from all their requests together.
pub fn pool(
    runs: Vec<RungSummary>,
    latency: BTreeMap<Latency, Stats>,
    reasoning: Option<super::reasoning::Reasoning>,
) -> RungSummary {
    let first = runs.first().cloned().unwrap_or_default();
    let sum = |f: fn(&RungSummary) -> u64| runs.iter().map(f).sum::<u64>();
    let duration_s: f64 = runs.iter().map(|r| r.duration_s).sum();
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };
    let completed = sum(|r| r.completed);
    let total_input_tokens = sum(|r| r.total_input_tokens);
    let total_output_tokens = sum(|r| r.total_output_tokens);
    let good: f64 = runs.iter().map(|r| r.request_goodput * r.duration_s).sum();
    // Sends per second over the summed sending windows of the repeats.
    let (sends, window) = runs
        .iter()
        .filter(|r| r.achieved_rate > 0.0 && r.num_prompts > 1)
        .map(|r| {
            let n = (r.num_prompts - 1) as f64;
            (n, n / r.achieved_rate)
        })
        .fold((0.0, 0.0), |(a, b), (n, w)| (a + n, b + w));
    let mut errors_by_class = BTreeMap::new();
    for r in &runs {
        for (k, v) in &r.errors_by_class {
            *errors_by_class.entry(k.clone()).or_insert(0) += v;
        }
    }
    RungSummary {
        rate: first.rate,
        load: first.load,
        burstiness: first.burstiness,
        max_concurrency: first.max_concurrency,
        num_prompts: sum(|r| r.num_prompts),
        warmup_requests: sum(|r| r.warmup_requests),
        duration_s,
        completed,
        failed: sum(|r| r.failed),
        errors_by_class,
        total_input_tokens,
        total_output_tokens,
        request_throughput: per_s(completed as f64),
        request_goodput: per_s(good.round()),
        output_throughput: per_s(total_output_tokens as f64),
        total_token_throughput: per_s((total_input_tokens + total_output_tokens) as f64),
        achieved_rate: if window > 0.0 { sends / window } else { 0.0 },
        max_concurrent_requests: runs
            .iter()
            .map(|r| r.max_concurrent_requests)
            .max()
            .unwrap_or(0),
        max_output_tokens_per_s: runs
            .iter()
            .map(|r| r.max_output_tokens_per_s)
            .fold(f64::NAN, f64::max),
        retokenized_outputs: sum(|r| r.retokenized_outputs),
        inexact_prompts: sum(|r| r.inexact_prompts),
        interrupted: runs.iter().any(|r| r.interrupted),
        interrupted_requests: sum(|r| r.interrupted_requests),
        tokens: pool_tokens(&runs),
        reasoning,
        // Like the latency statistics, from every request: the caller sets it.
        prefix: None,
        // Session rungs are measured once (repeats are refused for them).
        sessions: None,
        latency,
        // Server metrics are scraped during the first repeat only (docs/gate.md).
        server: first.server,
        offered_rate: first.offered_rate,
        // A ramp's windows are recomputed from every repeat's requests by the runner.
        ramp: None,
        pooling: first.pooling,
        // Like the latency statistics, from every request: the caller sets it
        // ([`pool_models`]).
        models: Vec::new(),
        repeats: runs,
    }
}

/// A mix's breakdown of every repeat's requests together, its throughputs over the pool's
/// summed `duration_s` (as the pool's own), so it adds up to the pool.
pub fn pool_models(
    all: Vec<super::models::ModelSummary>,
    duration_s: f64,
) -> Vec<super::models::ModelSummary> {
    all.into_iter()
        .map(|m| {
            super::models::ModelSummary::from_counts(
                &m.model,
                m.num_prompts,
                m.completed,
                m.total_input_tokens,
                m.total_output_tokens,
                duration_s,
                m.latency,
            )
        })
        .collect()
}

/// Means over successful requests, pooled as weighted means of the repeats' means.
fn pool_tokens(runs: &[RungSummary]) -> TokenAccounting {
    let weighted = |w: fn(&RungSummary) -> f64, v: fn(&TokenAccounting) -> Option<f64>| {
        let (mut num, mut den) = (0.0, 0.0);
        for r in runs {
            if let Some(x) = v(&r.tokens) {
                num += w(r) * x;
                den += w(r);
            }
        }
        (den > 0.0).then(|| num / den)
    };
    let ok = |r: &RungSummary| r.completed as f64;
    let usage = |r: &RungSummary| r.tokens.server_usage_requests as f64;
    TokenAccounting {
        requested_input_tokens: weighted(ok, |t| Some(t.requested_input_tokens)).unwrap_or(0.0),
        mean_server_input_tokens: weighted(usage, |t| t.mean_server_input_tokens),
        requested_output_tokens: weighted(ok, |t| Some(t.requested_output_tokens)).unwrap_or(0.0),
        mean_output_tokens: weighted(ok, |t| Some(t.mean_output_tokens)).unwrap_or(0.0),
        mean_server_output_tokens: weighted(usage, |t| t.mean_server_output_tokens),
        server_usage_requests: runs.iter().map(|r| r.tokens.server_usage_requests).sum(),
        untrusted_usage: runs.iter().map(|r| r.tokens.untrusted_usage).sum(),
        untrusted_usage_reason: runs
            .iter()
            .find_map(|r| r.tokens.untrusted_usage_reason.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn run(completed: u64, duration_s: f64, median_ttft: f64) -> RungSummary {
        let mut r = RungSummary {
            rate: 5.0,
            burstiness: 1.0,
            num_prompts: completed,
            completed,
            duration_s,
            request_throughput: completed as f64 / duration_s,
            total_output_tokens: completed * 10,
            output_throughput: (completed * 10) as f64 / duration_s,
            max_concurrent_requests: completed / 10,
            ..Default::default()
        };
        r.latency.insert(
            Latency::Ttft,
            Stats {
                count: completed,
                median: median_ttft,
                ..Default::default()
            },
        );
        r
    }

    #[test]
    fn pooled_rates_are_totals_over_summed_time_and_the_spread_round_trips() {
        let p = pool(
            vec![run(100, 20.0, 30.0), run(100, 25.0, 40.0)],
            BTreeMap::new(),
            None,
        );
        assert_eq!(p.completed, 200);
        assert_eq!(p.duration_s, 45.0);
        assert!((p.request_throughput - 200.0 / 45.0).abs() < 1e-12);
        assert!((p.output_throughput - 2000.0 / 45.0).abs() < 1e-12);
        assert_eq!(p.max_concurrent_requests, 10);
        let text = serde_json::to_string(&p).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["repeats"]["count"], 2);
        assert_eq!(
            v["repeats"]["spread"]["median_ttft_ms"]["values"],
            serde_json::json!([30.0, 40.0])
        );
        // Sample CV of 30 and 40: sd 7.07 / mean 35.
        let cv = v["repeats"]["spread"]["median_ttft_ms"]["cv"]
            .as_f64()
            .unwrap();
        assert!((cv - 7.0711 / 35.0).abs() < 1e-4, "{cv}");
        let back: RungSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(back.repeats.len(), 2);
        assert_eq!(back.repeats[1].stats(Latency::Ttft).median, 40.0);
        // A single-repeat summary has no `repeats` key at all.
        let one = serde_json::to_value(run(10, 1.0, 5.0)).unwrap();
        assert!(one.get("repeats").is_none());
    }
}
