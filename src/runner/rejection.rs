//! Deterministic rejections: a server that answers every request of a rung with the same
//! client error (400 "exceeds the context", 404 unknown model, 413, 422, 401) is telling the
//! user their requests are wrong. Sending the rest of the ladder would only average that
//! into an "error rate 100 %"; the rung stops after a few and the run says why. So does a
//! server that stopped listening during the run: connections refused in a row (nothing
//! listens on the port: it went down or is restarting) measure nothing more, on this rung or
//! the ones above it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::record::{ErrorClass, RequestRecord};

/// Identical rejections, with no success on the rung, after which the rung stops.
pub const STOP_AFTER: u64 = 5;

/// How long connections must have been refused (at least [`STOP_AFTER`] of them, no answer
/// completed since) before the ladder stops: a server restarting in a few seconds (llama.cpp
/// with a small model) comes back, and its gap is counted as `connect` failures. The same at
/// a rung's start: a refusal comes back in microseconds and an answer in seconds, so a count
/// alone would stop a rung whose first answers are still on their way.
pub const REFUSED_FOR: Duration = Duration::from_secs(5);

/// The statuses that say "this request is wrong", whatever the load.
fn deterministic(class: ErrorClass, status: Option<u16>) -> bool {
    match class {
        ErrorClass::Auth => true,
        ErrorClass::Client4xx => matches!(status, Some(400 | 404 | 405 | 413 | 415 | 422)),
        _ => false,
    }
}

/// Why the rung was stopped: the class and status every one of `count` requests got, and
/// the server's own message for the first of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub class: ErrorClass,
    pub status: Option<u16>,
    pub detail: String,
    pub count: u64,
    /// Requests of the rung that succeeded before the streak: 0, except for a key that
    /// stopped working during the rung ([`STOP_AFTER`] auth rejections in a row).
    pub succeeded: u64,
}

impl Rejection {
    /// What to tell the user, with the likely cause of the status.
    pub fn describe(&self, kind: crate::scenario::LoadKind, rate: f64) -> String {
        let rate = kind.level(rate);
        let status = self
            .status
            .map(|s| format!("HTTP {s} "))
            .unwrap_or_default();
        if self.class == ErrorClass::Connect {
            return format!(
                "rung {rate}: {} connections in a row were refused ({}: {}), so the ladder \
                 stopped: nothing listens at the endpoint any more; the server went down or \
                 restarted during the run (read its log). The rungs measured before are kept",
                self.count, self.class, self.detail
            );
        }
        if self.succeeded > 0 {
            return format!(
                "rung {rate}: the server rejected {} requests in a row as unauthorised ({}: \
                 {status}{}) after {} had succeeded on this rung, so the ladder stopped: the \
                 key stopped working during the run (rotated, expired or revoked, or the \
                 server restarted with another key), not overload. The requests after it \
                 measure nothing; check endpoint.api_key_env and the server's key, then run \
                 again",
                self.count, self.class, self.detail, self.succeeded
            );
        }
        let cause = match (self.class, self.status) {
            (ErrorClass::Auth, _) => {
                "the key is missing, wrong or not allowed: check endpoint.api_key_env"
            }
            (_, Some(400)) => {
                "a request the server cannot serve: most often a prompt plus max_tokens longer \
                 than its context (lower workload.input_tokens / output_tokens), or a parameter \
                 it does not accept"
            }
            (_, Some(404)) => "the model or the API path is unknown to the server: check `model`",
            (_, Some(413)) => "the request body is too large for the server or a gateway",
            (_, Some(422)) | (_, Some(415)) => {
                "the server refuses the request's shape or a parameter (try `api: chat` or \
                 `api: completions`)"
            }
            _ => "the server refuses these requests",
        };
        format!(
            "rung {rate}: the server rejected {} requests in a row the same way \
             ({}: {status}{}) and none succeeded, so the ladder stopped: a client error, not \
             overload. Likely cause: {cause}",
            self.count, self.class, self.detail
        )
    }
}

