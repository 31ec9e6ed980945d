//! What a streamed answer has delivered so far, event by event: first token, content after
//! reasoning, gaps between chunks, usage, text kept for a token counter or a session's next
//! turn, and the failure that ends a request, on its way into the record.

use tokio::time::Instant;

use super::chunk::{self, Chunk, Usage};
use crate::record::{ErrorClass, ItlGaps};

/// A failure on its way into the record.
pub(super) struct Fail {
    pub(super) class: ErrorClass,
    pub(super) status: Option<u16>,
    pub(super) detail: String,
    pub(super) at: Instant,
    /// The connection was closed before any answer to this request (see
    /// [`closed_unanswered`]).
    pub(super) closed_unanswered: bool,
}

impl Fail {
    pub(super) fn new(class: ErrorClass, detail: impl Into<String>) -> Fail {
        Fail {
            class,
            status: None,
            detail: detail.into(),
            at: Instant::now(),
            closed_unanswered: false,
        }
    }
}

/// SSE event callback: hand one event to `prog`, keeping its failure and stopping the
/// parser on the first one.
pub(super) fn accept(
    prog: &mut Progress,
    data: &[u8],
    now: Instant,
    fail: &mut Option<Fail>,
) -> bool {
    match prog.event(data, now) {
        Ok(()) => true,
        Err(f) => {
            *fail = Some(f);
            false
        }
    }
}

/// The outcome of feeding the parser: an event's failure first, then a framing error.
pub(super) fn framing_outcome(
    fail: Option<Fail>,
    framed: Result<(), super::sse::SseError>,
) -> Result<(), Fail> {
    if let Some(f) = fail {
        return Err(f);
    }
    framed.map_err(|e| Fail::new(ErrorClass::Malformed, e.to_string()))
}

/// What the stream has delivered so far.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) first: Option<Instant>,
    /// The first chunk of the answer's content (after any reasoning).
    pub(super) first_content: Option<Instant>,
    /// Chunks whose text was reasoning (`reasoning_content` / `reasoning`).
    pub(super) reasoning_chunks: u32,
    pub(super) last: Option<Instant>,
    pub(super) last_read: Option<Instant>,
    pub(super) token_chunks: u32,
    pub(super) itl: ItlGaps,
    pub(super) usage: Option<Usage>,
    /// Generated text, kept only when a token counter may need it.
    pub(super) text: Option<String>,
    /// The answer's content (reasoning left out), kept only for a session's turn, whose
    /// answer the next turn carries as history.
    pub(super) answer: Option<String>,
    pub(super) done: bool,
    /// The API whose events these are: typed events (Messages, Responses) are read by
    /// `client::typed`, the rest as OpenAI completion chunks.
    pub(super) api: crate::scenario::types::Api,
}

/// `later`'s counts over `earlier`'s where it has them: the Messages API says the prompt's
/// count in its first event and the output's in its last.
fn merge(earlier: Option<Usage>, later: Usage) -> Usage {
    match earlier {
        None => later,
        Some(e) => Usage {
            prompt_tokens: later.prompt_tokens.or(e.prompt_tokens),
            completion_tokens: later.completion_tokens.or(e.completion_tokens),
            reasoning_tokens: later.reasoning_tokens.or(e.reasoning_tokens),
        },
    }
}

