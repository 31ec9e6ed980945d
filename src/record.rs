//! What happened to one request: the hand-off from the runner/client to metrics.
//!
//! Times are offsets from the start of the rung (`Duration`), so a record is independent of
//! the wall clock; the results module converts them to milliseconds at the output edge.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The `errors_by_class` key of [`ErrorClass::ClientResource`]; result folders written
/// before the class existed simply lack it (read as 0).
pub const CLIENT_RESOURCE_KEY: &str = "client_resource";

/// What to do about client-side failures, worded once for every message that gives it
/// (rung warnings, the analysis, compare/gate).
pub const CLIENT_RESOURCE_FIX: &str =
    "raise the open-file limit (e.g. `ulimit -n 65536`), widen the \
     local port range (net.ipv4.ip_local_port_range) or lower load.max_concurrency";

/// Why a request failed. Every failed request has exactly one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// HTTP 401 or 403: key missing, wrong or not allowed.
    Auth,
    /// HTTP 429: the server or a gateway is rate limiting.
    RateLimit,
    /// Any other HTTP 4xx.
    // snake_case would give `client4xx`: spell it as `key()` does, so a jsonl line's class
    // matches the summary's `errors_by_class` key.
    #[serde(rename = "client_4xx")]
    Client4xx,
    /// HTTP 5xx.
    #[serde(rename = "server_5xx")]
    Server5xx,
    /// The request or first token took longer than its timeout.
    Timeout,
    /// The connection could not be made (refused, DNS, TLS handshake).
    Connect,
    /// The connection broke after the response started.
    Reset,
    /// The stream carried an `{"error": ...}` object.
    StreamError,
    /// The response was not a well-formed OpenAI stream (bad JSON, bad framing, no tokens).
    Malformed,
    /// The client itself ran out of a local resource (open files, local ports, socket
    /// buffers or memory: EMFILE, ENFILE, EADDRNOTAVAIL, ENOBUFS, ENOMEM): the request never
    /// tested the server, so it is never counted as a server error or as overload.
    ClientResource,
    /// Still in flight when the run was stopped (Ctrl-C, SIGTERM, or a rung stopped for
    /// rejections) and abandoned after the grace period: it has no outcome, so it is neither
    /// a completion nor a failure. Counted as `interrupted_requests` in the summary, never in
    /// `errors_by_class` or the error rate; not in [`ErrorClass::ALL`].
    Interrupted,
    /// A failure imported from another tool's results (vLLM keeps only an error text). The
    /// client never records it, so it is not in [`ErrorClass::ALL`].
    Unclassified,
}

impl ErrorClass {
    /// All classes, in report order.
    pub const ALL: [ErrorClass; 10] = [
        ErrorClass::Auth,
        ErrorClass::RateLimit,
        ErrorClass::Client4xx,
        ErrorClass::Server5xx,
        ErrorClass::Timeout,
        ErrorClass::Connect,
        ErrorClass::Reset,
        ErrorClass::StreamError,
        ErrorClass::Malformed,
        ErrorClass::ClientResource,
    ];

    /// The snake_case key used in result files.
    pub fn key(self) -> &'static str {
        match self {
            ErrorClass::Auth => "auth",
            ErrorClass::RateLimit => "rate_limit",
            ErrorClass::Client4xx => "client_4xx",
            ErrorClass::Server5xx => "server_5xx",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Connect => "connect",
            ErrorClass::Reset => "reset",
            ErrorClass::StreamError => "stream_error",
            ErrorClass::Malformed => "malformed",
            ErrorClass::ClientResource => CLIENT_RESOURCE_KEY,
            ErrorClass::Interrupted => "interrupted",
            ErrorClass::Unclassified => "unclassified",
        }
    }

    /// True for failures of the load generator itself, not of the server under test.
    pub fn is_client_side(self) -> bool {
        self == ErrorClass::ClientResource
    }

    /// Class of a non-success HTTP status.
    pub fn from_status(status: u16) -> ErrorClass {
        match status {
            401 | 403 => ErrorClass::Auth,
            429 => ErrorClass::RateLimit,
            500..=599 => ErrorClass::Server5xx,
            _ => ErrorClass::Client4xx,
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Where a request's output token count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage.completion_tokens`.
    #[default]
    Usage,
    /// The generated text re-tokenized with the scenario's tokenizer.
    Retokenized,
    /// Neither usage nor a tokenizer: the number of token-bearing chunks (one token per
    /// chunk, as most servers stream).
    ChunkCount,
}

/// A request's failure: its class, the HTTP status if any, and a short (truncated,
/// key-redacted) detail for humans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestError {
    /// The single class this failure is counted in.
    pub class: ErrorClass,
    /// HTTP status when the server answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Body excerpt or transport error text, at most a few hundred bytes.
    pub detail: String,
}

/// Gaps between consecutive token-bearing chunks of one request (inter-token latencies),
/// stored compactly as whole microseconds: 4 bytes a gap instead of a `Duration`'s 16, since
/// a rung keeps every gap of every request until it is summarised and written.
///
/// Each gap is rounded to the nearest microsecond and saturates at `u32::MAX` µs (≈ 71.6
/// minutes). vLLM reports ITL in milliseconds; a microsecond is far below any meaningful
/// resolution of a network stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ItlGaps(Vec<u32>);

