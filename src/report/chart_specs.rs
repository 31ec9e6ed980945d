//! What the report's charts show: one [`ChartSpec`] per chart of a [`Report`] (latency
//! percentiles, throughput against the offered rate, errors, goodput), drawn by
//! [`super::charts::render_svg`].

use super::chart_data::{error_flags, knee_markers, max_rate, runs, x_name};
use super::chart_model::{
    ChartSpec, Extra, Line, Marker, BLUE_, DARK, GREEN_, GREY_, KNEE, ORANGE_, PALETTE, RED_,
};
use super::{Report, RunReport};
use crate::metrics::{Latency, RungSummary};

fn series(run: &RunReport, f: impl Fn(&RungSummary) -> f64) -> Vec<(f64, f64)> {
    run.rungs.iter().map(|r| (r.rate, f(r))).collect()
}

/// Points of one latency distribution, leaving out rungs where it has no samples (a rung
/// where every request failed has no TTFT; plotting 0 ms there would read as "fast").
fn latency_series(
    run: &RunReport,
    which: Latency,
    get: fn(&crate::metrics::Stats) -> f64,
) -> Vec<(f64, f64)> {
    run.rungs
        .iter()
        .map(|r| (r.rate, r.stats(which)))
        .filter(|(_, s)| s.count > 0)
        .map(|(rate, s)| (rate, get(&s)))
        .collect()
}

/// A percentile chart; `None` when no run recorded any of its statistics (a vLLM file
/// without E2E percentiles): left out, as the rung table's columns are.
fn percentiles(report: &Report, id: &'static str, what: &str, which: Latency) -> Option<ChartSpec> {
    let mut lines = Vec::new();
    let mut unrecorded = false;
    for (run, prefix, dashed) in runs(report) {
        for (name, color, get) in [
            (
                "median",
                BLUE_,
                (|s: &crate::metrics::Stats| s.median) as fn(&_) -> f64,
            ),
            ("p90", ORANGE_, |s| s.p90),
            ("p99", RED_, |s| s.p99),
        ] {
            let points = latency_series(run, which, get);
            // Samples but no value: a statistic the run's files do not hold (a vLLM file
            // writes only the percentiles it was asked for). No curve, no legend entry.
            if !points.is_empty() && points.iter().all(|p| p.1.is_nan()) {
                unrecorded = true;
                continue;
            }
            lines.push(Line {
                label: format!("{prefix}{what} {name}"),
                points,
                color,
                dashed,
                under: false,
            });
        }
    }
    if unrecorded && lines.is_empty() {
        return None;
    }
    // Absent, not empty: rungs completed requests but none has this metric (an endpoint
    // without tokens, e.g. embeddings, has no TTFT); "no successful request" would be false.
    let completed = report
        .runs
        .iter()
        .flat_map(|r| r.rungs.iter())
        .any(|r| r.completed > 0);
    if completed && lines.iter().all(|l| l.points.is_empty()) {
        return None;
    }
    let slo = report
        .runs
        .last()
        .map(|r| r.slo.clone())
        .unwrap_or_default();
    let bound = match which {
        Latency::Ttft => slo.ttft_ms,
        Latency::Tpot => slo.tpot_ms,
        Latency::E2el => slo.e2e_ms,
        _ => None,
    };
    Some(ChartSpec {
        id,
        title: format!("{what} percentiles vs {}", x_name(report)),
        y_desc: format!("{what} (ms)"),
        lines,
        markers: knee_markers(report),
        hline: bound.map(|b| {
            (
                b,
                format!("SLO {what} {} ms", crate::results::rate_label(b)),
            )
        }),
        x_max: max_rate(report),
        extra: Extra {
            flags: error_flags(report),
            ..Extra::default()
        },
    })
}

