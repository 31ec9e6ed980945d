//! The names of a rung's metrics: the keys of `result_rate_<rate>.json` that hold a number, which
//! gate rules (`gate:`, `ladder compare --rule`) and history may name.
//!
//! The list lives here, below `metrics`, so that validating a scenario's `gate:` does not reach
//! up into the module that computes them; `metrics::RungSummary::metric_keys` returns it, and a
//! test there checks it against the keys a rung's JSON actually has.

/// The statistics of a latency distribution, in the order its keys are written.
const STATS: [&str; 9] = [
    "mean", "median", "std", "p90", "p95", "p99", "p99.9", "min", "max",
];

/// One group of keys: plain keys, and latency distributions whose keys are `count_<name>` and
/// `<stat>_<name>_ms`. A group's keys are listed sorted, as the rung's JSON object writes them.
struct Group {
    plain: &'static [&'static str],
    latencies: &'static [&'static str],
}

/// The groups in the order they are listed: the rung's own keys, then the reasoning split,
/// the prefix-cache split, the sessions' keys and the derived input throughput.
const GROUPS: [Group; 5] = [
    Group {
        plain: &[
            "achieved_rate",
            "burstiness",
            "completed",
            "duration",
            "error_rate",
            "failed",
            "inexact_prompts",
            "max_concurrent_requests",
            "max_output_tokens_per_s",
            "mean_output_tokens",
            "num_prompts",
            "output_throughput",
            "qps",
            "rate",
            "request_goodput",
            "request_rate",
            "request_throughput",
            "requested_input_tokens",
            "requested_output_tokens",
            "retokenized_outputs",
            "server_usage_requests",
            "total_input_tokens",
            "total_output_tokens",
            "total_token_throughput",
            "untrusted_usage",
            "warmup_requests",
        ],
        latencies: &[
            "dispatch_lag",
            "e2el",
            "e2el_all",
            "e2el_sched",
            "itl",
            "tpot",
            "ttft",
            "ttft_sched",
        ],
    },
    Group {
        plain: &[
            "reasoning_requests",
            "total_content_tokens",
            "total_reasoning_tokens",
        ],
        latencies: &["ttfc"],
    },
    Group {
        plain: &["prefix_groups"],
        latencies: &["ttft_cold", "ttft_warm"],
    },
    Group {
        plain: &[
            "mean_session_duration_ms",
            "session_turns_not_sent",
            "session_turns_planned",
            "sessions",
            "sessions_completed",
        ],
        latencies: &[],
    },
    Group {
        plain: &["input_throughput"],
        latencies: &[],
    },
];

/// Every metric key of a rung, in a fixed order (the order "did you mean" suggestions scan).
pub fn rung_metric_keys() -> Vec<String> {
    let mut out = Vec::new();
    for g in &GROUPS {
        let mut keys: Vec<String> = g.plain.iter().map(|k| k.to_string()).collect();
        for name in g.latencies {
            keys.push(format!("count_{name}"));
            keys.extend(STATS.iter().map(|s| format!("{s}_{name}_ms")));
        }
        keys.sort();
        out.extend(keys);
    }
    out
}
