//! The few fields of an OpenAI-compatible completion chunk the client needs.
//!
//! Only `choices[0]`'s generated text, `usage` and `error` are read; everything else is
//! skipped by serde without being built. Text borrows from the input when it has no escapes.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

/// What one `data:` payload (or a whole non-streaming body) said.
#[derive(Debug, PartialEq)]
pub enum Chunk<'a> {
    /// The end-of-stream marker `[DONE]`.
    Done,
    /// A completion chunk: generated text (possibly empty) and, when present, usage.
    Data {
        /// Generated text of `choices[0]` (`text`, `delta.content`, `message.content`, or
        /// reasoning text); empty for role-only or usage-only chunks.
        text: Cow<'a, str>,
        /// `usage`, usually only on the last chunk.
        usage: Option<Usage>,
    },
    /// An `{"error": ...}` object: the message (or the error JSON when it has none).
    Error(String),
    /// Not a completion chunk: why.
    Malformed(&'static str),
}

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Usage {
    /// Prompt tokens as the server counted them.
    #[serde(default)]
    pub prompt_tokens: Option<u32>,
    /// Generated tokens.
    #[serde(default)]
    pub completion_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow)]
    choices: Option<FirstChoice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// vLLM's older error shape: `{"object": "error", "message": ...}`.
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

/// `choices` reduced to its first element, without allocating a `Vec`.
struct FirstChoice<'a>(Option<Choice<'a>>);

/// A string that borrows from the input when it has no escapes (`#[serde(borrow)]` on a bare
/// `Cow` does this; on `Option<Cow>` it does not, hence the newtype).
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize, Default)]
struct Choice<'a> {
    #[serde(default, borrow)]
    text: Option<Text<'a>>,
    #[serde(default, borrow)]
    delta: Option<Message<'a>>,
    #[serde(default, borrow)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize, Default)]
struct Message<'a> {
    #[serde(default, borrow)]
    content: Option<Text<'a>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Text<'a>>,
    #[serde(default, borrow)]
    reasoning: Option<Text<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first: Option<Choice<'a>> = seq.next_element()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(FirstChoice(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

fn take_text<'a>(m: Message<'a>) -> Option<Cow<'a, str>> {
    [m.content, m.reasoning_content, m.reasoning]
        .into_iter()
        .flatten()
        .map(|t| t.0)
        .find(|s| !s.is_empty())
}

/// Interprets one event's `data` (or a non-streaming JSON body).
pub fn parse(data: &[u8]) -> Chunk<'_> {
    let trimmed = data.trim_ascii();
    if trimmed == b"[DONE]" {
        return Chunk::Done;
    }
    let wire: Wire<'_> = match serde_json::from_slice(trimmed) {
        Ok(w) => w,
        Err(_) => return Chunk::Malformed("a data line is not a JSON object"),
    };
    if let Some(err) = wire.error.filter(|e| !e.is_null()) {
        let msg = match &err {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Object(o) => match o.get("message") {
                Some(serde_json::Value::String(s)) => s.clone(),
                _ => err.to_string(),
            },
            other => other.to_string(),
        };
        return Chunk::Error(msg);
    }
    if wire.object.as_deref() == Some("error") {
        return Chunk::Error(wire.message.map(Cow::into_owned).unwrap_or_default());
    }
    match wire.choices {
        None if wire.usage.is_none() => Chunk::Malformed("a chunk has neither choices nor usage"),
        None | Some(FirstChoice(None)) => Chunk::Data {
            text: Cow::Borrowed(""),
            usage: wire.usage,
        },
        Some(FirstChoice(Some(c))) => {
            let text = c
                .text
                .map(|t| t.0)
                .filter(|t| !t.is_empty())
                .or_else(|| c.delta.and_then(take_text))
                .or_else(|| c.message.and_then(take_text))
                .unwrap_or(Cow::Borrowed(""));
            Chunk::Data {
                text,
                usage: wire.usage,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(c: Chunk<'_>) -> String {
        match c {
            Chunk::Data { text, .. } => text.into_owned(),
            other => panic!("not data: {other:?}"),
        }
    }

    #[test]
    fn completions_and_chat_text() {
        assert_eq!(
            text(parse(br#"{"choices":[{"index":0,"text":"hi"}]}"#)),
            "hi"
        );
        assert_eq!(
            text(parse(
                br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#
            )),
            ""
        );
        assert_eq!(
            text(parse(br#"{"choices":[{"delta":{"content":"a\"b"}}]}"#)),
            "a\"b"
        );
        assert_eq!(
            text(parse(
                br#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#
            )),
            "think"
        );
        assert_eq!(
            text(parse(
                br#"{"choices":[{"message":{"content":"whole"}},{"message":{}}]}"#
            )),
            "whole"
        );
    }

    #[test]
    fn text_borrows_when_unescaped() {
        let data = br#"{"choices":[{"text":"plain"}]}"#;
        match parse(data) {
            Chunk::Data { text, .. } => assert!(matches!(text, Cow::Borrowed("plain"))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn usage_only_chunk() {
        let c = parse(br#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#);
        assert_eq!(
            c,
            Chunk::Data {
                text: Cow::Borrowed(""),
                usage: Some(Usage {
                    prompt_tokens: Some(5),
                    completion_tokens: Some(7)
                })
            }
        );
        assert!(matches!(
            parse(br#"{"usage":{"completion_tokens":1}}"#),
            Chunk::Data { .. }
        ));
    }

    #[test]
    fn done_errors_and_malformed() {
        assert_eq!(parse(b" [DONE] "), Chunk::Done);
        assert_eq!(
            parse(br#"{"error":{"message":"overloaded","code":503}}"#),
            Chunk::Error("overloaded".into())
        );
        assert_eq!(parse(br#"{"error":"boom"}"#), Chunk::Error("boom".into()));
        assert_eq!(
            parse(br#"{"object":"error","message":"bad","code":400}"#),
            Chunk::Error("bad".into())
        );
        assert!(matches!(parse(b"not json"), Chunk::Malformed(_)));
        assert!(matches!(parse(br#"{"id":"x"}"#), Chunk::Malformed(_)));
        assert!(matches!(parse(br#"[1,2]"#), Chunk::Malformed(_)));
    }
}
