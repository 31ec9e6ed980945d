//! Live figures of a rung in progress (for the progress bar), from an HDR histogram so the
//! running median costs O(1) memory whatever the rung size.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::record::RequestRecord;

/// Counters and a TTFT histogram updated as records arrive.
#[derive(Debug)]
pub struct LiveStats {
    /// Records received (warmup included).
    pub done: u64,
    /// Failed records received.
    pub errors: u64,
    ttft_us: Histogram<u64>,
    first_end: Option<Duration>,
    last_end: Duration,
    ok_measured: u64,
}

impl Default for LiveStats {
    fn default() -> Self {
        LiveStats {
            done: 0,
            errors: 0,
            // 1 µs .. 1 h at 3 significant digits.
            ttft_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            first_end: None,
            last_end: Duration::ZERO,
            ok_measured: 0,
        }
    }
}

impl LiveStats {
    /// Account one finished request.
    pub fn record(&mut self, r: &RequestRecord) {
        self.done += 1;
        if !r.ok() {
            self.errors += 1;
        }
        if r.warmup {
            return;
        }
        if let Some(t) = r.ttft() {
            let _ = self.ttft_us.record((t.as_micros() as u64).max(1));
        }
        if r.ok() {
            self.ok_measured += 1;
            self.first_end = Some(self.first_end.map_or(r.end, |f| f.min(r.end)));
            self.last_end = self.last_end.max(r.end);
        }
    }

    /// Median TTFT so far, in milliseconds (0 before the first token).
    pub fn p50_ttft_ms(&self) -> f64 {
        if self.ttft_us.is_empty() {
            0.0
        } else {
            self.ttft_us.value_at_quantile(0.5) as f64 / 1000.0
        }
    }

    /// Completions per second between the first and the latest completion.
    pub fn qps(&self) -> f64 {
        match self.first_end {
            Some(f) if self.last_end > f && self.ok_measured > 1 => {
                (self.ok_measured - 1) as f64 / (self.last_end - f).as_secs_f64()
            }
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_median_and_rate() {
        let mut l = LiveStats::default();
        for i in 0..11u64 {
            l.record(&RequestRecord {
                sent: Duration::ZERO,
                first_token: Some(Duration::from_millis(100 + i)),
                end: Duration::from_millis(1000 + 100 * i),
                ..Default::default()
            });
        }
        assert_eq!(l.done, 11);
        assert!((l.p50_ttft_ms() - 105.0).abs() < 0.2);
        assert!((l.qps() - 10.0).abs() < 1e-9);
    }
}
