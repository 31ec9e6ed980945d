//! Preflight: before any load, check the whole chain once (server up, path right, key
//! accepted, model served, a stream comes back) and say what is wrong in words a user can act
//! on. No rung starts until this passes.

use std::time::Duration;

use tokio::time::Instant;

use crate::client::{Client, ModelsReply};
use crate::escape::markdown;
use crate::record::{ErrorClass, RequestError};
use crate::scenario::types::Api;

/// What preflight learned.
#[derive(Debug, Clone, PartialEq)]
pub struct PreflightReport {
    /// Model ids from `GET /v1/models`; `None` when the server does not serve that list.
    pub served_models: Option<Vec<String>>,
    /// Time to first token of the probe request.
    pub probe_ttft: Option<Duration>,
    /// End-to-end time of the probe request.
    pub probe_e2e: Duration,
    /// Output tokens of the probe.
    pub probe_output_tokens: u32,
    /// The server's count of the probe's prompt, when its usage says.
    pub probe_prompt_tokens: Option<u32>,
    /// Things worth telling the user even though preflight passed.
    pub warnings: Vec<String>,
}

/// Why the server cannot be load-tested as configured. Each message names the URL, what came
/// back and the likely cause.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PreflightError {
    /// Connection refused (or another connect failure that is not DNS/TLS).
    #[error("no server at {url}: is it up? ({detail})")]
    NoServer {
        /// The URL tried.
        url: String,
        /// Transport error text.
        detail: String,
    },
    /// The host name does not resolve.
    #[error("cannot resolve the host of {url}: check endpoint.base_url ({detail})")]
    Dns {
        /// The URL tried.
        url: String,
        /// Transport error text.
        detail: String,
    },
    /// The TLS handshake failed.
    #[error(
        "TLS handshake with {url} failed: check http vs https in endpoint.base_url and the \
         server's certificate ({detail})"
    )]
    Tls {
        /// The URL tried.
        url: String,
        /// Transport error text.
        detail: String,
    },
    /// 401/403.
    #[error("{url} answered {status}: {hint} (body: {detail})")]
    Auth {
        /// The URL tried.
        url: String,
        /// 401 or 403.
        status: u16,
        /// What to do about it.
        hint: String,
        /// Body excerpt (key redacted).
        detail: String,
    },
    /// 404 (or 400) naming the model: the server does not serve it.
    #[error(
        "{url} answered {status}: model `{model}` is not served; served model names are: {served}"
    )]
    UnknownModel {
        /// The URL tried.
        url: String,
        /// HTTP status.
        status: u16,
        /// The scenario's model.
        model: String,
        /// Comma-separated served names, or a note that the list is unavailable.
        served: String,
    },
    /// 404 (or 400) naming a model that `/v1/models` does list: the server or a gateway
    /// refused it anyway, so "not served" would be wrong.
    #[error(
        "{url} answered {status} for model `{model}` although {models_url} lists it: the \
         server or a gateway in front of it refused the request (body: {detail})"
    )]
    ListedModelRefused {
        /// The URL tried.
        url: String,
        /// HTTP status.
        status: u16,
        /// The scenario's model.
        model: String,
        /// The models list that names it.
        models_url: String,
        /// Body excerpt.
        detail: String,
    },
    /// 404 on the API path itself.
    #[error(
        "{url} answered 404: no such path; endpoint.base_url should end before /v1 \
         (e.g. http://host:8000, not http://host:8000/v1)"
    )]
    WrongPath {
        /// The URL tried.
        url: String,
    },
    /// 404 on the completions path while /v1/models works: the other API flavour may be served.
    #[error(
        "{url} answered 404 although {models_url} is served: this server may not offer \
         this API; try endpoint.api: {other}"
    )]
    WrongApi {
        /// The URL tried.
        url: String,
        /// The models list that answered.
        models_url: String,
        /// The other API flavour's name.
        other: &'static str,
    },
    /// `api: embeddings` and the server has no embeddings endpoint enabled (llama.cpp
    /// answers 501, vLLM 404 for a model it does not serve for pooling).
    #[error(
        "{url} answered {status}: this server does not serve embeddings as started; start the \
         server with --embeddings (llama.cpp; with --pooling mean when the model has no pooling \
         of its own) / --task embed (vLLM; --runner pooling in newer releases), or serve an \
         embedding model (body: {detail})"
    )]
    EmbeddingsOff {
        /// The URL tried.
        url: String,
        /// HTTP status.
        status: u16,
        /// Body excerpt.
        detail: String,
    },
    /// `api: rerank` and the server serves no rerank endpoint as started (llama.cpp without
    /// `--reranking` answers 501; vLLM answers 404 for a model that is not a scorer).
    #[error(
        "{url} answered {status}: this server does not serve rerank as started; start \
         llama-server with --reranking (or --embedding --pooling rank), vLLM with --task score \
         (--runner pooling in newer releases) and a reranker / cross-encoder model \
         (body: {detail})"
    )]
    RerankOff {
        /// The URL tried.
        url: String,
        /// HTTP status.
        status: u16,
        /// Body excerpt.
        detail: String,
    },
    /// 429.
    #[error(
        "{url} answered 429: rate limited by the server or a gateway in front of it; raise the \
         gateway's limit for this key or lower the rates (body: {detail})"
    )]
    RateLimited {
        /// The URL tried.
        url: String,
        /// Body excerpt.
        detail: String,
    },
    /// 5xx.
    #[error("{url} answered {status}: the server failed; {cause} (body: {detail})")]
    ServerError {
        /// The URL tried.
        url: String,
        /// HTTP status.
        status: u16,
        /// The likely cause, from the body ([`server_error_cause`]).
        cause: &'static str,
        /// Body excerpt.
        detail: String,
    },
    /// Another 4xx (or an unfollowed redirect).
    #[error("{url} answered {status}: the server refused the probe request (body: {detail})")]
    Rejected {
        /// The URL tried.
        url: String,
        /// HTTP status.
        status: u16,
        /// Body excerpt.
        detail: String,
    },
    /// The scenario's longest prompt was refused although the short probe passed: most
    /// often longer than the server's context.
    #[error(
        "{url} answered {status} to the scenario's longest prompt ({tokens} tokens, max_tokens \
         {max_tokens}) although a short probe passed: {cause} (server said: {detail})"
    )]
    PromptRefused {
        /// The URL tried.
        url: String,
        /// HTTP status.
        status: u16,
        /// The prompt's length by the scenario's tokenizer.
        tokens: u32,
        /// `max_tokens` of the probe.
        max_tokens: u32,
        /// The likely cause and what to do.
        cause: &'static str,
        /// The server's message (secrets redacted).
        detail: String,
    },
    /// No answer in time.
    #[error(
        "{url} did not answer in time ({detail}): the server is stuck or overloaded, or the \
         timeout named is too short (endpoint.ttft_timeout bounds the first token, \
         endpoint.request_timeout the whole answer)"
    )]
    Timeout {
        /// The URL tried.
        url: String,
        /// Which timeout.
        detail: String,
    },
    /// Answered 2xx but not with an OpenAI-compatible stream.
    #[error("{url} did not return a usable OpenAI-compatible stream ({class}): {detail}")]
    BadStream {
        /// The URL tried.
        url: String,
        /// reset, stream_error or malformed.
        class: ErrorClass,
        /// What was wrong.
        detail: String,
    },
    /// The client ran out of a local resource before it could reach the server.
    #[error("this machine could not send to {url} (the server was not tried): {detail}")]
    ClientResource {
        /// The URL tried.
        url: String,
        /// Which resource, how to get more, and the OS error.
        detail: String,
    },
}