/// In an overlay, each candidate point of a chart over the ladder annotated with its change
/// against the base at the same level, on the chart's first pair of curves (`base X`,
/// `candidate X`) that are not drawn underneath.
fn annotate_change(report: &Report, spec: &mut ChartSpec) {
    if !report.is_overlay() || spec.extra.x_desc.is_some() {
        return;
    }
    let (b, c) = (&report.runs[0].label, &report.runs[1].label);
    let pair = spec.lines.iter().filter(|l| !l.under).find_map(|base| {
        let what = base.label.strip_prefix(&format!("{b} "))?;
        let cand = spec
            .lines
            .iter()
            .find(|l| l.label == format!("{c} {what}"))?;
        Some((base.points.clone(), cand.points.clone()))
    });
    let Some((base, cand)) = pair else { return };
    for (x, y) in cand {
        let Some(&(_, yb)) = base.iter().find(|p| p.0 == x) else {
            continue;
        };
        if yb.is_finite() && y.is_finite() && yb.abs() > 0.0 {
            let pct = (y - yb) / yb.abs() * 100.0;
            spec.extra.notes.push((x, y, format!("{pct:+.0}%")));
        }
    }
}

/// The y = x reference, from 0 and then sampled geometrically from the lowest rate, so it
/// is a straight line on a linear axis and the right curve on a log axis.
fn ideal_points(report: &Report, max_rate: f64) -> Vec<(f64, f64)> {
    let min_rate = report
        .runs
        .iter()
        .flat_map(|r| r.rungs.iter().map(|r| r.rate))
        .filter(|r| *r > 0.0)
        .fold(max_rate, f64::min);
    let mut points = vec![(0.0, 0.0)];
    if min_rate > 0.0 && max_rate > min_rate {
        points.extend((0..=32).map(|i| {
            let v = min_rate * (max_rate / min_rate).powf(i as f64 / 32.0);
            (v, v)
        }));
    } else {
        points.push((max_rate, max_rate));
    }
    points
}

