//! Simulator settings: command-line flags of `ladder sim` and the scenario's `sim:` section.
//! The scenario owns the type (its `sim:` key is one of its sections); the simulator
//! (`crate::sim`) reads it from here and re-exports it.
//!
//! Flags and scenario keys share names (`--max-num-seqs` ↔ `max_num_seqs`). docs/sim.md
//! describes the engine model and the capacity formula ([`SimConfig::capacity_rps`]).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Settings of the simulated engine. Every field is optional: a missing key takes the value of
/// [`SimConfig::default`] (container-level `serde(default)`); see docs/sim.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Seed of the simulator's random choices (output words and lengths, sampled faults).
    pub seed: u64,
    /// Clock speed: every modelled time (steps, prefill, queue-wait limit) is divided by it.
    pub speed: f64,
    /// Extra model names served besides `sim-model` (e.g. the scenario's `model`).
    pub served_model_names: Vec<String>,
    /// Served models with a speed of their own (a LoRA adapter decodes slower than its
    /// base): each is served, and decodes `speed` tokens a step (in (0, 1]; other names 1).
    pub models: Vec<SimModel>,
    /// Context length: prompt + max_tokens above it is refused with 400.
    pub max_model_len: u32,
    /// Most sequences running in one batch (vLLM `--max-num-seqs`).
    pub max_num_seqs: u32,
    /// KV-cache budget in tokens; each running sequence reserves prompt + max_tokens.
    pub kv_cache_tokens: u32,
    /// Token budget of one step (decode tokens + chunked prefill tokens).
    pub max_num_batched_tokens: u32,
    /// Fixed cost of one engine step, milliseconds.
    pub step_base_ms: f64,
    /// Added step cost per sequence in the batch, milliseconds.
    pub step_per_seq_ms: f64,
    /// Prefill cost per prompt token processed in a step, microseconds.
    pub prefill_per_token_us: f64,
    /// Multiplier of the decode part of a step (1.3 simulates a 30 % slower build).
    pub decode_scale: f64,
    /// Output tokens per streamed chunk.
    pub chunk_tokens: u32,
    /// Skip the engine model: admit everything, emit tokens as fast as the client reads.
    pub zero_cost: bool,
    /// Waiting-queue limit; a request arriving to a full queue is rejected at once.
    pub max_waiting: u32,
    /// Longest a request may wait for a batch slot before it is rejected, milliseconds (modelled time).
    pub max_queue_wait_ms: u64,
    /// HTTP status of a queue rejection: 429 or 503.
    pub reject_status: u16,
    /// `Retry-After` header value (seconds) on 429 and 503 responses.
    pub retry_after_s: u32,
    /// max_tokens when a request gives none (capped by the remaining context).
    pub default_max_tokens: u32,
    /// Extra prompt tokens counted (in usage, prefill and context) for every chat request,
    /// as a real server's chat template adds role markers; 0 counts the message text only.
    pub chat_template_tokens: u32,
    /// Chat answers start with this many tokens of reasoning, streamed in
    /// `delta.reasoning_content` (vLLM's reasoning-parser shape) and reported as
    /// `usage.completion_tokens_details.reasoning_tokens`, like a reasoning model; 0 is off.
    /// Completions are never affected.
    pub reasoning_tokens: u32,
    /// Model a prefix cache (vLLM's automatic prefix caching): a request's leading full
    /// blocks that earlier prompts computed are not prefilled again. Off by default.
    pub prefix_caching: bool,
    /// Tokens per prefix-cache block: only whole blocks are cached and matched.
    pub prefix_cache_block_size: u32,
    /// Capacity of the prefix cache in tokens (whole blocks); the least recently used
    /// blocks are evicted beyond it.
    pub prefix_cache_tokens: u32,
    /// Environment variable holding the API key to require; unset means no auth.
    pub api_key_env: Option<String>,
    /// Fraction of requests answered 500.
    pub fault_http_500: f64,
    /// Fraction of requests answered 429 with Retry-After.
    pub fault_http_429: f64,
    /// Fraction of requests whose connection is dropped mid-stream.
    pub fault_drop_mid_stream: f64,
    /// Fraction of streams with a non-JSON `data:` line mid-stream.
    pub fault_malformed_chunk: f64,
    /// Fraction of streams with an `{"error": ...}` object mid-stream.
    pub fault_stream_error: f64,
    /// Fraction of streams that stop sending mid-stream for `stall_ms`.
    pub fault_stall: f64,
    /// Fraction of requests answered 404 `model_not_found`.
    pub fault_unknown_model: f64,
    /// Length of a stall fault, milliseconds (wall clock, not divided by `speed`).
    pub stall_ms: u64,
    /// Run-to-run drift: the coefficient of variation of a speed factor drawn once per run
    /// (per repeat of a ladder; lognormal with mean 1), as a real server on a shared machine
    /// is faster on one run than the next. 0 (the default) draws no factor.
    pub drift: f64,
    /// Seed of the drift draws; run k of a simulator uses the k-th draw of this seed.
    pub drift_seed: u64,
    /// Background noise: the coefficient of variation of an independent factor (lognormal,
    /// mean 1) on every engine step's time. 0 (the default) keeps steps exact.
    pub step_jitter: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 0,
            speed: 1.0,
            served_model_names: Vec::new(),
            models: Vec::new(),
            max_model_len: 8192,
            max_num_seqs: 64,
            kv_cache_tokens: 32768,
            max_num_batched_tokens: 2048,
            step_base_ms: 10.0,
            step_per_seq_ms: 0.5,
            prefill_per_token_us: 20.0,
            decode_scale: 1.0,
            chunk_tokens: 1,
            zero_cost: false,
            max_waiting: 64,
            max_queue_wait_ms: 5000,
            reject_status: 429,
            retry_after_s: 1,
            default_max_tokens: 256,
            chat_template_tokens: 0,
            reasoning_tokens: 0,
            prefix_caching: false,
            prefix_cache_block_size: 16,
            prefix_cache_tokens: 32768,
            api_key_env: None,
            fault_http_500: 0.0,
            fault_http_429: 0.0,
            fault_drop_mid_stream: 0.0,
            fault_malformed_chunk: 0.0,
            fault_stream_error: 0.0,
            fault_stall: 0.0,
            fault_unknown_model: 0.0,
            stall_ms: 600_000,
            drift: 0.0,
            drift_seed: 0,
            step_jitter: 0.0,
        }
    }
}