fn connect_error(url: &str, detail: &str) -> PreflightError {
    let lower = detail.to_ascii_lowercase();
    let (url, detail) = (url.to_owned(), detail.to_owned());
    if lower.contains("dns error") || lower.contains("failed to lookup") {
        PreflightError::Dns { url, detail }
    } else if [
        "tls",
        "certificate",
        "handshake",
        "rustls",
        "corrupt message",
    ]
    .iter()
    .any(|w| lower.contains(w))
        || (url.starts_with("https:") && !lower.contains("refused"))
    {
        PreflightError::Tls { url, detail }
    } else {
        PreflightError::NoServer { url, detail }
    }
}

fn transport_error(url: &str, err: &RequestError) -> PreflightError {
    match err.class {
        ErrorClass::Connect => connect_error(url, &err.detail),
        ErrorClass::ClientResource => PreflightError::ClientResource {
            url: url.to_owned(),
            detail: err.detail.clone(),
        },
        ErrorClass::Timeout => PreflightError::Timeout {
            url: url.to_owned(),
            detail: err.detail.clone(),
        },
        class => PreflightError::BadStream {
            url: url.to_owned(),
            class,
            detail: err.detail.clone(),
        },
    }
}

/// The likely cause of a 5xx at preflight, from the server's message: llama.cpp's "input
/// (N tokens) is too large to process. increase the physical batch size" (an embeddings or
/// rerank input longer than its `-ub`), a model still loading, or else the server's log.
fn server_error_cause(detail: &str) -> &'static str {
    let d = detail.to_ascii_lowercase();
    if d.contains("too large to process") || d.contains("physical batch size") {
        "an input is longer than the server's physical batch (llama.cpp `-ub`/`-b`, 512 tokens \
         by default; each embeddings or rerank input must fit it whole): lower \
         workload.input_tokens, or start the server with larger -ub and -b"
    } else if d.contains("loading model") || d.contains("model is loading") {
        "the model is still loading: wait until the server's health check says ok, then run again"
    } else {
        "is the model loaded? see the server's log"
    }
}

