//! A model mix's per-model breakdown of a rung (`model` a weighted list): each model's
//! counts, throughput and main latency distributions, written as the rung's `models` list.
//!
//! A rung gets the list only when its requests name a model (a mix), so other result files
//! are unchanged. Throughputs are over the rung's own duration (its first measured send to
//! its last completion), so the models' requests/s and tokens/s add up to the rung's.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::latency::{stats, Latency, Stats};
use super::read_error::ReadError;
use crate::record::RequestRecord;

/// The distributions each model reports, in report order.
pub const MODEL_LATENCIES: [Latency; 4] =
    [Latency::Ttft, Latency::Tpot, Latency::Itl, Latency::E2el];

/// One model's share of a rung.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelSummary {
    /// The model name as sent.
    pub model: String,
    /// Measured requests that named it (warmup and interrupted ones left out).
    pub num_prompts: u64,
    /// Of those, the successes.
    pub completed: u64,
    /// Of those, the failures.
    pub failed: u64,
    /// Prompt tokens of its successes.
    pub total_input_tokens: u64,
    /// Output tokens of its successes.
    pub total_output_tokens: u64,
    /// Its successes per second of the rung's duration.
    pub request_throughput: f64,
    /// Its output tokens per second of the rung's duration.
    pub output_throughput: f64,
    /// TTFT, TPOT, ITL and E2E of its successes, in ms (no token timings for a pooled rung).
    pub latency: BTreeMap<Latency, Stats>,
}

impl ModelSummary {
    /// The breakdown of a rung's measured, finished records over `duration_s` (the rung's),
    /// in the order the models first appear; empty when no record names a model.
    /// `pooled`: an embeddings rung, without token timings.
    pub fn of(measured: &[&RequestRecord], duration_s: f64, pooled: bool) -> Vec<ModelSummary> {
        let mut names: Vec<&str> = Vec::new();
        for r in measured {
            if let Some(m) = r.model.as_deref() {
                if !names.contains(&m) {
                    names.push(m);
                }
            }
        }
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        names
            .into_iter()
            .map(|name| {
                let mine: Vec<&RequestRecord> = measured
                    .iter()
                    .copied()
                    .filter(|r| r.model.as_deref() == Some(name))
                    .collect();
                let ok: Vec<&RequestRecord> = mine.iter().copied().filter(|r| r.ok()).collect();
                let mut latency = BTreeMap::new();
                latency.insert(
                    Latency::E2el,
                    stats(ok.iter().map(|r| ms(r.e2e())).collect()),
                );
                if !pooled {
                    super::latency::token_timings(&ok, &mut latency);
                }
                ModelSummary::from_counts(
                    name,
                    mine.len() as u64,
                    ok.len() as u64,
                    ok.iter().map(|r| u64::from(r.input_tokens)).sum(),
                    ok.iter().map(|r| u64::from(r.output_tokens)).sum(),
                    duration_s,
                    latency,
                )
            })
            .collect()
    }

    /// A model's summary from its counts and distributions (the throughputs follow from the
    /// rung's `duration_s`): how the writer and the results check build it alike.
    pub fn from_counts(
        model: &str,
        num_prompts: u64,
        completed: u64,
        total_input_tokens: u64,
        total_output_tokens: u64,
        duration_s: f64,
        latency: BTreeMap<Latency, Stats>,
    ) -> ModelSummary {
        let per_s = |x: u64| {
            if duration_s > 0.0 {
                x as f64 / duration_s
            } else {
                0.0
            }
        };
        ModelSummary {
            model: model.to_string(),
            num_prompts,
            completed,
            failed: num_prompts.saturating_sub(completed),
            total_input_tokens,
            total_output_tokens,
            request_throughput: per_s(completed),
            output_throughput: per_s(total_output_tokens),
            latency,
        }
    }

    /// Failed / measured; 0 when nothing was measured.
    pub fn error_rate(&self) -> f64 {
        if self.num_prompts == 0 {
            0.0
        } else {
            self.failed as f64 / self.num_prompts as f64
        }
    }

    /// The stats of one distribution; NaN statistics when this model has none (a pooled
    /// rung's TTFT, or a distribution the breakdown does not keep).
    pub fn stats(&self, which: Latency) -> Stats {
        self.latency
            .get(&which)
            .copied()
            .unwrap_or_else(Stats::absent)
    }

