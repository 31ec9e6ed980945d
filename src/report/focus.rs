//! One rung looked at closely (the knee, else the highest rung): the distribution of its
//! TTFT and E2E and its course over time (sends, completions, requests in flight, TTFT by
//! send time), read from its request lines. Kept small: a CDF is at most [`CDF_POINTS`]
//! points, a time series [`BINS`] bins, whatever the rung's size.

use crate::results::{LoadedRung, RequestLine, ResultDir};

/// Points of a CDF curve.
pub const CDF_POINTS: usize = 200;

/// Most bins of a time series (fewer for a small rung: about 6 requests a bin, at least 8
/// bins, so a bin's rate is not one request's).
pub const BINS: usize = 40;

/// The rung looked at closely.
#[derive(Debug, Clone)]
pub struct Focus {
    /// Its level (rate or users).
    pub rate: f64,
    /// Why this rung: `chosen` (`--rung`), `knee`, or `highest rung` (no knee).
    pub why: &'static str,
    /// TTFT CDF of its measured successes: (ms, % at or below).
    pub ttft: Vec<(f64, f64)>,
    /// E2E CDF of its measured successes: (ms, % at or below).
    pub e2e: Vec<(f64, f64)>,
    /// Its course over time; `None` when its lines carry no send times (an older vLLM file).
    pub timeline: Option<Timeline>,
}

/// A rung over time, in bins of its first repeat's duration (warmup included: warm-up and
/// queue build-up are what the view is for).
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// Requests sent per second: (s since the rung's start, req/s).
    pub sends: Vec<(f64, f64)>,
    /// Successes ended per second.
    pub completions: Vec<(f64, f64)>,
    /// Failures ended per second (empty when none failed).
    pub failures: Vec<(f64, f64)>,
    /// Requests in flight at each bin's middle.
    pub in_flight: Vec<(f64, f64)>,
    /// Median TTFT of the successes sent in each bin (ms).
    pub ttft_median: Vec<(f64, f64)>,
    /// Highest TTFT of the successes sent in each bin (ms).
    pub ttft_max: Vec<(f64, f64)>,
    /// When the last warmup request ended (s), when the rung had warmups.
    pub warmup_end: Option<f64>,
    /// The rung ran more than one repeat: the series is of the first.
    pub first_of_repeats: bool,
}

/// The rung to look at in `rd`: the `chosen` one (`--rung`), else the knee of `knee`, else
/// the highest rung that completed something; `None` when its lines cannot be read or hold
/// no success.
pub fn of(rd: &ResultDir, knee: Option<f64>, chosen: Option<f64>) -> Option<Focus> {
    let label = crate::results::rate_label;
    let why = match (chosen, knee) {
        (Some(_), _) => "chosen",
        (None, Some(_)) => "knee",
        (None, None) => "highest rung",
    };
    let knee = chosen.or(knee);
    let pick = |r: &&LoadedRung| match knee {
        Some(k) => label(r.summary.rate) == label(k),
        None => r.summary.completed > 0,
    };
    let rung = match knee {
        Some(_) => rd.rungs.iter().find(pick),
        None => rd
            .rungs
            .iter()
            .filter(pick)
            .max_by(|a, b| a.summary.rate.total_cmp(&b.summary.rate)),
    }?;
    let lines = rd.requests(rung).ok()?;
    let measured = || lines.iter().filter(|l| l.ok && !l.warmup);
    let ttft: Vec<f64> = measured().filter_map(|l| l.ttft_ms).collect();
    let e2e: Vec<f64> = measured().map(|l| l.end_ms - l.sent_ms).collect();
    if e2e.is_empty() {
        return None;
    }
    let sent_times = match &rd.imported {
        Some(_) => {
            let i = rd.rungs.iter().position(|r| r.entry == rung.entry)?;
            rd.imported_send_times.get(i).copied().unwrap_or(false)
        }
        None => true,
    };
    Some(Focus {
        rate: rung.summary.rate,
        why,
        ttft: cdf(ttft),
        e2e: cdf(e2e),
        timeline: sent_times.then(|| timeline(&lines)).flatten(),
    })
}

