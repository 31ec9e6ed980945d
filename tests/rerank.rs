//! `endpoint.api: rerank` end to end against the built-in simulator: a query and documents of
//! exact lengths, token counts of the query-document pairs as the server counts them, latency
//! without TTFT/TPOT/ITL keys, compare's pooled defaults, the preflight message for a server
//! without rerank (llama.cpp's 501, vLLM's 404), hostile answers, and the scenario checks.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::{check_folder, ladder_cmd, no_panic, pooled, run_dir, run_ladder, spawn, TOKENIZER};

const LIMIT: Duration = Duration::from_secs(120);

fn scenario(dir: &Path, base_url: &str, extra: &str) -> std::path::PathBuf {
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: {base_url}\n  api: rerank\n  \
         request_timeout: 5s\nmodel: ladder-sim\ntokenizer: {TOKENIZER}\nworkload:\n  \
         dataset: random\n  query_tokens: 8\n  input_tokens: 16\n  batch_size: 3\n  \
         requests_per_rung: 12\n  seed: 0\nload:\n  arrival: poisson\n  rates: [20, 40]\n  \
         warmup_requests: 2\n  cooldown: 0s\n{extra}"
    );
    let p = dir.join("rr.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_rerank_ladder_on_the_simulator_counts_its_pairs_and_has_no_token_timings() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "sim", "slo:\n  e2e_ms: 2000\n");
    let out = tmp.path().join("out");
    let r = run_ladder(&sc, &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    assert!(r.stderr.contains("p50 E2E"), "{}", r.stderr);
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    assert_eq!(rd.rungs.len(), 2);
    // A query of 8 tokens scored against 3 documents of 16: pairs of 24, 72 tokens a request,
    // as the simulator counts them (a word a token, as the tokenizer here).
    for rung in &rd.rungs {
        let s = &rung.summary;
        assert_eq!(s.completed, 12, "rung {}", s.rate);
        assert_eq!(s.total_input_tokens, 12 * 72);
        assert_eq!(s.total_output_tokens, 0);
        assert!(s.input_throughput() > 0.0);
        for l in rd.requests(rung).unwrap().iter().filter(|l| !l.warmup) {
            assert_eq!(l.input_tokens, 72, "{l:?}");
            assert_eq!(l.server_prompt_tokens, Some(72), "{l:?}");
            assert!(l.ttft_ms.is_none() && l.first_token_ms.is_none(), "{l:?}");
            assert!(l.e2e_ms > 0.0);
        }
        let file = dir.join(format!("result_rate_{}.json", s.rate));
        let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let m = v.as_object().unwrap();
        assert_eq!(m["api"], "rerank");
        assert!(m["median_e2el_ms"].as_f64().unwrap() > 0.0);
        assert_eq!(m["total_token_throughput"], m["input_throughput"]);
        for k in m.keys().filter(|k| !k.starts_with("server_")) {
            assert!(
                !ladder::scenario::endpoints::is_token_timing_key(k),
                "{k} in {}",
                file.display()
            );
        }
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("input tok/s") && !md.contains("| TTFT p50"),
        "{md}"
    );
    // `ladder report` reads the folder back (the `api: rerank` key included).
    let d = dir.to_str().unwrap();
    let rep = spawn(ladder_cmd(&["report", d])).finish(LIMIT);
    no_panic(&rep);
    assert!(rep.status.success(), "{}", rep.all());
    let cmp = spawn(ladder_cmd(&["compare", d, d])).finish(LIMIT);
    no_panic(&cmp);
    assert!(matches!(cmp.status.code(), Some(0 | 2)), "{}", cmp.all());
    assert!(
        cmp.stdout.contains("median_e2el_ms") && !cmp.stdout.contains("ttft"),
        "{}",
        cmp.stdout
    );
}

#[test]
fn the_simulators_rerank_costs_grow_with_the_documents() {
    // One user, one request at a time: the E2E is the prefill of the pairs (docs/sim.md).
    let tmp = tempfile::tempdir().unwrap();
    let mut p50 = Vec::new();
    for docs in [1, 16] {
        let text = std::fs::read_to_string(scenario(tmp.path(), "sim", ""))
            .unwrap()
            .replace("batch_size: 3", &format!("batch_size: {docs}"))
            .replace("input_tokens: 16", "input_tokens: 200")
            .replace("arrival: poisson\n  rates: [20, 40]", "concurrency: [1]");
        let sc = tmp.path().join(format!("d{docs}.yaml"));
        std::fs::write(&sc, text).unwrap();
        let out = tmp.path().join(format!("out{docs}"));
        let r = run_ladder(&sc, &out, LIMIT);
        no_panic(&r);
        assert!(r.status.success(), "{}", r.all());
        let rd = check_folder(&run_dir(&out).unwrap());
        let s = &rd.rungs[0].summary;
        assert_eq!(s.total_input_tokens, 12 * docs * 208, "{s:?}");
        p50.push(s.stats(ladder::metrics::Latency::E2el).median);
    }
    // 16 × 208 = 3328 prefill tokens against 208: the default engine takes longer for them.
    assert!(p50[1] > p50[0] * 2.0, "p50 E2E {p50:?}");
}

/// A server with models but no rerank endpoint, answering `status` there (llama.cpp
/// without `--reranking`: 501 with its own message; vLLM serving a generation model: 404).
fn no_rerank_server(status: u16) -> String {
    pooled::refusing(
        "/v1/rerank",
        status,
        "This server does not support reranking. Start it with `--reranking`",
    )
}

#[test]
fn preflight_names_the_server_flags_when_rerank_is_off() {
    for status in [501, 404] {
        let url = no_rerank_server(status);
        let tmp = tempfile::tempdir().unwrap();
        let sc = scenario(tmp.path(), &url, "");
        let r = run_ladder(&sc, &tmp.path().join("out"), LIMIT);
        no_panic(&r);
        assert!(!r.status.success(), "{status}: {}", r.all());
        let all = r.all();
        assert!(
            all.contains(&format!("/v1/rerank answered {status}"))
                && all.contains("llama-server with --reranking (or --embedding --pooling rank)")
                && all.contains("vLLM with --task score"),
            "{status}: {all}"
        );
    }
}

#[test]
fn a_rerank_scenario_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(scenario(tmp.path(), "sim", "")).unwrap();
    let cases: [(String, &str); 7] = [
        (good.replace("  query_tokens: 8\n", ""), "needs `workload.query_tokens`"),
        (
            good.replace("api: rerank", "api: chat")
                .replace("  batch_size: 3\n", ""),
            "`query_tokens` is the query of a rerank request",
        ),
        (
            format!("{good}slo:\n  ttft_ms: 100\n"),
            "generates no tokens",
        ),
        (
            good.replace("  seed: 0\n", "  seed: 0\n  input_length: server\n"),
            "query-document pairs",
        ),
        (
            good.replace(
                "  seed: 0\n",
                "  seed: 0\n  shared_prefix: { groups: 2, prefix_tokens: 4, prompts_per_group: 2 }\n",
            ),
            "does not combine with `endpoint.api: rerank`",
        ),
        (
            good.replace("query_tokens: 8", "query_tokens: 99999999"),
            "a query of 99999999 tokens is longer than the limit",
        ),
        (
            good.replace("batch_size: 3", "batch_size: 100000"),
            "1400000 prompts",
        ),
    ];
    for (i, (text, says)) in cases.iter().enumerate() {
        let sc = tmp.path().join(format!("bad{i}.yaml"));
        std::fs::write(&sc, text).unwrap();
        let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
        no_panic(&r);
        assert!(!r.status.success(), "{says}: {}", r.all());
        assert!(r.all().contains(says), "{says}: {}", r.all());
    }
    let sc = scenario(tmp.path(), "sim", "");
    let r = spawn(ladder_cmd(&["validate", sc.to_str().unwrap()])).finish(LIMIT);
    assert!(r.status.success(), "{}", r.all());
}