/// Every chart of the report, in page order.
pub fn specs(report: &Report) -> Vec<ChartSpec> {
    let markers = knee_markers(report);
    let max_rate = max_rate(report);

    // Throughput with the ideal y = x line (a rate ladder only: a concurrency ladder's x
    // is users, and what N users can complete depends on the latency).
    let mut tput = Vec::new();
    if report.load().is_rate() {
        tput.push(Line {
            label: "ideal: throughput = offered rate".into(),
            points: ideal_points(report, max_rate),
            color: GREY_,
            dashed: true,
            under: false,
        });
    }
    for (run, prefix, dashed) in runs(report) {
        // A run that never recorded its goodput (a vLLM file without --goodput) has no
        // curve for it, rather than an empty legend entry; the run's section says so.
        if run.rungs.iter().any(|r| !r.request_goodput.is_nan()) {
            tput.push(Line {
                label: format!("{prefix}goodput (within SLO)/s"),
                points: series(run, |r| r.request_goodput),
                color: GREEN_,
                dashed,
                under: true,
            });
        }
        tput.push(Line {
            label: format!("{prefix}QPS (completed/s)"),
            points: series(run, |r| r.request_throughput),
            color: BLUE_,
            dashed,
            under: false,
        });
    }

    // Error rate by class, in percent; classes that never occurred are left out.
    let mut classes: Vec<String> = report
        .runs
        .iter()
        .flat_map(|r| r.rungs.iter())
        .flat_map(|r| r.errors_by_class.iter())
        .filter(|(_, &n)| n > 0)
        .map(|(k, _)| k.clone())
        .collect();
    classes.sort();
    classes.dedup();
    let mut errs = Vec::new();
    for (run, prefix, dashed) in runs(report) {
        errs.push(Line {
            label: format!("{prefix}all errors"),
            points: series(run, |r| r.error_rate() * 100.0),
            color: DARK,
            dashed,
            under: true,
        });
        for (i, class) in classes.iter().enumerate() {
            errs.push(Line {
                label: format!("{prefix}{class}"),
                points: series(run, |r| {
                    let n = r.completed.saturating_add(r.failed);
                    let k = r.errors_by_class.get(class).copied().unwrap_or(0);
                    if n == 0 {
                        0.0
                    } else {
                        100.0 * k as f64 / n as f64
                    }
                }),
                color: PALETTE[i % PALETTE.len()],
                dashed,
                under: false,
            });
        }
    }
    let slo_err = report
        .runs
        .last()
        .map(|r| r.analysis.max_error_rate * 100.0);

    let mut lag = Vec::new();
    // Only runs that measured their dispatch lag (a vLLM import has none).
    let lagged = |run: &RunReport| {
        run.rungs
            .iter()
            .any(|r| r.stats(Latency::DispatchLag).count > 0)
    };
    for (run, prefix, dashed) in runs(report).into_iter().filter(|(run, _, _)| lagged(run)) {
        lag.push(Line {
            label: format!("{prefix}dispatch lag p50"),
            points: latency_series(run, Latency::DispatchLag, |s| s.median),
            color: BLUE_,
            dashed,
            under: false,
        });
        lag.push(Line {
            label: format!("{prefix}dispatch lag p99"),
            points: latency_series(run, Latency::DispatchLag, |s| s.p99),
            color: RED_,
            dashed,
            under: false,
        });
    }

    let capacity = capacity_chart(report, max_rate);
    let mut all = vec![ChartSpec {
        id: "throughput",
        title: format!("Throughput vs {}", x_name(report)),
        y_desc: "requests/s".into(),
        lines: tput,
        markers: markers.clone(),
        hline: None,
        x_max: max_rate,
        extra: Extra {
            flags: error_flags(report),
            ..Extra::default()
        },
    }];
    all.extend(super::chart_tokens::specs(report));
    all.extend(
        [
            ("ttft", "TTFT", Latency::Ttft),
            ("tpot", "TPOT", Latency::Tpot),
            ("itl", "ITL", Latency::Itl),
            ("e2e", "E2E", Latency::E2el),
        ]
        .into_iter()
        .filter_map(|(id, what, which)| percentiles(report, id, what, which)),
    );
    all.extend(super::chart_rung::specs(report));
    all.push(ChartSpec {
        id: "errors",
        title: format!("Error rate by class vs {}", x_name(report)),
        y_desc: "% of measured requests".into(),
        lines: errs,
        markers: markers.clone(),
        hline: slo_err.map(|v| (v, format!("SLO {v:.1} %"))),
        x_max: max_rate,
        extra: Default::default(),
    });
    if !lag.is_empty() {
        all.push(ChartSpec {
            id: "dispatch-lag",
            title: format!("Client dispatch lag vs {}", x_name(report)),
            y_desc: "send - scheduled (ms)".into(),
            lines: lag,
            markers,
            hline: None,
            x_max: max_rate,
            extra: Default::default(),
        });
    }
    all.extend(capacity);
    all.extend(super::server_charts::specs(report));
    for spec in &mut all {
        annotate_change(report, spec);
        if spec.extra.x_desc.is_none() {
            spec.extra.hlines.extend(gate_lines(report, spec.id));
        }
    }
    all
}

/// The absolute bounds (`max:` / `min:`) of the scenario's `gate:` rules that belong on the
/// chart `id` (the candidate's scenario in an overlay): `gate: p99_ttft_ms <= 500`. Relative
/// rules (`max_increase`, …) are changes, not levels, and draw nothing.
fn gate_lines(report: &Report, id: &str) -> Vec<(f64, String)> {
    let Some(run) = report.runs.last() else {
        return vec![];
    };
    let Some(rules) = run.info.scenario["gate"].as_array() else {
        return vec![];
    };
    let chart = |metric: &str| -> Option<(&'static str, f64)> {
        Some(match metric {
            "error_rate" => ("errors", 100.0),
            "request_throughput" => ("throughput", 1.0),
            "output_throughput" => ("output-tokens", 1.0),
            m if m.ends_with("_ttft_ms") => ("ttft", 1.0),
            m if m.ends_with("_tpot_ms") => ("tpot", 1.0),
            m if m.ends_with("_itl_ms") => ("itl", 1.0),
            m if m.ends_with("_e2el_ms") => ("e2e", 1.0),
            _ => return None,
        })
    };
    let mut out = Vec::new();
    for rule in rules {
        // A metric key is `[a-z0-9_]`: anything else (an edited run.json) is not drawn.
        let Some(metric) = rule["metric"].as_str().filter(|m| {
            m.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        }) else {
            continue;
        };
        let Some((_, scale)) = chart(metric).filter(|(on, _)| *on == id) else {
            continue;
        };
        for (key, op) in [("max", "<="), ("min", ">=")] {
            if let Some(v) = rule[key].as_f64().filter(|v| v.is_finite()) {
                // On the error chart's % axis, the bound in % too.
                let shown = match scale == 100.0 {
                    true => format!("{} %", crate::format::trimmed(v * scale, 2)),
                    false => crate::format::trimmed(v, 4),
                };
                out.push((v * scale, format!("gate: {metric} {op} {shown}")));
            }
        }
    }
    out
}

