//! The comparison as JSON (`ladder compare --json`, `ladder gate --json`): the same
//! [`Comparison`] the terminal table ([`super::Terminal`]) prints, and the verdict, counts and
//! exit code from the same methods ([`Comparison::failed`], [`Comparison::no_verdict`],
//! [`Comparison::exit_code`]), so the two views cannot disagree. Shape: docs/json.md.

use serde_json::{json, Value};

use super::summary_line;
use crate::compare::explain::interval;
use crate::compare::{Comparison, Row, Scale, Verdict};

/// The version of this shape: raised when a field is removed or changes meaning (new fields
/// may be added without raising it).
pub const VERSION: u32 = 1;

/// The overall verdict word: `pass`, `fail` or `no_verdict` (as the summary line's
/// `PASS` / `FAIL` / `NO VERDICT`).
pub fn verdict(c: &Comparison, strict: bool) -> &'static str {
    if c.failed(strict) {
        "fail"
    } else if c.no_verdict() {
        "no_verdict"
    } else {
        "pass"
    }
}

fn verdict_key(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Improvement => "improvement",
        Verdict::PastSaturation => "past_saturation",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Regression => "regression",
    }
}

fn row(r: &Row) -> Value {
    let interval = r.decision.interval.map(|(scale, i)| {
        json!({
            "scale": match scale {
                Scale::Ratio => "ratio",
                Scale::Diff => "difference",
                Scale::Value => "value",
            },
            "lo": i.lo,
            "hi": i.hi,
            "text": interval(r.decision.interval),
        })
    });
    let mut v = json!({
        // A capacity check judges the searches' answers, not one rung: no level.
        "level": (!r.rate.is_nan()).then_some(r.rate),
        "metric": r.check.metric,
        "threshold": r.check.threshold_text(),
        "base": r.base,
        "candidate": r.cand,
        "delta": r.delta(),
        "pct_change": r.pct(),
        "interval": interval,
        "method": r.method.to_string(),
        "verdict": verdict_key(r.decision.verdict),
        "note": (!r.decision.note.is_empty()).then_some(&r.decision.note),
    });
    // Only a rule on one model of a mix has the key: other rows are as before.
    if let Some(m) = &r.check.model {
        v["model"] = Value::from(m.clone());
    }
    v
}

/// The JSON document of a comparison; `command` is `compare` or `gate`.
pub fn document(c: &Comparison, strict: bool, command: &str) -> Value {
    let knee = |k: &Option<(f64, String)>| k.as_ref().map(|(level, _)| *level);
    let counts = json!({
        "checks": c.rows.len(),
        "pass": c.count(Verdict::Pass),
        "improvement": c.count(Verdict::Improvement),
        "past_saturation": c.count(Verdict::PastSaturation),
        "inconclusive": c.count(Verdict::Inconclusive),
        "regression": c.count(Verdict::Regression),
    });
    let mut out = json!({
        "version": VERSION,
        "command": command,
        "verdict": verdict(c, strict),
        "exit_code": c.exit_code(strict),
        "summary": summary_line(c, strict),
        "strict": strict,
        "baseline": c.base_label,
        "candidate": c.cand_label,
        "scenario": c.scenario,
        "load": c.load.name(),
        "unit": c.load.unit(),
        "config_diff": c.config_diff,
        "config_changes": c.config_changes,
        "warnings": c.warnings,
        "checks_source": c.checks_source,
        "knee": {
            "baseline": knee(&c.knee.base),
            "candidate": knee(&c.knee.cand),
            "text": c.knee.describe(),
        },
        "family": {
            "level": c.family.level,
            "checks": c.family.size,
            "per_check_level": c.family.per_check,
            "drift_in_intervals": c.family.drift,
            "text": c.family.describe(),
        },
        "run_noise": {
            "baseline_runs": c.run_noise.base,
            "candidate_runs": c.run_noise.cand,
            "measured": c.run_noise.measured(),
            "assumed_drift": c.run_noise.assumed,
            "text": c.run_noise.describe(),
        },
        "counts": counts,
        "rows": c.rows.iter().map(row).collect::<Vec<_>>(),
        "server_notes": c.server_notes.iter()
            .map(|(level, note)| json!({"level": level, "note": note}))
            .collect::<Vec<_>>(),
    });
    // Only a comparison of model mixes has these keys: others' JSON is as before.
    if !c.model_rows.is_empty() {
        out["model_rows"] = c
            .model_rows
            .iter()
            .map(|r| {
                json!({"level": r.rate, "model": r.model, "metric": r.metric,
                       "baseline": r.base, "candidate": r.cand})
            })
            .collect();
    }
    out
}
