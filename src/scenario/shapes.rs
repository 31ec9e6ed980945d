//! Load shapes beside the rate and concurrency ladders: trace replay (`load.trace`, one rung
//! per replay speed) and the ramp rung (`load.ramp`, a rate rising over a duration). Their
//! types, the arithmetic of the ramp's rate, and their scenario checks.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diagnostic::Problem;
use super::identity::rate_label;
use super::limits::{self, show};
use super::values::DurationStr;
use super::yaml::Seg;

/// Slowest and fastest replay speed of a trace.
pub const MIN_SPEED: f64 = 0.001;
/// See [`MIN_SPEED`].
pub const MAX_SPEED: f64 = 1000.0;
/// Largest trace file read, bytes.
pub const MAX_TRACE_BYTES: u64 = 256 * 1024 * 1024;
/// Largest `load.trace.block_tokens`.
pub const MAX_BLOCK_TOKENS: u32 = 65_536;
/// Longest trace replay at its slowest speed (the soak's limit, `load.duration`).
pub const MAX_REPLAY: Duration = limits::MAX_DURATION;
/// Longest ramp.
pub const MAX_RAMP: Duration = Duration::from_secs(24 * 3600);
/// Most windows of a ramp's report.
pub const MAX_RAMP_WINDOWS: u32 = 100;

/// `load.trace`: replay a JSONL trace of timestamps and lengths (the Mooncake format),
/// open loop; each speed is one rung.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceLoad {
    /// JSONL trace, one request a line: `{"timestamp": ms, "input_length": n,
    /// "output_length": n, "hash_ids": [..]}` (`hash_ids` optional), relative to the scenario
    /// file.
    pub path: PathBuf,
    /// Replay speeds, strictly increasing; each is one rung. 2.0 sends every request at half
    /// its recorded offset from the first line (twice the rate). Default `[1.0]`.
    #[serde(default = "one_speed")]
    pub speed: Vec<f64>,
    /// Tokens per `hash_ids` block: requests whose `hash_ids` start alike share that many
    /// leading prompt tokens per shared id (Mooncake uses 512).
    #[serde(default = "default_block_tokens")]
    pub block_tokens: u32,
    /// Replay only the first this many lines of the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u32>,
}

fn one_speed() -> Vec<f64> {
    vec![1.0]
}

fn default_block_tokens() -> u32 {
    512
}

/// `load.ramp`: one rung whose offered rate rises from `from` to `to` over `over`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RampLoad {
    /// Offered rate at the start, requests per second.
    pub from: f64,
    /// Offered rate at the end, requests per second; above `from`.
    pub to: f64,
    /// Length of the ramp, e.g. `60s`.
    pub over: DurationStr,
    /// How the rate rises: `linear` (default) or `exponential` (the same factor every second).
    #[serde(default)]
    pub shape: RampShape,
    /// Equal time windows the ramp is reported in (achieved rate, TTFT, errors, SLO per
    /// window). Default 10.
    #[serde(default = "default_windows")]
    pub windows: u32,
}

fn default_windows() -> u32 {
    10
}

/// How a ramp's rate rises.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RampShape {
    /// `r(t) = from + (to - from) t / T`.
    #[default]
    Linear,
    /// `r(t) = from (to / from)^(t / T)`.
    Exponential,
}

impl RampLoad {
    fn secs(&self) -> f64 {
        self.over.0.as_secs_f64()
    }

    fn growth(&self) -> f64 {
        (self.to / self.from).ln() / self.secs()
    }

    /// Offered rate at `t` seconds into the ramp, requests per second.
    pub fn rate_at(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.secs());
        match self.shape {
            RampShape::Linear => self.from + (self.to - self.from) * t / self.secs(),
            RampShape::Exponential => self.from * (self.growth() * t).exp(),
        }
    }

    /// Expected arrivals in the first `t` seconds: the integral of the rate, `Λ(t)`.
    pub fn expected(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.secs());
        match self.shape {
            RampShape::Linear => {
                self.from * t + (self.to - self.from) * t * t / (2.0 * self.secs())
            }
            RampShape::Exponential => self.from * (self.growth() * t).exp_m1() / self.growth(),
        }
    }

    /// The time at which `expected` reaches `n` (its inverse), for `0 <= n <= Λ(T)`.
    pub fn time_of(&self, n: f64) -> f64 {
        match self.shape {
            RampShape::Linear => {
                let a = (self.to - self.from) / (2.0 * self.secs());
                // a t² + from t - n = 0, in the form that does not cancel when a is small.
                2.0 * n / (self.from + (self.from * self.from + 4.0 * a * n).sqrt())
            }
            RampShape::Exponential => (self.growth() * n / self.from).ln_1p() / self.growth(),
        }
    }

    /// Expected requests of the whole ramp, `Λ(T)`.
    pub fn total(&self) -> f64 {
        self.expected(self.secs())
    }
}

