//! Endpoints that answer with one JSON document and generate no tokens (`api: embeddings`,
//! `api: rerank`): the request body, the one bounded read of the answer, and what the
//! answer must hold (a rerank answer: [`super::rerank::parse`]).
//!
//! A pooled request has no first token: its record carries no `first_token` (so no TTFT,
//! TPOT or ITL), 0 output tokens, and the time its whole answer had arrived as its end.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use tokio::time::{timeout_at, Instant};

use super::answer_error::error_object;
use super::body::{read_bounded, End};
use super::progress::Fail;
use super::secret::truncate;
use super::send::{after, classify_send_error, closed_unanswered, transport_fail, Measured};
use super::{usage, Client, PreparedRequest, Usage, DETAIL_MAX, ERROR_BODY_CAP};
use crate::record::{ErrorClass, RequestError, RequestRecord, TokenSource};

/// Largest embeddings (or rerank) answer read: a batch of 64 vectors of 4096 floats written
/// as JSON (about 20 bytes a float) is 5 MiB; eight times that leaves room for wider models
/// (and for vLLM's rerank answer, which echoes every document).
pub const EMBEDDINGS_BODY_CAP: usize = 40 << 20;

/// The body of one embeddings request: one input as a string, a batch as a list (both are
/// OpenAI's shape, accepted by vLLM, SGLang and llama.cpp), floats asked for.
pub(super) fn embeddings_body(
    model: &str,
    first: &str,
    rest: &[String],
    extra: &BTreeMap<String, serde_json::Value>,
) -> Bytes {
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Input<'a> {
        One(&'a str),
        Many(Vec<&'a str>),
    }
    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        input: Input<'a>,
        encoding_format: &'a str,
        #[serde(flatten)]
        extra: &'a BTreeMap<String, serde_json::Value>,
    }
    let input = if rest.is_empty() {
        Input::One(first)
    } else {
        Input::Many(
            std::iter::once(first)
                .chain(rest.iter().map(String::as_str))
                .collect(),
        )
    };
    let body = Body {
        model,
        input,
        encoding_format: "float",
        extra,
    };
    Bytes::from(serde_json::to_vec(&body).expect("a request body always serialises"))
}

/// What a 2xx embeddings answer said, once checked.
#[derive(Debug, PartialEq)]
pub struct EmbeddingsAnswer {
    /// Vectors in `data`.
    pub vectors: u32,
    /// `usage`, when the server sent one.
    pub usage: Option<Usage>,
}

/// One vector of `data`: a non-empty list of numbers, each a server value (finite, at most
/// `values::MAX_SERVER_VALUE` in size; negative allowed), or a non-empty base64 string.
struct Vector;

impl<'de> Deserialize<'de> for Vector {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vector;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of numbers or a base64 string")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vector, A::Error> {
                let mut n = 0u64;
                while let Some(x) = seq.next_element::<f64>()? {
                    crate::values::server_value(x, || false).map_err(|why| {
                        de::Error::custom(format!("embedding value {x} is not a value ({why:?})"))
                    })?;
                    n += 1;
                }
                if n == 0 {
                    return Err(de::Error::custom("an embedding is empty"));
                }
                Ok(Vector)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Vector, E> {
                if s.is_empty() {
                    return Err(E::custom("an embedding is empty"));
                }
                Ok(Vector)
            }
        }
        d.deserialize_any(V)
    }
}

/// The `data` list, counted without keeping the vectors.
struct Data(u32);

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Data;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of embedding objects")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Data, A::Error> {
                let mut n = 0u32;
                while seq.next_element::<Item>()?.is_some() {
                    n = n.saturating_add(1);
                }
                Ok(Data(n))
            }
        }
        d.deserialize_seq(V)
    }
}

