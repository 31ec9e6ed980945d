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
    /// A closed-loop ladder's users (`load.concurrency`), instead of `rates`: vLLM's
    /// `--request-rate inf --max-concurrency N`.
    pub concurrency: Vec<u32>,
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
            concurrency: Vec::new(),
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
    if !d.concurrency.is_empty() {
        let users: Vec<String> = d.concurrency.iter().map(u32::to_string).collect();
        let _ = writeln!(
            o,
            "  concurrency: [{}]           # closed loop: users, each sending its next request when \
             the last one ends",
            users.join(", ")
        );
        let _ = writeln!(o, "  cooldown: {}", d.cooldown);
        slo_and_gate(&mut o, d);
        return o;
    }
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
    slo_and_gate(&mut o, d);
    o
}

/// The `slo:` and `gate:` sections.
fn slo_and_gate(o: &mut String, d: &Draft) {
    let _ = writeln!(o, "slo:");
    let slo = |o: &mut String, key: &str, v: Option<f64>, example: &str| {
        let _ = match v {
            Some(v) => writeln!(o, "  {key}: {}", num(v)),
            None => writeln!(o, "  # {key}: {example}"),
        };
    };
    slo(o, "ttft_ms", d.slo_ttft_ms, "3000");
    slo(o, "tpot_ms", d.slo_tpot_ms, "100");
    slo(o, "e2e_ms", d.slo_e2e_ms, "30000");
    let _ = writeln!(
        o,
        "  max_error_rate: 0.05        # the seed guide's overload line"
    );
    let _ = writeln!(
        o,
        "gate:                          # checked by `ladder gate` against golden/<name>/"
    );
    // The quickstart's rules, calibrated on the simulator with 5 % run-to-run drift
    // (docs/gate.md): tighter ones sit inside what drift alone moves between two runs, and
    // the gate can never decide them.
    let _ = writeln!(
        o,
        "  - {{ metric: request_throughput, max_decrease: 15% }}   # 5 % lies inside run-to-run drift"
    );
    let _ = writeln!(
        o,
        "  - {{ metric: median_ttft_ms, max_increase: 25%, min_change: 10ms }}"
    );
    let _ = writeln!(o, "  - {{ metric: median_tpot_ms, max_increase: 10% }}");
    let rungs = d.rates.len() + usize::from(d.baseline_rate.is_some());
    let bound = error_bound(d.requests_per_rung, GATE_RULES * rungs.max(1));
    let _ = writeln!(
        o,
        "  - {{ metric: error_rate, max: {} }}   # the least bound 0 errors in {} requests can show",
        num(bound),
        d.requests_per_rung
    );
}

/// The rules `ladder init` writes under `gate:`.
const GATE_RULES: usize = 4;

/// The least of a few round error-rate bounds that a rung of `n` requests with no error
/// shows at the gate's per-check level over `checks` checks (95 % for the family,
/// Bonferroni: compare's level for an error-rate check). A tighter bound leaves every
/// error-rate check inconclusive however clean the server.
fn error_bound(n: u32, checks: usize) -> f64 {
    let level = 1.0 - 0.05 / checks as f64;
    let shown = crate::stats::wilson(0, u64::from(n), level).hi;
    [0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5]
        .into_iter()
        .find(|b| *b > shown)
        .unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error-rate bound is one 0 errors can show: 200 requests over 7 rungs x 4 rules
    /// show about 0.045 (0.02 needs about 450 requests); 40 over 4 x 4 show 0.18 (as the real
    /// server's gate printed: `[0, 0.1792]`).
    #[test]
    fn the_error_rate_bound_is_one_a_clean_rung_can_show() {
        assert_eq!(error_bound(200, 28), 0.05);
        assert_eq!(error_bound(1000, 28), 0.02);
        assert_eq!(error_bound(40, 16), 0.2);
        assert_eq!(error_bound(60, 20), 0.15);
        for (n, checks) in [(200, 28), (60, 20), (1000, 28), (40, 16)] {
            let level = 1.0 - 0.05 / checks as f64;
            let shown = crate::stats::wilson(0, n, level).hi;
            assert!(error_bound(n as u32, checks) > shown, "{n}");
        }
        let text = render(&Draft::default());
        assert!(
            text.contains("  - { metric: error_rate, max: 0.05 }"),
            "{text}"
        );
        assert!(
            text.contains("  - { metric: request_throughput, max_decrease: 15% }"),
            "{text}"
        );
    }

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
