//! The pooled summary of a rung measured several times (`load.repeats`, `bless --add`)
//! against its repeats' summaries and the lines of them all; each repeat's own lines are
//! checked against its own summary by `check::lines`.

use std::path::Path;

use super::{bad, close, latency_stats};
use crate::metrics::RungSummary;
use crate::results::load_error::LoadError;
use crate::results::names::result_file_name;
use crate::results::types::RequestLine;

/// A pooled summary against its repeats and the lines of them all.
pub(super) fn pooled(
    path: &Path,
    s: &RungSummary,
    all: &[(usize, &RequestLine)],
) -> Result<(), LoadError> {
    let sum = |f: fn(&RungSummary) -> u64| s.repeats.iter().map(f).sum::<u64>();
    let counts = [
        ("completed", s.completed, sum(|r| r.completed)),
        ("failed", s.failed, sum(|r| r.failed)),
        (
            "warmup_requests",
            s.warmup_requests,
            sum(|r| r.warmup_requests),
        ),
        (
            "total_output_tokens",
            s.total_output_tokens,
            sum(|r| r.total_output_tokens),
        ),
        (
            "total_input_tokens",
            s.total_input_tokens,
            sum(|r| r.total_input_tokens),
        ),
    ];
    for (key, pooled, from_runs) in counts {
        if pooled != from_runs {
            return Err(bad(
                path,
                format!(
                    "{} says {key} {pooled}, but its repeats add up to {from_runs}",
                    result_file_name(s.rate)
                ),
            ));
        }
    }
    let duration: f64 = s.repeats.iter().map(|r| r.duration_s).sum();
    let per_s = |x: u64| {
        if duration > 0.0 {
            x as f64 / duration
        } else {
            0.0
        }
    };
    for (key, pooled, from_runs) in [
        ("duration", s.duration_s, duration),
        (
            "request_throughput",
            s.request_throughput,
            per_s(s.completed),
        ),
        (
            "output_throughput",
            s.output_throughput,
            per_s(s.total_output_tokens),
        ),
    ] {
        if !close(pooled, from_runs) {
            return Err(bad(
                path,
                format!(
                    "{} says {key} {pooled}, but its repeats give {from_runs}",
                    result_file_name(s.rate)
                ),
            ));
        }
    }
    let measured: Vec<&RequestLine> = all
        .iter()
        .map(|&(_, l)| l)
        .filter(|l| !l.warmup && !super::abandoned(l))
        .collect();
    latency_stats(path, s, &measured)?;
    let finished: Vec<(usize, &RequestLine)> = all
        .iter()
        .copied()
        .filter(|(_, l)| !super::abandoned(l))
        .collect();
    super::derived::pooled(path, s, &finished)
}
