//! HTTP surface of the simulator (axum): routes, request parsing, SSE framing, faults.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::config::SimConfig;
use super::engine::{Event, Histogram, Job, Stats};
use super::prefix_cache;
use super::words::{words, WORD_COUNT};

/// Largest body frame built from token events that are ready at once.
const COALESCE_BYTES: usize = 16 * 1024;

/// Per-request fault header; its values are the [`Fault`] names.
pub const FAULT_HEADER: &str = "x-ladder-fault";

/// State shared by every handler.
pub(crate) struct App {
    pub cfg: SimConfig,
    pub names: Vec<String>,
    pub api_key: Option<String>,
    pub stats: Arc<Stats>,
    pub jobs: mpsc::UnboundedSender<Job>,
    pub counter: AtomicU64,
    pub shutdown: watch::Receiver<bool>,
}

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

/// An injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Http500,
    Http429,
    DropMidStream,
    MalformedChunk,
    StreamError,
    Stall,
    UnknownModel,
}

impl Fault {
    const ALL: [Fault; 7] = [
        Fault::Http500,
        Fault::Http429,
        Fault::DropMidStream,
        Fault::MalformedChunk,
        Fault::StreamError,
        Fault::Stall,
        Fault::UnknownModel,
    ];

    fn parse(s: &str) -> Option<Fault> {
        Some(match s.trim() {
            "http_500" => Fault::Http500,
            "http_429" => Fault::Http429,
            "drop_mid_stream" => Fault::DropMidStream,
            "malformed_chunk" => Fault::MalformedChunk,
            "stream_error" => Fault::StreamError,
            "stall" => Fault::Stall,
            "unknown_model" => Fault::UnknownModel,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Completions,
    Chat,
}

fn error(status: StatusCode, message: impl Into<String>, kind: &str, code: &str) -> Response {
    let body =
        json!({"error": {"message": message.into(), "type": kind, "param": null, "code": code}});
    (status, Json(body)).into_response()
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

/// Errors of request checks are boxed: a `Response` is large for a `Result`'s error side.
type Refusal = Box<Response>;

pub(super) fn unknown_model(model: &str) -> Refusal {
    Box::new(error(
        StatusCode::NOT_FOUND,
        format!("The model `{model}` does not exist."),
        "NotFoundError",
        "model_not_found",
    ))
}

pub(super) fn bad_request(message: impl Into<String>, code: &str) -> Refusal {
    Box::new(error(
        StatusCode::BAD_REQUEST,
        message,
        "invalid_request_error",
        code,
    ))
}

pub(super) fn authorized(app: &App, headers: &HeaderMap) -> Result<(), Refusal> {
    let Some(key) = &app.api_key else {
        return Ok(());
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given == Some(key.as_str()) {
        Ok(())
    } else {
        Err(Box::new(error(
            StatusCode::UNAUTHORIZED,
            "Incorrect or missing API key; send `Authorization: Bearer <key>`.",
            "invalid_request_error",
            "invalid_api_key",
        )))
    }
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

async fn metrics(State(app): State<Arc<App>>) -> Response {
    let s = &app.stats;
    let m = &app.names[0];
    let cache = s.kv_used.load(Relaxed) as f64 / f64::from(app.cfg.kv_cache_tokens.max(1));
    let mut out = String::with_capacity(2048);
    let mut put = |name: &str, kind: &str, help: &str, samples: &[(&str, f64)]| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (labels, v) in samples {
            out.push_str(&format!("{name}{{{labels}model_name=\"{m}\"}} {v}\n"));
        }
    };
    put(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        &[("", s.running.load(Relaxed) as f64)],
    );
    put(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        &[("", s.waiting.load(Relaxed) as f64)],
    );
    put(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage, 1 means 100 percent.",
        &[("", cache)],
    );
    // The pre-v1 name, for dashboards that still read it.
    put(
        "vllm:gpu_cache_usage_perc",
        "gauge",
        "KV-cache usage, 1 means 100 percent (the pre-v1 name).",
        &[("", cache)],
    );
    put(
        "vllm:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        &[("", s.prompt_tokens.load(Relaxed) as f64)],
    );
    put(
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        &[("", s.generation_tokens.load(Relaxed) as f64)],
    );
    put(
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
        &[
            (
                "finished_reason=\"length\",",
                s.success_length.load(Relaxed) as f64,
            ),
            (
                "finished_reason=\"stop\",",
                s.success_stop.load(Relaxed) as f64,
            ),
        ],
    );
    let hist = |name: &str, help: &str, h: &Histogram| {
        let mut o = format!("# HELP {name} {help}\n# TYPE {name} histogram\n");
        let mut cumulative = 0;
        for (i, b) in h.buckets.iter().enumerate() {
            cumulative += b.load(Relaxed);
            let le = h
                .bounds
                .get(i)
                .map_or("+Inf".to_string(), |v| v.to_string());
            o.push_str(&format!(
                "{name}_bucket{{le=\"{le}\",model_name=\"{m}\"}} {cumulative}\n"
            ));
        }
        let sum = h.sum_ns.load(Relaxed) as f64 / 1e9;
        let count = h.count.load(Relaxed);
        o.push_str(&format!("{name}_sum{{model_name=\"{m}\"}} {sum}\n"));
        o.push_str(&format!("{name}_count{{model_name=\"{m}\"}} {count}\n"));
        o
    };
    let ttft_text = hist(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds (streamed requests, from the handler \
         start to the first token event).",
        &s.ttft,
    ) + &hist(
        "vllm:request_queue_time_seconds",
        "Histogram of time spent waiting for admission into the batch, in seconds.",
        &s.queue_time,
    ) + &hist(
        "vllm:e2e_request_latency_seconds",
        "Histogram of e2e request latency in seconds (hand-off to the engine until the last \
         token).",
        &s.e2e,
    ) + &hist(
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds (per generated token, in the engine).",
        &s.itl.0,
    );
    // What the KV cache is, as vLLM's info metric says it (the simulator counts the KV
    // budget in tokens: one token per block; the prefix cache has its own block size).
    let cache_info = format!(
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
         # TYPE vllm:cache_config_info gauge
         vllm:cache_config_info{{block_size=\"1\",cache_dtype=\"auto\",enable_prefix_caching=\"{}\",num_gpu_blocks=\"{}\"}} 1.0\n",
        if app.cfg.prefix_caching { "True" } else { "False" },
        app.cfg.kv_cache_tokens
    );
    if app.cfg.prefix_caching {
        put(
            "vllm:prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in prompt tokens.",
            &[("", s.prefix_queries.load(Relaxed) as f64)],
        );
        put(
            "vllm:prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in prompt tokens found cached.",
            &[("", s.prefix_hits.load(Relaxed) as f64)],
        );
    }
    put(
        "ladder_sim:prefill_tokens_total",
        "counter",
        "Prompt tokens prefilled by the engine (prompt tokens minus prefix-cache hits).",
        &[("", s.prefill_tokens.load(Relaxed) as f64)],
    );
    put(
        "ladder_sim:requests_rejected_total",
        "counter",
        "Requests rejected by the waiting-queue limits.",
        &[("", s.rejected.load(Relaxed) as f64)],
    );
    out.push_str(&ttft_text);
    out.push_str(&cache_info);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response()
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
            let mut n = 0;
            for m in msgs {
                match m.get("content") {
                    Some(Value::String(s)) => n += count_words(s),
                    Some(Value::Array(parts)) => {
                        for p in parts {
                            if let Some(Value::String(s)) = p.get("text") {
                                n += count_words(s);
                            }
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
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        bad_request(
            format!("request body is not valid JSON: {e}"),
            "invalid_json",
        )
    })?;
    if !v.is_object() {
        return Err(bad_request(
            "request body must be a JSON object",
            "invalid_json",
        ));
    }
    let model = match v.get("model") {
        Some(Value::String(m)) => m.clone(),
        _ => {
            return Err(bad_request(
                "`model` is required (a string); GET /v1/models lists the served names",
                "missing_model",
            ))
        }
    };
    if !app.names.contains(&model) {
        return Err(unknown_model(&model));
    }
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

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
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

fn shutting_down() -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "the simulator is shutting down",
        "server_error",
        "service_unavailable",
    )
}

/// Where a request's tokens come from.
enum Source {
    /// The engine's event channel (after `Scheduled`).
    Engine(mpsc::UnboundedReceiver<Event>),
    /// Zero-cost mode: tokens are available at once.
    Zero {
        left: u32,
        sent: u32,
        stats: Arc<Stats>,
        reached_max: bool,
    },
}

impl Source {
    /// The next tokens if ready without waiting.
    fn try_next(&mut self, chunk: u32) -> Option<(u32, bool)> {
        match self {
            Source::Engine(rx) => match rx.try_recv() {
                Ok(Event::Tokens { n, finished }) => Some((n, finished)),
                _ => None,
            },
            Source::Zero { .. } => self.next_zero(chunk),
        }
    }

    /// Next `(tokens, finished)`; `None` when the engine went away.
    async fn next(&mut self, chunk: u32) -> Option<(u32, bool)> {
        match self {
            Source::Engine(rx) => loop {
                match rx.recv().await? {
                    Event::Tokens { n, finished } => return Some((n, finished)),
                    Event::Scheduled | Event::Rejected => continue,
                }
            },
            Source::Zero { .. } => self.next_zero(chunk),
        }
    }

    fn next_zero(&mut self, chunk: u32) -> Option<(u32, bool)> {
        let Source::Zero {
            left,
            sent,
            stats,
            reached_max,
        } = self
        else {
            return None;
        };
        // Like the engine: the first token alone, then chunks of `chunk`.
        let n = if *sent == 0 { 1 } else { chunk }.min(*left);
        *sent += n;
        *left -= n;
        stats.generation_tokens.fetch_add(u64::from(n), Relaxed);
        let finished = *left == 0;
        if finished {
            stats.record_success(*reached_max);
        }
        Some((n, finished))
    }
}

/// Formats OpenAI-shaped chunks and bodies; owns the word RNG.
struct Gen {
    kind: Kind,
    rng: ChaCha8Rng,
    /// `"id":…,"object":<chunk object>,…` for stream chunks.
    chunk_base: String,
    model: String,
    id: String,
    created: u64,
    /// Reasoning tokens still to stream before the answer's content (chat only).
    reasoning_left: u32,
    /// Reasoning tokens streamed so far.
    reasoning_sent: u32,
}

impl Gen {
    fn new(kind: Kind, model: &str, index: u64, rng: ChaCha8Rng) -> Gen {
        let (id, chunk_object) = match kind {
            Kind::Completions => (format!("cmpl-sim-{index}"), "text_completion"),
            Kind::Chat => (format!("chatcmpl-sim-{index}"), "chat.completion.chunk"),
        };
        let created = unix_now();
        let model_json = Value::String(model.to_string()).to_string();
        let mk = |obj: &str| {
            format!(
                "\"id\":\"{id}\",\"object\":\"{obj}\",\"created\":{created},\"model\":{model_json}"
            )
        };
        Gen {
            kind,
            rng,
            chunk_base: mk(chunk_object),
            model: model.to_string(),
            id,
            created,
            reasoning_left: 0,
            reasoning_sent: 0,
        }
    }

    /// Splits `n` tokens into (reasoning, content) and counts the reasoning ones as sent.
    fn split(&mut self, n: u32) -> (u32, u32) {
        let r = n.min(self.reasoning_left);
        self.reasoning_left -= r;
        self.reasoning_sent += r;
        (r, n - r)
    }

    fn push_words(&mut self, buf: &mut Vec<u8>, n: u32) {
        let w = words();
        for _ in 0..n {
            buf.extend_from_slice(w[self.rng.gen_range(0..WORD_COUNT)].as_bytes());
        }
    }

    /// SSE events carrying `n` tokens (plus the chat role event before the first): one
    /// event, or two when the tokens cross from reasoning to content.
    fn push_token_event(&mut self, buf: &mut Vec<u8>, n: u32, finish: Option<&str>, first: bool) {
        if first && self.kind == Kind::Chat {
            buf.extend_from_slice(b"data: {");
            buf.extend_from_slice(self.chunk_base.as_bytes());
            buf.extend_from_slice(
                b",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
            );
        }
        let (reasoning, content) = self.split(n);
        if reasoning > 0 {
            let finish = if content == 0 { finish } else { None };
            self.push_event(buf, b"reasoning_content", reasoning, finish);
        }
        if content > 0 {
            self.push_event(buf, b"content", content, finish);
        }
    }

    /// One SSE event of `n` words in `field` (chat's delta field; completions use `text`).
    fn push_event(&mut self, buf: &mut Vec<u8>, field: &[u8], n: u32, finish: Option<&str>) {
        buf.extend_from_slice(b"data: {");
        buf.extend_from_slice(self.chunk_base.as_bytes());
        match self.kind {
            Kind::Completions => buf.extend_from_slice(b",\"choices\":[{\"index\":0,\"text\":\""),
            Kind::Chat => {
                buf.extend_from_slice(b",\"choices\":[{\"index\":0,\"delta\":{\"");
                buf.extend_from_slice(field);
                buf.extend_from_slice(b"\":\"");
            }
        }
        self.push_words(buf, n);
        buf.extend_from_slice(match self.kind {
            Kind::Completions => b"\",\"logprobs\":null,\"finish_reason\":".as_slice(),
            Kind::Chat => b"\"},\"logprobs\":null,\"finish_reason\":".as_slice(),
        });
        match finish {
            Some(r) => {
                buf.push(b'"');
                buf.extend_from_slice(r.as_bytes());
                buf.push(b'"');
            }
            None => buf.extend_from_slice(b"null"),
        }
        buf.extend_from_slice(b"}]}\n\n");
    }

    /// The usage object; reasoning answers add `completion_tokens_details` as OpenAI does.
    fn usage_json(&self, prompt: u32, completion: u32) -> String {
        let details = if self.reasoning_sent > 0 {
            format!(
                ",\"completion_tokens_details\":{{\"reasoning_tokens\":{}}}",
                self.reasoning_sent
            )
        } else {
            String::new()
        };
        format!(
            "{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion},\"total_tokens\":{}{details}}}",
            prompt + completion
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Tokens,
    Usage,
    Done,
    End,
}

struct StreamState {
    gen: Gen,
    source: Source,
    chunk: u32,
    fault: Option<Fault>,
    /// The stream fault fires after this many token chunks.
    fault_at: u32,
    chunks_sent: u32,
    tokens_sent: u32,
    reached_max: bool,
    prompt_tokens: u32,
    phase: Phase,
    include_usage: bool,
    stall: Duration,
    shutdown: watch::Receiver<bool>,
    /// When the handler started (the body has been read): TTFT is measured from here.
    arrived: Instant,
    stats: Arc<Stats>,
}

fn aborted(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, why.to_string())
}

impl StreamState {
    fn finish_reason(&self) -> &'static str {
        if self.reached_max {
            "length"
        } else {
            "stop"
        }
    }

    /// Sleeps a stall; false when shutdown interrupted it.
    async fn stall(&mut self) -> bool {
        let stall = self.stall;
        tokio::select! {
            _ = tokio::time::sleep(stall) => true,
            _ = self.shutdown.wait_for(|s| *s) => false,
        }
    }

    /// The next piece of the SSE body.
    async fn next_sse(&mut self) -> Option<io::Result<Bytes>> {
        if self.phase != Phase::End && self.chunks_sent >= self.fault_at {
            match self.fault.take() {
                Some(Fault::DropMidStream) => {
                    // Let hyper flush what was sent, so the client sees a partial stream.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    self.phase = Phase::End;
                    return Some(Err(aborted("simulated connection drop")));
                }
                Some(Fault::MalformedChunk) => {
                    return Some(Ok(Bytes::from_static(
                        b"data: {\"id\": this is not json\n\n",
                    )));
                }
                Some(Fault::StreamError) => {
                    self.phase = Phase::Done;
                    return Some(Ok(Bytes::from_static(
                            b"data: {\"error\":{\"message\":\"simulated engine error mid-stream\",\"type\":\"internal_error\",\"param\":null,\"code\":500}}\n\n",
                        )));
                }
                Some(Fault::Stall) if !self.stall().await => {
                    self.phase = Phase::End;
                    return Some(Err(aborted("simulator shutting down")));
                }
                _ => {}
            }
        }
        match self.phase {
            Phase::Tokens => {
                let Some(item) = self.source.next(self.chunk).await else {
                    self.phase = Phase::End;
                    return Some(Err(aborted("simulator shutting down")));
                };
                // Coalesce token events that are ready now into one body frame (up to
                // COALESCE_BYTES), stopping at the fault point; SSE framing is unchanged.
                let mut buf = Vec::with_capacity(COALESCE_BYTES + 1024);
                let mut item = Some(item);
                while let Some((n, finished)) = item.take() {
                    let first = self.chunks_sent == 0;
                    if first {
                        self.stats.ttft.observe(self.arrived.elapsed());
                    }
                    self.chunks_sent += 1;
                    self.tokens_sent += n;
                    let finish = finished.then(|| self.finish_reason());
                    self.gen.push_token_event(&mut buf, n, finish, first);
                    if finished {
                        self.phase = if self.include_usage {
                            Phase::Usage
                        } else {
                            Phase::Done
                        };
                        break;
                    }
                    let at_fault = self.fault.is_some() && self.chunks_sent >= self.fault_at;
                    if buf.len() < COALESCE_BYTES && !at_fault {
                        item = self.source.try_next(self.chunk);
                    }
                }
                if matches!(self.source, Source::Zero { .. }) && *self.shutdown.borrow() {
                    // Zero-cost streams never wait on the engine; end them on shutdown here.
                    self.phase = Phase::End;
                    return Some(Err(aborted("simulator shutting down")));
                }
                Some(Ok(Bytes::from(buf)))
            }
            Phase::Usage => {
                self.phase = Phase::Done;
                let s = format!(
                    "data: {{{},\"choices\":[],\"usage\":{}}}\n\n",
                    self.gen.chunk_base,
                    self.gen.usage_json(self.prompt_tokens, self.tokens_sent)
                );
                Some(Ok(Bytes::from(s)))
            }
            Phase::Done => {
                self.phase = Phase::End;
                Some(Ok(Bytes::from_static(b"data: [DONE]\n\n")))
            }
            Phase::End => None,
        }
    }

    /// A non-streaming response: waits for every token, then answers one JSON body.
    async fn whole_response(mut self) -> Response {
        let (mut text, mut thought) = (Vec::new(), Vec::new());
        let mut tokens = 0;
        loop {
            let Some((n, finished)) = self.source.next(self.chunk).await else {
                return shutting_down();
            };
            let (r, c) = self.gen.split(n);
            self.gen.push_words(&mut thought, r);
            self.gen.push_words(&mut text, c);
            tokens += n;
            if finished {
                break;
            }
        }
        let text = String::from_utf8(text).expect("words are ASCII");
        let thought = String::from_utf8(thought).expect("words are ASCII");
        let reason = self.finish_reason();
        let g = &self.gen;
        let choice = match g.kind {
            Kind::Completions => {
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": reason})
            }
            Kind::Chat if g.reasoning_sent > 0 => json!({"index": 0,
                "message": {"role": "assistant", "reasoning_content": thought, "content": text},
                "logprobs": null, "finish_reason": reason}),
            Kind::Chat => json!({"index": 0, "message": {"role": "assistant", "content": text},
                                 "logprobs": null, "finish_reason": reason}),
        };
        let object = match g.kind {
            Kind::Completions => "text_completion",
            Kind::Chat => "chat.completion",
        };
        let body = json!({
            "id": g.id, "object": object, "created": g.created, "model": g.model,
            "choices": [choice],
            "usage": serde_json::from_str::<Value>(&g.usage_json(self.prompt_tokens, tokens))
                .expect("usage is JSON"),
        });
        match self.fault {
            Some(Fault::DropMidStream) => {
                let s = body.to_string();
                let half = Bytes::from(s[..s.len() / 2].to_string());
                let parts: Vec<io::Result<Bytes>> =
                    vec![Ok(half), Err(aborted("simulated connection drop"))];
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    Body::from_stream(futures_util::stream::iter(parts)),
                )
                    .into_response()
            }
            Some(Fault::MalformedChunk) => (
                [(header::CONTENT_TYPE, "application/json")],
                format!("{{\"id\": \"{}\", this is not json", g.id),
            )
                .into_response(),
            Some(Fault::StreamError) => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "simulated engine error",
                "internal_error",
                "internal_error",
            ),
            Some(Fault::Stall) => {
                if !self.stall().await {
                    return shutting_down();
                }
                Json(body).into_response()
            }
            _ => Json(body).into_response(),
        }
    }
}
