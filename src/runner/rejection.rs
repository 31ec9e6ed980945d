//! Deterministic rejections: a server that answers every request of a rung with the same
//! client error (400 "exceeds the context", 404 unknown model, 413, 422, 401) is telling the
//! user their requests are wrong. Sending the rest of the ladder would only average that
//! into an "error rate 100 %"; the rung stops after a few and the run says why.

use std::collections::BTreeMap;

use crate::record::{ErrorClass, RequestRecord};

/// Identical rejections, with no success on the rung, after which the rung stops.
pub const STOP_AFTER: u64 = 5;

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
}

impl Rejection {
    /// What to tell the user, with the likely cause of the status.
    pub fn describe(&self, kind: crate::scenario::LoadKind, rate: f64) -> String {
        let rate = kind.level(rate);
        let status = self
            .status
            .map(|s| format!("HTTP {s} "))
            .unwrap_or_default();
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

/// Watches a rung's records as they arrive.
#[derive(Debug, Default)]
pub struct Watch {
    successes: u64,
    by_kind: BTreeMap<(&'static str, Option<u16>), (u64, String)>,
}

impl Watch {
    /// Take one record; returns the rejection the first time the rung should stop.
    pub fn record(&mut self, rec: &RequestRecord) -> Option<Rejection> {
        let Some(err) = &rec.error else {
            self.successes += 1;
            return None;
        };
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
