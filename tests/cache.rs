//! `workload.cache` against one `ladder sim --prefix-caching` server that outlives the runs,
//! as a real server outlives CI jobs (issue 31's cache mirage):
//!
//! - two `cache: cold` runs: each run's prompts are new to the server (cache share ≈ 0 in the
//!   second run too, its TTFT the first run's), each records its own nonce, both send the
//!   same lengths on the same schedule, and `compare` calls them the same workload;
//! - two `cache: warm` runs: the second is answered from the cache (share high, TTFT far
//!   lower), and `compare` of the two warns that the shares differ;
//! - `--repeats 2` cold: no repeat is served from the cache the other filled.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use support::*;

/// A `ladder sim` on loopback with a prefix cache and a prefill slow enough to see (64
/// tokens cost 128 ms at speed 1, 64 ms here), killed on drop.
fn start_sim() -> support::serve::SimProc {
    support::serve::SimProc::start(&[
        "--prefix-caching",
        "--prefill-per-token-us",
        "2000",
        "--speed",
        "2",
    ])
}

/// The simulator's cumulative prefix-cache counters: (queries, hits), in tokens.
fn counters(url: &str) -> (f64, f64) {
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    let value = |name: &str| {
        page.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{page}"))
    };
    (
        value("vllm:prefix_cache_queries_total"),
        value("vllm:prefix_cache_hits_total"),
    )
}

