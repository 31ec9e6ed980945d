//! What the three dispatch loops of a rung share: the open loop at precomputed send times
//! (`open_loop`), closed-loop users (`closed_loop`) and sessions (`sessions`). `rung::run_rung`
//! builds one [`Dispatch`] and hands it to the loop the plan asks for; the loops import this
//! file, never each other.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::in_flight::InFlight;
use crate::client::Client;
use crate::record::RequestRecord;

/// The rung's client, clock and channels, the same for every loop.
#[derive(Clone)]
pub(super) struct Dispatch {
    pub client: Arc<Client>,
    /// The rung start: offsets in records are from here.
    pub start: Instant,
    /// A stop signal: no new requests; those in flight get the grace period.
    pub stop: watch::Receiver<bool>,
    /// The collector saw a deterministic rejection: no new requests.
    pub halt: watch::Receiver<bool>,
    /// Where finished requests' records go (the collector).
    pub tx: mpsc::Sender<RequestRecord>,
    /// Requests handed to the client so far.
    pub sent: Arc<AtomicU64>,
    /// Requests sent whose record has not arrived: the stop's `interrupted` records.
    pub in_flight: InFlight,
    /// Turns for re-tokenizing outputs off the send path.
    pub counting: Arc<Semaphore>,
}

/// The users of one concurrency rung.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Users {
    /// Number of users (the rung's level), at least 1.
    pub count: u32,
    /// Pause between a request's end and the same user's next send.
    pub think_time: Duration,
}

/// A measured request's record, counted (re-tokenized if needed, one of `counting`'s turns)
/// and handed to the collector.
pub(super) async fn deliver(
    measured: crate::client::Measured,
    counting: &Semaphore,
    tx: &mpsc::Sender<RequestRecord>,
) {
    let _turn = match measured.needs_counting() {
        true => counting.acquire().await.ok(),
        false => None,
    };
    let rec = measured.counted().await;
    let _ = tx.send(rec).await;
}

/// When a user (or session) is ready again: `pause` from now. Validation keeps think time
/// within an hour; a pause beyond any `Instant` would only wait for the stop signal.
pub(super) fn ready_after(pause: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(pause)
        .unwrap_or(now + Duration::from_secs(86_400 * 365))
}

/// Aborts the tasks when dropped (the dispatch task was aborted or ended).
pub(super) struct AbortAll(pub Vec<AbortHandle>);

impl Drop for AbortAll {
    fn drop(&mut self) {
        for h in &self.0 {
            h.abort();
        }
    }
}
