//! Which checks a comparison applies: the scenarios' `gate:` rules, the defaults, and the
//! command line's `--threshold` overrides (`--only`: those alone).

use super::threshold::{self, Check, ThresholdError};
use super::CompareError;
use crate::results::ResultDir;
use crate::scenario::GateRule;

/// The checks to apply: the baseline's `gate:` list (the candidate's first when
/// `candidate_rules_first`), else the other side's, else the defaults; then the overrides
/// (with `only`, the overrides alone). Returns the checks, where they came from, and a
/// warning when the two lists differ.
pub fn checks_for(
    base: &ResultDir,
    cand: &ResultDir,
    overrides: &[Check],
    candidate_rules_first: bool,
    only: bool,
) -> Result<(Vec<Check>, String, Option<String>), CompareError> {
    if only {
        if overrides.is_empty() {
            return Err(CompareError::Threshold(ThresholdError(
                "--only applies the --threshold rules alone, and none was given: add \
                 --threshold METRIC=+10% (or drop --only)"
                    .into(),
            )));
        }
        return Ok((overrides.to_vec(), "--threshold only".to_string(), None));
    }
    let rules = |d: &ResultDir| -> Result<Vec<GateRule>, CompareError> {
        match d.info.scenario.get("gate") {
            None | Some(serde_json::Value::Null) => Ok(Vec::new()),
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| CompareError::BadGate {
                path: d.path.join("run.json").display().to_string(),
                message: e.to_string(),
            }),
        }
    };
    let (cr, br) = (rules(cand)?, rules(base)?);
    let sides = [(&cr, "candidate"), (&br, "baseline")];
    let order = if candidate_rules_first {
        sides
    } else {
        [sides[1], sides[0]]
    };
    let chosen = order.iter().find(|(r, _)| !r.is_empty());
    let (checks, mut source) = match chosen {
        Some((r, side)) => (
            threshold::from_gate_rules(r)?,
            format!("{side} scenario `gate:`"),
        ),
        None => {
            // A pooling API's runs (embeddings) have no TTFT or TPOT to check.
            let api = |d: &ResultDir| {
                d.info
                    .scenario
                    .pointer("/endpoint/api")
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .unwrap_or_default()
            };
            let pooled = [api(cand), api(base)]
                .into_iter()
                .find(|a: &crate::scenario::Api| !a.generates());
            (
                threshold::defaults_for(pooled.unwrap_or_default()),
                "defaults".to_string(),
            )
        }
    };
    let differ = (!cr.is_empty() && !br.is_empty() && cr != br).then(|| {
        let side = chosen.map_or("baseline", |(_, side)| side);
        format!("the two runs' `gate:` rules differ: the {side}'s are used (--threshold overrides)")
    });
    if !overrides.is_empty() {
        source.push_str(" + --threshold");
    }
    Ok((threshold::with_overrides(checks, overrides), source, differ))
}
