//! Multi-turn sessions (`workload.sessions`): the session as a unit (how many were started
//! and completed, how long one took, turns never sent after a failure) and TTFT by turn
//! index, which rises with the history a turn carries.
//!
//! A rung gets these keys only when its requests carry a session (so other result files are
//! unchanged). The vLLM keys (`completed`, `request_throughput`, …) keep counting requests,
//! that is turns.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::latency::stats;
use super::read_error::ReadError;
use crate::record::RequestRecord;

/// The sessions of a rung's measured requests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionSummary {
    /// Measured sessions with at least one turn sent.
    pub sessions: u64,
    /// Sessions whose every planned turn succeeded.
    pub completed: u64,
    /// Turns the sessions were planned to have.
    pub turns_planned: u64,
    /// Planned turns never sent: the turns after a failed one (a failure ends its session),
    /// or after a stop. They count as neither completed nor failed requests.
    pub turns_not_sent: u64,
    /// Mean time from a completed session's first send to its last answer's end, ms (NaN
    /// when none completed).
    pub mean_duration_ms: f64,
    /// TTFT by turn index, first turn first.
    pub by_turn: Vec<TurnStats>,
}

/// One turn index's requests over the rung's sessions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TurnStats {
    /// The turn index (0: the first, with no history).
    pub turn: u32,
    /// Requests sent at this index.
    pub requests: u64,
    /// Of them, successful.
    pub completed: u64,
    /// Median TTFT of the successful ones, ms (null when none).
    #[serde(with = "nan_as_null")]
    pub median_ttft_ms: f64,
    /// 99th-percentile TTFT, ms.
    #[serde(with = "nan_as_null")]
    pub p99_ttft_ms: f64,
    /// Mean prompt tokens (the server's count where it gave one, else ladder's), showing
    /// the history's growth.
    #[serde(with = "nan_as_null")]
    pub mean_prompt_tokens: f64,
}

mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Key of the per-turn table in `result_rate_<rate>.json`.
const BY_TURN: &str = "sessions_by_turn";

impl SessionSummary {
    /// From a rung's measured requests; `None` when none belongs to a session.
    pub fn of(measured: &[&RequestRecord]) -> Option<SessionSummary> {
        // Per session: planned turns, turns sent, all ok, first send, last end.
        struct One {
            planned: u32,
            sent: u32,
            ok: bool,
            first: f64,
            last: f64,
        }
        let mut sessions: BTreeMap<u32, One> = BTreeMap::new();
        let mut turns: BTreeMap<u32, (u64, Vec<f64>, f64, u64)> = BTreeMap::new();
        for r in measured {
            let Some(st) = r.session else { continue };
            let one = sessions.entry(st.session).or_insert(One {
                planned: st.turns,
                sent: 0,
                ok: true,
                first: f64::INFINITY,
                last: 0.0,
            });
            one.sent += 1;
            one.ok &= r.ok();
            one.first = one.first.min(ms(r.sent));
            one.last = one.last.max(ms(r.end));
            let t = turns.entry(st.turn).or_default();
            t.0 += 1;
            if let (true, Some(ttft)) = (r.ok(), r.ttft()) {
                t.1.push(ms(ttft));
            }
            t.2 += f64::from(r.server_prompt_tokens.unwrap_or(r.input_tokens));
            t.3 += u64::from(r.ok());
        }
        if sessions.is_empty() {
            return None;
        }
        let done: Vec<f64> = sessions
            .values()
            .filter(|s| s.ok && s.sent == s.planned)
            .map(|s| s.last - s.first)
            .collect();
        let by_turn = turns
            .into_iter()
            .map(|(turn, (requests, ttft, prompt, completed))| {
                let s = stats(ttft);
                let has = |v: f64| if s.count > 0 { v } else { f64::NAN };
                TurnStats {
                    turn,
                    requests,
                    completed,
                    median_ttft_ms: has(s.median),
                    p99_ttft_ms: has(s.p99),
                    mean_prompt_tokens: prompt / requests as f64,
                }
            })
            .collect();
        Some(SessionSummary {
            sessions: sessions.len() as u64,
            completed: done.len() as u64,
            turns_planned: sessions.values().map(|s| u64::from(s.planned)).sum(),
            turns_not_sent: sessions
                .values()
                .map(|s| u64::from(s.planned.saturating_sub(s.sent)))
                .sum(),
            mean_duration_ms: if done.is_empty() {
                f64::NAN
            } else {
                done.iter().sum::<f64>() / done.len() as f64
            },
            by_turn,
        })
    }