/// The model name always served.
pub const DEFAULT_MODEL: &str = "sim-model";

/// A served model with its own decode speed (`sim.models`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimModel {
    /// The served name (a base model or an adapter).
    pub name: String,
    /// Its decode speed relative to the engine's, in (0, 1]: 0.5 makes its TPOT about twice
    /// the engine's step (its first token and its prefill are not slowed).
    #[serde(default = "full_speed")]
    pub speed: f64,
}

fn full_speed() -> f64 {
    1.0
}

impl SimConfig {
    /// Every problem with the settings, one message each; empty when usable.
    pub fn problems(&self) -> Vec<String> {
        self.keyed_problems().into_iter().map(|(_, m)| m).collect()
    }

    /// [`SimConfig::problems`] with the `sim:` key each one is about (the first key named).
    pub fn keyed_problems(&self) -> Vec<(&'static str, String)> {
        let mut p: Vec<(&'static str, String)> = Vec::new();
        let pos = |name: &'static str, v: f64, p: &mut Vec<(&'static str, String)>| {
            if !(v.is_finite() && v > 0.0) {
                p.push((
                    name,
                    format!("sim.{name} must be a positive number, got {v}"),
                ));
            }
        };
        let nonneg = |name: &'static str, v: f64, p: &mut Vec<(&'static str, String)>| {
            if !(v.is_finite() && v >= 0.0) {
                p.push((name, format!("sim.{name} must be >= 0, got {v}")));
            }
        };
        pos("speed", self.speed, &mut p);
        for (name, v) in [("drift", self.drift), ("step_jitter", self.step_jitter)] {
            if !(0.0..=1.0).contains(&v) {
                p.push((
                    name,
                    format!("sim.{name} must be a coefficient of variation in [0, 1], got {v}"),
                ));
            }
        }
        pos("decode_scale", self.decode_scale, &mut p);
        nonneg("step_base_ms", self.step_base_ms, &mut p);
        nonneg("step_per_seq_ms", self.step_per_seq_ms, &mut p);
        nonneg("prefill_per_token_us", self.prefill_per_token_us, &mut p);
        for (name, v) in [
            ("max_model_len", self.max_model_len),
            ("max_num_seqs", self.max_num_seqs),
            ("chunk_tokens", self.chunk_tokens),
            ("default_max_tokens", self.default_max_tokens),
        ] {
            if v == 0 {
                p.push((name, format!("sim.{name} must be at least 1")));
            }
        }
        if self.prefix_caching {
            if self.prefix_cache_block_size == 0 {
                p.push((
                    "prefix_cache_block_size",
                    "sim.prefix_cache_block_size must be at least 1".into(),
                ));
            } else if self.prefix_cache_tokens < self.prefix_cache_block_size {
                p.push((
                    "prefix_cache_tokens",
                    format!(
                        "sim.prefix_cache_tokens ({}) must hold at least one block of \
                         sim.prefix_cache_block_size ({}) tokens",
                        self.prefix_cache_tokens, self.prefix_cache_block_size
                    ),
                ));
            }
        }
        if self.kv_cache_tokens < self.max_model_len {
            p.push(("kv_cache_tokens", format!(
                "sim.kv_cache_tokens ({}) must be >= sim.max_model_len ({}) so any valid request fits",
                self.kv_cache_tokens, self.max_model_len
            )));
        }
        if self.max_num_batched_tokens < self.max_num_seqs {
            p.push((
                "max_num_batched_tokens",
                format!(
                    "sim.max_num_batched_tokens ({}) must be >= sim.max_num_seqs ({})",
                    self.max_num_batched_tokens, self.max_num_seqs
                ),
            ));
        }
        for m in &self.models {
            if !(m.speed.is_finite() && m.speed > 0.0 && m.speed <= 1.0) {
                p.push((
                    "models",
                    format!(
                        "sim.models: `{}` has speed {}; a model's speed is in (0, 1] \
                         (a fraction of the engine's decode rate)",
                        m.name, m.speed
                    ),
                ));
            }
            if m.name.trim().is_empty() {
                p.push((
                    "models",
                    "sim.models: a model name must not be empty".into(),
                ));
            }
        }
        if self.reject_status != 429 && self.reject_status != 503 {
            p.push((
                "reject_status",
                format!(
                    "sim.reject_status must be 429 or 503, got {}",
                    self.reject_status
                ),
            ));
        }
        let mut sum = 0.0;
        for (name, v) in self.fault_fractions() {
            if !(0.0..=1.0).contains(&v) {
                p.push((
                    name,
                    format!("sim.{name} must be a fraction in [0, 1], got {v}"),
                ));
            }
            sum += v;
        }
        if sum > 1.0 + 1e-9 {
            p.push((
                "fault_http_500",
                format!("sim.fault_* fractions add up to {sum}, more than 1"),
            ));
        }
        p
    }

    /// The fault fractions by scenario key, in the order a random draw walks them.
    pub fn fault_fractions(&self) -> [(&'static str, f64); 7] {
        [
            ("fault_http_500", self.fault_http_500),
            ("fault_http_429", self.fault_http_429),
            ("fault_drop_mid_stream", self.fault_drop_mid_stream),
            ("fault_malformed_chunk", self.fault_malformed_chunk),
            ("fault_stream_error", self.fault_stream_error),
            ("fault_stall", self.fault_stall),
            ("fault_unknown_model", self.fault_unknown_model),
        ]
    }

    /// Decode speed of the served model `name` (`sim.models`; 1 for any other name).
    pub fn model_speed(&self, name: &str) -> f64 {
        self.models
            .iter()
            .find(|m| m.name == name)
            .map_or(1.0, |m| m.speed)
    }

    /// Served model names: `sim-model`, `served_model_names`, then `models`' names, without
    /// duplicates.
    pub fn model_names(&self) -> Vec<String> {
        let mut names = vec![DEFAULT_MODEL.to_string()];
        let with_speed = self.models.iter().map(|m| &m.name);
        for n in self.served_model_names.iter().chain(with_speed) {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        names
    }

    /// Most sequences that can run together for requests of this shape:
    /// `min(max_num_seqs, kv_cache_tokens / (input + output))`.
    pub fn batch_limit(&self, input_tokens: u32, output_tokens: u32) -> u32 {
        let per_seq = (input_tokens + output_tokens).max(1);
        self.max_num_seqs.min(self.kv_cache_tokens / per_seq).max(1)
    }

    /// Saturated request throughput (req/s, wall clock) for requests of `input_tokens` in and
    /// exactly `output_tokens` out:
    ///
    /// `speed / (out × decode_scale × (step_base/B + step_per_seq) + in × prefill_per_token)`
    /// with `B = batch_limit(in, out)` and times in seconds. Every request takes `out` steps
    /// in a full batch of `B`, paying `step_per_seq` in each and a `1/B` share of `step_base`.
    pub fn capacity_rps(&self, input_tokens: u32, output_tokens: u32) -> f64 {
        let b = f64::from(self.batch_limit(input_tokens, output_tokens));
        let decode_ms = f64::from(output_tokens)
            * self.decode_scale
            * (self.step_base_ms / b + self.step_per_seq_ms);
        let prefill_ms = f64::from(input_tokens) * self.prefill_per_token_us / 1000.0;
        let per_request_ms = decode_ms + prefill_ms;
        if self.zero_cost || per_request_ms <= 0.0 {
            return f64::INFINITY;
        }
        self.speed * 1000.0 / per_request_ms
    }

    /// True when no time is modelled: `zero_cost`, or every cost set to 0.
    pub fn is_zero_cost(&self) -> bool {
        self.zero_cost
            || (self.step_base_ms == 0.0
                && self.step_per_seq_ms == 0.0
                && self.prefill_per_token_us == 0.0)
    }

    /// The speed factor of run `run` (0-based): 1 without drift, else a lognormal draw with
    /// mean 1 and coefficient of variation about `drift`, the same for the same seed and run.
    pub fn drift_factor(&self, run: u64) -> f64 {
        lognormal_factor(
            self.drift,
            self.drift_seed ^ run.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        )
    }

    /// Modelled milliseconds as wall-clock time at this `speed`.
    pub(crate) fn wall(&self, modelled_ms: f64) -> Duration {
        // A tiny `speed` gives a modelled time beyond any Duration: saturate, never panic.
        Duration::try_from_secs_f64((modelled_ms / self.speed / 1000.0).max(0.0))
            .unwrap_or(Duration::from_secs(u64::from(u32::MAX)))
    }
}

/// A lognormal factor with mean 1 and log-scale deviation `cv` (its coefficient of
/// variation is sqrt(exp(cv²) − 1), within 0.1 % of `cv` up to 0.1), from one seeded draw.
pub(crate) fn lognormal_factor(cv: f64, seed: u64) -> f64 {
    use rand::SeedableRng;
    use rand_distr::Distribution;
    if cv <= 0.0 {
        return 1.0;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let z: f64 = rand_distr::StandardNormal.sample(&mut rng);
    (cv * z - cv * cv / 2.0).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/sim.md's example: a llama.cpp-like 4-slot server saturates between issue 31's
    /// rates 1.2 and 2 req/s for 64 in / 32 out; the defaults are far above them.
    #[test]
    fn the_llamacpp_like_example_saturates_at_the_top_rung() {
        let d = SimConfig::default().capacity_rps(64, 32);
        assert!((d - 44.9).abs() < 0.05, "{d}");
        let c = SimConfig {
            max_num_seqs: 4,
            step_base_ms: 30.0,
            prefill_per_token_us: 5000.0,
            ..SimConfig::default()
        };
        let cap = c.capacity_rps(64, 32);
        assert!((cap - 1000.0 / 576.0).abs() < 1e-9, "{cap}");
        assert!(cap > 1.2 && cap < 2.0);
    }

    #[test]
    fn defaults_are_valid_and_capacity_is_in_the_tens_for_short_requests() {
        let c = SimConfig::default();
        assert!(c.problems().is_empty(), "{:?}", c.problems());
        let cap = c.capacity_rps(128, 64);
        assert!((10.0..=30.0).contains(&cap), "capacity {cap}");
        // The seed's 512/256 shape is slower, and speed scales linearly.
        assert!(c.capacity_rps(512, 256) < cap / 2.0);
        let fast = SimConfig {
            speed: 10.0,
            ..c.clone()
        };
        assert!((fast.capacity_rps(128, 64) / cap - 10.0).abs() < 1e-9);
        let slow = SimConfig {
            decode_scale: 1.3,
            ..c
        };
        assert!(slow.capacity_rps(128, 64) < cap / 1.2);
    }

    #[test]
    fn empty_yaml_object_gives_defaults_and_unknown_keys_are_refused() {
        let c: SimConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, SimConfig::default());
        let c: SimConfig = serde_json::from_str(r#"{"speed": 20, "max_num_seqs": 8}"#).unwrap();
        assert_eq!(c.speed, 20.0);
        assert_eq!(c.max_num_seqs, 8);
        assert_eq!(c.step_base_ms, 10.0);
        assert!(serde_json::from_str::<SimConfig>(r#"{"sped": 2}"#).is_err());
    }

    #[test]
    fn problems_are_all_reported() {
        let c = SimConfig {
            speed: 0.0,
            reject_status: 500,
            fault_http_500: 0.7,
            fault_stall: 0.7,
            kv_cache_tokens: 10,
            ..SimConfig::default()
        };
        let p = c.problems();
        assert_eq!(p.len(), 4, "{p:?}");
    }

    #[test]
    fn drift_factors_are_seeded_mean_one_with_the_asked_spread() {
        let none = SimConfig::default();
        assert_eq!(none.drift_factor(0), 1.0);
        assert_eq!(none.drift_factor(7), 1.0);
        let c = SimConfig {
            drift: 0.05,
            drift_seed: 11,
            ..SimConfig::default()
        };
        assert_eq!(c.drift_factor(3), c.drift_factor(3));
        assert_ne!(c.drift_factor(0), c.drift_factor(1));
        let f: Vec<f64> = (0..2000).map(|k| c.drift_factor(k)).collect();
        let mean = f.iter().sum::<f64>() / f.len() as f64;
        let sd = (f.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / f.len() as f64).sqrt();
        assert!((mean - 1.0).abs() < 0.005, "{mean}");
        assert!((sd / mean - 0.05).abs() < 0.005, "{}", sd / mean);
        let bad = SimConfig {
            drift: 1.5,
            step_jitter: -0.1,
            ..SimConfig::default()
        };
        assert_eq!(bad.problems().len(), 2, "{:?}", bad.problems());
    }
}
