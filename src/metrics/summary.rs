//! `RungSummary`: the metrics of one rung, serialised as `result_rate_<rate>.json`.
//!
//! The JSON keeps vLLM `benchmark_serving` key names (`request_throughput`,
//! `median_ttft_ms`, `p99_tpot_ms`, `p99.9_itl_ms`, ...) so existing scripts keep working,
//! and adds what vLLM lacks (error classes, dispatch lag, latency from the scheduled time,
//! latency with failures included). The flat key layout is built here, in one place.

use crate::format::json_number as num;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use super::latency::{Latency, Stats};
use super::read_error::ReadError;
use super::tokens::TokenAccounting;

/// Everything measured on one rung.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RungSummary {
    /// The rung's level: its offered request rate (req/s), written as `rate` and as vLLM's
    /// `request_rate`; or, on a concurrency ladder (`load`), its number of users, written
    /// as `rate` and as vLLM's `max_concurrency` (with `request_rate` `"inf"`, as vLLM
    /// writes a concurrency run).
    pub rate: f64,
    /// What `rate` counts: requests per second (default) or closed-loop users. Written as
    /// `load` for a concurrency rung only, so rate rungs' files are unchanged.
    pub load: crate::scenario::LoadKind,
    /// Gamma shape of the arrivals, as vLLM means it: 1.0 for Poisson, infinite for constant
    /// (evenly spaced) arrivals, written `"inf"` (JSON has no infinity; vLLM writes an
    /// infinite `request_rate` the same way).
    pub burstiness: f64,
    /// Concurrency cap, if any.
    pub max_concurrency: Option<u32>,
    /// Measured requests (the seed's `--num-prompts`), warmup excluded.
    pub num_prompts: u64,
    /// Warmup requests sent before the measured ones.
    pub warmup_requests: u64,
    /// Wall time of the rung in seconds, first measured send to last measured completion.
    pub duration_s: f64,
    /// Measured requests that succeeded.
    pub completed: u64,
    /// Measured requests that failed (each in exactly one class).
    pub failed: u64,
    /// Failed counts by error class key (`auth`, `rate_limit`, ...); every class present.
    pub errors_by_class: BTreeMap<String, u64>,
    /// Prompt tokens of successful requests.
    pub total_input_tokens: u64,
    /// Output tokens of successful requests.
    pub total_output_tokens: u64,
    /// Completed requests per second (vLLM `request_throughput`; the seed's QPS).
    pub request_throughput: f64,
    /// Completed requests meeting every SLO, per second (vLLM `request_goodput`).
    pub request_goodput: f64,
    /// Output tokens per second.
    pub output_throughput: f64,
    /// Input plus output tokens per second.
    pub total_token_throughput: f64,
    /// Measured requests sent per second over the sending window: did the client keep up?
    pub achieved_rate: f64,
    /// Highest number of requests in flight at once: exact, from every request's send and
    /// end time (warmup and failures included; vLLM counts successful requests only).
    pub max_concurrent_requests: u64,
    /// vLLM's peak output rate: the most token chunks received in one whole second since the
    /// first successful send. NaN when a file predates the key.
    pub max_output_tokens_per_s: f64,
    /// Successful requests whose output count did not come from the server's usage
    /// (re-tokenized text, or counted chunks).
    pub retokenized_outputs: u64,
    /// Prompts whose re-tokenized length missed the requested input length.
    pub inexact_prompts: u64,
    /// True when the rung was cut short (interrupt); its numbers cover what finished.
    pub interrupted: bool,
    /// Requests (warmup included) still in flight when the run was stopped, abandoned after
    /// the grace period: request lines of class `interrupted`, in no other count here (the
    /// client's stop, not the server's fault). Sent = `warmup_requests` + `completed` +
    /// `failed` + this. Written only when above 0.
    pub interrupted_requests: u64,
    /// Requested vs server-counted tokens (the token accounting contract, issue 15).
    pub tokens: TokenAccounting,
    /// TTFC and reasoning tokens, when any successful request reasoned.
    pub reasoning: Option<super::reasoning::Reasoning>,
    /// TTFT of cold vs warm requests, for a shared-prefix workload.
    pub prefix: Option<super::prefix::PrefixSplit>,
    /// Sessions and TTFT by turn, for a multi-turn session workload.
    pub sessions: Option<super::sessions::SessionSummary>,
    /// Latency distributions, in milliseconds.
    pub latency: BTreeMap<Latency, Stats>,
    /// The server's own metrics over the rung (`server_*` keys); empty when not scraped.
    pub server: crate::servermetrics::ServerSummary,
    /// With `load.repeats` of two or more: each repeat's own summary, in order (this one is
    /// then their pool, see `metrics::repeats`). Empty for a rung measured once.
    pub repeats: Vec<RungSummary>,
    /// A trace replay's or a ramp's mean offered rate (scheduled requests over the span of
    /// their send times), written as vLLM's `request_rate`; `None` for other rungs.
    pub offered_rate: Option<f64>,
    /// A ramp rung's report window by window (`ramp` key); `None` for other rungs.
    pub ramp: Option<super::ramp_report::RampReport>,
    /// The pooling API of a rung that generated no tokens (`embeddings`), written as `api`:
    /// its TTFT, TPOT, ITL and scheduled-TTFT keys are absent (not 0), and `input_throughput`
    /// is written. `None` for a generation rung (no `api` key, as before it existed).
    pub pooling: Option<crate::scenario::Api>,
    /// With a `model` mix: each model's share of the rung, in order of first appearance
    /// (`models` key); empty without a mix (no key).
    pub models: Vec<super::models::ModelSummary>,
}

