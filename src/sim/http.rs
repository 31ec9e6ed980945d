//! HTTP surface of the simulator (axum): routes, request parsing, SSE framing, faults.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::app::{
    authorized, bad_request, error, json_with_model, shutting_down, unix_now, unknown_model, App,
    Fault, Kind, Refusal, FAULT_HEADER,
};
use super::engine::{Event, Job};
use super::metrics_page::metrics;
use super::prefix_cache;
use super::stream::{Gen, Phase, Source, StreamState};
use super::SimConfig;

pub(crate) fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/metrics", get(metrics))
        // As vLLM's `GET /version` (no key needed there either).
        .route(
            "/version",
            get(|| async {
                Json(json!({"version": concat!("ladder-sim ", env!("CARGO_PKG_VERSION"))}))
            }),
        )
        .route("/v1/models", get(models))
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/embeddings", post(super::embeddings::embeddings))
        .route("/v1/messages", post(super::typed::messages))
        .route("/v1/responses", post(super::typed::responses))
        .route("/v1/rerank", post(super::rerank::rerank))
        .route("/tokenize", post(super::tokenize::tokenize))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "no such route",
                "invalid_request_error",
                "not_found",
            )
        })
        .with_state(app)
}

fn with_retry_after(mut r: Response, secs: u32) -> Response {
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    r
}

fn rejection(cfg: &SimConfig, why: &str) -> Response {
    let r = if cfg.reject_status == 503 {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("server overloaded: {why}"),
            "server_error",
            "service_unavailable",
        )
    } else {
        error(
            StatusCode::TOO_MANY_REQUESTS,
            format!("rate limit reached: {why}"),
            "rate_limit_error",
            "rate_limit_exceeded",
        )
    };
    with_retry_after(r, cfg.retry_after_s)
}