impl ItlGaps {
    /// No gaps yet.
    pub fn new() -> ItlGaps {
        ItlGaps(Vec::new())
    }

    /// Room for `n` gaps without growing.
    pub fn with_capacity(n: usize) -> ItlGaps {
        ItlGaps(Vec::with_capacity(n))
    }

    /// `d` in whole microseconds, rounded to nearest, saturating at `u32::MAX`.
    pub fn micros_of(d: Duration) -> u32 {
        u32::try_from((d.as_nanos() + 500) / 1000).unwrap_or(u32::MAX)
    }

    /// A gap of `us` microseconds in milliseconds, the unit of result files
    /// (`12345` → `12.345`).
    pub fn ms_of(us: u32) -> f64 {
        f64::from(us) / 1000.0
    }

    /// Append one gap.
    pub fn push(&mut self, gap: Duration) {
        self.0.push(Self::micros_of(gap));
    }

    /// Number of gaps.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no gaps (fewer than two token chunks).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The gaps in microseconds, in arrival order.
    pub fn micros(&self) -> &[u32] {
        &self.0
    }

    /// The gaps as durations, in arrival order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Duration> + '_ {
        self.0.iter().map(|&us| Duration::from_micros(us.into()))
    }

    /// The gaps in milliseconds (the unit of result files), in arrival order.
    pub fn iter_ms(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        self.0.iter().map(|&us| Self::ms_of(us))
    }

    /// Release capacity reserved for gaps that never came (a stream that ended early).
    pub fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }
}

impl FromIterator<Duration> for ItlGaps {
    fn from_iter<I: IntoIterator<Item = Duration>>(iter: I) -> Self {
        ItlGaps(iter.into_iter().map(ItlGaps::micros_of).collect())
    }
}

impl From<Vec<Duration>> for ItlGaps {
    fn from(gaps: Vec<Duration>) -> Self {
        gaps.into_iter().collect()
    }
}

/// One request as measured by the client.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestRecord {
    /// Index within the rung, warmup requests included (0-based).
    pub index: u32,
    /// Warmup requests are sent but excluded from metrics.
    pub warmup: bool,
    /// When the arrival process said to send it (offset from rung start).
    pub scheduled: Duration,
    /// When the request was actually handed to the connection (offset from rung start).
    pub sent: Duration,
    /// Arrival of the first chunk that carried generated text (reasoning or content).
    pub first_token: Option<Duration>,
    /// Arrival of the first chunk of the answer's content; later than `first_token` when a
    /// reasoning model thought first, `None` when no content came.
    pub first_content: Option<Duration>,
    /// Output tokens spent reasoning (server-reported, else counted reasoning chunks); `None`
    /// for an answer without reasoning. Included in `output_tokens`.
    pub reasoning_tokens: Option<u32>,
    /// Arrival of the last token-bearing chunk (success) or the failure time.
    pub end: Duration,
    /// Prompt tokens as synthesised/counted by the client.
    pub input_tokens: u32,
    /// Prompt tokens reported by the server's usage, if any.
    pub server_prompt_tokens: Option<u32>,
    /// Output tokens (see `token_source`).
    pub output_tokens: u32,
    /// Where `output_tokens` came from.
    pub token_source: TokenSource,
    /// Gaps between consecutive token-bearing chunks, in whole microseconds.
    pub itl: ItlGaps,
    /// `None` for a success.
    pub error: Option<RequestError>,
    /// Completion tokens reported by the server's usage, if any: as reported, even when
    /// implausible (then `usage_rejected` says why and `output_tokens` is ladder's own count).
    pub server_completion_tokens: Option<u32>,
    /// Output tokens asked for (`max_tokens`).
    pub requested_output_tokens: u32,
    /// Why the server's usage was not trusted (absurd numbers), when it was not.
    pub usage_rejected: Option<&'static str>,
    /// Sent a second time on a new connection because the kept-alive one it first went out
    /// on was closed by the server with no answer (`sent` is the second send, so the time
    /// lost shows as dispatch lag).
    pub resent: bool,
    /// With `workload.shared_prefix`: the prefix group of the prompt sent.
    pub prefix_group: Option<u32>,
    /// The rung's first request of its prefix group (warmup included): the one a prefix
    /// cache cannot have seen, so a miss ("cold"); later ones of the group are "warm".
    pub prefix_first: bool,
    /// With `workload.sessions`: the session and turn this request is.
    pub session: Option<SessionTurn>,
    /// With a `model` mix: the model this request named (`None` without a mix).
    pub model: Option<std::sync::Arc<str>>,
    /// With `workload.images`: the images the request carried.
    pub images: Option<ImagesSent>,
}

/// The images a chat request carried (`workload.images`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImagesSent {
    /// How many.
    pub count: u32,
    /// Bytes of their `data:` URLs in the body.
    pub bytes: u64,
}