impl RungSummary {
    /// Failed / (completed + failed); 0 when nothing was measured.
    pub fn error_rate(&self) -> f64 {
        let n = self.completed.saturating_add(self.failed);
        if n == 0 {
            0.0
        } else {
            self.failed as f64 / n as f64
        }
    }

    /// Measured requests that failed on the client itself (out of open files, local ports,
    /// socket buffers): they never reached the server and say nothing about it.
    pub fn client_failures(&self) -> u64 {
        self.errors_by_class
            .get(crate::record::CLIENT_RESOURCE_KEY)
            .copied()
            .unwrap_or(0)
    }

    /// Requests the server refused as malformed or unauthorised (`client_4xx`, `auth`): a
    /// deterministic answer to what was sent (a prompt longer than the context, an unknown
    /// model, a bad parameter, a missing key), never a sign of overload.
    pub fn rejected(&self) -> u64 {
        ["client_4xx", "auth"]
            .iter()
            .map(|k| self.errors_by_class.get(*k).copied().unwrap_or(0))
            .fold(0u64, u64::saturating_add)
    }

    /// True when most of the rung's failures are [`RungSummary::rejected`] ones: its error
    /// rate says the requests are wrong, not that the server is overloaded.
    pub fn mostly_rejected(&self) -> bool {
        let failed = self.failed.saturating_sub(self.client_failures());
        failed > 0 && self.rejected().saturating_mul(2) >= failed
    }

    /// Failed / measured among the requests the client could actually send: the error rate
    /// of the server, with client-side failures left out of both counts.
    pub fn server_error_rate(&self) -> f64 {
        let client = self.client_failures();
        let n = self
            .completed
            .saturating_add(self.failed)
            .saturating_sub(client);
        if n == 0 {
            0.0
        } else {
            self.failed.saturating_sub(client) as f64 / n as f64
        }
    }

    /// The distributions this rung has, in report order: [`Latency::ALL`] but the token
    /// timings for a pooled rung.
    pub fn latencies(&self) -> impl Iterator<Item = Latency> {
        let pooled = self.pooling.is_some();
        Latency::ALL
            .into_iter()
            .filter(move |l| !(pooled && l.is_token_timing()))
    }

    /// True when the rung has distribution `which` (a pooled rung has no token timings).
    pub fn has(&self, which: Latency) -> bool {
        !(self.pooling.is_some() && which.is_token_timing())
    }

