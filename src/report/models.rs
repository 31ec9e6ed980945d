//! The table of a model mix (`model` a weighted list): one row per rung and model, with the
//! model's share of the rung's requests, its throughput and its main latencies. A plain
//! view model (header and rows of text) that every format renders with its own escaper.

use super::sessions::Table;
use super::RunReport;
use crate::metrics::Latency;
use crate::results::rate_label;

/// What the per-model table's columns mean.
pub(crate) const MODELS_NOTE: &str = "each request named one model of the mix; a model's \
     req/s and output tok/s are over the rung's duration, so the models' add up to the rung's; \
     latencies are of the model's successful requests.";

fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "-".into()
    }
}

/// The per-model rows of every rung; `None` when no rung has a breakdown.
pub(crate) fn models_table(run: &RunReport) -> Option<Table> {
    if run.rungs.iter().all(|r| r.models.is_empty()) {
        return None;
    }
    let pooled = super::pooled(run);
    let mut header = vec![
        run.info.load.axis(),
        "model",
        "requests",
        "share",
        "ok",
        "failed",
        "req/s",
    ];
    header.extend(if pooled {
        vec!["median E2E (ms)", "p99 E2E (ms)"]
    } else {
        vec![
            "output tok/s",
            "median TTFT (ms)",
            "p99 TTFT (ms)",
            "median TPOT (ms)",
            "p99 TPOT (ms)",
        ]
    });
    let mut rows = Vec::new();
    for r in &run.rungs {
        for m in &r.models {
            let share = if r.num_prompts > 0 {
                format!(
                    "{:.1} %",
                    100.0 * m.num_prompts as f64 / r.num_prompts as f64
                )
            } else {
                "-".into()
            };
            let mut row = vec![
                rate_label(r.rate),
                m.model.clone(),
                m.num_prompts.to_string(),
                share,
                m.completed.to_string(),
                m.failed.to_string(),
                crate::format::num(m.request_throughput),
            ];
            if pooled {
                let e = m.stats(Latency::E2el);
                row.extend([ms(e.median), ms(e.p99)]);
            } else {
                let (t, p) = (m.stats(Latency::Ttft), m.stats(Latency::Tpot));
                row.extend([
                    crate::format::num(m.output_throughput),
                    ms(t.median),
                    ms(t.p99),
                    ms(p.median),
                    ms(p.p99),
                ]);
            }
            rows.push(row);
        }
    }
    Some((header, rows))
}