fn scenario(dir: &Path, url: &str, name: &str, cache: &str) -> PathBuf {
    let text = format!(
        "version: 1\nname: {name}\nendpoint:\n  base_url: {url}\n  api: completions\n  \
         request_timeout: 10s\nmodel: sim-model\ntokenizer: {TOKENIZER}\nworkload:\n  \
         input_tokens: 64\n  output_tokens: 4\n  range_ratio: 0.25\n  requests_per_rung: 16\n  \
         seed: 5\n  cache: {cache}\nload:\n  arrival: poisson\n  rates: [4]\n  \
         warmup_requests: 0\n  cooldown: 0s\nserver_metrics:\n  interval: 200ms\n"
    );
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs the scenario into `out`, returns the new run folder.
fn run(scenario: &Path, out: &Path, extra: &[&str]) -> (PathBuf, Ran) {
    let before: Vec<PathBuf> = folders(out);
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let r = spawn(ladder_cmd(&args)).finish(Duration::from_secs(120));
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    let after = folders(out);
    let new: Vec<PathBuf> = after.into_iter().filter(|d| !before.contains(d)).collect();
    assert_eq!(new.len(), 1, "{new:?}");
    (new[0].clone(), r)
}

fn folders(out: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for s in std::fs::read_dir(out).into_iter().flatten() {
        for d in std::fs::read_dir(s.unwrap().path()).into_iter().flatten() {
            all.push(d.unwrap().path());
        }
    }
    all
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The rung's (server_cache_share, median_ttft_ms).
fn rung(dir: &Path) -> (f64, f64) {
    let r = json(&dir.join("result_rate_4.json"));
    let share = r["server_cache_share"]
        .as_f64()
        .unwrap_or_else(|| panic!("no server_cache_share in {r}"));
    (share, r["median_ttft_ms"].as_f64().unwrap())
}

/// The rung's request lines in (repeat, index) order (the file has them as they ended).
fn lines(dir: &Path) -> Vec<serde_json::Value> {
    let mut all: Vec<serde_json::Value> =
        std::fs::read_to_string(dir.join("requests_rate_4.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    all.sort_by_key(|l| {
        (
            l["repeat"].as_u64().unwrap_or(0),
            l["index"].as_u64().unwrap(),
        )
    });
    all
}

#[test]
fn cold_runs_are_never_served_from_the_cache_and_warm_ones_are() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = start_sim();
    let out = tmp.path().join("out");
    let cold = scenario(tmp.path(), &sim.url(), "cold", "cold");
    let (c1, _) = run(&cold, &out, &[]);
    let (c2, r2) = run(&cold, &out, &[]);
    let ((s1, t1), (s2, t2)) = (rung(&c1), rung(&c2));
    assert!(s1 < 0.05 && s2 < 0.05, "cold shares {s1} {s2}");
    // The second cold run computed every prompt, as the first did: TTFT is the prefill's.
    assert!(t2 > 0.7 * t1 && t2 < 1.4 * t1, "cold TTFT {t1} then {t2}");
    assert!(!r2.all().contains("prefix cache"), "{}", r2.all());
    // Each run records its own nonce, outside the scenario.
    let (i1, i2) = (json(&c1.join("run.json")), json(&c2.join("run.json")));
    let (n1, n2) = (
        i1["prompt_nonce"].as_str().unwrap(),
        i2["prompt_nonce"].as_str().unwrap(),
    );
    assert_eq!(n1.len(), 16);
    assert_ne!(n1, n2);
    assert_eq!(i1["scenario"], i2["scenario"]);
    assert!(
        i1["scenario"]["workload"].get("cache").is_none(),
        "cold is the default, left out"
    );
    // The same lengths and asked-for outputs, on the same schedule, request by request.
    let (l1, l2) = (lines(&c1), lines(&c2));
    assert_eq!(l1.len(), 16);
    let shape = |l: &serde_json::Value| {
        (
            l["index"].clone(),
            l["input_tokens"].clone(),
            l["requested_output_tokens"].clone(),
            l["scheduled_ms"].clone(),
        )
    };
    assert_eq!(
        l1.iter().map(shape).collect::<Vec<_>>(),
        l2.iter().map(shape).collect::<Vec<_>>()
    );
    // summary.md says what was sent and the share.
    let md = std::fs::read_to_string(c2.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!("prompt_nonce {n2}"))
            && md.contains("server cache share by rung: 4 0.0%"),
        "{md}"
    );
    // compare: the same workload, no cache warning.
    let cmp = spawn(ladder_cmd(&[
        "compare",
        c1.to_str().unwrap(),
        c2.to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    // Read, not refused: 16 requests a rung are too few to judge, so no verdict at most.
    assert!(!cmp.stderr.contains("error:"), "{}", cmp.all());
    assert!(
        cmp.status.code() != Some(2) || cmp.stdout.contains("NO VERDICT"),
        "{}",
        cmp.all()
    );
    assert!(
        cmp.stdout.contains("no configuration change"),
        "{}",
        cmp.all()
    );
    assert!(
        !cmp.all().contains("prefix-cache share differs"),
        "{}",
        cmp.all()
    );

    // Warm: the seed's prompts, new to this server on the first warm run, cached on the second.
    let warm = scenario(tmp.path(), &sim.url(), "warm", "warm");
    let (w1, _) = run(&warm, &out, &[]);
    let (w2, _) = run(&warm, &out, &[]);
    let ((ws1, wt1), (ws2, wt2)) = (rung(&w1), rung(&w2));
    assert!(ws1 < 0.05, "first warm run {ws1}");
    // 64 ± 16-token prompts in blocks of 16: all whole blocks before the last token hit.
    assert!(ws2 > 0.5, "second warm run {ws2}");
    assert!(wt2 < 0.6 * wt1, "cached TTFT {wt2} vs computed {wt1}");
    assert!(json(&w2.join("run.json")).get("prompt_nonce").is_none());
    let cmp = spawn(ladder_cmd(&[
        "compare",
        w1.to_str().unwrap(),
        w2.to_str().unwrap(),
        "--summary",
        tmp.path().join("cmp.md").to_str().unwrap(),
    ]))
    .finish(Duration::from_secs(60));
    no_panic(&cmp);
    assert!(
        cmp.all()
            .contains("rung 4 req/s: the server's prefix-cache share differs: baseline 0%"),
        "{}",
        cmp.all()
    );
    let md = std::fs::read_to_string(tmp.path().join("cmp.md")).unwrap();
    assert!(md.contains("prefix-cache share differs"), "{md}");
}

#[test]
fn cold_repeats_are_new_to_the_server_too() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = start_sim();
    let out = tmp.path().join("out");
    let cold = scenario(tmp.path(), &sim.url(), "rep", "cold");
    let (q0, h0) = counters(&sim.url());
    let (dir, _) = run(&cold, &out, &["--repeats", "2"]);
    let (q1, h1) = counters(&sim.url());
    // Preflight's probes, then two repeats of 16 prompts: every token queried, none hit.
    assert!(q1 - q0 >= 2.0 * 16.0 * 48.0, "queries {q0} -> {q1}");
    assert!(h1 - h0 <= 16.0, "hits {h0} -> {h1} over two cold repeats");
    let l = lines(&dir);
    assert_eq!(l.iter().filter(|x| x["repeat"] == 2).count(), 16);
}
