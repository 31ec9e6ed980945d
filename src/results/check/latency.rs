//! A rung summary's latency statistics against the request lines' samples, each
//! distribution recomputed as the writer computed it (`check::lines` calls it for one run,
//! `pooled` for a pool).

use std::path::Path;

use super::{bad, close};
use crate::metrics::compute::{stats_micros, stats_unordered};
use crate::metrics::{Latency, RungSummary, Stats};
use crate::results::load_error::LoadError;
use crate::results::names::result_file_name;
use crate::results::types::RequestLine;

pub(in crate::results) fn latency_stats(
    path: &Path,
    s: &RungSummary,
    measured: &[&RequestLine],
) -> Result<(), LoadError> {
    let ttfc = s.reasoning.is_some().then_some(Latency::Ttfc);
    for which in s.latencies().chain(ttfc) {
        let recomputed = if which == Latency::Itl {
            // Tens of gaps a request: the radix path the writer used (whole microseconds,
            // as ladder stores gaps; an older file's finer values round by under half a
            // microsecond, inside `close`'s 1 µs), not a sort of them all.
            let us = |x: &f64| (x * 1000.0).round().clamp(0.0, f64::from(u32::MAX)) as u32;
            stats_micros(|| {
                measured
                    .iter()
                    .filter(|l| l.ok)
                    .flat_map(|l| l.itl_ms.iter().map(us))
            })
        } else {
            stats_unordered(samples(which, measured))
        };
        let stored = s.stats(which);
        if let Some(stat) = differs(&stored, &recomputed) {
            return Err(bad(
                path,
                format!(
                    "{} says {stat} of {} is {}, but these request lines give {}",
                    result_file_name(s.rate),
                    which.key(),
                    stat_value(&stored, stat),
                    stat_value(&recomputed, stat)
                ),
            ));
        }
    }
    Ok(())
}

/// The samples of one distribution, as the summary was computed from the records.
pub(crate) fn samples(which: Latency, measured: &[&RequestLine]) -> Vec<f64> {
    let ok = || measured.iter().filter(|l| l.ok);
    let since = |a: f64, b: f64| (a - b).max(0.0);
    match which {
        Latency::Ttft => ok().filter_map(|l| l.ttft_ms).collect(),
        Latency::Tpot => ok().filter_map(|l| l.tpot_ms).collect(),
        Latency::Itl => ok().flat_map(|l| l.itl_ms.iter().copied()).collect(),
        Latency::E2el => ok().map(|l| l.e2e_ms).collect(),
        Latency::TtftSched => ok()
            .filter_map(|l| l.first_token_ms.map(|f| since(f, l.scheduled_ms)))
            .collect(),
        Latency::E2elSched => ok().map(|l| since(l.end_ms, l.scheduled_ms)).collect(),
        Latency::E2elAll => measured.iter().map(|l| l.e2e_ms).collect(),
        Latency::DispatchLag => measured
            .iter()
            .map(|l| since(l.sent_ms, l.scheduled_ms))
            .collect(),
        Latency::Ttfc => ok().filter_map(|l| l.ttfc_ms()).collect(),
    }
}

/// The first statistic on which two summaries of one distribution disagree.
fn differs(a: &Stats, b: &Stats) -> Option<&'static str> {
    if a.count != b.count {
        return Some("count");
    }
    [
        ("mean", a.mean, b.mean),
        ("median", a.median, b.median),
        ("std", a.std, b.std),
        ("p90", a.p90, b.p90),
        ("p95", a.p95, b.p95),
        ("p99", a.p99, b.p99),
        ("p99.9", a.p999, b.p999),
        ("min", a.min, b.min),
        ("max", a.max, b.max),
    ]
    .into_iter()
    .find(|(_, x, y)| !close(*x, *y))
    .map(|(k, _, _)| k)
}

fn stat_value(s: &Stats, name: &str) -> String {
    match name {
        "count" => s.count.to_string(),
        "mean" => s.mean.to_string(),
        "median" => s.median.to_string(),
        "std" => s.std.to_string(),
        "p90" => s.p90.to_string(),
        "p95" => s.p95.to_string(),
        "p99" => s.p99.to_string(),
        "p99.9" => s.p999.to_string(),
        "min" => s.min.to_string(),
        _ => s.max.to_string(),
    }
}
