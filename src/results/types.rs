//! The on-disk shapes of a result folder other than the per-rung summary:
//! `run.json` ([`RunInfo`]) and one line of `requests_rate_<rate>.jsonl` ([`RequestLine`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize, Serializer};

use crate::record::{ErrorClass, ItlGaps, RequestError, RequestRecord, TokenSource};

/// Version of the result folder layout; a folder from a newer version is refused.
pub const RESULTS_FORMAT_VERSION: u32 = 1;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still running (or the process died without a word: treat as unusable).
    Running,
    /// Every rung finished.
    Complete,
    /// Stopped by Ctrl-C / SIGTERM; finished rungs are complete, the last one may be partial.
    Interrupted,
    /// Stopped by an error; see `status_detail`.
    Failed,
}

impl std::fmt::Display for RunStatus {
    /// As `run.json` spells it: `interrupted`, not `Interrupted`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        })
    }
}

/// One rung's entry in `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungEntry {
    /// Offered rate, req/s.
    pub rate: f64,
    /// `result_rate_<rate>.json`, relative to the folder.
    pub result_file: String,
    /// `requests_rate_<rate>.jsonl`, relative to the folder.
    pub requests_file: String,
    /// False when the rung was cut short by an interrupt.
    pub complete: bool,
}

/// Facts about the machine that ran the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub cpus: usize,
}

/// `run.json`: everything needed to reproduce and to trust a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Result folder layout version.
    pub format_version: u32,
    /// Version of ladder that wrote the folder.
    pub tool_version: String,
    /// Scenario name (folder `results/<name>/`).
    pub scenario_name: String,
    /// Path of the scenario file as given on the command line.
    pub scenario_file: String,
    /// The resolved scenario (env templates rendered, overrides applied). Holds the *name*
    /// of the API key variable, never its value.
    pub scenario: serde_json::Value,
    /// What the rungs' `rate` counts: `concurrency` for a closed-loop ladder (users), left
    /// out for a rate ladder (req/s) and in folders written before concurrency ladders.
    #[serde(default, skip_serializing_if = "crate::scenario::LoadKind::is_rate")]
    pub load: crate::scenario::LoadKind,
    /// `git rev-parse HEAD` of the working directory, if it is a repository.
    pub git_commit: Option<String>,
    /// SHA-256 of the tokenizer file.
    pub tokenizer_sha256: String,
    /// Where the tokenizer came from: file, model directory or hub id (with its cache path,
    /// revision and commit). Absent in folders written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_source: Option<crate::tokens::TokenizerSource>,
    /// Scheme, host and port requests went to (`sim` for the built-in simulator).
    pub endpoint: String,
    /// The client machine.
    pub host: HostInfo,
    /// UTC start time.
    pub started_at: DateTime<Utc>,
    /// UTC end time, once ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// How the run ended.
    pub status: RunStatus,
    /// Why it failed or was interrupted.
    pub status_detail: Option<String>,
    /// Rungs written so far, in run order.
    pub rungs: Vec<RungEntry>,
    /// Warnings raised during the run (too-short rung, client lag, overload, ...).
    pub warnings: Vec<String>,
    /// What the server said it is (engine version, model), asked once where the engine
    /// exposes it; absent when it does not, and in older folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::servermetrics::ServerIdentity>,
    /// Tokens the server counted beyond ladder's own count of the same prompt (a chat
    /// template's role markers and default system prompt, a BOS), measured in preflight from
    /// its usage; with `workload.input_length: server` the prompts' text was shortened by it.
    /// Absent when the server reported no usage, and in older folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_overhead: Option<i64>,
    /// The nonce that made this run's `workload.cache: cold` prompts new (16 hex digits; a
    /// repeat k > 1 of the run uses `workload::repeat_nonce(nonce, k − 1)`). Outside the
    /// `scenario` on purpose: two cold runs send other words but measure the same workload.
    /// Absent for `cache: warm`, and in older folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_nonce: Option<String>,
    /// Set in the folder of one shard of a sharded run (`ladder run --shard i/N`): it holds
    /// that shard's share of the requests only; `ladder merge` makes the whole run of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::shard_info::ShardInfo>,
    /// Set in a folder made by `ladder merge`: the shards it was merged from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<super::shard_info::MergedShards>,
    /// The trace a `load.trace` ladder replayed: its path, SHA-256 and size. Absent for
    /// other ladders and in older folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceInfo>,
}