async fn models(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(r) = authorized(&app, &headers) {
        return *r;
    }
    let data: Vec<Value> = app
        .names
        .iter()
        .map(|n| {
            json!({"id": n, "object": "model", "created": unix_now(), "owned_by": "ladder-sim",
                   "root": n, "max_model_len": app.cfg.max_model_len})
        })
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

async fn completions(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(app, Kind::Completions, headers, body).await
}

async fn chat(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(app, Kind::Chat, headers, body).await
}

/// A validated generation request.
struct Req {
    model: String,
    prompt_tokens: u32,
    max_tokens: u32,
    stream: bool,
    include_usage: bool,
    ignore_eos: bool,
    /// Prefix-cache block hashes of the prompt (empty without `prefix_caching`).
    blocks: Vec<u64>,
}

fn count_words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

fn prompt_tokens(kind: Kind, v: &Value) -> Result<u64, Refusal> {
    match kind {
        Kind::Completions => match v.get("prompt") {
            Some(Value::String(s)) => Ok(count_words(s)),
            Some(Value::Array(items)) => {
                let mut n = 0;
                for it in items {
                    n += match it {
                        Value::String(s) => count_words(s),
                        Value::Number(_) => 1,
                        Value::Array(ids) if ids.iter().all(Value::is_number) => ids.len() as u64,
                        _ => return Err(bad_request(
                            "`prompt` must be a string, a list of strings or a list of token ids",
                            "invalid_prompt",
                        )),
                    };
                }
                Ok(n)
            }
            _ => Err(bad_request(
                "`prompt` is required and must be a string or a list",
                "invalid_prompt",
            )),
        },
        Kind::Chat => {
            let Some(Value::Array(msgs)) = v.get("messages") else {
                return Err(bad_request(
                    "`messages` is required and must be a list",
                    "invalid_messages",
                ));
            };
            let (mut n, mut images) = (0, 0);
            for m in msgs {
                match m.get("content") {
                    Some(Value::String(s)) => n += count_words(s),
                    Some(Value::Array(parts)) => {
                        for p in parts {
                            if let Some(Value::String(s)) = p.get("text") {
                                n += count_words(s);
                            }
                            // An image part costs its patches (docs/sim.md).
                            match super::images::part_tokens(p) {
                                Some(Ok(t)) => {
                                    images += 1;
                                    n += t;
                                }
                                Some(Err(why)) => return Err(bad_request(why, "invalid_image")),
                                None => {}
                            }
                        }
                        if images > super::images::MAX_IMAGES {
                            return Err(bad_request(
                                format!(
                                    "more than {} images in one request",
                                    super::images::MAX_IMAGES
                                ),
                                "invalid_image",
                            ));
                        }
                    }
                    Some(Value::Null) | None => {}
                    _ => {
                        return Err(bad_request(
                            "message `content` must be a string or a list of parts",
                            "invalid_messages",
                        ))
                    }
                }
            }
            Ok(n)
        }
    }
}

fn parse(app: &App, kind: Kind, body: &[u8]) -> Result<Req, Refusal> {
    let (v, model) = json_with_model(app, body)?;
    let template = match kind {
        Kind::Chat => u64::from(app.cfg.chat_template_tokens),
        Kind::Completions => 0,
    };
    let prompt = prompt_tokens(kind, &v)? + template;
    let limit = u64::from(app.cfg.max_model_len);
    let asked = v
        .get("max_completion_tokens")
        .filter(|x| !x.is_null())
        .or_else(|| v.get("max_tokens").filter(|x| !x.is_null()));
    let max_tokens = match asked {
        Some(x) => match x.as_u64() {
            Some(n) if n >= 1 => n,
            _ => {
                return Err(bad_request(
                    "`max_tokens` must be a positive integer",
                    "invalid_max_tokens",
                ))
            }
        },
        None => u64::from(app.cfg.default_max_tokens)
            .min(limit.saturating_sub(prompt))
            .max(1),
    };
    if prompt + max_tokens > limit {
        return Err(bad_request(
            format!(
                "This model's maximum context length is {limit} tokens. However, you requested \
                 {} tokens ({prompt} in the prompt, {max_tokens} in the completion). Please reduce \
                 the length of the prompt or completion.",
                prompt + max_tokens
            ),
            "context_length_exceeded",
        ));
    }
    let flag = |name: &str| v.get(name).and_then(Value::as_bool).unwrap_or(false);
    Ok(Req {
        model,
        prompt_tokens: prompt as u32,
        max_tokens: max_tokens as u32,
        stream: flag("stream"),
        include_usage: v
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        ignore_eos: flag("ignore_eos"),
        blocks: if app.cfg.prefix_caching {
            prefix_cache::block_hashes(
                prefix_cache::prompt_tokens(&v, kind == Kind::Chat).into_iter(),
                app.cfg.prefix_cache_block_size,
            )
        } else {
            Vec::new()
        },
    })
}

async fn handle(app: Arc<App>, kind: Kind, headers: HeaderMap, body: Bytes) -> Response {
    let arrived = Instant::now();
    if let Err(r) = authorized(&app, &headers) {
        return *r;
    }
    let header_fault = match headers.get(FAULT_HEADER).map(|v| v.to_str().unwrap_or("")) {
        None => None,
        Some(s) => match Fault::parse(s) {
            Some(f) => Some(f),
            None => {
                return *bad_request(
                    format!(
                        "unknown {FAULT_HEADER} `{s}`; use http_500, http_429, drop_mid_stream, \
                         malformed_chunk, stream_error, stall or unknown_model"
                    ),
                    "invalid_fault",
                )
            }
        },
    };
    let req = match parse(&app, kind, &body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let cfg = &app.cfg;

    // One seeded random stream per request, in arrival order: fault draw, length, words.
    let index = app.counter.fetch_add(1, Relaxed);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    rng.set_stream(index);
    let draw: f64 = rng.gen();
    let fault = header_fault.or_else(|| {
        let mut acc = 0.0;
        for (f, (_, frac)) in Fault::ALL.iter().zip(cfg.fault_fractions()) {
            acc += frac;
            if draw < acc {
                return Some(*f);
            }
        }
        None
    });
    let output_tokens = if req.ignore_eos {
        req.max_tokens
    } else {
        rng.gen_range(1..=req.max_tokens)
    };

    match fault {
        Some(Fault::Http500) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "simulated internal server error",
                "server_error",
                "internal_error",
            )
        }
        Some(Fault::Http429) => {
            return with_retry_after(
                error(
                    StatusCode::TOO_MANY_REQUESTS,
                    "simulated rate limit",
                    "rate_limit_error",
                    "rate_limit_exceeded",
                ),
                cfg.retry_after_s,
            )
        }
        Some(Fault::UnknownModel) => return *unknown_model(&req.model),
        _ => {}
    }

    let source = if cfg.is_zero_cost() {
        app.stats
            .prompt_tokens
            .fetch_add(u64::from(req.prompt_tokens), Relaxed);
        Source::Zero {
            left: output_tokens,
            sent: 0,
            stats: app.stats.clone(),
            reached_max: output_tokens == req.max_tokens,
        }
    } else {
        if app.stats.waiting.load(Relaxed) >= u64::from(cfg.max_waiting) {
            app.stats.rejected.fetch_add(1, Relaxed);
            return rejection(cfg, "waiting queue is full");
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        app.stats.waiting.fetch_add(1, Relaxed);
        let job = Job {
            prompt_tokens: req.prompt_tokens,
            output_tokens,
            kv_tokens: req.prompt_tokens + req.max_tokens,
            blocks: req.blocks,
            speed: cfg.model_speed(&req.model),
            arrived: Instant::now(),
            tx,
        };
        if app.jobs.send(job).is_err() {
            app.stats.waiting.fetch_sub(1, Relaxed);
            return shutting_down();
        }
        match rx.recv().await {
            Some(Event::Scheduled) => {}
            Some(Event::Rejected) => return rejection(cfg, "queue wait limit exceeded"),
            _ => return shutting_down(),
        }
        Source::Engine(rx)
    };

    let chunk = cfg.chunk_tokens.max(1);
    let total_chunks = 1 + (output_tokens - 1).div_ceil(chunk);
    let mut gen = Gen::new(kind, &req.model, index, rng);
    if kind == Kind::Chat {
        gen.reasoning_left = cfg.reasoning_tokens;
    }
    let st = StreamState {
        gen,
        source,
        chunk,
        fault,
        fault_at: (total_chunks / 2).max(1),
        chunks_sent: 0,
        tokens_sent: 0,
        reached_max: output_tokens == req.max_tokens,
        prompt_tokens: req.prompt_tokens,
        phase: Phase::Tokens,
        include_usage: req.include_usage,
        stall: Duration::from_millis(cfg.stall_ms),
        shutdown: app.shutdown.clone(),
        arrived,
        stats: app.stats.clone(),
    };
    if req.stream {
        let stream = futures_util::stream::unfold(st, |mut st| async move {
            let item = st.next_sse().await;
            item.map(|i| (i, st))
        });
        return (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            Body::from_stream(stream),
        )
            .into_response();
    }
    st.whole_response().await
}
