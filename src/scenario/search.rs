//! `load.search`: find the capacity at an SLO instead of running fixed rungs. Its types
//! and scenario checks; the search itself is `crate::capacity`, its probes are run by
//! `runner::search` (docs/capacity.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::defaults::default_requests_per_rung;
use super::diagnostic::Problem;
use super::incompatible::With;
use super::limits;
use super::load_kind::MAX_USERS;
use super::shapes::{get, p};
use super::values::{DurationStr, Threshold};
use super::yaml::Seg;

/// `load.search`: probe rates (or users) adaptively until the highest level within the SLO
/// is bracketed as narrowly as `precision`; writes `capacity.json` (docs/capacity.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchLoad {
    /// What is searched over: `rate` (offered req/s, open loop; the default) or `users`
    /// (closed loop, whole numbers).
    #[serde(default, skip_serializing_if = "SearchOver::is_rate")]
    pub over: SearchOver,
    /// The SLO: every term must hold, e.g. `[{metric: p99_ttft_ms, max: 500}, {metric:
    /// error_rate, max: 0.01}]`. Metrics: `p<N>_ttft_ms`, `p<N>_tpot_ms`, `p<N>_e2el_ms`
    /// (or `median_…`), `error_rate` (each with `max`), and `goodput` (with `min`: the
    /// fraction of requests meeting every bound of the scenario's `slo:` block). A failed
    /// request counts as beyond every latency bound and is never good.
    pub slo: Vec<SloBound>,
    /// The first probe's level.
    pub start: f64,
    /// Never probe above this level.
    pub max: f64,
    /// Never probe below this level (default: `start / 64`, or 1 user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Stop when the bracket `[highest inside, lowest outside]` is this narrow: `5%`
    /// (relative, the default) or an absolute width in the level's unit.
    #[serde(default = "default_precision")]
    pub precision: Threshold,
    /// Factor between probes while bracketing (default 2).
    #[serde(default = "default_growth")]
    pub growth: f64,
    /// Two-sided confidence of each probe's verdict interval (default 0.9: a verdict errs
    /// to one side with probability at most 5 %).
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// Extra measurements (of `requests_per_rung` each, pooled) an uncertain probe gets
    /// before it is left uncertain (default 2).
    #[serde(default = "default_extensions")]
    pub max_extensions: u32,
    /// Repeats of each probe bounding the final bracket, each with requests of its own and
    /// judged alone; a bound stands only when every repeat agrees (default 1; 0: none).
    /// They put run-to-run noise into the interval.
    #[serde(default = "default_confirm")]
    pub confirm: u32,
    /// Most the search may spend; default 30 measurements' worth of requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<SearchBudget>,
}

/// What a search varies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchOver {
    /// Offered requests per second (open loop).
    #[default]
    Rate,
    /// Closed-loop users.
    Users,
}

impl SearchOver {
    fn is_rate(&self) -> bool {
        *self == SearchOver::Rate
    }
}

/// One SLO term of a search: `metric <= max`, or `goodput >= min`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SloBound {
    /// `p99_ttft_ms`, `p95_tpot_ms`, `median_e2el_ms`, `error_rate`, `goodput`, …
    pub metric: String,
    /// The upper bound of a latency percentile (milliseconds) or of `error_rate` (a
    /// fraction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// The lower bound of `goodput`: the least fraction of measured requests that must
    /// succeed within every per-request bound of the scenario's `slo:` block (e.g. 0.95).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
}

/// The most a search may spend: requests sent (warmup included), wall time measuring, or
/// both (whichever runs out first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBudget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<DurationStr>,
}

fn default_precision() -> Threshold {
    Threshold::Relative(0.05)
}
fn default_growth() -> f64 {
    2.0
}
fn default_confidence() -> f64 {
    0.9
}
fn default_extensions() -> u32 {
    2
}
fn default_confirm() -> u32 {
    1
}

/// Most repeats of one bound.
pub const MAX_CONFIRM: u32 = 5;

/// Measurements the default budget allows.
pub const DEFAULT_BUDGET_MEASUREMENTS: u64 = 30;

/// Most extensions of one probe.
pub const MAX_EXTENSIONS: u32 = 10;

impl SearchLoad {
    /// `min`, or its default.
    pub fn min_level(&self) -> f64 {
        match (self.min, self.over) {
            (Some(m), _) => m,
            (None, SearchOver::Users) => 1.0,
            (None, SearchOver::Rate) => (self.start / 64.0).max(limits::MIN_RATE),
        }
    }
}

