//! The few fields of an OpenAI-compatible completion chunk the client needs.
//!
//! Only `choices[0]`'s generated text, `usage` and `error` are read; everything else is
//! skipped without being built. Text borrows from the input when it has no escapes.
//!
//! Two implementations give the same answer: a single-pass byte scanner for the common
//! shapes (the hot path: one call per streamed token), and the serde reference
//! ([`parse_serde`]). The scanner gives up on anything it is not sure of (duplicate keys,
//! escaped keys, `error` objects, odd nesting, invalid JSON) and the serde path then decides,
//! so correctness never rests on the scanner being complete.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

/// What one `data:` payload (or a whole non-streaming body) said.
#[derive(Debug, PartialEq)]
pub enum Chunk<'a> {
    /// The end-of-stream marker `[DONE]`.
    Done,
    /// An event that both carries the final usage and ends the stream (the Responses API's
    /// `response.completed`; see `client::typed`).
    DoneWith(Usage),
    /// A completion chunk: generated text (possibly empty) and, when present, usage.
    Data {
        /// Generated text of `choices[0]` (`text`, `delta.content`, `message.content`, or
        /// reasoning text); empty for role-only or usage-only chunks.
        text: Cow<'a, str>,
        /// `text` came from `reasoning_content` / `reasoning` (a reasoning model's thinking),
        /// not from the answer's content.
        reasoning: bool,
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
#[serde(from = "UsageWire")]
pub struct Usage {
    /// Prompt tokens as the server counted them.
    pub prompt_tokens: Option<u32>,
    /// Generated tokens (reasoning included, as OpenAI-compatible servers count them).
    pub completion_tokens: Option<u32>,
    /// `completion_tokens_details.reasoning_tokens`: the part of `completion_tokens` spent
    /// thinking, where the server reports it (OpenAI does; vLLM does not, and then the
    /// reasoning chunks' share of `completion_tokens` stands in).
    pub reasoning_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct UsageWire {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    reasoning_tokens: Option<u32>,
}

impl From<UsageWire> for Usage {
    fn from(w: UsageWire) -> Usage {
        Usage {
            prompt_tokens: w.prompt_tokens,
            completion_tokens: w.completion_tokens,
            reasoning_tokens: w.completion_tokens_details.and_then(|d| d.reasoning_tokens),
        }
    }
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

/// The first non-empty of content, `reasoning_content`, `reasoning`; `true` for reasoning.
fn take_text<'a>(m: Message<'a>) -> Option<(Cow<'a, str>, bool)> {
    [
        (m.content, false),
        (m.reasoning_content, true),
        (m.reasoning, true),
    ]
    .into_iter()
    .filter_map(|(t, r)| Some((t?.0, r)))
    .find(|(s, _)| !s.is_empty())
}

/// Interprets one event's `data` (or a non-streaming JSON body).
pub fn parse(data: &[u8]) -> Chunk<'_> {
    let trimmed = data.trim_ascii();
    if trimmed == b"[DONE]" {
        return Chunk::Done;
    }
    scan::chunk(trimmed).unwrap_or_else(|_| parse_json(trimmed))
}

/// The serde reference implementation of [`parse`]: same result for every input, slower.
/// Public only for the differential tests and the benchmarks.
#[doc(hidden)]
pub fn parse_serde(data: &[u8]) -> Chunk<'_> {
    let trimmed = data.trim_ascii();
    if trimmed == b"[DONE]" {
        return Chunk::Done;
    }
    parse_json(trimmed)
}

/// The serde pass over a trimmed payload that is not `[DONE]`.
fn parse_json(trimmed: &[u8]) -> Chunk<'_> {
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
            reasoning: false,
            usage: wire.usage,
        },
        Some(FirstChoice(Some(c))) => {
            let (text, reasoning) = c
                .text
                .map(|t| (t.0, false))
                .filter(|(t, _)| !t.is_empty())
                .or_else(|| c.delta.and_then(take_text))
                .or_else(|| c.message.and_then(take_text))
                .unwrap_or((Cow::Borrowed(""), false));
            Chunk::Data {
                text,
                reasoning,
                usage: wire.usage,
            }
        }
    }
}

