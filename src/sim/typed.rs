//! `POST /v1/messages` (Anthropic's Messages API) and `POST /v1/responses` (OpenAI's
//! Responses API), streamed, on the simulated engine.
//!
//! Prompts are counted as for chat (words of every message's text, plus
//! `chat_template_tokens`); the answer's tokens come from the engine exactly as a chat
//! answer's do (same admission, steps and chunking), framed as each API's typed events:
//! Messages `message_start` (usage.input_tokens), `content_block_start`, one
//! `content_block_delta` per chunk, `content_block_stop`, `message_delta`
//! (usage.output_tokens), `message_stop`; Responses `response.created`, one
//! `response.output_text.delta` per chunk, `response.completed` (usage). Messages takes the
//! key as `x-api-key` (or `Authorization: Bearer`). Only streaming is simulated (`stream:
//! true`); the fault header and fault fractions do not apply to these routes.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::app::{authorized, bad_request, error, json_with_model, shutting_down, App};
use super::engine::{Event, Job};
use super::stream::Source;
use super::words::{words, WORD_COUNT};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Messages,
    Responses,
}

pub(super) async fn messages(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    typed(app, Api::Messages, headers, body).await
}

pub(super) async fn responses(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    typed(app, Api::Responses, headers, body).await
}

/// Words of a content: a string, or parts with a `text`.
fn content_words(c: Option<&Value>) -> Result<u32, &'static str> {
    let w = |s: &str| s.split_whitespace().count() as u32;
    match c {
        Some(Value::String(s)) => Ok(w(s)),
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .map(w)
            .sum()),
        None | Some(Value::Null) => Ok(0),
        _ => Err("a message `content` must be a string or a list of parts"),
    }
}

fn prompt_words(api: Api, v: &Value) -> Result<u32, &'static str> {
    let list = |msgs: &Vec<Value>| -> Result<u32, &'static str> {
        msgs.iter().map(|m| content_words(m.get("content"))).sum()
    };
    match (api, v.get("messages"), v.get("input")) {
        (Api::Messages, Some(Value::Array(m)), _) => list(m),
        (Api::Messages, ..) => Err("`messages` is required and must be a list"),
        (Api::Responses, _, Some(Value::String(s))) => Ok(s.split_whitespace().count() as u32),
        (Api::Responses, _, Some(Value::Array(m))) => list(m),
        (Api::Responses, ..) => Err("`input` is required: a string or a list of messages"),
    }
}

/// Messages also takes its key bare in `x-api-key`.
fn allowed(app: &App, api: Api, headers: &HeaderMap) -> Result<(), Box<Response>> {
    let x = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    match (&app.api_key, api, x) {
        (Some(k), Api::Messages, Some(given)) if given == k => Ok(()),
        _ => authorized(app, headers),
    }
}

