mod support;
use support::real::real;
use support::*;

// The token accounting contract (issue 15) end to end, and ladder against a real llama.cpp
// `llama-server` (SmolLM2-135M on the CPU) that .ci/run builds and starts on loopback; see
// docs/real-server.md. The real-server tests skip, saying why, when its variables are unset.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// A scenario named `rel` (so [`run_dir`] finds its folder).
struct Scenario<'a> {
    base_url: &'a str,
    api: &'a str,
    model: &'a str,
    tokenizer: &'a str,
    input_tokens: u32,
    output_tokens: u32,
    n: u32,
    baseline: f64,
    rates: &'a str,
    key_env: Option<&'a str>,
    extra: &'a str,
}

impl<'a> Scenario<'a> {
    fn new(base_url: &'a str, model: &'a str, tokenizer: &'a str) -> Self {
        Scenario {
            base_url,
            api: "completions",
            model,
            tokenizer,
            input_tokens: 32,
            output_tokens: 8,
            n: 3,
            baseline: 2.0,
            rates: "",
            key_env: None,
            extra: "",
        }
    }

    fn write(&self, dir: &Path) -> PathBuf {
        let key = self
            .key_env
            .map(|v| format!("  api_key_env: {v}\n"))
            .unwrap_or_default();
        let text = format!(
            "version: 1\nname: rel\nendpoint:\n  base_url: {}\n  api: {}\n  request_timeout: 60s\n{key}\
             model: {}\ntokenizer: {}\nworkload:\n  dataset: random\n  input_tokens: {}\n  \
             output_tokens: {}\n  ignore_eos: true\n  requests_per_rung: {}\n  seed: 0\nload:\n  \
             arrival: constant\n{}  rates: [{}]\n  warmup_requests: 0\n  cooldown: 0s\n{}",
            self.base_url,
            self.api,
            self.model,
            self.tokenizer,
            self.input_tokens,
            self.output_tokens,
            self.n,
            // Without `rates`, one rung at the baseline rate (and no separate baseline).
            if self.rates.is_empty() {
                String::new()
            } else {
                format!("  baseline_rate: {}\n", self.baseline)
            },
            if self.rates.is_empty() {
                self.baseline.to_string()
            } else {
                self.rates.to_string()
            },
            self.extra
        );
        let p = dir.join("rel.yaml");
        std::fs::write(&p, text).unwrap();
        p
    }
}

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn run_ok(sc: &Path, out: &Path, limit: Duration) -> (Ran, PathBuf) {
    let r = run_ladder(sc, out, limit);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    let dir = run_dir(out).expect("a result folder");
    (r, dir)
}

// ---- the contract against the simulator (always run) ---------------------------------------

#[test]
fn sim_chat_template_overhead_is_reported_and_completions_match() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = TOKENIZER;
    let mut sc = Scenario::new("sim", "m", tiny);
    sc.api = "chat";
    sc.n = 4;
    sc.baseline = 50.0;
    sc.extra = "sim:\n  speed: 20\n  chat_template_tokens: 31\n";
    let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(60));
    let rung = json(&dir.join("result_rate_50.json"));
    assert_eq!(rung["requested_input_tokens"], 32.0, "{rung}");
    assert_eq!(rung["mean_server_input_tokens"], 63.0, "{rung}");
    assert_eq!(rung["requested_output_tokens"], 8.0, "{rung}");
    assert_eq!(rung["mean_server_output_tokens"], 8.0, "{rung}");
    assert_eq!(rung["server_usage_requests"], 4, "{rung}");
    for l in lines(&dir.join("requests_rate_50.jsonl")) {
        assert_eq!(l["input_tokens"], 32, "{l}");
        assert_eq!(l["server_prompt_tokens"], 63, "{l}");
        assert_eq!(l["server_completion_tokens"], 8, "{l}");
        assert_eq!(l["requested_output_tokens"], 8, "{l}");
    }
    // The warning, with the likely cause, on the terminal and in run.json.
    let said = |text: &str| text.contains("63.0 prompt tokens") && text.contains("chat template");
    assert!(said(&r.stderr), "{}", r.stderr);
    let info = json(&dir.join("run.json"));
    assert!(
        info["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| said(w.as_str().unwrap())),
        "{info}"
    );
    check_folder(&dir);

    // The same simulator counts completions prompts as sent: nothing to warn about.
    let tmp = tempfile::tempdir().unwrap();
    sc.api = "completions";
    let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(60));
    let rung = json(&dir.join("result_rate_50.json"));
    assert_eq!(rung["mean_server_input_tokens"], 32.0, "{rung}");
    assert!(
        !r.stderr.contains("prompt tokens per request"),
        "{}",
        r.stderr
    );
}

