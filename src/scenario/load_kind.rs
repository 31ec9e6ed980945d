//! What a ladder's rungs are: offered request rates (open loop) or numbers of closed-loop
//! users (`load.concurrency`). A rung is identified by one number either way (its rate, or
//! its user count, kept in the same `rate` field of summaries and run.json entries); the
//! kind says how to read and label that number.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::defaults::default_requests_per_rung;
use super::diagnostic::Problem;
use super::identity::rate_label;
use super::yaml::Seg;

/// Most users of one concurrency rung (each holds a connection and a task).
pub const MAX_USERS: u32 = 10_000;

/// Longest `load.think_time`.
pub const MAX_THINK_TIME: std::time::Duration = std::time::Duration::from_secs(3600);

/// How a ladder's rungs load the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    /// Open loop: requests arrive at the rung's rate (req/s), whatever the server does.
    #[default]
    Rate,
    /// Closed loop: the rung's number of users, each sending its next request when its
    /// previous one finished (plus `load.think_time`).
    Concurrency,
    /// Open loop at a trace's recorded times (`load.trace`); the rung's level is the replay
    /// speed.
    Trace,
    /// Open loop at a rate rising over the rung (`load.ramp`); the rung's level is the
    /// ramp's final rate.
    Ramp,
}

impl LoadKind {
    /// True for the default (rate) kind: run.json leaves it out then.
    pub fn is_rate(&self) -> bool {
        *self == LoadKind::Rate
    }

    /// The word for the kind, as `run.json` spells it.
    pub fn name(self) -> &'static str {
        match self {
            LoadKind::Rate => "rate",
            LoadKind::Concurrency => "concurrency",
            LoadKind::Trace => "trace",
            LoadKind::Ramp => "ramp",
        }
    }

    /// True when a rung's level grows the offered load in proportion (users, replay speed)
    /// rather than adding req/s: the knee's throughput test then scales the previous rung's
    /// throughput by the level's growth.
    pub fn proportional(self) -> bool {
        matches!(self, LoadKind::Concurrency | LoadKind::Trace)
    }

    /// Unit of a rung's level: `req/s` or `users`.
    pub fn unit(self) -> &'static str {
        match self {
            LoadKind::Rate | LoadKind::Ramp => "req/s",
            LoadKind::Concurrency => "users",
            LoadKind::Trace => "x",
        }
    }

    /// Axis and column label: `rate (req/s)` or `concurrency (users)`.
    pub fn axis(self) -> &'static str {
        match self {
            LoadKind::Rate => "rate (req/s)",
            LoadKind::Concurrency => "concurrency (users)",
            LoadKind::Trace => "trace speed (x)",
            LoadKind::Ramp => "ramp final rate (req/s)",
        }
    }

    /// The analysis line naming the highest level within SLO.
    pub fn within_slo(self) -> &'static str {
        match self {
            LoadKind::Rate => "Highest rate within SLO",
            LoadKind::Concurrency => "Most users within SLO",
            LoadKind::Trace => "Fastest speed within SLO",
            LoadKind::Ramp => "Ramp within SLO",
        }
    }

    /// A rung's level with its unit: `5 req/s`, `16 users`, `1 user`.
    pub fn level(self, level: f64) -> String {
        match self {
            LoadKind::Concurrency if level == 1.0 => "1 user".into(),
            LoadKind::Trace => format!("{}x", rate_label(level)),
            _ => format!("{} {}", rate_label(level), self.unit()),
        }
    }

    /// A rung named for humans: `rate 5 req/s`, `concurrency 16 users`.
    pub fn rung(self, level: f64) -> String {
        match self {
            LoadKind::Ramp => format!("ramp to {}", self.level(level)),
            _ => format!("{} {}", self.name(), self.level(level)),
        }
    }
}

fn p(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|k| Seg::Key((*k).into())).collect()
}

fn load_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get("load")?.get(key).filter(|x| !x.is_null())
}