/// A rung stopped by a [`Rejection`]: the error the run ends with, in the words of
/// [`Rejection::describe`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", rejection.describe(*kind, *rate))]
pub struct RungRejected {
    /// The ladder's kind, for the rung's label.
    pub kind: crate::scenario::LoadKind,
    /// The rung's rate (or users).
    pub rate: f64,
    pub rejection: Rejection,
}

/// Connections refused in a row (no answer completed since), when the first of them came
/// back, and its detail. It is carried from one rung to the next ([`Watch::carrying`]): a
/// server that went down during a rung of 1–4 s (a capacity search's probes, a short
/// ladder's rungs) is still down at the next, and the streak's [`REFUSED_FOR`] counts from
/// its first refusal, not from each rung's start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Refusals {
    count: u64,
    since: Option<Instant>,
    detail: String,
}

/// Watches a rung's records as they arrive.
#[derive(Debug, Default)]
pub struct Watch {
    successes: u64,
    by_kind: BTreeMap<(&'static str, Option<u16>), (u64, String)>,
    refused: Refusals,
    /// Auth rejections since the last success, and the first one's detail: a key that
    /// stops working after requests succeeded fails every request after it, so a streak of
    /// them stops the rung even after successes (other client errors may be one prompt's).
    auth_streak: (u64, String),
}

/// A connect failure that says nothing listens on the port (not a timeout, DNS or TLS):
/// the OS's "Connection refused", as the preflight tells it apart.
fn refused(err: &crate::record::RequestError) -> bool {
    err.class == ErrorClass::Connect && err.detail.to_ascii_lowercase().contains("refused")
}

impl Watch {
    /// A rung's watch that goes on with the refusals the rung before it ended on.
    pub fn carrying(refused: Refusals) -> Watch {
        Watch {
            refused,
            ..Watch::default()
        }
    }

    /// The refusals in a row this rung ended on, for the next rung ([`Watch::carrying`]).
    pub fn refusals(&self) -> Refusals {
        self.refused.clone()
    }

    /// Take one record as it arrives; returns the rejection the first time the rung should
    /// stop.
    pub fn record(&mut self, rec: &RequestRecord) -> Option<Rejection> {
        self.record_at(rec, Instant::now())
    }