async fn typed(app: Arc<App>, api: Api, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = allowed(&app, api, &headers) {
        return *r;
    }
    let (v, model) = match json_with_model(&app, &body) {
        Ok(vm) => vm,
        Err(r) => return *r,
    };
    if v.get("stream").and_then(Value::as_bool) != Some(true) {
        return *bad_request(
            "the simulator serves this API streamed only: send `stream: true`",
            "stream_required",
        );
    }
    let cfg = &app.cfg;
    let prompt = match prompt_words(api, &v) {
        Ok(n) => n.saturating_add(cfg.chat_template_tokens),
        Err(why) => return *bad_request(why, "invalid_prompt"),
    };
    let field = match api {
        Api::Messages => "max_tokens",
        Api::Responses => "max_output_tokens",
    };
    let max_tokens = match v.get(field) {
        Some(x) => match x.as_u64().filter(|n| *n >= 1) {
            Some(n) => n.min(u64::from(u32::MAX)) as u32,
            None => {
                return *bad_request(
                    format!("`{field}` must be a positive integer"),
                    "invalid_max_tokens",
                )
            }
        },
        None if api == Api::Messages => {
            return *bad_request("`max_tokens` is required", "invalid_max_tokens")
        }
        None => cfg.default_max_tokens,
    };
    if u64::from(prompt) + u64::from(max_tokens) > u64::from(cfg.max_model_len) {
        return *bad_request(
            format!(
                "the prompt ({prompt} tokens) and {field} ({max_tokens}) exceed the context of {}",
                cfg.max_model_len
            ),
            "context_length_exceeded",
        );
    }
    let index = app.counter.fetch_add(1, Relaxed);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    rng.set_stream(index);
    let _fault_draw: f64 = rng.gen();
    let ignore_eos = v
        .get("ignore_eos")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let output = if ignore_eos {
        max_tokens
    } else {
        rng.gen_range(1..=max_tokens)
    };
    let source = match admit(&app, &model, prompt, output, max_tokens).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let st = Stream {
        api,
        source,
        rng,
        id: index,
        model,
        prompt,
        output,
        sent: 0,
        started: false,
        ended: false,
        chunk: cfg.chunk_tokens.max(1),
    };
    let body = futures_util::stream::unfold(st, |mut st| async move {
        let item = st.next().await;
        item.map(|b| (Ok::<Bytes, std::io::Error>(b), st))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// The engine's tokens for this request (after admission), or zero-cost ones.
async fn admit(
    app: &App,
    model: &str,
    prompt: u32,
    output: u32,
    max_tokens: u32,
) -> Result<Source, Response> {
    let limited = || {
        error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate limit reached: waiting queue is full",
            "rate_limit_error",
            "rate_limit_exceeded",
        )
    };
    if app.cfg.is_zero_cost() {
        app.stats
            .prompt_tokens
            .fetch_add(u64::from(prompt), Relaxed);
        return Ok(Source::Zero {
            left: output,
            sent: 0,
            stats: app.stats.clone(),
            reached_max: output == max_tokens,
        });
    }
    if app.stats.waiting.load(Relaxed) >= u64::from(app.cfg.max_waiting) {
        app.stats.rejected.fetch_add(1, Relaxed);
        return Err(limited());
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    app.stats.waiting.fetch_add(1, Relaxed);
    let job = Job {
        prompt_tokens: prompt,
        output_tokens: output,
        kv_tokens: prompt + max_tokens,
        blocks: Vec::new(),
        speed: app.cfg.model_speed(model),
        arrived: Instant::now(),
        tx,
    };
    if app.jobs.send(job).is_err() {
        app.stats.waiting.fetch_sub(1, Relaxed);
        return Err(shutting_down());
    }
    match rx.recv().await {
        Some(Event::Scheduled) => Ok(Source::Engine(rx)),
        Some(Event::Rejected) => Err(limited()),
        _ => Err(shutting_down()),
    }
}

struct Stream {
    api: Api,
    source: Source,
    rng: ChaCha8Rng,
    id: u64,
    model: String,
    prompt: u32,
    output: u32,
    sent: u32,
    started: bool,
    ended: bool,
    chunk: u32,
}

fn event(buf: &mut Vec<u8>, name: &str, data: &Value) {
    buf.extend_from_slice(b"event: ");
    buf.extend_from_slice(name.as_bytes());
    buf.extend_from_slice(b"\ndata: ");
    buf.extend_from_slice(data.to_string().as_bytes());
    buf.extend_from_slice(b"\n\n");
}

impl Stream {
    async fn next(&mut self) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        let mut buf = Vec::new();
        if !self.started {
            self.started = true;
            self.start(&mut buf);
        }
        let Some((n, finished)) = self.source.next(self.chunk).await else {
            self.ended = true;
            return (!buf.is_empty()).then(|| Bytes::from(buf));
        };
        let w = words();
        let text: String = (0..n)
            .map(|_| &*w[self.rng.gen_range(0..WORD_COUNT)])
            .collect();
        self.sent += n;
        match self.api {
            Api::Messages => event(
                &mut buf,
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": text}}),
            ),
            Api::Responses => event(
                &mut buf,
                "response.output_text.delta",
                &json!({"type": "response.output_text.delta", "item_id": format!("msg_sim_{}", self.id),
                        "output_index": 0, "content_index": 0, "delta": text}),
            ),
        }
        if finished {
            self.ended = true;
            self.end(&mut buf);
        }
        Some(Bytes::from(buf))
    }

    fn start(&self, buf: &mut Vec<u8>) {
        match self.api {
            Api::Messages => {
                event(
                    buf,
                    "message_start",
                    &json!({"type": "message_start", "message": {
                    "id": format!("msg_sim_{}", self.id), "type": "message", "role": "assistant",
                    "model": self.model, "content": [], "stop_reason": null,
                    "usage": {"input_tokens": self.prompt, "output_tokens": 1}}}),
                );
                event(
                    buf,
                    "content_block_start",
                    &json!({"type": "content_block_start",
                    "index": 0, "content_block": {"type": "text", "text": ""}}),
                );
            }
            Api::Responses => event(
                buf,
                "response.created",
                &json!({"type": "response.created",
                "response": {"id": format!("resp_sim_{}", self.id), "object": "response",
                             "status": "in_progress", "model": self.model}}),
            ),
        }
    }

    fn end(&self, buf: &mut Vec<u8>) {
        let reason = if self.sent >= self.output {
            "max_tokens"
        } else {
            "end_turn"
        };
        match self.api {
            Api::Messages => {
                event(
                    buf,
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": 0}),
                );
                event(
                    buf,
                    "message_delta",
                    &json!({"type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": null},
                    "usage": {"output_tokens": self.sent}}),
                );
                event(buf, "message_stop", &json!({"type": "message_stop"}));
            }
            Api::Responses => event(
                buf,
                "response.completed",
                &json!({"type": "response.completed",
                "response": {"id": format!("resp_sim_{}", self.id), "object": "response",
                    "status": "completed", "model": self.model,
                    "usage": {"input_tokens": self.prompt, "output_tokens": self.sent,
                              "total_tokens": self.prompt + self.sent}}}),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_the_words_of_each_apis_input() {
        let m = json!({"messages": [{"role": "user", "content": "a b c"},
                                    {"role": "user", "content": [{"type": "text", "text": "d e"}]}]});
        assert_eq!(prompt_words(Api::Messages, &m), Ok(5));
        assert_eq!(
            prompt_words(Api::Responses, &json!({"input": "x y"})),
            Ok(2)
        );
        assert_eq!(
            prompt_words(Api::Responses, &m),
            Err("`input` is required: a string or a list of messages")
        );
        assert!(prompt_words(Api::Messages, &json!({"input": "x"})).is_err());
    }
}
