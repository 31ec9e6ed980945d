//! The requests of a rung that were sent and have not yet reached the collector, so a stop
//! that abandons them (the grace period over, a second signal) still gives each one a
//! request line, of class `interrupted`, instead of losing it: sent = finished +
//! interrupted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::record::{ErrorClass, RequestError, RequestRecord};

/// What the collector needs to record a request it never heard back from.
#[derive(Debug, Clone, Copy)]
struct Sent {
    scheduled: Duration,
    sent: Duration,
    warmup: bool,
}

/// Requests sent and not yet collected, by their index in the rung. Shared by the
/// dispatcher (which adds) and the collector (which removes); one short lock a request.
#[derive(Debug, Clone, Default)]
pub struct InFlight(Arc<Mutex<HashMap<u32, Sent>>>);

/// The `error_detail` of an abandoned request.
pub const DETAIL: &str = "still in flight when the run was stopped (grace period over, or a \
                          second signal); abandoned: the client's stop, not a server error";

impl InFlight {
    /// Request `index`, scheduled at `scheduled` from the rung `start`, is being sent now.
    pub fn sent(&self, index: u32, start: Instant, scheduled: Duration, warmup: bool) {
        let sent = Instant::now().saturating_duration_since(start);
        self.lock().insert(
            index,
            Sent {
                scheduled,
                sent,
                warmup,
            },
        );
    }

    /// Request `index` reached the collector.
    pub fn done(&self, index: u32) {
        self.lock().remove(&index);
    }

    /// Every request still in flight, as records of class `interrupted` ending at `at` (from
    /// the rung start), in index order; the set is emptied.
    pub fn abandon(&self, at: Duration) -> Vec<RequestRecord> {
        let mut left: Vec<(u32, Sent)> = self.lock().drain().collect();
        left.sort_by_key(|(i, _)| *i);
        left.into_iter()
            .map(|(index, s)| RequestRecord {
                index,
                warmup: s.warmup,
                scheduled: s.scheduled,
                sent: s.sent,
                end: at.max(s.sent),
                error: Some(RequestError {
                    class: ErrorClass::Interrupted,
                    status: None,
                    detail: DETAIL.into(),
                }),
                ..RequestRecord::default()
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Sent>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_not_collected_are_abandoned_as_interrupted() {
        let f = InFlight::default();
        let start = Instant::now();
        let ms = Duration::from_millis;
        f.sent(2, start, ms(20), false);
        f.sent(0, start, ms(0), true);
        f.sent(1, start, ms(10), false);
        f.done(1);
        let left = f.abandon(ms(500));
        let idx: Vec<u32> = left.iter().map(|r| r.index).collect();
        assert_eq!(idx, vec![0, 2]);
        assert!(left.iter().all(|r| r.interrupted() && !r.ok()));
        assert!(left[0].warmup && !left[1].warmup);
        assert_eq!(left[1].scheduled, ms(20));
        assert_eq!(left[1].end, ms(500));
        assert!(f.abandon(ms(600)).is_empty(), "abandoning empties the set");
    }
}