/// One element of `data`: its `embedding` is required and checked, the rest skipped.
struct Item;

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an embedding object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
                let mut seen = false;
                while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if k == "embedding" {
                        map.next_value::<Vector>()?;
                        seen = true;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                if !seen {
                    return Err(de::Error::custom("a data item has no `embedding`"));
                }
                Ok(Item)
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// Checks a 2xx embeddings answer for a request of `inputs` inputs: one vector per input,
/// each a non-empty list of values; `Err` says what is wrong (an `error` object is
/// `StreamError`, anything else `Malformed`).
pub fn parse_embeddings(
    body: &[u8],
    inputs: u32,
) -> Result<EmbeddingsAnswer, (ErrorClass, String)> {
    let malformed = |m: String| (ErrorClass::Malformed, m);
    let wire: Wire = serde_json::from_slice(body).map_err(|e| {
        malformed(format!(
            "the embeddings answer is not what OpenAI's API sends: {e}"
        ))
    })?;
    if let Some(err) = error_object(wire.error) {
        return Err(err);
    }
    let Some(Data(vectors)) = wire.data else {
        return Err(malformed("the embeddings answer has no `data` list".into()));
    };
    if vectors != inputs {
        return Err(malformed(format!(
            "the embeddings answer has {vectors} vectors for {inputs} inputs"
        )));
    }
    Ok(EmbeddingsAnswer {
        vectors,
        usage: wire.usage,
    })
}

impl Client {
    /// Sends one pooled request (embeddings) and measures it: its end is the arrival of the
    /// answer's last byte. Never fails: every failure becomes the record's error.
    pub(super) async fn measure_pooled(
        &self,
        req: &PreparedRequest,
        rung_start: Instant,
        scheduled: std::time::Duration,
        index: u32,
        warmup: bool,
    ) -> Measured {
        let mut resent = false;
        let (sent, outcome) = loop {
            let sent = Instant::now();
            let deadline = after(sent, self.inner.request_timeout);
            let builder = self
                .http
                .post(self.inner.url.clone())
                .body(req.body.clone());
            match self.pooled_once(builder, deadline, req).await {
                Err(f) if f.closed_unanswered && !resent => resent = true,
                outcome => break (sent, outcome),
            }
        };
        let since = |t: Instant| t.saturating_duration_since(rung_start);
        let (end, answer, error) = match outcome {
            Ok((end, a)) => (end, Some(a), None),
            Err(f) => {
                let detail = truncate(self.redact(&f.detail), DETAIL_MAX);
                let e = RequestError {
                    class: f.class,
                    status: f.status,
                    detail,
                };
                (f.at, None, Some(e))
            }
        };
        let usage = answer.flatten();
        let rejected = usage
            .as_ref()
            .and_then(|u| usage::implausible(u, req.input_tokens, 0, 0));
        let trusted = usage.filter(|_| rejected.is_none());
        let record = RequestRecord {
            index,
            warmup,
            scheduled,
            sent: since(sent),
            end: since(end),
            input_tokens: match req.input_tokens {
                0 => trusted.and_then(|u| u.prompt_tokens).unwrap_or(0),
                n => n,
            },
            server_prompt_tokens: usage.and_then(|u| u.prompt_tokens),
            token_source: TokenSource::Usage,
            error,
            usage_rejected: rejected,
            resent,
            model: req.model.clone(),
            ..RequestRecord::default()
        };
        Measured::done(record)
    }

    async fn pooled_once(
        &self,
        builder: reqwest::RequestBuilder,
        deadline: Instant,
        req: &PreparedRequest,
    ) -> Result<(Instant, Option<Usage>), Fail> {
        let timed_out = || Fail {
            at: Instant::now(),
            ..Fail::new(
                ErrorClass::Timeout,
                format!(
                    "request exceeded request_timeout of {:?}",
                    self.inner.request_timeout
                ),
            )
        };
        let mut resp = match timeout_at(deadline, builder.send()).await {
            Err(_) => return Err(timed_out()),
            Ok(Err(e)) => {
                return Err(Fail {
                    closed_unanswered: closed_unanswered(&e),
                    ..transport_fail(&e, classify_send_error(&e), "")
                })
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        let cap = if status.is_success() {
            EMBEDDINGS_BODY_CAP
        } else {
            ERROR_BODY_CAP
        };
        let body = read_bounded(&mut resp, cap, Some(deadline)).await;
        let end = Instant::now();
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body.bytes);
            return Err(Fail {
                status: Some(status.as_u16()),
                at: end,
                ..Fail::new(ErrorClass::from_status(status.as_u16()), text.trim())
            });
        }
        let fail = |class, detail: String| Fail {
            at: end,
            ..Fail::new(class, detail)
        };
        match body.end {
            End::Complete => {}
            End::OverCap => {
                return Err(fail(
                    ErrorClass::Malformed,
                    format!("the answer is larger than {EMBEDDINGS_BODY_CAP} bytes"),
                ))
            }
            End::TimedOut => return Err(timed_out()),
            End::Broken(e) => {
                let context = format!("the answer broke after {} bytes: ", body.bytes.len());
                return Err(Fail {
                    at: end,
                    ..transport_fail(&e, ErrorClass::Reset, &context)
                });
            }
        }
        let parsed = if self.inner.api == crate::scenario::Api::Rerank {
            let expected = super::rerank::expected_results(req.inputs, &self.inner.extra_body);
            super::rerank::parse(&body.bytes, req.inputs, expected)
        } else {
            parse_embeddings(&body.bytes, req.inputs).map(|a| a.usage)
        };
        parsed
            .map(|u| (end, u))
            .map_err(|(class, detail)| fail(class, detail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_a_list_and_one_input_a_string() {
        let extra = BTreeMap::new();
        let v: serde_json::Value =
            serde_json::from_slice(&embeddings_body("m", "a b", &[], &extra)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model":"m","input":"a b","encoding_format":"float"})
        );
        let v: serde_json::Value = serde_json::from_slice(&embeddings_body(
            "m",
            "a",
            &["b".into(), "c \"q\"".into()],
            &extra,
        ))
        .unwrap();
        assert_eq!(v["input"], serde_json::json!(["a", "b", "c \"q\""]));
    }

    #[test]
    fn an_answer_needs_one_non_empty_vector_of_values_per_input() {
        let ok = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-2e-3]},
            {"index":1,"embedding":"AAAA"}],"model":"m","usage":{"prompt_tokens":12,"total_tokens":12}}"#;
        let a = parse_embeddings(ok, 2).unwrap();
        assert_eq!(a.vectors, 2);
        assert_eq!(a.usage.unwrap().prompt_tokens, Some(12));
        let e = parse_embeddings(ok, 3).unwrap_err();
        assert_eq!(e.0, ErrorClass::Malformed);
        assert!(e.1.contains("2 vectors for 3 inputs"), "{}", e.1);
        for bad in [
            &br#"{"data":[{"embedding":[]}]}"#[..],
            br#"{"data":[{"index":0}]}"#,
            br#"{"data":[{"embedding":[1e999]}]}"#,
            br#"{"data":[{"embedding":[1e300]}]}"#,
            br#"{"data":[{"embedding":["x"]}]}"#,
            br#"{"usage":{"prompt_tokens":3}}"#,
            br#"[1,2]"#,
            b"not json",
        ] {
            let e = parse_embeddings(bad, 1).unwrap_err();
            assert_eq!(
                e.0,
                ErrorClass::Malformed,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let e = parse_embeddings(br#"{"error":{"message":"pooling is off"}}"#, 1).unwrap_err();
        assert_eq!(
            e,
            (
                ErrorClass::StreamError,
                "error object in the answer: pooling is off".into()
            )
        );
        // No usage is no count, not an error.
        let a = parse_embeddings(br#"{"data":[{"embedding":[1]}]}"#, 1).unwrap();
        assert_eq!(a.usage, None);
    }
}