impl Progress {
    /// Applies one event's data; `Err` ends the stream with that failure.
    pub(super) fn event(&mut self, data: &[u8], now: Instant) -> Result<(), Fail> {
        if self.done {
            return Ok(()); // anything after [DONE] is ignored
        }
        let parsed = if self.api.typed_events() {
            super::typed::parse(self.api, data)
        } else {
            chunk::parse(data)
        };
        match parsed {
            Chunk::Done => self.done = true,
            Chunk::DoneWith(u) => {
                self.usage = Some(merge(self.usage, u));
                self.done = true;
            }
            Chunk::Error(msg) => {
                return Err(Fail {
                    at: now,
                    ..Fail::new(
                        ErrorClass::StreamError,
                        format!(
                            "error object in the stream after {} token chunks: {msg}",
                            self.token_chunks
                        ),
                    )
                })
            }
            Chunk::Malformed(why) => {
                let excerpt = String::from_utf8_lossy(&data[..data.len().min(120)]).into_owned();
                return Err(Fail {
                    at: now,
                    ..Fail::new(ErrorClass::Malformed, format!("{why}: {excerpt}"))
                });
            }
            Chunk::Data {
                text,
                reasoning,
                usage,
            } => {
                if let Some(u) = usage {
                    self.usage = Some(merge(self.usage, u));
                }
                if !text.is_empty() {
                    match self.last {
                        None => self.first = Some(now),
                        Some(last) => self.itl.push(now.saturating_duration_since(last)),
                    }
                    if reasoning {
                        self.reasoning_chunks += 1;
                    } else if self.first_content.is_none() {
                        self.first_content = Some(now);
                    }
                    self.last = Some(now);
                    self.token_chunks += 1;
                    if let Some(acc) = &mut self.text {
                        acc.push_str(&text);
                    }
                    if let (Some(acc), false) = (&mut self.answer, reasoning) {
                        acc.push_str(&text);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Reasoning tokens: the server's trusted `completion_tokens_details.reasoning_tokens` when it
/// is above 0; else, when the stream carried reasoning, the reasoning chunks' share of the
/// server's `completion_tokens` (a chunk can carry several tokens, as with speculative
/// decoding; vLLM reports no details), or the chunks themselves without usage. `None` for an
/// answer without reasoning, including the `reasoning_tokens: 0` some APIs put on every answer.
pub(super) fn reasoning_tokens(prog: &Progress, trusted: Option<&Usage>) -> Option<u32> {
    if let Some(n) = trusted.and_then(|u| u.reasoning_tokens).filter(|n| *n > 0) {
        return Some(n);
    }
    if prog.reasoning_chunks == 0 {
        return None;
    }
    Some(match trusted.and_then(|u| u.completion_tokens) {
        Some(c) if prog.token_chunks > 0 => {
            let (chunks, all) = (
                u64::from(prog.reasoning_chunks),
                u64::from(prog.token_chunks),
            );
            u32::try_from((u64::from(c) * chunks + all / 2) / all).unwrap_or(u32::MAX)
        }
        _ => prog.reasoning_chunks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(completion: Option<u32>, reasoning: Option<u32>) -> Usage {
        Usage {
            prompt_tokens: Some(10),
            completion_tokens: completion,
            reasoning_tokens: reasoning,
        }
    }

    fn progress(reasoning_chunks: u32, token_chunks: u32) -> Progress {
        Progress {
            reasoning_chunks,
            token_chunks,
            ..Progress::default()
        }
    }

    #[test]
    fn reasoning_tokens_come_from_details_else_the_chunks_share_of_usage() {
        // The server's own count wins.
        let p = progress(3, 4);
        assert_eq!(
            reasoning_tokens(&p, Some(&usage(Some(16), Some(12)))),
            Some(12)
        );
        // No details (vLLM): 3 of 4 chunks were reasoning, each of 4 tokens: 12 of 16.
        assert_eq!(reasoning_tokens(&p, Some(&usage(Some(16), None))), Some(12));
        // No usage at all: the chunks.
        assert_eq!(reasoning_tokens(&p, None), Some(3));
        // A `reasoning_tokens: 0` on a stream that reasoned is not believed over the stream.
        assert_eq!(
            reasoning_tokens(&p, Some(&usage(Some(16), Some(0)))),
            Some(12)
        );
    }

    #[test]
    fn a_turns_answer_keeps_the_content_and_leaves_the_reasoning_out() {
        let mut p = Progress {
            answer: Some(String::new()),
            ..Progress::default()
        };
        let now = Instant::now();
        for data in [
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hello"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":" there"}}]}"#,
        ] {
            assert!(p.event(data.as_bytes(), now).is_ok());
        }
        assert_eq!(p.answer.as_deref(), Some("Hello there"));
        assert_eq!(p.token_chunks, 3);
        // Without a session nothing is kept.
        let mut plain = Progress::default();
        let data = r#"{"choices":[{"index":0,"delta":{"content":"Hello"}}]}"#;
        assert!(plain.event(data.as_bytes(), now).is_ok());
        assert!(plain.answer.is_none() && plain.text.is_none());
    }

    #[test]
    fn a_zero_reasoning_count_on_a_plain_answer_is_no_reasoning() {
        // OpenAI and many gateways send `completion_tokens_details.reasoning_tokens: 0` always.
        let p = progress(0, 8);
        assert_eq!(reasoning_tokens(&p, Some(&usage(Some(8), Some(0)))), None);
        assert_eq!(reasoning_tokens(&p, Some(&usage(Some(8), None))), None);
        assert_eq!(reasoning_tokens(&p, None), None);
    }
}
