//! Token accounting of one rung: the tokens ladder asked for and counted beside the ones the
//! server says it processed (its `usage`), so a template, a tokenizer mismatch or a
//! truncating server shows up instead of silently skewing token throughputs.

use std::borrow::Borrow;

use serde_json::{Map, Value};

use crate::record::RequestRecord;

/// Requested vs server-counted tokens, means over the rung's successful requests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenAccounting {
    /// Mean prompt tokens ladder sent (its own count of the synthesised prompt).
    pub requested_input_tokens: f64,
    /// Mean of the server's `prompt_tokens`, over requests whose usage had one and was
    /// trusted; `None` when no request had one.
    pub mean_server_input_tokens: Option<f64>,
    /// Mean `max_tokens` asked for.
    pub requested_output_tokens: f64,
    /// Mean output tokens as ladder counts them (usage when trusted, else its own count).
    pub mean_output_tokens: f64,
    /// Mean of the server's `completion_tokens`, over requests whose usage had one and was
    /// trusted; `None` when no request had one.
    pub mean_server_output_tokens: Option<f64>,
    /// Successful requests whose usage ladder trusted and used.
    pub server_usage_requests: u64,
    /// Measured requests whose usage was absurd and ignored.
    pub untrusted_usage: u64,
    /// Why the first of those was rejected.
    pub untrusted_usage_reason: Option<String>,
}

/// A count and a whole-token sum.
#[derive(Default)]
struct Sum {
    n: u64,
    sum: u64,
}

impl Sum {
    fn add(&mut self, v: Option<u32>) {
        if let Some(v) = v {
            self.n += 1;
            self.sum += u64::from(v);
        }
    }

    fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / self.n as f64)
    }
}

/// The sums of the successful requests' token counts.
#[derive(Default)]
struct Sums {
    input: Sum,
    server_input: Sum,
    requested_output: Sum,
    output: Sum,
    server_output: Sum,
}

impl Sums {
    fn add(&mut self, r: &RequestRecord) {
        self.input.add(Some(r.input_tokens));
        self.server_input.add(r.trusted_server_prompt_tokens());
        self.requested_output.add(Some(r.requested_output_tokens));
        self.output.add(Some(r.output_tokens));
        self.server_output.add(r.trusted_server_completion_tokens());
    }
}

impl TokenAccounting {
    /// From a rung's measured records (warmup excluded) and the successful ones among them.
    pub fn of(measured: &[&RequestRecord], ok: &[&RequestRecord]) -> TokenAccounting {
        Self::from_records(measured.iter().copied(), ok.iter().copied())
    }

    /// [`TokenAccounting::of`] over records passed by value or by reference (records, or
    /// request lines read back as records one at a time); each iterator is walked once.
    pub fn from_records<R: Borrow<RequestRecord>>(
        measured: impl Iterator<Item = R>,
        ok: impl Iterator<Item = R>,
    ) -> TokenAccounting {
        let mut rejected = measured.filter_map(|r| r.borrow().usage_rejected);
        let first_rejected = rejected.next();
        let untrusted_usage = u64::from(first_rejected.is_some()) + rejected.count() as u64;
        // One walk of the successes (request lines read back make each record afresh):
        // whole-token sums, so the means are what one pass per mean gave.
        let mut sums = Sums::default();
        for r in ok {
            sums.add(r.borrow());
        }
        TokenAccounting {
            requested_input_tokens: sums.input.mean().unwrap_or(0.0),
            mean_server_input_tokens: sums.server_input.mean(),
            requested_output_tokens: sums.requested_output.mean().unwrap_or(0.0),
            mean_output_tokens: sums.output.mean().unwrap_or(0.0),
            mean_server_output_tokens: sums.server_output.mean(),
            server_usage_requests: sums.server_output.n,
            untrusted_usage,
            untrusted_usage_reason: first_rejected.map(str::to_string),
        }
    }