#[test]
fn absurd_usage_is_flagged_and_not_trusted() {
    // The preflight probes are answered well; every measured request claims 4e9 output tokens.
    let srv = fault_server(Fault::AbsurdUsage, PROBES);
    let tmp = tempfile::tempdir().unwrap();
    let url = srv.url();
    let mut sc = Scenario::new(&url, "m", TOKENIZER);
    sc.input_tokens = 16;
    sc.output_tokens = 4;
    sc.baseline = 20.0;
    let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(60));
    let ls = lines(&dir.join("requests_rate_20.jsonl"));
    assert_eq!(ls.len(), 3);
    for l in &ls {
        // What the server said is kept, marked as not trusted, and ladder's count is used.
        assert_eq!(l["server_completion_tokens"], 4_000_000_000u64, "{l}");
        assert!(
            l["usage_rejected"].as_str().unwrap().contains("max_tokens"),
            "{l}"
        );
        assert_eq!(l["token_source"], "retokenized", "{l}");
        let out = l["output_tokens"].as_u64().unwrap();
        assert!((1..=4).contains(&out), "{l}");
    }
    let rung = json(&dir.join("result_rate_20.json"));
    assert_eq!(rung["untrusted_usage"], 3, "{rung}");
    assert_eq!(rung["retokenized_outputs"], 3, "{rung}");
    assert!(
        rung["total_output_tokens"].as_u64().unwrap() <= 12,
        "{rung}"
    );
    assert!(rung["mean_server_output_tokens"].is_null(), "{rung}");
    let said = |t: &str| t.contains("3 of 3 requests reported implausible usage");
    assert!(said(&r.stderr), "{}", r.stderr);
    let info = json(&dir.join("run.json"));
    assert!(
        info["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| said(w.as_str().unwrap())),
        "{info}"
    );
}

// ---- a real llama.cpp server (.ci/run starts it; skipped without it) -----------------------

#[test]
fn real_completions_count_exactly_the_requested_tokens() {
    let Some(s) = real("real_completions", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.input_tokens = 48;
    sc.output_tokens = 16;
    sc.n = 3;
    let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(180));
    let ls = lines(&dir.join("requests_rate_2.jsonl"));
    assert_eq!(ls.len(), 3, "{}", r.all());
    for l in &ls {
        assert_eq!(l["ok"], true, "{l}");
        // Every request is exactly as long as asked, by the server's own count (ignore_eos).
        assert_eq!(l["input_tokens"], 48, "{l}");
        assert_eq!(l["server_prompt_tokens"], 48, "{l}");
        assert_eq!(l["server_completion_tokens"], 16, "{l}");
        assert_eq!(l["output_tokens"], 16, "{l}");
        assert_eq!(l["token_source"], "usage", "{l}");
        assert!(l.get("usage_rejected").is_none(), "{l}");
    }
    let rung = json(&dir.join("result_rate_2.json"));
    assert_eq!(rung["mean_server_input_tokens"], 48.0, "{rung}");
    assert_eq!(rung["mean_server_output_tokens"], 16.0, "{rung}");
    assert!(!r.stderr.contains("tokens per request"), "{}", r.stderr);
}

#[test]
fn real_short_ladder_writes_a_complete_folder() {
    let Some(s) = real("real_short_ladder", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.input_tokens = 16;
    sc.output_tokens = 8;
    sc.n = 2;
    sc.baseline = 1.0;
    sc.rates = "2, 4";
    let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(240));
    let rd = check_folder(&dir);
    assert_eq!(rd.info.status, ladder::results::RunStatus::Complete);
    let rates: Vec<f64> = rd.rungs.iter().map(|g| g.summary.rate).collect();
    assert_eq!(rates, [1.0, 2.0, 4.0], "{}", r.all());
    for g in &rd.rungs {
        assert_eq!(
            g.summary.completed,
            2,
            "rung {}: {}",
            g.summary.rate,
            r.all()
        );
        assert_eq!(g.summary.total_output_tokens, 16, "rung {}", g.summary.rate);
    }
    assert!(r.stdout.contains("results:"), "{}", r.stdout);
}

