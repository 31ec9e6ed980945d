//! The streaming OpenAI-compatible HTTP client: request building, sending over one shared
//! keep-alive pool, SSE parsing, and classification of every failure into one [`ErrorClass`].
//!
//! `reqwest` is used only inside this module. The runner builds a [`Client`] once per run,
//! calls [`Client::prepare`] for every prompt before a rung starts, and [`Client::send`] on
//! the hot path; `send` always returns a [`RequestRecord`], never an error.
//!
//! [`ErrorClass`]: crate::record::ErrorClass
//! [`RequestRecord`]: crate::record::RequestRecord

mod answer_error;
mod body;
pub mod chunk;
mod fetch;
pub(crate) mod pooled;
mod progress;
mod redact;
pub(crate) mod rerank;
mod resource;
mod secret;
mod send;
pub mod sse;
mod tokenize;
pub(crate) mod typed;
pub(crate) mod usage;
mod vision;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::redirect;
use serde::Serialize;

use crate::record::RequestError;
use crate::scenario::types::Api;
pub use crate::scenario::validate::{without_userinfo, CREDENTIALS_IN_URL, FRAGMENT_IN_URL};

pub use chunk::Usage;
pub use fetch::{FetcherBuildError, TextFetcher};
pub use redact::{strings_of, Redactor, MASK, MIN_SECRET_CHARS};
pub use resource::client_limits;
pub use secret::{is_secret_name, redact, ApiKey};
pub use send::Measured;
pub use tokenize::{TokenizeError, TokenizeShape};

/// Longest error-body excerpt kept in a [`RequestError`] detail.
pub const DETAIL_MAX: usize = 300;
/// Bytes of a non-2xx body read before giving up on the rest.
pub const ERROR_BODY_CAP: usize = 4 * 1024;

/// How long an idle pooled connection is kept for reuse: well under the common servers' 5 s
/// keep-alive timeout, so ladder never races a server's close of an idle connection.
const IDLE_CONNECTION_TIMEOUT: Duration = Duration::from_secs(3);

/// Counts the tokens of generated text (the scenario's tokenizer), used when the server sends
/// no usage.
pub type TokenCounter = Arc<dyn Fn(&str) -> u32 + Send + Sync>;

/// How to reach and call the server under test.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL up to, not including, `/v1` (e.g. `http://127.0.0.1:8000`).
    pub base_url: String,
    /// Completions or chat.
    pub api: Api,
    /// Sent as `Authorization: Bearer <key>` when present.
    pub api_key: Option<ApiKey>,
    /// Model name sent in every request.
    pub model: String,
    /// Whole-request limit, from hand-off to the pool to the end of the stream.
    pub request_timeout: Duration,
    /// Limit from hand-off to the first generated token.
    pub ttft_timeout: Option<Duration>,
    /// Extra headers sent with every request (the key's `Authorization` wins over one here).
    pub headers: BTreeMap<String, String>,
    /// Ask the server to ignore end-of-sequence (vLLM extension).
    pub ignore_eos: bool,
    /// Expected peak of concurrent requests; sizes the keep-alive pool.
    pub max_connections: usize,
    /// Engine-specific fields merged into every request body (`endpoint.extra_body`; the
    /// scenario has refused the fields ladder sets itself).
    pub extra_body: BTreeMap<String, serde_json::Value>,
}

/// The client could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// `base_url` is not an http(s) URL.
    #[error("endpoint.base_url `{url}` is not a valid http(s) URL: {reason}")]
    BadUrl {
        /// The configured base URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A header name or value cannot be sent.
    #[error("endpoint.headers: `{name}` is not a valid HTTP header name or value")]
    BadHeader {
        /// The header name (values are not shown: they may be secrets).
        name: String,
    },
    /// The API key contains characters that cannot go into a header.
    #[error("the API key contains characters that cannot be sent in an HTTP header")]
    BadKey,
    /// reqwest refused the configuration (e.g. TLS backend failure).
    #[error("cannot build the HTTP client: {0}")]
    Build(String),
}

/// Who said a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    /// The user's message.
    User,
    /// The model's answer.
    Assistant,
}

/// One message of a chat request's `messages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChatMessage<'a> {
    /// Who said it.
    pub role: ChatRole,
    /// What was said.
    pub content: &'a str,
}

