//! Gate checks: from a scenario's `gate:` list, from `--threshold` overrides, or the
//! defaults; and the refusal of unknown metric names with the nearest valid one.

use std::fmt;

use super::evidence::Model;
use crate::metrics::{Latency, RungSummary};
use crate::scenario::{GateRule, MinChange, Threshold};

/// What one check bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Candidate may rise by at most this much over the baseline.
    Increase(Threshold),
    /// Candidate may fall by at most this much under the baseline.
    Decrease(Threshold),
    /// Candidate value must stay at or below this.
    Max(f64),
    /// Candidate value must stay at or above this.
    Min(f64),
}

/// One gate check on one metric, applied to every common rung.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Metric key of `result_rate_<rate>.json`.
    pub metric: String,
    pub bound: Bound,
    /// Absolute floor of an `Increase` / `Decrease` bound, in the metric's unit: a change is
    /// a regression (or an improvement) only when it is also wholly beyond this much.
    /// [`default_floor`] unless the rule sets `min_change` or `--threshold` sets `floor=`.
    pub floor: f64,
    /// A gate rule's `model:`: judge only that model's requests of a mix (`None`: the whole
    /// rung).
    pub model: Option<String>,
}

impl Check {
    /// A check with the metric's default floor.
    pub fn new(metric: &str, bound: Bound) -> Self {
        Check {
            metric: metric.to_string(),
            bound,
            floor: default_floor(metric),
            model: None,
        }
    }

    /// The metric as tables name the check: `p99_tpot_ms`, or `p99_tpot_ms [sql-lora]` for
    /// one model of a mix.
    pub fn label(&self) -> String {
        match &self.model {
            Some(m) => format!("{} [{m}]", self.metric),
            None => self.metric.clone(),
        }
    }

    /// The bound as shown in tables: `+10%`, with `,floor=2ms` when a floor applies.
    pub fn threshold_text(&self) -> String {
        match self.bound {
            Bound::Increase(_) | Bound::Decrease(_) if self.floor > 0.0 => {
                format!(
                    "{},floor={}",
                    self.bound,
                    floor_text(&self.metric, self.floor)
                )
            }
            _ => self.bound.to_string(),
        }
    }
}

/// A floor for humans: `2ms` for a `*_ms` metric, else the plain number.
pub fn floor_text(metric: &str, floor: f64) -> String {
    let n = crate::format::num(floor);
    if metric.ends_with("_ms") {
        format!("{n}ms")
    } else {
        n
    }
}

/// The floor a change must also clear when a rule sets none. TTFT and end-to-end
/// latencies: 2 ms, about what loopback HTTP, a 1 ms timer tick and a busy scheduler move a
/// single request's timing by. TPOT and ITL: 0.5 ms, because they are per-token figures
/// (a 2 ms floor would hide a +10 % change of any TPOT under 20 ms). Dispatch lag: 1 ms
/// (the timer tick). Throughputs, error_rate and everything else: 0 (their relative or
/// absolute threshold is the floor already).
pub fn default_floor(metric: &str) -> f64 {
    match Model::of(metric) {
        Model::Latency(_, Latency::Tpot | Latency::Itl) => 0.5,
        Model::Latency(_, Latency::DispatchLag) => 1.0,
        Model::Latency(..) => 2.0,
        _ => 0.0,
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Increase(t) => write!(f, "+{t}"),
            Bound::Decrease(t) => write!(f, "-{t}"),
            Bound::Max(v) => write!(f, "<={v}"),
            Bound::Min(v) => write!(f, ">={v}"),
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.label(), self.threshold_text())
    }
}

/// A bad threshold: shown to the user, exit 2.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ThresholdError(pub String);

