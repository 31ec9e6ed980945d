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
///
/// Starts and ends are sorted apart as whole nanoseconds (16 bytes a span, sorted in place:
/// a million spans a rung, both sides of a comparison at once) and walked together, an end
/// before a start at the same instant.
pub fn max_in_flight_of(spans: impl ExactSizeIterator<Item = (Duration, Duration)>) -> u64 {
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let (mut starts, mut ends) = (
        Vec::with_capacity(spans.len()),
        Vec::with_capacity(spans.len()),
    );
    for (sent, end) in spans {
        starts.push(nanos(sent));
        ends.push(nanos(end.max(sent)));
    }
    starts.sort_unstable();
    ends.sort_unstable();
    // Signed, as a zero-length span's end leaves before its start arrives.
    let (mut cur, mut best, mut e) = (0i64, 0i64, 0usize);
    for s in starts {
        // Every end at or before this start leaves first.
        while e < ends.len() && ends[e] <= s {
            cur -= 1;
            e += 1;
        }
        cur += 1;
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
    let mut buckets = Buckets::default();
    for (_, first, gaps) in ok() {
        let Some(mut t) = first else { continue };
        buckets.add(t.saturating_sub(t0).as_secs());
        for gap in gaps {
            t += gap;
            buckets.add(t.saturating_sub(t0).as_secs());
        }
    }
    buckets.fullest() as f64
}

/// Seconds a rung can span in the dense buckets (about 12 days); later seconds (a line's
/// absurd gap) go to a sparse map, so memory stays bounded whatever the times say.
const DENSE_SECONDS: u64 = 1 << 20;

/// Counts per whole second: a vector indexed by the second (a token costs an increment, not
/// a tree lookup: 16 M tokens a rung at a million requests), a map past [`DENSE_SECONDS`].
#[derive(Default)]
struct Buckets {
    dense: Vec<u64>,
    sparse: BTreeMap<u64, u64>,
}

impl Buckets {
    fn add(&mut self, second: u64) {
        if second < DENSE_SECONDS {
            let i = second as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, 0);
            }
            self.dense[i] += 1;
        } else {
            *self.sparse.entry(second).or_default() += 1;
        }
    }

    fn fullest(&self) -> u64 {
        let dense = self.dense.iter().copied().max().unwrap_or(0);
        dense.max(self.sparse.values().copied().max().unwrap_or(0))
    }
}

/// Measured requests sent per second over the sending window (first to last send) of
/// `sends` requests; 0 with fewer than two sends or no window.
pub fn achieved_rate(sends: u64, first: Option<Duration>, last: Option<Duration>) -> f64 {
    match (first, last) {
        (Some(a), Some(b)) if b > a && sends > 1 => (sends - 1) as f64 / (b - a).as_secs_f64(),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks far past the dense buckets' seconds (a line's absurd gaps) are counted in
    /// their own seconds, as the map before them counted every second.
    #[test]
    fn peak_output_rate_counts_seconds_past_the_dense_range() {
        let s = Duration::from_secs;
        let far = s(DENSE_SECONDS + 5);
        // One request: 2 chunks in second 1, then 3 chunks in second DENSE_SECONDS + 6.
        let gaps = [Duration::ZERO, far, Duration::ZERO, Duration::ZERO];
        let one = || std::iter::once((s(0), Some(s(1)), gaps.iter().copied()));
        assert_eq!(peak_output_rate(one), 3.0);
        let none = || std::iter::empty::<(Duration, Option<Duration>, std::vec::IntoIter<_>)>();
        assert_eq!(peak_output_rate(none), 0.0);
    }

    /// The edge sweep the two sorted lists replaced: one list of (instant, ±1), ends first
    /// at an instant.
    fn in_flight_by_edges(spans: &[(Duration, Duration)]) -> u64 {
        let mut edges: Vec<(Duration, i64)> = vec![];
        for &(sent, end) in spans {
            edges.push((sent, 1));
            edges.push((end.max(sent), -1));
        }
        edges.sort();
        let (mut cur, mut best) = (0i64, 0i64);
        for (_, d) in edges {
            cur += d;
            best = best.max(cur);
        }
        best as u64
    }

    #[test]
    fn max_in_flight_agrees_with_the_edge_sweep_on_ties_and_empty_spans() {
        let ms = Duration::from_millis;
        // Back to back (an end at the next start: not overlapping), zero-length spans, an
        // end before its send (counted as ending at the send), the same span twice.
        let cases: [&[(Duration, Duration)]; 4] = [
            &[(ms(0), ms(10)), (ms(10), ms(20)), (ms(20), ms(30))],
            &[(ms(5), ms(5)), (ms(5), ms(5)), (ms(5), ms(6))],
            &[(ms(9), ms(3)), (ms(0), ms(10)), (ms(0), ms(10))],
            &[],
        ];
        for spans in cases {
            let got = max_in_flight_of(spans.iter().copied());
            assert_eq!(got, in_flight_by_edges(spans), "{spans:?}");
        }
        // The span sent at 9 ends at its send: it leaves before it arrives, so 2, not 3.
        assert_eq!(max_in_flight_of(cases[2].iter().copied()), 2);
        assert_eq!(max_in_flight_of(cases[0].iter().copied()), 1);
        // Seeded random spans with many ties (times on a 1 ms grid).
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..200 {
            let n = next(40) as usize;
            let spans: Vec<_> = (0..n).map(|_| (ms(next(30)), ms(next(40)))).collect();
            assert_eq!(
                max_in_flight_of(spans.iter().copied()),
                in_flight_by_edges(&spans)
            );
        }
    }
}
