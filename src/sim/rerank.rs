//! `POST /v1/rerank`: the Jina/Cohere rerank API (as vLLM and llama.cpp serve it) on the
//! simulated engine.
//!
//! The cost rule: a cross-encoder scores each (query, document) pair as one sequence, so a
//! request of N documents is a prefill-only job of N × query + Σ documents tokens (one
//! whitespace word is one token, as everywhere in the simulator), run through the engine
//! exactly as an embeddings request is (`super::embeddings`: it shares the step budget and
//! batch with generation; the answer leaves at the end of the step that completes its
//! prefill). `usage.prompt_tokens` is that total. Scores are deterministic numbers in
//! (0, 1) from the seed, the request's arrival index and the document's index; `results`
//! come best first, `top_n` of them when the body asks for fewer than all.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::app::{authorized, bad_request, json_with_model, App};
use super::embeddings::{fault, prefill};

/// The query's and each document's token counts, or why the body is not a rerank request.
fn counts(v: &Value) -> Result<(u32, Vec<u32>), &'static str> {
    let words = |s: &str| s.split_whitespace().count() as u32;
    let Some(Value::String(query)) = v.get("query") else {
        return Err("`query` must be a string");
    };
    let docs = match v.get("documents") {
        Some(Value::Array(d)) if d.is_empty() => return Err("`documents` is an empty list"),
        Some(Value::Array(d)) => d
            .iter()
            .map(|it| it.as_str().map(words))
            .collect::<Option<Vec<u32>>>()
            .ok_or("`documents` must be a list of strings")?,
        _ => return Err("`documents` must be a list of strings"),
    };
    Ok((words(query), docs))
}

/// The handler of `POST /v1/rerank`.
pub(super) async fn rerank(
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
    let (query, docs) = match counts(&v) {
        Ok(c) => c,
        Err(why) => return *bad_request(why, "invalid_input"),
    };
    let limit = app.cfg.max_model_len;
    if let Some(d) = docs.iter().find(|d| query.saturating_add(**d) > limit) {
        return *bad_request(
            format!(
                "a query of {query} tokens with a document of {d} is longer than the model's {limit}"
            ),
            "context_length_exceeded",
        );
    }
    if let Some(r) = fault(&headers, &model, "rerank") {
        return r;
    }
    let total = docs
        .iter()
        .fold(0u32, |a, d| a.saturating_add(query).saturating_add(*d));
    let top_n = v
        .get("top_n")
        .and_then(Value::as_u64)
        .filter(|n| *n >= 1)
        .map_or(docs.len(), |n| docs.len().min(n as usize));
    let index = app.counter.fetch_add(1, Relaxed);
    if app.cfg.is_zero_cost() {
        app.stats.prompt_tokens.fetch_add(u64::from(total), Relaxed);
    } else if let Err(r) = prefill(&app, total).await {
        return r;
    }
    answer(&model, docs.len(), top_n, total, app.cfg.seed, index)
}

/// The answer: `top_n` of the `docs` documents' scores, best first, and the usage.
fn answer(model: &str, docs: usize, top_n: usize, total: u32, seed: u64, index: u64) -> Response {
    let mut scored: Vec<(usize, f64)> = (0..docs)
        .map(|i| {
            let x = (seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64))
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (i, ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let results: Vec<Value> = scored
        .into_iter()
        .take(top_n)
        .map(|(i, s)| json!({"index": i, "relevance_score": s}))
        .collect();
    Json(json!({
        "model": model,
        "object": "list",
        "usage": {"prompt_tokens": total, "total_tokens": total},
        "results": results,
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_and_its_documents_are_counted_in_words() {
        let c = |v: Value| counts(&v);
        assert_eq!(
            c(json!({"query": "a b", "documents": ["c", "d e f"]})),
            Ok((2, vec![1, 3]))
        );
        assert!(c(json!({"query": "a", "documents": []})).is_err());
        assert!(c(json!({"query": "a", "documents": [1]})).is_err());
        assert!(c(json!({"query": 3, "documents": ["x"]})).is_err());
        assert!(c(json!({"documents": ["x"]})).is_err());
    }
}
