//! What a ramp rung's report holds ([`RampReport`]: the ramp and its windows, written as the
//! `ramp` key of the result file) and how it reads as a table and a sentence. Built from the
//! records by [`super::ramp::report`].

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::scenario::RampShape;

/// The ramp's definition and its windows, written as the `ramp` key of the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampReport {
    /// Offered rate at the start, req/s.
    pub from: f64,
    /// Offered rate at the end, req/s.
    pub to: f64,
    /// Length of the ramp, seconds.
    pub over_s: f64,
    /// How the rate rose.
    pub shape: RampShape,
    /// The windows in time order.
    pub windows: Vec<RampWindow>,
    /// 0-based index of the first window with requests that missed the SLO.
    pub first_window_outside_slo: Option<usize>,
    /// Offered rate at the start of that window, req/s: the SLO broke at an offered rate
    /// between this and the window's end rate.
    pub slo_broken_at_rate: Option<f64>,
    /// 0-based index of the first window whose median TTFT is more than twice the first
    /// window's (and above `slo.ttft_ms` when set), as the knee's TTFT-jump rule.
    pub first_window_ttft_jump: Option<usize>,
}

/// One time window of a ramp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampWindow {
    /// Window start, seconds from the rung start.
    pub start_s: f64,
    /// Window end, seconds.
    pub end_s: f64,
    /// Offered rate at the window's start and end, req/s.
    pub offered_rate_start: f64,
    /// See `offered_rate_start`.
    pub offered_rate_end: f64,
    /// Mean offered rate over the window (expected arrivals / length), req/s.
    pub offered_rate: f64,
    /// Measured requests scheduled in the window.
    pub requests: u64,
    /// Of those, completed.
    pub completed: u64,
    /// Of those, failed.
    pub failed: u64,
    /// Measured requests actually sent in the window, per second.
    pub achieved_rate: f64,
    /// failed / (completed + failed).
    pub error_rate: f64,
    /// Median TTFT of the completed requests, ms (`null` without any).
    pub median_ttft_ms: Option<f64>,
    /// 99th percentile TTFT, ms.
    pub p99_ttft_ms: Option<f64>,
    /// Median TPOT, ms.
    pub median_tpot_ms: Option<f64>,
    /// Whether the window met the SLO (`null` for a window without requests).
    pub meets_slo: Option<bool>,
    /// Why it did not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo_misses: Vec<String>,
}

/// Seconds with at most one decimal, trailing zeros dropped: `0`, `0.5`, `12`.
fn secs(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map(String::from).unwrap_or(s)
}

fn opt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.1}"))
}

impl RampReport {
    /// Rows of the window table: start–end seconds, offered range, achieved rate, requests,
    /// errors, p50/p99 TTFT, p50 TPOT, SLO.
    pub fn rows(&self) -> Vec<[String; 9]> {
        self.windows
            .iter()
            .map(|w| {
                [
                    format!("{}-{}s", secs(w.start_s), secs(w.end_s)),
                    format!("{:.1}-{:.1}", w.offered_rate_start, w.offered_rate_end),
                    format!("{:.1}", w.achieved_rate),
                    w.requests.to_string(),
                    format!("{:.1}%", w.error_rate * 100.0),
                    opt(w.median_ttft_ms),
                    opt(w.p99_ttft_ms),
                    opt(w.median_tpot_ms),
                    match w.meets_slo {
                        Some(true) => "ok".into(),
                        Some(false) => "MISS".into(),
                        None => "-".into(),
                    },
                ]
            })
            .collect()
    }

    /// Column names of [`RampReport::rows`].
    pub const HEADERS: [&'static str; 9] = [
        "window", "offered", "achieved", "requests", "errors", "p50 TTFT", "p99 TTFT", "p50 TPOT",
        "SLO",
    ];

    /// One sentence on where the ramp broke (or that it did not).
    pub fn verdict(&self) -> String {
        let mut s = match (self.first_window_outside_slo, self.slo_broken_at_rate) {
            (Some(k), Some(r)) => {
                let w = &self.windows[k];
                format!(
                    "SLO first missed in window {} ({}-{}s), offered {r:.1}-{:.1} req/s: {}",
                    k + 1,
                    secs(w.start_s),
                    secs(w.end_s),
                    w.offered_rate_end,
                    w.slo_misses.join("; ")
                )
            }
            _ => format!(
                "SLO met in every window up to {:.1} req/s",
                self.windows.last().map_or(self.to, |w| w.offered_rate_end)
            ),
        };
        match self.first_window_ttft_jump {
            Some(k) => {
                let w = &self.windows[k];
                let _ = write!(
                    s,
                    "; median TTFT more than doubled from the first window in window {} (offered {:.1}-{:.1} req/s)",
                    k + 1,
                    w.offered_rate_start,
                    w.offered_rate_end
                );
            }
            None => s.push_str("; median TTFT never doubled over the first window's"),
        }
        s
    }

    /// The window table as aligned text for the terminal.
    pub fn text_table(&self) -> String {
        let mut out = String::new();
        let line = |cells: &[String]| -> String {
            let widths = [9, 11, 9, 9, 7, 9, 9, 9, 5];
            cells
                .iter()
                .zip(widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let h: Vec<String> = Self::HEADERS.iter().map(|s| s.to_string()).collect();
        let _ = writeln!(out, "{}", line(&h));
        for r in self.rows() {
            let _ = writeln!(out, "{}", line(&r));
        }
        out
    }

    /// The window table in Markdown (rates in req/s, latencies in ms).
    pub fn markdown_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "| {} |", Self::HEADERS.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(Self::HEADERS.len()));
        for r in self.rows() {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        out
    }
}