/// Every problem of `load.search` and of the keys around it.
pub(super) fn check(v: &Value, out: &mut Vec<Problem>) {
    let Some(s) = get(v, &["load", "search"]) else {
        return;
    };
    super::incompatible::check(v, With::Search, out);
    let users = s.get("over").and_then(Value::as_str) == Some("users");
    if !users {
        if get(v, &["load", "think_time"]).is_some() {
            out.push(
                Problem::key(
                    p(&["load", "think_time"]),
                    "think_time applies to a search over `users`",
                )
                .hint("remove `think_time`, or set `search.over: users`"),
            );
        }
    } else {
        for key in ["arrival", "burstiness", "max_concurrency"] {
            if get(v, &["load", key]).is_some() {
                out.push(
                    Problem::key(p(&["load", key]), format!("`{key}` applies to a search over `rate`, not `users`"))
                        .hint(format!("remove `{key}`: closed-loop users send when their previous request finished")),
                );
            }
        }
    }
    check_slo(v, s, out);
    check_levels(v, s, users, out);
    check_knobs(v, s, out);
}

fn check_slo(v: &Value, s: &Value, out: &mut Vec<Problem>) {
    let Some(terms) = s.get("slo").and_then(Value::as_array) else {
        return; // the schema reports a missing or mistyped list
    };
    if terms.is_empty() {
        out.push(
            Problem::value(
                p(&["load", "search", "slo"]),
                "the search has no SLO to hold",
            )
            .hint("e.g. `slo: [{metric: p99_ttft_ms, max: 500}, {metric: error_rate, max: 0.01}]`"),
        );
    }
    for (i, t) in terms.iter().enumerate() {
        let mut base = p(&["load", "search", "slo"]);
        base.push(Seg::Index(i));
        let metric = t.get("metric").and_then(Value::as_str);
        let parsed = metric.map(crate::capacity::SloMetric::parse);
        if let Some(Err(e)) = &parsed {
            let mut path = base.clone();
            path.push(Seg::Key("metric".into()));
            out.push(
                Problem::value(path, e.to_string()).hint(crate::capacity::slo::SLO_METRICS_HINT),
            );
        }
        let Some(Ok(metric)) = parsed else { continue };
        check_term_bound(v, t, metric, &base, out);
    }
}

/// A term's bound: `max` for a percentile or the error rate, `min` for goodput (which also
/// needs a per-request bound in the scenario's `slo:` block).
fn check_term_bound(
    v: &Value,
    t: &Value,
    metric: crate::capacity::SloMetric,
    base: &[Seg],
    out: &mut Vec<Problem>,
) {
    use crate::capacity::SloMetric;
    let at = |key: &str| {
        let mut path = base.to_vec();
        path.push(Seg::Key(key.into()));
        path
    };
    let (want, other) = if metric.is_floor() {
        ("min", "max")
    } else {
        ("max", "min")
    };
    if t.get(other).is_some_and(|x| !x.is_null()) {
        let why = if metric.is_floor() {
            "goodput is the share of good requests: the SLO bounds it from below, `min: 0.95`"
        } else {
            "a latency percentile or an error rate is bounded from above, `max: …`"
        };
        out.push(
            Problem::key(
                at(other),
                format!("`{}` takes `{want}`, not `{other}`", metric.name()),
            )
            .hint(why),
        );
    }
    // TPOT is the time per output token after the first: one-token outputs have none, and
    // every probe would stay uncertain until a failure (infinitely slow) decided it.
    let one_token = get(v, &["workload", "output_tokens"]).and_then(Value::as_f64) == Some(1.0);
    if one_token
        && matches!(
            metric,
            SloMetric::Quantile {
                of: crate::capacity::slo::Latency::Tpot,
                ..
            }
        )
    {
        out.push(
            Problem::value(
                at("metric"),
                format!(
                    "`{}` bounds the time per output token after the first, and with \
                     workload.output_tokens: 1 no request has one: no probe could be judged on it",
                    metric.name()
                ),
            )
            .hint("bound the first token or the whole request instead (`p99_ttft_ms`, `p99_e2el_ms`), or raise workload.output_tokens"),
        );
        return;
    }
    if metric == SloMetric::Goodput {
        let bounds = ["ttft_ms", "tpot_ms", "e2e_ms"];
        if !bounds
            .iter()
            .any(|k| get(v, &["slo", k]).is_some_and(|x| !x.is_null()))
        {
            out.push(
                Problem::value(at("metric"), "a `goodput` term counts requests meeting the scenario's `slo:` bounds, and it sets none")
                    .hint("add the per-request bounds at the top level, e.g. `slo: { ttft_ms: 500, tpot_ms: 50 }` (the same rule as `request_goodput` in the rung files)"),
            );
        }
    }
    let Some(x) = t.get(want).filter(|x| !x.is_null()) else {
        if t.get(other).is_none_or(Value::is_null) {
            out.push(Problem::value(
                base.to_vec(),
                format!("the term on `{}` has no `{want}`", metric.name()),
            ));
        }
        return;
    };
    let Some(x) = x.as_f64() else {
        return; // the schema reports the type
    };
    let path = at(want);
    match metric {
        SloMetric::ErrorRate if !(x > 0.0 && x < 1.0) => {
            out.push(
                Problem::value(path, format!("an error-rate bound is a fraction strictly between 0 and 1, found {x}"))
                    .hint("0.01 means 1 %; a bound of 0 can never be shown to hold (no finite sample proves zero errors)"),
            );
        }
        SloMetric::Goodput if !(x > 0.0 && x < 1.0) => {
            out.push(
                Problem::value(path, format!("a goodput bound is a fraction strictly between 0 and 1, found {x}"))
                    .hint("0.95 means 95 % of requests good; a bound of 1 can never be shown to hold (no finite sample proves every request good)"),
            );
        }
        SloMetric::Quantile { .. } if !(x.is_finite() && x > 0.0) => {
            out.push(Problem::value(
                path,
                format!("must be a positive number of milliseconds, found {x}"),
            ));
        }
        _ => check_looks(v, metric, x, path, out),
    }
}

