//! `endpoint.api: embeddings` end to end against the built-in simulator: batches of inputs
//! of exact lengths, token counts as the server counted them, latency without TTFT/TPOT/ITL
//! (absent keys, not 0 or NaN) in every output, compare's pooled defaults, the preflight
//! message for a server without embeddings (llama.cpp's 501, vLLM's 404), and the scenario
//! checks.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::{check_folder, ladder_cmd, no_panic, pooled, run_dir, run_ladder, spawn, TOKENIZER};

const LIMIT: Duration = Duration::from_secs(120);

fn scenario(dir: &Path, base_url: &str, extra: &str) -> std::path::PathBuf {
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: {base_url}\n  api: embeddings\n  \
         request_timeout: 5s\nmodel: ladder-sim\ntokenizer: {TOKENIZER}\nworkload:\n  \
         dataset: random\n  input_tokens: 16\n  batch_size: 3\n  requests_per_rung: 12\n  \
         seed: 0\nload:\n  arrival: poisson\n  rates: [20, 40]\n  warmup_requests: 2\n  \
         cooldown: 0s\n{extra}"
    );
    let p = dir.join("rel.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn an_embeddings_ladder_on_the_simulator_has_latency_and_input_tokens_and_no_token_timings() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "sim", "slo:\n  e2e_ms: 2000\n");
    let out = tmp.path().join("out");
    let r = run_ladder(&sc, &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    // The rung lines lead with E2E, never a TTFT of 0.
    assert!(r.stderr.contains("p50 E2E"), "{}", r.stderr);
    assert!(!r.all().contains("TTFT 0 ms"), "{}", r.all());
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    assert_eq!(rd.rungs.len(), 2);
    for rung in &rd.rungs {
        let s = &rung.summary;
        assert_eq!(s.completed, 12, "rung {}", s.rate);
        // 12 requests of 3 inputs of 16 tokens: the simulator counts words, as the tokenizer.
        assert_eq!(s.total_input_tokens, 12 * 3 * 16);
        assert_eq!(s.total_output_tokens, 0);
        assert!(s.input_throughput() > 0.0);
        let lines = rd.requests(rung).unwrap();
        for l in lines.iter().filter(|l| !l.warmup) {
            assert_eq!(l.input_tokens, 48, "{l:?}");
            assert_eq!(l.server_prompt_tokens, Some(48), "{l:?}");
            assert!(l.ttft_ms.is_none() && l.first_token_ms.is_none(), "{l:?}");
            assert!(l.e2e_ms > 0.0);
        }
        let file = dir.join(format!("result_rate_{}.json", s.rate));
        let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let m = v.as_object().unwrap();
        assert_eq!(m["api"], "embeddings");
        assert!(m["input_throughput"].as_f64().unwrap() > 0.0);
        assert!(m["median_e2el_ms"].as_f64().unwrap() > 0.0);
        assert_eq!(m["total_token_throughput"], m["input_throughput"]);
        // Absent, not 0, null or NaN: no key of a token timing at all (the server's own
        // `server_*` keys are the simulator's page, not ladder's measurement).
        for k in m.keys().filter(|k| !k.starts_with("server_")) {
            assert!(
                !ladder::scenario::endpoints::is_token_timing_key(k),
                "{k} in {}",
                file.display()
            );
        }
        assert!(!v.to_string().contains("NaN"));
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("input tok/s") && md.contains("E2E p50 (ms)"),
        "{md}"
    );
    assert!(!md.contains("| TTFT p50"), "{md}");
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    assert_eq!(row[col("median_ttft_ms")], "", "{csv}");
    assert!(!row[col("median_e2el_ms")].is_empty(), "{csv}");
    let analysis = std::fs::read_to_string(dir.join("analysis.json")).unwrap();
    assert!(!analysis.contains("median_ttft_ms"), "{analysis}");

    // Compare of the folder with itself: the pooled defaults (no TTFT/TPOT checks); never a
    // regression (12 requests a rung leave most checks inconclusive: exit 0 or 2).
    let d = dir.to_str().unwrap();
    let cmp = spawn(ladder_cmd(&["compare", d, d])).finish(LIMIT);
    no_panic(&cmp);
    assert!(matches!(cmp.status.code(), Some(0 | 2)), "{}", cmp.all());
    assert!(
        cmp.stdout.contains("total_token_throughput"),
        "{}",
        cmp.stdout
    );
    assert!(cmp.stdout.contains("median_e2el_ms"), "{}", cmp.stdout);
    assert!(!cmp.stdout.contains("ttft"), "{}", cmp.stdout);
}

/// A server with models but no embeddings endpoint, answering `status` there (llama.cpp
/// without `--embeddings`: 501; vLLM serving a generation model: 404).
fn no_embeddings_server(status: u16) -> String {
    pooled::refusing(
        "/v1/embeddings",
        status,
        "This server does not support embeddings. Start it with `--embeddings`",
    )
}

#[test]
fn preflight_names_the_server_flag_when_embeddings_are_off() {
    for status in [501, 404] {
        let url = no_embeddings_server(status);
        let tmp = tempfile::tempdir().unwrap();
        let sc = scenario(tmp.path(), &url, "");
        let r = run_ladder(&sc, &tmp.path().join("out"), LIMIT);
        no_panic(&r);
        assert!(!r.status.success(), "{status}: {}", r.all());
        let all = r.all();
        assert!(
            all.contains(&format!("answered {status}"))
                && all.contains("--embeddings (llama.cpp")
                && all.contains("--task embed (vLLM"),
            "{status}: {all}"
        );
    }
}

#[test]
fn what_an_embeddings_rung_cannot_measure_is_refused_by_validate() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("slo:\n  ttft_ms: 100\n", "slo.ttft_ms"),
        (
            "gate:\n  - { metric: median_ttft_ms, max_increase: 10% }\n",
            "median_ttft_ms",
        ),
        (
            "sweep:\n  field: output_tokens\n  values: [4, 8]\n",
            "output_tokens",
        ),
    ];
    for (extra, named) in cases {
        let sc = scenario(tmp.path(), "sim", extra);
        let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
        no_panic(&r);
        assert!(!r.status.success(), "{extra}: {}", r.all());
        assert!(
            r.all().contains(named) && r.all().contains("generates no tokens"),
            "{extra}: {}",
            r.all()
        );
    }
    // `batch_size` belongs to embeddings alone.
    let text = std::fs::read_to_string(scenario(tmp.path(), "sim", ""))
        .unwrap()
        .replace("api: embeddings", "api: chat");
    let sc = tmp.path().join("chat.yaml");
    std::fs::write(&sc, text).unwrap();
    let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
    assert!(!r.status.success(), "{}", r.all());
    assert!(r.all().contains("batch_size"), "{}", r.all());
    // A good embeddings scenario passes.
    let sc = scenario(tmp.path(), "sim", "");
    let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
    assert!(r.status.success(), "{}", r.all());
}

