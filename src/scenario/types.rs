//! Scenario version 1: the Rust types a YAML scenario deserialises into.
//!
//! These types are the source of truth for `schemas/scenario.v1.json` (schemars).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::defaults::default_requests_per_rung;
pub use super::values::{DurationStr, MinChange, Threshold, ValueError};

/// The scenario format version this build writes and reads natively.
pub const CURRENT_VERSION: u32 = 1;

/// `tokenizer: server`: count with the server's `/tokenize`.
pub const TOKENIZER_SERVER: &str = "server";
/// `tokenizer: none`: no tokenizer; the server's usage counts dataset prompts.
pub const TOKENIZER_NONE: &str = "none";

/// A complete, versioned load-test scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Format version of this file. Required; this build reads version 1.
    pub version: u32,
    /// Name of the scenario; result folders are `results/<name>/<timestamp>/`.
    /// Letters, digits, `-`, `_` and `.` only.
    pub name: String,
    /// Free text shown in reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A base scenario this one changes: `extends: base.yaml` (relative to this file). It is
    /// read first and merged key by key (lists replaced, `null` removes a value); once
    /// loaded, this holds the whole chain as written.
    #[serde(default, skip_serializing_if = "super::Extends::is_empty")]
    pub extends: super::Extends,
    /// Where requests go and how they are authenticated.
    pub endpoint: Endpoint,
    /// Model name sent in every request (the server's served model name), or a weighted
    /// mix of names, `[{name: base, weight: 2}, {name: sql-lora, weight: 1}]`: each request
    /// sends one, drawn by `workload.seed` and its index (docs/endpoints.md).
    pub model: super::models::ModelSpec,
    /// The tokenizer: a Hugging Face `tokenizer.json` file, a model directory holding one
    /// (paths relative to the scenario file), a hub id `Org/Name[@revision]` read from the
    /// local Hugging Face cache (downloaded into it only with `tokenizer_download: true`),
    /// `server` (the server's own `POST /tokenize`: vLLM, SGLang, llama.cpp), or `none` (no
    /// tokenizer: jsonl / sharegpt prompts are sent uncounted and the server's usage counts
    /// them). A file named `server` or `none` is written `./server`.
    pub tokenizer: PathBuf,
    /// Let ladder download a hub id's `tokenizer.json` into the Hugging Face cache when it is
    /// not there (never when `HF_HUB_OFFLINE` is set; `HF_TOKEN` is read for gated models).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokenizer_download: bool,
    /// What prompts are sent and how long the outputs are.
    pub workload: Workload,
    /// The rate ladder: how fast requests arrive on each rung.
    pub load: Load,
    /// Service-level objectives used for goodput and the knee.
    #[serde(default)]
    pub slo: Slo,
    /// Regression thresholds checked by `ladder compare` / `ladder gate`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gate: Vec<GateRule>,
    /// Optional single-variable experiment: the ladder is run once per value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    /// Settings of the built-in simulator, used when `endpoint.base_url` is `sim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim: Option<super::sim::SimConfig>,
    /// Scraping the server's Prometheus `/metrics` page during each rung (on by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<ServerMetrics>,
}

/// Where and how often the server's metrics page is scraped during each rung.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerMetrics {
    /// Scrape at all; `false` turns it off.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// The metrics page, when it is not `<base_url>/metrics` (e.g. a gateway in front hides
    /// it: give the engine's own address). Credentials in the URL are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Time between scrapes, e.g. `1s` (at least 100ms); one more is taken at each rung's
    /// measured start and end.
    #[serde(default = "default_scrape_interval")]
    pub interval: DurationStr,
    /// Environment variable holding a bearer token for the metrics page. Unset: the
    /// endpoint's key is sent when the page is on the endpoint's server, none otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
}

impl Default for ServerMetrics {
    fn default() -> Self {
        ServerMetrics {
            enabled: true,
            url: None,
            interval: default_scrape_interval(),
            api_key_env: None,
        }
    }
}

fn default_scrape_interval() -> DurationStr {
    DurationStr(Duration::from_secs(1))
}