pub(super) fn p(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|k| Seg::Key((*k).into())).collect()
}

pub(super) fn get<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter()
        .try_fold(v, |v, k| v.get(*k))
        .filter(|x| !x.is_null())
}

/// Keys of the rate ladder that a trace replay or a ramp does not use, and why.
const NOT_WITH_SHAPE: [(&str, &str); 4] = [
    (
        "rates",
        "a ladder has one of `rates`, `concurrency`, `trace` and `ramp`",
    ),
    (
        "concurrency",
        "a ladder has one of `rates`, `concurrency`, `trace` and `ramp`",
    ),
    (
        "baseline_rate",
        "the first rung is the reference (for a trace, list a slow speed first)",
    ),
    (
        "think_time",
        "think time is for closed-loop users (`concurrency`)",
    ),
];

/// Checks of `load.trace` and `load.ramp` that need no file (the trace's lines are checked
/// when it is read, by `runner::prepare`, which `ladder validate` runs too).
pub(super) fn check(v: &Value, out: &mut Vec<Problem>) {
    let trace = get(v, &["load", "trace"]);
    let ramp = get(v, &["load", "ramp"]);
    let (shape, name) = match (trace, ramp) {
        (Some(_), Some(_)) => {
            out.push(
                Problem::key(
                    p(&["load", "ramp"]),
                    "a ladder has either `trace` or `ramp`, not both",
                )
                .hint("run the other as its own scenario"),
            );
            return;
        }
        (Some(t), None) => (t, "trace"),
        (None, Some(r)) => (r, "ramp"),
        (None, None) => return,
    };
    for (key, why) in NOT_WITH_SHAPE {
        if get(v, &["load", key]).is_some() {
            out.push(
                Problem::key(
                    p(&["load", key]),
                    format!("`{key}` does not apply to a `{name}` rung"),
                )
                .hint(format!("remove `{key}`: {why}")),
            );
        }
    }
    if get(v, &["workload", "requests_per_rung"]).is_some() {
        let why = if name == "trace" {
            "a replay sends the trace's lines (limit them with `load.trace.max_requests`)"
        } else {
            "a ramp sends what its rate integrates to over `over` (about (from + to) / 2 x over when linear)"
        };
        out.push(
            Problem::key(
                p(&["workload", "requests_per_rung"]),
                format!("`requests_per_rung` does not apply to a `{name}` rung"),
            )
            .hint(format!("remove it: {why}")),
        );
    }
    if name == "trace" {
        check_trace(v, shape, out);
    } else {
        check_ramp(v, shape, out);
    }
}

