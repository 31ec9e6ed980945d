//! What changed between two runs' configurations: a unified diff of the resolved scenarios
//! and environments, and the differences that make a comparison meaningless.

use serde_json::{json, Value};
use similar::TextDiff;

use crate::results::{ResultDir, RunInfo};

/// Pretty JSON with sorted keys and a final line break.
fn text_of(v: &Value) -> String {
    // serde_json's Map is a BTreeMap here (no preserve_order), so keys come out sorted.
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// The value diffed for a run: its resolved scenario and its environment (timestamps and
/// status are left out: they always differ).
fn config_value(info: &RunInfo) -> Value {
    // A soak's count of requests is unused (an older run.json recorded the default): no
    // change to show between an older soak and a newer one.
    let mut scenario = info.scenario.clone();
    if !scenario["load"]["duration"].is_null() {
        if let Some(w) = scenario["workload"].as_object_mut() {
            w.remove("requests_per_rung");
        }
    }
    json!({
        "scenario": scenario,
        "environment": {
            "tool_version": info.tool_version,
            "tokenizer_sha256": info.tokenizer_sha256,
            "endpoint": info.endpoint,
            "host": info.host,
        }
    })
}

/// True for a value a vLLM import holds for a setting its files never record: run.json's
/// synthesised empty strings, nulls, and the zero count of its unknown host's CPUs.
fn unrecorded(key: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => key == "cpus" && n.as_u64() == Some(0),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Leave out of both sides every setting the imported side `imp` never had (absent, or
/// [`unrecorded`]): a diff line of an empty value against a real one says nothing.
fn prune(imp: &mut Value, other: &mut Value) {
    let (Value::Object(a), Value::Object(b)) = (imp, other) else {
        return;
    };
    let keys: Vec<String> = a.keys().chain(b.keys()).cloned().collect();
    for k in keys {
        if let (Some(x), Some(y)) = (a.get_mut(&k), b.get_mut(&k)) {
            if x.is_object() && y.is_object() {
                prune(x, y);
            }
        }
        if a.get(&k).is_none_or(|x| unrecorded(&k, x)) {
            a.remove(&k);
            b.remove(&k);
        }
    }
}

/// Unified diff of the two configurations, or `None` when they are equal. A side imported
/// from vLLM result files records no scenario, endpoint or host: what it never had is left
/// out of both texts (compare's warning about the import says so, once).
pub fn unified(base: &RunInfo, cand: &RunInfo) -> Option<String> {
    let (mut a, mut b) = (config_value(base), config_value(cand));
    let vllm = |i: &RunInfo| crate::results::facts::imported_from_vllm(i);
    if vllm(base) {
        prune(&mut a, &mut b);
    }
    if vllm(cand) {
        prune(&mut b, &mut a);
    }
    let (a, b) = (text_of(&a), text_of(&b));
    if a == b {
        return None;
    }
    Some(
        TextDiff::from_lines(&a, &b)
            .unified_diff()
            .context_radius(3)
            .header("baseline", "candidate")
            .to_string(),
    )
}

/// Differences that change what is being measured: model, workload, tokenizer. A
/// comparison across them is refused unless `--allow-config-change`.
pub fn fundamental_changes(base: &RunInfo, cand: &RunInfo) -> Vec<String> {
    let mut out = Vec::new();
    let field = |i: &RunInfo, k: &str| i.scenario.get(k).cloned().unwrap_or(Value::Null);
    // A soak's run.json has no requests_per_rung (an older one recorded the unused default).
    let timed = |i: &RunInfo| !i.scenario["load"]["duration"].is_null();
    let unused = |mut w: Value| {
        if timed(base) || timed(cand) {
            w.as_object_mut().map(|o| o.remove("requests_per_rung"));
        }
        w
    };
    for k in ["model", "workload"] {
        let (a, b) = (field(base, k), field(cand, k));
        let (a, b) = if k == "workload" {
            (unused(a), unused(b))
        } else {
            (a, b)
        };
        if a != b {
            out.push(format!("different {k}: baseline {a}, candidate {b}"));
        }
    }
    if base.tokenizer_sha256 != cand.tokenizer_sha256 {
        out.push(format!(
            "different tokenizer (sha256 {} vs {})",
            short(&base.tokenizer_sha256),
            short(&cand.tokenizer_sha256)
        ));
    }
    // A replayed trace is the workload: a changed file (same path, other lines) is one.
    if let (Some(a), Some(b)) = (&base.trace, &cand.trace) {
        if a.sha256 != b.sha256 {
            out.push(format!(
                "different trace (sha256 {} vs {})",
                short(&a.sha256),
                short(&b.sha256)
            ));
        }
    }
    out
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

/// When either side was imported from vLLM result files (which record no scenario), the
/// differences that can still be seen: the mean prompt and output length per completed
/// request, beyond 10 %. `None` when both sides are ladder's own folders.
pub fn imported_changes(base: &ResultDir, cand: &ResultDir) -> Option<Vec<String>> {
    if base.imported.is_none() && cand.imported.is_none() {
        return None;
    }
    let per_request = |d: &ResultDir, tokens: fn(&crate::metrics::RungSummary) -> u64| {
        // Sums in f64: counts read from a file may be anything up to u64::MAX (a tampered
        // or absurd file must not overflow; an absurd mean then reads as a change).
        let (t, n) = d.rungs.iter().fold((0f64, 0f64), |(t, n), r| {
            (
                t + tokens(&r.summary) as f64,
                n + r.summary.completed as f64,
            )
        });
        (n > 0.0).then(|| t / n)
    };
    let mut out = Vec::new();
    for (what, tokens) in [
        (
            "prompt",
            (|s| s.total_input_tokens) as fn(&crate::metrics::RungSummary) -> u64,
        ),
        ("output", |s| s.total_output_tokens),
    ] {
        if let (Some(a), Some(b)) = (per_request(base, tokens), per_request(cand, tokens)) {
            if (a - b).abs() > 0.1 * a.max(b) {
                out.push(format!(
                    "different {what} length: baseline {a:.0} tokens per request, candidate {b:.0}"
                ));
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an import never had is out of both texts; what it has is still compared.
    #[test]
    fn an_imports_unrecorded_settings_are_left_out_of_both_sides() {
        let mut vllm = json!({
            "scenario": { "model": "m", "tokenizer": "", "imported_from": "vllm",
                          "endpoint": { "base_url": "", "api": "openai" },
                          "load": { "rates": [1.0] } },
            "environment": { "endpoint": "", "tokenizer_sha256": "", "tool_version": "v",
                             "host": { "hostname": "", "os": "", "arch": "", "cpus": 0 } }
        });
        let mut ladder = json!({
            "scenario": { "model": "m", "tokenizer": "t.json", "slo": { "ttft_ms": 1.0 },
                          "endpoint": { "base_url": "http://h", "api": "chat" },
                          "load": { "rates": [1.0], "arrival": "poisson" } },
            "environment": { "endpoint": "http://h", "tokenizer_sha256": "ab", "tool_version": "w",
                             "host": { "hostname": "x", "os": "linux", "arch": "a", "cpus": 8 } }
        });
        prune(&mut vllm, &mut ladder);
        assert_eq!(
            ladder,
            json!({
                "scenario": { "model": "m", "endpoint": { "api": "chat" },
                              "load": { "rates": [1.0] } },
                "environment": { "tool_version": "w" }
            })
        );
        assert_eq!(vllm["scenario"]["imported_from"], "vllm");
        assert_eq!(vllm["environment"], json!({ "tool_version": "v" }));
    }
}