/// The server under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    /// Base URL up to, not including, `/v1` (e.g. `http://127.0.0.1:8000`), or `sim` for the
    /// built-in simulator started in-process on a loopback port. A query (`?api-version=…`)
    /// is kept on every request path; credentials (`user:pw@`) and a fragment are refused.
    pub base_url: String,
    /// Which OpenAI-compatible API to call.
    #[serde(default)]
    pub api: Api,
    /// Name of the environment variable holding the API key (upper case, e.g. `OPENAI_API_KEY`).
    /// The key itself is never written anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Per-request timeout, e.g. `120s`.
    #[serde(default = "default_request_timeout")]
    pub request_timeout: DurationStr,
    /// Time allowed until the first token before the request counts as timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_timeout: Option<DurationStr>,
    /// Extra HTTP headers sent with every request. Secret-looking ones (auth, cookie, key,
    /// token, secret, password, …) and any whose value comes from `{{ env.NAME }}` are
    /// recorded as `<redacted>`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Engine-specific fields merged into every request body (`top_k`, `min_tokens`,
    /// `chat_template_kwargs`, a LoRA adapter's name, …). Fields ladder sets itself (`model`,
    /// `prompt`, `messages`, `max_tokens`, `stream`, `ignore_eos`, `n`, …) are refused;
    /// `temperature` here replaces ladder's 0.0.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_body: BTreeMap<String, serde_json::Value>,
}

fn default_request_timeout() -> DurationStr {
    DurationStr(Duration::from_secs(120))
}

/// OpenAI-compatible API flavour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST /v1/completions` with a `prompt`.
    #[default]
    Completions,
    /// `POST /v1/chat/completions` with `messages`.
    Chat,
    /// `POST /v1/embeddings` with `input` (a list of `workload.batch_size` texts of
    /// `workload.input_tokens` each): no tokens are generated, so a rung has no TTFT, TPOT or
    /// ITL, only latency, requests/s and input tokens/s (docs/endpoints.md).
    Embeddings,
    /// Anthropic's Messages API: `POST /v1/messages` with `messages`, the key in `x-api-key`
    /// and `anthropic-version: 2023-06-01`; streamed `content_block_delta` events, usage from
    /// `message_start` / `message_delta`. Same metrics as chat (docs/endpoints.md).
    Messages,
    /// OpenAI's Responses API: `POST /v1/responses` with `input`; streamed
    /// `response.output_text.delta` events, usage from `response.completed`. Same metrics as
    /// chat (docs/endpoints.md).
    Responses,
    /// `POST /v1/rerank` (Jina/Cohere shape, served by vLLM and llama.cpp) with a `query` of
    /// `workload.query_tokens` and `documents`, `workload.batch_size` of them, of
    /// `workload.input_tokens` each: scored, not generated, so measured as embeddings
    /// (docs/endpoints.md).
    Rerank,
}

impl Api {
    /// True for the APIs that generate tokens (TTFT, TPOT and ITL exist); false for pooling
    /// endpoints (embeddings), whose answer is one document.
    pub fn generates(self) -> bool {
        !matches!(self, Api::Embeddings | Api::Rerank)
    }

    /// The name as written in a scenario (`completions`, `chat`, `embeddings`).
    pub fn name(self) -> &'static str {
        match self {
            Api::Completions => "completions",
            Api::Chat => "chat",
            Api::Embeddings => "embeddings",
            Api::Messages => "messages",
            Api::Responses => "responses",
            Api::Rerank => "rerank",
        }
    }

    /// True for the APIs whose stream is typed events (`type` in every event: Messages,
    /// Responses) rather than OpenAI completion chunks.
    pub fn typed_events(self) -> bool {
        matches!(self, Api::Messages | Api::Responses)
    }
}