/// A rerank server that checks each body's shape (a `query` string and 3 `documents`) and
/// answers its first two requests (preflight's probes) well, then in turn: a 200 of 41 MiB
/// (past the pooled cap), a result short, a document scored twice, a 500 echoing the key,
/// and a 200 error object echoing the key.
fn hostile_rerank_server() -> String {
    pooled::answering("/v1/rerank", |i, v| {
        let docs = v["documents"].as_array().map_or(0, Vec::len);
        let shaped = v["query"].is_string() && v.get("input").is_none();
        let result = |k: usize| serde_json::json!({"index": k, "relevance_score": 0.5});
        let list = |ks: &[usize]| {
            let r: Vec<Value> = ks.iter().map(|k| result(*k)).collect();
            serde_json::json!({"results": r, "usage": {"total_tokens": 72}}).to_string()
        };
        let key = support::KEY;
        match i {
            _ if !shaped => (422, "not a rerank body".to_owned()),
            0 => (200, list(&[0])),
            1 => (200, list(&(0..docs).collect::<Vec<_>>())),
            // 41 MiB of results (as vLLM echoing long documents would send): past the cap.
            i if (i - 2) % 5 == 0 => (
                200,
                pooled::oversized(
                    r#"{"results":["#,
                    r#"{"index":0,"relevance_score":0.5,"document":{"text":"padding padding padding"}},"#,
                    r#"{"index":1,"relevance_score":0.5}]}"#,
                ),
            ),
            i if (i - 2) % 5 == 1 => (200, list(&[0, 1])),
            i if (i - 2) % 5 == 2 => (200, list(&[0, 1, 1])),
            i if (i - 2) % 5 == 3 => (500, format!("{{\"error\":\"backend said {key}\"}}")),
            _ => (
                200,
                format!("{{\"error\":{{\"message\":\"bad key {key}\"}}}}"),
            ),
        }
    })
}

#[test]
fn hostile_rerank_answers_end_in_one_class_each_and_the_key_is_never_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "sim", "");
    let (rd, details) = pooled::hostile_run(&sc, &hostile_rerank_server(), 10);
    let s = &rd.rungs[0].summary;
    assert_eq!(s.completed, 0, "{s:?}");
    // Two of each: 41 MiB, a result short, a document twice (malformed); 500; error object.
    assert_eq!(s.errors_by_class["malformed"], 6, "{s:?}");
    assert_eq!(s.errors_by_class["server_5xx"], 2, "{s:?}");
    assert_eq!(s.errors_by_class["stream_error"], 2, "{s:?}");
    let count = |needle: &str| details.iter().filter(|d| d.contains(needle)).count();
    assert_eq!(count("larger than 41943040 bytes"), 2, "{details:?}");
    assert_eq!(count("2 results for 3 expected"), 2, "{details:?}");
    assert_eq!(count("document 1 is scored twice"), 2, "{details:?}");
}
