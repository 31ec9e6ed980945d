//! The tables of a session rung (`workload.sessions`): sessions as units per rung, and TTFT
//! by turn index (which rises with the history each turn carries).

use super::RunReport;
use crate::metrics::RungSummary;
use crate::results::rate_label;

/// What the session tables' columns mean.
pub(crate) const SESSIONS_NOTE: &str = "a rate rung's rate is sessions started per second; \
     a session is complete when every planned turn succeeded; a failed turn ends its session, \
     and its later turns are not sent (counted neither completed nor failed); duration is from \
     a complete session's first send to its last answer.";

/// Header and rows of a table.
pub(crate) type Table = (Vec<&'static str>, Vec<Vec<String>>);

/// The level column's header: a rate rung of sessions starts sessions per second.
fn axis(run: &RunReport) -> &'static str {
    match run.info.load {
        crate::scenario::LoadKind::Rate => "rate (sessions/s)",
        other => other.axis(),
    }
}

fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "-".into()
    }
}

/// The sessions per rung; `None` when no rung has sessions.
pub(crate) fn sessions_table(run: &RunReport) -> Option<Table> {
    let rungs: Vec<&RungSummary> = run.rungs.iter().filter(|r| r.sessions.is_some()).collect();
    if rungs.is_empty() {
        return None;
    }
    let header = vec![
        axis(run),
        "sessions",
        "complete",
        "turns planned",
        "turns not sent",
        "mean duration (ms)",
    ];
    let rows = rungs
        .iter()
        .filter_map(|r| {
            let s = r.sessions.as_ref()?;
            Some(vec![
                rate_label(r.rate),
                s.sessions.to_string(),
                s.completed.to_string(),
                s.turns_planned.to_string(),
                s.turns_not_sent.to_string(),
                ms(s.mean_duration_ms),
            ])
        })
        .collect();
    Some((header, rows))
}

/// TTFT by turn index, one row per rung and turn; `None` when no rung has sessions.
pub(crate) fn turns_table(run: &RunReport) -> Option<Table> {
    let header = vec![
        axis(run),
        "turn",
        "requests",
        "ok",
        "TTFT p50 (ms)",
        "TTFT p99 (ms)",
        "mean prompt tokens",
    ];
    let mut rows = Vec::new();
    for r in &run.rungs {
        for t in r.sessions.iter().flat_map(|s| &s.by_turn) {
            rows.push(vec![
                rate_label(r.rate),
                t.turn.to_string(),
                t.requests.to_string(),
                t.completed.to_string(),
                ms(t.median_ttft_ms),
                ms(t.p99_ttft_ms),
                format!("{:.0}", t.mean_prompt_tokens),
            ]);
        }
    }
    (!rows.is_empty()).then_some((header, rows))
}