fn check_trace(v: &Value, t: &Value, out: &mut Vec<Problem>) {
    for (key, why) in [
        ("arrival", "a replay sends at the trace's own timestamps"),
        ("burstiness", "a replay sends at the trace's own timestamps"),
    ] {
        if get(v, &["load", key]).is_some() {
            out.push(
                Problem::key(
                    p(&["load", key]),
                    format!("`{key}` does not apply to a `trace` replay"),
                )
                .hint(format!("remove `{key}`: {why}")),
            );
        }
    }
    if get(v, &["sweep"]).is_some() {
        out.push(
            Problem::key(p(&["sweep"]), "a sweep does not apply to a `trace` replay: the trace sets every request's lengths")
                .hint("remove `sweep`; replay the trace at several speeds with `load.trace.speed: [1, 2, 4]`"),
        );
    }
    for (key, what) in [
        ("dataset", "prompts are synthesised to the trace's lengths"),
        (
            "input_tokens",
            "the trace sets every request's input length",
        ),
        (
            "output_tokens",
            "the trace sets every request's output length",
        ),
        ("range_ratio", "the trace sets every request's lengths"),
        (
            "shared_prefix",
            "the trace's `hash_ids` say which requests share a prefix (docs/traces.md)",
        ),
    ] {
        if get(v, &["workload", key]).is_some_and(|x| key != "dataset" || x != "random") {
            out.push(
                Problem::key(
                    p(&["workload", key]),
                    format!("`workload.{key}` does not apply to a `trace` replay"),
                )
                .hint(format!("remove it: {what}")),
            );
        }
    }
    if get(v, &["workload", "input_length"]).and_then(Value::as_str) == Some("server") {
        out.push(
            Problem::value(p(&["workload", "input_length"]), "`input_length: server` is not supported with a `trace` replay")
                .hint("remove it: the trace's input lengths are synthesised as text tokens (the server's counts are recorded either way)"),
        );
    }
    if let Some(speeds) = t.get("speed").and_then(Value::as_array) {
        if speeds.is_empty() {
            out.push(
                Problem::value(p(&["load", "trace", "speed"]), "the replay has no speeds").hint(
                    "list at least one, e.g. `speed: [1.0]` (1.0 replays at the recorded times)",
                ),
            );
        }
        let mut prev: Option<f64> = None;
        for (i, s) in speeds.iter().enumerate() {
            let Some(s) = s.as_f64() else { continue };
            let mut path = p(&["load", "trace", "speed"]);
            path.push(Seg::Index(i));
            if !(s.is_finite() && (MIN_SPEED..=MAX_SPEED).contains(&s)) {
                out.push(
                    Problem::value(
                        path,
                        format!("speed {} is outside [{MIN_SPEED}, {MAX_SPEED}]", show(s)),
                    )
                    .hint("2.0 replays twice as fast as recorded, 0.5 at half speed"),
                );
                continue;
            }
            if let Some(pr) = prev {
                if s <= pr {
                    out.push(
                        Problem::value(
                            path,
                            format!("speeds must be strictly increasing, but {s} follows {pr}"),
                        )
                        .hint("sort the speeds and remove duplicates"),
                    );
                } else if rate_label(s) == rate_label(pr) {
                    out.push(
                        Problem::value(path, format!("speed {s} and speed {pr} would write the same rung files (6 decimals)"))
                            .hint("make the speeds differ within 6 decimals, or drop one"),
                    );
                }
            }
            prev = Some(prev.map_or(s, |x| x.max(s)));
        }
    }
    if let Some(b) = t.get("block_tokens").and_then(Value::as_u64) {
        if !(1..=u64::from(MAX_BLOCK_TOKENS)).contains(&b) {
            out.push(
                Problem::value(
                    p(&["load", "trace", "block_tokens"]),
                    format!("block_tokens {b} is outside [1, {MAX_BLOCK_TOKENS}]"),
                )
                .hint("the tokens each hash id stands for; Mooncake traces use 512"),
            );
        }
    }
    if let Some(m) = t.get("max_requests").and_then(Value::as_u64) {
        if m == 0 || m > limits::MAX_REQUESTS_PER_RUNG {
            out.push(
                Problem::value(
                    p(&["load", "trace", "max_requests"]),
                    format!(
                        "max_requests {m} is outside [1, {}]",
                        limits::MAX_REQUESTS_PER_RUNG
                    ),
                )
                .hint("replay only the trace's first N lines; leave it out to replay them all"),
            );
        }
    }
}