/// A request body built once, before the rung; cheap to clone and send.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    body: Bytes,
    input_tokens: u32,
    max_tokens: u32,
    /// Inputs the request carries (an embeddings batch's size, a rerank request's documents;
    /// 1 for generation).
    inputs: u32,
    /// The model named in the body when the scenario mixes models (`None`: the client's one
    /// model, and the record names none).
    model: Option<Arc<str>>,
    /// Images in its content (`workload.images`) and their encoded bytes, for its record.
    images: u32,
    image_bytes: u64,
}

impl PreparedRequest {
    /// The JSON body as sent.
    pub fn body(&self) -> &Bytes {
        &self.body
    }
    /// Prompt tokens as counted by the client (0: not counted, `tokenizer: none`).
    pub fn input_tokens(&self) -> u32 {
        self.input_tokens
    }
    /// Requested output tokens.
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }
    /// The model of a mixed scenario this request names (`None` without a mix).
    pub fn model(&self) -> Option<&Arc<str>> {
        self.model.as_ref()
    }
}

/// What `GET /v1/models` returned.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelsReply {
    /// 2xx with a parsable list: the served model ids.
    Served(Vec<String>),
    /// 2xx whose body is not an OpenAI model list.
    Unparsable,
    /// 2xx whose body passed this many bytes: not read further, so no list.
    TooLarge(usize),
    /// A non-2xx status, with the (capped, redacted, truncated) body.
    Status {
        /// HTTP status.
        status: u16,
        /// Body excerpt.
        body: String,
    },
    /// No HTTP answer (connect failure, timeout, reset).
    Failed(RequestError),
}

/// The shared streaming client. Cloning is cheap (one pool shared by all clones).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    inner: Arc<Inner>,
    counter: Option<TokenCounter>,
    redactor: Arc<Redactor>,
}

struct Inner {
    base_url: String,
    url: reqwest::Url,
    models_url: reqwest::Url,
    tokenize_url: reqwest::Url,
    api: Api,
    api_key: Option<ApiKey>,
    model: String,
    request_timeout: Duration,
    ttft_timeout: Option<Duration>,
    ignore_eos: bool,
    extra_body: BTreeMap<String, serde_json::Value>,
    warnings: Vec<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.inner.url.as_str())
            .field("model", &self.inner.model)
            .field("api_key", &self.inner.api_key)
            .finish_non_exhaustive()
    }
}

/// Redirects are followed only within the same scheme, host and port, so neither the
/// `Authorization` header nor custom headers (which may carry keys) reach another host. A
/// cross-origin redirect is returned as the 3xx response and counted as a client error.
fn redirect_policy() -> redirect::Policy {
    redirect::Policy::custom(|attempt| {
        if attempt.previous().len() > 5 {
            return attempt.error("too many redirects");
        }
        let same_origin = attempt.previous().last().is_some_and(|prev| {
            let next = attempt.url();
            prev.scheme() == next.scheme()
                && prev.host_str() == next.host_str()
                && prev.port_or_known_default() == next.port_or_known_default()
        });
        if same_origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// A secret header's value, and what it carries: the token after an auth scheme word
/// (`Bearer x`), and for `Basic` the decoded `user:password` and the password.
fn header_secrets(name: &str, value: &str) -> Vec<(String, String)> {
    let label = format!("header `{name}`");
    let mut out = vec![(label.clone(), value.to_owned())];
    if let Some((scheme, token)) = value.trim().split_once(' ') {
        let token = token.trim();
        out.push((label.clone(), token.to_owned()));
        if scheme.eq_ignore_ascii_case("basic") {
            if let Some(creds) =
                redact::base64_decode(token).and_then(|b| String::from_utf8(b).ok())
            {
                if let Some((_, pw)) = creds.split_once(':') {
                    out.push((label.clone(), pw.to_owned()));
                }
                out.push((label, creds));
            }
        }
    }
    out
}

/// What is wrong with one `endpoint.headers` entry (the value is never shown: it may be a
/// secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderProblem {
    /// The name is not an HTTP header name.
    #[error("`{0}` is not a valid HTTP header name (letters, digits and `-`, no spaces)")]
    Name(String),
    /// The value (of the named header) holds what a header cannot carry.
    #[error("the value of header `{0}` cannot be sent (no line breaks or control characters)")]
    Value(String),
}

/// The header as it will be sent, or what is wrong with it.
fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), HeaderProblem> {
    let n = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| HeaderProblem::Name(name.to_owned()))?;
    let v = HeaderValue::from_str(value).map_err(|_| HeaderProblem::Value(name.to_owned()))?;
    Ok((n, v))
}

