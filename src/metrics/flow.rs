//! How a rung's requests flowed, from their times: the send rate achieved, the peak number
//! in flight, the peak output rate. Over records (`compute::summarize`) or over anything
//! that gives the same times (request lines read back, for the tamper check).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::record::RequestRecord;

/// Highest number of requests in flight at once (send to end), over all records.
pub fn max_in_flight(records: &[RequestRecord]) -> u64 {
    max_in_flight_of(records.iter().map(|r| (r.sent, r.end)))
}

/// [`max_in_flight`] of `(sent, end)` spans (records, or request lines read back).
pub fn max_in_flight_of(spans: impl ExactSizeIterator<Item = (Duration, Duration)>) -> u64 {
    let mut edges: Vec<(Duration, i64)> = Vec::with_capacity(spans.len() * 2);
    for (sent, end) in spans {
        edges.push((sent, 1));
        edges.push((end.max(sent), -1));
    }
    // Ends sort before starts at the same instant.
    edges.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut cur, mut best) = (0i64, 0i64);
    for (_, d) in edges {
        cur += d;
        best = best.max(cur);
    }
    best as u64
}

/// vLLM's `max_output_tokens_per_s`: token chunk arrival times (first token, then each
/// inter-token gap) of the successful requests, counted in whole-second buckets from the
/// first successful send; the fullest bucket. 0 without a success.
pub fn max_output_tokens_per_s(ok: &[&RequestRecord]) -> f64 {
    peak_output_rate(|| ok.iter().map(|r| (r.sent, r.first_token, r.itl.iter())))
}

/// [`max_output_tokens_per_s`] of `(sent, first token, ITL gaps)` of each successful
/// request (records, or request lines read back); `ok` is called once per pass.
pub fn peak_output_rate<I, G>(ok: impl Fn() -> I) -> f64
where
    I: Iterator<Item = (Duration, Option<Duration>, G)>,
    G: Iterator<Item = Duration>,
{
    let Some(t0) = ok().map(|r| r.0).min() else {
        return 0.0;
    };
    let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
    for (_, first, gaps) in ok() {
        let Some(mut t) = first else { continue };
        *buckets.entry(t.saturating_sub(t0).as_secs()).or_default() += 1;
        for gap in gaps {
            t += gap;
            *buckets.entry((t.saturating_sub(t0)).as_secs()).or_default() += 1;
        }
    }
    buckets.values().copied().max().unwrap_or(0) as f64
}

/// Measured requests sent per second over the sending window (first to last send) of
/// `sends` requests; 0 with fewer than two sends or no window.
pub fn achieved_rate(sends: u64, first: Option<Duration>, last: Option<Duration>) -> f64 {
    match (first, last) {
        (Some(a), Some(b)) if b > a && sends > 1 => (sends - 1) as f64 / (b - a).as_secs_f64(),
        _ => 0.0,
    }
}