fn auth_hint(status: u16, api_key_env: Option<&str>, key_present: bool) -> String {
    match (api_key_env, key_present) {
        // 403 to a key sent: known, but not allowed this model or endpoint.
        (Some(var), true) if status == 403 => format!(
            "the key in ${var} was refused this request (403 forbidden: a key without access \
             to this model or endpoint, or a gateway's policy); check what the key may use, or \
             use one that has access (the body says more)"
        ),
        (None, _) => {
            "the server wants a key: set endpoint.api_key_env to the variable that holds it".into()
        }
        (Some(var), false) => format!("key not sent: ${var} is not set; export it before running"),
        (Some(var), true) => {
            format!("key not sent or invalid: is ${var} set to the right key and exported?")
        }
    }
}

/// The short probe's prompt (for a rerank probe, its query).
pub const PROBE_TEXT: &str = "Say hello.";

/// Checks the server before any load: `GET {base}/v1/models` (a 404 there is tolerated: not
/// every gateway serves it), then one minimal streamed request for `model`. Every text in the
/// error and the warnings has the client's secrets redacted; `served_models` is kept as served.
pub async fn preflight(
    client: &Client,
    model: &str,
    api_key_env: Option<&str>,
    key_present: bool,
) -> Result<PreflightReport, PreflightError> {
    let models_url = client.models_url().to_owned();
    // The client's own warnings (key over plain http) are the caller's to show, before this runs.
    let mut warnings: Vec<String> = Vec::new();

    let models = client.list_models().await;
    let served = match &models {
        ModelsReply::Served(list) => Some(list.clone()),
        ModelsReply::Failed(err) if err.class == ErrorClass::Connect => {
            return Err(connect_error(&models_url, &err.detail))
        }
        ModelsReply::Failed(err)
            if matches!(err.class, ErrorClass::Timeout | ErrorClass::ClientResource) =>
        {
            return Err(transport_error(&models_url, err))
        }
        _ => None,
    };

    // A rerank probe scores one short document against a short query.
    let req = match client.api() {
        Api::Rerank => client.prepare_batch(PROBE_TEXT, &["Hello.".to_owned()], 3, 4),
        _ => client.prepare(PROBE_TEXT, 3, 4),
    };
    let start = Instant::now();
    let rec = client.send(&req, start, Duration::ZERO, 0, true).await;
    let Some(err) = rec.error.clone() else {
        if let ModelsReply::TooLarge(cap) = &models {
            warnings.push(client.redact(&format!(
                "{models_url} answered more than {} MiB, far more than a list of models: not \
                 read, so the model was not checked against it",
                cap >> 20
            )));
        }
        if let Some(list) = &served {
            if !list.iter().any(|m| m == model) {
                // Served ids come from the server: they may echo a secret.
                // Each in a code span of its own, so no id (or model name) can end it and be
                // read as Markdown in summary.md.
                let ids: Vec<String> = list.iter().map(|m| markdown::code(m)).collect();
                warnings.push(client.redact(&format!(
                    "model {} is not in {models_url} ({}), but the probe succeeded",
                    markdown::code(model),
                    ids.join(", ")
                )));
            }
        }
        return Ok(PreflightReport {
            served_models: served,
            probe_ttft: rec.ttft(),
            probe_e2e: rec.e2e(),
            probe_output_tokens: rec.output_tokens,
            probe_prompt_tokens: rec.server_prompt_tokens,
            warnings,
        });
    };

    Err(diagnose(
        client,
        model,
        served.as_deref(),
        api_key_env,
        key_present,
        err,
    ))
}