/// A term no probe can ever show inside: its looks, all of a probe's measurements pooled,
/// are too few requests for the interval to clear the bound (`capacity::looks`). A first
/// look too small only costs time: the run warns of it.
fn check_looks(
    v: &Value,
    metric: crate::capacity::SloMetric,
    bound: f64,
    path: Vec<Seg>,
    out: &mut Vec<Problem>,
) {
    use crate::capacity::looks;
    let num = |keys: &[&str]| get(v, keys).and_then(Value::as_f64);
    let requests =
        num(&["workload", "requests_per_rung"]).unwrap_or(f64::from(default_requests_per_rung()));
    let confidence = num(&["load", "search", "confidence"]).unwrap_or(default_confidence());
    let extensions =
        num(&["load", "search", "max_extensions"]).unwrap_or(f64::from(default_extensions()));
    let in_range = requests >= 1.0
        && (0.5..=0.999).contains(&confidence)
        && (0.0..=f64::from(MAX_EXTENSIONS)).contains(&extensions);
    if !in_range {
        return; // reported where it is set
    }
    let term = crate::capacity::SloTerm {
        metric,
        bound,
        per_request: Default::default(),
    };
    let (requests, extensions) = (requests as u64, extensions as u32);
    let s = looks::shortfall(&term, requests, confidence, extensions);
    if !matches!(s, looks::Shortfall::Never { .. }) {
        return;
    }
    let level = looks::look_level(confidence, extensions);
    if let Some(text) = looks::advice(s, &format!("{} inside", term.describe()), requests, level) {
        out.push(Problem::value(path, text));
    }
}

fn check_levels(v: &Value, s: &Value, users: bool, out: &mut Vec<Problem>) {
    let level = |key: &str| s.get(key).and_then(Value::as_f64);
    let problem = |x: f64| -> Option<String> {
        if users {
            (x.fract() != 0.0 || !(1.0..=f64::from(MAX_USERS)).contains(&x)).then(|| {
                format!("a number of users is a whole number from 1 to {MAX_USERS}, found {x}")
            })
        } else {
            limits::rate_problem(x)
        }
    };
    for key in ["start", "max", "min"] {
        if let Some(m) = level(key).and_then(problem) {
            out.push(Problem::value(p(&["load", "search", key]), m));
        }
    }
    if let (Some(start), Some(max)) = (level("start"), level("max")) {
        if max < start {
            out.push(
                Problem::value(
                    p(&["load", "search", "max"]),
                    format!("max {max} is below start {start}"),
                )
                .hint("`max` is the highest level the search may probe; `start` its first probe"),
            );
        }
        if let Some(min) = level("min").filter(|m| *m > start) {
            out.push(Problem::value(
                p(&["load", "search", "min"]),
                format!("min {min} is above start {start}"),
            ));
        }
    }
    if users {
        let requests = get(v, &["workload", "requests_per_rung"])
            .and_then(Value::as_f64)
            .unwrap_or(f64::from(default_requests_per_rung()));
        if let Some(max) = level("max").filter(|m| *m > requests) {
            out.push(
                Problem::value(
                    p(&["load", "search", "max"]),
                    format!("up to {max} users but only {requests} requests per probe: a probe's users would not all be busy"),
                )
                .hint(format!("raise workload.requests_per_rung to at least {} or lower `max`", 3.0 * max)),
            );
        }
    }
}