/// An embeddings server that answers its first two requests (preflight's probes) well and
/// then, in turn: a 200 of 41 MiB, a 500 echoing the key, a 200 with one vector short, and a
/// 200 carrying an error object that echoes the key.
fn hostile_embeddings_server() -> String {
    pooled::answering("/v1/embeddings", |i, v| {
        let inputs = v["input"].as_array().map_or(1, Vec::len);
        let good = || {
            let data: Vec<Value> = (0..inputs)
                .map(|i| serde_json::json!({"index": i, "embedding": [0.5, -0.5]}))
                .collect();
            serde_json::json!({"data": data, "usage": {"prompt_tokens": 16 * inputs}}).to_string()
        };
        let key = support::KEY;
        match i {
            0 | 1 => (200, good()),
            // 41 MiB of one long vector: past the 40 MiB cap.
            i if (i - 2) % 4 == 0 => (
                200,
                pooled::oversized(r#"{"data":[{"embedding":["#, "0.1,", "0.1]}]}"),
            ),
            i if (i - 2) % 4 == 1 => (500, format!("{{\"error\":\"backend said {key}\"}}")),
            i if (i - 2) % 4 == 2 => (
                200,
                serde_json::json!({"data": [{"embedding": [1.0]}]}).to_string(),
            ),
            _ => (
                200,
                format!("{{\"error\":{{\"message\":\"bad key {key}\"}}}}"),
            ),
        }
    })
}

#[test]
fn hostile_embeddings_answers_end_in_one_class_each_and_the_key_is_never_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "sim", "");
    let (rd, details) = pooled::hostile_run(&sc, &hostile_embeddings_server(), 8);
    let s = &rd.rungs[0].summary;
    assert_eq!(s.completed, 0, "{s:?}");
    assert_eq!(s.errors_by_class["malformed"], 4, "{s:?}");
    assert_eq!(s.errors_by_class["server_5xx"], 2, "{s:?}");
    assert_eq!(s.errors_by_class["stream_error"], 2, "{s:?}");
    assert!(
        details
            .iter()
            .any(|d| d.contains("larger than 41943040 bytes")),
        "{details:?}"
    );
    assert!(
        details.iter().any(|d| d.contains("1 vectors for 3 inputs")),
        "{details:?}"
    );
}