/// After [`preflight`] passed for a mix's first model: the same short probe for each other
/// name of the mix (`model` a list), so a name the server does not serve is refused before
/// any load, with the list it does serve, as for one model. A name missing from `served`
/// that still answers is a warning, as for one model; so is a name whose server count of the
/// probe's prompt differs from the first model's (`first_count`): its tokenizer differs,
/// and the scenario's one tokenizer cannot count both. Returns the warnings.
pub async fn probe_other_models(
    client: &Client,
    names: &[&str],
    first_count: Option<u32>,
    served: Option<&[String]>,
    api_key_env: Option<&str>,
    key_present: bool,
) -> Result<Vec<String>, PreflightError> {
    let mut warnings = Vec::new();
    for &name in names {
        let model: std::sync::Arc<str> = std::sync::Arc::from(name);
        let req = client.prepare_batch_as(Some(&model), "Say hello.", &[], 3, 4);
        let rec = client
            .send(&req, Instant::now(), Duration::ZERO, 0, true)
            .await;
        if let (Some(a), Some(b)) = (first_count, rec.server_prompt_tokens) {
            if a != b {
                warnings.push(client.redact(&format!(
                    "model {} counts the probe's prompt as {b} tokens where {} counts {a}: \
                     they tokenize differently, and the scenario's one tokenizer counts every \
                     model's prompts (compare per-model `server_prompt_tokens`, or mix only \
                     models that share a tokenizer, such as a base and its adapters)",
                    markdown::code(name),
                    markdown::code(client.model()),
                )));
            }
        }
        if let Some(err) = rec.error {
            return Err(diagnose(
                client,
                name,
                served,
                api_key_env,
                key_present,
                err,
            ));
        }
        if let Some(list) = served.filter(|l| !l.iter().any(|m| m == name)) {
            let ids: Vec<String> = list.iter().map(|m| markdown::code(m)).collect();
            warnings.push(client.redact(&format!(
                "model {} is not in {} ({}), but the probe succeeded",
                markdown::code(name),
                client.models_url(),
                ids.join(", ")
            )));
        }
    }
    Ok(warnings)
}

/// `max_tokens` of the longest-prompt probe: enough for one token back, no decoding cost.
pub const LONG_PROBE_MAX_TOKENS: u32 = 1;

/// What the longest-prompt probe learned.
#[derive(Debug, Clone, PartialEq)]
pub struct LongProbe {
    /// Time to first token of the longest prompt (mostly its prefill).
    pub ttft: Option<Duration>,
    /// Prompt tokens the server counted, when its usage says.
    pub server_prompt_tokens: Option<u32>,
}

/// After [`preflight`] passed: one request with the scenario's longest prompt (`tokens` long
/// by the scenario's tokenizer) and `max_tokens` [`LONG_PROBE_MAX_TOKENS`], so a prompt longer
/// than the server's context is caught before any load, with the server's own message.
/// `served` is [`PreflightReport::served_models`].
#[allow(clippy::too_many_arguments)]
pub async fn probe_longest(
    client: &Client,
    model: &str,
    served: Option<&[String]>,
    prompt: &str,
    batch: &[String],
    images: &[String],
    tokens: u32,
    api_key_env: Option<&str>,
    key_present: bool,
) -> Result<LongProbe, PreflightError> {
    // An embeddings batch goes whole: its inputs together are the request's length; a chat
    // request's images go with it.
    let req = match images.is_empty() {
        true => client.prepare_batch(prompt, batch, tokens, LONG_PROBE_MAX_TOKENS),
        false => client.prepare_images(None, prompt, images, tokens, LONG_PROBE_MAX_TOKENS),
    };
    // It follows the short probe at once, on that probe's pooled connection, which a server
    // may close just then (llama-server does after every stream): the client sends it once
    // more on a new connection (`RequestRecord::resent`), so such a close says nothing here.
    let rec = client
        .send(&req, Instant::now(), Duration::ZERO, 0, true)
        .await;
    let Some(err) = rec.error.clone() else {
        return Ok(LongProbe {
            ttft: rec.ttft(),
            server_prompt_tokens: rec.server_prompt_tokens,
        });
    };
    let status = err.status.unwrap_or(0);
    // The same model passed the short probe, so a 400 naming "model" here is about the length
    // ("This model's maximum context length is ..."), not an unknown model.
    let cause = match (err.class, status) {
        (ErrorClass::Client4xx, 400) => Some(
            "the prompt is most likely longer than the server's context (vLLM \
             --max-model-len, SGLang --context-length, llama.cpp -c divided by -np slots); \
             lower workload.input_tokens (or range_ratio, the sweep's values, the dataset's \
             longest prompt) or give the server a longer context",
        ),
        (ErrorClass::Client4xx, 413) => Some(
            "the request body is too large for the server or a gateway in front of it; raise \
             its body limit or send shorter prompts",
        ),
        (ErrorClass::Client4xx, 422) => Some(
            "the server refuses a prompt of this length or shape; check its context length \
             and workload.input_tokens",
        ),
        _ => None,
    };
    match cause {
        Some(cause) => Err(PreflightError::PromptRefused {
            url: client.request_url().to_owned(),
            status,
            tokens,
            max_tokens: LONG_PROBE_MAX_TOKENS,
            cause,
            detail: err.detail,
        }),
        None => Err(diagnose(
            client,
            model,
            served,
            api_key_env,
            key_present,
            err,
        )),
    }
}

