//! `summary.csv`: one row per rung (per run in an overlay), plain numbers for spreadsheets.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{Exporter, Report, ReportError};
use crate::metrics::Latency;

/// The CSV exporter.
pub struct Csv;

/// Quote a field when it holds a comma, quote or newline (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number; an empty cell where the run recorded none (NaN: a vLLM file's goodput without
/// `--goodput`, its dispatch lag), never the text `NaN`.
fn num(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else {
        v.to_string()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

/// Latency columns: (distribution, its column prefix).
const LATENCIES: [(Latency, &str); 4] = [
    (Latency::Ttft, "ttft"),
    (Latency::Tpot, "tpot"),
    (Latency::E2el, "e2el"),
    (Latency::DispatchLag, "dispatch_lag"),
];

impl Exporter for Csv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }

    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let classes: BTreeSet<&str> = report
            .runs
            .iter()
            .flat_map(|r| r.rungs.iter())
            .flat_map(|r| r.errors_by_class.keys().map(String::as_str))
            .collect();
        let mut header: Vec<String> = vec!["run".into()];
        for h in ["rate", "num_prompts", "completed", "failed", "error_rate"] {
            header.push(h.into());
        }
        header.extend(classes.iter().map(|c| format!("errors_{c}")));
        for h in [
            "qps",
            "request_goodput",
            "output_throughput",
            "total_token_throughput",
            "achieved_rate",
            "duration_s",
        ] {
            header.push(h.into());
        }
        for (_, k) in LATENCIES {
            for s in ["median", "p90", "p99"] {
                header.push(format!("{s}_{k}_ms"));
            }
        }
        for h in [
            "throughput_multiple",
            "ttft_multiple",
            "tpot_multiple",
            "meets_slo",
            "knee",
            "interrupted",
        ] {
            header.push(h.into());
        }

        let mut out = String::new();
        let _ = writeln!(out, "{}", header.join(","));
        for run in &report.runs {
            let knee = run.analysis.knee.as_ref().map(|k| k.rate);
            for r in &run.rungs {
                let a = run.analysis.rung(r.rate);
                let mut row: Vec<String> = vec![
                    field(&run.label),
                    r.rate.to_string(),
                    r.num_prompts.to_string(),
                    r.completed.to_string(),
                    r.failed.to_string(),
                    num(r.error_rate()),
                ];
                row.extend(
                    classes
                        .iter()
                        .map(|c| r.errors_by_class.get(*c).copied().unwrap_or(0).to_string()),
                );
                for v in [
                    r.request_throughput,
                    r.request_goodput,
                    r.output_throughput,
                    r.total_token_throughput,
                    r.achieved_rate,
                    r.duration_s,
                ] {
                    row.push(num(v));
                }
                for (l, _) in LATENCIES {
                    let s = r.stats(l);
                    for v in [s.median, s.p90, s.p99] {
                        // No sample (a rung with no completed request): the result file
                        // keeps vLLM's 0 beside `count` 0; the sheet leaves the cell empty,
                        // never a 0 ms latency.
                        row.push(if s.count == 0 { String::new() } else { num(v) });
                    }
                }
                row.push(opt(a.and_then(|a| a.throughput_multiple)));
                row.push(opt(a.and_then(|a| a.ttft_multiple)));
                row.push(opt(a.and_then(|a| a.tpot_multiple)));
                row.push(a.map(|a| a.meets_slo.to_string()).unwrap_or_default());
                row.push((Some(r.rate) == knee).to_string());
                row.push(r.interrupted.to_string());
                let _ = writeln!(out, "{}", row.join(","));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn an_unrecorded_value_is_an_empty_cell() {
        assert_eq!(super::num(f64::NAN), "");
        assert_eq!(super::num(1.5), "1.5");
    }

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("base"), "base");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