    /// Adds the keys of `result_rate_<rate>.json`.
    pub fn put(&self, m: &mut Map<String, Value>, num: fn(f64) -> Value) {
        let opt = |v: Option<f64>| v.map(num).unwrap_or(Value::Null);
        m.insert(
            "requested_input_tokens".into(),
            num(self.requested_input_tokens),
        );
        m.insert(
            "mean_server_input_tokens".into(),
            opt(self.mean_server_input_tokens),
        );
        m.insert(
            "requested_output_tokens".into(),
            num(self.requested_output_tokens),
        );
        m.insert("mean_output_tokens".into(), num(self.mean_output_tokens));
        m.insert(
            "mean_server_output_tokens".into(),
            opt(self.mean_server_output_tokens),
        );
        m.insert(
            "server_usage_requests".into(),
            self.server_usage_requests.into(),
        );
        m.insert("untrusted_usage".into(), self.untrusted_usage.into());
        m.insert(
            "untrusted_usage_reason".into(),
            self.untrusted_usage_reason
                .clone()
                .map(Value::from)
                .unwrap_or(Value::Null),
        );
    }

    /// Reads the keys back; a folder written before these keys existed reads as zeros and
    /// `None`s, so old results stay loadable.
    pub fn get(m: &Map<String, Value>) -> TokenAccounting {
        let f = |k: &str| m.get(k).and_then(Value::as_f64);
        let u = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
        TokenAccounting {
            requested_input_tokens: f("requested_input_tokens").unwrap_or(0.0),
            mean_server_input_tokens: f("mean_server_input_tokens"),
            requested_output_tokens: f("requested_output_tokens").unwrap_or(0.0),
            mean_output_tokens: f("mean_output_tokens").unwrap_or(0.0),
            mean_server_output_tokens: f("mean_server_output_tokens"),
            server_usage_requests: u("server_usage_requests"),
            untrusted_usage: u("untrusted_usage"),
            untrusted_usage_reason: m
                .get("untrusted_usage_reason")
                .and_then(Value::as_str)
                .map(String::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(input: u32, server_in: Option<u32>, out: u32, server_out: Option<u32>) -> RequestRecord {
        RequestRecord {
            input_tokens: input,
            server_prompt_tokens: server_in,
            output_tokens: out,
            server_completion_tokens: server_out,
            requested_output_tokens: 8,
            ..Default::default()
        }
    }

    #[test]
    fn means_pair_requested_with_server_counts() {
        let a = rec(128, Some(159), 8, Some(8));
        let b = rec(130, Some(161), 6, Some(6));
        let c = rec(126, None, 8, None);
        let all = [&a, &b, &c];
        let t = TokenAccounting::of(&all, &all);
        assert_eq!(t.requested_input_tokens, 128.0);
        assert_eq!(t.mean_server_input_tokens, Some(160.0));
        assert_eq!(t.requested_output_tokens, 8.0);
        assert_eq!(t.mean_server_output_tokens, Some(7.0));
        assert_eq!(t.server_usage_requests, 2);
        assert_eq!(t.untrusted_usage, 0);
    }

    #[test]
    fn rejected_usage_is_counted_and_left_out_of_the_means() {
        let good = rec(128, Some(128), 8, Some(8));
        let mut bad = rec(128, Some(128), 8, Some(4_000_000_000));
        bad.usage_rejected = Some("completion_tokens is more than twice max_tokens");
        let all = [&good, &bad];
        let t = TokenAccounting::of(&all, &all);
        assert_eq!(t.mean_server_output_tokens, Some(8.0));
        assert_eq!(t.server_usage_requests, 1);
        assert_eq!(t.untrusted_usage, 1);
        assert!(t.untrusted_usage_reason.unwrap().contains("max_tokens"));
    }

    #[test]
    fn keys_round_trip_and_old_files_read_as_empty() {
        let a = rec(128, Some(140), 8, Some(8));
        let t = TokenAccounting::of(&[&a], &[&a]);
        let mut m = Map::new();
        let num = |v: f64| Value::from(v);
        t.put(&mut m, num);
        assert_eq!(m["mean_server_input_tokens"], 140.0);
        assert_eq!(TokenAccounting::get(&m), t);
        assert_eq!(
            TokenAccounting::get(&Map::new()),
            TokenAccounting::default()
        );
    }
}
