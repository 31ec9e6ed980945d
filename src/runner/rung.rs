//! One rung: the dispatch loop its plan asks for (open loop at send times,
//! [`super::open_loop`]; closed-loop users, [`super::closed_loop`]; conversations,
//! [`super::sessions`]), a bounded channel of records collected here, and cancellation with
//! a grace period for requests in flight.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Semaphore};
use tokio::time::Instant;

use super::dispatch::Dispatch;
use super::rejection::{self, Rejection};
use crate::client::{Client, PreparedRequest};
use crate::metrics::live::Window;
use crate::metrics::LiveStats;
use crate::record::RequestRecord;

/// Everything needed to dispatch one rung, built before it starts.
pub struct SendPlan {
    /// Request bodies, warmup first.
    pub requests: Vec<PreparedRequest>,
    /// Absolute send offsets from the rung start, same order.
    pub schedule: Vec<Duration>,
    /// How many of the first requests are warmup.
    pub warmup: usize,
    /// Cap on requests in flight.
    pub max_concurrency: Option<u32>,
    /// Closed-loop users instead of the schedule (a concurrency rung): `schedule` and
    /// `max_concurrency` are then unused.
    pub closed: Option<super::dispatch::Users>,
    /// The rung's request index of each entry (a shard keeps some of the rung's requests);
    /// `None`: entry `i` is request `i`. Warmup is by this index.
    pub indices: Option<Vec<u32>>,
    /// When the rung starts (a shard's shared instant); `None`: [`START_LEAD`] from now.
    pub start: Option<Instant>,
    /// A concurrency rung says here when its measured part starts (its warmup requests have
    /// all finished); the server-metrics scraper waits for it.
    pub warmed: Option<watch::Sender<Option<Instant>>>,
    /// A session rung (`workload.sessions`) instead of `requests`: its turns' bodies are
    /// built as answers arrive; `requests`, `schedule`, `closed` and `max_concurrency` are
    /// then unused.
    pub sessions: Option<super::sessions::SessionRung>,
    /// A rung run for a duration (`load.duration`): `requests` is then a pool cycled in
    /// order and `schedule` is unused.
    pub timed: Option<Timed>,
}

/// How a rung run for a duration sends and reports.
pub struct Timed {
    /// No request is sent at or after this offset from the rung start.
    pub duration: Duration,
    /// How often the observer and the sink hear of the rung's progress.
    pub interval: Duration,
    /// An open-loop rung's send offsets, drawn as they are needed (ending before
    /// `duration`); `None` for a concurrency rung.
    pub arrivals: Option<crate::workload::Arrivals>,
}

/// Where a timed rung's records go instead of being kept: folded and written as they come.
pub trait RecordSink {
    /// A finished request (warmup included).
    fn record(&mut self, rec: RequestRecord);
    /// Called every interval of a timed rung; `elapsed` is the time since the rung start.
    fn tick(&mut self, elapsed: Duration);
}

/// What a rung produced.
pub struct RungRun {
    /// Every finished request, in completion order.
    pub records: Vec<RequestRecord>,
    /// Requests handed to the client.
    pub sent: u64,
    /// Requests still in flight when a stop abandoned them: each has a record of class
    /// `interrupted` (in `records`, or handed to the sink).
    pub abandoned: u64,
    /// True when a stop signal cut the rung short.
    pub interrupted: bool,
    /// Set when the server rejected the rung's requests the same way every time and the rung
    /// stopped early (see [`rejection`]).
    pub rejected: Option<Rejection>,
    /// The connections refused in a row it ended on, for the next rung.
    pub refusals: rejection::Refusals,
}

/// Time requests still in flight get after a deterministic rejection stopped dispatch: they
/// are being rejected too, and answer fast.
const REJECTION_GRACE: Duration = Duration::from_secs(2);

