//! The streamed APIs whose events carry a `type` (Anthropic's Messages, OpenAI's Responses):
//! their request bodies and the reading of one event's `data` into the same [`Chunk`] the
//! completion chunks give, so TTFT, TPOT and ITL are measured as for chat.
//!
//! Messages: text in `content_block_delta` (`delta.text`; `delta.thinking` is reasoning),
//! prompt tokens from `message_start.message.usage.input_tokens` (plus its cache counts),
//! output tokens from `message_delta.usage.output_tokens`, the end at `message_stop`.
//! Responses: text in `response.output_text.delta` (`delta`; the reasoning deltas are
//! reasoning), usage from `response.completed` (`response.usage`), which also ends the stream.

use std::borrow::Cow;
use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::chunk::{Chunk, Usage};
use crate::scenario::types::Api;

/// The `anthropic-version` sent unless `endpoint.headers` sets one.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The streamed body of one Messages or Responses request.
pub(super) fn body(
    api: Api,
    model: &str,
    prompt: &str,
    max_tokens: u32,
    ignore_eos: bool,
    extra: &BTreeMap<String, serde_json::Value>,
) -> Bytes {
    #[derive(Serialize)]
    struct Message<'a> {
        role: &'a str,
        content: &'a str,
    }
    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        messages: Option<[Message<'a>; 1]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        input: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_output_tokens: Option<u32>,
        stream: bool,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        ignore_eos: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        temperature: Option<f32>,
        #[serde(flatten)]
        extra: &'a BTreeMap<String, serde_json::Value>,
    }
    let messages = api == Api::Messages;
    let b = Body {
        model,
        messages: messages.then_some([Message {
            role: "user",
            content: prompt,
        }]),
        input: (!messages).then_some(prompt),
        max_tokens: messages.then_some(max_tokens),
        max_output_tokens: (!messages).then_some(max_tokens),
        stream: true,
        ignore_eos,
        temperature: (!extra.contains_key("temperature")).then_some(0.0),
        extra,
    };
    Bytes::from(serde_json::to_vec(&b).expect("a request body always serialises"))
}

#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// Messages' `delta` is an object, Responses' a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Delta<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Block {
        #[serde(default, borrow)]
        text: Option<Text<'a>>,
        #[serde(default, borrow)]
        thinking: Option<Text<'a>>,
    },
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u32>,
    #[serde(default)]
    cache_read_input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    output_tokens_details: Option<Details>,
}

