//! Reasoning models: time to the first *content* token beside time to the first token of any
//! kind, and how many output tokens went to thinking.
//!
//! A reasoning model (DeepSeek-R1, Qwen3 with thinking, gpt-oss) streams its thinking in
//! `reasoning_content` / `reasoning` before the answer. Its TTFT is the first thinking token;
//! what a user waits for is the first token of the answer: TTFC. A rung gets these keys only
//! when at least one successful request reasoned, so result files of other models (and every
//! older file) are unchanged.

use serde_json::{Map, Value};

use super::latency::{stats, Stats, TTFC};
use super::read_error::ReadError;
use crate::record::RequestRecord;

/// The reasoning part of a rung's summary.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reasoning {
    /// Successful requests whose answer included reasoning.
    pub requests: u64,
    /// Output tokens spent reasoning, over successful requests (server-reported where the
    /// usage had `completion_tokens_details.reasoning_tokens`, else counted chunks).
    pub total_reasoning_tokens: u64,
    /// Output tokens of the answers' content: `total_output_tokens` minus the reasoning ones.
    pub total_content_tokens: u64,
    /// Time to the first content token from the send, in ms, over successful requests that
    /// produced content (for requests without reasoning it equals their TTFT).
    pub ttfc: Stats,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Reasoning {
    /// From a rung's successful measured requests; `None` when none of them reasoned.
    pub fn of(ok: &[&RequestRecord]) -> Option<Reasoning> {
        Reasoning::from_parts(
            ok.iter()
                .map(|r| (r.reasoning_tokens, r.output_tokens, r.ttfc().map(ms))),
        )
    }

    /// From `(reasoning tokens, output tokens, TTFC in ms)` of each successful measured
    /// request (records, or request lines read back); `None` when none of them reasoned.
    pub fn from_parts(
        ok: impl Iterator<Item = (Option<u32>, u32, Option<f64>)>,
    ) -> Option<Reasoning> {
        let (mut requests, mut reasoning, mut output) = (0u64, 0u64, 0u64);
        let mut ttfc = Vec::new();
        for (r, out, t) in ok {
            // 0 is no reasoning (older request lines may carry it).
            if let Some(r) = r.filter(|r| *r > 0) {
                requests += 1;
                reasoning = reasoning.saturating_add(u64::from(r));
            }
            output = output.saturating_add(u64::from(out));
            ttfc.extend(t);
        }
        (requests > 0).then(|| Reasoning {
            requests,
            total_reasoning_tokens: reasoning,
            total_content_tokens: output.saturating_sub(reasoning),
            ttfc: stats(ttfc),
        })
    }

    /// The metric keys a gate rule may name (present only in rungs that reasoned).
    pub fn keys() -> Vec<String> {
        let mut m = Map::new();
        Reasoning {
            requests: 1,
            ..Reasoning::default()
        }
        .put(&mut m, Value::from);
        m.into_iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, _)| k)
            .collect()
    }

    /// Adds the keys of `result_rate_<rate>.json`.
    pub fn put(&self, m: &mut Map<String, Value>, num: fn(f64) -> Value) {
        m.insert("reasoning_requests".into(), self.requests.into());
        m.insert(
            "total_reasoning_tokens".into(),
            self.total_reasoning_tokens.into(),
        );
        m.insert(
            "total_content_tokens".into(),
            self.total_content_tokens.into(),
        );
        m.insert(format!("count_{TTFC}"), self.ttfc.count.into());
        for (stat, get, _) in Stats::FIELDS {
            m.insert(format!("{stat}_{TTFC}_ms"), num(get(&self.ttfc)));
        }
    }

    /// Reads the keys back: `None` for a rung without them (no reasoning, or an older file);
    /// an error names a key that is present but broken.
    pub fn get(m: &Map<String, Value>) -> Result<Option<Reasoning>, ReadError> {
        let Some(requests) = m.get("reasoning_requests") else {
            return Ok(None);
        };
        let u = |k: &str| {
            m.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| ReadError::not_integer(k))
        };
        let requests = requests
            .as_u64()
            .ok_or_else(|| ReadError::not_a_count("reasoning_requests"))?;
        let mut ttfc = Stats {
            count: u(&format!("count_{TTFC}"))?,
            ..Stats::default()
        };
        for (stat, _, set) in Stats::FIELDS {
            let k = format!("{stat}_{TTFC}_ms");
            // null stands for NaN (an empty distribution), as elsewhere in the file.
            let v = match m.get(&k) {
                Some(Value::Null) => f64::NAN,
                Some(v) => v.as_f64().ok_or_else(|| ReadError::not_a_number(&k))?,
                None => return Err(ReadError::missing(&k)),
            };
            set(&mut ttfc, v);
        }
        Ok(Some(Reasoning {
            requests,
            total_reasoning_tokens: u("total_reasoning_tokens")?,
            total_content_tokens: u("total_content_tokens")?,
            ttfc,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rec(first: u64, content: Option<u64>, out: u32, reasoning: Option<u32>) -> RequestRecord {
        let ms = Duration::from_millis;
        RequestRecord {
            sent: ms(10),
            first_token: Some(ms(first)),
            first_content: content.map(ms),
            end: ms(500),
            output_tokens: out,
            reasoning_tokens: reasoning,
            ..Default::default()
        }
    }

    #[test]
    fn a_rung_without_reasoning_has_no_reasoning_keys() {
        let a = rec(30, Some(30), 8, None);
        assert_eq!(Reasoning::of(&[&a]), None);
    }

    #[test]
    fn ttfc_waits_for_the_answer_and_tokens_split() {
        // Thinks 20 tokens, answers from 210 ms; a second answers at once (no reasoning);
        // a third thinks until max_tokens and never answers.
        let a = rec(30, Some(210), 32, Some(20));
        let b = rec(40, Some(40), 16, None);
        let c = rec(50, None, 32, Some(32));
        let r = Reasoning::of(&[&a, &b, &c]).expect("reasoned");
        assert_eq!(r.requests, 2);
        assert_eq!(r.total_reasoning_tokens, 52);
        assert_eq!(r.total_content_tokens, 80 - 52);
        assert_eq!(r.ttfc.count, 2);
        assert_eq!(r.ttfc.max, 200.0);
        assert_eq!(r.ttfc.min, 30.0);
    }

    #[test]
    fn keys_round_trip_and_absent_keys_read_as_none() {
        let a = rec(30, Some(210), 32, Some(20));
        let r = Reasoning::of(&[&a]).expect("reasoned");
        let mut m = Map::new();
        r.put(&mut m, Value::from);
        assert_eq!(m["median_ttfc_ms"], 200.0);
        assert_eq!(Reasoning::get(&m), Ok(Some(r)));
        assert_eq!(Reasoning::get(&Map::new()), Ok(None));
        m.remove("p99_ttfc_ms");
        assert_eq!(
            Reasoning::get(&m).unwrap_err(),
            ReadError::Missing {
                key: "p99_ttfc_ms".into()
            }
        );
        assert!(Reasoning::keys().contains(&"p99_ttfc_ms".to_string()));
    }
}