#[test]
fn real_api_key_server_diagnoses_missing_and_wrong_keys_at_preflight() {
    let Some(s) = real("real_api_key", "LADDER_REAL_SERVER_KEY_URL") else {
        return;
    };
    let var = "LADDER_REAL_SERVER_TEST_KEY";
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.n = 1;
    sc.output_tokens = 4;
    sc.key_env = Some(var);
    let path = sc.write(tmp.path());
    let run = |key: Option<&str>| {
        let mut c = ladder_cmd(&["run", path.to_str().unwrap(), "--out"]);
        c.arg(tmp.path());
        match key {
            Some(k) => c.env(var, k),
            None => c.env_remove(var),
        };
        let r = spawn(c).finish(Duration::from_secs(60));
        no_panic(&r);
        r
    };
    // The key is wrong: the server answers 401 and preflight says which variable to fix.
    let r = run(Some("ladder-test-wrong-key"));
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    let err = r
        .stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or("");
    assert!(
        err.contains("401") && err.contains(&format!("${var}")),
        "{}",
        r.all()
    );
    assert!(run_dir(tmp.path()).is_none(), "no folder for a refused run");
    // The key is missing: said before any request, naming the variable.
    let r = run(None);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(
        r.stderr.contains(&format!("${var} is not set")),
        "{}",
        r.all()
    );
    assert!(run_dir(tmp.path()).is_none());
    // Without api_key_env at all, the 401 says to set it.
    sc.key_env = None;
    let path = sc.write(tmp.path());
    let r = spawn(ladder_cmd(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        tmp.path().to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    assert!(r.stderr.contains("endpoint.api_key_env"), "{}", r.all());
    // And the right key (LADDER_REAL_SERVER_KEY, a fake test key) gets through.
    if let Ok(key) = std::env::var("LADDER_REAL_SERVER_KEY") {
        sc.key_env = Some(var);
        let path = sc.write(tmp.path());
        let mut c = ladder_cmd(&["run", path.to_str().unwrap(), "--out"]);
        c.arg(tmp.path()).env(var, key);
        let r = spawn(c).finish(Duration::from_secs(120));
        assert!(r.status.success(), "{}", r.all());
    }
}

#[test]
fn real_chat_template_overhead_is_reported() {
    let Some(s) = real("real_chat_template", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.api = "chat";
    sc.input_tokens = 32;
    sc.output_tokens = 8;
    sc.n = 2;
    let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(180));
    let rung = json(&dir.join("result_rate_2.json"));
    let server = rung["mean_server_input_tokens"]
        .as_f64()
        .expect("chat usage (include_usage)");
    // ChatML role markers (and SmolLM2's default system prompt) around the 32 prompt tokens.
    assert!(server > 32.0 + 2.0, "{rung}");
    assert_eq!(rung["requested_input_tokens"], 32.0, "{rung}");
    assert_eq!(rung["mean_server_output_tokens"], 8.0, "{rung}");
    let info = json(&dir.join("run.json"));
    let warned = info["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .any(|w| w.contains("chat template") && w.contains("prompt tokens per request"));
    assert!(warned, "{info}\n{}", r.stderr);
    // Preflight measured the same overhead on its longest-prompt probe and said how to
    // compensate.
    assert_eq!(
        info["prompt_overhead"].as_f64(),
        Some(server - 32.0),
        "{info}"
    );
    assert!(r.stderr.contains("input_length: server"), "{}", r.stderr);
    // The served model's own tokenizer: the template's overhead, no mismatch.
    assert!(
        !r.stderr.contains("likely not the served model's"),
        "{}",
        r.stderr
    );
}

/// The seed's tokenizer/model mismatch on the real server: the tests' tiny tokenizer for
/// SmolLM2. The server's count grows away from ladder's with the prompt's length (the short
/// probe's difference is its template's, the longest prompt's is several times larger), so
/// preflight warns that the tokenizer is not the served model's, under both APIs, and the
/// warning is kept in run.json.
#[test]
fn real_tokenizer_of_another_model_is_warned_about_at_preflight() {
    let Some(s) = real("real_tokenizer_mismatch", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tiny = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/tokenizers/ladder-tiny.json"
    );
    for api in ["completions", "chat"] {
        let tmp = tempfile::tempdir().unwrap();
        let mut sc = Scenario::new(&s.url, &s.model, tiny);
        sc.api = api;
        sc.input_tokens = 64;
        sc.output_tokens = 2;
        sc.n = 1;
        let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(180));
        assert!(
            r.stderr.contains("warning: the server counts ")
                && r.stderr.contains("likely not the served model's"),
            "{api}: {}",
            r.stderr
        );
        // Not also called the template's overhead, at preflight or by the rung's warning
        // (which, under chat, named the template before).
        assert!(
            !r.stderr.contains("more tokens per prompt than its text")
                && !r.stderr.contains("likely the chat template's overhead"),
            "{}",
            r.stderr
        );
        let info = json(&dir.join("run.json"));
        let kept = info["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .any(|w| w.contains("likely not the served model's"));
        assert!(kept, "{api}: {info}");
    }
}

#[test]
fn real_chat_with_server_input_length_gets_exactly_input_tokens() {
    let Some(s) = real("real_chat_server_length", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.api = "chat";
    sc.input_tokens = 48;
    sc.output_tokens = 4;
    sc.n = 2;
    let path = sc.write(tmp.path());
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "  seed: 0\nload:",
        "  seed: 0\n  input_length: server\nload:",
    );
    std::fs::write(&path, text).unwrap();
    let (r, dir) = run_ok(&path, tmp.path(), Duration::from_secs(180));
    let info = json(&dir.join("run.json"));
    let overhead = info["prompt_overhead"].as_i64().expect("measured");
    assert!(overhead > 2, "{info}");
    for l in &lines(&dir.join("requests_rate_2.jsonl")) {
        // The server's own count is the requested length: its template is compensated.
        assert_eq!(l["server_prompt_tokens"], 48, "{l}\n{}", r.stderr);
        assert_eq!(l["input_tokens"], 48, "{l}");
    }
    let rung = json(&dir.join("result_rate_2.json"));
    assert_eq!(rung["mean_server_input_tokens"], 48.0, "{rung}");
}

#[test]
fn real_context_overflow_is_caught_at_preflight() {
    let Some(s) = real("real_context_overflow", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    // `-c 8192 -np 4`: 2048 tokens per slot, so a 3000-token prompt cannot be served. The
    // longest-prompt probe finds that before any load: exit 2, the server's message, no folder.
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.input_tokens = 3000;
    sc.output_tokens = 4;
    sc.n = 1;
    let r = run_ladder(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(180));
    no_panic(&r);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    let err = r
        .stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or("");
    assert!(err.contains("longest prompt (3000 tokens"), "{}", r.all());
    assert!(err.contains("answered 400"), "{}", r.all());
    assert!(
        err.contains("exceed_context_size_error"),
        "the server's own words: {err}"
    );
    assert!(err.contains("longer than the server's context"), "{err}");
    assert!(run_dir(tmp.path()).is_none(), "no folder: {}", r.all());
}

/// The real server's `/metrics` (llama-server runs with `--metrics`), scraped during each rung:
/// the engine is told from the names, and llama.cpp's counters land in the `server_*` keys
/// with the values the requests imply. llama.cpp adds a request's tokens to
/// `llamacpp:tokens_predicted_total` when it finishes, and every request of a rung finishes
/// between the rung's first scrape (at its first send) and its last (after the drain), so with
/// no warmup requests (whose tokens land in the window when they end after the first scrape:
/// docs/report.md) the counter's increase is exactly the rung's output tokens.
#[test]
fn real_llamacpp_metrics_land_in_the_result_files() {
    let Some(s) = real("real_llamacpp_metrics", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.input_tokens = 16;
    sc.output_tokens = 12;
    sc.n = 4;
    sc.baseline = 1.0;
    sc.rates = "3";
    sc.extra = "server_metrics:\n  interval: 250ms\n";
    let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(240));
    assert!(!r.stderr.contains("cannot scrape"), "{}", r.all());
    // Its identity, from `GET /props` once the names said llama.cpp.
    let info = json(&dir.join("run.json"));
    assert_eq!(info["server"]["engine"], "llama.cpp", "{info}");
    assert_eq!(info["server"]["source"], "/props", "{info}");
    assert!(
        info["server"]["version"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{info}"
    );
    assert!(
        info["server"]["model"]
            .as_str()
            .is_some_and(|m| m.ends_with(".gguf")),
        "{info}"
    );
    for rate in ["1", "3"] {
        let rung = json(&dir.join(format!("result_rate_{rate}.json")));
        assert_eq!(rung["completed"], 4, "rung {rate}: {rung}");
        assert_eq!(rung["server_engine"], "llama.cpp", "rung {rate}: {rung}");
        assert_eq!(rung["server_scrape_failures"], 0.0, "rung {rate}: {rung}");
        assert!(rung["server_scrapes"].as_f64().unwrap() >= 2.0, "{rung}");
        assert_eq!(rung["total_output_tokens"], 48, "rung {rate}: {rung}");
        assert_eq!(
            rung["server_generated_tokens"], 48.0,
            "rung {rate}: the server's count of generated tokens: {rung}"
        );
        // `requests_processing` / `requests_deferred` are gauges of a 4-slot server (-np 4)
        // under at most 4 requests: within [0, 4], whatever the scrapes happened to catch.
        for k in ["running", "waiting"] {
            for stat in ["max", "mean"] {
                let v = rung[format!("server_{stat}_{k}")]
                    .as_f64()
                    .unwrap_or_else(|| panic!("no server_{stat}_{k}: {rung}"));
                assert!((0.0..=4.0).contains(&v), "server_{stat}_{k} = {v}: {rung}");
            }
        }
        // One line per scrape beside the rung file.
        let series = dir.join(format!("server_metrics_rate_{rate}.jsonl"));
        assert_eq!(
            lines(&series).len() as f64,
            rung["server_scrapes"].as_f64().unwrap(),
            "{}",
            series.display()
        );
    }
}

/// Issue 31's cache mirage on the real server: `workload.cache: cold` (the default) sends
/// prompts the server has never seen, so a second run on the same, now warm, llama-server
/// gets about no cached prompt tokens (`llamacpp:prompt_tokens_cached_total` against
/// `prompt_tokens_total`); `cache: warm` sends the seed's text again, and its second run is
/// served from the prompt cache (a slot's KV or `--cache-ram`'s host copies).
#[test]
fn real_cold_runs_get_no_cache_share_and_warm_runs_do() {
    let Some(s) = real(
        "real_cold_runs_get_no_cache_share",
        "LADDER_REAL_SERVER_URL",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.input_tokens = 48;
    sc.output_tokens = 4;
    sc.n = 6;
    sc.baseline = 2.0;
    sc.extra = "server_metrics:\n  interval: 250ms\n";
    let share = |cache: &str, run: usize| {
        let dir = tmp.path().join(format!("{cache}-{run}"));
        std::fs::create_dir_all(&dir).unwrap();
        let p = sc.write(&dir);
        // `cache:` goes into the workload section the scenario writes.
        let text = std::fs::read_to_string(&p)
            .unwrap()
            .replace("  seed: 0\n", &format!("  seed: 0\n  cache: {cache}\n"));
        std::fs::write(&p, text).unwrap();
        let (_, folder) = run_ok(&p, &dir, Duration::from_secs(240));
        let rung = json(&folder.join("result_rate_2.json"));
        assert_eq!(rung["server_engine"], "llama.cpp", "{rung}");
        rung["server_cache_share"]
            .as_f64()
            .unwrap_or_else(|| panic!("no server_cache_share: {rung}"))
    };
    let (c1, c2) = (share("cold", 1), share("cold", 2));
    eprintln!("real llama-server cache share: cold {c1:.3} then {c2:.3}");
    assert!(c1 < 0.1 && c2 < 0.1, "cold runs: {c1} then {c2}");
    let (w1, w2) = (share("warm", 1), share("warm", 2));
    eprintln!("real llama-server cache share: warm {w1:.3} then {w2:.3}");
    assert!(w2 > 0.5, "the second warm run: {w2} (first {w1})");
}

/// A pooled `api` (embeddings or rerank) run of two rungs (2 and 4 req/s) of 4 requests
/// with `workload` lines, on the server at `url_var`: every request succeeds with `tokens`
/// input tokens by the model's tokenizer and exactly that by the server's own
/// `usage.prompt_tokens`, with an E2E and no TTFT; the rungs carry `api` and no TTFT keys.
fn real_pooled_counts(test: &str, url_var: &str, api: &str, workload: &str, tokens: u64) {
    let Some(s) = real(test, url_var) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: {}\n  api: {api}\n  \
         request_timeout: 60s\nmodel: {}\ntokenizer: {}\nworkload:\n  dataset: random\n\
         {workload}  requests_per_rung: 4\n  seed: 0\nload:\n  arrival: constant\n  \
         rates: [2, 4]\n  warmup_requests: 0\n  cooldown: 0s\n",
        s.url, s.model, s.tokenizer
    );
    let sc = tmp.path().join("rel.yaml");
    std::fs::write(&sc, text).unwrap();
    let (r, dir) = run_ok(&sc, tmp.path(), Duration::from_secs(180));
    let rd = check_folder(&dir);
    for g in &rd.rungs {
        let rate = g.summary.rate;
        assert_eq!(g.summary.completed, 4, "rung {rate}: {}", r.all());
        for l in lines(&dir.join(format!("requests_rate_{rate}.jsonl"))) {
            assert_eq!(l["ok"], true, "{l}");
            assert_eq!(l["input_tokens"], tokens, "{l}");
            assert_eq!(l["server_prompt_tokens"], tokens, "{l}");
            assert_eq!(l["output_tokens"], 0, "{l}");
            assert!(
                l["ttft_ms"].is_null() && l["e2e_ms"].as_f64().unwrap() > 0.0,
                "{l}"
            );
        }
        let v = json(&dir.join(format!("result_rate_{rate}.json")));
        assert_eq!(v["api"], api, "{v}");
        assert_eq!(v["total_input_tokens"], 4 * tokens, "{v}");
        assert!(
            v.get("median_ttft_ms").is_none() && v.get("p99_tpot_ms").is_none(),
            "{v}"
        );
        assert!(v["input_throughput"].as_f64().unwrap() > 0.0, "{v}");
    }
}

#[test]
fn real_embeddings_count_tokens_as_the_server_does() {
    // Three inputs of 24 tokens by the model's tokenizer, and exactly that by the server's own
    // `usage.prompt_tokens`.
    real_pooled_counts(
        "real_embeddings",
        "LADDER_REAL_EMBED_URL",
        "embeddings",
        "  input_tokens: 24\n  batch_size: 3\n",
        72,
    );
}

#[test]
fn real_server_without_embeddings_is_named_at_preflight() {
    // The plain server was started without --embeddings: llama.cpp answers 501.
    let Some(s) = real("real_embeddings_off", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: {}\n  api: embeddings\n  \
         request_timeout: 60s\nmodel: {}\ntokenizer: {}\nworkload:\n  dataset: random\n  \
         input_tokens: 8\n  requests_per_rung: 2\n  seed: 0\nload:\n  rates: [2]\n  \
         cooldown: 0s\n",
        s.url, s.model, s.tokenizer
    );
    let sc = tmp.path().join("rel.yaml");
    std::fs::write(&sc, text).unwrap();
    let r = run_ladder(&sc, tmp.path(), Duration::from_secs(120));
    no_panic(&r);
    assert!(!r.status.success(), "{}", r.all());
    assert!(
        r.stderr.contains("--embeddings (llama.cpp") && r.stderr.contains("--task embed (vLLM"),
        "{}",
        r.stderr
    );
}

#[test]
fn real_rerank_counts_its_pairs_as_the_server_does() {
    // llama-server --reranking with SmolLM2 (no classification head: the scores mean nothing,
    // the cost and the counts are real; docs/endpoints.md). Three pairs of an 8-token query
    // and a 24-token document by SmolLM2's tokenizer, and exactly that by llama-server's own
    // `usage.prompt_tokens` (it adds no special token to SmolLM2's pairs).
    real_pooled_counts(
        "real_rerank",
        "LADDER_REAL_RERANK_URL",
        "rerank",
        "  query_tokens: 8\n  input_tokens: 24\n  batch_size: 3\n",
        96,
    );
}

#[test]
fn real_server_without_rerank_is_named_at_preflight() {
    // The plain server was started without --reranking: llama.cpp answers 501.
    let Some(s) = real("real_rerank_off", "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: {}\n  api: rerank\n  \
         request_timeout: 60s\nmodel: {}\ntokenizer: {}\nworkload:\n  dataset: random\n  \
         query_tokens: 4\n  input_tokens: 8\n  requests_per_rung: 2\n  seed: 0\nload:\n  \
         rates: [2]\n  cooldown: 0s\n",
        s.url, s.model, s.tokenizer
    );
    let sc = tmp.path().join("rel.yaml");
    std::fs::write(&sc, text).unwrap();
    let r = run_ladder(&sc, tmp.path(), Duration::from_secs(120));
    no_panic(&r);
    assert!(!r.status.success(), "{}", r.all());
    assert!(
        r.stderr.contains("answered 501")
            && r.stderr
                .contains("--reranking (or --embedding --pooling rank)")
            && r.stderr.contains("Start it with `--reranking`"),
        "{}",
        r.stderr
    );
}

/// A short `api` (messages or responses) run on the plain llama-server: the same metrics as
/// chat, with the token counts read from the API's own final events.
fn real_typed_api_run(test: &str, api: &str) {
    let Some(s) = real(test, "LADDER_REAL_SERVER_URL") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Scenario::new(&s.url, &s.model, &s.tokenizer);
    sc.api = api;
    sc.input_tokens = 32;
    sc.output_tokens = 8;
    sc.n = 3;
    let (r, dir) = run_ok(&sc.write(tmp.path()), tmp.path(), Duration::from_secs(180));
    let info = json(&dir.join("run.json"));
    // Preflight's longest probe went through the same API and measured the chat template's
    // overhead from its usage (llama-server templates these requests as chat).
    let overhead = info["prompt_overhead"].as_i64().expect("measured");
    assert!(overhead > 2, "{info}");
    let ls = lines(&dir.join("requests_rate_2.jsonl"));
    assert_eq!(ls.len(), 3, "{}", r.all());
    for l in &ls {
        assert_eq!(l["ok"], true, "{l}\n{}", r.all());
        assert!(l["ttft_ms"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["tpot_ms"].as_f64().unwrap() > 0.0, "{l}");
        // A gap per token event after the first; events that arrive together count as one
        // (seen once for Responses with the machine loaded by the whole suite: 4 gaps for 8
        // tokens; cause not pinned down), so at most 7 and at least 1.
        let gaps = l["itl_ms"].as_array().unwrap().len();
        assert!((1..=7).contains(&gaps), "{gaps} gaps: {l}");
        // The output count is the server's (message_delta / response.completed usage) and
        // matches what was asked; the prompt count is the server's too: Messages' usage
        // splits it into input_tokens and cache_read_input_tokens (the shared template
        // prefix, read from llama-server's prompt cache), which ladder adds back up.
        assert_eq!(l["token_source"], "usage", "{l}");
        assert_eq!(l["output_tokens"], 8, "{l}");
        assert_eq!(l["server_completion_tokens"], 8, "{l}");
        assert_eq!(l["input_tokens"], 32, "{l}");
        assert_eq!(l["server_prompt_tokens"], 32 + overhead, "{l}");
    }
    let rung = json(&dir.join("result_rate_2.json"));
    assert_eq!(rung["completed"], 3, "{rung}");
    assert_eq!(rung["total_output_tokens"], 24, "{rung}");
    assert_eq!(rung["mean_server_output_tokens"], 8.0, "{rung}");
    assert_eq!(rung["untrusted_usage"], 0, "{rung}");
    for k in [
        "median_ttft_ms",
        "p99_ttft_ms",
        "median_tpot_ms",
        "median_itl_ms",
    ] {
        assert!(rung[k].as_f64().unwrap() > 0.0, "{k}: {rung}");
    }
    // The prompt-count warning names the template, not a tokenizer mismatch.
    let warnings: Vec<&str> = info["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("prompt tokens per request"))
        .collect();
    assert!(
        warnings.len() == 1
            && warnings[0].contains("chat template")
            && !warnings[0].contains("mismatch"),
        "{warnings:?}"
    );
}

#[test]
fn real_messages_stream_and_count_as_the_server_does() {
    real_typed_api_run("real_messages", "messages");
}

#[test]
fn real_responses_stream_and_count_as_the_server_does() {
    real_typed_api_run("real_responses", "responses");
}