/// Where a request sits in a multi-turn session (`workload.sessions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionTurn {
    /// The session's index in the rung (0-based, warmup sessions first).
    pub session: u32,
    /// The turn's index in its session (0-based): turn `k` carries turns `0..k` as history.
    pub turn: u32,
    /// Turns the session was planned to have (a failed turn ends it early).
    pub turns: u32,
}

impl RequestRecord {
    /// True when the request completed without error.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// True when the request was abandoned in flight by a stop ([`ErrorClass::Interrupted`]):
    /// it has no outcome and is left out of every count but `interrupted_requests`.
    pub fn interrupted(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|e| e.class == ErrorClass::Interrupted)
    }

    /// Time to first token from the actual send.
    pub fn ttft(&self) -> Option<Duration> {
        self.first_token.map(|t| t.saturating_sub(self.sent))
    }

    /// Time to the first content token from the actual send (after any reasoning).
    pub fn ttfc(&self) -> Option<Duration> {
        self.first_content.map(|t| t.saturating_sub(self.sent))
    }

    /// Time to first token from the scheduled send (coordinated-omission aware).
    pub fn ttft_from_scheduled(&self) -> Option<Duration> {
        self.first_token.map(|t| t.saturating_sub(self.scheduled))
    }

    /// End-to-end latency from the actual send.
    pub fn e2e(&self) -> Duration {
        self.end.saturating_sub(self.sent)
    }

    /// End-to-end latency from the scheduled send.
    pub fn e2e_from_scheduled(&self) -> Duration {
        self.end.saturating_sub(self.scheduled)
    }

    /// Dispatch lag: how late the client sent the request.
    pub fn dispatch_lag(&self) -> Duration {
        self.sent.saturating_sub(self.scheduled)
    }

    /// The server's prompt count, when it sent one and ladder trusted its usage.
    pub fn trusted_server_prompt_tokens(&self) -> Option<u32> {
        self.server_prompt_tokens
            .filter(|_| self.usage_rejected.is_none())
    }

    /// The server's completion count, when it sent one and ladder trusted its usage.
    pub fn trusted_server_completion_tokens(&self) -> Option<u32> {
        self.server_completion_tokens
            .filter(|_| self.usage_rejected.is_none())
    }

    /// Time per output token after the first, as vLLM defines it; `None` for one-token outputs.
    pub fn tpot(&self) -> Option<Duration> {
        tpot_of(
            self.ok(),
            self.output_tokens,
            self.sent,
            self.first_token,
            self.end,
        )
    }
}

/// [`RequestRecord::tpot`] from the times it reads (for request lines read back, which
/// need not build a whole record for it): (e2e − TTFT) / (output tokens − 1) for a success
/// of two tokens or more.
pub fn tpot_of(
    ok: bool,
    output_tokens: u32,
    sent: Duration,
    first_token: Option<Duration>,
    end: Duration,
) -> Option<Duration> {
    if !ok || output_tokens < 2 {
        return None;
    }
    let ttft = first_token?.saturating_sub(sent);
    Some(end.saturating_sub(sent).saturating_sub(ttft) / (output_tokens - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn tpot_follows_vllm_definition() {
        let r = RequestRecord {
            scheduled: ms(0),
            sent: ms(10),
            first_token: Some(ms(110)),
            end: ms(1110),
            output_tokens: 11,
            ..Default::default()
        };
        assert_eq!(r.ttft(), Some(ms(100)));
        assert_eq!(r.ttft_from_scheduled(), Some(ms(110)));
        assert_eq!(r.e2e(), ms(1100));
        assert_eq!(r.tpot(), Some(ms(100)));
        assert_eq!(r.dispatch_lag(), ms(10));
    }

    #[test]
    fn itl_gaps_round_to_the_nearest_microsecond_and_saturate() {
        let gaps: ItlGaps = vec![
            Duration::from_nanos(12_345_499),
            Duration::from_nanos(12_345_500),
            Duration::ZERO,
            Duration::from_secs(5 * 3600),
        ]
        .into();
        assert_eq!(gaps.micros(), &[12_345, 12_346, 0, u32::MAX]);
        assert_eq!(gaps.len(), 4);
        assert_eq!(gaps.iter().next(), Some(Duration::from_micros(12_345)));
        // Milliseconds print as short decimals, not binary-fraction noise.
        let ms: Vec<f64> = gaps.iter_ms().collect();
        assert_eq!(
            serde_json::to_string(&ms[..3]).unwrap(),
            "[12.345,12.346,0.0]"
        );
        assert!(ItlGaps::new().is_empty());
    }

    #[test]
    fn serde_names_are_the_summary_keys() {
        for c in ErrorClass::ALL {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.key()));
            assert_eq!(serde_json::from_str::<ErrorClass>(&json).unwrap(), c);
        }
    }

    #[test]
    fn status_classes() {
        assert_eq!(ErrorClass::from_status(401), ErrorClass::Auth);
        assert_eq!(ErrorClass::from_status(403), ErrorClass::Auth);
        assert_eq!(ErrorClass::from_status(429), ErrorClass::RateLimit);
        assert_eq!(ErrorClass::from_status(404), ErrorClass::Client4xx);
        assert_eq!(ErrorClass::from_status(503), ErrorClass::Server5xx);
    }
}
