//! Structured workloads against the simulator: shared prefixes with the simulator's prefix
//! cache on (cold vs warm TTFT, the server's hit rate, per-request groups).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ladder::results::{RequestLine, ResultDir};

fn ladder(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ladder"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("ladder runs")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tokenizer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json")
}

// The shape: GROUPS × PER_GROUP prompts of IN tokens, PREFIX of them shared per group, one
// user sending them one after another (so every request is alone in the simulated engine and
// its TTFT is one step: 10.5 ms plus its prefill at PREFILL_US a token).
const IN: u32 = 320;
const PREFIX: u32 = 256;
const GROUPS: u32 = 4;
const PER_GROUP: u32 = 10;
const PREFILL_US: f64 = 200.0;

fn scenario(dir: &Path, prefix_tokens: u32) -> PathBuf {
    let text = format!(
        r#"version: 1
name: prefix
endpoint:
  base_url: sim
  request_timeout: 30s
model: sim-model
tokenizer: {tok}
workload:
  input_tokens: {IN}
  output_tokens: 4
  ignore_eos: true
  requests_per_rung: {n}
  seed: 5
  shared_prefix: {{ prefix_tokens: {prefix_tokens}, groups: {GROUPS}, prompts_per_group: {PER_GROUP} }}
load:
  concurrency: [1]
  cooldown: 0s
server_metrics:
  interval: 200ms
sim:
  seed: 5
  prefill_per_token_us: {PREFILL_US}
  prefix_caching: true
  prefix_cache_block_size: 16
"#,
        tok = tokenizer().display(),
        n = GROUPS * PER_GROUP,
    );
    let p = dir.join("prefix.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn newest(out: &Path) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out.join("prefix"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs.pop().expect("a result folder")
}

#[test]
fn warm_requests_hit_the_prefix_cache_and_start_sooner() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), PREFIX);
    let out = tmp.path().join("out");
    let o = ladder(
        &["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()],
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("server hits"),
        "the end table: {}",
        text(&o)
    );

    let dir = newest(&out);
    let rd = ResultDir::open(&dir).unwrap();
    let rung = &rd.rungs[0];
    let lines: Vec<RequestLine> = rd.requests(rung).unwrap();
    assert_eq!(lines.len(), (GROUPS * PER_GROUP) as usize);
    // Every request carries its group; each group's first request in send order is the
    // only one marked first.
    let mut by_index = lines.clone();
    by_index.sort_by_key(|l| l.index);
    let mut seen = std::collections::HashSet::new();
    for l in &by_index {
        let g = l.prefix_group.expect("every line has a group");
        assert!(g < GROUPS);
        assert_eq!(l.prefix_first, seen.insert(g), "request {}", l.index);
        assert_eq!(l.input_tokens, IN);
        assert_eq!(
            l.server_prompt_tokens,
            Some(IN),
            "the server counts the same"
        );
    }
    assert_eq!(seen.len(), GROUPS as usize);

    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(&rung.entry.result_file)).unwrap()).unwrap();
    assert_eq!(v["prefix_groups"], GROUPS);
    assert_eq!(v["count_ttft_cold"], GROUPS);
    assert_eq!(v["count_ttft_warm"], GROUPS * (PER_GROUP - 1));
    let cold = v["median_ttft_cold_ms"].as_f64().unwrap();
    let warm = v["median_ttft_warm_ms"].as_f64().unwrap();
    // The simulator's modelled prefill: a cold request prefills all 320 tokens (64 ms at
    // 200 us a token), a warm one the 64 after its 256 cached: 51.2 ms less, the same
    // loopback and step overhead on both sides. Half of it is a margin no scheduling noise
    // of one request at a time reaches.
    let saved = f64::from(PREFIX) * PREFILL_US / 1000.0;
    assert!(
        cold - warm > saved / 2.0,
        "cold {cold:.1} ms, warm {warm:.1} ms: a hit should save about {saved} ms"
    );
    // The server's hit rate: 36 warm requests × 256 cached tokens of 40 × 320 queried
    // (72 %); the start scrape may come just after the first, cold, admission (73.8 %).
    let expected =
        f64::from(GROUPS * (PER_GROUP - 1) * PREFIX) / f64::from(GROUPS * PER_GROUP * IN);
    let hit = v["server_prefix_hit_rate"]
        .as_f64()
        .expect("the sim exposes it");
    assert!(
        (hit - expected).abs() < 0.03,
        "server hit rate {hit:.3}, expected {expected:.3}"
    );
    // run.json says what input_tokens counted.
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        info["scenario"]["workload"]["shared_prefix"]["input_tokens_include_prefix"],
        true
    );
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(summary.contains("Shared prefixes"), "{summary}");
    assert!(summary.contains("TTFT warm p50"), "{summary}");
}

#[test]
fn a_prefix_as_long_as_the_prompt_is_refused_at_its_key() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), IN);
    let o = ladder(&["validate", s.to_str().unwrap()], tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("workload.shared_prefix.prefix_tokens"),
        "{}",
        text(&o)
    );
    assert!(err.contains("input_tokens_include_prefix"), "{}", text(&o));
}

/// The simulator's counters after each of a few requests sent one at a time.
#[tokio::test]
async fn the_sim_cache_skips_prefill_of_cached_blocks_and_evicts_the_least_recent() {
    use ladder::sim::{SimConfig, SimServer};
    // Room for 4 blocks of 16 tokens: a 100-word prompt (6 whole blocks) keeps its first 4.
    let cfg = SimConfig {
        speed: 50.0,
        prefix_caching: true,
        prefix_cache_block_size: 16,
        prefix_cache_tokens: 64,
        ..SimConfig::default()
    };
    let server = SimServer::start(cfg, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", server.local_addr());
    let c = reqwest::Client::new();
    let words = |tag: &str| -> String {
        (0..100)
            .map(|i| format!("{tag}{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let counter = |page: &str, name: &str| -> f64 {
        page.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from:\n{page}"))
    };
    // (prompt, tokens it should find cached)
    let steps = [
        (words("a"), 0.0),  // cold
        (words("a"), 64.0), // its first 4 blocks stayed
        (words("c"), 0.0),  // a different prompt: evicts all of a's blocks
        (words("a"), 0.0),  // a is cold again, and its head evicts c's
        (words("c"), 0.0),  // so c is cold too
        (words("c"), 64.0), // c's head is what the cache holds now
    ];
    let (mut hits, mut queries, mut prefilled) = (0.0, 0.0, 0.0);
    for (i, (prompt, cached)) in steps.iter().enumerate() {
        let body = serde_json::json!({"model": "sim-model", "prompt": prompt,
                                      "max_tokens": 2, "ignore_eos": true});
        let r = c
            .post(format!("{base}/v1/completions"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
        let usage: serde_json::Value = r.json().await.unwrap();
        assert_eq!(usage["usage"]["prompt_tokens"], 100);
        let page = c
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let (h, q, p) = (
            counter(&page, "vllm:prefix_cache_hits_total"),
            counter(&page, "vllm:prefix_cache_queries_total"),
            counter(&page, "ladder_sim:prefill_tokens_total"),
        );
        assert_eq!(
            q - queries,
            100.0,
            "request {i}: every prompt token is queried"
        );
        assert_eq!(h - hits, *cached, "request {i}: cached tokens");
        assert_eq!(
            p - prefilled,
            100.0 - cached,
            "request {i}: a hit is not prefilled"
        );
        (hits, queries, prefilled) = (h, q, p);
        assert!(page.contains("enable_prefix_caching=\"True\""));
    }
    server.shutdown().await;
}
