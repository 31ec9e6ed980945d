//! `api: rerank`: the Jina/Cohere rerank request that vLLM (`/v1/rerank`, a `--task score`
//! model) and llama.cpp (`/v1/rerank`, `--reranking`) both serve, and what its answer must
//! hold. Measured as a pooled request ([`super::pooled`]): one JSON answer, no tokens.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::Deserialize;
use serde::Serialize;

use super::answer_error::error_object;
use super::Usage;
use crate::record::ErrorClass;

/// The body of one rerank request: `{model, query, documents}` plus `endpoint.extra_body`
/// (`top_n`, vLLM's `truncate_prompt_tokens`, …). No `top_n` unless the scenario sets one:
/// both servers then score and return every document.
pub(super) fn body(
    model: &str,
    query: &str,
    documents: &[String],
    extra: &BTreeMap<String, serde_json::Value>,
) -> Bytes {
    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        query: &'a str,
        documents: &'a [String],
        #[serde(flatten)]
        extra: &'a BTreeMap<String, serde_json::Value>,
    }
    let body = Body {
        model,
        query,
        documents,
        extra,
    };
    Bytes::from(serde_json::to_vec(&body).expect("a request body always serialises"))
}

/// Results a request of `documents` documents must get back: all of them, or `top_n` when
/// `extra_body` sets a smaller positive one.
pub(super) fn expected_results(documents: u32, extra: &BTreeMap<String, serde_json::Value>) -> u32 {
    match extra.get("top_n").and_then(serde_json::Value::as_u64) {
        Some(n) if n >= 1 => documents.min(u32::try_from(n).unwrap_or(u32::MAX)),
        _ => documents,
    }
}

#[derive(Deserialize)]
struct Item {
    index: Option<u64>,
    relevance_score: Option<f64>,
}

