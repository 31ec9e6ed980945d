//! Integration tests of the built-in simulator over loopback with a real HTTP client.
//! Shapes are asserted with ratios and generous margins, never tight wall-clock bounds.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use ladder::sim::{SimConfig, SimServer};
use serde_json::{json, Value};
use tokio::time::Instant;

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A fast configuration for functional tests.
fn fast() -> SimConfig {
    SimConfig {
        speed: 50.0,
        ..SimConfig::default()
    }
}

async fn start(cfg: SimConfig) -> (SimServer, String) {
    let s = SimServer::start(cfg, loopback()).await.unwrap();
    let base = format!("http://{}", s.local_addr());
    (s, base)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("event without `data: `: {e:?}"))
                .to_string()
        })
        .collect()
}

fn completion(prompt: &str, max_tokens: u32, stream: bool) -> Value {
    json!({"model": "sim-model", "prompt": prompt, "max_tokens": max_tokens,
           "stream": stream, "ignore_eos": true,
           "stream_options": {"include_usage": true}})
}

/// The simulator's `/metrics` page.
async fn metrics_page(c: &reqwest::Client, base: &str) -> String {
    c.get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn post(c: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    c.post(url).json(body).send().await.unwrap()
}

async fn post_fault(
    c: &reqwest::Client,
    url: &str,
    body: &Value,
    fault: &str,
) -> reqwest::Response {
    c.post(url)
        .header("x-ladder-fault", fault)
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_models_and_metrics() {
    let (s, base) = start(SimConfig {
        served_model_names: vec!["my-model".into()],
        ..fast()
    })
    .await;
    let c = client();
    assert_eq!(
        c.get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let models: Value = c
        .get(format!("{base}/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["sim-model", "my-model"]);

    let mut body = completion("one two three four", 5, false);
    body["model"] = json!("my-model");
    let r = post(&c, &format!("{base}/v1/completions"), &body).await;
    assert_eq!(r.status(), 200);
    let text = metrics_page(&c, &base).await;
    for name in [
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:gpu_cache_usage_perc",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:request_success_total",
    ] {
        assert!(text.contains(&format!("# TYPE {name} ")), "{name} missing");
    }
    assert!(text.contains("vllm:prompt_tokens_total{model_name=\"sim-model\"} 4\n"));
    assert!(text.contains("vllm:generation_tokens_total{model_name=\"sim-model\"} 5\n"));
    assert!(text.contains(
        "vllm:request_success_total{finished_reason=\"length\",model_name=\"sim-model\"} 1\n"
    ));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_completions_framing_and_exact_token_counts() {
    let (s, base) = start(fast()).await;
    let c = client();
    let r = post(
        &c,
        &format!("{base}/v1/completions"),
        &completion("a b c", 7, true),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let data = sse_data(&r.text().await.unwrap());
    assert_eq!(data.last().unwrap(), "[DONE]");
    let events: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let (usage, tokens) = events.split_last().unwrap();
    assert_eq!(tokens.len(), 7, "one chunk per token by default");
    let mut text = String::new();
    for (i, e) in tokens.iter().enumerate() {
        assert_eq!(e["object"], "text_completion");
        assert_eq!(e["model"], "sim-model");
        assert!(e["id"].as_str().unwrap().starts_with("cmpl-"));
        assert!(e["created"].is_u64());
        let ch = &e["choices"][0];
        assert_eq!(ch["index"], 0);
        let t = ch["text"].as_str().unwrap();
        assert!(t.ends_with(' '), "chunk text ends with a space: {t:?}");
        text.push_str(t);
        let want = if i == 6 { json!("length") } else { Value::Null };
        assert_eq!(ch["finish_reason"], want);
    }
    assert_eq!(text.split_whitespace().count(), 7);
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 3);
    assert_eq!(usage["usage"]["completion_tokens"], 7);
    assert_eq!(usage["usage"]["total_tokens"], 10);

    // Without include_usage there is no usage chunk; chunk_tokens groups tokens.
    let mut body = completion("a b c", 7, true);
    body["stream_options"] = json!({"include_usage": false});
    let data = sse_data(
        &post(&c, &format!("{base}/v1/completions"), &body)
            .await
            .text()
            .await
            .unwrap(),
    );
    assert_eq!(data.len(), 8);
    assert!(data.iter().all(|d| !d.contains("\"usage\"")));
    s.shutdown().await;

    let (s, base) = start(SimConfig {
        chunk_tokens: 3,
        ..fast()
    })
    .await;
    let data = sse_data(
        &post(
            &c,
            &format!("{base}/v1/completions"),
            &completion("x", 7, true),
        )
        .await
        .text()
        .await
        .unwrap(),
    );
    // The first token alone, then ceil(6 / 3) = 2 chunks, then usage and [DONE].
    assert_eq!(data.len(), 5, "{data:?}");
    let words: usize = data[..3]
        .iter()
        .map(|d| {
            let v: Value = serde_json::from_str(d).unwrap();
            v["choices"][0]["text"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .count()
        })
        .sum();
    assert_eq!(words, 7);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streaming_and_non_streaming() {
    let (s, base) = start(fast()).await;
    let c = client();
    let url = format!("{base}/v1/chat/completions");
    let body = json!({"model": "sim-model", "stream": true, "ignore_eos": true,
        "max_completion_tokens": 4, "stream_options": {"include_usage": true},
        "messages": [{"role": "system", "content": "be brief"},
                     {"role": "user", "content": [{"type": "text", "text": "hello there you"}]}]});
    let data = sse_data(&post(&c, &url, &body).await.text().await.unwrap());
    assert_eq!(data.last().unwrap(), "[DONE]");
    let events: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(events
        .iter()
        .all(|e| e["object"] == "chat.completion.chunk"));
    let content: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content.split_whitespace().count(), 4);
    assert_eq!(events.last().unwrap()["usage"]["prompt_tokens"], 5);
    assert_eq!(events.last().unwrap()["usage"]["completion_tokens"], 4);

    let mut body = body;
    body["stream"] = json!(false);
    let v: Value = post(&c, &url, &body).await.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    let text = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(text.split_whitespace().count(), 4);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["completion_tokens"], 4);

    // Non-streaming completions, and random lengths without ignore_eos.
    let curl = format!("{base}/v1/completions");
    let v: Value = post(&c, &curl, &completion("p q", 9, false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["usage"]["completion_tokens"], 9);
    assert_eq!(
        v["choices"][0]["text"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        9
    );
    let mut lengths = Vec::new();
    for _ in 0..12 {
        let v: Value = post(
            &c,
            &curl,
            &json!({"model": "sim-model", "prompt": "p", "max_tokens": 20}),
        )
        .await
        .json()
        .await
        .unwrap();
        let n = v["usage"]["completion_tokens"].as_u64().unwrap();
        assert!((1..=20).contains(&n));
        let want = if n == 20 { "length" } else { "stop" };
        assert_eq!(v["choices"][0]["finish_reason"], want);
        lengths.push(n);
    }
    lengths.dedup();
    assert!(lengths.len() > 1, "lengths vary without ignore_eos");
    s.shutdown().await;
}

#[tokio::test]
async fn reasoning_comes_first_in_its_own_field_and_usage_splits_it() {
    let (s, base) = start(SimConfig {
        reasoning_tokens: 3,
        ..fast()
    })
    .await;
    let c = client();
    let url = format!("{base}/v1/chat/completions");
    let body = json!({"model": "sim-model", "stream": true, "ignore_eos": true,
        "max_tokens": 5, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hello"}]});
    let data = sse_data(&post(&c, &url, &body).await.text().await.unwrap());
    let events: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    // In order: role, three reasoning tokens, then two content tokens.
    let fields: Vec<(&str, usize)> = events
        .iter()
        .filter_map(|e| {
            let d = e["choices"][0]["delta"].as_object()?;
            ["reasoning_content", "content"].into_iter().find_map(|k| {
                let t = d.get(k)?.as_str().filter(|t| !t.is_empty())?;
                Some((k, t.split_whitespace().count()))
            })
        })
        .collect();
    assert_eq!(
        fields,
        [
            ("reasoning_content", 1),
            ("reasoning_content", 1),
            ("reasoning_content", 1),
            ("content", 1),
            ("content", 1)
        ]
    );
    let usage = &events.last().unwrap()["usage"];
    assert_eq!(usage["completion_tokens"], 5);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 3);

    let mut body = body;
    body["stream"] = json!(false);
    let v: Value = post(&c, &url, &body).await.json().await.unwrap();
    let m = &v["choices"][0]["message"];
    assert_eq!(
        m["reasoning_content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        3
    );
    assert_eq!(m["content"].as_str().unwrap().split_whitespace().count(), 2);
    assert_eq!(
        v["usage"]["completion_tokens_details"]["reasoning_tokens"],
        3
    );

    // Completions never reason.
    let v: Value = post(
        &c,
        &format!("{base}/v1/completions"),
        &completion("p", 4, false),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        v["choices"][0]["text"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        4
    );
    assert!(v["usage"].get("completion_tokens_details").is_none());
    s.shutdown().await;
}

async fn texts(seed: u64) -> Vec<String> {
    let (s, base) = start(SimConfig { seed, ..fast() }).await;
    let c = client();
    let mut out = Vec::new();
    for _ in 0..3 {
        let v: Value = post(
            &c,
            &format!("{base}/v1/completions"),
            &json!({"model": "sim-model", "prompt": "p", "max_tokens": 12}),
        )
        .await
        .json()
        .await
        .unwrap();
        out.push(v["choices"][0]["text"].as_str().unwrap().to_string());
    }
    s.shutdown().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_is_deterministic_given_a_seed() {
    let a = texts(7).await;
    assert_eq!(a, texts(7).await);
    assert_ne!(a, texts(8).await);
    assert_ne!(a[0], a[1], "requests differ within a run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_is_required_when_set() {
    let s = SimServer::start_with_api_key(fast(), loopback(), Some("sekret".into()))
        .await
        .unwrap();
    let base = format!("http://{}", s.local_addr());
    let c = client();
    let url = format!("{base}/v1/completions");
    let body = completion("a", 2, false);
    let r = post(&c, &url, &body).await;
    assert_eq!(r.status(), 401);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "invalid_api_key");
    assert!(v["error"]["message"].is_string() && v["error"]["type"].is_string());
    assert!(!v.to_string().contains("sekret"));
    let r = c
        .post(&url)
        .bearer_auth("wrong")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = c.get(format!("{base}/v1/models")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = c
        .post(&url)
        .bearer_auth("sekret")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        c.get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    s.shutdown().await;

    // api_key_env naming an unset variable is refused instead of serving without auth.
    let cfg = SimConfig {
        api_key_env: Some("LADDER_SIM_TEST_SURELY_UNSET_VAR".into()),
        ..fast()
    };
    let err = SimServer::start(cfg, loopback()).await.err().unwrap();
    assert!(err.to_string().contains("LADDER_SIM_TEST_SURELY_UNSET_VAR"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_get_openai_errors_and_the_server_keeps_serving() {
    let (s, base) = start(SimConfig {
        max_model_len: 100,
        ..fast()
    })
    .await;
    let c = client();
    let url = format!("{base}/v1/completions");
    let good = completion("a b", 3, false);

    let r = c.post(&url).body("{not json").send().await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "invalid_json");
    assert_eq!(post(&c, &url, &good).await.status(), 200);

    let r = post(&c, &url, &json!({"prompt": "a"})).await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "missing_model"
    );

    let r = post(&c, &url, &json!({"model": "nope", "prompt": "a"})).await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "model_not_found"
    );

    let long = "w ".repeat(90);
    let r = post(&c, &url, &completion(&long, 20, false)).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    assert!(v["error"]["message"].as_str().unwrap().contains("100"));

    let r = post(
        &c,
        &format!("{base}/v1/chat/completions"),
        &json!({"model": "sim-model"}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let r = post(&c, &url, &completion("a", 0, false)).await;
    assert_eq!(r.status(), 400);

    let r = post(&c, &url, &good).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap()["usage"]["completion_tokens"],
        3
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_faults() {
    let (s, base) = start(SimConfig {
        stall_ms: 60_000,
        ..fast()
    })
    .await;
    let c = client();
    let url = format!("{base}/v1/completions");
    let body = completion("a b", 6, true);

    let r = post_fault(&c, &url, &body, "http_500").await;
    assert_eq!(r.status(), 500);
    assert!(r.json::<Value>().await.unwrap()["error"]["message"].is_string());

    let r = post_fault(&c, &url, &body, "http_429").await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "1");

    let r = post_fault(&c, &url, &body, "unknown_model").await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "model_not_found"
    );

    // Dropped connection: some chunks arrive, then the body fails without [DONE].
    let mut r = post_fault(&c, &url, &body, "drop_mid_stream").await;
    assert_eq!(r.status(), 200);
    let mut got = Vec::new();
    let err = loop {
        match r.chunk().await {
            Ok(Some(b)) => got.extend_from_slice(&b),
            Ok(None) => panic!("stream ended cleanly: {}", String::from_utf8_lossy(&got)),
            Err(e) => break e,
        }
    };
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.contains("\"text\""),
        "partial stream before the drop: {text:?}"
    );
    assert!(!text.contains("[DONE]"));
    let _ = err;

    let data = sse_data(
        &post_fault(&c, &url, &body, "malformed_chunk")
            .await
            .text()
            .await
            .unwrap(),
    );
    let bad = data
        .iter()
        .filter(|d| *d != "[DONE]" && serde_json::from_str::<Value>(d).is_err())
        .count();
    assert_eq!(bad, 1, "{data:?}");

    let data = sse_data(
        &post_fault(&c, &url, &body, "stream_error")
            .await
            .text()
            .await
            .unwrap(),
    );
    let parsed: Vec<Value> = data
        .iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let err_at = parsed
        .iter()
        .position(|v| v.get("error").is_some())
        .unwrap();
    assert!(err_at >= 1, "tokens before the error object");
    assert!(parsed[err_at]["error"]["message"].is_string());

    let r = post_fault(&c, &url, &body, "bogus").await;
    assert_eq!(r.status(), 400);

    // Stall: the first chunks arrive, then nothing for longer than the client's timeout.
    let short = reqwest::Client::builder()
        .timeout(Duration::from_millis(1500))
        .build()
        .unwrap();
    let mut r = post_fault(&short, &url, &body, "stall").await;
    assert_eq!(r.status(), 200);
    let first = r.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"text\""));
    let err = loop {
        match r.chunk().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("stalled stream ended"),
            Err(e) => break e,
        }
    };
    assert!(err.is_timeout(), "{err}");

    // The server still serves normally afterwards.
    let r = post(&c, &url, &completion("a", 2, false)).await;
    assert_eq!(r.status(), 200);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampled_faults_follow_the_fractions_and_the_seed() {
    async fn statuses(seed: u64) -> Vec<u16> {
        let (s, base) = start(SimConfig {
            seed,
            fault_http_500: 0.3,
            fault_http_429: 0.2,
            ..fast()
        })
        .await;
        let c = client();
        let mut out = Vec::new();
        for _ in 0..40 {
            let r = post(
                &c,
                &format!("{base}/v1/completions"),
                &completion("a", 1, false),
            )
            .await;
            out.push(r.status().as_u16());
        }
        s.shutdown().await;
        out
    }
    let a = statuses(3).await;
    let n500 = a.iter().filter(|s| **s == 500).count();
    let n429 = a.iter().filter(|s| **s == 429).count();
    let n200 = a.iter().filter(|s| **s == 200).count();
    assert_eq!(n500 + n429 + n200, 40);
    assert!((4..=22).contains(&n500), "{a:?}");
    assert!((2..=16).contains(&n429), "{a:?}");
    assert!(n200 >= 8, "{a:?}");
    assert_eq!(a, statuses(3).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_limits_reject_with_retry_after() {
    // One slot, a long request in it; a queue of one behind it.
    let slow = SimConfig {
        max_num_seqs: 1,
        max_num_batched_tokens: 64,
        max_waiting: 1,
        max_queue_wait_ms: 60_000,
        step_base_ms: 20.0,
        reject_status: 503,
        retry_after_s: 2,
        ..SimConfig::default()
    };
    let (s, base) = start(slow.clone()).await;
    let c = client();
    let url = format!("{base}/v1/completions");
    let mut hold = post(&c, &url, &completion("a", 2000, true)).await;
    assert_eq!(hold.status(), 200);
    hold.chunk().await.unwrap();
    let queued = tokio::spawn({
        let (c, url) = (c.clone(), url.clone());
        async move { post(&c, &url, &completion("a", 2, false)).await.status() }
    });
    // Wait until the second request is waiting, then overflow the queue.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = metrics_page(&c, &base).await;
        if m.contains("vllm:num_requests_waiting{model_name=\"sim-model\"} 1\n") {
            break;
        }
        assert!(Instant::now() < deadline, "second request never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = post(&c, &url, &completion("a", 2, false)).await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "2");
    assert!(r.json::<Value>().await.unwrap()["error"]["message"].is_string());
    drop(hold); // the client leaves; its slot frees and the queued request runs
    assert_eq!(queued.await.unwrap(), 200);
    s.shutdown().await;

    // Queue-wait limit: a waiting request is rejected (429 by default) after the limit.
    let (s, base) = start(SimConfig {
        max_waiting: 10,
        max_queue_wait_ms: 200,
        reject_status: 429,
        ..slow
    })
    .await;
    let url = format!("{base}/v1/completions");
    let mut hold = post(&c, &url, &completion("a", 2000, true)).await;
    hold.chunk().await.unwrap();
    let r = post(&c, &url, &completion("a", 2, false)).await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "2");
    drop(hold);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_in_flight_streams() {
    let (s, base) = start(SimConfig {
        step_base_ms: 50.0,
        stall_ms: 600_000,
        ..SimConfig::default()
    })
    .await;
    let c = client();
    let url = format!("{base}/v1/completions");
    let mut long = post(&c, &url, &completion("a", 5000, true)).await;
    long.chunk().await.unwrap();
    let mut stalled = post_fault(&c, &url, &completion("a", 4, true), "stall").await;
    stalled.chunk().await.unwrap();
    s.shutdown().await;
    for r in [&mut long, &mut stalled] {
        let end = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match r.chunk().await {
                    Ok(Some(b)) => assert!(!String::from_utf8_lossy(&b).contains("[DONE]")),
                    Ok(None) => return true,
                    Err(_) => return false,
                }
            }
        })
        .await;
        assert!(end.is_ok(), "stream still open after shutdown");
    }
    assert!(c.get(format!("{base}/health")).send().await.is_err());
}

struct Outcome {
    ok: bool,
    status: u16,
    sent: Instant,
    ttft: Option<Duration>,
    end: Instant,
}

/// Open-loop: `n` streaming requests at `rate` per second, evenly spaced.
async fn rung(c: &reqwest::Client, url: &str, rate: f64, n: usize) -> Vec<Outcome> {
    rung_shaped(c, url, rate, n, 32, 16).await
}

/// Open-loop with `input` prompt words and exactly `output` tokens per request.
async fn rung_shaped(
    c: &reqwest::Client,
    url: &str,
    rate: f64,
    n: usize,
    input: usize,
    output: u32,
) -> Vec<Outcome> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..n {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / rate)).await;
        let (c, url) = (c.clone(), url.to_string());
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let body = json!({"model": "sim-model", "prompt": "w ".repeat(input), "max_tokens": output,
                              "ignore_eos": true, "stream": true});
            let mut ttft = None;
            let mut status = 0;
            let ok = match c.post(&url).json(&body).send().await {
                Ok(r) if r.status() != 200 => {
                    status = r.status().as_u16();
                    false
                }
                Ok(mut r) => loop {
                    status = 200;
                    match r.chunk().await {
                        Ok(Some(b)) => {
                            if ttft.is_none() && b.windows(6).any(|w| w == b"\"text\"") {
                                ttft = Some(sent.elapsed());
                            }
                        }
                        Ok(None) => break true,
                        Err(_) => break false,
                    }
                },
                _ => false,
            };
            Outcome {
                ok,
                status,
                sent,
                ttft,
                end: Instant::now(),
            }
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_curve_flattens_and_ttft_jumps_at_capacity() {
    let cfg = SimConfig {
        max_num_seqs: 8,
        chunk_tokens: 4,
        max_waiting: 1000,
        max_queue_wait_ms: 600_000,
        ..SimConfig::default()
    };
    let cap = cfg.capacity_rps(32, 16);
    assert!((25.0..45.0).contains(&cap), "capacity {cap}");
    let (s, base) = start(cfg).await;
    let c = client();
    let url = format!("{base}/v1/completions");
    let n = 40;
    let mut thr = Vec::new();
    let mut ttft = Vec::new();
    for mult in [0.4, 1.5, 3.0] {
        let out = rung(&c, &url, cap * mult, n).await;
        assert!(out.iter().all(|o| o.ok), "every request completes");
        let first = out.iter().map(|o| o.sent).min().unwrap();
        let last = out.iter().map(|o| o.end).max().unwrap();
        thr.push(n as f64 / (last - first).as_secs_f64());
        ttft.push(median(out.iter().map(|o| o.ttft.unwrap()).collect()));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("capacity {cap:.1} req/s; throughput {thr:.1?}; median ttft {ttft:?}");
    // Throughput rises below capacity, then flattens although the offered rate doubles.
    assert!(thr[1] > thr[0] * 1.3, "{thr:?}");
    assert!(thr[2] < thr[1] * 1.35, "{thr:?}");
    assert!(thr[2] < cap * 1.3, "{thr:?} vs capacity {cap}");
    // TTFT jumps once the queue grows.
    assert!(ttft[2] > ttft[0] * 3, "{ttft:?}");
    s.shutdown().await;
}

#[test]
fn cli_prints_the_bound_port_and_serves() {
    let sim =
        support::serve::SimProc::start(&["--speed", "50", "--served-model-names", "cli-model"]);
    let addr = sim.addr.clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let models: Value = rt.block_on(async {
        client()
            .get(format!("http://{addr}/v1/models"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    drop(sim);
    assert_eq!(models["data"][1]["id"], "cli-model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_cost_mode_streams_exact_counts_without_the_engine() {
    let (s, base) = start(SimConfig {
        zero_cost: true,
        max_num_seqs: 1,
        max_waiting: 0,
        chunk_tokens: 16,
        ..SimConfig::default()
    })
    .await;
    let c = client();
    let url = format!("{base}/v1/completions");
    // Many concurrent requests although the modelled engine would hold one.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (c, url) = (c.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            post(&c, &url, &completion("a b", 1000, true))
                .await
                .text()
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        let data = sse_data(&t.await.unwrap());
        assert_eq!(data.last().unwrap(), "[DONE]");
        // 1 + ceil(999 / 16) = 64 token chunks, then usage and [DONE].
        assert_eq!(data.len(), 66);
        let usage: Value = serde_json::from_str(&data[64]).unwrap();
        assert_eq!(usage["usage"]["completion_tokens"], 1000);
        let words: usize = data[..64]
            .iter()
            .map(|d| {
                let v: Value = serde_json::from_str(d).unwrap();
                v["choices"][0]["text"]
                    .as_str()
                    .unwrap()
                    .split_whitespace()
                    .count()
            })
            .sum();
        assert_eq!(words, 1000);
    }
    s.shutdown().await;
}

/// Manual benchmark of the zero-cost path: `cargo test --release --test sim -- --ignored
/// --nocapture zero_cost_throughput`. Prints tokens/s; asserts only completeness.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn zero_cost_throughput() {
    let (s, base) = start(SimConfig {
        zero_cost: true,
        ..SimConfig::default()
    })
    .await;
    let c = client();
    let url = format!("{base}/v1/completions");
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (c, url) = (c.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let mut r = post(&c, &url, &completion("a", 8000, true)).await;
            let mut bytes = 0;
            while let Some(b) = r.chunk().await.unwrap() {
                bytes += b.len();
            }
            bytes
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "zero-cost: {:.0} tokens/s over 16 streams, {:.1} MB/s",
        16.0 * 8000.0 / secs,
        total as f64 / secs / 1e6
    );
    s.shutdown().await;
}

/// Manual look at the default settings' ladder (128 in / 64 out) at speed 2:
/// `cargo test --test sim -- --ignored --nocapture default_ladder_shape`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn default_ladder_shape() {
    let cfg = SimConfig {
        speed: 2.0,
        ..SimConfig::default()
    };
    let cap = cfg.capacity_rps(128, 64);
    let (s, base) = start(cfg).await;
    let c = client();
    let url = format!("{base}/v1/completions");
    for rate in [1.0, 5.0, 20.0, 40.0] {
        let out = rung_shaped(&c, &url, rate * 2.0, 80, 128, 64).await;
        let first = out.iter().map(|o| o.sent).min().unwrap();
        let last = out.iter().map(|o| o.end).max().unwrap();
        let ok: Vec<&Outcome> = out.iter().filter(|o| o.ok).collect();
        let rejected = out.iter().filter(|o| o.status == 429).count();
        let thr = ok.len() as f64 / (last - first).as_secs_f64() / 2.0;
        let ttft = median(ok.iter().filter_map(|o| o.ttft).collect()) * 2;
        eprintln!(
            "rate {rate:>4} (speed-1 req/s): throughput {thr:5.1} req/s, median ttft {:7.1} ms, 429s {rejected}",
            ttft.as_secs_f64() * 1000.0
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    eprintln!("capacity (formula, speed 1): {:.1} req/s", cap / 2.0);
    s.shutdown().await;
}

/// A `name{labels}` sample's value from a Prometheus text page.
fn sample(page: &str, prefix: &str) -> f64 {
    page.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("{prefix} missing in:\n{page}"))
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_ttft_histogram_counts_streamed_requests() {
    let (s, base) = start(fast()).await;
    let c = client();
    let url = format!("{base}/v1/completions");
    let mut client_ttft = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        let mut r = post(&c, &url, &completion("one two three", 4, true)).await;
        assert_eq!(r.status(), 200);
        assert!(r.chunk().await.unwrap().is_some());
        client_ttft.push(t0.elapsed().as_secs_f64());
        while r.chunk().await.unwrap().is_some() {}
    }
    // Non-streamed requests have no first token event: not counted.
    post(&c, &url, &completion("one two", 3, false)).await;
    let page = metrics_page(&c, &base).await;
    let m = "model_name=\"sim-model\"}";
    let count = sample(
        &page,
        &format!("vllm:time_to_first_token_seconds_count{{{m}"),
    );
    let sum = sample(&page, &format!("vllm:time_to_first_token_seconds_sum{{{m}"));
    let inf = sample(
        &page,
        &format!("vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\",{m}"),
    );
    assert_eq!(count, 5.0);
    assert_eq!(inf, 5.0);
    // The server's TTFT is inside the client's: it starts later and ends earlier.
    let client_sum: f64 = client_ttft.iter().sum();
    assert!(
        sum > 0.0 && sum <= client_sum,
        "server {sum} s, client {client_sum} s"
    );
    // Buckets are cumulative.
    let buckets: Vec<f64> = page
        .lines()
        .filter(|l| l.starts_with("vllm:time_to_first_token_seconds_bucket"))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(buckets.len(), 17);
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");

    // Inter-token latency: one observation per generated token after a sequence's first
    // (streamed or not): 5 × (4 − 1) + (3 − 1), over vLLM's ITL buckets.
    let itl = |part: &str| {
        sample(
            &page,
            &format!("vllm:inter_token_latency_seconds_{part}{{{m}"),
        )
    };
    assert_eq!(itl("count"), 17.0);
    let itl_buckets: Vec<f64> = page
        .lines()
        .filter(|l| l.starts_with("vllm:inter_token_latency_seconds_bucket"))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(itl_buckets.len(), 20);
    assert_eq!(itl_buckets.last(), Some(&17.0));
    assert!(
        itl_buckets.windows(2).all(|w| w[0] <= w[1]),
        "{itl_buckets:?}"
    );
    // Every inter-token gap lies inside its request's e2e time.
    let e2e_sum = sample(&page, &format!("vllm:e2e_request_latency_seconds_sum{{{m}"));
    assert!(itl("sum") > 0.0 && itl("sum") < e2e_sum, "{page}");
    // The cache as an info metric, as vLLM exports it.
    let kv = SimConfig::default().kv_cache_tokens;
    assert!(
        page.contains(&format!(
            "vllm:cache_config_info{{block_size=\"1\",cache_dtype=\"auto\",enable_prefix_caching=\"False\",num_gpu_blocks=\"{kv}\"}} 1.0\n"
        )),
        "{page}"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn tokenize_answers_llama_cpp_and_vllm_shapes_with_the_completions_count() {
    let (_s, base) = start(SimConfig {
        chat_template_tokens: 7,
        max_model_len: 4096,
        kv_cache_tokens: 8192,
        ..fast()
    })
    .await;
    let c = client();
    let url = format!("{base}/tokenize");
    let text = "ba chai be  ei\ndou ba fa";
    // llama.cpp: {"content"} -> {"tokens"}.
    let r = post(&c, &url, &json!({"content": text})).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let tokens = v["tokens"].as_array().unwrap().clone();
    assert_eq!(tokens.len(), 7, "{v}");
    assert_eq!(tokens[0], tokens[5], "the same word, the same id: {v}");
    // vLLM: {"model", "prompt"} -> {"tokens", "count", "max_model_len"}; the same ids.
    let r = post(&c, &url, &json!({"model": "sim-model", "prompt": text})).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["count"], 7, "{v}");
    assert_eq!(v["tokens"].as_array().unwrap(), &tokens);
    assert_eq!(v["max_model_len"], 4096, "{v}");
    // The count is what a completion of the same text reports as its prompt tokens.
    let r = post(
        &c,
        &format!("{base}/v1/completions"),
        &completion(text, 1, false),
    )
    .await;
    let done: Value = r.json().await.unwrap();
    assert_eq!(done["usage"]["prompt_tokens"], 7, "{done}");
    // vLLM's chat shape counts the chat template too, as chat completions do.
    let msgs = json!({"model": "sim-model", "messages": [{"role": "user", "content": text}]});
    let v: Value = post(&c, &url, &msgs).await.json().await.unwrap();
    assert_eq!(v["count"], 7 + 7, "{v}");
    // An unknown model and a body without text are refused as the completions refuse them.
    let r = post(&c, &url, &json!({"model": "nope", "prompt": text})).await;
    assert_eq!(r.status(), 404);
    let r = post(&c, &url, &json!({"model": "sim-model"})).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]["message"].as_str().unwrap().contains("content"),
        "{v}"
    );
}
