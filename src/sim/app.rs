//! What every route of the simulator shares: the state the handlers hold ([`App`]), the
//! injected faults, the OpenAI-style error answers and the checks of a request (its key, a
//! JSON body naming a served model). The router and the generating routes are in
//! [`super::http`], the other routes in their own files; all of them import this one.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use super::engine::{Job, Stats};
use super::SimConfig;

/// Per-request fault header; its values are the [`Fault`] names.
pub const FAULT_HEADER: &str = "x-ladder-fault";

/// State shared by every handler.
pub(crate) struct App {
    pub cfg: SimConfig,
    pub names: Vec<String>,
    pub api_key: Option<String>,
    pub stats: Arc<Stats>,
    pub jobs: mpsc::UnboundedSender<Job>,
    pub counter: AtomicU64,
    pub shutdown: watch::Receiver<bool>,
}

/// An injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    Http500,
    Http429,
    DropMidStream,
    MalformedChunk,
    StreamError,
    Stall,
    UnknownModel,
}

impl Fault {
    pub(super) const ALL: [Fault; 7] = [
        Fault::Http500,
        Fault::Http429,
        Fault::DropMidStream,
        Fault::MalformedChunk,
        Fault::StreamError,
        Fault::Stall,
        Fault::UnknownModel,
    ];

    pub(super) fn parse(s: &str) -> Option<Fault> {
        Some(match s.trim() {
            "http_500" => Fault::Http500,
            "http_429" => Fault::Http429,
            "drop_mid_stream" => Fault::DropMidStream,
            "malformed_chunk" => Fault::MalformedChunk,
            "stream_error" => Fault::StreamError,
            "stall" => Fault::Stall,
            "unknown_model" => Fault::UnknownModel,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Completions,
    Chat,
}

pub(super) fn error(
    status: StatusCode,
    message: impl Into<String>,
    kind: &str,
    code: &str,
) -> Response {
    let body =
        json!({"error": {"message": message.into(), "type": kind, "param": null, "code": code}});
    (status, Json(body)).into_response()
}

/// Errors of request checks are boxed: a `Response` is large for a `Result`'s error side.
pub(super) type Refusal = Box<Response>;

pub(super) fn unknown_model(model: &str) -> Refusal {
    Box::new(error(
        StatusCode::NOT_FOUND,
        format!("The model `{model}` does not exist."),
        "NotFoundError",
        "model_not_found",
    ))
}

pub(super) fn bad_request(message: impl Into<String>, code: &str) -> Refusal {
    Box::new(error(
        StatusCode::BAD_REQUEST,
        message,
        "invalid_request_error",
        code,
    ))
}

pub(super) fn authorized(app: &App, headers: &HeaderMap) -> Result<(), Refusal> {
    let Some(key) = &app.api_key else {
        return Ok(());
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given == Some(key.as_str()) {
        Ok(())
    } else {
        Err(Box::new(error(
            StatusCode::UNAUTHORIZED,
            "Incorrect or missing API key; send `Authorization: Bearer <key>`.",
            "invalid_request_error",
            "invalid_api_key",
        )))
    }
}

/// A request body as every generating route reads it: a JSON object naming a served model.
pub(super) fn json_with_model(app: &App, body: &[u8]) -> Result<(Value, String), Refusal> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        bad_request(
            format!("request body is not valid JSON: {e}"),
            "invalid_json",
        )
    })?;
    if !v.is_object() {
        return Err(bad_request(
            "request body must be a JSON object",
            "invalid_json",
        ));
    }
    let model = match v.get("model") {
        Some(Value::String(m)) => m.clone(),
        _ => {
            return Err(bad_request(
                "`model` is required (a string); GET /v1/models lists the served names",
                "missing_model",
            ))
        }
    };
    if !app.names.contains(&model) {
        return Err(unknown_model(&model));
    }
    Ok((v, model))
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(super) fn shutting_down() -> Response {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "the simulator is shutting down",
        "server_error",
        "service_unavailable",
    )
}
