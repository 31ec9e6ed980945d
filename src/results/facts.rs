//! "What was run": the few facts a reviewer needs to read a report handed to them (scenario
//! and its description, model, API, prompt and output lengths, rung size, load, tokenizer,
//! server identity, endpoint), taken from run.json as plain text. Every writer escapes them
//! for its format (`escape::markdown`, `escape::html::esc`; the tables are `report::facts`);
//! the endpoint is run.json's `endpoint`, already shown through
//! `runner::environment::shown_url`, and the scenario is run.json's redacted one
//! (`runner::environment::redacted_scenario`), so no secret the run knew of is in them
//! (folders of older versions are not re-redacted: RELIABILITY.md).

use serde_json::Value;

use super::{rate_label, RunInfo};
use crate::metrics::RungSummary;

/// What a report says of a value its run never recorded (a vLLM result file's endpoint, an
/// older folder's server identity).
pub const NOT_RECORDED: &str = "not recorded";

/// One line of the block: its label and its value, plain text.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub key: &'static str,
    pub value: String,
}

/// True for a folder read from vLLM result files (`results::vllm`).
pub fn imported_from_vllm(info: &RunInfo) -> bool {
    info.scenario["imported_from"].as_str() == Some("vllm")
}

/// A non-empty string at `v`.
fn string(v: &Value) -> Option<String> {
    v.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// A list of numbers as `1, 5, 10`.
fn levels(v: &Value) -> Option<String> {
    let l: Vec<String> = v
        .as_array()?
        .iter()
        .filter_map(Value::as_f64)
        .map(rate_label)
        .collect();
    (!l.is_empty()).then(|| l.join(", "))
}

/// The facts of one run, in the order the block shows them. `rungs` give what an import
/// measured where its files recorded no setting (the mean prompt and output lengths).
pub fn of<'a>(info: &RunInfo, rungs: impl IntoIterator<Item = &'a RungSummary>) -> Vec<Fact> {
    let rungs: Vec<&RungSummary> = rungs.into_iter().collect();
    let rungs = rungs.as_slice();
    let sc = &info.scenario;
    let vllm = imported_from_vllm(info);
    let mut out = Vec::new();
    let mut fact = |key: &'static str, value: String| out.push(Fact { key, value });
    fact(
        "scenario",
        match vllm {
            true => format!("{} (imported from vLLM result files)", info.scenario_name),
            false => info.scenario_name.clone(),
        },
    );
    if let Some(d) = string(&sc["description"]) {
        fact("description", d);
    }
    // A mix reads `base×2, sql-lora×1` (its names and weights).
    let mix = || {
        sc["model"]
            .is_array()
            .then(|| serde_json::from_value::<crate::scenario::ModelSpec>(sc["model"].clone()))
            .and_then(Result::ok)
            .map(|m| m.to_string())
    };
    fact(
        "model",
        string(&sc["model"])
            .or_else(mix)
            .unwrap_or_else(|| NOT_RECORDED.into()),
    );
    fact(
        "API",
        match (string(&sc["endpoint"]["api"]), vllm) {
            (Some(a), true) => format!("vLLM backend {a}"),
            (Some(a), false) => a,
            // serde leaves the default out of nothing: an absent key is the default.
            (None, false) => "completions".into(),
            (None, true) => NOT_RECORDED.into(),
        },
    );
    fact("prompts", prompts(sc, vllm, rungs));
    fact("rung size", rung_size(info, vllm, rungs));
    fact("load", load(info, rungs));
    fact("tokenizer", tokenizer(info));
    fact(
        "server",
        match &info.server {
            Some(s) => {
                let mut t = s.engine.clone();
                if let Some(v) = &s.version {
                    t.push_str(&format!(" {v}"));
                }
                if let Some(m) = &s.model {
                    t.push_str(&format!(", serving {m}"));
                }
                t
            }
            None => NOT_RECORDED.into(),
        },
    );
    fact(
        "endpoint",
        match info.endpoint.trim() {
            "" => NOT_RECORDED.into(),
            e => e.to_string(),
        },
    );
    out
}