/// Prompt source and lengths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Where prompts come from.
    #[serde(default)]
    pub dataset: Dataset,
    /// Path of the jsonl / ShareGPT file (relative to the scenario file); required for those datasets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Prompt length in tokens (random dataset).
    #[serde(default = "default_input_tokens")]
    #[schemars(range(min = 1))]
    pub input_tokens: u32,
    /// Requested output length in tokens (`max_tokens`).
    #[serde(default = "default_output_tokens")]
    #[schemars(range(min = 1))]
    pub output_tokens: u32,
    /// Lengths are drawn uniformly from `[len*(1-r), len*(1+r)]`; 0 gives fixed lengths.
    #[serde(default)]
    pub range_ratio: f64,
    /// `endpoint.api: embeddings` and `rerank` only: inputs (embeddings) or documents
    /// (rerank) per request (default 1), each a prompt of `input_tokens`; a request's input
    /// tokens are the sum over its batch (rerank: over its query-document pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub batch_size: Option<u32>,
    /// `endpoint.api: rerank` only (and required there): the query's length in tokens; each
    /// of the request's `batch_size` documents is scored against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub query_tokens: Option<u32>,
    /// `endpoint.api: chat` only: synthetic images sent with every request as data URLs in
    /// its content parts (docs/endpoints.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<super::images::Images>,
    /// Ask the server to ignore end-of-sequence so outputs have exactly `output_tokens`.
    #[serde(default = "default_true")]
    pub ignore_eos: bool,
    /// Measured requests per rung (the seed's `--num-prompts`).
    #[serde(default = "default_requests_per_rung")]
    #[schemars(range(min = 1))]
    pub requests_per_rung: u32,
    /// Seed for prompt synthesis and arrival times.
    #[serde(default)]
    pub seed: u64,
    /// Optional minijinja template wrapping each prompt: `{{ prompt }}` is the synthesised text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_template: Option<String>,
    /// Which length `input_tokens` means: `text`, the prompt text ladder sends (vLLM's
    /// benchmark means this), or `server`, the prompt as the server counts it after its chat
    /// template (role markers, a default system prompt) or BOS: preflight measures that
    /// overhead with the server's usage and the text is shortened by it (random dataset only).
    #[serde(default, skip_serializing_if = "InputLength::is_text")]
    pub input_length: InputLength,
    /// Prompt groups sharing a leading prefix (a system prompt or document), so the
    /// server's prefix cache is exercised; random dataset only (docs/workloads.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_prefix: Option<SharedPrefix>,
    /// Multi-turn chat sessions: each request is a turn of a conversation that carries the
    /// earlier turns and answers as history (docs/workloads.md); `requests_per_rung` then
    /// counts sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<super::sessions::Sessions>,
    /// With `load.duration`: the number of distinct prompts a rung synthesises (warmup
    /// included) and then cycles in order for its duration (default 1000). A pool smaller
    /// than the requests sent repeats prompts, which a server's prefix cache may answer
    /// faster (docs/soak.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_pool: Option<u32>,
    /// Whether prompts may be ones a server has seen before: `cold` (the default), every
    /// run and every repeat sends prompt text no server has seen (a fresh nonce per run
    /// changes the words; lengths, per-request token counts, order and send times stay as
    /// the seed makes them), so a server's prefix cache cannot answer them; `warm`, every
    /// run sends the same text (the seed's), to measure a warm cache on purpose
    /// (docs/workloads.md).
    #[serde(default, skip_serializing_if = "CacheMode::is_cold")]
    pub cache: CacheMode,
    /// Tokens the server adds to every prompt, measured in preflight; set by the runner for
    /// `input_length: server`, never read from a scenario file.
    #[serde(skip)]
    #[schemars(skip)]
    pub server_overhead: u32,
    /// The nonce that makes `cache: cold` prompts new: set by the runner for each run and
    /// repeat (`None`: the seed's own text, as `warm` sends), never read from a scenario file.
    #[serde(skip)]
    #[schemars(skip)]
    pub cache_nonce: Option<u64>,
}

/// `workload.cache`: may a server's prompt cache already hold the prompts?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// New prompt text on every run and repeat: the server computes every prompt.
    #[default]
    Cold,
    /// The same prompt text on every run (the seed's): a server that has seen the
    /// scenario answers from its prompt cache.
    Warm,
}

impl CacheMode {
    /// The default, left out of run.json so folders written before the key compare equal.
    pub fn is_cold(&self) -> bool {
        *self == CacheMode::Cold
    }
}