    /// The JSON object of one model: `model`, the counts, and the rung's key names for its
    /// throughputs and distributions (`median_ttft_ms`, `count_tpot`, …).
    pub fn to_json(&self, num: fn(f64) -> Value) -> Value {
        let mut m = Map::new();
        m.insert("model".into(), Value::from(self.model.clone()));
        for (k, v) in [
            ("num_prompts", self.num_prompts),
            ("completed", self.completed),
            ("failed", self.failed),
            ("total_input_tokens", self.total_input_tokens),
            ("total_output_tokens", self.total_output_tokens),
        ] {
            m.insert(k.into(), v.into());
        }
        m.insert("error_rate".into(), num(self.error_rate()));
        m.insert("request_throughput".into(), num(self.request_throughput));
        m.insert("output_throughput".into(), num(self.output_throughput));
        for (which, s) in &self.latency {
            m.insert(format!("count_{}", which.key()), s.count.into());
            for (stat, get, _) in Stats::FIELDS {
                m.insert(format!("{stat}_{}_ms", which.key()), num(get(s)));
            }
        }
        Value::Object(m)
    }

    /// Read one model's object back; names the first missing or mistyped key.
    pub fn from_json(v: &Value) -> Result<ModelSummary, ReadError> {
        let m = v
            .as_object()
            .ok_or_else(|| ReadError::malformed("a `models` entry is not an object"))?;
        let name = m
            .get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| ReadError::malformed("a `models` entry has no `model` name"))?;
        let u = |k: &str| -> Result<u64, ReadError> {
            m.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| ReadError::not_integer(k).in_model(name))
        };
        let f = |k: &str| -> Result<f64, ReadError> {
            m.get(k)
                .and_then(Value::as_f64)
                .ok_or_else(|| ReadError::not_numeric(k).in_model(name))
        };
        let mut latency = BTreeMap::new();
        for which in MODEL_LATENCIES {
            let Some(count) = m.get(&format!("count_{}", which.key())) else {
                continue;
            };
            let mut s = Stats {
                count: count.as_u64().ok_or_else(|| {
                    ReadError::not_a_count(&format!("count_{}", which.key())).in_model(name)
                })?,
                ..Stats::default()
            };
            for (stat, _, set) in Stats::FIELDS {
                // An empty distribution's statistics are written as null (NaN).
                let k = format!("{stat}_{}_ms", which.key());
                set(
                    &mut s,
                    m.get(&k).and_then(Value::as_f64).unwrap_or(f64::NAN),
                );
            }
            latency.insert(which, s);
        }
        let failed = u("failed")?;
        let out = ModelSummary {
            model: name.to_string(),
            num_prompts: u("num_prompts")?,
            completed: u("completed")?,
            failed,
            total_input_tokens: u("total_input_tokens")?,
            total_output_tokens: u("total_output_tokens")?,
            request_throughput: f("request_throughput")?,
            output_throughput: f("output_throughput")?,
            latency,
        };
        if out.completed.checked_add(out.failed) != Some(out.num_prompts) {
            return Err(ReadError::ModelCounts {
                completed: out.completed,
                failed: out.failed,
                num_prompts: out.num_prompts,
            }
            .in_model(name));
        }
        Ok(out)
    }

    /// A numeric value of this model by its key (`request_throughput`, `p99_tpot_ms`,
    /// `error_rate`, `completed`, …), as a gate rule with `model:` names it.
    pub fn metric(&self, key: &str) -> Option<f64> {
        let v = self.to_json(|x| {
            serde_json::Number::from_f64(x)
                .map(Value::Number)
                .unwrap_or(Value::Null)
        });
        v.get(key).and_then(Value::as_f64)
    }

    /// Every key [`ModelSummary::metric`] answers for a generating rung: what a gate rule
    /// with `model:` may name.
    pub fn metric_keys() -> Vec<String> {
        let mut keys: Vec<String> = [
            "num_prompts",
            "completed",
            "failed",
            "error_rate",
            "total_input_tokens",
            "total_output_tokens",
            "request_throughput",
            "output_throughput",
        ]
        .map(String::from)
        .to_vec();
        for which in MODEL_LATENCIES {
            keys.push(format!("count_{}", which.key()));
            for (stat, _, _) in Stats::FIELDS {
                keys.push(format!("{stat}_{}_ms", which.key()));
            }
        }
        keys
    }
}

