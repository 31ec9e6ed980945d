//! `POST /v1/embeddings`: OpenAI's embeddings API on the simulated engine.
//!
//! The latency rule: an embeddings request is a prefill-only job of the engine. All its
//! inputs' tokens (one whitespace word is one token, as everywhere in the simulator) are
//! prefilled in the engine's steps like a prompt, sharing the step budget
//! (`max_num_batched_tokens`) and batch with the generation requests; the answer leaves at
//! the end of the step in which its prefill completes (a step costs `step_base_ms +
//! step_per_seq_ms × batch + prefill_per_token_us × prefilled tokens`, as for generation).
//! No token is streamed; the engine's generation-token counter counts that step as one.
//! With `zero_cost` the answer is immediate. The vectors are `EMBEDDING_DIM` deterministic
//! numbers per input (from the seed and the request's arrival index).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::app::{
    authorized, bad_request, error, json_with_model, shutting_down, unknown_model, App,
    FAULT_HEADER,
};
use super::engine::{Event, Job};

/// Numbers in each simulated vector.
pub const EMBEDDING_DIM: usize = 8;

/// Token counts of each input of an embeddings body: a string, a list of strings, a list of
/// token ids (one input), or a list of such lists.
fn input_tokens(v: &Value) -> Result<Vec<u32>, &'static str> {
    let words = |s: &str| s.split_whitespace().count() as u32;
    let bad = "`input` must be a string, a list of strings or a list of token-id lists";
    match v.get("input") {
        Some(Value::String(s)) => Ok(vec![words(s)]),
        Some(Value::Array(items)) if items.is_empty() => Err("`input` is an empty list"),
        Some(Value::Array(items)) if items.iter().all(Value::is_number) => {
            Ok(vec![items.len() as u32])
        }
        Some(Value::Array(items)) => items
            .iter()
            .map(|it| match it {
                Value::String(s) => Ok(words(s)),
                Value::Array(ids) if ids.iter().all(Value::is_number) => Ok(ids.len() as u32),
                _ => Err(bad),
            })
            .collect(),
        _ => Err(bad),
    }
}

/// The handler of `POST /v1/embeddings`.
pub(super) async fn embeddings(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = authorized(&app, &headers) {
        return *r;
    }
    let (v, model) = match json_with_model(&app, &body) {
        Ok(vm) => vm,
        Err(r) => return *r,
    };
    let counts = match input_tokens(&v) {
        Ok(c) => c,
        Err(why) => return *bad_request(why, "invalid_input"),
    };
    let limit = app.cfg.max_model_len;
    if let Some(n) = counts.iter().find(|n| **n > limit) {
        return *bad_request(
            format!("an input of {n} tokens is longer than the model's {limit}"),
            "context_length_exceeded",
        );
    }
    if let Some(r) = fault(&headers, &model, "embeddings") {
        return r;
    }
    let total: u32 = counts.iter().fold(0u32, |a, n| a.saturating_add(*n));
    let index = app.counter.fetch_add(1, Relaxed);
    if app.cfg.is_zero_cost() {
        app.stats.prompt_tokens.fetch_add(u64::from(total), Relaxed);
    } else if let Err(r) = prefill(&app, total).await {
        return r;
    }
    answer(&model, &counts, total, app.cfg.seed, index)
}

/// The answer an injected fault asks of a pooled route (`route` names it), if any: the
/// pooled routes simulate `http_500` and `unknown_model` only.
pub(super) fn fault(headers: &HeaderMap, model: &str, route: &str) -> Option<Response> {
    match headers.get(FAULT_HEADER).and_then(|v| v.to_str().ok())? {
        "http_500" => Some(error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "simulated internal server error",
            "server_error",
            "internal_error",
        )),
        "unknown_model" => Some(*unknown_model(model)),
        other => Some(*bad_request(
            format!(
                "{FAULT_HEADER} `{other}` is not simulated for {route} (http_500, unknown_model)"
            ),
            "invalid_fault",
        )),
    }
}

/// Runs the request's prefill through the engine; `Err` is the answer to send instead.
pub(super) async fn prefill(app: &App, total: u32) -> Result<(), Response> {
    if app.stats.waiting.load(Relaxed) >= u64::from(app.cfg.max_waiting) {
        app.stats.rejected.fetch_add(1, Relaxed);
        return Err(error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate limit reached: waiting queue is full",
            "rate_limit_error",
            "rate_limit_exceeded",
        ));
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    app.stats.waiting.fetch_add(1, Relaxed);
    let job = Job {
        // An empty input still costs a step.
        prompt_tokens: total.max(1),
        output_tokens: 1,
        kv_tokens: total.max(1) + 1,
        blocks: Vec::new(),
        // Prefill only: a model's decode speed does not apply.
        speed: 1.0,
        arrived: Instant::now(),
        tx,
    };
    if app.jobs.send(job).is_err() {
        app.stats.waiting.fetch_sub(1, Relaxed);
        return Err(shutting_down());
    }
    loop {
        match rx.recv().await {
            Some(Event::Scheduled) => {}
            Some(Event::Tokens { finished: true, .. }) => return Ok(()),
            Some(Event::Tokens { .. }) => {}
            Some(Event::Rejected) => {
                return Err(error(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate limit reached: queue wait limit exceeded",
                    "rate_limit_error",
                    "rate_limit_exceeded",
                ))
            }
            None => return Err(shutting_down()),
        }
    }
}

/// OpenAI's embeddings answer: one vector per input, usage counting every input's tokens.
fn answer(model: &str, counts: &[u32], total: u32, seed: u64, index: u64) -> Response {
    let data: Vec<Value> = (0..counts.len())
        .map(|i| {
            let mut x = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64);
            let vector: Vec<f64> = (0..EMBEDDING_DIM)
                .map(|_| {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
                })
                .collect();
            json!({"object": "embedding", "index": i, "embedding": vector})
        })
        .collect();
    Json(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": total, "total_tokens": total},
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_counted_in_words_or_ids() {
        let c = |v: Value| input_tokens(&json!({ "input": v }));
        assert_eq!(c(json!("a b c")), Ok(vec![3]));
        assert_eq!(c(json!(["a b", "c"])), Ok(vec![2, 1]));
        assert_eq!(c(json!([5, 6, 7])), Ok(vec![3]));
        assert_eq!(c(json!([[5, 6], [7]])), Ok(vec![2, 1]));
        assert!(c(json!([])).is_err());
        assert!(c(json!([{"x": 1}])).is_err());
        assert!(c(json!(null)).is_err());
    }
}