/// Prompt and output lengths: `input 128 / output 64 tokens (fixed)`.
fn prompts(sc: &Value, vllm: bool, rungs: &[&RungSummary]) -> String {
    if vllm {
        let (mut i, mut o, mut n) = (0f64, 0f64, 0f64);
        for r in rungs {
            i += r.total_input_tokens as f64;
            o += r.total_output_tokens as f64;
            n += r.completed as f64;
        }
        return match n > 0.0 {
            true => format!(
                "{NOT_RECORDED} (measured: {:.0} input / {:.0} output tokens per completed request)",
                i / n,
                o / n
            ),
            false => NOT_RECORDED.into(),
        };
    }
    let w = &sc["workload"];
    if !w.is_object() {
        return NOT_RECORDED.into();
    }
    let out = w["output_tokens"].as_u64();
    let dataset = string(&w["dataset"]).unwrap_or_else(|| "random".into());
    let mut t = match (dataset.as_str(), w["input_tokens"].as_u64(), out) {
        ("random", Some(i), Some(o)) => {
            let r = w["range_ratio"].as_f64().unwrap_or(0.0);
            let spread = match r > 0.0 {
                true => format!(
                    "range_ratio {}: lengths uniform within ±{:.0} %",
                    r,
                    r * 100.0
                ),
                false => "fixed lengths".into(),
            };
            // A pooled API generates nothing: its shape is the inputs (or the documents
            // scored against a query) each request carries.
            match sc["endpoint"]["api"].as_str() {
                Some("embeddings") => format!(
                    "random, {} input(s) of {i} tokens a request ({spread})",
                    w["batch_size"].as_u64().unwrap_or(1)
                ),
                Some("rerank") => format!(
                    "random, a query of {} tokens and {} document(s) of {i} tokens a request ({spread})",
                    w["query_tokens"]
                        .as_u64()
                        .map_or_else(|| NOT_RECORDED.to_string(), |q| q.to_string()),
                    w["batch_size"].as_u64().unwrap_or(1)
                ),
                _ => format!("random, input {i} / output {o} tokens ({spread})"),
            }
        }
        (d, _, o) => {
            let mut t = match string(&w["path"]) {
                Some(p) => format!("{d} prompts from {p}"),
                None => format!("{d} prompts"),
            };
            if let Some(o) = o {
                t.push_str(&format!(", output {o} tokens"));
            }
            t
        }
    };
    if w["sessions"].is_object() {
        t.push_str("; multi-turn sessions");
    }
    if w["shared_prefix"].is_object() {
        t.push_str("; shared prefixes");
    }
    t
}