/// True when an embeddings probe's failure says the server serves no embeddings: llama.cpp
/// without `--embeddings` answers 501 ("does not support embeddings"); vLLM answers 404 on
/// the path (a generation model) or 400 saying the model does not support the Embeddings
/// API; llama.cpp with `--embeddings` but a model without pooling answers 400 "Pooling type
/// 'none' is not OAI compatible". A 404 for a model `/v1/models` does not list is the model's
/// fault, not this.
fn embeddings_off(status: u16, detail: &str, not_listed: bool) -> bool {
    let d = detail.to_ascii_lowercase();
    match status {
        501 => true,
        404 => !not_listed,
        400 | 500 => (d.contains("embedding") && d.contains("support")) || d.contains("pooling"),
        _ => false,
    }
}

/// True when a rerank probe's failure says the server serves no rerank: llama.cpp without
/// `--reranking` answers 501 ("does not support reranking"); vLLM answers 404 on the path
/// for a model it does not serve for scoring, or 400 saying the model does not support it.
/// A 404 for a model `/v1/models` does not list is the model's fault, not this.
fn rerank_off(status: u16, detail: &str, not_listed: bool) -> bool {
    let d = detail.to_ascii_lowercase();
    match status {
        501 => true,
        404 => !not_listed,
        400 | 500 => (d.contains("rerank") || d.contains("scor")) && d.contains("support"),
        _ => false,
    }
}