impl RunInfo {
    /// `": <status_detail>"`, or nothing when the run gave no reason: the tail of a message
    /// that names the run's status.
    pub fn status_suffix(&self) -> String {
        self.status_detail
            .as_deref()
            .map(|x| format!(": {x}"))
            .unwrap_or_default()
    }
}

/// The trace file of a replay, as `run.json` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceInfo {
    /// The path as the scenario gives it (relative to the scenario file).
    pub path: String,
    /// SHA-256 of the file (hex).
    pub sha256: String,
    /// Lines replayed per rung (after `max_requests`).
    pub requests: u64,
    /// Lines in the file.
    pub file_lines: u64,
    /// Milliseconds from the first replayed line's timestamp to the last's (at speed 1).
    pub span_ms: f64,
}

/// One line of `requests_rate_<rate>.jsonl`: a request record at the output edge, in ms.
/// `Default` is a line of nothing (index 0, zero times, no tokens, not ok, usage as the token
/// source): the start of a line read key by key, or of one built from another tool's file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RequestLine {
    pub index: u32,
    /// Which repeat of the rung (1-based) the request belongs to; 0 (and absent from the
    /// file) in a run of one repeat.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
    pub warmup: bool,
    pub scheduled_ms: f64,
    pub sent_ms: f64,
    pub first_token_ms: Option<f64>,
    pub end_ms: f64,
    /// TTFT from the actual send; null for failures without a token.
    pub ttft_ms: Option<f64>,
    /// TPOT per vLLM; null for failures and one-token outputs.
    pub tpot_ms: Option<f64>,
    pub e2e_ms: f64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub token_source: TokenSource,
    /// Gaps between token chunks (whole microseconds since ladder stores them so; older
    /// files hold nanosecond-precision values, read the same way).
    #[serde(deserialize_with = "gaps_exact")]
    pub itl_ms: Vec<f64>,
    pub ok: bool,
    pub error_class: Option<ErrorClass>,
    pub status: Option<u16>,
    pub error_detail: Option<String>,
    /// The server's `usage.prompt_tokens`, as reported (absent in older files).
    #[serde(default)]
    pub server_prompt_tokens: Option<u32>,
    /// The server's `usage.completion_tokens`, as reported (absent in older files).
    #[serde(default)]
    pub server_completion_tokens: Option<u32>,
    /// `max_tokens` asked for (absent in older files).
    #[serde(default)]
    pub requested_output_tokens: Option<u32>,
    /// Why the server's usage was implausible and ignored (then `output_tokens` is ladder's
    /// own count, per `token_source`); absent when it was trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_rejected: Option<String>,
    /// Sent again on a new connection after the server closed the kept-alive one with no
    /// answer (absent when not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resent: bool,
    /// Output tokens spent reasoning (a reasoning model's thinking); absent for an answer
    /// without reasoning, and then `ttfc_ms` is `ttft_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u32>,
    /// Time to the first content token from the send, written beside `reasoning_tokens`;
    /// absent there when the answer had no content (see [`RequestLine::ttfc_ms`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfc_ms: Option<f64>,
    /// With `workload.shared_prefix`: the prompt's prefix group (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_group: Option<u32>,
    /// The rung's first request of its prefix group, a prefix-cache miss (absent when not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prefix_first: bool,
    /// With `workload.sessions`: the request's session in the rung (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u32>,
    /// With `workload.sessions`: the turn's index in its session, from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// With `workload.sessions`: the turns the session was planned to have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_turns: Option<u32>,
    /// With a `model` mix: the model the request named (absent without a mix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// With `workload.images`: the images the request carried (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<u32>,
    /// With `workload.images`: bytes of their `data:` URLs in the request body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_bytes: Option<u64>,
}

impl RequestLine {
    /// Abandoned in flight by a stop (class `interrupted`): no outcome, in no count but
    /// `interrupted_requests`.
    pub fn interrupted(&self) -> bool {
        self.error_class == Some(crate::record::ErrorClass::Interrupted)
    }

    /// The session and turn of a session's request, when the line has all three keys.
    pub fn session_turn(&self) -> Option<crate::record::SessionTurn> {
        Some(crate::record::SessionTurn {
            session: self.session?,
            turn: self.turn?,
            turns: self.session_turns?,
        })
    }