fn check_ramp(v: &Value, r: &Value, out: &mut Vec<Problem>) {
    if get(v, &["load", "warmup_requests"])
        .and_then(Value::as_u64)
        .unwrap_or(0)
        > 0
    {
        out.push(
            Problem::key(p(&["load", "warmup_requests"]), "`warmup_requests` does not apply to a `ramp` rung")
                .hint("remove it: the ramp's first window, at the lowest rate, is its warm-up, and is reported on its own"),
        );
    }
    let from = r.get("from").and_then(Value::as_f64);
    let to = r.get("to").and_then(Value::as_f64);
    for (key, x) in [("from", from), ("to", to)] {
        if let Some(m) = x.and_then(limits::rate_problem) {
            out.push(Problem::value(p(&["load", "ramp", key]), m));
        }
    }
    if let (Some(f), Some(t)) = (from, to) {
        if f.is_finite() && t.is_finite() && f >= limits::MIN_RATE && t <= f {
            out.push(
                Problem::value(
                    p(&["load", "ramp", "to"]),
                    format!(
                        "a ramp rises: `to` ({}) must be above `from` ({})",
                        show(t),
                        show(f)
                    ),
                )
                .hint("for a constant rate use `rates: [..]` instead"),
            );
        }
    }
    let over = r
        .get("over")
        .and_then(Value::as_str)
        .and_then(|s| DurationStr::parse(s).ok());
    if let Some(o) = over {
        if o.0.is_zero() || o.0 > MAX_RAMP {
            out.push(
                Problem::value(
                    p(&["load", "ramp", "over"]),
                    format!("a ramp lasts more than 0 and at most 24h, found {o}"),
                )
                .hint("e.g. `over: 60s`"),
            );
        }
    }
    if let Some(w) = r.get("windows").and_then(Value::as_u64) {
        if !(1..=u64::from(MAX_RAMP_WINDOWS)).contains(&w) {
            out.push(
                Problem::value(
                    p(&["load", "ramp", "windows"]),
                    format!("windows {w} is outside [1, {MAX_RAMP_WINDOWS}]"),
                )
                .hint("the ramp is reported in this many equal time windows; 10 is usual"),
            );
        }
    }
    let shape = match r.get("shape").and_then(Value::as_str) {
        Some("exponential") => RampShape::Exponential,
        _ => RampShape::Linear,
    };
    if let (Some(from), Some(to), Some(over)) = (from, to, over) {
        let ok = limits::rate_problem(from).is_none() && to > from && to.is_finite();
        if ok && !over.0.is_zero() && over.0 <= MAX_RAMP {
            let ramp = RampLoad {
                from,
                to,
                over,
                shape,
                windows: default_windows(),
            };
            let n = ramp.total();
            if n > limits::MAX_REQUESTS_PER_RUNG as f64 {
                out.push(
                    Problem::value(p(&["load", "ramp"]), format!("the ramp would send about {} requests, more than the limit of {} per rung", n.round(), limits::MAX_REQUESTS_PER_RUNG))
                        .hint("lower `to` or shorten `over`"),
                );
            } else if let Some(m) = limits::rung_size_problem(
                n.ceil() as u64 + 1,
                get(v, &["workload", "input_tokens"])
                    .and_then(Value::as_u64)
                    .unwrap_or(512),
            )
            .filter(|_| get(v, &["workload", "dataset"]).is_none_or(|d| d == "random"))
            {
                out.push(
                    Problem::value(p(&["load", "ramp"]), format!("the ramp's prompts: {m}"))
                        .hint("lower `to`, shorten `over` or shorten `workload.input_tokens`"),
                );
            } else if n < 1.0 {
                out.push(
                    Problem::value(
                        p(&["load", "ramp"]),
                        format!("the ramp would send about {n:.2} requests"),
                    )
                    .hint("raise the rates or lengthen `over`"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(shape: RampShape) -> RampLoad {
        RampLoad {
            from: 2.0,
            to: 32.0,
            over: DurationStr(Duration::from_secs(40)),
            shape,
            windows: 10,
        }
    }

    fn problems(load: Value) -> Vec<String> {
        let v = serde_json::json!({"workload": {"input_tokens": 4096}, "load": load});
        let mut out = Vec::new();
        check(&v, &mut out);
        out.iter().map(|p| p.message.clone()).collect()
    }

    #[test]
    fn ramp_checks_its_size_and_direction() {
        let ok = serde_json::json!({"ramp": {"from": 1, "to": 10, "over": "60s"}});
        assert!(problems(ok).is_empty());
        // (10 + 10000) / 2 x 3600 s ≈ 18 M requests.
        let huge = problems(serde_json::json!({"ramp": {"from": 10, "to": 10000, "over": "1h"}}));
        assert!(
            huge.iter().any(|m| m.contains("more than the limit")),
            "{huge:?}"
        );
        // 100 000 requests of 4096 tokens: too many prompt tokens to hold.
        let tokens = problems(serde_json::json!({"ramp": {"from": 1, "to": 1999, "over": "100s"}}));
        assert!(
            tokens.iter().any(|m| m.contains("the ramp's prompts")),
            "{tokens:?}"
        );
        let down =
            problems(serde_json::json!({"ramp": {"from": 5, "to": 5, "over": "1s"}, "rates": [1]}));
        assert!(
            down.iter().any(|m| m.contains("must be above `from`")),
            "{down:?}"
        );
        assert!(
            down.iter().any(|m| m.contains("`rates` does not apply")),
            "{down:?}"
        );
    }

    #[test]
    fn ramp_integral_and_inverse_agree() {
        let lin = ramp(RampShape::Linear);
        assert_eq!(lin.rate_at(0.0), 2.0);
        assert_eq!(lin.rate_at(40.0), 32.0);
        assert_eq!(lin.rate_at(20.0), 17.0);
        // (2 + 32) / 2 x 40
        assert!((lin.total() - 680.0).abs() < 1e-9);
        let exp = ramp(RampShape::Exponential);
        assert!((exp.rate_at(20.0) - 8.0).abs() < 1e-9);
        // ∫ 2·16^(t/40) dt = 2·40·15 / ln 16
        assert!((exp.total() - 1200.0 / 16f64.ln()).abs() < 1e-9);
        for r in [lin, exp] {
            for t in [0.0, 0.5, 7.0, 39.9, 40.0] {
                assert!(
                    (r.time_of(r.expected(t)) - t).abs() < 1e-9,
                    "{:?} at {t}",
                    r.shape
                );
            }
        }
    }
}
