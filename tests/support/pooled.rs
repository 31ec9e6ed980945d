//! The end-to-end scaffolding the pooled endpoints' tests share (tests/embeddings.rs,
//! tests/rerank.rs): a server that answers one POST path by a rule, one that refuses it as a
//! server without the endpoint does, and the run against a hostile one.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::post;
use ladder::results::ResultDir;
use serde_json::Value;

use super::serve::{listing, serve};
use super::{check_folder, no_panic, run_dir, run_ladder, KEY, KEY_VAR};

/// A server listing `ladder-sim` whose `POST path` answers its `n`th request (from 0, the
/// preflight probes first) with `answer(n, body)`: a status and a JSON text.
pub fn answering(
    path: &'static str,
    answer: impl Fn(usize, &Value) -> (u16, String) + Send + Sync + 'static,
) -> String {
    let n = Arc::new(AtomicUsize::new(0));
    let answer = Arc::new(answer);
    let handler = move |body: axum::body::Bytes| {
        let i = n.fetch_add(1, Ordering::SeqCst);
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (status, text) = answer(i, &v);
        async move {
            (
                StatusCode::from_u16(status).unwrap(),
                [("content-type", "application/json")],
                text,
            )
        }
    };
    serve(listing("ladder-sim").route(path, post(handler)))
}

/// A server listing a model that answers `POST path` with `status` and an error object:
/// `message_501` for 501 (llama.cpp's "start it with …"), "Not Found" otherwise (vLLM).
pub fn refusing(path: &'static str, status: u16, message_501: &'static str) -> String {
    answering(path, move |_, _| {
        let msg = if status == 501 {
            message_501
        } else {
            "Not Found"
        };
        let body = serde_json::json!({"error": {"code": status, "message": msg}});
        (status, body.to_string())
    })
}

/// A JSON answer of more than the pooled cap (40 MiB): `open`, then `item` repeated until
/// 41 MiB, then `close`.
pub fn oversized(open: &str, item: &str, close: &str) -> String {
    let mut s = String::with_capacity(42 << 20);
    s.push_str(open);
    while s.len() < 41 << 20 {
        s.push_str(item);
    }
    s.push_str(close);
    s
}

/// The test scenario `scenario` (of 12 requests a rung at 20 and 40 req/s, 2 warmup) run
/// against the hostile server `url` as one rung of `n` requests at 4 req/s, with the test
/// key: it must finish, and neither its output nor its folder may hold the key. The folder,
/// checked, and the error details of its request lines.
pub fn hostile_run(scenario: &Path, url: &str, n: u32) -> (ResultDir, Vec<String>) {
    let dir = scenario.parent().unwrap();
    let text = std::fs::read_to_string(scenario)
        .unwrap()
        .replace("base_url: sim", &format!("base_url: {url}"))
        .replace(
            "  request_timeout: 5s\n",
            &format!("  request_timeout: 20s\n  api_key_env: {KEY_VAR}\n"),
        )
        .replace("requests_per_rung: 12", &format!("requests_per_rung: {n}"))
        .replace("warmup_requests: 2", "warmup_requests: 0")
        .replace("rates: [20, 40]", "rates: [4]");
    let sc = dir.join("hostile.yaml");
    std::fs::write(&sc, text).unwrap();
    let out = dir.join("hostile-out");
    let r = run_ladder(&sc, &out, Duration::from_secs(120));
    no_panic(&r);
    assert!(!r.all().contains(KEY), "{}", r.all());
    let folder = run_dir(&out).unwrap();
    assert!(
        !super::all_text_under(&folder).contains(KEY),
        "the key reached the folder"
    );
    let rd = check_folder(&folder);
    super::assert_finished(&r, &rd);
    let details = rd
        .requests(&rd.rungs[0])
        .unwrap()
        .iter()
        .filter_map(|l| l.error_detail.clone())
        .collect();
    (rd, details)
}