    /// Time to the first content token: `ttfc_ms` for a request that reasoned, its TTFT
    /// otherwise.
    pub fn ttfc_ms(&self) -> Option<f64> {
        if self.reasoning_tokens.is_some() {
            self.ttfc_ms
        } else {
            self.ttft_ms
        }
    }
}

std::thread_local! {
    /// The gaps of the line being read, before they are copied out at their exact length.
    static GAPS: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `itl_ms` read into one reused buffer and copied out at its exact length: a JSON list
/// does not say how long it is, so a `Vec` grown element by element reallocates 3 to 7
/// times a line (a million lines a rung in a big run), and keeps up to twice the room.
fn gaps_exact<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    struct Gaps;
    impl<'de> serde::de::Visitor<'de> for Gaps {
        type Value = Vec<f64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of gaps in milliseconds")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<f64>, A::Error> {
            GAPS.with_borrow_mut(|buf| {
                buf.clear();
                while let Some(x) = seq.next_element::<f64>()? {
                    buf.push(x);
                }
                let gaps = buf.as_slice().to_vec();
                // One freak line (a million gaps) must not pin its buffer for the rest.
                buf.shrink_to(1 << 16);
                Ok(gaps)
            })
        }
    }
    d.deserialize_seq(Gaps)
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Milliseconds, correctly rounded from the whole nanoseconds a `Duration` holds: written as
/// at most six decimals (`25.629995`, not the `25.629994999999997` of `as_secs_f64() * 1e3`),
/// which is shorter to store and faster to read back, and no less exact.
pub(crate) fn ms(d: std::time::Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// An ITL gap in milliseconds as written back to the whole microsecond it is stored at.
pub(crate) fn gap_of(ms: f64) -> Duration {
    Duration::from_micros((ms * 1000.0).round().max(0.0) as u64)
}

/// Milliseconds as written back to the whole nanosecond they were taken at.
pub(crate) fn ns(ms: f64) -> Duration {
    Duration::from_nanos((ms * 1e6).round().max(0.0) as u64)
}

/// A request line read back as the record it was written from (a merged shard's, a checked
/// folder's). Times are exact to the nanosecond (written as f64 milliseconds: the rounding is
/// far below a nanosecond for any rung shorter than days), ITL gaps to the microsecond they
/// are stored at. The `usage_rejected` reason is kept only as "rejected" (the metrics ask no
/// more).
impl From<&RequestLine> for RequestRecord {
    fn from(l: &RequestLine) -> Self {
        let mut r = l.bare_record();
        r.itl = l.itl_ms.iter().map(|&ms| gap_of(ms)).collect::<ItlGaps>();
        if let Some(e) = &mut r.error {
            e.detail = l.error_detail.clone().unwrap_or_default();
        }
        r
    }
}

impl RequestLine {
    /// [`RequestRecord::from`] without the ITL gaps and the error detail, so without
    /// allocating: what the metrics that need neither read (goodput, token accounting,
    /// sessions), for the tamper check to recompute them line by line with the writer's own
    /// code.
    pub(crate) fn bare_record(&self) -> RequestRecord {
        let l = self;
        let sent = ns(l.sent_ms);
        let first_token = l.first_token_ms.map(ns);
        RequestRecord {
            index: l.index,
            warmup: l.warmup,
            scheduled: ns(l.scheduled_ms),
            sent,
            first_token,
            first_content: match l.reasoning_tokens {
                Some(_) => l.ttfc_ms.map(|t| sent + ns(t)),
                None => first_token,
            },
            reasoning_tokens: l.reasoning_tokens,
            end: ns(l.end_ms),
            input_tokens: l.input_tokens,
            server_prompt_tokens: l.server_prompt_tokens,
            output_tokens: l.output_tokens,
            token_source: l.token_source,
            itl: ItlGaps::new(),
            error: (!l.ok).then(|| RequestError {
                class: l.error_class.unwrap_or(ErrorClass::Unclassified),
                status: l.status,
                detail: String::new(),
            }),
            server_completion_tokens: l.server_completion_tokens,
            requested_output_tokens: l.requested_output_tokens.unwrap_or(0),
            usage_rejected: l.usage_rejected.as_ref().map(|_| "usage rejected"),
            resent: l.resent,
            prefix_group: l.prefix_group,
            prefix_first: l.prefix_first,
            session: l.session_turn(),
            model: l.model.as_deref().map(std::sync::Arc::from),
            images: l.images.map(|count| crate::record::ImagesSent {
                count,
                bytes: l.image_bytes.unwrap_or(0),
            }),
        }
    }
}

/// A record as one [`RequestLine`] of JSON, for writing: borrowed from the record, so the ITL
/// gaps are not copied into a `Vec<f64>` (nor the error detail) per line. Its JSON reads back
/// as a [`RequestLine`], field for field.
#[derive(Serialize)]
pub(crate) struct RequestLineRef<'a> {
    index: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) repeat: u32,
    warmup: bool,
    scheduled_ms: f64,
    sent_ms: f64,
    first_token_ms: Option<f64>,
    end_ms: f64,
    ttft_ms: Option<f64>,
    tpot_ms: Option<f64>,
    e2e_ms: f64,
    input_tokens: u32,
    output_tokens: u32,
    token_source: TokenSource,
    #[serde(serialize_with = "itl_as_ms")]
    itl_ms: &'a ItlGaps,
    ok: bool,
    error_class: Option<ErrorClass>,
    status: Option<u16>,
    error_detail: Option<&'a str>,
    server_prompt_tokens: Option<u32>,
    server_completion_tokens: Option<u32>,
    requested_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_rejected: Option<&'static str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    resent: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttfc_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix_group: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    prefix_first: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_turns: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    images: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_bytes: Option<u64>,
}