/// What is wrong with one `endpoint.headers` entry, as [`Client::new`] would refuse it.
pub fn header_problem(name: &str, value: &str) -> Option<HeaderProblem> {
    header(name, value).err()
}

fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The headers every request carries: the scenario's (secret-named ones marked sensitive,
/// their values added to `secrets`), the content type, Anthropic's version for the Messages
/// API, and the API key as the API takes it. Also returns the credential as sent (`Bearer k`,
/// or the bare key for `x-api-key`), for the redactor.
fn default_headers(
    cfg: &ClientConfig,
    secrets: &mut Vec<(String, String)>,
) -> Result<(HeaderMap, Option<String>), ClientError> {
    let mut headers = HeaderMap::new();
    for (name, value) in &cfg.headers {
        let (n, mut v) =
            header(name, value).map_err(|_| ClientError::BadHeader { name: name.clone() })?;
        if is_secret_name(name) {
            v.set_sensitive(true);
            secrets.extend(header_secrets(name, value));
        }
        headers.insert(n, v);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // Anthropic's API takes the key bare in `x-api-key`, and names its version.
    let messages = cfg.api == Api::Messages;
    if messages
        && !cfg
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("anthropic-version"))
    {
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(typed::ANTHROPIC_VERSION),
        );
    }
    let sent_credential = cfg.api_key.as_ref().map(|key| match messages {
        true => key.expose().to_owned(),
        false => format!("Bearer {}", key.expose()),
    });
    if let (Some(key), Some(sent)) = (&cfg.api_key, &sent_credential) {
        secrets.push(("the API key".into(), key.expose().to_owned()));
        let mut v = HeaderValue::from_str(sent).map_err(|_| ClientError::BadKey)?;
        v.set_sensitive(true);
        let name = match messages {
            true => HeaderName::from_static("x-api-key"),
            false => AUTHORIZATION,
        };
        headers.insert(name, v);
    }
    Ok((headers, sent_credential))
}

impl Client {
    /// Builds the shared client: HTTP/1.1 only, keep-alive pool sized for
    /// `max_connections`, TCP_NODELAY, no reqwest-level timeout (each request enforces its own).
    ///
    /// A query string in `base_url` (Azure's `?api-version=…`) is kept on every request path;
    /// a fragment or credentials (`user:pw@`) are refused. The redactor holds the key, the
    /// values of secret-looking headers and of secret-looking query parameters.
    pub fn new(cfg: ClientConfig) -> Result<Client, ClientError> {
        let bad = |reason: String| ClientError::BadUrl {
            url: without_userinfo(&cfg.base_url),
            reason,
        };
        let mut base: reqwest::Url = cfg.base_url.parse().map_err(|e| bad(format!("{e}")))?;
        if base.scheme() != "http" && base.scheme() != "https" {
            return Err(bad("the scheme must be http or https".into()));
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(bad(CREDENTIALS_IN_URL.into()));
        }
        if base.fragment().is_some() {
            return Err(bad(FRAGMENT_IN_URL.into()));
        }
        let query = base.query().map(str::to_owned);
        let mut secrets: Vec<(String, String)> = base
            .query_pairs()
            .filter(|(k, _)| is_secret_name(k))
            .map(|(k, v)| (format!("query parameter `{k}`"), v.into_owned()))
            .collect();
        base.set_query(None);
        let base_path = base.path().trim_end_matches('/').to_owned();
        let join = |path: &str| {
            let mut u = base.clone();
            u.set_path(&format!("{base_path}{path}"));
            u.set_query(query.as_deref());
            u
        };
        let url = join(match cfg.api {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
            Api::Embeddings => "/v1/embeddings",
            Api::Messages => "/v1/messages",
            Api::Responses => "/v1/responses",
            // vLLM and llama.cpp both serve it here (llama.cpp also at /rerank, /reranking).
            Api::Rerank => "/v1/rerank",
        });
        let models_url = join("/v1/models");
        // Not under /v1: vLLM, SGLang and llama.cpp all serve it at the root.
        let tokenize_url = join("/tokenize");
        let base_url = base.as_str().trim_end_matches('/').to_owned();

        let (headers, sent_credential) = default_headers(&cfg, &mut secrets)?;

        let http = reqwest::Client::builder()
            .http1_only()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(cfg.max_connections.max(1))
            // Below the 5 s after which uvicorn (vLLM, SGLang) and cpp-httplib (llama.cpp)
            // close an idle keep-alive connection: a request sent on a connection the server
            // is closing at that instant fails with a reset that is the client's artefact.
            .pool_idle_timeout(IDLE_CONNECTION_TIMEOUT)
            .redirect(redirect_policy())
            .default_headers(headers)
            .build()
            .map_err(|e| ClientError::Build(e.to_string()))?;

        let mut warnings = Vec::new();
        if cfg.api_key.is_some()
            && base.scheme() == "http"
            && !base.host_str().is_some_and(is_loopback)
        {
            warnings.push(format!(
                "the API key is sent over plain http to {}: anyone on the path can read it; use https",
                base.host_str().unwrap_or("?")
            ));
        }

        // The credential as sent (`Bearer k`, or the bare key in `x-api-key`): its base64 is
        // searched for even when the key is short.
        let redactor = match sent_credential {
            Some(sent) => Redactor::new(secrets).with_sent_credential("the API key".into(), sent),
            None => Redactor::new(secrets),
        };
        Ok(Client {
            http,
            inner: Arc::new(Inner {
                base_url,
                url,
                models_url,
                tokenize_url,
                api: cfg.api,
                api_key: cfg.api_key,
                model: cfg.model,
                request_timeout: cfg.request_timeout,
                ttft_timeout: cfg.ttft_timeout,
                ignore_eos: cfg.ignore_eos,
                extra_body: cfg.extra_body,
                warnings,
            }),
            counter: None,
            redactor: Arc::new(redactor),
        })
    }

