//! Sending one request and measuring it: the hot path.
//!
//! One `Instant::now()` per network read, taken as soon as the read returns; every event in
//! that read shares it. Every failure ends as exactly one [`ErrorClass`] in the record.

use std::error::Error as StdError;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use tokio::time::{timeout_at, Instant};

use super::chunk::Usage;
use super::progress::{accept, framing_outcome, reasoning_tokens, Fail, Progress};
use super::resource::client_resource;
use super::secret::truncate;
use super::sse::SseParser;
use super::{
    usage, Client, ModelsReply, PreparedRequest, TokenCounter, DETAIL_MAX, ERROR_BODY_CAP,
};
use crate::record::{ErrorClass, ItlGaps, RequestError, RequestRecord, TokenSource};

/// Largest non-streaming JSON body accepted (a server that ignores `stream`).
const JSON_BODY_CAP: usize = 16 << 20;
/// How long the end of the body may lag behind `[DONE]`.
const AFTER_DONE_GRACE: Duration = Duration::from_secs(1);
/// Largest `/v1/models` body read.
const MODELS_BODY_CAP: usize = 4 << 20;

/// True when the connection closed after the request went out and before any byte of an
/// answer ("connection closed before message completed"): on a kept-alive connection, the
/// server's close crossing this request, which it never read as one.
pub(super) fn closed_unanswered(e: &reqwest::Error) -> bool {
    let mut src: Option<&(dyn StdError + 'static)> = e.source();
    while let Some(inner) = src {
        if let Some(h) = inner.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message();
        }
        src = inner.source();
    }
    false
}

/// The error and all its sources, joined: reqwest's own message is often just
/// "error sending request".
pub(super) fn chain(e: &dyn StdError) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let msg = inner.to_string();
        if !s.contains(&msg) {
            s.push_str(": ");
            s.push_str(&msg);
        }
        src = inner.source();
    }
    s
}

/// The OS refused the connection (nothing listens on the port): an `io::Error` of kind
/// `ConnectionRefused` somewhere in the chain.
fn refused(e: &reqwest::Error) -> bool {
    let mut src: Option<&(dyn StdError + 'static)> = e.source();
    while let Some(inner) = src {
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
        }
        src = inner.source();
    }
    false
}

/// A transport failure as a record failure: the client's own resource limits first (they
/// would otherwise read as connect errors or resets), then `class`. A refused connection
/// says so first: reqwest's message carries the URL, and a long one would push the OS's
/// "Connection refused" past the detail's cap, where the preflight and the dead-server
/// stop (`runner::rejection`) read it.
pub(super) fn transport_fail(e: &reqwest::Error, class: ErrorClass, context: &str) -> Fail {
    match client_resource(e) {
        Some(why) => Fail::new(
            ErrorClass::ClientResource,
            format!("{context}client-side failure, not the server's: {why}"),
        ),
        None if class == ErrorClass::Connect && refused(e) => {
            Fail::new(class, format!("{context}connection refused: {}", chain(e)))
        }
        None => Fail::new(class, format!("{context}{}", chain(e))),
    }
}