#[derive(Deserialize)]
struct UsageWire {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    total_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    results: Option<Vec<Item>>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// Checks a 2xx rerank answer for a request of `documents` documents that expects
/// `expected` results: exactly that many, each with a distinct `index` below `documents` and
/// a `relevance_score` that is a server value (finite, at most 1e15 in size). The usage's
/// `prompt_tokens` (llama.cpp), else its `total_tokens` (vLLM writes only that), is the
/// server's count. `Err` says what is wrong (an `error` object is `StreamError`, anything
/// else `Malformed`).
pub fn parse(
    body: &[u8],
    documents: u32,
    expected: u32,
) -> Result<Option<Usage>, (ErrorClass, String)> {
    let malformed = |m: String| (ErrorClass::Malformed, m);
    let wire: Wire = serde_json::from_slice(body).map_err(|e| {
        malformed(format!(
            "the rerank answer is not what vLLM's or llama.cpp's /v1/rerank sends: {e}"
        ))
    })?;
    if let Some(err) = error_object(wire.error) {
        return Err(err);
    }
    let Some(results) = wire.results else {
        return Err(malformed("the rerank answer has no `results` list".into()));
    };
    if results.len() as u64 != u64::from(expected) {
        return Err(malformed(format!(
            "the rerank answer has {} results for {expected} expected ({documents} documents)",
            results.len()
        )));
    }
    let mut seen = vec![false; documents as usize];
    for (i, item) in results.iter().enumerate() {
        let Some(index) = item.index else {
            return Err(malformed(format!("result {i} has no `index`")));
        };
        let slot = usize::try_from(index)
            .ok()
            .and_then(|k| seen.get_mut(k))
            .ok_or_else(|| {
                malformed(format!(
                    "result {i} names document {index} of {documents} sent"
                ))
            })?;
        if std::mem::replace(slot, true) {
            return Err(malformed(format!("document {index} is scored twice")));
        }
        let Some(score) = item.relevance_score else {
            return Err(malformed(format!("result {i} has no `relevance_score`")));
        };
        crate::values::server_value(score, || false).map_err(|why| {
            malformed(format!(
                "result {i}'s relevance_score {score} is not a value ({why:?})"
            ))
        })?;
    }
    Ok(wire.usage.map(|u| Usage {
        prompt_tokens: u.prompt_tokens.or(u.total_tokens),
        completion_tokens: None,
        reasoning_tokens: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_jina_shaped_with_extra_body_flattened() {
        let mut extra = BTreeMap::new();
        extra.insert("top_n".to_owned(), serde_json::json!(2));
        let v: serde_json::Value =
            serde_json::from_slice(&body("m", "q \"x\"", &["a".into(), "b c".into()], &extra))
                .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model":"m","query":"q \"x\"","documents":["a","b c"],"top_n":2})
        );
        assert_eq!(expected_results(5, &extra), 2);
        assert_eq!(expected_results(1, &extra), 1);
        assert_eq!(expected_results(5, &BTreeMap::new()), 5);
        extra.insert("top_n".to_owned(), serde_json::json!(0));
        assert_eq!(expected_results(5, &extra), 5);
    }

    #[test]
    fn an_answer_scores_each_document_once() {
        // llama.cpp's answer, as llama-server --reranking sent it.
        let llama = br#"{"model":"smollm2-135m","object":"list","usage":{"prompt_tokens":22,"total_tokens":22},"results":[{"index":0,"relevance_score":1.0542019605636597},{"index":1,"relevance_score":-1.1782212257385254}]}"#;
        let u = parse(llama, 2, 2).unwrap().unwrap();
        assert_eq!(u.prompt_tokens, Some(22));
        // vLLM's: an id, the documents echoed, usage with total_tokens only.
        let vllm = br#"{"id":"rerank-1","model":"m","usage":{"total_tokens":30},"results":[{"index":1,"document":{"text":"b"},"relevance_score":0.9},{"index":0,"document":{"text":"a"},"relevance_score":0.1}]}"#;
        assert_eq!(parse(vllm, 2, 2).unwrap().unwrap().prompt_tokens, Some(30));
        assert_eq!(
            parse(br#"{"results":[{"index":0,"relevance_score":0}]}"#, 1, 1).unwrap(),
            None
        );
        for (bad, why) in [
            (&br#"{"results":[{"index":0,"relevance_score":1}]}"#[..], "1 results for 2"),
            (br#"{"results":[{"index":0,"relevance_score":1},{"index":0,"relevance_score":1}]}"#, "scored twice"),
            (br#"{"results":[{"index":0,"relevance_score":1},{"index":2,"relevance_score":1}]}"#, "document 2 of 2"),
            (br#"{"results":[{"index":0,"relevance_score":1},{"relevance_score":1}]}"#, "no `index`"),
            (br#"{"results":[{"index":0,"relevance_score":1},{"index":1}]}"#, "no `relevance_score`"),
            (br#"{"results":[{"index":0,"relevance_score":1},{"index":1,"relevance_score":1e300}]}"#, "not a value"),
            (br#"{"results":[{"index":0,"relevance_score":1},{"index":-1,"relevance_score":1}]}"#, "not what"),
            (br#"{"results":[{"index":0,"relevance_score":1},{"index":1,"relevance_score":1e999}]}"#, "not what"),
            (br#"{"usage":{"total_tokens":3}}"#, "no `results`"),
            (b"[1]", "not what"),
            (b"nope", "not what"),
        ] {
            let e = parse(bad, 2, 2).unwrap_err();
            assert_eq!(e.0, ErrorClass::Malformed, "{}", String::from_utf8_lossy(bad));
            assert!(e.1.contains(why), "{} -> {}", String::from_utf8_lossy(bad), e.1);
        }
        let e = parse(br#"{"error":{"message":"not a reranker"}}"#, 2, 2).unwrap_err();
        assert_eq!(
            e,
            (
                ErrorClass::StreamError,
                "error object in the answer: not a reranker".into()
            )
        );
    }
}
