//! Token charts: output tokens/s against the ladder (the server's total, and one user's
//! speed = 1/TPOT), and the frontier: latency against the throughput achieved. Left out
//! when no rung produced output tokens (an embeddings endpoint has none, nor a TTFT).

use super::chart_data::{error_flags, error_label, knee_markers, max_rate, runs, x_name};
use super::chart_model::{ChartSpec, Extra, Line, BLUE_, GREEN_, ORANGE_, RED_};
use super::Report;
use crate::metrics::{Latency, RungSummary};
use crate::results::rate_label;

/// `(level, value)` of the rungs where `f` has a finite, positive value.
fn points(rungs: &[RungSummary], f: impl Fn(&RungSummary) -> Option<f64>) -> Vec<(f64, f64)> {
    rungs
        .iter()
        .filter_map(|r| {
            f(r).filter(|v| v.is_finite() && *v > 0.0)
                .map(|v| (r.rate, v))
        })
        .collect()
}

/// A latency statistic of a rung, where it has samples.
fn stat(r: &RungSummary, which: Latency, get: fn(&crate::metrics::Stats) -> f64) -> Option<f64> {
    let s = r.stats(which);
    (s.count > 0).then(|| get(&s))
}

/// The three token charts, each left out when it would be empty.
pub fn specs(report: &Report) -> Vec<ChartSpec> {
    let max = max_rate(report);
    let flags = error_flags(report);
    let mut total = Vec::new();
    let mut user = Vec::new();
    let mut frontier = Vec::new();
    let mut notes = Vec::new();
    for (run, prefix, dashed) in runs(report) {
        let l = |label: String, points, color| Line {
            label,
            points,
            color,
            dashed,
            under: false,
        };
        total.push(l(
            format!("{prefix}output tokens/s (all users)"),
            points(&run.rungs, |r| Some(r.output_throughput)),
            BLUE_,
        ));
        for (name, get, color) in [
            (
                "median user (1000 / TPOT p50)",
                (|s: &crate::metrics::Stats| s.median) as fn(&_) -> f64,
                GREEN_,
            ),
            ("slowest 1 % (1000 / TPOT p99)", |s| s.p99, RED_),
        ] {
            user.push(l(
                format!("{prefix}{name}"),
                points(&run.rungs, |r| {
                    stat(r, Latency::Tpot, get)
                        .filter(|t| *t > 0.0)
                        .map(|t| 1000.0 / t)
                }),
                color,
            ));
        }
        // The frontier: each rung at (output tokens/s achieved, its TTFT).
        let at = |get: fn(&crate::metrics::Stats) -> f64| -> Vec<(f64, f64)> {
            run.rungs
                .iter()
                .filter_map(|r| {
                    let x = r.output_throughput;
                    let y = stat(r, Latency::Ttft, get)?;
                    (x.is_finite() && x > 0.0 && y.is_finite()).then_some((x, y))
                })
                .collect()
        };
        frontier.push(l(format!("{prefix}TTFT p50"), at(|s| s.median), BLUE_));
        frontier.push(l(format!("{prefix}TTFT p99"), at(|s| s.p99), ORANGE_));
        for r in &run.rungs {
            let (x, y) = (r.output_throughput, stat(r, Latency::Ttft, |s| s.p99));
            if let Some(y) = y.filter(|_| x.is_finite() && x > 0.0) {
                let err = r.error_rate();
                let mut t = rate_label(r.rate);
                if err > 0.0 {
                    t.push_str(&format!(" ({})", error_label(err)));
                }
                notes.push((x, y, t));
            }
        }
    }
    let keep =
        |v: Vec<Line>| -> Vec<Line> { v.into_iter().filter(|l| !l.points.is_empty()).collect() };
    let slo = report
        .runs
        .last()
        .map(|r| r.slo.clone())
        .unwrap_or_default();
    let mut out = Vec::new();
    let total = keep(total);
    if !total.is_empty() {
        out.push(ChartSpec {
            id: "output-tokens",
            title: format!("Output tokens/s vs {}", x_name(report)),
            y_desc: "output tokens/s".into(),
            lines: total,
            markers: knee_markers(report),
            hline: None,
            x_max: max,
            extra: Extra {
                flags: flags.clone(),
                ..Extra::default()
            },
        });
    }
    let user = keep(user);
    if !user.is_empty() {
        out.push(ChartSpec {
            id: "per-user-tokens",
            title: format!("One user's output speed vs {}", x_name(report)),
            y_desc: "tokens/s per user".into(),
            lines: user,
            markers: knee_markers(report),
            hline: slo
                .tpot_ms
                .filter(|t| *t > 0.0)
                .map(|t| (1000.0 / t, format!("SLO TPOT {} ms", rate_label(t)))),
            x_max: max,
            extra: Extra {
                flags,
                ..Extra::default()
            },
        });
    }
    let frontier = keep(frontier);
    if !frontier.is_empty() {
        out.push(ChartSpec {
            id: "frontier",
            title: "Latency vs throughput (each point a rung)".into(),
            y_desc: "TTFT (ms)".into(),
            lines: frontier,
            markers: vec![],
            hline: slo
                .ttft_ms
                .map(|t| (t, format!("SLO TTFT {} ms", rate_label(t)))),
            x_max: 0.0,
            extra: Extra {
                x_desc: Some("output tokens/s achieved".into()),
                notes,
                ..Extra::default()
            },
        });
    }
    out
}