/// The `models` list of a rung's JSON, when it has one.
pub fn read_list(m: &Map<String, Value>) -> Result<Vec<ModelSummary>, ReadError> {
    match m.get("models") {
        None => Ok(Vec::new()),
        Some(Value::Array(list)) => list.iter().map(ModelSummary::from_json).collect(),
        Some(_) => Err(ReadError::malformed("key `models` is not a list")),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::record::{ErrorClass, RequestError};

    fn rec(model: &str, ok: bool, e2e_ms: u64) -> RequestRecord {
        RequestRecord {
            sent: Duration::ZERO,
            first_token: Some(Duration::from_millis(10)),
            end: Duration::from_millis(e2e_ms),
            input_tokens: 5,
            output_tokens: 11,
            error: (!ok).then(|| RequestError {
                class: ErrorClass::Server5xx,
                status: Some(500),
                detail: String::new(),
            }),
            model: Some(Arc::from(model)),
            ..Default::default()
        }
    }

    #[test]
    fn each_model_gets_its_own_counts_and_latencies_over_the_rungs_duration() {
        let rs = [
            rec("base", true, 110),
            rec("lora", true, 210),
            rec("base", true, 110),
            rec("lora", false, 50),
        ];
        let refs: Vec<&RequestRecord> = rs.iter().collect();
        let by = ModelSummary::of(&refs, 2.0, false);
        assert_eq!(by.len(), 2);
        let (base, lora) = (&by[0], &by[1]);
        assert_eq!(
            (base.model.as_str(), base.completed, base.failed),
            ("base", 2, 0)
        );
        assert_eq!(
            (lora.model.as_str(), lora.completed, lora.failed),
            ("lora", 1, 1)
        );
        assert_eq!(base.request_throughput, 1.0);
        assert_eq!(lora.output_throughput, 5.5);
        assert_eq!(base.stats(Latency::Tpot).median, 10.0);
        assert_eq!(lora.stats(Latency::Tpot).median, 20.0);
        assert_eq!(lora.error_rate(), 0.5);
        // Round trip, and the keys a gate may name.
        let back = ModelSummary::from_json(&lora.to_json(|x| x.into())).unwrap();
        assert_eq!(&back, lora);
        assert_eq!(lora.metric("median_tpot_ms"), Some(20.0));
        assert!(ModelSummary::metric_keys().contains(&"p99_tpot_ms".to_string()));
        // Without a mix there is no breakdown.
        let plain = RequestRecord::default();
        assert!(ModelSummary::of(&[&plain], 1.0, false).is_empty());
        // A pooled rung has no token timings.
        let pooled = ModelSummary::of(&refs, 2.0, true);
        assert!(pooled[0].stats(Latency::Ttft).median.is_nan());
    }

    #[test]
    fn validate_knows_the_same_keys_a_model_has() {
        let keys = ModelSummary::metric_keys();
        for k in &keys {
            assert!(crate::scenario::models::is_model_metric(k), "{k}");
        }
        // And nothing else: every rung key outside the list is refused for `model:`.
        for k in crate::metrics::RungSummary::metric_keys() {
            assert_eq!(
                crate::scenario::models::is_model_metric(&k),
                keys.contains(&k),
                "{k}"
            );
        }
    }

    #[test]
    fn an_entry_whose_counts_do_not_add_up_is_refused() {
        let mut v = rec_json();
        v["failed"] = 5.into();
        let e = ModelSummary::from_json(&v).unwrap_err();
        assert!(
            matches!(&e, ReadError::InModel { model, source }
                if model == "m" && matches!(**source, ReadError::ModelCounts { failed: 5, .. })),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with("models[m]: completed (")
                && e.to_string()
                    .contains(") + failed (5) is not num_prompts ("),
            "{e}"
        );
    }

    fn rec_json() -> Value {
        let r = rec("m", true, 100);
        ModelSummary::of(&[&r], 1.0, false)[0].to_json(|x| x.into())
    }
}