/// `workload.shared_prefix`: `groups` groups of `prompts_per_group` prompts; the prompts of
/// a group start with the same `prefix_tokens` tokens and differ after them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    /// Length of each group's shared prefix, in tokens (at least 1).
    #[schemars(range(min = 1))]
    pub prefix_tokens: u32,
    /// Number of distinct prefixes (at least 1).
    #[schemars(range(min = 1))]
    pub groups: u32,
    /// Distinct prompts per group (at least 1); a rung of more requests than
    /// `groups × prompts_per_group` sends them again, in the same order.
    #[schemars(range(min = 1))]
    pub prompts_per_group: u32,
    /// Whether `workload.input_tokens` counts the prefix: `true` (the default), the whole
    /// prompt is `input_tokens` long and its unique suffix `input_tokens − prefix_tokens`;
    /// `false`, the suffix is `input_tokens` long and the prompt `prefix_tokens` longer.
    /// Always written to run.json, so a result says which.
    #[serde(default = "default_true")]
    pub input_tokens_include_prefix: bool,
    /// Which repeat of the rung the prompts are for (0-based): each repeat gets prefixes of
    /// its own (same lengths, groups and order), so its first request of a group is a cache
    /// miss too. Set by the runner, never read from a scenario file.
    #[serde(skip)]
    #[schemars(skip)]
    pub repeat: u32,
}

impl SharedPrefix {
    /// Prompts this shape defines (`groups × prompts_per_group`).
    pub fn distinct_prompts(&self) -> u64 {
        u64::from(self.groups) * u64::from(self.prompts_per_group)
    }
}

/// What `workload.input_tokens` counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputLength {
    /// The prompt text, by the scenario's tokenizer.
    #[default]
    Text,
    /// The prompt as the server counts it (its `usage.prompt_tokens`).
    Server,
}

impl InputLength {
    fn is_text(&self) -> bool {
        *self == InputLength::Text
    }
}

fn default_input_tokens() -> u32 {
    512
}
fn default_output_tokens() -> u32 {
    256
}
fn default_true() -> bool {
    true
}

/// Prompt dataset kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dataset {
    /// Random token sequences of the requested length.
    #[default]
    Random,
    /// One JSON object per line with a `prompt` field (and optional `output_tokens`).
    Jsonl,
    /// A ShareGPT-format JSON file (first human turn is the prompt).
    Sharegpt,
}

/// The ladder: open-loop rates or closed-loop concurrency levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// Inter-arrival process.
    #[serde(default)]
    pub arrival: Arrival,
    /// Gamma shape: 1.0 is Poisson, below 1 is burstier, above 1 is smoother (gamma only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burstiness: Option<f64>,
    /// The first rung, run before `rates` and used as the reference for latency multiples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_rate: Option<f64>,
    /// Offered request rates in requests per second, strictly increasing (open loop). A
    /// ladder has either `rates` or `concurrency`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<f64>,
    /// Closed-loop rungs instead of `rates`: numbers of users, strictly increasing. Each
    /// user sends its next request when its previous one finished (plus `think_time`),
    /// until the rung's `requests_per_rung` (and warmup) requests are done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concurrency: Vec<u32>,
    /// With `concurrency`: how long each user waits after a request finished before it
    /// sends the next one, e.g. `500ms`. Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<DurationStr>,
    /// Replay a JSONL trace (timestamps and lengths) open loop instead of `rates`: one rung
    /// per replay speed (docs/traces.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<super::shapes::TraceLoad>,
    /// One rung whose offered rate rises from `from` to `to` over `over` instead of `rates`,
    /// reported window by window (docs/ramp.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<super::shapes::RampLoad>,
    /// Find the capacity at an SLO instead of running fixed rungs: probes chosen one after
    /// another until the highest level within the SLO is bracketed (docs/capacity.md).
    /// Replaces `rates` / `concurrency`; each probe is an ordinary rung of the result folder,
    /// and the search's path and answer go to `capacity.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<super::search::SearchLoad>,
    /// Pause between rungs, e.g. `10s`.
    #[serde(default = "default_cooldown")]
    pub cooldown: DurationStr,
    /// Cap on requests in flight; arrivals beyond it wait (their lag is recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrency: Option<u32>,
    /// Requests sent at the start of each rung and excluded from its metrics.
    #[serde(default)]
    pub warmup_requests: u32,
    /// Times every rung is measured (1 to 100). The whole ladder runs this many times in a
    /// row (rung order within each pass), so slow drift of the server or machine spreads over
    /// every rung instead of lining up with one; the result folder keeps every repeat, and
    /// the gate's intervals then include run-to-run noise (docs/gate.md).
    #[serde(default = "one_repeat", skip_serializing_if = "is_one_repeat")]
    #[schemars(range(min = 1, max = 100))]
    pub repeats: u32,
    /// Run each rung for this long instead of a count of requests (a soak), e.g. `60m`: no
    /// request is sent after it, and the rung ends when those in flight finish. Prompts are
    /// a pool of `workload.prompt_pool` cycled in order; the rung's files are updated every
    /// `interval` (docs/soak.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<DurationStr>,
    /// With `duration`: how often the rung prints a live line (throughput, TTFT, errors over
    /// the interval) and updates its result files, e.g. `10s` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<DurationStr>,
}