fn check_knobs(v: &Value, s: &Value, out: &mut Vec<Problem>) {
    if let Some(t) = s.get("precision").filter(|x| !x.is_null()) {
        let parsed = match t {
            Value::String(x) => Threshold::parse(x).ok(),
            Value::Number(n) => Some(Threshold::Absolute(n.as_f64().unwrap_or(f64::NAN))),
            _ => None,
        };
        let bad = match parsed {
            Some(Threshold::Relative(r)) => !(r > 0.0 && r <= 1.0),
            Some(Threshold::Absolute(a)) => !(a.is_finite() && a > 0.0),
            None => false, // the schema reports the type
        };
        if bad {
            out.push(
                Problem::value(p(&["load", "search", "precision"]), "must be above 0 (and at most 100%)")
                    .hint("`5%` stops when the bracket's ends are within 5 % of each other; a plain number is a width in req/s (or users)"),
            );
        }
    }
    if let Some(g) = s.get("growth").and_then(Value::as_f64) {
        if !(g > 1.0 && g <= 16.0) {
            out.push(
                Problem::value(
                    p(&["load", "search", "growth"]),
                    format!("must be above 1 and at most 16, found {g}"),
                )
                .hint("2 doubles the level between bracketing probes"),
            );
        }
    }
    if let Some(c) = s.get("confidence").and_then(Value::as_f64) {
        if !(0.5..=0.999).contains(&c) {
            out.push(
                Problem::value(
                    p(&["load", "search", "confidence"]),
                    format!("must be from 0.5 to 0.999, found {c}"),
                )
                .hint("0.9: each probe's verdict errs to one side with probability at most 5 %"),
            );
        }
    }
    if let Some(x) = s.get("max_extensions").and_then(Value::as_f64) {
        if x > f64::from(MAX_EXTENSIONS) {
            out.push(Problem::value(
                p(&["load", "search", "max_extensions"]),
                format!("at most {MAX_EXTENSIONS}, found {x}"),
            ));
        }
    }
    if let Some(x) = s.get("confirm").and_then(Value::as_f64) {
        if x > f64::from(MAX_CONFIRM) {
            out.push(
                Problem::value(
                    p(&["load", "search", "confirm"]),
                    format!("at most {MAX_CONFIRM}, found {x}"),
                )
                .hint("1: each end of the bracket is measured once more and must agree"),
            );
        }
    }
    if let Some(b) = s.get("budget").filter(|x| !x.is_null()) {
        let requests = b.get("requests").and_then(Value::as_f64);
        if requests.is_none() && b.get("duration").is_none_or(Value::is_null) {
            out.push(
                Problem::value(
                    p(&["load", "search", "budget"]),
                    "the budget sets neither `requests` nor `duration`",
                )
                .hint("e.g. `budget: { requests: 5000 }` or `budget: { duration: 10m }`"),
            );
        }
        let int =
            |keys: &[&str], default: f64| get(v, keys).and_then(Value::as_f64).unwrap_or(default);
        let chunk = int(
            &["workload", "requests_per_rung"],
            f64::from(default_requests_per_rung()),
        ) + int(&["load", "warmup_requests"], 0.0);
        if let Some(r) = requests.filter(|r| *r < chunk) {
            out.push(
                Problem::value(
                    p(&["load", "search", "budget", "requests"]),
                    format!("{r} requests cannot pay for one probe of {chunk} (requests_per_rung + warmup_requests)"),
                )
                .hint(format!("allow at least {} (ten probes)", 10.0 * chunk)),
            );
        }
        // Open loop, the first probe takes at least its requests over its rate.
        let duration = b
            .get("duration")
            .and_then(Value::as_str)
            .and_then(|d| DurationStr::parse(d).ok());
        let start = s.get("start").and_then(Value::as_f64).filter(|x| *x > 0.0);
        let over_rate = s.get("over").and_then(Value::as_str) != Some("users");
        if let (Some(d), Some(start), true) = (duration, start, over_rate) {
            let first = int(
                &["workload", "requests_per_rung"],
                f64::from(default_requests_per_rung()),
            ) / start;
            if d.0.as_secs_f64() < first {
                out.push(
                    Problem::value(
                        p(&["load", "search", "budget", "duration"]),
                        format!(
                            "{d} cannot pay for one probe: the first ({} requests at {start} req/s) takes at least {first:.0} s",
                            int(&["workload", "requests_per_rung"], f64::from(default_requests_per_rung()))
                        ),
                    )
                    .hint(format!("allow at least {:.0} s (ten probes' worth), or start higher", 10.0 * first)),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(load: Value) -> Vec<String> {
        let v = json!({
            "workload": { "requests_per_rung": 300 },
            "load": load,
        });
        let mut out = Vec::new();
        check(&v, &mut out);
        out.iter().map(|p| format!("{p:?}")).collect()
    }

    fn search(extra: Value) -> Value {
        let mut s = json!({
            "slo": [{ "metric": "p99_ttft_ms", "max": 500 }, { "metric": "error_rate", "max": 0.01 }],
            "start": 2,
            "max": 200,
        });
        for (k, v) in extra.as_object().unwrap() {
            s[k] = v.clone();
        }
        s
    }

    #[test]
    fn a_plain_search_has_no_problems() {
        assert!(problems(json!({ "search": search(json!({})) })).is_empty());
        let users = search(json!({ "over": "users", "start": 1, "max": 64 }));
        assert!(problems(json!({ "search": users, "think_time": "1s" })).is_empty());
    }

    #[test]
    fn keys_a_search_replaces_are_refused_each_with_its_reason() {
        let p = problems(json!({
            "search": search(json!({})),
            "rates": [1, 2],
            "baseline_rate": 1,
            "repeats": 3,
            "duration": "1m",
        }));
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(
            p.iter()
                .all(|x| x.contains("does not combine with `load.search`")),
            "{p:?}"
        );
        // `repeats: 1` is the default said aloud: no problem.
        assert!(problems(json!({ "search": search(json!({})), "repeats": 1 })).is_empty());
    }

    #[test]
    fn bad_slo_terms_levels_and_knobs_are_each_reported() {
        let p = problems(json!({ "search": search(json!({
            "slo": [
                { "metric": "p99_ttft", "max": 500 },
                { "metric": "error_rate", "max": 0 },
                { "metric": "p95_tpot_ms", "max": -1 }
            ],
            "start": 10,
            "max": 5,
            "precision": "0%",
            "growth": 1,
            "confidence": 0.2,
            "budget": { "requests": 100 }
        })) }));
        for says in [
            "unknown SLO metric `p99_ttft`",
            "strictly between 0 and 1",
            "positive number of milliseconds",
            "max 5 is below start 10",
            "must be above 0",
            "above 1 and at most 16",
            "from 0.5 to 0.999",
            "cannot pay for one probe of 300",
        ] {
            assert!(p.iter().any(|x| x.contains(says)), "{says}: {p:?}");
        }
        // A duration budget shorter than the first probe (300 requests at 2 req/s: 150 s)
        // would run no probe and end with no answer; one that pays for it is fine.
        let short = |d: &str| {
            problems(
                json!({ "search": search(json!({ "start": 2, "budget": { "duration": d } })) }),
            )
        };
        let p = short("1s");
        assert!(
            p.iter()
                .any(|x| x.contains("1s cannot pay for one probe: the first (300 requests at 2 req/s) takes at least 150 s")),
            "{p:?}"
        );
        assert!(short("10m").is_empty(), "{:?}", short("10m"));
        let users = search(json!({ "over": "users", "start": 1.5, "max": 1000 }));
        let p = problems(json!({ "search": users, "arrival": "gamma" }));
        for says in [
            "whole number from 1",
            "only 300 requests per probe",
            "`arrival` applies to a search over `rate`",
        ] {
            assert!(p.iter().any(|x| x.contains(says)), "{says}: {p:?}");
        }
    }

    #[test]
    fn a_goodput_term_takes_min_and_the_scenarios_per_request_bounds() {
        let with = |slo: Value, terms: Value| {
            let v = json!({
                "workload": { "requests_per_rung": 300 },
                "slo": slo,
                "load": { "search": search(json!({ "slo": terms })) },
            });
            let mut out = Vec::new();
            check(&v, &mut out);
            out.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>()
        };
        let good = json!([{ "metric": "goodput", "min": 0.95 }]);
        assert!(with(json!({ "ttft_ms": 500, "tpot_ms": 50 }), good.clone()).is_empty());
        // No per-request bound: nothing would make a request good but succeeding.
        let p = with(json!({ "max_error_rate": 0.05 }), good);
        assert!(
            p.len() == 1 && p[0].contains("sets none") && p[0].contains("ttft_ms: 500"),
            "{p:?}"
        );
        let slo = json!({ "ttft_ms": 500 });
        for (terms, says) in [
            (
                json!([{ "metric": "goodput", "max": 0.95 }]),
                "takes `min`, not `max`",
            ),
            (
                json!([{ "metric": "goodput", "min": 1.0 }]),
                "strictly between 0 and 1",
            ),
            (json!([{ "metric": "goodput" }]), "has no `min`"),
            (
                json!([{ "metric": "p99_ttft_ms", "min": 500 }]),
                "takes `max`, not `min`",
            ),
            (json!([{ "metric": "error_rate" }]), "has no `max`"),
        ] {
            let p = with(slo.clone(), terms);
            assert!(p.len() == 1 && p[0].contains(says), "{says}: {p:?}");
        }
        let s: SearchLoad = serde_json::from_value(search(json!({
            "slo": [{ "metric": "goodput", "min": 0.9 }]
        })))
        .unwrap();
        assert_eq!((s.slo[0].min, s.slo[0].max), (Some(0.9), None));
    }

    #[test]
    fn a_tpot_term_with_one_token_outputs_is_refused() {
        let tpot = |out_tokens: u32| {
            let v = json!({
                "workload": { "output_tokens": out_tokens },
                "load": { "search": search(json!({
                    "slo": [{ "metric": "p90_tpot_ms", "max": 20 }],
                })) },
            });
            let mut out = Vec::new();
            check(&v, &mut out);
            out.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>()
        };
        let one = tpot(1);
        assert!(
            one.len() == 1
                && one[0].contains("with workload.output_tokens: 1 no request has one")
                && one[0].contains("p99_e2el_ms"),
            "{one:?}"
        );
        assert!(tpot(2).is_empty(), "{:?}", tpot(2));
    }

    #[test]
    fn a_term_no_probe_can_ever_show_inside_is_refused_with_the_size_it_needs() {
        // 100 requests, one extension: looks at 95 %, 200 pooled; a p99 needs 368.
        let v = json!({
            "workload": { "requests_per_rung": 100 },
            "load": { "search": search(json!({ "max_extensions": 1 })) },
        });
        let mut out = Vec::new();
        check(&v, &mut out);
        let text: Vec<String> = out.iter().map(|p| format!("{p:?}")).collect();
        // Each term on its own: the p99 needs 368, the error rate <= 1 % 381.
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(
            text[0].contains("no probe can show p99 TTFT <= 500 ms inside")
                && text[0].contains("needs 368")
                && text[0].contains("requests_per_rung to at least 368"),
            "{text:?}"
        );
        assert!(
            text[1].contains("error rate <= 0.01 inside") && text[1].contains("needs 381"),
            "{text:?}"
        );
        // A goodput floor of 0.95 at 95 % needs 73 good in 73; 20 requests and one extension
        // pool 40.
        let v = json!({
            "slo": { "ttft_ms": 500 },
            "workload": { "requests_per_rung": 20 },
            "load": { "search": search(json!({
                "max_extensions": 1,
                "slo": [{ "metric": "goodput", "min": 0.95 }],
            })) },
        });
        let mut out = Vec::new();
        check(&v, &mut out);
        let text = format!("{out:?}");
        assert!(
            text.contains("no probe can show goodput >= 0.95 inside") && text.contains("needs 73"),
            "{text}"
        );
        // 200 requests with two extensions (600 pooled at 96.7 %: 408 needed) only cost
        // time: the run warns, validate does not refuse.
        let v = json!({
            "workload": { "requests_per_rung": 200 },
            "load": { "search": search(json!({})) },
        });
        let mut out = Vec::new();
        check(&v, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn the_default_min_is_a_sixty_fourth_of_start_or_one_user() {
        let s: SearchLoad = serde_json::from_value(search(json!({}))).unwrap();
        assert_eq!(s.min_level(), 2.0 / 64.0);
        assert_eq!(s.precision, Threshold::Relative(0.05));
        assert_eq!((s.growth, s.confidence, s.max_extensions), (2.0, 0.9, 2));
        let u: SearchLoad =
            serde_json::from_value(search(json!({ "over": "users", "start": 4 }))).unwrap();
        assert_eq!(u.min_level(), 1.0);
    }
}
