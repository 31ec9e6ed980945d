//! Multi-turn chat sessions (`workload.sessions`): their type and their scenario checks.
//!
//! A session is a conversation of several turns: each turn sends the whole conversation so
//! far (every earlier user message and the answer the server actually gave to it) plus a new
//! user message, so the prompt grows turn by turn. docs/workloads.md describes the shape.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::defaults::default_requests_per_rung;
use super::diagnostic::Problem;
use super::values::DurationStr;
use super::yaml::Seg;

/// Most turns of one session.
pub const MAX_TURNS: u32 = 1000;

/// Longest `workload.sessions.think_time`.
pub const MAX_SESSION_THINK_TIME: Duration = Duration::from_secs(3600);

/// `workload.sessions`: every request of the rung belongs to a conversation of several
/// turns, each carrying the conversation so far as its history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sessions {
    /// Turns per session: a number (`4`) or a range drawn uniformly per session from the
    /// seed (`{min: 2, max: 6}`).
    pub turns: Turns,
    /// Pause between a turn's answer and the same session's next turn, e.g. `2s` (a user
    /// reading and typing). Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<DurationStr>,
}

impl Sessions {
    /// The pause between turns (0 when unset).
    pub fn think(&self) -> Duration {
        self.think_time.map_or(Duration::ZERO, |d| d.0)
    }
}

/// How many turns a session has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Turns {
    /// Every session has this many turns.
    Fixed(u32),
    /// Each session's count is drawn uniformly from `min..=max`.
    Range {
        /// Fewest turns (at least 1).
        min: u32,
        /// Most turns (at least `min`).
        max: u32,
    },
}

impl Turns {
    /// The fewest and the most turns a session can have.
    pub fn bounds(self) -> (u32, u32) {
        match self {
            Turns::Fixed(n) => (n, n),
            Turns::Range { min, max } => (min, max),
        }
    }
}

fn p(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|k| Seg::Key((*k).into())).collect()
}

fn get<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter()
        .try_fold(v, |v, k| v.get(*k))
        .filter(|x| !x.is_null())
}

/// The scenario checks of `workload.sessions`; nothing without it.
pub(super) fn check(v: &Value, out: &mut Vec<Problem>) {
    let Some(s) = get(v, &["workload", "sessions"]) else {
        return;
    };
    let api = get(v, &["endpoint", "api"])
        .and_then(Value::as_str)
        .unwrap_or("completions");
    if api != "chat" {
        out.push(
            Problem::key(
                p(&["workload", "sessions"]),
                format!(
                    "sessions send a conversation of chat messages, which needs `endpoint.api: chat`, not `{api}`"
                ),
            )
            .hint("set `endpoint.api: chat` (the server's /v1/chat/completions)"),
        );
    }
    super::incompatible::check(v, super::incompatible::With::Sessions, out);
    if get(v, &["load", "repeats"])
        .and_then(Value::as_f64)
        .is_some_and(|r| r > 1.0)
    {
        out.push(
            Problem::value(
                p(&["load", "repeats"]),
                "repeats of a session rung are not supported yet: each repeat would need its own session ids",
            )
            .hint("remove `repeats` (or run the scenario several times and compare the folders)"),
        );
    }
    let turns = |key: &[&str], n: &Value, out: &mut Vec<Problem>| -> Option<u32> {
        let x = n.as_f64()?;
        if x < 1.0 || x > f64::from(MAX_TURNS) || x.fract() != 0.0 {
            out.push(
                Problem::value(
                    p(key),
                    format!("turns must be a whole number from 1 to {MAX_TURNS}, found {x}"),
                )
                .hint("a chat session typically has 2 to 20 turns"),
            );
            return None;
        }
        Some(x as u32)
    };
    let most = match s.get("turns") {
        Some(n @ Value::Number(_)) => turns(&["workload", "sessions", "turns"], n, out),
        Some(Value::Object(r)) => {
            let lo = r
                .get("min")
                .and_then(|n| turns(&["workload", "sessions", "turns", "min"], n, out));
            let hi = r
                .get("max")
                .and_then(|n| turns(&["workload", "sessions", "turns", "max"], n, out));
            if let (Some(lo), Some(hi)) = (lo, hi) {
                if lo > hi {
                    out.push(
                        Problem::value(
                            p(&["workload", "sessions", "turns", "max"]),
                            format!("max ({hi}) is below min ({lo})"),
                        )
                        .hint("each session's turn count is drawn uniformly from min..=max"),
                    );
                }
            }
            hi
        }
        _ => None, // the schema reports a missing or mistyped `turns`
    };
    // Every turn is a request: the rung's size is its sessions times their turns.
    let sessions = get(v, &["workload", "requests_per_rung"])
        .and_then(Value::as_f64)
        .unwrap_or(f64::from(default_requests_per_rung()))
        + get(v, &["load", "warmup_requests"])
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
    if let Some(most) = most {
        let requests = sessions * f64::from(most);
        if requests > super::limits::MAX_REQUESTS_PER_RUNG as f64 {
            out.push(
                Problem::value(
                    p(&["workload", "sessions", "turns"]),
                    format!(
                        "{sessions} sessions (warmup included) of up to {most} turns make up to \
                         {requests} requests in a rung, more than the limit of {}",
                        super::limits::MAX_REQUESTS_PER_RUNG
                    ),
                )
                .hint("with sessions, `requests_per_rung` counts sessions: lower it or the turns"),
            );
        }
    }
    if let Some(t) = s.get("think_time").and_then(Value::as_str) {
        if let Ok(d) = DurationStr::parse(t) {
            if d.0 > MAX_SESSION_THINK_TIME {
                out.push(
                    Problem::value(
                        p(&["workload", "sessions", "think_time"]),
                        format!("think_time {t} is longer than the limit of 1h"),
                    )
                    .hint("a user's pause between turns is typically 0 to a few seconds"),
                );
            }
        }
    }
}