    /// Input tokens per second (the pooled rungs' throughput in tokens; for a generation rung
    /// `total_token_throughput` minus `output_throughput`).
    pub fn input_throughput(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.total_input_tokens as f64 / self.duration_s
        } else {
            0.0
        }
    }

    /// The stats of one distribution (zeroed when absent). A distribution this rung cannot
    /// have ([`RungSummary::has`]: a pooled rung's TTFT) has no samples and NaN statistics,
    /// which every renderer shows as "not recorded", never as 0.
    pub fn stats(&self, which: Latency) -> Stats {
        if !self.has(which) {
            return Stats::absent();
        }
        if which == Latency::Ttfc {
            return self.reasoning.as_ref().map(|r| r.ttfc).unwrap_or_default();
        }
        self.latency.get(&which).copied().unwrap_or_default()
    }

    /// The flat JSON object written to `result_rate_<rate>.json`.
    pub fn to_json_map(&self) -> Map<String, Value> {
        let mut m = self.flat_map();
        if !self.repeats.is_empty() {
            m.insert("repeats".into(), repeats_to_json(&self.repeats, num));
        }
        if let Some(s) = &self.sessions {
            s.put_table(&mut m);
        }
        if let Some(r) = &self.ramp {
            m.insert(
                "ramp".into(),
                serde_json::to_value(r).unwrap_or(Value::Null),
            );
        }
        if !self.models.is_empty() {
            m.insert(
                "models".into(),
                Value::Array(self.models.iter().map(|x| x.to_json(num)).collect()),
            );
        }
        m
    }

    /// One model's share of this rung, by name (a mix's breakdown).
    pub fn model(&self, name: &str) -> Option<&super::models::ModelSummary> {
        self.models.iter().find(|m| m.model == name)
    }

    /// The metric keys alone (without the per-repeat summaries).
    fn flat_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_string(), v);
        };
        put("rate", num(self.rate));
        if self.load.is_rate() {
            put("request_rate", num(self.rate));
        } else if let Some(offered) = self.offered_rate {
            put("load", Value::from(self.load.name()));
            put("request_rate", num(offered));
        } else {
            put("load", Value::from(self.load.name()));
            put("request_rate", Value::from("inf"));
        }
        put(
            "burstiness",
            if self.burstiness == f64::INFINITY {
                Value::from("inf")
            } else {
                num(self.burstiness)
            },
        );
        put(
            "max_concurrency",
            self.max_concurrency.map(Value::from).unwrap_or(Value::Null),
        );
        put("num_prompts", self.num_prompts.into());
        put("warmup_requests", self.warmup_requests.into());
        put("duration", num(self.duration_s));
        put("completed", self.completed.into());
        put("failed", self.failed.into());
        put("error_rate", num(self.error_rate()));
        put(
            "errors_by_class",
            Value::Object(
                self.errors_by_class
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(*v)))
                    .collect(),
            ),
        );
        put("total_input_tokens", self.total_input_tokens.into());
        put("total_output_tokens", self.total_output_tokens.into());
        put("request_throughput", num(self.request_throughput));
        put("qps", num(self.request_throughput));
        put("request_goodput", num(self.request_goodput));
        put("output_throughput", num(self.output_throughput));
        put("total_token_throughput", num(self.total_token_throughput));
        put("achieved_rate", num(self.achieved_rate));
        put(
            "max_concurrent_requests",
            self.max_concurrent_requests.into(),
        );
        put("max_output_tokens_per_s", num(self.max_output_tokens_per_s));
        put("retokenized_outputs", self.retokenized_outputs.into());
        put("inexact_prompts", self.inexact_prompts.into());
        put("interrupted", self.interrupted.into());
        if self.interrupted_requests > 0 {
            put("interrupted_requests", self.interrupted_requests.into());
        }
        if let Some(api) = self.pooling {
            put("api", Value::from(api.name()));
            put("input_throughput", num(self.input_throughput()));
        }
        for which in self.latencies() {
            let s = self.stats(which);
            put(&format!("count_{}", which.key()), s.count.into());
            for (stat, get, _) in Stats::FIELDS {
                put(&format!("{stat}_{}_ms", which.key()), num(get(&s)));
            }
        }
        self.tokens.put(&mut m, num);
        if let Some(r) = &self.reasoning {
            r.put(&mut m, num);
        }
        if let Some(p) = &self.prefix {
            p.put(&mut m, num);
        }
        if let Some(s) = &self.sessions {
            s.put(&mut m, num);
        }
        self.server.write_into(&mut m);
        m
    }

    /// Read back a map written by [`RungSummary::to_json_map`]; names the first missing or
    /// mistyped key.
    pub fn from_json_map(m: &Map<String, Value>) -> Result<Self, ReadError> {
        let f = |k: &str| -> Result<f64, ReadError> {
            m.get(k)
                .and_then(Value::as_f64)
                .ok_or_else(|| ReadError::not_numeric(k))
        };
        let u = |k: &str| -> Result<u64, ReadError> {
            m.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| ReadError::not_integer(k))
        };
        let errors_by_class = match m.get("errors_by_class") {
            Some(Value::Object(o)) => o
                .iter()
                .map(|(k, v)| {
                    v.as_u64()
                        .map(|n| (k.clone(), n))
                        .ok_or_else(|| ReadError::not_a_count(&format!("errors_by_class.{k}")))
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(ReadError::missing("errors_by_class")),
        };
        let pooling = match m.get("api").and_then(Value::as_str) {
            None => None,
            Some("embeddings") => Some(crate::scenario::Api::Embeddings),
            Some("rerank") => Some(crate::scenario::Api::Rerank),
            Some(other) => {
                return Err(ReadError::Unknown {
                    key: "api",
                    found: other.into(),
                    expected: "embeddings, rerank",
                })
            }
        };
        let mut latency = BTreeMap::new();
        for which in Latency::ALL
            .into_iter()
            .filter(|l| !(pooling.is_some() && l.is_token_timing()))
        {
            let mut s = Stats {
                count: u(&format!("count_{}", which.key()))?,
                ..Stats::default()
            };
            for (stat, _, set) in Stats::FIELDS {
                set(&mut s, f(&format!("{stat}_{}_ms", which.key()))?);
            }
            latency.insert(which, s);
        }
        Ok(RungSummary {
            rate: f("rate")?,
            load: match m.get("load").and_then(Value::as_str) {
                None | Some("rate") => crate::scenario::LoadKind::Rate,
                Some("concurrency") => crate::scenario::LoadKind::Concurrency,
                Some("trace") => crate::scenario::LoadKind::Trace,
                Some("ramp") => crate::scenario::LoadKind::Ramp,
                Some(other) => {
                    return Err(ReadError::Unknown {
                        key: "load",
                        found: other.into(),
                        expected: "rate, concurrency, trace or ramp",
                    })
                }
            },
            burstiness: match m.get("burstiness") {
                Some(Value::String(s)) if s == "inf" => f64::INFINITY,
                _ => f("burstiness")?,
            },
            max_concurrency: m
                .get("max_concurrency")
                .and_then(Value::as_u64)
                .map(|v| v as u32),
            num_prompts: u("num_prompts")?,
            warmup_requests: u("warmup_requests")?,
            duration_s: f("duration")?,
            completed: u("completed")?,
            failed: u("failed")?,
            errors_by_class,
            total_input_tokens: u("total_input_tokens")?,
            total_output_tokens: u("total_output_tokens")?,
            request_throughput: f("request_throughput")?,
            request_goodput: f("request_goodput")?,
            output_throughput: f("output_throughput")?,
            total_token_throughput: f("total_token_throughput")?,
            achieved_rate: f("achieved_rate")?,
            max_concurrent_requests: u("max_concurrent_requests")?,
            max_output_tokens_per_s: m
                .get("max_output_tokens_per_s")
                .and_then(Value::as_f64)
                .unwrap_or(f64::NAN),
            retokenized_outputs: u("retokenized_outputs")?,
            inexact_prompts: u("inexact_prompts")?,
            interrupted: m
                .get("interrupted")
                .and_then(Value::as_bool)
                .ok_or_else(|| ReadError::missing("interrupted"))?,
            interrupted_requests: m
                .get("interrupted_requests")
                .map(|v| {
                    v.as_u64()
                        .ok_or_else(|| ReadError::not_a_count("interrupted_requests"))
                })
                .transpose()?
                .unwrap_or(0),
            tokens: TokenAccounting::get(m),
            reasoning: super::reasoning::Reasoning::get(m)?,
            prefix: super::prefix::PrefixSplit::get(m)?,
            sessions: super::sessions::SessionSummary::get(m)?,
            latency,
            server: crate::servermetrics::ServerSummary::read_from(m),
            repeats: match m.get("repeats") {
                None => Vec::new(),
                Some(v) => repeats_from_json(v)?,
            },
            offered_rate: match m.get("load").and_then(Value::as_str) {
                Some("trace" | "ramp") => m.get("request_rate").and_then(Value::as_f64),
                _ => None,
            },
            pooling,
            models: super::models::read_list(m)?,
            ramp: match m.get("ramp") {
                None => None,
                Some(v) => {
                    Some(
                        serde_json::from_value(v.clone()).map_err(|e| ReadError::Section {
                            key: "ramp",
                            reason: e.to_string(),
                        })?,
                    )
                }
            },
        })
    }

    /// Value of a numeric metric by its JSON key (`request_throughput`, `p99_ttft_ms`, ...).
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.flat_map().get(key).and_then(Value::as_f64)
    }

    /// Every numeric metric key a gate rule may name.
    pub fn metric_keys() -> Vec<String> {
        crate::scenario::metric_keys::rung_metric_keys()
    }
}