/// The hot-path scanner (`chunk/scan.rs`).
mod scan;

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
                reasoning: false,
                usage: Some(Usage {
                    prompt_tokens: Some(5),
                    completion_tokens: Some(7),
                    reasoning_tokens: None,
                })
            }
        );
        assert!(matches!(
            parse(br#"{"usage":{"completion_tokens":1}}"#),
            Chunk::Data { .. }
        ));
    }

    #[test]
    fn reasoning_text_and_tokens_are_told_apart() {
        let kind = |d: &[u8]| match parse(d) {
            Chunk::Data {
                text, reasoning, ..
            } => (text.into_owned(), reasoning),
            other => panic!("{other:?}"),
        };
        for d in [
            br#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#.as_slice(),
            br#"{"choices":[{"delta":{"content":null,"reasoning":"think"}}]}"#,
            br#"{"choices":[{"delta":{"content":"","reasoning_content":"think"}}]}"#,
        ] {
            assert_eq!(
                kind(d),
                ("think".into(), true),
                "{}",
                String::from_utf8_lossy(d)
            );
        }
        assert_eq!(
            kind(br#"{"choices":[{"delta":{"content":"answer","reasoning_content":"x"}}]}"#),
            ("answer".into(), false)
        );
        assert_eq!(kind(br#"{"choices":[{"text":"t"}]}"#), ("t".into(), false));
        let usage = |d: &[u8]| match parse(d) {
            Chunk::Data { usage, .. } => usage.map(|u| u.reasoning_tokens),
            other => panic!("{other:?}"),
        };
        let vllm = br#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":30,"completion_tokens_details":{"reasoning_tokens":21,"accepted_prediction_tokens":0}}}"#;
        assert_eq!(usage(vllm), Some(Some(21)));
        assert_eq!(
            usage(br#"{"usage":{"completion_tokens":3,"completion_tokens_details":null}}"#),
            Some(None)
        );
        // A count that is not a u32 makes the chunk malformed, on both paths.
        let bad = br#"{"usage":{"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":-1}}}"#;
        assert!(matches!(parse(bad), Chunk::Malformed(_)));
        assert_eq!(parse(bad), parse_serde(bad));
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

    /// Realistic payloads from the servers ladder talks to, plus the error shapes.
    fn realistic() -> Vec<String> {
        let words = [
            "hi",
            " the",
            "",
            "a\\\"b",
            "line\\n",
            "caf\\u00e9",
            "café",
            "日本",
            "\\ud83d\\ude00",
            "tab\\t",
            "x/y",
            "\\\\",
        ];
        let mut out = Vec::new();
        for (i, w) in words.iter().enumerate() {
            // vLLM / simulator completions.
            out.push(format!(
                r#"{{"id":"cmpl-{i}","object":"text_completion","created":1764680000,"model":"m","choices":[{{"index":0,"text":"{w}","logprobs":null,"finish_reason":null,"stop_reason":null}}],"usage":null}}"#
            ));
            // vLLM chat: role chunk, content, reasoning, finish.
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","created":1764680000,"model":"m","choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]}}"#
            ));
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","created":1764680000,"model":"m","choices":[{{"index":0,"delta":{{"content":"{w}"}},"logprobs":null,"finish_reason":null}}]}}"#
            ));
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"reasoning_content":"{w}","content":null}},"logprobs":null,"finish_reason":null}}]}}"#
            ));
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","choices":[{{"index":0,"delta":{{"reasoning":"{w}"}},"finish_reason":"stop","stop_reason":null}}],"usage":{{"prompt_tokens":{i},"total_tokens":{},"completion_tokens":17}}}}"#,
                i + 17
            ));
            // SGLang: pretty much vLLM's shape, with matched_stop and usage null.
            out.push(format!(
                r#"{{"id":"{i}a","object":"chat.completion.chunk","created":1764680000,"model":"default","choices":[{{"index":0,"delta":{{"role":null,"content":"{w}","reasoning_content":null,"tool_calls":null}},"logprobs":null,"finish_reason":null,"matched_stop":null}}],"usage":null}}"#
            ));
            // llama.cpp server: `content` at top level plus timings; chat shape with timings.
            out.push(format!(
                r#"{{"choices":[{{"finish_reason":null,"index":0,"delta":{{"content":"{w}"}}}}],"created":1764680000,"id":"chatcmpl-x","model":"gpt-3.5-turbo","system_fingerprint":"b5000-abc","object":"chat.completion.chunk","timings":{{"prompt_n":5,"prompt_ms":1.25,"prompt_per_token_ms":0.25,"predicted_per_second":1.5e2,"cache_n":-1}}}}"#
            ));
            out.push(format!(
                r#"{{"content":"{w}","stop":false,"id_slot":0,"multimodal":false,"index":0,"timings":{{"predicted_n":3,"predicted_ms":12.5}}}}"#
            ));
            // OpenAI with system_fingerprint, usage-only tail, obfuscation.
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","created":1764680000,"model":"gpt-4o","service_tier":"default","system_fingerprint":"fp_{i}","choices":[{{"index":0,"delta":{{"content":"{w}","refusal":null}},"logprobs":null,"finish_reason":null}}],"usage":null,"obfuscation":"q{i}"}}"#
            ));
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","choices":[],"usage":{{"prompt_tokens":512,"completion_tokens":{i},"total_tokens":1536,"prompt_tokens_details":{{"cached_tokens":0,"audio_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":{i},"accepted_prediction_tokens":null}}}}}}"#
            ));
            // Non-streaming body with logprobs and two choices.
            out.push(format!(
                r#"{{"id":"x","choices":[{{"index":0,"message":{{"role":"assistant","content":"{w}","tool_calls":[]}},"logprobs":{{"content":[{{"token":"{w}","logprob":-0.25,"bytes":[104,105],"top_logprobs":[]}}]}},"finish_reason":"length"}},{{"message":{{"content":"other"}}}}],"usage":{{"prompt_tokens":3,"completion_tokens":1}}}}"#
            ));
            // Error shapes.
            out.push(format!(
                r#"{{"error":{{"message":"{w}","type":"x","code":503}}}}"#
            ));
            out.push(format!(r#"{{"error":"{w}"}}"#));
            out.push(format!(r#"{{"object":"error","message":"{w}","type":"BadRequestError","param":null,"code":400}}"#));
            out.push(format!(r#"{{"error":null,"choices":[{{"text":"{w}"}}]}}"#));
        }
        out
    }

    /// Inputs chosen to sit on the scanner's edges: each must match serde exactly.
    const EDGES: &[&str] = &[
        "",
        " ",
        "{}",
        "[]",
        "[null]",
        r#"[null,{"completion_tokens":1}]"#,
        r#"{"choices":null}"#,
        r#"{"choices":null,"usage":{}}"#,
        r#"{"choices":[]}"#,
        r#"{"choices":[null]}"#,
        r#"{"choices":[[]]}"#,
        r#"{"choices":[["a"]]}"#,
        r#"{"choices":[{"text":"a"},]}"#,
        r#"{"choices":[{"text":"a"}],}"#,
        r#"{"choices":[{"text":"a"}] }x"#,
        r#"{"choices":{}}"#,
        r#"{"choices":"x"}"#,
        r#"{"choices":[{"text":1}]}"#,
        r#"{"choices":[{"text":null,"delta":null,"message":null}]}"#,
        r#"{"choices":[{"text":"","delta":{"content":"","reasoning":"r"}}]}"#,
        r#"{"choices":[{"text":"a","text":"b"}]}"#,
        r#"{"choices":[{"delta":{"content":null,"content":"b"}}]}"#,
        r#"{"choices":[{"t\u0065xt":"esc key"}]}"#,
        r#"{"choices":[{"tëxt":"x"}]}"#,
        r#"{"choices":[],"choices":[]}"#,
        r#"{"usage":{"prompt_tokens":-0}}"#,
        r#"{"usage":{"prompt_tokens":1.0}}"#,
        r#"{"usage":{"prompt_tokens":1e2}}"#,
        r#"{"usage":{"prompt_tokens":01}}"#,
        r#"{"usage":{"prompt_tokens":0}}"#,
        r#"{"usage":{"prompt_tokens":4294967295}}"#,
        r#"{"usage":{"prompt_tokens":4294967296}}"#,
        r#"{"usage":{"prompt_tokens":99999999999999999999999}}"#,
        r#"{"usage":{"prompt_tokens":"5"}}"#,
        r#"{"usage":{"prompt_tokens":null,"completion_tokens":null}}"#,
        r#"{"usage":{"prompt_tokens":1,"prompt_tokens":2}}"#,
        r#"{"usage":[1,2]}"#,
        r#"{"usage":null}"#,
        r#"{"usage":{},"x":-}"#,
        r#"{"usage":{},"x":-1.}"#,
        r#"{"usage":{},"x":1.5e}"#,
        r#"{"usage":{},"x":1.5E+3}"#,
        r#"{"usage":{},"x":[1,[2,{"a":[]}],{}]}"#,
        r#"{"usage":{},"x":[1,]}"#,
        r#"{"usage":{},"x":{"a":1,}}"#,
        r#"{"usage":{},"x":{1:2}}"#,
        r#"{"usage":{},"x":tru}"#,
        r#"{"usage":{},"x":nulll}"#,
        r#"{"usage":{},"x":"\x"}"#,
        r#"{"usage":{},"x":"\u12"}"#,
        r#"{"usage":{},"x":"\ud800"}"#,
        r#"{"usage":{},"x":"\udc00\ud800"}"#,
        r#"{"choices":[{"text":"\ud800"}]}"#,
        r#"{"choices":[{"text":"\ud83d\ude00"}]}"#,
        r#"{"choices":[{"text":"a\/b"}]}"#,
        r#"{"object":"error"}"#,
        r#"{"object":"\u0065rror","message":"m"}"#,
        r#"{"object":"chat","message":5,"usage":{}}"#,
        r#"{"object":5,"usage":{}}"#,
        r#"{"object":null,"message":null,"usage":{}}"#,
        r#"{"error":{},"usage":{}}"#,
        r#"{"error":[1,{"b":2,"a":1.5}]}"#,
        r#"{"error":{"message":7}}"#,
        r#"{"error":null,"error":null,"usage":{}}"#,
        "{\"usage\":{}\u{c}}",
        "{\"usage\":{},\"x\":\"a\u{1}b\"}",
        "{\"choices\":[{\"text\":\"a\tb\"}]}",
        "{\r\n\t\"choices\" : [ { \"text\" : \"spaced\" } ] \n}",
    ];

    fn mutate(rng: &mut rand_chacha::ChaCha8Rng, input: &[u8]) -> Vec<u8> {
        use rand::Rng;
        const BYTES: &[u8] = b"\"\\{}[],: 0-.eE\tn\x00\x1f\x7f\x80\xc3\xa9\xff";
        const SNIPPETS: &[&str] = &[
            "\\n",
            "\\\"",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\\ud800",
            "\\u",
            "é",
            "日",
            " ",
            "\t\r\n",
            "null",
            ",",
            "\"x\":1,",
            "\"text\":\"t\",",
            "\"usage\":{},",
            "[",
            "}",
            "1e5",
            "-",
        ];
        let mut m = input.to_vec();
        for _ in 0..rng.gen_range(1..=3) {
            let at = rng.gen_range(0..=m.len());
            match rng.gen_range(0..6) {
                0 if at < m.len() => m[at] = BYTES[rng.gen_range(0..BYTES.len())],
                1 if at < m.len() => m[at] = rng.gen(),
                2 => m.truncate(at),
                3 if at < m.len() => {
                    let end = rng.gen_range(at..=m.len().min(at + 8));
                    m.drain(at..end);
                }
                _ => {
                    let s = SNIPPETS[rng.gen_range(0..SNIPPETS.len())];
                    m.splice(at..at, s.bytes());
                }
            }
        }
        m
    }

    fn same(input: &[u8]) {
        assert_eq!(
            parse(input),
            parse_serde(input),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }

    #[test]
    fn eight_byte_check_never_misses_a_special_byte() {
        for pos in 0..8 {
            for byte in 0..=255u8 {
                let mut w = *b"abcdefgh";
                w[pos] = byte;
                let special = !w.iter().all(|&c| scan::PLAIN[c as usize]);
                if special {
                    assert!(scan::maybe_special(u64::from_le_bytes(w)), "{w:?}");
                }
            }
        }
        assert!(!scan::maybe_special(u64::from_le_bytes(*b"cmpl-sim")));
    }

    #[test]
    fn scanner_takes_the_common_shapes_itself() {
        // The differential test below would pass vacuously if the scanner always gave up.
        for doc in realistic() {
            let is_error = doc.contains(r#""error":{"#)
                || doc.contains(r#""error":""#)
                || doc.contains(r#""object":"error""#);
            let fast = scan::chunk(doc.as_bytes());
            assert_eq!(fast.is_ok(), !is_error, "{doc}");
            if let Ok(c) = fast {
                assert_eq!(c, parse_serde(doc.as_bytes()), "{doc}");
                // llama.cpp's native shape (top-level `content`) has neither choices nor usage.
                if !doc.contains(r#""choices""#) {
                    assert!(matches!(c, Chunk::Malformed(_)), "{doc}");
                }
            }
        }
        let deep = format!(
            r#"{{"usage":{{}},"x":{}1{}}}"#,
            "[".repeat(64),
            "]".repeat(64)
        );
        assert!(scan::chunk(deep.as_bytes()).is_ok());
        let deeper = format!(
            r#"{{"usage":{{}},"x":{}1{}}}"#,
            "[".repeat(65),
            "]".repeat(65)
        );
        assert!(scan::chunk(deeper.as_bytes()).is_err());
        same(deeper.as_bytes());
    }

    #[test]
    fn scanner_matches_serde_on_edges_and_mutations() {
        use rand::SeedableRng;
        for e in EDGES {
            same(e.as_bytes());
        }
        same(b"{\"choices\":[{\"text\":\"\xff\"}]}");
        same(b"{\"usage\":{},\"x\":\"\xff\"}");
        same(b"{\"usage\":{},\"x\\u00e9\xff\":1}");
        same(b"{\"usage\":{},\"x\":[\"\xc3\"]}");
        let docs = realistic();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut n = 0;
        for doc in &docs {
            same(doc.as_bytes());
            for _ in 0..40 {
                same(&mutate(&mut rng, doc.as_bytes()));
                n += 1;
            }
        }
        for e in EDGES {
            for _ in 0..20 {
                same(&mutate(&mut rng, e.as_bytes()));
                n += 1;
            }
        }
        assert!(n > 5000, "{n} mutations");
    }
}
