//! `endpoint.api: messages` (Anthropic) and `responses` (OpenAI Responses) end to end: against
//! the built-in simulator (TTFT, TPOT and ITL as for chat, token counts from each API's final
//! events), and against a recording Messages server (the key goes in `x-api-key` with
//! `anthropic-version`, never as `Authorization`, and is scrubbed from an error event that
//! echoes it).

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::Value;
use support::{check_folder, no_panic, run_dir, run_ladder, KEY, KEY_VAR, TOKENIZER};

const LIMIT: Duration = Duration::from_secs(120);

fn write(dir: &std::path::Path, base_url: &str, api: &str, key: bool) -> std::path::PathBuf {
    let key = if key {
        format!("  api_key_env: {KEY_VAR}\n")
    } else {
        String::new()
    };
    let text = format!(
        "version: 1\nname: rel\nendpoint:\n  base_url: {base_url}\n  api: {api}\n  \
         request_timeout: 10s\n{key}model: ladder-sim\ntokenizer: {TOKENIZER}\nworkload:\n  \
         dataset: random\n  input_tokens: 16\n  output_tokens: 8\n  requests_per_rung: 10\n  \
         seed: 0\nload:\n  arrival: constant\n  rates: [20]\n  warmup_requests: 0\n  \
         cooldown: 0s\n"
    );
    let p = dir.join(format!("{api}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn messages_and_responses_on_the_simulator_measure_tokens_as_chat_does() {
    for api in ["messages", "responses"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let r = run_ladder(&write(tmp.path(), "sim", api, false), &out, LIMIT);
        no_panic(&r);
        assert!(r.status.success(), "{api}: {}", r.all());
        let dir = run_dir(&out).unwrap();
        let rd = check_folder(&dir);
        let rung = &rd.rungs[0];
        assert_eq!(rung.summary.completed, 10, "{api}");
        assert_eq!(rung.summary.total_output_tokens, 80, "{api}");
        for l in rd.requests(rung).unwrap() {
            // Usage from the API's own final events: the prompt's and the answer's counts.
            assert_eq!(l.server_prompt_tokens, Some(16), "{api}: {l:?}");
            assert_eq!(l.server_completion_tokens, Some(8), "{api}: {l:?}");
            assert_eq!(l.output_tokens, 8, "{api}: {l:?}");
            assert!(l.ttft_ms.is_some_and(|t| t > 0.0), "{api}: {l:?}");
            assert!(l.tpot_ms.is_some(), "{api}: {l:?}");
            assert!(!l.itl_ms.is_empty(), "{api}: {l:?}");
        }
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.join("result_rate_20.json")).unwrap())
                .unwrap();
        assert!(v["median_ttft_ms"].as_f64().unwrap() > 0.0, "{api}: {v}");
        assert!(v["median_tpot_ms"].as_f64().is_some(), "{api}: {v}");
        assert!(
            v.get("api").is_none(),
            "{api}: a generation rung has no `api` key: {v}"
        );
    }
}

type Seen = Arc<Mutex<Vec<HeaderMap>>>;

async fn messages(
    State(seen): State<Seen>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["stream"], true);
    let n = {
        let mut s = seen.lock().unwrap();
        s.push(headers);
        s.len()
    };
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut text = ev(
        "message_start",
        serde_json::json!({"type": "message_start", "message": {"usage": {"input_tokens": 16, "output_tokens": 1}}}),
    );
    // The fifth request's stream breaks off with an error event echoing the key.
    if n == 5 {
        text += &ev(
            "error",
            serde_json::json!({"type": "error", "error": {"type": "overloaded_error", "message": format!("no capacity for {KEY}")}}),
        );
    } else {
        for w in ["alpha ", "beta ", "gamma ", "delta "] {
            text += &ev(
                "content_block_delta",
                serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}),
            );
        }
        text += &ev(
            "message_delta",
            serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
        );
        text += &ev("message_stop", serde_json::json!({"type": "message_stop"}));
    }
    ([("content-type", "text/event-stream")], text).into_response()
}

use axum::response::IntoResponse;

fn recording_messages_server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = support::serve::listing("ladder-sim")
        .route("/v1/messages", post(messages))
        .with_state(seen.clone());
    (support::serve::serve(app), seen)
}

#[test]
fn the_messages_key_goes_in_x_api_key_and_is_scrubbed_like_authorization() {
    let (url, seen) = recording_messages_server();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = run_ladder(&write(tmp.path(), &url, "messages", true), &out, LIMIT);
    no_panic(&r);
    assert!(r.status.success(), "{}", r.all());
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 10, "{}", seen.len());
    for h in seen.iter() {
        assert_eq!(h.get("x-api-key").unwrap(), KEY);
        assert_eq!(h.get("anthropic-version").unwrap(), "2023-06-01");
        assert!(h.get("authorization").is_none(), "{h:?}");
    }
    let dir = run_dir(&out).unwrap();
    let rd = check_folder(&dir);
    let s = &rd.rungs[0].summary;
    assert_eq!(s.errors_by_class["stream_error"], 1, "{s:?}");
    assert_eq!(s.completed, 9, "{s:?}");
    assert_eq!(s.total_output_tokens, 36, "{s:?}");
    assert!(!r.all().contains(KEY), "{}", r.all());
    assert!(
        !support::all_text_under(&dir).contains(KEY),
        "the key reached the folder"
    );
    let lines = rd.requests(&rd.rungs[0]).unwrap();
    assert!(
        lines.iter().any(|l| l
            .error_detail
            .as_deref()
            .is_some_and(|d| d.contains("no capacity for ***"))),
        "{lines:?}"
    );
}