    /// The metric keys a gate rule may name (present only in session rungs).
    pub fn keys() -> Vec<String> {
        let mut m = Map::new();
        SessionSummary::default().put(&mut m, Value::from);
        m.into_iter()
            .filter(|(_, v)| v.is_number())
            .map(|(k, _)| k)
            .collect()
    }

    /// Adds the flat keys of `result_rate_<rate>.json` (the per-turn table is
    /// [`SessionSummary::put_table`]'s).
    pub fn put(&self, m: &mut Map<String, Value>, num: fn(f64) -> Value) {
        m.insert("sessions".into(), self.sessions.into());
        m.insert("sessions_completed".into(), self.completed.into());
        m.insert("session_turns_planned".into(), self.turns_planned.into());
        m.insert("session_turns_not_sent".into(), self.turns_not_sent.into());
        m.insert(
            "mean_session_duration_ms".into(),
            num(self.mean_duration_ms),
        );
    }

    /// Adds the per-turn table (`sessions_by_turn`).
    pub fn put_table(&self, m: &mut Map<String, Value>) {
        m.insert(
            BY_TURN.into(),
            serde_json::to_value(&self.by_turn).unwrap_or(Value::Null),
        );
    }

    /// Reads the keys back: `None` for a rung without them; an error names a key that is
    /// present but broken.
    pub fn get(m: &Map<String, Value>) -> Result<Option<SessionSummary>, ReadError> {
        let Some(sessions) = m.get("sessions") else {
            return Ok(None);
        };
        let count = |k: &str| -> Result<u64, ReadError> {
            m.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| ReadError::not_integer(k))
        };
        Ok(Some(SessionSummary {
            sessions: sessions
                .as_u64()
                .ok_or_else(|| ReadError::not_a_count("sessions"))?,
            completed: count("sessions_completed")?,
            turns_planned: count("session_turns_planned")?,
            turns_not_sent: count("session_turns_not_sent")?,
            mean_duration_ms: match m.get("mean_session_duration_ms") {
                Some(Value::Null) => f64::NAN,
                Some(v) => v
                    .as_f64()
                    .ok_or_else(|| ReadError::not_a_number("mean_session_duration_ms"))?,
                None => return Err(ReadError::missing("mean_session_duration_ms")),
            },
            by_turn: match m.get(BY_TURN) {
                None => Vec::new(),
                Some(v) => serde_json::from_value(v.clone()).map_err(|e| ReadError::Section {
                    key: BY_TURN,
                    reason: e.to_string(),
                })?,
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::record::{ErrorClass, RequestError, SessionTurn};

    fn turn(session: u32, turn: u32, turns: u32, ttft_ms: u64, ok: bool) -> RequestRecord {
        let sent = Duration::from_millis(1000 * u64::from(session) + 100 * u64::from(turn));
        RequestRecord {
            sent,
            first_token: Some(sent + Duration::from_millis(ttft_ms)),
            end: sent + Duration::from_millis(50),
            input_tokens: 10 * (turn + 1),
            session: Some(SessionTurn {
                session,
                turn,
                turns,
            }),
            error: (!ok).then(|| RequestError {
                class: ErrorClass::Server5xx,
                status: Some(500),
                detail: String::new(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn sessions_turns_and_ttft_by_turn() {
        let records = [
            turn(0, 0, 3, 10, true),
            turn(0, 1, 3, 20, true),
            turn(0, 2, 3, 30, true),
            // Session 1 failed at its second turn: its third was never sent.
            turn(1, 0, 3, 12, true),
            turn(1, 1, 3, 22, false),
        ];
        let refs: Vec<&RequestRecord> = records.iter().collect();
        let s = SessionSummary::of(&refs).unwrap();
        assert_eq!((s.sessions, s.completed), (2, 1));
        assert_eq!((s.turns_planned, s.turns_not_sent), (6, 1));
        // Session 0: first send at 0 ms, last end at 200 + 50 ms.
        assert!((s.mean_duration_ms - 250.0).abs() < 1e-9);
        assert_eq!(s.by_turn.len(), 3);
        assert_eq!((s.by_turn[0].requests, s.by_turn[0].completed), (2, 2));
        assert!((s.by_turn[0].median_ttft_ms - 11.0).abs() < 1.0);
        assert_eq!((s.by_turn[1].requests, s.by_turn[1].completed), (2, 1));
        assert!((s.by_turn[1].median_ttft_ms - 20.0).abs() < 1e-9);
        assert!((s.by_turn[2].mean_prompt_tokens - 30.0).abs() < 1e-9);

        let mut m = Map::new();
        s.put(&mut m, |v| {
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
        });
        s.put_table(&mut m);
        assert_eq!(SessionSummary::get(&m).unwrap().unwrap(), s);
        assert!(SessionSummary::of(&[]).is_none());
    }
}