/// The checks of the ladder's kind: exactly one of `rates` and `concurrency`, levels that
/// are whole, in range and strictly increasing, and no open-loop-only key on a closed-loop
/// ladder (or the reverse).
pub(super) fn check(v: &Value, out: &mut Vec<Problem>) {
    if v.get("load").is_none_or(|l| !l.is_object()) {
        return; // the schema reports a missing or mistyped `load`
    }
    let rates = load_key(v, "rates");
    if load_key(v, "search").is_some() {
        return; // scenario::search checks a search and refuses `rates` or `concurrency` beside it
    }
    if load_key(v, "trace").is_some() || load_key(v, "ramp").is_some() {
        return; // scenario::shapes checks those and refuses `rates` or `concurrency` beside them
    }
    let Some(levels) = load_key(v, "concurrency") else {
        if rates.is_none() {
            out.push(
                Problem::key(p(&["load"]), "the ladder has no rungs: set `rates` or `concurrency`")
                    .hint("`rates: [5, 10, 20]` offers requests per second (open loop); `concurrency: [1, 4, 16]` runs that many users, each sending its next request when the previous one finished (closed loop); `trace:` replays a recorded trace and `ramp:` raises the rate over one rung (docs/traces.md, docs/ramp.md)"),
            );
        }
        if load_key(v, "think_time").is_some() {
            out.push(
                Problem::key(p(&["load", "think_time"]), "think_time applies to a `concurrency` ladder (closed-loop users), not to `rates`")
                    .hint("remove `think_time`, or replace `rates` with `concurrency`"),
            );
        }
        return;
    };
    if let Some(t) = load_key(v, "think_time").and_then(Value::as_str) {
        if let Ok(d) = super::DurationStr::parse(t) {
            if d.0 > MAX_THINK_TIME {
                out.push(
                    Problem::value(
                        p(&["load", "think_time"]),
                        format!("think_time {t} is longer than the limit of 1h"),
                    )
                    .hint("a user's pause between requests is typically 0 to a few seconds"),
                );
            }
        }
    }
    if rates.is_some() {
        out.push(
            Problem::key(
                p(&["load", "concurrency"]),
                "a ladder has either `rates` (open loop, req/s) or `concurrency` (closed loop, users), not both",
            )
            .hint("keep one; run the other as its own scenario (compare never matches a rate ladder with a concurrency ladder)"),
        );
    }
    for (key, why) in [
        ("baseline_rate", "the first concurrency level is the reference rung (list 1 first for a light-load reference)"),
        ("max_concurrency", "a concurrency rung's level is already its number of requests in flight"),
        ("arrival", "closed-loop users send when their previous request finished, not on an arrival process"),
        ("burstiness", "closed-loop users send when their previous request finished, not on an arrival process"),
    ] {
        if load_key(v, key).is_some() {
            out.push(
                Problem::key(p(&["load", key]), format!("`{key}` applies to a `rates` ladder, not to `concurrency`"))
                    .hint(format!("remove `{key}`: {why}")),
            );
        }
    }
    let Some(levels) = levels.as_array() else {
        return; // the schema reports the type
    };
    if levels.is_empty() {
        out.push(
            Problem::value(
                p(&["load", "concurrency"]),
                "the ladder has no concurrency levels",
            )
            .hint("list at least one number of users, e.g. `concurrency: [1, 4, 16, 64]`"),
        );
    }
    // More users than measured requests: some users never send one, so the level is not what
    // the server saw (and a knee read on it would be an artefact of the rung's size).
    let requests = v
        .get("workload")
        .and_then(|w| w.get("requests_per_rung"))
        .and_then(Value::as_f64)
        .unwrap_or(f64::from(default_requests_per_rung()));
    // A rung run for a duration (`load.duration`) has no count of requests to run out of.
    let requests = match load_key(v, "duration") {
        Some(_) => f64::INFINITY,
        None => requests,
    };
    let mut prev: Option<f64> = None;
    for (i, c) in levels.iter().enumerate() {
        let Some(c) = c.as_f64() else { continue };
        let mut path = p(&["load", "concurrency"]);
        path.push(Seg::Index(i));
        if c.fract() != 0.0 || !(1.0..=f64::from(MAX_USERS)).contains(&c) {
            out.push(Problem::value(
                path,
                format!("a concurrency level is a whole number of users from 1 to {MAX_USERS}, found {c}"),
            ));
            continue;
        }
        if c > requests {
            out.push(
                Problem::value(
                    path.clone(),
                    format!(
                        "{c} users but only {requests} requests per rung: at most {requests} can \
                         ever be in flight, so this rung would not load the server with {c}"
                    ),
                )
                .hint(format!(
                    "raise workload.requests_per_rung to at least {} (a few requests per user) \
                     or lower the level",
                    3.0 * c
                )),
            );
        }
        if let Some(pr) = prev.filter(|pr| c <= *pr) {
            out.push(
                Problem::value(
                    path,
                    format!("concurrency levels must be strictly increasing, but {c} follows {pr}"),
                )
                .hint("sort the levels and remove duplicates"),
            );
        }
        prev = Some(prev.map_or(c, |x| x.max(c)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_above_the_requests_per_rung_are_refused() {
        let problems = |v: serde_json::Value| {
            let mut out = Vec::new();
            check(&v, &mut out);
            out.into_iter().map(|p| p.message).collect::<Vec<_>>()
        };
        let v = serde_json::json!({
            "workload": { "requests_per_rung": 32 },
            "load": { "concurrency": [16, 32, 64] }
        });
        let m = problems(v);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].contains("64 users but only 32 requests per rung"),
            "{m:?}"
        );
        // The default rung size (200) holds 128 users, not 256.
        let m = problems(serde_json::json!({ "load": { "concurrency": [128, 256] } }));
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("256 users but only 200"), "{m:?}");
    }

    #[test]
    fn labels_say_what_the_number_is() {
        assert_eq!(LoadKind::Rate.level(5.0), "5 req/s");
        assert_eq!(LoadKind::Concurrency.level(16.0), "16 users");
        assert_eq!(LoadKind::Concurrency.level(1.0), "1 user");
        assert_eq!(LoadKind::Concurrency.rung(4.0), "concurrency 4 users");
        assert_eq!(LoadKind::Rate.axis(), "rate (req/s)");
        assert_eq!(LoadKind::Trace.rung(2.0), "trace 2x");
        assert_eq!(LoadKind::Ramp.rung(50.0), "ramp to 50 req/s");
        assert_eq!(
            serde_json::to_string(&LoadKind::Concurrency).unwrap(),
            "\"concurrency\""
        );
    }
}
