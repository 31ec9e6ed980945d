//! Closed-loop dispatch of a concurrency rung (`load.concurrency`): `N` users, each sending
//! its next request when its previous one finished, after `load.think_time`.
//!
//! The rung's requests (warmup first, then `requests_per_rung`) form one queue: a user that
//! is ready takes the next request from it, so the count is exact and no user is assigned a
//! fixed share (a fast user simply takes more). Every user starts at the rung start (all `N`
//! requests go out at once, as vLLM's `--max-concurrency N --request-rate inf` does); a user
//! that finds the queue empty stops, and the rung ends when the last request finishes. Near
//! the end fewer than `N` requests are in flight: at most `N - 1` users are idle while the
//! last ones finish.
//!
//! Warmup is a phase of its own: warmup requests go back to back (no think time), and a user
//! holding a measured request waits until every warmup request has finished, so the measured
//! part starts with all `N` users together on a warm server (never in the cold first burst
//! beside the warmup requests), and the server-metrics scraper starts at that instant
//! (`SendPlan::warmed`).
//!
//! A request's `scheduled` time is when its user became ready to send it: the rung start
//! for a user's first request (the warmup phase's end for a first measured one), else the
//! moment its previous request's measurement ended plus the think time. Dispatch lag (`sent - scheduled`) is then the client's own delay in
//! sending a ready request, as for a rate rung; time-from-scheduled metrics include it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::dispatch::{deliver, ready_after, AbortAll, Dispatch, Users};
use crate::client::PreparedRequest;

/// A concurrency rung's own part of the dispatch, moved in from `rung::run_rung`.
pub(super) struct ClosedLoop {
    /// A rung run for a duration: no user takes a request at or after this instant, and
    /// `requests` is a pool cycled in order.
    pub until: Option<Instant>,
    pub requests: Vec<PreparedRequest>,
    /// The rung's request index of each entry (a shard's share); `None`: entry `i` is `i`.
    pub indices: Option<Arc<[u32]>>,
    pub warmup: usize,
    pub users: Users,
    /// Told when the warmup phase is over (the measured part's start).
    pub warmed: Option<watch::Sender<Option<Instant>>>,
}

/// Start the users; the returned task ends when every user has stopped (queue empty, stop
/// or halt), dropping the last record sender so the collector sees the end.
pub(super) fn spawn(d: ClosedLoop, ctx: Dispatch) -> JoinHandle<()> {
    let requests: Arc<[PreparedRequest]> = d.requests.into();
    let next = Arc::new(AtomicUsize::new(0));
    let users = d.users.count.max(1) as usize;
    // The entries that are warmup come first (indices ascend): the warmup phase's size.
    let index = |i: usize| d.indices.as_ref().map_or(i, |v| v[i] as usize);
    let warm = (0..requests.len())
        .take_while(|&i| index(i) < d.warmup)
        .count();
    let phase = Arc::new(Phase {
        warm,
        finished: AtomicUsize::new(0),
        over: d.warmed.unwrap_or_else(|| watch::channel(None).0),
    });
    if warm == 0 {
        phase.over.send_replace(Some(ctx.start));
    }
    let mut handles = Vec::with_capacity(users);
    for _ in 0..users {
        let user = User {
            phase: phase.clone(),
            warmed: phase.over.subscribe(),
            until: d.until,
            requests: requests.clone(),
            indices: d.indices.clone(),
            next: next.clone(),
            warmup: d.warmup,
            think_time: d.users.think_time,
            ctx: ctx.clone(),
        };
        handles.push(tokio::spawn(user.run()));
    }
    drop(ctx);
    tokio::spawn(async move {
        // Aborting this task (the collector is done) must stop the users too.
        let _abort = AbortAll(handles.iter().map(JoinHandle::abort_handle).collect());
        for h in handles {
            let _ = h.await;
        }
    })
}

/// The warmup phase of a rung: its requests go out first, and no measured request is sent
/// before all of them have finished, so measured requests never share the cold first burst
/// with them and all users start the measured part together.
struct Phase {
    /// Warmup requests in this dispatch.
    warm: usize,
    /// Warmup requests finished so far.
    finished: AtomicUsize,
    /// `Some(instant)` once the last warmup request finished (at once without warmup).
    over: watch::Sender<Option<Instant>>,
}

/// One closed-loop user.
struct User {
    phase: Arc<Phase>,
    warmed: watch::Receiver<Option<Instant>>,
    until: Option<Instant>,
    requests: Arc<[PreparedRequest]>,
    indices: Option<Arc<[u32]>>,
    next: Arc<AtomicUsize>,
    warmup: usize,
    think_time: Duration,
    ctx: Dispatch,
}

impl User {
    /// True when a request ready at `ready` falls after a timed rung's end.
    fn past(&self, ready: Instant) -> bool {
        self.until.is_some_and(|u| ready >= u)
    }

    async fn run(mut self) {
        let mut ready = self.ctx.start;
        loop {
            if self.past(ready) {
                return;
            }
            if ready > Instant::now() {
                tokio::select! {
                    biased;
                    _ = self.ctx.stop.changed() => return,
                    _ = self.ctx.halt.changed() => return,
                    _ = tokio::time::sleep_until(ready) => {}
                }
            }
            if *self.ctx.stop.borrow() || *self.ctx.halt.borrow() || self.past(ready) {
                return;
            }
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let pool = self.requests.len().max(1);
            let at_i = if self.until.is_some() { i % pool } else { i };
            let Some(req) = self.requests.get(at_i) else {
                return;
            };
            let index = self.indices.as_ref().map_or(i as u32, |v| v[i]);
            let warmup = (index as usize) < self.warmup;
            if !warmup {
                // A measured request waits for the warmup phase to end; it is ready then.
                let over = loop {
                    if let Some(t) = *self.warmed.borrow_and_update() {
                        break t;
                    }
                    tokio::select! {
                        biased;
                        _ = self.ctx.stop.changed() => return,
                        _ = self.ctx.halt.changed() => return,
                        _ = self.warmed.changed() => {}
                    }
                };
                ready = ready.max(over);
                if self.past(ready) {
                    return;
                }
            }
            let at = ready.saturating_duration_since(self.ctx.start);
            self.ctx.sent.fetch_add(1, Ordering::Relaxed);
            self.ctx.in_flight.sent(index, self.ctx.start, at, warmup);
            let measured = self
                .ctx
                .client
                .measure(req, self.ctx.start, at, index, warmup)
                .await;
            if warmup && self.phase.finished.fetch_add(1, Ordering::AcqRel) + 1 == self.phase.warm {
                self.phase.over.send_replace(Some(Instant::now()));
            }
            // Timing is final: the user is ready again (after thinking) while the record is
            // counted and delivered on the side.
            // Warmup requests go back to back: a user that finished one is at once ready for
            // the next, and a measured one then waits for the phase to end with the others.
            ready = ready_after(if warmup {
                Duration::ZERO
            } else {
                self.think_time
            });
            let counting = self.ctx.counting.clone();
            let tx = self.ctx.tx.clone();
            tokio::spawn(async move { deliver(measured, &counting, &tx).await });
        }
    }
}