    /// [`Watch::record`] of a record that arrived at `now`.
    pub fn record_at(&mut self, rec: &RequestRecord, now: Instant) -> Option<Rejection> {
        let Some(err) = &rec.error else {
            self.successes += 1;
            self.refused = Refusals::default();
            self.auth_streak = (0, String::new());
            return None;
        };
        if err.class == ErrorClass::Auth {
            let (n, detail) = &mut self.auth_streak;
            if *n == 0 {
                *detail = err.detail.clone();
            }
            *n += 1;
            if self.successes > 0 && *n == STOP_AFTER {
                return Some(Rejection {
                    class: err.class,
                    status: err.status,
                    detail: detail.clone(),
                    count: *n,
                    succeeded: self.successes,
                });
            }
        }
        if refused(err) {
            let Refusals {
                count,
                since,
                detail,
            } = &mut self.refused;
            if *count == 0 {
                *since = Some(now);
                *detail = err.detail.clone();
            }
            *count += 1;
            // Once: the stop ends the rung, and a later refusal finds `Some(_)` taken.
            let long = since.is_some_and(|t| now.duration_since(t) >= REFUSED_FOR);
            if *count >= STOP_AFTER && long {
                let detail = std::mem::take(detail);
                let n = *count;
                *since = None;
                return Some(Rejection {
                    class: err.class,
                    status: None,
                    detail,
                    count: n,
                    succeeded: 0,
                });
            }
            return None;
        }
        if !deterministic(err.class, err.status) {
            return None;
        }
        let entry = self
            .by_kind
            .entry((err.class.key(), err.status))
            .or_insert_with(|| (0, err.detail.clone()));
        entry.0 += 1;
        (self.successes == 0 && entry.0 == STOP_AFTER).then(|| Rejection {
            class: err.class,
            status: err.status,
            detail: entry.1.clone(),
            count: entry.0,
            succeeded: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RequestError;

    fn failed(status: u16, detail: &str) -> RequestRecord {
        RequestRecord {
            error: Some(RequestError {
                class: ErrorClass::from_status(status),
                status: Some(status),
                detail: detail.into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn five_identical_rejections_without_a_success_stop_the_rung() {
        let mut w = Watch::default();
        for _ in 0..STOP_AFTER - 1 {
            assert_eq!(w.record(&failed(400, "exceed_context_size_error")), None);
        }
        // Other kinds of failure do not count towards it.
        assert_eq!(w.record(&failed(500, "boom")), None);
        assert_eq!(w.record(&failed(429, "slow down")), None);
        let r = w.record(&failed(400, "second message")).expect("stops");
        assert_eq!((r.status, r.count), (Some(400), STOP_AFTER));
        assert_eq!(r.detail, "exceed_context_size_error");
        assert!(
            r.describe(crate::scenario::LoadKind::Rate, 5.0)
                .contains("context"),
            "{}",
            r.describe(crate::scenario::LoadKind::Rate, 5.0)
        );
        // Said once.
        assert_eq!(w.record(&failed(400, "x")), None);
    }

    /// A key that stops working after requests succeeded (rotated, expired, a server
    /// restarted with another key): five auth rejections in a row stop the rung, though the
    /// rung had successes; one success between them starts the count again. A 400 after
    /// successes (one prompt too long) does not stop it.
    #[test]
    fn a_key_that_stops_working_mid_rung_stops_it_after_five_in_a_row() {
        let mut w = Watch::default();
        let ok = RequestRecord::default();
        for _ in 0..3 {
            assert_eq!(w.record(&ok), None);
        }
        for _ in 0..STOP_AFTER - 1 {
            assert_eq!(w.record(&failed(401, "invalid api key")), None);
        }
        // A request answered before the key changed resets the streak.
        assert_eq!(w.record(&ok), None);
        for _ in 0..STOP_AFTER - 1 {
            assert_eq!(w.record(&failed(401, "invalid api key")), None);
        }
        let r = w.record(&failed(401, "other")).expect("stops");
        assert_eq!((r.status, r.count, r.succeeded), (Some(401), STOP_AFTER, 4));
        assert_eq!(r.detail, "invalid api key");
        let text = r.describe(crate::scenario::LoadKind::Rate, 2.0);
        assert!(
            text.contains("after 4 had succeeded") && text.contains("key stopped working"),
            "{text}"
        );
        assert!(!text.contains("none succeeded"), "{text}");
        let mut w = Watch::default();
        assert_eq!(w.record(&ok), None);
        for _ in 0..20 {
            assert_eq!(w.record(&failed(400, "exceed_context_size_error")), None);
        }
    }

    fn connect(detail: &str) -> RequestRecord {
        RequestRecord {
            error: Some(RequestError {
                class: ErrorClass::Connect,
                status: None,
                detail: detail.into(),
            }),
            ..Default::default()
        }
    }

    /// A server killed during a short rung (a capacity search's probe of 1–4 s): its
    /// refusals go on counting in the rungs after it, from the first refusal, so the run
    /// stops once they span [`REFUSED_FOR`] instead of bisecting a dead server; a success in
    /// a later rung (a restart that came back) starts the count again.
    #[test]
    fn refusals_in_a_row_carry_from_one_short_rung_to_the_next() {
        const REFUSED: &str = "tcp connect error: Connection refused (os error 111)";
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Rung 1: answers, then refusals for 3 s (shorter than REFUSED_FOR): no stop.
        let mut w = Watch::default();
        w.record_at(&RequestRecord::default(), at(0));
        for i in 0..30 {
            assert_eq!(w.record_at(&connect(REFUSED), at(1_000 + 100 * i)), None);
        }
        let carried = w.refusals();
        // Rung 2, after a cooldown: its first refusals are past REFUSED_FOR since rung 1's
        // first, so the second of them stops it (a fresh watch would wait 5 s more).
        let mut next = Watch::carrying(carried.clone());
        assert_eq!(next.record_at(&connect(REFUSED), at(5_500)), None);
        let r = next
            .record_at(&connect(REFUSED), at(6_100))
            .expect("the carried streak stops the run");
        assert_eq!(r.count, 32);
        let mut fresh = Watch::default();
        assert_eq!(fresh.record_at(&connect(REFUSED), at(5_500)), None);
        assert_eq!(fresh.record_at(&connect(REFUSED), at(6_100)), None);
        // A success in rung 2 (the server came back): the carried streak ends there.
        let mut back = Watch::carrying(carried);
        back.record_at(&RequestRecord::default(), at(5_400));
        assert_eq!(back.record_at(&connect(REFUSED), at(5_500)), None);
        assert_eq!(back.record_at(&connect(REFUSED), at(6_100)), None);
        assert_eq!(back.refusals().count, 2);
    }

    /// The server killed during a rung: connections refused for [`REFUSED_FOR`] (at least
    /// [`STOP_AFTER`] of them) stop the ladder, on a rung with answers or without. Refusals
    /// broken by a success (a restart that came back), too few or too short, and connect
    /// timeouts (a server too busy to accept) do not.
    #[test]
    fn connections_refused_in_a_row_stop_the_ladder() {
        const REFUSED: &str = "tcp connect error: Connection refused (os error 111)";
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut w = Watch::default();
        for i in 0..10 {
            w.record_at(&RequestRecord::default(), at(i));
        }
        // Many refusals within a restart's few seconds: no stop.
        for i in 0..50 {
            assert_eq!(w.record_at(&connect(REFUSED), at(1_000 + 100 * i)), None);
        }
        // A success: the server came back; the count and the clock start again.
        w.record_at(&RequestRecord::default(), at(7_000));
        assert_eq!(w.record_at(&connect(REFUSED), at(8_000)), None);
        // Past REFUSED_FOR but fewer than STOP_AFTER refusals: no stop yet.
        assert_eq!(w.record_at(&connect(REFUSED), at(18_500)), None);
        assert_eq!(w.record_at(&connect(REFUSED), at(18_550)), None);
        // Other failures in between neither count nor reset it.
        assert_eq!(
            w.record_at(
                &connect("tcp connect error: deadline has elapsed"),
                at(18_600)
            ),
            None
        );
        assert_eq!(w.record_at(&failed(500, "boom"), at(18_700)), None);
        assert_eq!(w.record_at(&connect(REFUSED), at(18_800)), None);
        let r = w.record_at(&connect(REFUSED), at(19_000)).expect("stops");
        assert_eq!(
            (r.class, r.status, r.count),
            (ErrorClass::Connect, None, STOP_AFTER)
        );
        let said = r.describe(crate::scenario::LoadKind::Rate, 1.0);
        assert!(
            said.starts_with(
                "rung 1 req/s: 5 connections in a row were refused (connect: tcp connect \
                 error: Connection refused"
            ) && said.contains("went down or restarted during the run")
                && !said.contains("not overload"),
            "{said}"
        );
        // Said once.
        assert_eq!(w.record_at(&connect(REFUSED), at(19_100)), None);
        // A rung that has had no answer yet (the server died between rungs, or its first
        // answers are still on their way) stops only after REFUSED_FOR too.
        let mut w = Watch::default();
        for i in 0..3 * STOP_AFTER {
            assert_eq!(w.record_at(&connect(REFUSED), at(i * 100)), None);
        }
        assert!(w.record_at(&connect(REFUSED), at(5_000)).is_some());
        // Connect timeouts alone never stop it.
        let mut w = Watch::default();
        for i in 0..100 {
            let late = w.record_at(
                &connect("tcp connect error: deadline has elapsed"),
                at(i * 1_000),
            );
            assert_eq!(late, None);
        }
    }

    #[test]
    fn a_success_means_the_rejections_depend_on_the_request_not_the_setup() {
        let mut w = Watch::default();
        w.record(&RequestRecord::default());
        for _ in 0..2 * STOP_AFTER {
            assert_eq!(w.record(&failed(400, "too long")), None);
        }
        let mut w = Watch::default();
        for _ in 0..STOP_AFTER - 1 {
            w.record(&failed(404, "no such model"));
            w.record(&failed(401, "bad key"));
        }
        assert!(w.record(&failed(401, "bad key")).is_some());
    }
}