fn itl_as_ms<S: Serializer>(gaps: &&ItlGaps, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(gaps.iter_ms())
}

impl<'a> From<&'a RequestRecord> for RequestLineRef<'a> {
    fn from(r: &'a RequestRecord) -> Self {
        RequestLineRef {
            index: r.index,
            repeat: 0,
            warmup: r.warmup,
            scheduled_ms: ms(r.scheduled),
            sent_ms: ms(r.sent),
            first_token_ms: r.first_token.map(ms),
            end_ms: ms(r.end),
            ttft_ms: r.ttft().map(ms),
            tpot_ms: r.tpot().map(ms),
            e2e_ms: ms(r.e2e()),
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            token_source: r.token_source,
            itl_ms: &r.itl,
            ok: r.ok(),
            error_class: r.error.as_ref().map(|e| e.class),
            status: r.error.as_ref().and_then(|e| e.status),
            error_detail: r.error.as_ref().map(|e| e.detail.as_str()),
            server_prompt_tokens: r.server_prompt_tokens,
            server_completion_tokens: r.server_completion_tokens,
            requested_output_tokens: Some(r.requested_output_tokens),
            usage_rejected: r.usage_rejected,
            resent: r.resent,
            reasoning_tokens: r.reasoning_tokens,
            ttfc_ms: r.reasoning_tokens.and(r.ttfc().map(ms)),
            prefix_group: r.prefix_group,
            prefix_first: r.prefix_first,
            session: r.session.map(|s| s.session),
            turn: r.session.map(|s| s.turn),
            session_turns: r.session.map(|s| s.turns),
            model: r.model.as_deref(),
            images: r.images.map(|i| i.count),
            image_bytes: r.images.map(|i| i.bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::record::RequestError;

    #[test]
    fn borrowed_line_writes_the_request_line_json() {
        let ok = RequestRecord {
            index: 7,
            scheduled: Duration::from_nanos(1_000_123),
            sent: Duration::from_nanos(1_200_456),
            first_token: Some(Duration::from_nanos(31_000_789)),
            first_content: Some(Duration::from_nanos(41_000_789)),
            reasoning_tokens: Some(3),
            end: Duration::from_nanos(91_000_001),
            input_tokens: 512,
            server_prompt_tokens: Some(511),
            output_tokens: 4,
            token_source: TokenSource::Retokenized,
            server_completion_tokens: Some(40),
            requested_output_tokens: 4,
            usage_rejected: Some("completion_tokens is more than twice max_tokens"),
            itl: vec![
                Duration::from_nanos(20_000_400),
                Duration::from_micros(19_999),
            ]
            .into(),
            prefix_group: Some(2),
            prefix_first: true,
            session: Some(crate::record::SessionTurn {
                session: 5,
                turn: 1,
                turns: 3,
            }),
            model: Some(std::sync::Arc::from("sql-lora")),
            ..Default::default()
        };
        let failed = RequestRecord {
            index: 8,
            warmup: true,
            end: Duration::from_millis(3),
            error: Some(RequestError {
                class: ErrorClass::RateLimit,
                status: Some(429),
                detail: "slow \"down\"".into(),
            }),
            ..Default::default()
        };
        // The lines `RequestLine` (the reading side) must write, field by field.
        let owned_ok = RequestLine {
            index: 7,
            scheduled_ms: ms(ok.scheduled),
            sent_ms: ms(ok.sent),
            first_token_ms: Some(ms(Duration::from_nanos(31_000_789))),
            end_ms: ms(ok.end),
            ttft_ms: ok.ttft().map(ms),
            tpot_ms: ok.tpot().map(ms),
            e2e_ms: ms(ok.e2e()),
            input_tokens: 512,
            output_tokens: 4,
            token_source: TokenSource::Retokenized,
            itl_ms: vec![20.0, 19.999],
            ok: true,
            server_prompt_tokens: Some(511),
            server_completion_tokens: Some(40),
            requested_output_tokens: Some(4),
            usage_rejected: Some("completion_tokens is more than twice max_tokens".into()),
            reasoning_tokens: Some(3),
            ttfc_ms: Some(ms(Duration::from_nanos(41_000_789 - 1_200_456))),
            prefix_group: Some(2),
            prefix_first: true,
            session: Some(5),
            turn: Some(1),
            session_turns: Some(3),
            model: Some("sql-lora".into()),
            ..RequestLine::default()
        };
        // Default is the rest: not ok, no times or tokens, usage as the source.
        let owned_failed = RequestLine {
            index: 8,
            warmup: true,
            end_ms: 3.0,
            e2e_ms: ms(failed.e2e()),
            error_class: Some(ErrorClass::RateLimit),
            status: Some(429),
            error_detail: Some("slow \"down\"".into()),
            requested_output_tokens: Some(0),
            ..RequestLine::default()
        };
        for (r, owned) in [(&ok, &owned_ok), (&failed, &owned_failed)] {
            let owned_json = serde_json::to_string(owned).unwrap();
            let borrowed = serde_json::to_string(&RequestLineRef::from(r)).unwrap();
            assert_eq!(borrowed, owned_json);
            // And it reads back as a RequestLine (serde_json's default float parsing may be a
            // unit in the last place off, so compare the gaps, which are short decimals).
            let back: RequestLine = serde_json::from_str(&borrowed).unwrap();
            assert_eq!(back.itl_ms, owned.itl_ms);
        }
        // A line written before the token accounting fields existed still reads.
        let mut old: serde_json::Value = serde_json::to_value(&owned_failed).unwrap();
        for k in [
            "server_prompt_tokens",
            "server_completion_tokens",
            "requested_output_tokens",
        ] {
            old.as_object_mut().unwrap().remove(k);
        }
        let back: RequestLine = serde_json::from_value(old).unwrap();
        assert_eq!(
            (back.server_prompt_tokens, back.requested_output_tokens),
            (None, None)
        );
        let line = serde_json::to_string(&RequestLineRef::from(&ok)).unwrap();
        assert!(line.contains(r#""itl_ms":[20.0,19.999]"#), "{line}");
    }

    #[test]
    fn a_line_reads_back_as_the_record_it_was_written_from() {
        let r = RequestRecord {
            index: 3,
            scheduled: Duration::new(7_201, 123_456_789),
            sent: Duration::new(7_201, 223_456_791),
            first_token: Some(Duration::new(7_202, 5)),
            first_content: Some(Duration::new(7_202, 5)),
            end: Duration::new(7_260, 999_999_999),
            input_tokens: 512,
            output_tokens: 3,
            itl: vec![
                Duration::from_micros(12_345),
                Duration::from_nanos(999_999_999),
            ]
            .into(),
            requested_output_tokens: 3,
            ..Default::default()
        };
        let text = serde_json::to_string(&RequestLineRef::from(&r)).unwrap();
        let line: RequestLine = serde_json::from_str(&text).unwrap();
        assert_eq!(RequestRecord::from(&line), r);
        let failed = RequestRecord {
            index: 4,
            sent: Duration::from_millis(3),
            end: Duration::from_millis(9),
            error: Some(RequestError {
                class: ErrorClass::RateLimit,
                status: Some(429),
                detail: "slow down".into(),
            }),
            ..Default::default()
        };
        let text = serde_json::to_string(&RequestLineRef::from(&failed)).unwrap();
        let line: RequestLine = serde_json::from_str(&text).unwrap();
        assert_eq!(RequestRecord::from(&line), failed);
    }
}