impl Serialize for RungSummary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json_map().serialize(s)
    }
}

impl<'de> Deserialize<'de> for RungSummary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = Map::deserialize(d)?;
        RungSummary::from_json_map(&m).map_err(serde::de::Error::custom)
    }
}

// The `repeats` object of a pooled summary: its JSON holds the repeats' own summaries, so it
// is written and read with the summary's.

/// Metrics whose per-repeat values and coefficient of variation a pooled summary reports.
pub const SPREAD_METRICS: [&str; 8] = [
    "request_throughput",
    "output_throughput",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "median_itl_ms",
    "median_e2el_ms",
    "error_rate",
];

/// Mean and coefficient of variation (sample standard deviation / mean; NaN for a zero mean
/// or fewer than two values).
pub fn mean_cv(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 || mean == 0.0 {
        return (mean, f64::NAN);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt() / mean.abs())
}

/// The `repeats` object of a pooled `result_rate_<rate>.json`: the count, the spread of
/// the main metrics (`values` per repeat, `mean`, `cv`), and every repeat's own summary.
fn repeats_to_json(runs: &[RungSummary], num: fn(f64) -> Value) -> Value {
    let maps: Vec<Map<String, Value>> = runs.iter().map(RungSummary::to_json_map).collect();
    let mut spread = Map::new();
    for key in SPREAD_METRICS {
        let values: Vec<f64> = maps
            .iter()
            .map(|m| m.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN))
            .collect();
        let (mean, cv) = mean_cv(&values);
        let mut o = Map::new();
        o.insert(
            "values".into(),
            Value::Array(values.iter().map(|v| num(*v)).collect()),
        );
        o.insert("mean".into(), num(mean));
        o.insert("cv".into(), num(cv));
        spread.insert(key.into(), Value::Object(o));
    }
    let mut m = Map::new();
    m.insert("count".into(), runs.len().into());
    m.insert("spread".into(), Value::Object(spread));
    m.insert(
        "runs".into(),
        Value::Array(maps.into_iter().map(Value::Object).collect()),
    );
    Value::Object(m)
}

