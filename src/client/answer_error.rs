//! The `error` object a pooling answer (embeddings, rerank) may carry instead of its results:
//! read the same way for both ([`super::pooled`] sends them and checks the embeddings answer,
//! [`super::rerank`] the rerank answer).

use crate::record::ErrorClass;

/// An `error` object in a pooling answer (embeddings, rerank) as the request's failure:
/// its `message`, or the whole object when it has none (`StreamError`). None when absent
/// or null.
pub(super) fn error_object(error: Option<serde_json::Value>) -> Option<(ErrorClass, String)> {
    let err = error.filter(|e| !e.is_null())?;
    let msg = err
        .get("message")
        .and_then(serde_json::Value::as_str)
        .map_or_else(|| err.to_string(), str::to_owned);
    Some((
        ErrorClass::StreamError,
        format!("error object in the answer: {msg}"),
    ))
}