/// Hooks for progress display, called from the collector (never from the send path).
pub trait RungObserver {
    /// A record arrived; `sent` is the number dispatched so far.
    fn on_record(&mut self, live: &LiveStats, sent: u64);
    /// An interval of a timed rung ended (or the rung did: then `last` is set and the
    /// interval is what was left of it).
    fn on_interval(&mut self, _interval: &Interval<'_>) {}
}

/// One interval of a timed rung, as its observer hears of it.
pub struct Interval<'a> {
    /// The records that arrived in the interval (never an abandoned request's).
    pub window: &'a Window,
    /// Time since the rung start.
    pub elapsed: Duration,
    /// Requests dispatched so far.
    pub sent: u64,
    /// Requests sent whose record has not arrived yet.
    pub in_flight: u64,
    /// A stop was asked for: no new requests, those in flight get the grace period.
    pub stopping: bool,
    /// The rung's final interval (partial), after its last record.
    pub last: bool,
}

/// Lead time before the first send, so the first arrivals are not late by construction.
pub(crate) const START_LEAD: Duration = Duration::from_millis(20);

/// Re-tokenizing runs on the blocking pool, a few texts at a time: all cores but one, so the
/// async workers (reads, timeouts, dispatch) keep a core to run on.
fn counting_pool() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(
        std::thread::available_parallelism()
            .map_or(1, |n| n.get().saturating_sub(1))
            .max(1),
    ))
}

