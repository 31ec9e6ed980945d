//! The history as JSON (`ladder history --json`): the same [`History`] the terminal table
//! ([`super::Terminal`]) prints, with the verdict and exit code from the same
//! methods ([`History::latest_regressions`], [`History::exit_code`]). Shape: docs/json.md.

use serde_json::{json, Value};

use super::{direction, step_line};
use crate::history::{History, Step};

/// The version of this shape: raised when a field is removed or changes meaning (new fields
/// may be added without raising it).
pub const VERSION: u32 = 1;

fn step(h: &History, s: &Step) -> Value {
    json!({
        "level": s.rate,
        "metric": s.metric,
        // Folder numbers as the terminal table shows them: 1 is the oldest.
        "folder": s.folder + 1,
        "previous": s.previous + 1,
        "before": s.change.before,
        "after": s.change.after,
        "relative_change": s.change.relative(),
        "p_value": s.change.p_value,
        "test": s.change.test.name(),
        "direction": direction(s),
        "regression": s.regression,
        "config_diff": s.config_diff,
        "text": step_line(h, s),
    })
}

/// The JSON document of a history.
pub fn document(h: &History) -> Value {
    let folders: Vec<Value> = h
        .folders
        .iter()
        .enumerate()
        .map(|(i, f)| {
            json!({
                "number": i + 1,
                "name": f.name,
                "path": f.dir.path.display().to_string(),
                "started_at": f.dir.info.started_at.to_rfc3339(),
                "git_commit": f.dir.info.git_commit,
            })
        })
        .collect();
    let mut series = Vec::new();
    for &rate in &h.rates {
        for metric in &h.metrics {
            let values: Vec<Option<f64>> =
                h.folders.iter().map(|f| f.value(rate, metric)).collect();
            series.push(json!({"level": rate, "metric": metric, "values": values}));
        }
    }
    let capacity = h.capacity.as_ref().map(|c| {
        let values: Vec<Value> = (0..h.folders.len())
            .map(|i| match c.of(i) {
                None => Value::Null,
                Some(a) => json!({
                    "capacity": a.point(),
                    "lo": a.file.answer.lo,
                    "hi": a.file.answer.hi,
                    "status": a.file.answer.status,
                    "text": a.file.text,
                }),
            })
            .collect();
        json!({"unit": c.unit(), "slo": c.slo_text(), "values": values})
    });
    let regressions = h.latest_regressions().len();
    json!({
        "version": VERSION,
        "command": "history",
        "verdict": if regressions == 0 { "ok" } else { "regression" },
        "exit_code": h.exit_code(),
        "summary": super::verdict_line(h),
        "load": h.load.name(),
        "unit": h.load.unit(),
        "metrics": h.metrics,
        "levels": h.rates,
        "detect": {
            "alpha": h.detect.alpha,
            "permutations": h.detect.permutations,
            "seed": h.detect.seed,
        },
        "folders": folders,
        "series": series,
        "capacity": capacity,
        "change_points": h.steps.iter().map(|s| step(h, s)).collect::<Vec<_>>(),
        "latest_regressions": regressions,
        "skipped": h.skipped.iter()
            .map(|s| json!({"path": s.path.display().to_string(), "reason": s.reason}))
            .collect::<Vec<_>>(),
        "notes": h.notes,
    })
}
