//! Server-side metrics end to end: the built-in simulator's /metrics scraped during each
//! rung, its numbers in the result files, and scrape failures that never fail a run.

mod support;
use support::*;

use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn server_keys(dir: &Path, rate: &str) -> serde_json::Map<String, serde_json::Value> {
    let text = std::fs::read_to_string(dir.join(format!("result_rate_{rate}.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v.as_object()
        .unwrap()
        .iter()
        // `server_usage_requests` is the token accounting's, not the scraper's.
        .filter(|(k, _)| k.starts_with("server_") && *k != "server_usage_requests")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn f(m: &serde_json::Map<String, serde_json::Value>, k: &str) -> f64 {
    m.get(k)
        .and_then(|v| v.as_f64())
        .unwrap_or_else(|| panic!("no numeric `{k}` in {m:?}"))
}

/// Four sequences at most, 20 output tokens at 10 ms a step: capacity about 20 req/s.
/// The baseline rung (2 req/s) is under it, the 200 req/s rung far past it.
fn capped_sim() -> Sc {
    let mut sc = Sc::new("sim");
    sc.n = 8;
    sc.output_tokens = 20;
    sc.baseline = 2.0;
    sc.rates = "[200]";
    sc.timeout = "20s";
    sc.extra = "sim:\n  max_num_seqs: 4\n  step_base_ms: 10\n  step_per_seq_ms: 0\n  \
                kv_cache_tokens: 4096\n  max_model_len: 512\n\
                server_metrics:\n  interval: 200ms\n";
    sc
}

#[test]
fn past_capacity_the_server_shows_a_queue_and_a_full_batch_under_it_none() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = capped_sim().write(tmp.path());
    let out = tmp.path().join("out");
    let r = run_ladder(&sc, &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    assert!(!r.all().contains("cannot scrape"), "{}", r.all());
    let dir = run_dir(&out).expect("a result folder");
    check_folder(&dir);

    let low = server_keys(&dir, "2");
    let high = server_keys(&dir, "200");
    for m in [&low, &high] {
        assert_eq!(m["server_engine"], "vllm", "{m:?}");
        assert!(
            f(m, "server_scrapes") >= 2.0,
            "start and end at least: {m:?}"
        );
        assert_eq!(f(m, "server_scrape_failures"), 0.0);
        assert!(f(m, "server_generated_tokens") > 0.0, "{m:?}");
    }
    // Under capacity: next to no queue, and nothing waited long.
    assert!(f(&low, "server_mean_waiting") < 0.5, "{low:?}");
    // Past capacity: a queue, the batch at its cap of 4, time spent queued.
    assert!(f(&high, "server_max_waiting") >= 1.0, "{high:?}");
    assert_eq!(f(&high, "server_max_running"), 4.0, "{high:?}");
    assert!(f(&high, "server_max_kv_usage") > 0.0, "{high:?}");
    assert!(
        f(&high, "server_mean_queue_time_ms") > f(&low, "server_mean_queue_time_ms"),
        "{low:?} vs {high:?}"
    );
    assert_eq!(f(&high, "server_e2e_count"), 8.0, "{high:?}");
    assert!(f(&high, "server_median_ttft_ms_est") > 0.0, "{high:?}");
    // The simulator's inter-token histogram: 19 gaps per 20-token request.
    assert_eq!(f(&high, "server_itl_count"), 8.0 * 19.0, "{high:?}");
    assert!(f(&high, "server_mean_itl_ms") > 0.0, "{high:?}");

    // The server's identity, asked once (vLLM's `GET /version`), in run.json.
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        info["server"],
        serde_json::json!({
            "engine": "vllm",
            "source": "/version",
            "version": format!("ladder-sim {}", env!("CARGO_PKG_VERSION")),
        }),
        "{info}"
    );

    // The time series beside the rung file: one line per scrape, times in order.
    let series = std::fs::read_to_string(dir.join("server_metrics_rate_200.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = series
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as f64, f(&high, "server_scrapes"));
    let t: Vec<f64> = lines.iter().map(|l| l["t_s"].as_f64().unwrap()).collect();
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "{t:?}");
    assert!(lines.iter().any(|l| l["waiting"].as_f64() >= Some(1.0)));

    // The knee (200 req/s: throughput plateaus) names what saturated on the server.
    let analysis = std::fs::read_to_string(dir.join("analysis.json")).unwrap();
    assert!(
        analysis.contains("server side: waiting queue up to"),
        "{analysis}"
    );

    // report.html charts them over the ladder, with the TTFT decomposition.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for id in [
        "chart-server-load",
        "chart-server-kv",
        "chart-ttft-decomposition",
    ] {
        assert!(html.contains(id), "{id} missing from report.html");
    }
    assert!(html.contains("server queue time (mean)"));
}

#[test]
fn a_metrics_page_that_cannot_be_scraped_is_warned_about_once_and_the_run_goes_on() {
    // A port nothing listens on: every scrape is refused.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new("sim");
    sc.rates = "[40, 60]";
    let extra =
        format!("server_metrics:\n  url: http://127.0.0.1:{port}/metrics\n  interval: 200ms\n");
    sc.extra = Box::leak(extra.into_boxed_str());
    let p = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let r = run_ladder(&p, &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    assert_eq!(
        r.stderr
            .matches("warning: cannot scrape server metrics")
            .count(),
        1,
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(&format!("127.0.0.1:{port}/metrics")));
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    assert_eq!(rd.rungs.len(), 3);
    let m = server_keys(&dir, "40");
    assert!(f(&m, "server_scrape_failures") >= 1.0, "{m:?}");
    assert!(!m.contains_key("server_max_waiting"), "{m:?}");
    assert!(!dir.join("server_metrics_rate_40.jsonl").exists());
    let run_json = std::fs::read_to_string(dir.join("run.json")).unwrap();
    assert!(run_json.contains("cannot scrape server metrics"));
}

#[test]
fn server_metrics_can_be_turned_off() {
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new("sim");
    sc.extra = "server_metrics: { enabled: false }\n";
    let p = sc.write(tmp.path());
    let out = tmp.path().join("out");
    let r = run_ladder(&p, &out, LIMIT);
    assert!(r.status.success(), "{}", r.all());
    let dir = run_dir(&out).unwrap();
    check_folder(&dir);
    assert!(server_keys(&dir, "40").is_empty());
    assert!(!dir.join("server_metrics_rate_40.jsonl").exists());
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(!html.contains("chart-server-load"), "no data, no chart");
}

#[test]
fn a_bad_server_metrics_section_is_refused_with_its_location() {
    let tmp = tempfile::tempdir().unwrap();
    let mut sc = Sc::new("sim");
    sc.extra = "server_metrics:\n  url: ftp://user:pw@host/metrics\n  interval: 10ms\n  \
                api_key_env: my-token\n";
    let p = sc.write(tmp.path());
    let r = spawn(ladder_cmd(&["validate", p.to_str().unwrap()])).finish(LIMIT);
    assert_eq!(r.status.code(), Some(2), "{}", r.all());
    let all = r.all();
    for needle in [
        "server_metrics.url",
        "server_metrics.interval",
        "server_metrics.api_key_env",
        "at least 100ms",
    ] {
        assert!(all.contains(needle), "{needle}: {all}");
    }
}

#[test]
fn compare_names_the_server_side_changes_next_to_the_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for (name, seqs) in [("base", 16), ("cand", 2)] {
        let d = tmp.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        let mut sc = capped_sim();
        let extra = format!(
            "sim:\n  max_num_seqs: {seqs}\n  step_base_ms: 10\n  step_per_seq_ms: 0\n  \
             kv_cache_tokens: 4096\n  max_model_len: 512\nserver_metrics:\n  interval: 200ms\n"
        );
        sc.extra = Box::leak(extra.into_boxed_str());
        let p = sc.write(&d);
        let out = d.join("out");
        let r = run_ladder(&p, &out, LIMIT);
        assert!(r.status.success(), "{}", r.all());
        dirs.push(run_dir(&out).unwrap());
    }
    let r = spawn(ladder_cmd(&[
        "compare",
        dirs[0].to_str().unwrap(),
        dirs[1].to_str().unwrap(),
    ]))
    .finish(LIMIT);
    no_panic(&r);
    assert!(matches!(r.status.code(), Some(0 | 1)), "{}", r.all());
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("server side, rate 200:"))
        .unwrap_or_else(|| panic!("no server-side line: {}", r.all()));
    // Two sequences instead of sixteen: the same load queues far longer.
    assert!(line.contains("server queue time +"), "{line}");
    assert!(line.contains("max waiting"), "{line}");
}

#[test]
fn a_concurrency_rung_scrapes_from_the_end_of_its_warmup() {
    // 2 users, 4 warmup then 8 measured requests: the server's own request count for the
    // rung covers the 8 measured ones only (the scrape starts when the warmup phase ends).
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: sim\n  api: completions\n  \
         request_timeout: 20s\nmodel: m\ntokenizer: {TOKENIZER}\nworkload:\n  \
         dataset: random\n  input_tokens: 16\n  output_tokens: 10\n  requests_per_rung: 8\n  \
         seed: 0\nload:\n  concurrency: [2]\n  warmup_requests: 4\n  cooldown: 0s\n\
         sim:\n  step_base_ms: 10\n  step_per_seq_ms: 0\nserver_metrics:\n  interval: 100ms\n"
    );
    let sc = tmp.path().join("rel.yaml");
    std::fs::write(&sc, text).unwrap();
    let out = tmp.path().join("out");
    let r = run_ladder(&sc, &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    let dir = run_dir(&out).expect("a result folder");
    let m = server_keys(&dir, "2");
    assert_eq!(f(&m, "server_e2e_count"), 8.0, "{m:?}");
    assert_eq!(f(&m, "server_itl_count"), 8.0 * 9.0, "{m:?}");
}