/// Dispatch a rung and collect its records: kept in [`RungRun::records`], or handed to
/// `sink` as they arrive (a timed rung).
///
/// `stop` turning true stops dispatch; requests in flight then get `grace` to finish and
/// the rest are abandoned: each gets a record of class `interrupted` (it has no outcome), so
/// every request sent has a record. The sender being dropped (a second signal) abandons
/// them at once.
pub async fn run_rung(
    client: Arc<Client>,
    mut plan: SendPlan,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
    observer: &mut dyn RungObserver,
    sink: Option<&mut dyn RecordSink>,
    refused: rejection::Refusals,
) -> RungRun {
    let total = plan.requests.len();
    let timed = plan.timed.take();
    let interval = timed.as_ref().map(|t| t.interval);
    let (tx, mut rx) = mpsc::channel::<RequestRecord>(1024);
    let sent = Arc::new(AtomicU64::new(0));
    let in_flight = super::in_flight::InFlight::default();
    let start = plan.start.unwrap_or_else(|| Instant::now() + START_LEAD);
    let indices: Option<Arc<[u32]>> = plan.indices.map(Into::into);
    // Dispatch stops when this turns true: the server rejects every request the same way.
    let (halt_tx, halt_rx) = watch::channel(false);

    let ctx = Dispatch {
        client,
        start,
        stop: stop.clone(),
        halt: halt_rx,
        tx,
        sent: sent.clone(),
        in_flight: in_flight.clone(),
        counting: counting_pool(),
    };
    let dispatcher = if let Some(rung) = plan.sessions {
        super::sessions::spawn(rung, ctx, plan.warmed)
    } else if let Some(users) = plan.closed {
        let closed = super::closed_loop::ClosedLoop {
            until: timed.as_ref().map(|t| start + t.duration),
            requests: plan.requests,
            indices,
            warmup: plan.warmup,
            users,
            warmed: plan.warmed,
        };
        super::closed_loop::spawn(closed, ctx)
    } else {
        // A timed rung cycles its pool of requests at arrivals drawn as they are due.
        // The pool is shared, never copied: `Iterator::cycle` would clone the whole pool
        // (a million bodies' reference counts) each time it wraps, on the dispatch thread.
        let sends: super::open_loop::Sends = match timed.and_then(|t| t.arrivals) {
            Some(arrivals) => Box::new(pool_cycle(plan.requests).zip(arrivals)),
            None => Box::new(plan.requests.into_iter().zip(plan.schedule)),
        };
        let open = super::open_loop::OpenLoop {
            sends,
            indices,
            warmup: plan.warmup,
            max_concurrency: plan.max_concurrency,
        };
        super::open_loop::spawn(open, ctx)
    };

    let mut ticker = interval.map(|every| {
        let mut t = tokio::time::interval_at(start + every, every);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    let mut c = Collector {
        kept: Kept {
            records: Vec::with_capacity(if sink.is_some() { 0 } else { total }),
            sink,
            window: Window::default(),
        },
        live: LiveStats::default(),
        in_flight: in_flight.clone(),
        sent: sent.clone(),
        start,
        grace,
        halt: halt_tx,
        received: 0,
        interrupted: *stop.borrow(),
        deadline: None,
        rejections: rejection::Watch::carrying(refused),
        rejected: None,
    };
    c.collect(&mut rx, &mut stop, &mut ticker, observer).await;
    // The dispatcher has ended (all sent) or is ending (stop seen): not waited for, aborted.
    dispatcher.abort();
    let sent = sent.load(Ordering::Relaxed);
    let mut kept = c.kept;
    // A timed rung sends until its duration, not a count: only a stop cuts it short.
    let short = kept.sink.is_none() && (kept.records.len() as u64) < total as u64;
    // Records already delivered are kept; the requests still out are abandoned, each with a
    // record of its own (never counted as finished, see `record::ErrorClass::Interrupted`).
    while let Ok(rec) = rx.try_recv() {
        in_flight.done(rec.index);
        kept.finished(rec);
    }
    let now = Instant::now().saturating_duration_since(start);
    let left = in_flight.abandon(now);
    let abandoned = left.len() as u64;
    for rec in left {
        kept.abandoned(rec);
    }
    // The interval the rung ended in gets its line too, so the lines add up to the summary.
    if ticker.is_some() {
        observer.on_interval(&Interval {
            window: &kept.window,
            elapsed: now,
            sent,
            in_flight: 0,
            stopping: c.interrupted,
            last: true,
        });
    }
    RungRun {
        interrupted: c.rejected.is_none() && (c.interrupted || short),
        records: kept.records,
        sent,
        abandoned,
        rejected: c.rejected,
        refusals: c.rejections.refusals(),
    }
}

/// Where a rung's records go: kept, or handed to a timed rung's sink (the finished ones
/// also counted in the current interval's window).
struct Kept<'s> {
    records: Vec<RequestRecord>,
    sink: Option<&'s mut dyn RecordSink>,
    window: Window,
}

impl Kept<'_> {
    /// A request that finished (with any outcome).
    fn finished(&mut self, rec: RequestRecord) {
        match self.sink.as_deref_mut() {
            Some(sink) => {
                self.window.record(&rec);
                sink.record(rec);
            }
            None => self.records.push(rec),
        }
    }

    /// A request a stop abandoned in flight: kept, never in an interval's window.
    fn abandoned(&mut self, rec: RequestRecord) {
        match self.sink.as_deref_mut() {
            Some(sink) => sink.record(rec),
            None => self.records.push(rec),
        }
    }
}

/// The collecting side of a rung: records as they arrive, the observer's progress, a timed
/// rung's intervals, the stop's grace and the rejection watch that halts dispatch.
struct Collector<'s> {
    kept: Kept<'s>,
    live: LiveStats,
    in_flight: super::in_flight::InFlight,
    sent: Arc<AtomicU64>,
    start: Instant,
    grace: Duration,
    /// Turned true when the server rejects every request the same way: dispatch stops.
    halt: watch::Sender<bool>,
    /// Records received (warmup included): the rest of `sent` is in flight.
    received: u64,
    interrupted: bool,
    /// When the requests still in flight are given up (a stop's grace, or a rejection's).
    deadline: Option<Instant>,
    rejections: rejection::Watch,
    rejected: Option<Rejection>,
}

