//! A ramp rung's report (`load.ramp`): its requests split into equal time windows by their
//! scheduled send time, each with its offered and achieved rate, errors and latency, and
//! whether it met the SLO by the analysis's rule for a rung (see [`super::analysis`]).
//!
//! A window is a small sample (a tenth of the ramp by default), so its percentiles are
//! noisy: the report names the first window that broke the SLO and the first whose median
//! TTFT more than doubled over the first window's, and the user reads the table around them.

use super::analysis::{analyze, TTFT_JUMP_FACTOR};
use super::compute::{summarize, RungContext};
use super::latency::Latency;
use super::ramp_report::{RampReport, RampWindow};
use crate::record::RequestRecord;
use crate::scenario::{LoadKind, RampLoad, Slo};

/// The report of a ramp from its records (every repeat's, pooled: windows are by the
/// scheduled offset, the same in each repeat).
pub fn report(records: &[RequestRecord], ramp: &RampLoad, slo: &Slo) -> RampReport {
    let over = ramp.over.0.as_secs_f64();
    let n = ramp.windows.max(1) as usize;
    let width = over / n as f64;
    let mut by_window: Vec<Vec<RequestRecord>> = vec![Vec::new(); n];
    let mut sends = vec![0u64; n];
    let slot = |secs: f64| ((secs / width).floor().max(0.0) as usize).min(n - 1);
    for r in records.iter().filter(|r| !r.warmup) {
        by_window[slot(r.scheduled.as_secs_f64())].push(r.clone());
        sends[slot(r.sent.as_secs_f64())] += 1;
    }
    let mut windows = Vec::with_capacity(n);
    for (k, recs) in by_window.iter().enumerate() {
        let (a, b) = (k as f64 * width, (k + 1) as f64 * width);
        let s = summarize(
            recs,
            &RungContext {
                rate: ramp.rate_at(a),
                load: LoadKind::Ramp,
                burstiness: 1.0,
                max_concurrency: None,
                slo: slo.clone(),
                inexact_prompts: 0,
                interrupted: false,
                pooling: None,
            },
        );
        let some = |x: f64| (s.completed > 0).then_some(x);
        let (meets, misses) = if recs.is_empty() {
            (None, Vec::new())
        } else {
            let a = analyze(std::slice::from_ref(&s), slo, None);
            let r = &a.rungs[0];
            (Some(r.meets_slo), r.slo_misses.clone())
        };
        windows.push(RampWindow {
            start_s: a,
            end_s: b,
            offered_rate_start: ramp.rate_at(a),
            offered_rate_end: ramp.rate_at(b),
            offered_rate: (ramp.expected(b) - ramp.expected(a)) / width,
            requests: recs.len() as u64,
            completed: s.completed,
            failed: s.failed,
            achieved_rate: sends[k] as f64 / width,
            error_rate: s.error_rate(),
            median_ttft_ms: some(s.stats(Latency::Ttft).median),
            p99_ttft_ms: some(s.stats(Latency::Ttft).p99),
            median_tpot_ms: (s.stats(Latency::Tpot).count > 0)
                .then(|| s.stats(Latency::Tpot).median),
            meets_slo: meets,
            slo_misses: misses,
        });
    }
    let first_outside = windows.iter().position(|w| w.meets_slo == Some(false));
    let base_ttft = windows.iter().find_map(|w| w.median_ttft_ms);
    let first_jump = base_ttft.filter(|b| *b > 0.0).and_then(|base| {
        windows.iter().position(|w| {
            w.median_ttft_ms.is_some_and(|t| {
                t > TTFT_JUMP_FACTOR * base && slo.ttft_ms.is_none_or(|bound| t > bound)
            })
        })
    });
    RampReport {
        from: ramp.from,
        to: ramp.to,
        over_s: over,
        shape: ramp.shape,
        slo_broken_at_rate: first_outside.map(|k| windows[k].offered_rate_start),
        first_window_outside_slo: first_outside,
        first_window_ttft_jump: first_jump,
        windows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ItlGaps, TokenSource};
    use crate::scenario::{DurationStr, RampShape};
    use std::time::Duration;

    fn rec(i: u32, at_s: f64, ttft_ms: u64) -> RequestRecord {
        let at = Duration::from_secs_f64(at_s);
        RequestRecord {
            index: i,
            warmup: false,
            scheduled: at,
            sent: at,
            first_token: Some(at + Duration::from_millis(ttft_ms)),
            first_content: Some(at + Duration::from_millis(ttft_ms)),
            reasoning_tokens: None,
            end: at + Duration::from_millis(ttft_ms + 100),
            input_tokens: 10,
            server_prompt_tokens: Some(10),
            output_tokens: 11,
            token_source: TokenSource::Usage,
            itl: ItlGaps::default(),
            error: None,
            server_completion_tokens: Some(11),
            requested_output_tokens: 11,
            usage_rejected: None,
            resent: false,
            prefix_group: None,
            prefix_first: false,
            session: None,
            model: None,
            images: None,
        }
    }

    #[test]
    fn windows_split_by_schedule_and_name_the_break() {
        let ramp = RampLoad {
            from: 1.0,
            to: 9.0,
            over: DurationStr(Duration::from_secs(4)),
            shape: RampShape::Linear,
            windows: 4,
        };
        // Four requests per window; TTFT 50 ms in the first two windows, 500 ms after.
        let recs: Vec<RequestRecord> = (0..16)
            .map(|i| {
                let t = i as f64 * 0.25;
                rec(i, t, if t < 2.0 { 50 } else { 500 })
            })
            .collect();
        let slo = Slo {
            ttft_ms: Some(200.0),
            ..Slo::default()
        };
        let r = report(&recs, &ramp, &slo);
        assert_eq!(r.windows.len(), 4);
        assert!(r.windows.iter().all(|w| w.requests == 4));
        assert_eq!(r.windows[1].offered_rate_start, 3.0);
        assert_eq!(r.windows[1].offered_rate_end, 5.0);
        assert_eq!(r.windows[1].offered_rate, 4.0);
        assert_eq!(r.windows[0].achieved_rate, 4.0);
        assert_eq!(r.windows[0].median_ttft_ms, Some(50.0));
        assert_eq!(r.windows[3].median_ttft_ms, Some(500.0));
        assert_eq!(r.first_window_outside_slo, Some(2));
        assert_eq!(r.slo_broken_at_rate, Some(5.0));
        assert_eq!(r.first_window_ttft_jump, Some(2));
        assert!(r.verdict().contains("window 3"), "{}", r.verdict());
        assert_eq!(r.markdown_table().lines().count(), 6);
        let back: RampReport = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
