//! `ladder init`: a commented scenario file written from a few settings (flags, or a vLLM
//! benchmark command line converted by [`super::from_vllm`]).
//!
//! The text is written by hand rather than serialised, so that each key carries a comment
//! saying what it means and where its value came from; a test loads every rendering back
//! through the real loader.

use std::fmt::Write as _;

/// Settings of a new scenario. Fields left `None` get the documented defaults in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub name: String,
    pub description: Option<String>,
    pub base_url: String,
    /// `completions` or `chat`.
    pub api: String,
    pub api_key_env: Option<String>,
    pub headers: Vec<(String, String)>,
    pub model: String,
    pub tokenizer: String,
    /// `random`, `jsonl` or `sharegpt`.
    pub dataset: String,
    pub dataset_path: Option<String>,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub range_ratio: Option<f64>,
    pub ignore_eos: bool,
    pub requests_per_rung: u32,
    pub seed: u64,
    /// `poisson`, `gamma` or `constant`.
    pub arrival: String,
    pub burstiness: Option<f64>,
    pub baseline_rate: Option<f64>,
    pub rates: Vec<f64>,
    pub cooldown: String,
    pub max_concurrency: Option<u32>,
    pub slo_ttft_ms: Option<f64>,
    pub slo_tpot_ms: Option<f64>,
    pub slo_e2e_ms: Option<f64>,
    /// Lines for the file's head comment (where the settings came from).
    pub origin: Vec<String>,
}

impl Default for Draft {
    fn default() -> Self {
        Draft {
            name: "my-ladder".into(),
            description: None,
            base_url: "http://127.0.0.1:8000".into(),
            api: "completions".into(),
            api_key_env: None,
            headers: Vec::new(),
            model: "my-model".into(),
            tokenizer: "tokenizer.json".into(),
            dataset: "random".into(),
            dataset_path: None,
            input_tokens: 512,
            output_tokens: 256,
            range_ratio: None,
            ignore_eos: true,
            requests_per_rung: 200,
            seed: 0,
            arrival: "poisson".into(),
            burstiness: None,
            baseline_rate: Some(1.0),
            rates: vec![5.0, 10.0, 20.0, 30.0, 40.0, 50.0],
            cooldown: "10s".into(),
            max_concurrency: None,
            slo_ttft_ms: None,
            slo_tpot_ms: None,
            slo_e2e_ms: None,
            origin: Vec::new(),
        }
    }
}

/// A YAML scalar: plain when YAML reads it back as the same string, quoted otherwise.
fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@+".contains(c))
        && !s.starts_with(['-', ':', '@'])
        && s.parse::<f64>().is_err()
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~"
        );
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string serialises")
    }
}