fn one_repeat() -> u32 {
    1
}

fn is_one_repeat(n: &u32) -> bool {
    *n == 1
}

/// Most repeats of a ladder (`load.repeats`, `--repeats`).
pub const MAX_REPEATS: u32 = 100;

fn default_cooldown() -> DurationStr {
    DurationStr(Duration::from_secs(10))
}

/// Inter-arrival process of a rung.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps (a Poisson process), like vLLM's default.
    #[default]
    Poisson,
    /// Gamma-distributed gaps with `burstiness` as the shape.
    Gamma,
    /// Evenly spaced sends.
    Constant,
}

/// Service-level objectives; a request meets the SLO when it succeeds and every set bound holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Time to first token bound, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Time per output token bound, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// End-to-end latency bound, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
    /// Highest acceptable error rate of a rung (0..1); the seed's overload line is 0.05.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate: Option<f64>,
}

/// One regression threshold on a named metric of `result_rate_<rate>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateRule {
    /// Metric key, e.g. `request_throughput`, `median_ttft_ms`, `p99_tpot_ms`, `error_rate`.
    pub metric: String,
    /// Fail when the candidate rises by more than this (`10%` relative or `50` absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_increase: Option<Threshold>,
    /// Fail when the candidate falls by more than this (`5%` relative or `0.5` absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_decrease: Option<Threshold>,
    /// Fail when the candidate value is above this bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Fail when the candidate value is below this bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Absolute floor of `max_increase` / `max_decrease`: a change is a regression only when
    /// it is also beyond this much, in the metric's unit (`5ms` or `0.005s` for `*_ms`
    /// metrics, `0.5` req/s for `request_throughput`). Default: the metric's own floor
    /// (docs/gate.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_change: Option<MinChange>,
    /// With a `model` mix: judge only this model's requests (its per-model breakdown);
    /// without it the rule judges the whole rung.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A single-variable experiment: run the whole ladder once for each value of one workload field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// The workload field that varies.
    pub field: SweepField,
    /// Its values, one ladder each.
    pub values: Vec<u32>,
}

/// Workload fields a sweep may vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SweepField {
    /// `workload.input_tokens`.
    InputTokens,
    /// `workload.output_tokens`.
    OutputTokens,
    /// `workload.images.width` and `height` together: square images of each value's side.
    ImageSize,
}

impl Scenario {
    /// The rungs' levels in run order: the baseline rate (if any) first, then `rates`; or
    /// the `concurrency` levels (user counts) of a closed-loop ladder; or the trace's replay
    /// speeds; or the ramp's final rate (its one rung); or a search's first probe.
    pub fn rungs(&self) -> Vec<f64> {
        // A search's probes are chosen as it goes: only its first is known.
        if let Some(s) = &self.load.search {
            return vec![s.start];
        }
        if let Some(t) = &self.load.trace {
            return t.speed.clone();
        }
        if let Some(r) = &self.load.ramp {
            return vec![r.to];
        }
        if self.load_kind() == super::LoadKind::Concurrency {
            return self
                .load
                .concurrency
                .iter()
                .map(|&c| f64::from(c))
                .collect();
        }
        let mut v: Vec<f64> = self.load.baseline_rate.into_iter().collect();
        v.extend(self.load.rates.iter().copied());
        v
    }

    /// Rate rungs, concurrency rungs (`load.concurrency` set), trace speeds (`load.trace`)
    /// or one ramp (`load.ramp`).
    pub fn load_kind(&self) -> super::LoadKind {
        if let Some(s) = &self.load.search {
            return match s.over {
                super::search::SearchOver::Rate => super::LoadKind::Rate,
                super::search::SearchOver::Users => super::LoadKind::Concurrency,
            };
        }
        if self.load.trace.is_some() {
            super::LoadKind::Trace
        } else if self.load.ramp.is_some() {
            super::LoadKind::Ramp
        } else if self.load.concurrency.is_empty() {
            super::LoadKind::Rate
        } else {
            super::LoadKind::Concurrency
        }
    }
}
