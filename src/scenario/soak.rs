//! Checks of duration rungs (soaks): `load.duration`, `load.interval` and
//! `workload.prompt_pool`, and the keys a duration rung does not combine with.

use std::time::Duration;

use serde_json::Value;

use super::defaults::{DEFAULT_PROMPT_POOL, DEFAULT_SOAK_INTERVAL};
use super::diagnostic::Problem;
use super::limits;
use super::limits::MAX_DURATION;
use super::values::DurationStr;
use super::yaml::Seg;

/// Shortest `load.interval`: each one rewrites the rung's summary file.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Longest `load.interval` (a crash loses at most one interval of results).
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// Most requests a duration rung may send (request indices are 32-bit).
pub const MAX_TIMED_REQUESTS: f64 = u32::MAX as f64;

fn p(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|k| Seg::Key((*k).into())).collect()
}

fn get<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter()
        .try_fold(v, |v, k| v.get(*k))
        .filter(|x| !x.is_null())
}

/// A duration key's value, when it parses (the schema reports one that does not).
fn duration(v: &Value, keys: &[&str]) -> Option<Duration> {
    get(v, keys)
        .and_then(Value::as_str)
        .and_then(|s| DurationStr::parse(s).ok())
        .map(|d| d.0)
}

/// Every problem of the soak keys.
pub(super) fn check(v: &Value, out: &mut Vec<Problem>) {
    let Some(d) = get(v, &["load", "duration"]) else {
        for (keys, what) in [
            (["load", "interval"], "interval"),
            (["workload", "prompt_pool"], "prompt_pool"),
        ] {
            if get(v, &keys).is_some() {
                out.push(
                    Problem::key(
                        p(&keys),
                        format!("`{what}` applies to a rung run for a duration (`load.duration`)"),
                    )
                    .hint(format!(
                        "remove `{what}`, or add e.g. `duration: 10m` under `load`"
                    )),
                );
            }
        }
        return;
    };
    let length = d
        .as_str()
        .and_then(|s| DurationStr::parse(s).ok())
        .map(|d| d.0);
    if let Some(t) = length {
        if t.is_zero() || t > MAX_DURATION {
            out.push(
                Problem::value(
                    p(&["load", "duration"]),
                    format!(
                        "a rung's duration must be above 0 and at most 7 days, found {}",
                        DurationStr(t)
                    ),
                )
                .hint("e.g. `duration: 60m` for an hour-long soak"),
            );
        }
    }
    super::incompatible::check(v, super::incompatible::With::Duration, out);
    if let Some(i) = duration(v, &["load", "interval"]) {
        if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&i) {
            out.push(
                Problem::value(
                    p(&["load", "interval"]),
                    format!(
                        "the interval must be from 100ms to 1h, found {}",
                        DurationStr(i)
                    ),
                )
                .hint(
                    "10s (the default) prints a line and saves the rung's results every 10 seconds",
                ),
            );
        }
    }
    let pool = get(v, &["workload", "prompt_pool"]).and_then(Value::as_f64);
    if let Some(n) = pool {
        if n < 1.0 || n.fract() != 0.0 || n > limits::MAX_REQUESTS_PER_RUNG as f64 {
            out.push(
                Problem::value(
                    p(&["workload", "prompt_pool"]),
                    format!(
                        "must be a whole number from 1 to {}, found {n}",
                        limits::MAX_REQUESTS_PER_RUNG
                    ),
                )
                .hint("1000 (the default) distinct prompts, cycled in order"),
            );
        }
    }
    let warmup = get(v, &["load", "warmup_requests"])
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let pool = pool.unwrap_or(f64::from(DEFAULT_PROMPT_POOL));
    let len = get(v, &["workload", "input_tokens"])
        .and_then(Value::as_u64)
        .unwrap_or(512);
    let random = get(v, &["workload", "dataset"])
        .and_then(Value::as_str)
        .is_none_or(|d| d == "random");
    if let Some(m) = limits::rung_size_problem((pool + warmup) as u64, if random { len } else { 0 })
    {
        out.push(
            Problem::value(p(&["workload", "prompt_pool"]), m)
                .hint("a smaller pool is cycled more often"),
        );
    }
    // Warmup requests count toward the duration: at the slowest rate they must leave some.
    let slowest = get(v, &["load", "rates"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(get(v, &["load", "baseline_rate"]))
        .filter_map(Value::as_f64)
        .filter(|r| *r > 0.0)
        .reduce(f64::min);
    if let (Some(rate), Some(t)) = (slowest, length) {
        let takes = warmup / rate;
        if warmup > 0.0 && takes >= t.as_secs_f64() {
            out.push(
                Problem::value(
                    p(&["load", "warmup_requests"]),
                    format!(
                        "at rate {} req/s, {} warmup requests take about {}, all of \
                         `load.duration` {}: no request of the rung would be measured",
                        limits::show(rate),
                        limits::show(warmup),
                        DurationStr(Duration::from_secs_f64(takes.ceil())),
                        DurationStr(t)
                    ),
                )
                .hint(format!(
                    "warmup requests count toward the duration: lower `warmup_requests` (e.g. \
                     {}) or raise `load.duration`",
                    (rate * t.as_secs_f64() / 10.0).floor().max(1.0)
                )),
            );
        }
    }
    // Request indices are 32-bit: rate × duration must fit.
    let fastest = get(v, &["load", "rates"])
        .and_then(Value::as_array)
        .and_then(|r| r.iter().filter_map(Value::as_f64).reduce(f64::max));
    if let (Some(rate), Some(t)) = (fastest, length) {
        let n = rate * t.as_secs_f64() + warmup;
        if n > MAX_TIMED_REQUESTS {
            out.push(
                Problem::value(
                    p(&["load", "duration"]),
                    format!(
                        "rate {} for {} is about {} requests, more than a rung may send ({})",
                        limits::show(rate),
                        DurationStr(t),
                        limits::show(n.round()),
                        MAX_TIMED_REQUESTS
                    ),
                )
                .hint("shorten the duration or lower the rate"),
            );
        }
    }
}

/// Warnings about a valid soak, for `ladder validate` and `ladder run` to print: warmup
/// taking half of a rate rung's duration or more, and an interval that leaves the rung no
/// live line or partial save before it ends.
pub fn notes(s: &super::types::Scenario) -> Vec<String> {
    let Some(t) = s.load.duration.map(|d| d.0) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let warmup = f64::from(s.load.warmup_requests);
    let slowest = s.rungs().into_iter().filter(|r| *r > 0.0).reduce(f64::min);
    if let (true, Some(rate)) = (s.load.concurrency.is_empty() && warmup > 0.0, slowest) {
        let share = warmup / rate / t.as_secs_f64();
        if share >= 0.5 {
            out.push(format!(
                "load.warmup_requests: at rate {} req/s, {} warmup requests take about {:.0}% of \
                 load.duration {} (they count toward it), so the rung measures only the rest; \
                 lower warmup_requests or raise load.duration",
                limits::show(rate),
                s.load.warmup_requests,
                (share * 100.0).min(100.0),
                DurationStr(t)
            ));
        }
    }
    let every = s.load.interval.map_or(DEFAULT_SOAK_INTERVAL, |i| i.0);
    if every >= t {
        out.push(format!(
            "load.interval {} is not shorter than load.duration {}: the rung prints no live \
             line while it sends and saves no partial results before it ends (a crash loses \
             all of it); set load.interval below the duration, e.g. `interval: {}`",
            DurationStr(every),
            DurationStr(t),
            DurationStr((t / 5).max(Duration::from_millis(1)))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(v: Value) -> Vec<String> {
        let mut out = Vec::new();
        check(&v, &mut out);
        out.iter()
            .map(|p| format!("{}: {}", p.message, p.hint.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn a_plain_soak_has_no_problem() {
        let v = json!({"load": {"rates": [10], "duration": "5s", "interval": "1s"},
                       "workload": {"prompt_pool": 50}});
        assert_eq!(problems(v), Vec::<String>::new());
        let v = json!({"load": {"concurrency": [4], "duration": "60m"}});
        assert_eq!(problems(v), Vec::<String>::new());
    }

    #[test]
    fn combinations_a_soak_does_not_take_are_refused_with_a_hint() {
        let v = json!({"load": {"rates": [10], "duration": "5s", "repeats": 3},
                       "workload": {"requests_per_rung": 100}});
        let found = problems(v);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("requests_per_rung") && found[0].contains("prompt_pool"));
        assert!(found[1].contains("repeats"));
        let v = json!({"load": {"ramp": {"from": 1, "to": 2, "over": "1m"}, "duration": "5s"}});
        assert!(problems(v)[0].contains("ramp"));
        let v = json!({"load": {"rates": [1], "duration": "5s"},
                       "workload": {"sessions": {"turns": 3}}});
        let found = problems(v);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("sessions") && found[0].contains("remove `duration`"));
    }

    #[test]
    fn soak_keys_need_a_duration_and_values_in_range() {
        let v = json!({"load": {"rates": [10], "interval": "1s"}, "workload": {"prompt_pool": 5}});
        let found = problems(v);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|f| f.contains("load.duration")));
        let v = json!({"load": {"rates": [10], "duration": "0s", "interval": "10ms"},
                       "workload": {"prompt_pool": 0}});
        assert_eq!(problems(v).len(), 3);
        let v = json!({"load": {"rates": [100000], "duration": "7days"}});
        assert!(problems(v)[0].contains("more than a rung may send"));
    }

    #[test]
    fn warmup_that_takes_the_whole_duration_is_refused() {
        // 50 warmup requests at the slowest rung (the baseline, 5 req/s) take 10 s.
        let v = json!({"load": {"baseline_rate": 5, "rates": [20], "duration": "10s",
                                "warmup_requests": 50}});
        let found = problems(v);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("at rate 5 req/s, 50 warmup requests take about 10s")
                && found[0].contains("lower `warmup_requests` (e.g. 5)"),
            "{found:?}"
        );
        let v = json!({"load": {"rates": [20], "duration": "10s", "warmup_requests": 50}});
        assert_eq!(problems(v), Vec::<String>::new());
        // A concurrency rung's warmup time depends on the server: not judged here.
        let v = json!({"load": {"concurrency": [2], "duration": "1s", "warmup_requests": 500}});
        assert_eq!(problems(v), Vec::<String>::new());
    }
}