/// Refuse a metric key that is not in [`RungSummary::metric_keys`], naming the nearest.
pub fn validate_metric(name: &str) -> Result<(), ThresholdError> {
    let keys = RungSummary::metric_keys();
    if name == crate::capacity::CAPACITY_METRIC || keys.iter().any(|k| k == name) {
        return Ok(());
    }
    let nearest = keys
        .iter()
        .min_by_key(|k| levenshtein(k, name))
        .cloned()
        .unwrap_or_default();
    Err(ThresholdError(format!(
        "unknown metric `{name}`; did you mean `{nearest}`? (metric names are the keys of result_rate_<rate>.json)"
    )))
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Parse one `--threshold` value:
/// `metric=+15%` / `metric=-5%` (relative rise / fall), `metric=+0.01` / `metric=-2`
/// (absolute rise / fall, metric units), `metric<=0.02` / `metric>=4.5` (bounds on the
/// candidate value); a change may add `,floor=5ms` (or `,floor=0.5` in the metric's unit).
pub fn parse_override(s: &str) -> Result<Check, ThresholdError> {
    let bad = |why: &str| {
        ThresholdError(format!(
            "--threshold `{s}`: {why}; write e.g. `p99_ttft_ms=+15%`, `median_ttft_ms=+10%,floor=5ms`, `request_throughput=-5%`, `error_rate=+0.01` or `error_rate<=0.02`"
        ))
    };
    let (rule, floor) = match s.split_once(',') {
        None => (s, None),
        Some((rule, extra)) => {
            let v = extra
                .trim()
                .strip_prefix("floor")
                .and_then(|r| r.trim_start().strip_prefix('='))
                .ok_or_else(|| bad("after the comma only `floor=AMOUNT` may follow"))?;
            (
                rule,
                Some(MinChange::parse(v).map_err(|e| bad(&e.to_string()))?),
            )
        }
    };
    let s_rule = rule;
    let (metric, bound) = if let Some((m, v)) = s_rule.split_once("<=") {
        (
            m,
            Bound::Max(number(v).ok_or_else(|| bad("bound is not a number"))?),
        )
    } else if let Some((m, v)) = s_rule.split_once(">=") {
        (
            m,
            Bound::Min(number(v).ok_or_else(|| bad("bound is not a number"))?),
        )
    } else if let Some((m, v)) = s_rule.split_once('=').or_else(|| {
        // The form compare prints (`median_ttft_ms +10%`, `median_ttft_ms+10%`): the sign
        // starts the change, as no metric name holds one.
        s_rule
            .find(['+', '-'])
            .map(|i| (&s_rule[..i], &s_rule[i..]))
    }) {
        let v = v.trim();
        let t = |rest: &str| Threshold::parse(rest).map_err(|e| bad(&e.to_string()));
        if let Some(rest) = v.strip_prefix('+') {
            (m, Bound::Increase(t(rest)?))
        } else if let Some(rest) = v.strip_prefix('-') {
            (m, Bound::Decrease(t(rest)?))
        } else {
            return Err(bad(
                "the change needs a sign: `+` for a rise, `-` for a fall",
            ));
        }
    } else {
        return Err(bad("expected `=`, `<=` or `>=`"));
    };
    let metric = metric.trim();
    if metric.is_empty() {
        return Err(bad("missing metric name"));
    }
    validate_metric(metric)?;
    let mut check = Check::new(metric, bound);
    if let Some(f) = floor {
        if matches!(bound, Bound::Max(_) | Bound::Min(_)) {
            return Err(bad(
                "a floor goes with a change (`+` / `-`), not with a bound on the value",
            ));
        }
        check.floor = f.in_unit(metric).map_err(|e| bad(&e.to_string()))?;
    }
    Ok(check)
}

fn number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The checks of a scenario's `gate:` list (every bound a rule sets is one check).
pub fn from_gate_rules(rules: &[GateRule]) -> Result<Vec<Check>, ThresholdError> {
    let mut out = Vec::new();
    for r in rules {
        validate_metric(&r.metric)?;
        let floor = match r.min_change {
            None => default_floor(&r.metric),
            Some(m) => m.in_unit(&r.metric).map_err(|e| {
                ThresholdError(format!("gate rule on `{}`: min_change: {e}", r.metric))
            })?,
        };
        if r.model.is_some()
            && !crate::metrics::models::ModelSummary::metric_keys().contains(&r.metric)
        {
            return Err(ThresholdError(format!(
                "gate rule on `{}` with `model:`: a model's breakdown has no such key; it has \
                 counts, error_rate, request_throughput, output_throughput and the TTFT, TPOT, \
                 ITL and E2E statistics",
                r.metric
            )));
        }
        let mut push = |bound| {
            out.push(Check {
                metric: r.metric.clone(),
                bound,
                floor,
                model: r.model.clone(),
            })
        };
        if let Some(t) = r.max_increase {
            push(Bound::Increase(t));
        }
        if let Some(t) = r.max_decrease {
            push(Bound::Decrease(t));
        }
        if let Some(v) = r.max {
            push(Bound::Max(v));
        }
        if let Some(v) = r.min {
            push(Bound::Min(v));
        }
    }
    Ok(out)
}

/// The checks used when a scenario has no `gate:` list.
pub fn defaults() -> Vec<Check> {
    let c = Check::new;
    vec![
        c(
            "request_throughput",
            Bound::Decrease(Threshold::Relative(0.05)),
        ),
        c(
            "output_throughput",
            Bound::Decrease(Threshold::Relative(0.05)),
        ),
        c("median_ttft_ms", Bound::Increase(Threshold::Relative(0.10))),
        c("p99_ttft_ms", Bound::Increase(Threshold::Relative(0.20))),
        c("median_tpot_ms", Bound::Increase(Threshold::Relative(0.10))),
        c("error_rate", Bound::Increase(Threshold::Absolute(0.01))),
    ]
}

/// The checks used when a scenario of a pooling API (`api: embeddings`) has no `gate:`
/// list: it has no TTFT or TPOT, and its tokens are all input (`total_token_throughput`).
pub fn pooled_defaults() -> Vec<Check> {
    let c = Check::new;
    vec![
        c(
            "request_throughput",
            Bound::Decrease(Threshold::Relative(0.05)),
        ),
        c(
            "total_token_throughput",
            Bound::Decrease(Threshold::Relative(0.05)),
        ),
        c("median_e2el_ms", Bound::Increase(Threshold::Relative(0.10))),
        c("p99_e2el_ms", Bound::Increase(Threshold::Relative(0.20))),
        c("error_rate", Bound::Increase(Threshold::Absolute(0.01))),
    ]
}

/// The default checks of a scenario calling `api` ([`defaults`] or [`pooled_defaults`]).
pub fn defaults_for(api: crate::scenario::Api) -> Vec<Check> {
    if api.generates() {
        defaults()
    } else {
        pooled_defaults()
    }
}

/// Apply overrides: every metric named by an override loses its other checks.
pub fn with_overrides(mut checks: Vec<Check>, overrides: &[Check]) -> Vec<Check> {
    checks.retain(|c| !overrides.iter().any(|o| o.metric == c.metric));
    checks.extend(overrides.iter().cloned());
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_every_form() {
        let p = |s| parse_override(s).unwrap().bound;
        assert_eq!(
            p("p99_ttft_ms=+15%"),
            Bound::Increase(Threshold::Relative(0.15))
        );
        assert_eq!(
            p("request_throughput=-5%"),
            Bound::Decrease(Threshold::Relative(0.05))
        );
        assert_eq!(
            p("error_rate=+0.01"),
            Bound::Increase(Threshold::Absolute(0.01))
        );
        assert_eq!(p("error_rate<=0.02"), Bound::Max(0.02));
        assert_eq!(p("request_throughput>=4.5"), Bound::Min(4.5));
        assert_eq!(
            parse_override(" median_tpot_ms = +10% ").unwrap().metric,
            "median_tpot_ms"
        );
    }

    /// What compare prints (`checks:` lists `metric +10%,floor=2ms`, notes `metric+10%`)
    /// can be pasted back into `--threshold`.
    #[test]
    fn overrides_accept_the_form_compare_prints() {
        for text in [
            "median_ttft_ms=+10%,floor=2ms",
            "request_throughput=-5%",
            "error_rate=+0.01",
            "error_rate<=0.15",
        ] {
            let c = parse_override(text).unwrap();
            for printed in [
                format!("{} {}", c.metric, c.threshold_text()),
                format!("{}{}", c.metric, c.threshold_text()),
            ] {
                assert_eq!(parse_override(&printed).unwrap(), c, "{printed}");
            }
        }
        assert_eq!(
            parse_override("median_ttft_ms +10%").unwrap().bound,
            Bound::Increase(Threshold::Relative(0.10))
        );
        // The `checks:` line's form, floor 0 included.
        let c = parse_override("request_throughput -15%,floor=0").unwrap();
        assert_eq!(
            (c.bound, c.floor),
            (Bound::Decrease(Threshold::Relative(0.15)), 0.0)
        );
    }

    #[test]
    fn bad_overrides_are_refused_with_a_hint() {
        for bad in [
            "p99_ttft_ms=15%",
            "p99_ttft_ms",
            "p99_ttft_ms=+ten%",
            "=+5%",
            "error_rate<=lots",
            "p99_ttft_ms=+-5%",
        ] {
            assert!(parse_override(bad).is_err(), "{bad} accepted");
        }
        let e = parse_override("p99_ttft=+15%").unwrap_err().0;
        assert!(e.contains("did you mean `p99_ttft_ms`"), "{e}");
    }

    #[test]
    fn gate_rules_become_checks_and_overrides_replace_them() {
        let rules: Vec<GateRule> = serde_json::from_value(serde_json::json!([
            { "metric": "request_throughput", "max_decrease": "5%" },
            { "metric": "error_rate", "max": 0.02, "max_increase": 0.01 }
        ]))
        .unwrap();
        let checks = from_gate_rules(&rules).unwrap();
        assert_eq!(checks.len(), 3);
        let o = parse_override("error_rate<=0.05").unwrap();
        let merged = with_overrides(checks, &[o]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[1].bound, Bound::Max(0.05));
        let bad: Vec<GateRule> =
            serde_json::from_value(serde_json::json!([{ "metric": "qpss", "min": 1 }])).unwrap();
        assert!(from_gate_rules(&bad).unwrap_err().0.contains("`qps`"));
    }

    #[test]
    fn defaults_are_valid_metrics() {
        for c in defaults() {
            validate_metric(&c.metric).unwrap();
        }
    }

    #[test]
    fn floors_default_per_metric_and_are_overridable() {
        assert_eq!(default_floor("median_ttft_ms"), 2.0);
        assert_eq!(default_floor("p99_e2el_ms"), 2.0);
        assert_eq!(default_floor("median_tpot_ms"), 0.5);
        assert_eq!(default_floor("p99_itl_ms"), 0.5);
        assert_eq!(default_floor("request_throughput"), 0.0);
        assert_eq!(default_floor("error_rate"), 0.0);
        let p = |s| parse_override(s).unwrap();
        assert_eq!(p("median_ttft_ms=+10%").floor, 2.0);
        assert_eq!(p("median_ttft_ms=+10%,floor=5ms").floor, 5.0);
        assert!((p("median_ttft_ms=+10%, floor = 0.005s").floor - 5.0).abs() < 1e-9);
        assert_eq!(p("median_ttft_ms=+10%,floor=7").floor, 7.0);
        assert_eq!(p("request_throughput=-5%,floor=0.5").floor, 0.5);
        assert_eq!(
            p("median_ttft_ms=+10%,floor=5ms").to_string(),
            "median_ttft_ms+10%,floor=5ms"
        );
        for bad in [
            "request_throughput=-5%,floor=5ms",
            "error_rate<=0.02,floor=0.01",
            "median_ttft_ms=+10%,flor=5ms",
            "median_ttft_ms=+10%,floor=-1ms",
            "median_ttft_ms=+10%,floor=fast",
        ] {
            let e = parse_override(bad);
            assert!(e.is_err(), "{bad} accepted");
        }
        let rules: Vec<GateRule> = serde_json::from_value(serde_json::json!([
            { "metric": "median_ttft_ms", "max_increase": "10%", "min_change": "15ms" },
            { "metric": "request_throughput", "max_decrease": "5%", "min_change": 0.5 },
            { "metric": "median_tpot_ms", "max_increase": "10%" }
        ]))
        .unwrap();
        let floors: Vec<f64> = from_gate_rules(&rules)
            .unwrap()
            .iter()
            .map(|c| c.floor)
            .collect();
        assert_eq!(floors, [15.0, 0.5, 0.5]);
        let bad: Vec<GateRule> = serde_json::from_value(serde_json::json!([
            { "metric": "request_throughput", "max_decrease": "5%", "min_change": "1s" }
        ]))
        .unwrap();
        assert!(from_gate_rules(&bad)
            .unwrap_err()
            .0
            .contains("no time unit"));
    }
}