impl Collector<'_> {
    /// Receive until every sender is gone (all requests done), a stop's grace runs out, or
    /// the stop's sender is dropped (a second signal: stop at once, keep what finished).
    async fn collect(
        &mut self,
        rx: &mut mpsc::Receiver<RequestRecord>,
        stop: &mut watch::Receiver<bool>,
        ticker: &mut Option<tokio::time::Interval>,
        observer: &mut dyn RungObserver,
    ) {
        loop {
            let deadline = self.deadline;
            let grace_over = async move {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                rec = rx.recv() => match rec {
                    Some(rec) => self.on_record(rec, observer),
                    None => break,
                },
                _ = next_tick(ticker) => self.on_tick(observer),
                changed = stop.changed() => match changed {
                    Err(_) => {
                        self.interrupted = true;
                        break;
                    }
                    Ok(()) if *stop.borrow() && self.deadline.is_none() => {
                        self.interrupted = true;
                        self.deadline = Some(Instant::now() + self.grace);
                    }
                    Ok(()) => {}
                },
                _ = grace_over => break,
            }
        }
    }

    fn on_record(&mut self, rec: RequestRecord, observer: &mut dyn RungObserver) {
        self.in_flight.done(rec.index);
        self.received += 1;
        // The first reason stands: answers still in flight may complete another one.
        if let Some(r) = self
            .rejections
            .record(&rec)
            .filter(|_| self.rejected.is_none())
        {
            let _ = self.halt.send(true);
            let d = Instant::now() + REJECTION_GRACE.min(self.grace);
            self.deadline = Some(self.deadline.map_or(d, |old| old.min(d)));
            self.rejected = Some(r);
        }
        self.live.record(&rec);
        observer.on_record(&self.live, self.sent.load(Ordering::Relaxed));
        self.kept.finished(rec);
    }

    fn on_tick(&mut self, observer: &mut dyn RungObserver) {
        let elapsed = Instant::now().saturating_duration_since(self.start);
        let sent = self.sent.load(Ordering::Relaxed);
        observer.on_interval(&Interval {
            window: &self.kept.window,
            elapsed,
            sent,
            in_flight: sent.saturating_sub(self.received),
            stopping: self.interrupted,
            last: false,
        });
        self.kept.window = Window::default();
        if let Some(sink) = self.kept.sink.as_deref_mut() {
            sink.tick(elapsed);
        }
    }
}

/// `pool`'s requests in order, again and again (none for an empty pool); each one a cheap
/// clone of the shared body.
fn pool_cycle(pool: Vec<PreparedRequest>) -> impl Iterator<Item = PreparedRequest> + Send {
    let pool: Arc<[PreparedRequest]> = pool.into();
    let n = if pool.is_empty() { 0 } else { usize::MAX };
    (0..n).map(move |i| pool[i % pool.len()].clone())
}

/// The next tick of a timed rung's interval; never, for a rung without one.
async fn next_tick(ticker: &mut Option<tokio::time::Interval>) {
    match ticker {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Client, ClientConfig};
    use crate::scenario::types::Api;

    #[test]
    fn a_pool_cycles_in_order_sharing_its_bodies() {
        let c = Client::new(ClientConfig {
            base_url: "http://127.0.0.1:9/".into(),
            api: Api::Completions,
            api_key: None,
            model: "m".into(),
            request_timeout: Duration::from_secs(1),
            ttft_timeout: None,
            headers: Default::default(),
            ignore_eos: true,
            max_connections: 1,
            extra_body: Default::default(),
        })
        .unwrap();
        let pool: Vec<_> = (0..3).map(|i| c.prepare(&format!("p{i}"), 1, 1)).collect();
        let ptrs: Vec<_> = pool.iter().map(|r| r.body().as_ptr()).collect();
        let got: Vec<_> = pool_cycle(pool).take(7).collect();
        // 0 1 2 0 1 2 0, each the pool's own body (no copy of the bytes).
        for (i, r) in got.iter().enumerate() {
            assert_eq!(r.body().as_ptr(), ptrs[i % 3], "request {i}");
        }
        assert_eq!(pool_cycle(Vec::new()).next().map(|_| ()), None);
    }
}