/// The error for a failed probe: what came back, read with what `/v1/models` said.
fn diagnose(
    client: &Client,
    model: &str,
    served: Option<&[String]>,
    api_key_env: Option<&str>,
    key_present: bool,
    err: RequestError,
) -> PreflightError {
    let models_url = client.models_url().to_owned();
    let url = client.request_url().to_owned();
    let served_text = || match served {
        Some(list) if !list.is_empty() => client.redact(&list.join(", ")),
        Some(_) => "(none listed)".to_owned(),
        None => format!("(unknown: {models_url} did not list them)"),
    };
    let not_listed = served.is_some_and(|list| !list.iter().any(|m| m == model));
    let listed = served.is_some_and(|list| list.iter().any(|m| m == model));
    let mentions_model = err.detail.to_ascii_lowercase().contains("model");
    let path_wrong = client.base_url().ends_with("/v1") || !mentions_model;
    let status = err.status.unwrap_or(0);
    if client.api() == Api::Embeddings && embeddings_off(status, &err.detail, not_listed) {
        return PreflightError::EmbeddingsOff {
            url,
            status,
            detail: err.detail,
        };
    }
    if client.api() == Api::Rerank && rerank_off(status, &err.detail, not_listed) {
        return PreflightError::RerankOff {
            url,
            status,
            detail: err.detail,
        };
    }
    match err.class {
        ErrorClass::Auth => PreflightError::Auth {
            url,
            status,
            hint: auth_hint(status, api_key_env, key_present),
            detail: err.detail,
        },
        ErrorClass::RateLimit => PreflightError::RateLimited {
            url,
            detail: err.detail,
        },
        ErrorClass::Server5xx => PreflightError::ServerError {
            url,
            status,
            cause: server_error_cause(&err.detail),
            detail: err.detail,
        },
        ErrorClass::Client4xx if status == 404 && client.base_url().ends_with("/v1") => {
            PreflightError::WrongPath { url }
        }
        ErrorClass::Client4xx if status == 404 && not_listed => PreflightError::UnknownModel {
            url,
            status,
            model: model.to_owned(),
            served: served_text(),
        },
        ErrorClass::Client4xx if status == 404 && served.is_some() && !mentions_model => {
            PreflightError::WrongApi {
                url,
                models_url: models_url.clone(),
                other: match client.api() {
                    Api::Completions => "chat",
                    Api::Chat | Api::Embeddings | Api::Messages | Api::Responses | Api::Rerank => {
                        "completions"
                    }
                },
            }
        }
        ErrorClass::Client4xx if status == 404 && path_wrong => PreflightError::WrongPath { url },
        ErrorClass::Client4xx if (status == 404 || status == 400) && listed && mentions_model => {
            PreflightError::ListedModelRefused {
                url,
                status,
                model: model.to_owned(),
                models_url: models_url.clone(),
                detail: err.detail,
            }
        }
        ErrorClass::Client4xx
            if (status == 404 || status == 400) && (not_listed || mentions_model) =>
        {
            PreflightError::UnknownModel {
                url,
                status,
                model: model.to_owned(),
                served: served_text(),
            }
        }
        ErrorClass::Client4xx => PreflightError::Rejected {
            url,
            status,
            detail: err.detail,
        },
        _ => transport_error(&url, &err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 500 whose body is llama.cpp's "too large to process" names the physical batch,
    /// not "is the model loaded?"; a 503 "Loading model" says to wait.
    #[test]
    fn server_errors_name_their_likely_cause_from_the_body() {
        let big = r#"{"error":{"code":500,"message":"input (600 tokens) is too large to process. increase the physical batch size (current batch size: 512)","type":"server_error"}}"#;
        assert!(server_error_cause(big).contains("physical batch"));
        assert!(server_error_cause(big).contains("workload.input_tokens"));
        let loading =
            r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#;
        assert!(server_error_cause(loading).contains("still loading"));
        assert!(server_error_cause("boom").contains("is the model loaded?"));
    }

    #[test]
    fn auth_hints_name_the_variable() {
        assert!(auth_hint(401, Some("VLLM_KEY"), true).contains("$VLLM_KEY"));
        assert!(auth_hint(401, Some("VLLM_KEY"), true).contains("key not sent or invalid"));
        assert!(auth_hint(401, Some("VLLM_KEY"), false).contains("not set"));
        assert!(auth_hint(403, Some("VLLM_KEY"), false).contains("not set"));
        assert!(auth_hint(401, None, false).contains("endpoint.api_key_env"));
        // A key sent and answered 403 was known but not allowed: not called invalid.
        let h = auth_hint(403, Some("VLLM_KEY"), true);
        assert!(
            h.contains("$VLLM_KEY was refused this request (403 forbidden"),
            "{h}"
        );
        assert!(!h.contains("invalid"), "{h}");
    }

    #[test]
    fn a_server_without_rerank_is_told_from_other_refusals() {
        // llama-server started without --reranking, as it answered.
        let llama = r#"{"error":{"code":501,"message":"This server does not support reranking. Start it with `--reranking`","type":"not_supported_error"}}"#;
        assert!(rerank_off(501, llama, false));
        assert!(rerank_off(404, "Not Found", false));
        assert!(!rerank_off(404, "model `x` does not exist", true));
        assert!(rerank_off(
            400,
            "The model does not support the Score API",
            false
        ));
        assert!(!rerank_off(400, "query is too long", false));
        assert!(!rerank_off(401, "bad key", false));
        let e = PreflightError::RerankOff {
            url: "http://h/v1/rerank".into(),
            status: 501,
            detail: "x".into(),
        }
        .to_string();
        assert!(
            e.contains("--reranking") && e.contains("--pooling rank") && e.contains("--task score"),
            "{e}"
        );
    }

    #[test]
    fn connect_errors_are_told_apart() {
        let u = "http://x/v1/models";
        assert!(matches!(
            connect_error(u, "tcp connect error: Connection refused (os error 111)"),
            PreflightError::NoServer { .. }
        ));
        assert!(matches!(
            connect_error(u, "dns error: failed to lookup address information"),
            PreflightError::Dns { .. }
        ));
        assert!(matches!(
            connect_error(u, "invalid peer certificate: UnknownIssuer"),
            PreflightError::Tls { .. }
        ));
    }
}
