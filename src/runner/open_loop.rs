//! Open-loop dispatch of a rate rung: every request goes out at its send time (precomputed,
//! or drawn as it is due for a timed rung), whether or not earlier ones have finished, under
//! an optional cap on requests in flight. Moved out of `rung::run_rung`, beside
//! [`super::closed_loop`] and [`super::sessions`]; like them it imports only
//! [`super::dispatch`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::dispatch::{deliver, Dispatch};
use crate::client::PreparedRequest;

/// Period of the dispatch timer: longer than any rung, so it only fires where it is re-armed.
const TIMER_PERIOD: Duration = Duration::from_secs(7 * 24 * 3600);

/// How long after a send time tokio's timer steps in if the high-resolution one has not fired.
const TIMER_BACKSTOP: Duration = Duration::from_millis(3);

/// The requests of a rate rung with their send offsets from the rung start, in order.
pub(super) type Sends = Box<dyn Iterator<Item = (PreparedRequest, Duration)> + Send>;

/// A rate rung's own part of the dispatch.
pub(super) struct OpenLoop {
    pub sends: Sends,
    /// The rung's request index of each entry (a shard's share); `None`: entry `i` is `i`.
    pub indices: Option<Arc<[u32]>>,
    /// How many of the first requests (by index) are warmup.
    pub warmup: usize,
    /// Cap on requests in flight.
    pub max_concurrency: Option<u32>,
}

/// Start sending; the returned task ends after the last send (or a stop or halt), dropping
/// its record sender, so the collector sees the end when the last request in flight is done.
pub(super) fn spawn(d: OpenLoop, ctx: Dispatch) -> JoinHandle<()> {
    let Dispatch {
        client,
        start,
        mut stop,
        mut halt,
        tx,
        sent,
        in_flight,
        counting,
    } = ctx;
    let OpenLoop {
        mut sends,
        indices,
        warmup,
        max_concurrency,
    } = d;
    let sem = max_concurrency.map(|c| Arc::new(Semaphore::new(c.max(1) as usize)));
    // The dispatch loop is a task on the runtime, woken by an OS high-resolution timer
    // (timerfd on Linux) registered in tokio's reactor: tokio's own timer fires on 1 ms
    // ticks, up to a tick late. The send task is spawned from the worker that polls the
    // dispatcher, so it runs next on that worker, with no hand-off between threads.
    // One timer (one descriptor) serves the whole rung, re-armed for each send: a timer
    // per sleep would need a new descriptor exactly when the rung's connections have
    // used them all up, and tokio-hrtime panics when it cannot get one. It is first armed
    // a period away, so it never fires unawaited; and tokio's own timer, a few ms after
    // each send time, backs it up: a re-armed timerfd whose stale readiness tokio-hrtime
    // reads as "not yet" would otherwise leave the rung waiting forever.
    tokio::spawn(async move {
        let mut timer = tokio_hrtime::interval_at(start.into_std() + TIMER_PERIOD, TIMER_PERIOD);
        for (i, (req, at)) in sends.by_ref().enumerate() {
            if *stop.borrow() || *halt.borrow() {
                break;
            }
            let due = start + at;
            if due > tokio::time::Instant::now() {
                timer.reset_at(due.into_std());
                tokio::select! {
                    biased;
                    _ = stop.changed() => break,
                    _ = halt.changed() => break,
                    _ = timer.tick() => {}
                    _ = tokio::time::sleep_until(due + TIMER_BACKSTOP) => {}
                }
            }
            let permit = match &sem {
                Some(s) => tokio::select! {
                    p = s.clone().acquire_owned() => p.ok(),
                    _ = stop.changed() => break,
                },
                None => None,
            };
            let client = client.clone();
            let tx = tx.clone();
            let counting = counting.clone();
            let index = indices.as_ref().map_or(i as u32, |v| v[i]);
            let warm = (index as usize) < warmup;
            sent.fetch_add(1, Ordering::Relaxed);
            in_flight.sent(index, start, at, warm);
            tokio::spawn(async move {
                let measured = client.measure(&req, start, at, index, warm).await;
                // Timing is final: free the slot before any re-tokenizing.
                drop(permit);
                deliver(measured, &counting, &tx).await;
            });
        }
        // Freeing a large pool takes a while (~100 ms for 200,000 bodies): not on this
        // worker, where the last send task and the streams in flight wait their turn.
        drop(tokio::task::spawn_blocking(move || drop(sends)));
    })
}