/// Class of an error from `send()` (before any response headers).
pub(super) fn classify_send_error(e: &reqwest::Error) -> ErrorClass {
    if client_resource(e).is_some() {
        return ErrorClass::ClientResource;
    }
    if e.is_connect() {
        return ErrorClass::Connect;
    }
    if e.is_timeout() {
        return ErrorClass::Timeout;
    }
    let mut src: Option<&(dyn StdError + 'static)> = e.source();
    while let Some(inner) = src {
        if let Some(h) = inner.downcast_ref::<hyper::Error>() {
            if h.is_parse() || h.is_parse_status() {
                return ErrorClass::Malformed;
            }
        }
        src = inner.source();
    }
    // Accepted, then closed or broken before a response head: the connection was reset.
    ErrorClass::Reset
}

impl Client {
    fn timeout_fail(&self, started: Instant, got_first: bool, tokens: u32) -> Fail {
        let now = Instant::now();
        let detail = match self.inner.ttft_timeout {
            Some(t)
                if !got_first
                    && now.saturating_duration_since(started) < self.inner.request_timeout =>
            {
                format!("no first token within the ttft_timeout of {t:?}")
            }
            _ => format!(
                "request exceeded request_timeout of {:?} ({tokens} token chunks received)",
                self.inner.request_timeout
            ),
        };
        Fail {
            at: now,
            ..Fail::new(ErrorClass::Timeout, detail)
        }
    }

    /// Sends one prepared request and measures it, then counts its output tokens on the
    /// blocking pool when the server sent no usage. Never panics and never fails: every
    /// failure becomes the record's single [`RequestError`]. Times are offsets from
    /// `rung_start`. The runner uses [`Client::measure`] instead, to free its concurrency
    /// slot before counting.
    pub async fn send(
        &self,
        req: &PreparedRequest,
        rung_start: Instant,
        scheduled: Duration,
        index: u32,
        warmup: bool,
    ) -> RequestRecord {
        self.measure(req, rung_start, scheduled, index, warmup)
            .await
            .counted()
            .await
    }

    /// Sends one prepared request and measures it; its timing is final when this returns.
    /// Re-tokenizing the output (CPU-bound: hundreds of milliseconds for a long text) is left
    /// to [`Measured::counted`], so it never runs on an async worker while other requests'
    /// reads and timeouts wait for that worker.
    pub async fn measure(
        &self,
        req: &PreparedRequest,
        rung_start: Instant,
        scheduled: Duration,
        index: u32,
        warmup: bool,
    ) -> Measured {
        self.measure_with(req, rung_start, scheduled, index, warmup, false)
            .await
    }

    /// [`Client::measure`] for a session's turn: the answer's content text is kept too
    /// ([`Measured::take_answer`]), for the next turn's history.
    pub async fn measure_turn(
        &self,
        req: &PreparedRequest,
        rung_start: Instant,
        scheduled: Duration,
        index: u32,
        warmup: bool,
    ) -> Measured {
        self.measure_with(req, rung_start, scheduled, index, warmup, true)
            .await
    }

    async fn measure_with(
        &self,
        req: &PreparedRequest,
        rung_start: Instant,
        scheduled: Duration,
        index: u32,
        warmup: bool,
        keep_answer: bool,
    ) -> Measured {
        if !self.inner.api.generates() {
            return self
                .measure_pooled(req, rung_start, scheduled, index, warmup)
                .await;
        }
        let mut prog = self.progress_for(req, keep_answer);
        let (sent, resent, result) = self.send_resending(req, &mut prog).await;

        let since = |t: Instant| t.saturating_duration_since(rung_start);
        let rejected = prog.usage.as_ref().and_then(|u| {
            // Image tokens are the server's to count: ladder's text count bounds no prompt.
            let counted = if req.images > 0 { 0 } else { req.input_tokens };
            usage::implausible(u, counted, req.max_tokens, prog.token_chunks)
        });
        let trusted = prog.usage.filter(|_| rejected.is_none());
        let (output_tokens, token_source, pending) = self.output_count(trusted, &mut prog);
        let (end, error) = self.outcome(result, &prog);
        // A stream that ended early (EOS, failure, multi-token chunks) must not keep its unused
        // reservation for as long as the rung's records are held.
        prog.itl.shrink_to_fit();
        let record = RequestRecord {
            index,
            warmup,
            scheduled,
            sent: since(sent),
            first_token: prog.first.map(since),
            first_content: prog.first_content.map(since),
            reasoning_tokens: reasoning_tokens(&prog, trusted.as_ref()),
            end: since(end),
            // 0: ladder counted no prompt (`tokenizer: none`); the server's count stands in.
            input_tokens: match req.input_tokens {
                0 => trusted.and_then(|u| u.prompt_tokens).unwrap_or(0),
                n => n,
            },
            server_prompt_tokens: prog.usage.and_then(|u| u.prompt_tokens),
            output_tokens,
            token_source,
            itl: prog.itl,
            error,
            server_completion_tokens: prog.usage.and_then(|u| u.completion_tokens),
            requested_output_tokens: req.max_tokens,
            usage_rejected: rejected,
            resent,
            // The runner knows the workload's structure; it tags the record.
            prefix_group: None,
            prefix_first: false,
            // The session runner tags a turn's record.
            session: None,
            model: req.model.clone(),
            images: (req.images > 0).then_some(crate::record::ImagesSent {
                count: req.images,
                bytes: req.image_bytes,
            }),
        };
        Measured {
            record,
            pending,
            answer: prog.answer,
        }
    }

    /// What a generating request's reads fill in, sized up front so the hot loop does not
    /// grow its buffers token by token.
    fn progress_for(&self, req: &PreparedRequest, keep_answer: bool) -> Progress {
        let expected = (req.max_tokens as usize).min(16 * 1024);
        Progress {
            text: self
                .counter
                .as_ref()
                .map(|_| String::with_capacity(expected * 4)),
            answer: keep_answer.then(|| String::with_capacity(expected * 4)),
            // n token chunks have n - 1 gaps.
            itl: ItlGaps::with_capacity(expected.saturating_sub(1)),
            api: self.inner.api,
            ..Progress::default()
        }
    }

    /// Sends the request and reads its answer into `prog`: when it went out and whether it
    /// was sent twice, and how it ended.
    ///
    /// A kept-alive connection the server closed after its last answer (llama.cpp's server
    /// closes one after every stream without saying `Connection: close`) can be picked for
    /// this request before its close arrives: the request is then lost with no answer. It is
    /// sent once more, on a new connection; the time lost counts as dispatch lag (the
    /// client's), never as the server's latency or error.
    async fn send_resending(
        &self,
        req: &PreparedRequest,
        prog: &mut Progress,
    ) -> (Instant, bool, Result<(), Fail>) {
        let mut resent = false;
        loop {
            let builder = self
                .http
                .post(self.inner.url.clone())
                .body(req.body.clone());
            let sent = Instant::now();
            let deadline = after(sent, self.inner.request_timeout);
            let ttft_deadline = match self.inner.ttft_timeout {
                Some(t) => after(sent, t).min(deadline),
                None => deadline,
            };
            let result = self
                .drive(builder, sent, deadline, ttft_deadline, prog)
                .await;
            match result {
                Err(f) if f.closed_unanswered && !resent => resent = true,
                result => return (sent, resent, result),
            }
        }
    }

    /// The output's token count and where it came from: the server's usage when trusted,
    /// else the chunk count, with the text handed on to be re-tokenized when a counter can.
    fn output_count(
        &self,
        trusted: Option<Usage>,
        prog: &mut Progress,
    ) -> (u32, TokenSource, Option<(TokenCounter, String)>) {
        match trusted.and_then(|u| u.completion_tokens) {
            Some(n) => (n, TokenSource::Usage, None),
            None => match (&self.counter, prog.text.take()) {
                (Some(count), Some(text)) if prog.token_chunks > 0 => {
                    // Until counted: the chunk count, which is also the fallback.
                    let pending = Some((count.clone(), text));
                    (prog.token_chunks, TokenSource::Retokenized, pending)
                }
                _ => (prog.token_chunks, TokenSource::ChunkCount, None),
            },
        }
    }

    /// When the request ended and its one error, redacted and cut to length.
    fn outcome(
        &self,
        result: Result<(), Fail>,
        prog: &Progress,
    ) -> (Instant, Option<RequestError>) {
        match result {
            Ok(()) => (
                prog.last.or(prog.last_read).unwrap_or_else(Instant::now),
                None,
            ),
            Err(f) => {
                let detail = truncate(self.redact(&f.detail), DETAIL_MAX);
                (
                    f.at,
                    Some(RequestError {
                        class: f.class,
                        status: f.status,
                        detail,
                    }),
                )
            }
        }
    }

    async fn drive(
        &self,
        builder: reqwest::RequestBuilder,
        sent: Instant,
        deadline: Instant,
        ttft_deadline: Instant,
        prog: &mut Progress,
    ) -> Result<(), Fail> {
        let mut resp = match timeout_at(ttft_deadline, builder.send()).await {
            Err(_) => return Err(self.timeout_fail(sent, false, 0)),
            Ok(Err(e)) => {
                return Err(Fail {
                    closed_unanswered: closed_unanswered(&e),
                    ..transport_fail(&e, classify_send_error(&e), "")
                })
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if !status.is_success() {
            let (body, _) = read_capped(&mut resp, ERROR_BODY_CAP, deadline).await;
            let mut detail = String::from_utf8_lossy(&body).into_owned();
            if status.is_redirection() {
                let to = resp
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("?");
                detail = format!("redirect to {to} not followed (another host): {detail}");
            }
            return Err(Fail {
                status: Some(status.as_u16()),
                ..Fail::new(ErrorClass::from_status(status.as_u16()), detail.trim())
            });
        }
        let json_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|ct| ct.contains("json"));

        let mut parser = SseParser::default();
        let mut json_body: Option<Vec<u8>> = None;
        let mut sniffed = false;
        let mut done_deadline: Option<Instant> = None;
        loop {
            let limit = if prog.done {
                // After [DONE] only the end of the body is awaited; a server that keeps it
                // open must not hold the request (and its concurrency slot) much longer.
                (*done_deadline.get_or_insert_with(|| after(Instant::now(), AFTER_DONE_GRACE)))
                    .min(deadline)
            } else if prog.first.is_none() {
                ttft_deadline
            } else {
                deadline
            };
            let read = match timeout_at(limit, resp.chunk()).await {
                Err(_) if prog.done => return Ok(()), // [DONE] seen; only the close is late
                Err(_) => {
                    return Err(self.timeout_fail(sent, prog.first.is_some(), prog.token_chunks))
                }
                Ok(Err(e)) => {
                    let context = format!(
                        "response body broke after {} token chunks: ",
                        prog.token_chunks
                    );
                    return Err(transport_fail(&e, ErrorClass::Reset, &context));
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(b))) => b,
            };
            let now = Instant::now();
            prog.last_read = Some(now);
            if !sniffed && !read.is_empty() {
                // A server that ignores `stream: true` answers with one JSON document: decide
                // from the content type, or from the first byte when there is none.
                sniffed = true;
                let first = read.iter().find(|b| !b.is_ascii_whitespace());
                if json_type == Some(true) || (json_type.is_none() && first == Some(&b'{')) {
                    json_body = Some(Vec::new());
                }
            }
            if let Some(buf) = &mut json_body {
                if buf.len() + read.len() > JSON_BODY_CAP {
                    return Err(Fail::new(
                        ErrorClass::Malformed,
                        format!("non-streaming JSON body larger than {JSON_BODY_CAP} bytes"),
                    ));
                }
                buf.extend_from_slice(&read);
                continue;
            }
            let mut fail = None;
            let framed = parser.feed(&read, |data| accept(prog, data, now, &mut fail));
            framing_outcome(fail, framed)?;
        }

        if let Some(buf) = json_body {
            let now = prog.last_read.unwrap_or_else(Instant::now);
            prog.event(&buf, now)?;
            prog.done = true;
        } else {
            let now = prog.last_read.unwrap_or_else(Instant::now);
            let mut fail = None;
            let framed = parser.finish(|data| accept(prog, data, now, &mut fail));
            framing_outcome(fail, framed)?;
        }
        match (prog.done, prog.token_chunks) {
            (true, _) => Ok(()),
            (false, 0) => Err(Fail::new(
                ErrorClass::Malformed,
                "the response ended with no generated text and no [DONE]",
            )),
            (false, n) => Err(Fail::new(
                ErrorClass::Reset,
                format!("the stream ended without [DONE] after {n} token chunks"),
            )),
        }
    }

    /// `GET {base}/v1/models`: the served model ids, or what came back instead.
    pub async fn list_models(&self) -> ModelsReply {
        let deadline = after(Instant::now(), self.inner.request_timeout);
        let mut resent = false;
        let mut resp = match loop {
            let send = self.http.get(self.inner.models_url.clone()).send();
            match timeout_at(deadline, send).await {
                // The server's close crossed this GET on a kept-alive connection: once more.
                Ok(Err(e)) if closed_unanswered(&e) && !resent => resent = true,
                sent => break sent,
            }
        } {
            Err(_) => {
                return ModelsReply::Failed(RequestError {
                    class: ErrorClass::Timeout,
                    status: None,
                    detail: format!(
                        "no answer within request_timeout of {:?}",
                        self.inner.request_timeout
                    ),
                })
            }
            Ok(Err(e)) => {
                let f = transport_fail(&e, classify_send_error(&e), "");
                return ModelsReply::Failed(RequestError {
                    class: f.class,
                    status: None,
                    detail: truncate(self.redact(&f.detail), DETAIL_MAX),
                });
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        let cap = if status.is_success() {
            MODELS_BODY_CAP
        } else {
            ERROR_BODY_CAP
        };
        let (body, over) = read_capped(&mut resp, cap, deadline).await;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return ModelsReply::Status {
                status: status.as_u16(),
                body: truncate(self.redact(text.trim()), DETAIL_MAX),
            };
        }
        if over {
            return ModelsReply::TooLarge(MODELS_BODY_CAP);
        }
        #[derive(serde::Deserialize)]
        struct List {
            data: Vec<Model>,
        }
        #[derive(serde::Deserialize)]
        struct Model {
            id: String,
        }
        match serde_json::from_slice::<List>(&body) {
            Ok(l) => ModelsReply::Served(l.data.into_iter().map(|m| m.id).collect()),
            Err(_) => ModelsReply::Unparsable,
        }
    }
}

/// A measured request whose output tokens may still have to be counted from its text.
pub struct Measured {
    record: RequestRecord,
    pending: Option<(TokenCounter, String)>,
    /// The answer's content, for a session's turn ([`Client::measure_turn`]).
    answer: Option<String>,
}

impl Measured {
    /// A record that needs no counting and carries no answer (a pooled request).
    pub(super) fn done(record: RequestRecord) -> Measured {
        Measured {
            record,
            pending: None,
            answer: None,
        }
    }

    /// The answer's content text of a session's turn (`None` for other requests), taken
    /// out once.
    pub fn take_answer(&mut self) -> Option<String> {
        self.answer.take()
    }

    /// The record as measured so far (before any re-tokenizing).
    pub fn record(&self) -> &RequestRecord {
        &self.record
    }

    /// True when [`Measured::counted`] has text to re-tokenize.
    pub fn needs_counting(&self) -> bool {
        self.pending.is_some()
    }

    /// The final record, its output re-tokenized on tokio's blocking pool when needed (the
    /// record's times are already final). If counting fails, the token chunks are counted.
    pub async fn counted(self) -> RequestRecord {
        let Measured {
            mut record,
            pending,
            ..
        } = self;
        if let Some((count, text)) = pending {
            match tokio::task::spawn_blocking(move || count(&text)).await {
                Ok(n) => record.output_tokens = n,
                Err(_) => record.token_source = TokenSource::ChunkCount,
            }
        }
        record
    }
}

/// `t + d`, saturating far in the future instead of panicking on an absurd timeout.
pub(super) fn after(t: Instant, d: Duration) -> Instant {
    t.checked_add(d)
        .unwrap_or_else(|| t + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// At most `cap` bytes of a body, whatever way it ended (an error body is a courtesy; its
/// status already says what happened), and whether it passed the cap.
async fn read_capped(
    resp: &mut reqwest::Response,
    cap: usize,
    deadline: Instant,
) -> (Vec<u8>, bool) {
    let b = super::body::read_bounded(resp, cap, Some(deadline)).await;
    let over = matches!(b.end, super::body::End::OverCap);
    (b.bytes, over)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused connection to a long URL: the detail, capped as records cap it, still
    /// says "refused" (it was past the cap at the end of reqwest's message).
    #[tokio::test]
    async fn a_refused_connection_says_so_before_the_url_however_long() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        }; // dropped: nothing listens there now
        let url = format!("http://127.0.0.1:{port}/{}", "v1/".repeat(100));
        let e = reqwest::Client::new().get(&url).send().await.unwrap_err();
        let class = classify_send_error(&e);
        assert_eq!(class, ErrorClass::Connect);
        let f = transport_fail(&e, class, "");
        let capped = truncate(f.detail.clone(), super::super::DETAIL_MAX);
        assert!(capped.starts_with("connection refused: "), "{capped}");
        // Without the lead the OS's words sat past the cap.
        assert!(!truncate(chain(&e), super::super::DETAIL_MAX)
            .to_ascii_lowercase()
            .contains("refused"));
    }
}