    /// Adds secrets to the redactor (e.g. header values that came from `{{ env.X }}`). Call
    /// before cloning the client.
    pub fn with_secrets(mut self, secrets: impl IntoIterator<Item = (String, String)>) -> Client {
        let more: Vec<(String, String)> = secrets.into_iter().collect();
        self.redactor = Arc::new((*self.redactor).clone().with(more));
        self
    }

    /// Marks the named headers as carrying secrets: their values are added to the redactor.
    pub fn with_secret_headers(
        self,
        headers: &BTreeMap<String, String>,
        names: &[String],
    ) -> Client {
        let more: Vec<(String, String)> = headers
            .iter()
            .filter(|(n, _)| names.contains(n))
            .flat_map(|(n, v)| header_secrets(n, v))
            .collect();
        self.with_secrets(more)
    }

    /// The redactor holding every secret of this client.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The scenario's token counter, when there is one (`None` for `tokenizer: none`).
    pub fn token_counter(&self) -> Option<&TokenCounter> {
        self.counter.as_ref()
    }

    /// Re-tokenizes generated text when the server sends no usage.
    pub fn with_token_counter(mut self, counter: TokenCounter) -> Client {
        self.counter = Some(counter);
        self
    }

    /// Things the user should hear before the run (e.g. a key over plain http).
    pub fn warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// The base URL without its query and without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The URL requests are posted to.
    pub fn request_url(&self) -> &str {
        self.inner.url.as_str()
    }

    /// `{base}/v1/models`.
    pub fn models_url(&self) -> &str {
        self.inner.models_url.as_str()
    }

    /// The API flavour.
    pub fn api(&self) -> Api {
        self.inner.api
    }

    /// The model name sent.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The whole-request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// Redacts every secret of this client from `text`, in any encoding.
    pub fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    /// Builds a streaming request body once (off the hot path).
    pub fn prepare(&self, prompt: &str, input_tokens: u32, max_tokens: u32) -> PreparedRequest {
        self.prepare_batch(prompt, &[], input_tokens, max_tokens)
    }

    /// [`Client::prepare`] for a request that may carry several inputs: an embeddings batch
    /// sends `first` and `rest` in one request (`input_tokens` counts them all); a rerank
    /// request scores the documents `rest` against the query `first`; the other APIs take one
    /// prompt, and `rest` must be empty.
    pub fn prepare_batch(
        &self,
        first: &str,
        rest: &[String],
        input_tokens: u32,
        max_tokens: u32,
    ) -> PreparedRequest {
        self.prepare_batch_as(None, first, rest, input_tokens, max_tokens)
    }

