//! `POST /tokenize`: the simulator's tokenizer (one token per whitespace-separated word, the
//! rule its completions count prompts by) behind the request shapes of llama.cpp
//! (`{"content": text}` → `{"tokens": [...]}`) and vLLM (`{"model", "prompt"}` or
//! `{"model", "messages"}` → `{"tokens": [...], "count": n, "max_model_len": m}`). The answer
//! carries every key of both, so either kind of client reads it.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::app::{authorized, bad_request, unknown_model, App};

/// Vocabulary size the ids are folded into (SmolLM2's, any size would do).
const VOCAB: u32 = 49_152;

/// The id of one word: FNV-1a, so the same word always gets the same id.
fn word_id(w: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in w.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % VOCAB
}

fn ids(text: &str, out: &mut Vec<u32>) {
    out.extend(text.split_whitespace().map(word_id));
}

/// Id of the chat template's tokens (`sim.chat_template_tokens` of them per messages request).
const TEMPLATE_ID: u32 = 1;

pub(crate) async fn tokenize(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(r) = authorized(&app, &headers) {
        return *r;
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return *bad_request("the body must be a JSON object", "invalid_json");
    };
    if let Some(model) = v.get("model").and_then(Value::as_str) {
        if !app.names.iter().any(|n| n == model) {
            return *unknown_model(model);
        }
    }
    let mut tokens = Vec::new();
    match (v.get("prompt"), v.get("content"), v.get("messages")) {
        (Some(Value::String(s)), _, _) | (None, Some(Value::String(s)), _) => ids(s, &mut tokens),
        (None, None, Some(Value::Array(msgs))) => {
            tokens.extend(std::iter::repeat_n(
                TEMPLATE_ID,
                app.cfg.chat_template_tokens as usize,
            ));
            for m in msgs {
                if let Some(Value::String(s)) = m.get("content") {
                    ids(s, &mut tokens);
                }
            }
        }
        _ => {
            return *bad_request(
                "send `content` (llama.cpp), `prompt` or `messages` (vLLM) as text",
                "invalid_prompt",
            )
        }
    }
    Json(json!({
        "tokens": tokens,
        "count": tokens.len(),
        "max_model_len": app.cfg.max_model_len,
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stable_id_per_word() {
        let mut t = Vec::new();
        ids("  ba chai\n ba ", &mut t);
        assert_eq!(t.len(), 3);
        assert_eq!(t[0], t[2]);
        assert_ne!(t[0], t[1]);
        assert!(t.iter().all(|&i| i < VOCAB));
    }
}