/// At most [`CDF_POINTS`] points of the empirical CDF of `v` (finite values only).
pub fn cdf(mut v: Vec<f64>) -> Vec<(f64, f64)> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return vec![];
    }
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(CDF_POINTS + 1);
    for i in 0..=CDF_POINTS {
        let q = i as f64 / CDF_POINTS as f64;
        // The smallest value with at least a share q of the samples at or below it.
        let k = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
        let p = (v[k], 100.0 * (k + 1) as f64 / n as f64);
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    out
}

/// The first repeat's lines in [`BINS`] bins; `None` when they span no time.
fn timeline(lines: &[RequestLine]) -> Option<Timeline> {
    let first = lines.iter().map(|l| l.repeat).min()?;
    let repeats = lines.iter().any(|l| l.repeat != first);
    let lines: Vec<&RequestLine> = lines.iter().filter(|l| l.repeat == first).collect();
    let ok_time = |t: f64| t.is_finite() && t >= 0.0;
    let end = lines
        .iter()
        .flat_map(|l| [l.sent_ms, l.end_ms])
        .filter(|t| ok_time(*t))
        .fold(0.0, f64::max);
    if end <= 0.0 {
        return None;
    }
    let bins = (lines.len() / 6).clamp(8, BINS);
    let w = end / bins as f64;
    let bin = |t: f64| ((t / w) as usize).min(bins - 1);
    let per_s = 1000.0 / w;
    let mut sends = vec![0u64; bins];
    let mut done = vec![0u64; bins];
    let mut failed = vec![0u64; bins];
    let mut ttft: Vec<Vec<f64>> = vec![Vec::new(); bins];
    for l in lines
        .iter()
        .filter(|l| ok_time(l.sent_ms) && ok_time(l.end_ms))
    {
        sends[bin(l.sent_ms)] += 1;
        match l.ok {
            true => done[bin(l.end_ms)] += 1,
            false => failed[bin(l.end_ms)] += 1,
        }
        if let Some(t) = l.ttft_ms.filter(|t| l.ok && t.is_finite()) {
            ttft[bin(l.sent_ms)].push(t);
        }
    }
    let mid = |k: usize| (k as f64 + 0.5) * w / 1000.0;
    let rate = |c: &[u64]| -> Vec<(f64, f64)> {
        c.iter()
            .enumerate()
            .map(|(k, n)| (mid(k), *n as f64 * per_s))
            .collect()
    };
    let mut t = Timeline {
        sends: rate(&sends),
        completions: rate(&done),
        failures: match failed.iter().any(|n| *n > 0) {
            true => rate(&failed),
            false => vec![],
        },
        warmup_end: lines
            .iter()
            .filter(|l| l.warmup && ok_time(l.end_ms))
            .map(|l| l.end_ms / 1000.0)
            .reduce(f64::max),
        first_of_repeats: repeats,
        ..Timeline::default()
    };
    for (k, v) in ttft.iter_mut().enumerate() {
        let at = (k as f64 + 0.5) * w;
        let n = lines
            .iter()
            .filter(|l| l.sent_ms <= at && l.end_ms > at)
            .count();
        t.in_flight.push((mid(k), n as f64));
        if !v.is_empty() {
            v.sort_by(f64::total_cmp);
            t.ttft_median.push((mid(k), v[(v.len() - 1) / 2]));
            t.ttft_max.push((mid(k), v[v.len() - 1]));
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cdf_ends_at_100_and_rises() {
        let c = cdf((1..=1000).map(f64::from).collect());
        assert!(c.len() <= CDF_POINTS + 1);
        assert_eq!(c.last().unwrap(), &(1000.0, 100.0));
        assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        // The median point: half the samples at or below 500.
        assert!(c.contains(&(500.0, 50.0)), "{c:?}");
        assert_eq!(cdf(vec![f64::NAN]), vec![]);
        assert_eq!(cdf(vec![3.0]), vec![(3.0, 100.0)]);
    }
}