/// Requests per rung (or a soak's duration, or a trace's lines), with warmup and repeats.
fn rung_size(info: &RunInfo, vllm: bool, rungs: &[&RungSummary]) -> String {
    let sc = &info.scenario;
    let load = &sc["load"];
    if vllm {
        let mut n: Vec<u64> = rungs.iter().map(|r| r.num_prompts).collect();
        n.dedup();
        return match n.as_slice() {
            [] => NOT_RECORDED.into(),
            [one] => format!("{one} prompts (vLLM --num-prompts)"),
            _ => format!(
                "{} prompts by rung (vLLM --num-prompts)",
                n.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
    }
    let mut t = if let Some(d) = string(&load["duration"]) {
        format!("{d} per rung (soak)")
    } else if let Some(tr) = &info.trace {
        format!("{} trace lines per rung", tr.requests)
    } else {
        match sc["workload"]["requests_per_rung"].as_u64() {
            Some(n) if sc["workload"]["sessions"].is_object() => format!("{n} sessions"),
            Some(n) => format!("{n} requests"),
            None => return NOT_RECORDED.into(),
        }
    };
    if let Some(w) = load["warmup_requests"].as_u64().filter(|w| *w > 0) {
        t.push_str(&format!(" + {w} warmup"));
    }
    if let Some(r) = load["repeats"].as_u64().filter(|r| *r > 1) {
        t.push_str(&format!(", {r} repeats"));
    }
    t
}

/// The ladder and how requests arrive: `rates 1, 5, 10 req/s, poisson arrivals`.
fn load(info: &RunInfo, rungs: &[&RungSummary]) -> String {
    let l = &info.scenario["load"];
    let arrival = || {
        let b = l["burstiness"]
            .as_f64()
            .or_else(|| rungs.first().map(|r| r.burstiness));
        match (string(&l["arrival"]).as_deref(), b) {
            (Some("constant"), _) => "constant arrivals".to_string(),
            (Some("gamma"), Some(b)) => format!("gamma arrivals (burstiness {b})"),
            (Some("poisson"), _) => "poisson arrivals".into(),
            // A vLLM file's burstiness: 1 is Poisson, infinity evenly spaced.
            (None, Some(1.0)) => "poisson arrivals".into(),
            (None, Some(b)) if b.is_infinite() => "constant arrivals".into(),
            (None, Some(b)) => format!("gamma arrivals (burstiness {b})"),
            (Some(a), _) => format!("{a} arrivals"),
            (None, None) => "poisson arrivals".into(),
        }
    };
    let mut t = if let Some(c) = levels(&l["concurrency"]) {
        let mut t = format!("concurrency {c} users (closed loop)");
        if let Some(th) = string(&l["think_time"]) {
            t.push_str(&format!(", think time {th}"));
        }
        t
    } else if l["trace"].is_object() {
        let path = info
            .trace
            .as_ref()
            .map(|t| t.path.clone())
            .or_else(|| string(&l["trace"]["path"]))
            .unwrap_or_else(|| NOT_RECORDED.into());
        let speed = levels(&l["trace"]["speed"]).unwrap_or_else(|| "1".into());
        format!("trace replay of {path} at speed {speed} (x)")
    } else if l["ramp"].is_object() {
        let r = &l["ramp"];
        format!(
            "ramp {} -> {} req/s over {}, {}",
            r["from"].as_f64().map(rate_label).unwrap_or_default(),
            r["to"].as_f64().map(rate_label).unwrap_or_default(),
            string(&r["over"]).unwrap_or_default(),
            arrival()
        )
    } else if let Some(r) = levels(&l["rates"]) {
        format!("rates {r} req/s, {}", arrival())
    } else {
        let r: Vec<String> = rungs.iter().map(|r| rate_label(r.rate)).collect();
        match info.load {
            crate::scenario::LoadKind::Concurrency => {
                format!("concurrency {} users (closed loop)", r.join(", "))
            }
            _ => format!("rates {} req/s, {}", r.join(", "), arrival()),
        }
    };
    if let Some(m) = l["max_concurrency"].as_u64() {
        t.push_str(&format!(", at most {m} in flight"));
    }
    t
}

/// The tokenizer as the scenario names it, with the first digits of its file's hash.
fn tokenizer(info: &RunInfo) -> String {
    let mut t = string(&info.scenario["tokenizer"]).unwrap_or_else(|| NOT_RECORDED.into());
    let sha = info.tokenizer_sha256.trim();
    if !sha.is_empty() && sha.chars().any(|c| c != '0') {
        t.push_str(&format!(" (sha256 {})", &sha[..sha.len().min(12)]));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run.json with `scenario` as the resolved scenario.
    fn info(scenario: serde_json::Value) -> RunInfo {
        serde_json::from_value(serde_json::json!({
            "format_version": 1, "tool_version": "0.1.0", "scenario_name": "s",
            "scenario_file": "s.yaml", "scenario": scenario, "git_commit": null,
            "tokenizer_sha256": "", "endpoint": "http://gpu:8000",
            "host": { "hostname": "h", "os": "linux", "arch": "x86_64", "cpus": 2 },
            "started_at": "2026-01-02T03:04:05Z", "ended_at": null, "status": "complete",
            "status_detail": null, "rungs": [], "warnings": []
        }))
        .unwrap()
    }

    fn value(facts: &[Fact], key: &str) -> String {
        facts.iter().find(|f| f.key == key).unwrap().value.clone()
    }

    #[test]
    fn each_kind_of_ladder_says_its_load_and_rung_size() {
        let soak = info(serde_json::json!({
            "model": "m", "tokenizer": "t.json",
            "workload": { "dataset": "sharegpt", "path": "sg.json", "output_tokens": 64,
                          "requests_per_rung": 200 },
            "load": { "rates": [2], "arrival": "gamma", "burstiness": 0.5,
                      "duration": "10m", "warmup_requests": 0 }
        }));
        let f = of(&soak, []);
        assert_eq!(value(&f, "rung size"), "10m per rung (soak)");
        assert_eq!(
            value(&f, "load"),
            "rates 2 req/s, gamma arrivals (burstiness 0.5)"
        );
        assert_eq!(
            value(&f, "prompts"),
            "sharegpt prompts from sg.json, output 64 tokens"
        );
        assert_eq!(value(&f, "endpoint"), "http://gpu:8000");
        assert_eq!(value(&f, "server"), NOT_RECORDED);
        assert!(!f.iter().any(|f| f.key == "description"));

        let closed = info(serde_json::json!({
            "workload": { "input_tokens": 128, "output_tokens": 64, "requests_per_rung": 50,
                          "sessions": { "turns": 3 } },
            "load": { "concurrency": [1, 4, 16], "think_time": "1s", "repeats": 3,
                      "warmup_requests": 4 }
        }));
        let f = of(&closed, []);
        assert_eq!(
            value(&f, "load"),
            "concurrency 1, 4, 16 users (closed loop), think time 1s"
        );
        assert_eq!(value(&f, "rung size"), "50 sessions + 4 warmup, 3 repeats");
        assert_eq!(
            value(&f, "prompts"),
            "random, input 128 / output 64 tokens (fixed lengths); multi-turn sessions"
        );
        assert_eq!(value(&f, "model"), NOT_RECORDED);

        let trace = info(serde_json::json!({
            "load": { "trace": { "path": "t.jsonl", "speed": [1, 2] }, "max_concurrency": 64 }
        }));
        assert_eq!(
            value(&of(&trace, []), "load"),
            "trace replay of t.jsonl at speed 1, 2 (x), at most 64 in flight"
        );
        let ramp = info(serde_json::json!({
            "load": { "ramp": { "from": 1, "to": 20, "over": "60s" }, "arrival": "constant" }
        }));
        assert_eq!(
            value(&of(&ramp, []), "load"),
            "ramp 1 -> 20 req/s over 60s, constant arrivals"
        );
        // Pooled APIs generate nothing: their requests' inputs, not an output length.
        let embed = info(serde_json::json!({
            "endpoint": { "api": "embeddings" },
            "workload": { "input_tokens": 24, "output_tokens": 256, "batch_size": 3 }
        }));
        assert_eq!(
            value(&of(&embed, []), "prompts"),
            "random, 3 input(s) of 24 tokens a request (fixed lengths)"
        );
        let rerank = info(serde_json::json!({
            "endpoint": { "api": "rerank" },
            "workload": { "input_tokens": 600, "output_tokens": 256, "query_tokens": 8 }
        }));
        assert_eq!(
            value(&of(&rerank, []), "prompts"),
            "random, a query of 8 tokens and 1 document(s) of 600 tokens a request (fixed lengths)"
        );
    }
}