/// A number as YAML writes it (`5`, `0.5`).
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The scenario file text.
pub fn render(d: &Draft) -> String {
    let mut o = String::new();
    // The origin holds a pasted command line: every line of it stays a comment line.
    for line in &d.origin {
        o.push_str(&crate::escape::yaml::comment(line));
    }
    let _ = writeln!(
        o,
        "# Check it with `ladder validate FILE`, run it with `ladder run FILE`. Editor completion:"
    );
    let _ = writeln!(
        o,
        "# `ladder schema > scenario.v1.json` and a first line `# yaml-language-server: $schema=scenario.v1.json`."
    );
    let _ = writeln!(o, "version: 1");
    let _ = writeln!(
        o,
        "name: {}                 # results go to results/<name>/<timestamp>/",
        scalar(&d.name)
    );
    if let Some(desc) = &d.description {
        let _ = writeln!(o, "description: {}", scalar(desc));
    }
    let _ = writeln!(o, "endpoint:");
    let _ = writeln!(
        o,
        "  base_url: {}   # up to, not including, /v1",
        scalar(&d.base_url)
    );
    let _ = writeln!(
        o,
        "  api: {}               # completions (prompt) or chat (messages)",
        d.api
    );
    match &d.api_key_env {
        Some(var) => {
            let _ = writeln!(
                o,
                "  api_key_env: {}     # the key is read from this variable, never written; unset = no key",
                scalar(var)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "  # api_key_env: OPENAI_API_KEY   # if the server wants a key: the variable that holds it"
            );
        }
    }
    let _ = writeln!(o, "  request_timeout: 120s");
    if !d.headers.is_empty() {
        let _ = writeln!(o, "  headers:");
        for (k, v) in &d.headers {
            let _ = writeln!(o, "    {}: {}", scalar(k), scalar(v));
        }
    }
    let _ = writeln!(
        o,
        "model: {}               # the served model name sent in every request",
        scalar(&d.model)
    );
    let _ = writeln!(
        o,
        "tokenizer: {}   # a tokenizer.json, a model directory, a hub id Org/Name, or `server`",
        scalar(&d.tokenizer)
    );
    let _ = writeln!(o, "workload:");
    let _ = writeln!(o, "  dataset: {}", d.dataset);
    if let Some(p) = &d.dataset_path {
        let _ = writeln!(o, "  path: {}", scalar(p));
    }
    let _ = writeln!(
        o,
        "  input_tokens: {}            # prompts re-tokenize to exactly this length",
        d.input_tokens
    );
    let _ = writeln!(
        o,
        "  output_tokens: {}           # max_tokens of every request",
        d.output_tokens
    );
    if let Some(r) = d.range_ratio {
        let _ = writeln!(o, "  range_ratio: {}", num(r));
    }
    let _ = writeln!(o, "  ignore_eos: {}", d.ignore_eos);
    let _ = writeln!(
        o,
        "  requests_per_rung: {}       # measured requests per rung; 300+ makes p99 gates decisive",
        d.requests_per_rung
    );
    let _ = writeln!(o, "  seed: {}", d.seed);
    let _ = writeln!(o, "load:");
    let _ = writeln!(
        o,
        "  arrival: {}             # poisson, gamma (with burstiness) or constant",
        d.arrival
    );
    if let Some(b) = d.burstiness {
        let _ = writeln!(o, "  burstiness: {}", num(b));
    }
    match d.baseline_rate {
        Some(b) => {
            let _ = writeln!(
                o,
                "  baseline_rate: {}             # light-load rung run first; every rung is compared with it",
                num(b)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "  # baseline_rate: 1            # a light-load reference rung, below the first rate"
            );
        }
    }
    let rates: Vec<String> = d.rates.iter().map(|r| num(*r)).collect();
    let _ = writeln!(o, "  rates: [{}]", rates.join(", "));
    let _ = writeln!(o, "  cooldown: {}", d.cooldown);
    if let Some(c) = d.max_concurrency {
        let _ = writeln!(o, "  max_concurrency: {c}");
    }
    let _ = writeln!(o, "slo:");
    let slo = |o: &mut String, key: &str, v: Option<f64>, example: &str| {
        let _ = match v {
            Some(v) => writeln!(o, "  {key}: {}", num(v)),
            None => writeln!(o, "  # {key}: {example}"),
        };
    };
    slo(&mut o, "ttft_ms", d.slo_ttft_ms, "3000");
    slo(&mut o, "tpot_ms", d.slo_tpot_ms, "100");
    slo(&mut o, "e2e_ms", d.slo_e2e_ms, "30000");
    let _ = writeln!(
        o,
        "  max_error_rate: 0.05        # the seed guide's overload line"
    );
    let _ = writeln!(
        o,
        "gate:                          # checked by `ladder gate` against golden/<name>/"
    );
    let _ = writeln!(o, "  - {{ metric: request_throughput, max_decrease: 5% }}");
    let _ = writeln!(o, "  - {{ metric: median_ttft_ms, max_increase: 10% }}");
    let _ = writeln!(o, "  - {{ metric: median_tpot_ms, max_increase: 10% }}");
    let _ = writeln!(o, "  - {{ metric: error_rate, max: 0.02 }}");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_that_yaml_would_retype_are_quoted() {
        assert_eq!(scalar("Qwen/Qwen2.5-7B"), "Qwen/Qwen2.5-7B");
        assert_eq!(scalar("http://h:8000/api"), "http://h:8000/api");
        for s in [
            "yes",
            "10",
            "1e3",
            "",
            "a b",
            "-x",
            "a#b",
            "{{ env.X }}",
            "null",
        ] {
            assert!(scalar(s).starts_with('"'), "{s} should be quoted");
        }
        assert_eq!(num(5.0), "5");
        assert_eq!(num(0.5), "0.5");
    }
}
