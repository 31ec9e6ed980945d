//! One answer of the simulator: tokens from the engine (or at once, zero-cost), framed as
//! OpenAI SSE chunks or one JSON body, with the injected faults at their point.

use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::app::{error, shutting_down, unix_now, Fault, Kind};
use super::engine::{Event, Stats};
use super::words::{words, WORD_COUNT};

/// Largest body frame built from token events that are ready at once.
pub(super) const COALESCE_BYTES: usize = 16 * 1024;

/// Where a request's tokens come from.
pub(super) enum Source {
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
    pub(super) async fn next(&mut self, chunk: u32) -> Option<(u32, bool)> {
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
pub(super) struct Gen {
    kind: Kind,
    rng: ChaCha8Rng,
    /// `"id":…,"object":<chunk object>,…` for stream chunks.
    chunk_base: String,
    model: String,
    id: String,
    created: u64,
    /// Reasoning tokens still to stream before the answer's content (chat only).
    pub(super) reasoning_left: u32,
    /// Reasoning tokens streamed so far.
    reasoning_sent: u32,
}

impl Gen {
    pub(super) fn new(kind: Kind, model: &str, index: u64, rng: ChaCha8Rng) -> Gen {
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
pub(super) enum Phase {
    Tokens,
    Usage,
    Done,
    End,
}

pub(super) struct StreamState {
    pub(super) gen: Gen,
    pub(super) source: Source,
    pub(super) chunk: u32,
    pub(super) fault: Option<Fault>,
    /// The stream fault fires after this many token chunks.
    pub(super) fault_at: u32,
    pub(super) chunks_sent: u32,
    pub(super) tokens_sent: u32,
    pub(super) reached_max: bool,
    pub(super) prompt_tokens: u32,
    pub(super) phase: Phase,
    pub(super) include_usage: bool,
    pub(super) stall: Duration,
    pub(super) shutdown: watch::Receiver<bool>,
    /// When the handler started (the body has been read): TTFT is measured from here.
    pub(super) arrived: Instant,
    pub(super) stats: Arc<Stats>,
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
    pub(super) async fn next_sse(&mut self) -> Option<io::Result<Bytes>> {
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
    pub(super) async fn whole_response(mut self) -> Response {
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