    /// [`Client::prepare_batch`] naming `model` instead of the client's model (one name of a
    /// scenario's mix); the request and its record carry the name.
    pub fn prepare_batch_as(
        &self,
        model: Option<&Arc<str>>,
        first: &str,
        rest: &[String],
        input_tokens: u32,
        max_tokens: u32,
    ) -> PreparedRequest {
        let name: &str = model.map_or(&self.inner.model, |m| m);
        let model = model.cloned();
        if self.inner.api == Api::Embeddings {
            let body = pooled::embeddings_body(name, first, rest, &self.inner.extra_body);
            return PreparedRequest {
                body,
                input_tokens,
                max_tokens: 0,
                inputs: 1 + rest.len() as u32,
                model,
                images: 0,
                image_bytes: 0,
            };
        }
        if self.inner.api == Api::Rerank {
            // `first` is the query, `rest` the documents scored against it.
            let docs = rest.len() as u32;
            return PreparedRequest {
                body: rerank::body(name, first, rest, &self.inner.extra_body),
                input_tokens,
                max_tokens: 0,
                inputs: docs,
                model,
                images: 0,
                image_bytes: 0,
            };
        }
        debug_assert!(
            rest.is_empty(),
            "only embeddings and rerank batch their inputs"
        );
        let prompt = first;
        if self.inner.api.typed_events() {
            return PreparedRequest {
                body: typed::body(
                    self.inner.api,
                    name,
                    prompt,
                    max_tokens,
                    self.inner.ignore_eos,
                    &self.inner.extra_body,
                ),
                input_tokens,
                max_tokens,
                inputs: 1,
                model,
                images: 0,
                image_bytes: 0,
            };
        }
        let chat = self.inner.api == Api::Chat;
        let user = [ChatMessage {
            role: ChatRole::User,
            content: prompt,
        }];
        self.build(
            model,
            (!chat).then_some(prompt),
            chat.then_some(&user[..]),
            input_tokens,
            max_tokens,
        )
    }

    /// Builds a chat request body whose `messages` are a whole conversation (a session's
    /// history and its new user message), for `api: chat`. `input_tokens` is what ladder
    /// counted of the messages' text; `model` names one model of a mix (`None`: the
    /// client's).
    pub fn prepare_chat(
        &self,
        model: Option<&Arc<str>>,
        messages: &[ChatMessage<'_>],
        input_tokens: u32,
        max_tokens: u32,
    ) -> PreparedRequest {
        self.build(
            model.cloned(),
            None,
            Some(messages),
            input_tokens,
            max_tokens,
        )
    }

    fn build(
        &self,
        model: Option<Arc<str>>,
        prompt: Option<&str>,
        messages: Option<&[ChatMessage<'_>]>,
        input_tokens: u32,
        max_tokens: u32,
    ) -> PreparedRequest {
        #[derive(Serialize)]
        struct StreamOptions {
            include_usage: bool,
        }
        #[derive(Serialize)]
        struct Body<'a> {
            model: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            prompt: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            messages: Option<&'a [ChatMessage<'a>]>,
            max_tokens: u32,
            stream: bool,
            stream_options: StreamOptions,
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            ignore_eos: bool,
            /// Greedy unless `extra_body` sets a temperature.
            #[serde(skip_serializing_if = "Option::is_none")]
            temperature: Option<f32>,
            #[serde(flatten)]
            extra: &'a BTreeMap<String, serde_json::Value>,
        }
        let body = Body {
            model: model.as_deref().unwrap_or(&self.inner.model),
            prompt,
            messages,
            max_tokens,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            ignore_eos: self.inner.ignore_eos,
            temperature: (!self.inner.extra_body.contains_key("temperature")).then_some(0.0),
            extra: &self.inner.extra_body,
        };
        let json = serde_json::to_vec(&body).expect("a request body always serialises");
        PreparedRequest {
            body: Bytes::from(json),
            input_tokens,
            max_tokens,
            inputs: 1,
            model,
            images: 0,
            image_bytes: 0,
        }
    }