#[derive(Deserialize, Default)]
struct Details {
    #[serde(default)]
    reasoning_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Holder {
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Messages' `message_start.message`.
    #[serde(default)]
    message: Option<Holder>,
    /// Responses' `response.completed.response` (and `response.failed`'s).
    #[serde(default)]
    response: Option<Holder>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

fn usage(w: WireUsage, with_output: bool) -> Usage {
    let prompt = w.input_tokens.map(|i| {
        i.saturating_add(w.cache_creation_input_tokens.unwrap_or(0))
            .saturating_add(w.cache_read_input_tokens.unwrap_or(0))
    });
    Usage {
        prompt_tokens: prompt,
        completion_tokens: w.output_tokens.filter(|_| with_output),
        reasoning_tokens: w.output_tokens_details.and_then(|d| d.reasoning_tokens),
    }
}

fn error_text(e: &serde_json::Value) -> String {
    match e.get("message").and_then(serde_json::Value::as_str) {
        Some(m) => m.to_owned(),
        None => e.to_string(),
    }
}

fn data(text: Cow<'_, str>, reasoning: bool, usage: Option<Usage>) -> Chunk<'_> {
    Chunk::Data {
        text,
        reasoning,
        usage,
    }
}

/// Interprets one typed event's `data` for `api` (Messages or Responses).
pub fn parse(api: Api, data_: &[u8]) -> Chunk<'_> {
    let trimmed = data_.trim_ascii();
    if trimmed == b"[DONE]" {
        return Chunk::Done;
    }
    let ev: Event<'_> = match serde_json::from_slice(trimmed) {
        Ok(e) => e,
        Err(_) => return Chunk::Malformed("an event is not a JSON object with a `type`"),
    };
    let none = || data(Cow::Borrowed(""), false, None);
    match (api, ev.kind.as_ref()) {
        (_, "error") => Chunk::Error(match &ev.error {
            Some(e) => error_text(e),
            None => String::from_utf8_lossy(trimmed).into_owned(),
        }),
        (Api::Messages, "message_start") => match ev.message.and_then(|m| m.usage) {
            // Its `output_tokens` is the start's (1), not the answer's.
            Some(u) => data(Cow::Borrowed(""), false, Some(usage(u, false))),
            None => none(),
        },
        (Api::Messages, "content_block_delta") => match ev.delta {
            Some(Delta::Block {
                text: Some(Text(t)),
                ..
            }) => data(t, false, None),
            Some(Delta::Block {
                thinking: Some(Text(t)),
                ..
            }) => data(t, true, None),
            _ => none(),
        },
        (Api::Messages, "message_delta") => match ev.usage {
            Some(u) => data(Cow::Borrowed(""), false, Some(usage(u, true))),
            None => none(),
        },
        (Api::Messages, "message_stop") => Chunk::Done,
        (Api::Responses, "response.output_text.delta") => match ev.delta {
            Some(Delta::Text(t)) => data(t, false, None),
            _ => Chunk::Malformed("a response.output_text.delta without a string `delta`"),
        },
        (
            Api::Responses,
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta",
        ) => match ev.delta {
            Some(Delta::Text(t)) => data(t, true, None),
            _ => none(),
        },
        (Api::Responses, "response.completed" | "response.incomplete") => {
            match ev.response.and_then(|r| r.usage) {
                Some(u) => Chunk::DoneWith(usage(u, true)),
                None => Chunk::Done,
            }
        }
        (Api::Responses, "response.failed") => Chunk::Error(
            ev.response
                .and_then(|r| r.error)
                .map(|e| error_text(&e))
                .unwrap_or_else(|| "response.failed".into()),
        ),
        // ping, content_block_start/stop, response.created, …: nothing to measure.
        _ => none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(c: Chunk<'_>) -> (String, bool) {
        match c {
            Chunk::Data {
                text, reasoning, ..
            } => (text.into_owned(), reasoning),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn messages_events_give_text_usage_and_the_end() {
        fn m(s: &str) -> Chunk<'_> {
            parse(Api::Messages, s.as_bytes())
        }
        let start = m(
            r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"cache_read_input_tokens":3,"output_tokens":1}}}"#,
        );
        assert_eq!(
            start,
            Chunk::Data {
                text: "".into(),
                reasoning: false,
                usage: Some(Usage {
                    prompt_tokens: Some(15),
                    completion_tokens: None,
                    reasoning_tokens: None
                })
            }
        );
        assert_eq!(
            text(m(
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \"x\""}}"#
            )),
            ("Hi \"x\"".into(), false)
        );
        assert_eq!(
            text(m(
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#
            )),
            ("hmm".into(), true)
        );
        assert_eq!(text(m(r#"{"type":"ping"}"#)), (String::new(), false));
        match m(
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":7}}"#,
        ) {
            Chunk::Data { usage: Some(u), .. } => {
                assert_eq!((u.prompt_tokens, u.completion_tokens), (None, Some(7)))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(m(r#"{"type":"message_stop"}"#), Chunk::Done);
        assert_eq!(
            m(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
            Chunk::Error("Overloaded".into())
        );
        assert!(matches!(m(r#"{"no":"type"}"#), Chunk::Malformed(_)));
        assert!(matches!(m("nope"), Chunk::Malformed(_)));
    }

    #[test]
    fn responses_events_give_text_usage_and_the_end() {
        fn r(s: &str) -> Chunk<'_> {
            parse(Api::Responses, s.as_bytes())
        }
        assert_eq!(
            text(r(
                r#"{"type":"response.output_text.delta","item_id":"i","output_index":0,"content_index":0,"delta":"Hel"}"#
            )),
            ("Hel".into(), false)
        );
        assert_eq!(
            text(r(
                r#"{"type":"response.reasoning_summary_text.delta","delta":"think"}"#
            )),
            ("think".into(), true)
        );
        assert_eq!(
            text(r(r#"{"type":"response.created","response":{"id":"r"}}"#)),
            (String::new(), false)
        );
        assert_eq!(
            r(
                r#"{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":9,"output_tokens":4,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":13}}}"#
            ),
            Chunk::DoneWith(Usage {
                prompt_tokens: Some(9),
                completion_tokens: Some(4),
                reasoning_tokens: Some(2)
            })
        );
        assert_eq!(
            r(
                r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}"#
            ),
            Chunk::Error("boom".into())
        );
        assert!(matches!(
            r(r#"{"type":"response.output_text.delta","delta":{"x":1}}"#),
            Chunk::Malformed(_)
        ));
    }

    #[test]
    fn llama_servers_own_events_read_as_the_server_counts() {
        // Captured from llama-server (llama.cpp 11434, SmolLM2; docs/endpoints.md): its
        // Messages start splits the prompt into cache reads and the rest.
        let start = parse(
            Api::Messages,
            br#"{"type":"message_start","message":{"id":"chatcmpl-f","type":"message","role":"assistant","content":[],"model":"smollm2-135m","stop_reason":null,"stop_sequence":null,"usage":{"cache_read_input_tokens":32,"input_tokens":1,"output_tokens":0}}}"#,
        );
        assert!(
            matches!(
                start,
                Chunk::Data {
                    usage: Some(Usage {
                        prompt_tokens: Some(33),
                        completion_tokens: None,
                        ..
                    }),
                    ..
                }
            ),
            "{start:?}"
        );
        let done = parse(
            Api::Responses,
            br#"{"type":"response.completed","response":{"id":"resp_X","object":"response","created_at":1796613071,"status":"completed","model":"smollm2-135m","output":[{"type":"message","status":"completed","id":"msg_f","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello! I'sure I"}],"role":"assistant"}],"usage":{"input_tokens":33,"output_tokens":6,"total_tokens":39,"input_tokens_details":{"cached_tokens":32}}},"timings":{"cache_n":32,"prompt_n":1,"predicted_n":6}}"#,
        );
        assert_eq!(
            done,
            Chunk::DoneWith(Usage {
                prompt_tokens: Some(33),
                completion_tokens: Some(6),
                reasoning_tokens: None
            })
        );
        // The `…done` events repeat the text: they must not count as tokens.
        assert_eq!(
            text(parse(
                Api::Responses,
                br#"{"type":"response.output_text.done","item_id":"msg_f","text":"Hello! I'sure I"}"#
            )),
            (String::new(), false)
        );
    }

    #[test]
    fn bodies_carry_each_apis_fields() {
        let extra = BTreeMap::new();
        let v: serde_json::Value =
            serde_json::from_slice(&body(Api::Messages, "m", "hi", 8, false, &extra)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model":"m","messages":[{"role":"user","content":"hi"}],
                "max_tokens":8,"stream":true,"temperature":0.0})
        );
        let v: serde_json::Value =
            serde_json::from_slice(&body(Api::Responses, "m", "hi", 8, true, &extra)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model":"m","input":"hi","max_output_tokens":8,"stream":true,
                "ignore_eos":true,"temperature":0.0})
        );
    }
}
