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

    /// Median TTFT so far as a reader sees it: `-` before the first token, and always for a
    /// pooled API (embeddings), whose answers have none.
    pub fn p50_ttft_text(&self) -> String {
        if self.ttft_us.is_empty() {
            "-".into()
        } else {
            format!("{:.0} ms", self.p50_ttft_ms())
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

/// The records of one interval of a rung run for a duration, for its live line: what
/// finished in the interval, not since the start.
#[derive(Debug)]
pub struct Window {
    /// Records received in the interval (warmup included).
    pub done: u64,
    /// Failed measured ones among them (warmup excluded, as in the summary's `failed`).
    pub errors: u64,
    /// Successful measured ones among them.
    pub ok: u64,
    /// Output tokens of the successful measured ones.
    pub output_tokens: u64,
    ttft_us: Histogram<u64>,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            done: 0,
            errors: 0,
            ok: 0,
            output_tokens: 0,
            ttft_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
        }
    }
}

impl Window {
    /// Account one finished request.
    pub fn record(&mut self, r: &RequestRecord) {
        self.done += 1;
        if r.warmup {
            return;
        }
        if !r.ok() {
            self.errors += 1;
            return;
        }
        self.ok += 1;
        self.output_tokens += u64::from(r.output_tokens);
        if let Some(t) = r.ttft() {
            let _ = self.ttft_us.record((t.as_micros() as u64).max(1));
        }
    }

    /// TTFT quantile `q` (0..1) of the interval, in milliseconds (3 significant digits);
    /// `None` when no successful request of the interval had a first token.
    pub fn ttft_ms(&self, q: f64) -> Option<f64> {
        (!self.ttft_us.is_empty()).then(|| self.ttft_us.value_at_quantile(q) as f64 / 1000.0)
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

    #[test]
    fn a_window_counts_its_interval_only() {
        let mut w = Window::default();
        assert_eq!(w.ttft_ms(0.5), None);
        for i in 0..100u64 {
            w.record(&RequestRecord {
                first_token: Some(Duration::from_millis(1 + i)),
                end: Duration::from_millis(200),
                output_tokens: 4,
                ..Default::default()
            });
        }
        w.record(&RequestRecord {
            error: Some(crate::record::RequestError {
                class: crate::record::ErrorClass::Timeout,
                status: None,
                detail: String::new(),
            }),
            ..Default::default()
        });
        assert_eq!(
            (w.done, w.ok, w.errors, w.output_tokens),
            (101, 100, 1, 400)
        );
        let q = |x| w.ttft_ms(x).unwrap();
        assert!((q(0.5) - 50.0).abs() < 0.1, "{}", q(0.5));
        assert!((q(0.99) - 99.0).abs() < 0.1, "{}", q(0.99));
        // A failed warmup request is no failure of the rung's (the summary's `failed`).
        w.record(&RequestRecord {
            warmup: true,
            error: Some(crate::record::RequestError {
                class: crate::record::ErrorClass::Timeout,
                status: None,
                detail: String::new(),
            }),
            ..Default::default()
        });
        assert_eq!((w.done, w.errors), (102, 1));
    }
}