/// Read the per-repeat summaries back from a `repeats` object.
fn repeats_from_json(v: &Value) -> Result<Vec<RungSummary>, ReadError> {
    let runs = v
        .get("runs")
        .and_then(Value::as_array)
        .ok_or_else(|| ReadError::malformed("`repeats` has no `runs` list"))?;
    let out = runs
        .iter()
        .enumerate()
        .map(|(i, r)| match r {
            Value::Object(m) => RungSummary::from_json_map(m).map_err(|e| ReadError::InRepeat {
                index: i,
                source: Box::new(e),
            }),
            _ => Err(ReadError::RepeatNotObject { index: i }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if out.len() < 2 {
        return Err(ReadError::malformed("`repeats` lists fewer than 2 runs"));
    }
    if out.iter().any(|r| !r.repeats.is_empty()) {
        return Err(ReadError::malformed(
            "`repeats.runs` holds a pooled summary",
        ));
    }
    if v.get("count").and_then(Value::as_u64) != Some(out.len() as u64) {
        return Err(ReadError::malformed(
            "`repeats.count` is not the number of runs",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_keeps_vllm_keys() {
        let mut r = RungSummary {
            rate: 5.0,
            burstiness: 1.0,
            num_prompts: 200,
            completed: 190,
            failed: 10,
            request_throughput: 4.8,
            ..Default::default()
        };
        r.errors_by_class.insert("rate_limit".into(), 10);
        r.latency.insert(
            Latency::Ttft,
            Stats {
                count: 190,
                median: 123.5,
                p999: 400.0,
                ..Default::default()
            },
        );
        let text = serde_json::to_string(&r).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["qps"], 4.8);
        assert_eq!(v["median_ttft_ms"], 123.5);
        assert_eq!(v["p99.9_ttft_ms"], 400.0);
        assert_eq!(v["error_rate"], 0.05);
        let back: RungSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(back.stats(Latency::Ttft).median, 123.5);
        assert_eq!(back.failed, 10);
        assert_eq!(back.metric("median_ttft_ms"), Some(123.5));
    }

    #[test]
    fn constant_arrivals_write_burstiness_inf_and_read_it_back() {
        let r = RungSummary {
            rate: 5.0,
            burstiness: f64::INFINITY,
            ..Default::default()
        };
        let text = serde_json::to_string(&r).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["burstiness"], "inf");
        let back: RungSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(back.burstiness, f64::INFINITY);
        // A file written before the key existed reads as "unknown", not 0.
        let mut m = r.to_json_map();
        m.remove("max_output_tokens_per_s");
        assert!(RungSummary::from_json_map(&m)
            .unwrap()
            .max_output_tokens_per_s
            .is_nan());
    }

    /// The numeric keys of a rung's JSON (and of its optional parts), in the order they are
    /// written: what [`RungSummary::metric_keys`] (the list `scenario::metric_keys` keeps)
    /// must name, no more and no fewer.
    fn keys_of_the_json() -> Vec<String> {
        let mut keys: Vec<String> = RungSummary::default()
            .to_json_map()
            .into_iter()
            .filter(|(k, _)| k != "max_concurrency" && k != "interrupted")
            .filter(|(_, v)| v.is_number())
            .map(|(k, _)| k)
            .collect();
        keys.extend(super::super::reasoning::Reasoning::keys());
        keys.extend(super::super::prefix::PrefixSplit::keys());
        keys.extend(super::super::sessions::SessionSummary::keys());
        keys.push("input_throughput".into());
        keys
    }

    #[test]
    fn metric_keys_are_the_numeric_keys_of_a_rung_json() {
        assert_eq!(RungSummary::metric_keys(), keys_of_the_json());
    }

    #[test]
    fn metric_keys_include_the_gate_defaults() {
        let keys = RungSummary::metric_keys();
        for k in [
            "request_throughput",
            "output_throughput",
            "median_ttft_ms",
            "p99_ttft_ms",
            "median_tpot_ms",
            "error_rate",
        ] {
            assert!(keys.iter().any(|x| x == k), "{k} missing");
        }
        assert!(!keys.iter().any(|x| x == "interrupted"));
    }
}