/// A capacity search's path (docs/capacity.md): its first SLO term's value at each probe
/// (and the upper end of its interval) against the level, the SLO as a horizontal line, and
/// the answer's interval and point as markers. `None` unless a run is a search.
fn capacity_chart(report: &Report, max_rate: f64) -> Option<ChartSpec> {
    let mut lines = Vec::new();
    let mut markers = Vec::new();
    let mut hline = None;
    let mut what = String::new();
    for (run, prefix, dashed) in runs(report) {
        let Some(c) = &run.capacity else { continue };
        let Some(term) = c.slo.first() else { continue };
        let Ok(metric) = crate::capacity::SloMetric::parse(&term.metric) else {
            continue;
        };
        // Error rates and goodput in percent, latencies in ms.
        let scale = if metric.is_fraction() { 100.0 } else { 1.0 };
        // The end of the interval a verdict reads first: the upper for a bound from above,
        // the lower for goodput's floor.
        let floor = metric.is_floor();
        let mut value: Vec<(f64, f64)> = Vec::new();
        let mut upper: Vec<(f64, f64)> = Vec::new();
        for p in &c.probes {
            let Some(t) = p.terms.first() else { continue };
            if let Some(v) = t.value {
                value.push((p.level, v * scale));
            }
            if let Some(h) = if floor { t.lo } else { t.hi } {
                upper.push((p.level, h * scale));
            }
        }
        value.sort_by(|a, b| a.0.total_cmp(&b.0));
        upper.sort_by(|a, b| a.0.total_cmp(&b.0));
        what = metric.label();
        lines.push(Line {
            label: format!("{prefix}{what} at each probe"),
            points: value,
            color: if dashed { GREY_ } else { RED_ },
            dashed,
            under: false,
        });
        lines.push(Line {
            label: format!(
                "{prefix}{} end of its interval",
                if floor { "lower" } else { "upper" }
            ),
            points: upper,
            color: ORANGE_,
            dashed: true,
            under: false,
        });
        let a = &c.answer;
        let color = if dashed { GREY_ } else { KNEE };
        let unit = &c.unit;
        let t = crate::capacity::file::level_text;
        if let Some(lo) = a.lo {
            markers.push(Marker {
                rate: lo,
                label: format!("{prefix}inside {} {unit}", t(lo)),
                color: GREEN_,
            });
        }
        if let Some(x) = a.capacity {
            markers.push(Marker {
                rate: x,
                label: format!("{prefix}capacity {} {unit}", t(x)),
                color,
            });
        }
        if let Some(hi) = a.hi {
            markers.push(Marker {
                rate: hi,
                label: format!("{prefix}outside {} {unit}", t(hi)),
                color: DARK,
            });
        }
        let Some(bound) = term.bound() else { continue };
        hline = Some((
            bound * scale,
            format!(
                "SLO {what} {} {}{}",
                if floor { ">=" } else { "<=" },
                crate::capacity::file::level_text(bound * scale),
                if scale == 100.0 { " %" } else { " ms" }
            ),
        ));
    }
    if lines.is_empty() {
        return None;
    }
    Some(ChartSpec {
        id: "capacity",
        title: format!(
            "Capacity search: {what} at each probe vs {}",
            x_name(report)
        ),
        y_desc: if what == "error rate" {
            "% of measured requests".into()
        } else {
            format!("{what} (ms)")
        },
        lines,
        markers,
        hline,
        x_max: max_rate,
        extra: Default::default(),
    })
}
