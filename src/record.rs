//! What happened to one request: the hand-off from the runner/client to metrics.
//!
//! Times are offsets from the start of the rung (`Duration`), so a record is independent of
//! the wall clock; the results module converts them to milliseconds at the output edge.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

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
}

impl ErrorClass {
    /// All classes, in report order.
    pub const ALL: [ErrorClass; 9] = [
        ErrorClass::Auth,
        ErrorClass::RateLimit,
        ErrorClass::Client4xx,
        ErrorClass::Server5xx,
        ErrorClass::Timeout,
        ErrorClass::Connect,
        ErrorClass::Reset,
        ErrorClass::StreamError,
        ErrorClass::Malformed,
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
        }
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
    /// Arrival of the first chunk that carried generated text.
    pub first_token: Option<Duration>,
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
    /// Gaps between consecutive token-bearing chunks.
    pub itl: Vec<Duration>,
    /// `None` for a success.
    pub error: Option<RequestError>,
}

impl RequestRecord {
    /// True when the request completed without error.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Time to first token from the actual send.
    pub fn ttft(&self) -> Option<Duration> {
        self.first_token.map(|t| t.saturating_sub(self.sent))
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

    /// Time per output token after the first, as vLLM defines it; `None` for one-token outputs.
    pub fn tpot(&self) -> Option<Duration> {
        if !self.ok() || self.output_tokens < 2 {
            return None;
        }
        let ttft = self.ttft()?;
        Some(self.e2e().saturating_sub(ttft) / (self.output_tokens - 1))
    }
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