    /// A chat request of `prompt` with `images` (`data:` URLs) as content parts, naming
    /// `model` (a mix's pick) or the client's model; `images` empty is
    /// [`Client::prepare_batch_as`] of the prompt alone.
    pub fn prepare_images(
        &self,
        model: Option<&Arc<str>>,
        prompt: &str,
        images: &[String],
        input_tokens: u32,
        max_tokens: u32,
    ) -> PreparedRequest {
        if images.is_empty() {
            return self.prepare_batch_as(model, prompt, &[], input_tokens, max_tokens);
        }
        PreparedRequest {
            body: vision::body(
                model.map_or(&self.inner.model, |m| m),
                prompt,
                images,
                max_tokens,
                self.inner.ignore_eos,
                &self.inner.extra_body,
            ),
            input_tokens,
            max_tokens,
            inputs: 1,
            model: model.cloned(),
            images: images.len() as u32,
            image_bytes: images.iter().map(|u| u.len() as u64).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header that cannot be sent names its problem, never its value (it may be a secret).
    #[test]
    fn header_problems_name_the_header_not_the_value() {
        assert_eq!(
            header_problem("bad name", "v"),
            Some(HeaderProblem::Name("bad name".into()))
        );
        let p = header_problem("x-token", "s3cr3t\nline").expect("a problem");
        assert_eq!(p, HeaderProblem::Value("x-token".into()));
        assert_eq!(
            p.to_string(),
            "the value of header `x-token` cannot be sent (no line breaks or control characters)"
        );
        assert!(!p.to_string().contains("s3cr3t"));
        assert_eq!(header_problem("x-ok", "fine"), None);
    }

    fn cfg(api: Api) -> ClientConfig {
        ClientConfig {
            base_url: "http://127.0.0.1:9/".into(),
            api,
            api_key: None,
            model: "m".into(),
            request_timeout: Duration::from_secs(1),
            ttft_timeout: None,
            headers: BTreeMap::new(),
            ignore_eos: true,
            max_connections: 4,
            extra_body: Default::default(),
        }
    }

    #[test]
    fn bodies_for_both_apis() {
        let c = Client::new(cfg(Api::Completions)).unwrap();
        assert_eq!(c.request_url(), "http://127.0.0.1:9/v1/completions");
        let v: serde_json::Value =
            serde_json::from_slice(c.prepare("hi \"x\"", 3, 8).body()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model":"m","prompt":"hi \"x\"","max_tokens":8,"stream":true,
                "stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0.0})
        );
        let mut chat = cfg(Api::Chat);
        chat.ignore_eos = false;
        let c = Client::new(chat).unwrap();
        assert_eq!(c.request_url(), "http://127.0.0.1:9/v1/chat/completions");
        let v: serde_json::Value = serde_json::from_slice(c.prepare("hi", 1, 2).body()).unwrap();
        assert_eq!(
            v["messages"],
            serde_json::json!([{"role":"user","content":"hi"}])
        );
        assert!(v.get("ignore_eos").is_none() && v.get("prompt").is_none());
    }

    #[test]
    fn a_chat_body_carries_a_whole_conversation_in_order() {
        let c = Client::new(cfg(Api::Chat)).unwrap();
        let turn = |role, content| ChatMessage { role, content };
        let req = c.prepare_chat(
            None,
            &[
                turn(ChatRole::User, "one"),
                turn(ChatRole::Assistant, "two \"2\""),
                turn(ChatRole::User, "three"),
            ],
            9,
            5,
        );
        let v: serde_json::Value = serde_json::from_slice(req.body()).unwrap();
        assert_eq!(
            v["messages"],
            serde_json::json!([{"role":"user","content":"one"},
                {"role":"assistant","content":"two \"2\""},{"role":"user","content":"three"}])
        );
        assert_eq!(v["max_tokens"], 5);
        assert_eq!(v["stream"], true);
        assert!(v.get("prompt").is_none());
        assert_eq!((req.input_tokens(), req.max_tokens()), (9, 5));
    }

    #[test]
    fn extra_body_fields_are_merged_and_a_temperature_there_replaces_greedy() {
        let mut c = cfg(Api::Chat);
        c.extra_body = serde_json::from_value(serde_json::json!({
            "top_k": 5, "chat_template_kwargs": {"enable_thinking": false}
        }))
        .unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(Client::new(c.clone()).unwrap().prepare("hi", 1, 2).body())
                .unwrap();
        assert_eq!(v["top_k"], 5);
        assert_eq!(v["chat_template_kwargs"]["enable_thinking"], false);
        assert_eq!(v["temperature"], 0.0);
        assert_eq!(v["max_tokens"], 2);
        c.extra_body
            .insert("temperature".into(), serde_json::json!(0.7));
        let text = Client::new(c).unwrap().prepare("hi", 1, 2).body().clone();
        let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(v["temperature"], 0.7);
        // Exactly one `temperature` key in the text sent (no duplicate for the server to pick).
        assert_eq!(
            String::from_utf8_lossy(&text)
                .matches("\"temperature\"")
                .count(),
            1
        );
    }

    #[test]
    fn a_query_is_kept_on_every_path_and_fragments_and_credentials_are_refused() {
        let mut c = cfg(Api::Chat);
        c.base_url = "https://x.openai.azure.com/openai/?api-version=2024-02-01".into();
        let client = Client::new(c.clone()).unwrap();
        assert_eq!(
            client.request_url(),
            "https://x.openai.azure.com/openai/v1/chat/completions?api-version=2024-02-01"
        );
        assert_eq!(
            client.models_url(),
            "https://x.openai.azure.com/openai/v1/models?api-version=2024-02-01"
        );
        assert_eq!(client.base_url(), "https://x.openai.azure.com/openai");
        c.base_url = "http://127.0.0.1:9/gw?key=sk-query-secret-77&v=1".into();
        let client = Client::new(c.clone()).unwrap();
        assert_eq!(
            client.redact(client.request_url()),
            "http://127.0.0.1:9/gw/v1/chat/completions?key=***&v=1"
        );
        c.base_url = "http://127.0.0.1:9/#frag".into();
        let e = Client::new(c.clone()).unwrap_err().to_string();
        assert!(e.contains("fragment"), "{e}");
        c.base_url = "http://alice:pw-in-url-1@127.0.0.1:9/".into();
        let e = Client::new(c).unwrap_err().to_string();
        assert!(
            e.contains("api_key_env") && !e.contains("pw-in-url-1") && !e.contains("alice"),
            "{e}"
        );
    }

    #[test]
    fn userinfo_is_stripped_even_from_urls_that_do_not_parse() {
        assert_eq!(without_userinfo("http://u:p@h:1/x@y"), "http://h:1/x@y");
        assert_eq!(
            without_userinfo("http://u:p@h:notaport"),
            "http://h:notaport"
        );
        assert_eq!(without_userinfo("u:p@h:8000"), "h:8000");
        assert_eq!(without_userinfo("http://h/?a=b@c"), "http://h/?a=b@c");
        assert_eq!(without_userinfo("sim"), "sim");
    }

    #[test]
    fn secret_headers_feed_the_redactor_with_what_they_carry() {
        let mut c = cfg(Api::Completions);
        // "alice:s3cret-pass-9" in base64
        c.headers.insert(
            "Authorization".into(),
            "Basic YWxpY2U6czNjcmV0LXBhc3MtOQ==".into(),
        );
        c.headers
            .insert("X-Trace".into(), "plain-visible-value".into());
        c.headers
            .insert("X-Env".into(), "from-env-value-123".into());
        let client = Client::new(c.clone())
            .unwrap()
            .with_secret_headers(&c.headers, &["X-Env".to_string()]);
        assert_eq!(
            client
                .redact("s3cret-pass-9 alice:s3cret-pass-9 plain-visible-value from-env-value-123"),
            "*** *** plain-visible-value ***"
        );
    }

    #[test]
    fn bad_config_is_refused_and_key_over_plain_http_warns() {
        let mut c = cfg(Api::Completions);
        c.base_url = "ftp://x".into();
        assert!(matches!(Client::new(c), Err(ClientError::BadUrl { .. })));
        let mut c = cfg(Api::Completions);
        c.headers.insert("bad header".into(), "v".into());
        assert!(matches!(Client::new(c), Err(ClientError::BadHeader { .. })));

        let mut c = cfg(Api::Completions);
        c.api_key = Some(ApiKey::new("k"));
        assert!(Client::new(c.clone()).unwrap().warnings().is_empty());
        c.base_url = "http://gateway.example".into();
        let client = Client::new(c.clone()).unwrap();
        assert_eq!(client.warnings().len(), 1);
        assert!(!format!("{client:?}").contains("Bearer k"));
        c.base_url = "https://gateway.example".into();
        assert!(Client::new(c).unwrap().warnings().is_empty());
    }
}
