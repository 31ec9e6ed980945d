//! Planning one repeat of one rung: its prompts and request bodies, its arrival schedule (a
//! rate, a ramp, a trace's timestamps, or closed-loop users), sessions and shared prefixes,
//! its shard's share, and, for a shard, the agreed start. Everything here happens before the
//! first send.
//!
//! [`plan_rung`] is a free function of what it reads ([`Inputs`]): the ladder (`ladder.rs`)
//! calls it and measures the [`RungPlan`] it returns; this file does not know the ladder.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::{prepare, rung, rung_seed, shard, RunContext, RunError};
use crate::client::{Client, PreparedRequest};
use crate::results::RunWriter;
use crate::scenario::{Arrival, LoadKind, Scenario, Workload};
use crate::workload::{self, PromptSet, SessionPlan};

/// What planning a rung reads: the run's context, the scenario, the client that builds the
/// request bodies, and where token counts come from.
#[derive(Clone, Copy)]
pub(super) struct Inputs<'c> {
    pub ctx: &'c RunContext<'c>,
    pub scenario: &'c Scenario,
    pub client: &'c Arc<Client>,
    pub tokens: workload::Tokens<'c>,
}

/// Which repeat of which rung: its index in the ladder, its level and the repeat (0-based).
#[derive(Clone, Copy)]
pub(super) struct RungAt {
    pub idx: usize,
    pub rate: f64,
    pub repeat: u32,
}

/// A planned repeat of a rung, and what its measurement needs to know of the plan.
pub(super) struct RungPlan<'a> {
    /// What the dispatch loops send.
    pub send: rung::SendPlan,
    pub kind: LoadKind,
    pub warmup: usize,
    /// Measured requests (sessions for a session rung).
    pub n: usize,
    /// A rung run for a duration.
    pub timed: Option<Duration>,
    /// A trace replay's trace and prompts.
    pub replay: Option<&'a prepare::Replay>,
    /// Measured prompts that could not be made exactly as long as asked.
    pub inexact: u64,
    pub closed: Option<super::dispatch::Users>,
    pub max_concurrency: Option<u32>,
    /// vLLM's meaning: the gamma shape (infinite for constant arrivals).
    pub burstiness: f64,
    /// Each prompt's shared-prefix group (empty without `workload.shared_prefix`).
    pub groups: Vec<u32>,
    /// When the first measured request is due, from the rung's start.
    pub first_measured: Duration,
    /// A shard's agreed start.
    pub start: Option<Instant>,
    /// A concurrency rung's end of warmup, for the server-metrics scraper.
    pub warmed_rx: Option<watch::Receiver<Option<Instant>>>,
    /// Requests the progress bar counts (a session rung's turns).
    pub requests_total: usize,
}

/// Plans repeat `at.repeat` of rung `at.idx` (at `at.rate`): notes about its prompts go to
/// the terminal and `log` on the first repeat; a shard waits here for the agreed start.
pub(super) async fn plan_rung<'c>(
    inp: Inputs<'c>,
    at: RungAt,
    stop: &watch::Receiver<bool>,
    writer: &mut RunWriter,
    log: &mut Vec<String>,
    timeline: Option<&mut shard::Timeline>,
) -> Result<RungPlan<'c>, RunError> {
    let scenario = inp.scenario;
    let kind = scenario.load_kind();
    let RungAt { idx, rate, .. } = at;
    let counts = Counts::of(inp, idx, rate)?;
    let Prompts {
        requests,
        sessions,
        groups,
        inexact,
        mix,
    } = rung_prompts(inp, at, &counts, log)?;
    let Counts {
        warmup,
        n,
        timed,
        replay,
        shaped,
    } = counts;
    let Times {
        closed,
        schedule,
        first_measured,
        max_concurrency,
        span,
        session_starts,
    } = rung_times(inp, at, (warmup, n), timed, shaped, sessions.is_some())?;
    let (requests, schedule, indices) = match sharding(inp) {
        None => (requests, schedule, None),
        Some(s) => shard_share(requests, schedule, |i| s.owns(i as u64)),
    };
    let start = match timeline {
        Some(t) => Some(shard_start(scenario, at, t.take(span), stop, writer).await?),
        None => None,
    };
    // A concurrency rung's measured part starts when its warmup has finished: the
    // scraper waits to be told.
    let (warmed, warmed_rx) = match closed {
        Some(_) => {
            let (tx, rx) = watch::channel(None);
            (Some(tx), Some(rx))
        }
        None => (None, None),
    };
    let send = rung::SendPlan {
        requests,
        schedule,
        warmup,
        max_concurrency,
        closed,
        indices,
        start,
        warmed,
        sessions: sessions.clone().map(|plan| {
            // A conversation keeps one model: drawn by its session index.
            let models = mix.assign(warmup + n);
            session_rung(
                plan,
                models,
                warmup,
                closed,
                session_starts,
                max_concurrency,
            )
        }),
        timed: match timed {
            Some(duration) => Some(timed_send(scenario, rate, idx, duration, closed.is_some())?),
            None => None,
        },
    };
    // A session rung's bar counts its turns (each is one request).
    let requests_total = sessions.as_ref().map_or(warmup + n, |p| p.total_turns());
    Ok(RungPlan {
        send,
        kind,
        warmup,
        n,
        timed,
        replay,
        inexact,
        closed,
        max_concurrency,
        burstiness: burstiness(scenario),
        groups,
        first_measured,
        start,
        warmed_rx,
        requests_total,
    })
}

/// This shard's part of the rung, for a shard of a sharded run.
fn sharding(inp: Inputs<'_>) -> Option<shard::Shard> {
    inp.ctx.opts.shard.as_ref().map(|s| s.shard)
}

/// A rung's prompts as request bodies (or its sessions), built before the rung.
struct Prompts {
    requests: Vec<PreparedRequest>,
    sessions: Option<Arc<SessionPlan>>,
    /// Each prompt's shared-prefix group (empty without `workload.shared_prefix`).
    groups: Vec<u32>,
    /// Measured prompts (of this shard) that could not be made exactly as long as asked.
    inexact: u64,
    /// The model mix the bodies name, which a session rung's conversations draw from too.
    mix: super::models::Mix,
}

/// The prompts and request bodies of repeat `at.repeat` of a rung: nothing of this on the
/// send path. The same lengths, order and schedule on every repeat (the seeds are the
/// rung's); the prompt set's notes are said on the first repeat.
fn rung_prompts(
    inp: Inputs<'_>,
    at: RungAt,
    counts: &Counts<'_>,
    log: &mut Vec<String>,
) -> Result<Prompts, RunError> {
    let scenario = inp.scenario;
    let RungAt { idx, rate, repeat } = at;
    let (warmup, n, timed) = (counts.warmup, counts.n, counts.timed);
    let fresh = repeat_workload(&scenario.workload, repeat);
    let workload = fresh.as_ref().unwrap_or(&scenario.workload);
    let sessions = session_plan(inp, workload, warmup + n, idx)?;
    let count = match timed {
        Some(_) => scenario
            .workload
            .prompt_pool
            .unwrap_or(crate::scenario::DEFAULT_PROMPT_POOL) as usize,
        None => warmup + n,
    };
    let set = prompt_set(
        inp,
        workload,
        counts.replay,
        sessions.as_deref(),
        count,
        idx,
    )?;
    if repeat == 0 {
        for note in set.notes {
            if !inp.ctx.opts.quiet {
                inp.ctx.opts.notes.err(&format!(
                    "note: rung {}: {note}",
                    scenario.load_kind().level(rate)
                ));
            }
            log.push(format!("note: rung {rate}: {note}"));
        }
    }
    let prompts = set.prompts;
    let sharding = sharding(inp);
    let owned = |i: usize| sharding.is_none_or(|s| s.owns(i as u64));
    // A timed rung's pool serves warmup and measured requests alike.
    let measured_from = if timed.is_some() { 0 } else { warmup };
    let inexact = match &sessions {
        Some(plan) => super::sessions::inexact_measured(plan, warmup),
        None => prompts[measured_from..]
            .iter()
            .enumerate()
            .filter(|(i, p)| !p.exact && owned(measured_from + i))
            .count() as u64,
    };
    let mix = super::models::Mix::of(&scenario.model, scenario.workload.seed);
    let requests = bodies(inp.client, &mix, prompts);
    Ok(Prompts {
        requests,
        sessions,
        groups: set.prefix_groups,
        inexact,
        mix,
    })
}

/// When a rung's requests go: closed-loop users, or a schedule of send offsets.
struct Times {
    closed: Option<super::dispatch::Users>,
    /// Send offsets of the prepared requests (empty for users and for a session rung).
    schedule: Vec<Duration>,
    /// When the first measured request is due, from the rung's start.
    first_measured: Duration,
    /// `load.max_concurrency`, this shard's part of it.
    max_concurrency: Option<u32>,
    /// The last send offset: how long a shard's timeline gives the rung.
    span: Duration,
    /// A session rung's starts of its sessions (sessions per second).
    session_starts: Vec<Duration>,
}

/// The rung's users or send offsets, and what follows from them.
fn rung_times(
    inp: Inputs<'_>,
    at: RungAt,
    (warmup, n): (usize, usize),
    timed: Option<Duration>,
    shaped: Option<Vec<Duration>>,
    sessions: bool,
) -> Result<Times, RunError> {
    let scenario = inp.scenario;
    let sharding = sharding(inp);
    // A concurrency rung: `rate` is its number of users (a shard runs its part of them);
    // no arrival schedule.
    let part = |n: u32| sharding.map_or(n, |s| s.part(n));
    let closed = (scenario.load_kind() == LoadKind::Concurrency).then(|| super::dispatch::Users {
        count: part(at.rate as u32),
        think_time: scenario.load.think_time.map_or(Duration::ZERO, |d| d.0),
    });
    let mut schedule = send_times(scenario, at, (warmup, n), closed.is_some(), timed, shaped)?;
    // Server metrics from the first measured send on (warmup left out).
    let first_measured = match timed {
        Some(_) => schedule.first().copied().unwrap_or_default(),
        None => schedule.get(warmup).copied().unwrap_or_default(),
    };
    let max_concurrency = scenario.load.max_concurrency.map(part);
    let span = schedule.last().copied().unwrap_or_default();
    // A session rung's schedule is its sessions' starts (sessions per second).
    let session_starts = match sessions {
        true => std::mem::take(&mut schedule),
        false => Vec::new(),
    };
    Ok(Times {
        closed,
        schedule,
        first_measured,
        max_concurrency,
        span,
        session_starts,
    })
}

/// How many requests a rung sends and when, as far as its load's shape decides it.
struct Counts<'c> {
    warmup: usize,
    /// Measured requests.
    n: usize,
    /// A rung run for a duration.
    timed: Option<Duration>,
    /// A trace replay's trace and prompts.
    replay: Option<&'c prepare::Replay>,
    /// The send times of a trace or a ramp, known before the prompts.
    shaped: Option<Vec<Duration>>,
}

impl<'c> Counts<'c> {
    fn of(inp: Inputs<'c>, idx: usize, rate: f64) -> Result<Counts<'c>, RunError> {
        let scenario = inp.scenario;
        let mut warmup = scenario.load.warmup_requests as usize;
        let mut n = scenario.workload.requests_per_rung as usize;
        // A rung run for a duration cycles a pool of prompts (see `soak`).
        let timed = scenario.load.duration.map(|d| d.0);
        // A trace replay sends the trace's lines at its timestamps over the speed (the first
        // `warmup_requests` lines as warmup); a ramp sends what its rising rate draws. Both
        // know their send times before their prompts.
        let replay = match scenario.load_kind() {
            LoadKind::Trace => Some(
                inp.ctx
                    .trace
                    .as_deref()
                    .ok_or(super::ScenarioError::TraceNotRead)?,
            ),
            _ => None,
        };
        let shaped = match (replay, &scenario.load.ramp) {
            (Some(r), _) => Some(r.trace.schedule(rate)),
            (None, Some(ramp)) => Some(
                workload::ramp_schedule(
                    ramp,
                    scenario.load.arrival,
                    scenario.load.burstiness,
                    rung_seed(scenario.workload.seed, idx),
                )
                .map_err(RunError::from)?,
            ),
            _ => None,
        };
        if let Some(s) = &shaped {
            warmup = if replay.is_some() {
                warmup.min(s.len())
            } else {
                0
            };
            n = s.len() - warmup;
        }
        Ok(Counts {
            warmup,
            n,
            timed,
            replay,
            shaped,
        })
    }
}

/// vLLM's meaning: the gamma shape; 1 is Poisson, and evenly spaced (constant) arrivals are
/// the limit of an infinite shape (written as "inf" in result files).
fn burstiness(scenario: &Scenario) -> f64 {
    match scenario.load.arrival {
        Arrival::Gamma => scenario.load.burstiness.unwrap_or(1.0),
        Arrival::Poisson => 1.0,
        Arrival::Constant => f64::INFINITY,
    }
}

/// The workload of a repeat after the first, when it differs from the scenario's.
/// `cache: cold`: every repeat writes new words (its own nonce), so no repeat is answered
/// from a cache the one before filled. Shared prefixes are new in every repeat (same shape)
/// either way, so each repeat's first request of a group is a cache miss again.
fn repeat_workload(w: &Workload, repeat: u32) -> Option<Workload> {
    let (sp, nonce) = (&w.shared_prefix, w.cache_nonce);
    if repeat == 0 || (sp.is_none() && nonce.is_none()) {
        return None;
    }
    let mut w = w.clone();
    w.shared_prefix = sp.as_ref().map(|sp| crate::scenario::SharedPrefix {
        repeat,
        ..sp.clone()
    });
    w.cache_nonce = nonce.map(|n| workload::repeat_nonce(n, repeat));
    Some(w)
}

/// A session rung: `count` sessions, whose turns' bodies are built as answers arrive; it
/// sends no prepared requests.
fn session_plan(
    inp: Inputs<'_>,
    workload: &Workload,
    count: usize,
    idx: usize,
) -> Result<Option<Arc<SessionPlan>>, RunError> {
    let Some(s) = &inp.scenario.workload.sessions else {
        return Ok(None);
    };
    SessionPlan::build(
        workload,
        s,
        inp.tokens,
        inp.ctx.dataset_path.as_deref(),
        count,
        idx as u64,
    )
    .map(|p| Some(Arc::new(p)))
    .map_err(RunError::from)
}

/// The rung's prompts: a trace's, none for sessions (only their notes), or `count` built
/// from the workload.
fn prompt_set(
    inp: Inputs<'_>,
    workload: &Workload,
    replay: Option<&prepare::Replay>,
    sessions: Option<&SessionPlan>,
    count: usize,
    idx: usize,
) -> Result<PromptSet, RunError> {
    // The prompts `prepare` built checking a file dataset, taken by the first plan (used or
    // not, so they are not held for the run): the same workload and count build the same
    // prompts, on any rung.
    let carried = inp.ctx.first_prompts.lock().ok().and_then(|mut c| c.take());
    Ok(match (replay, sessions) {
        (Some(r), _) => PromptSet {
            prompts: r.prompts.clone(),
            notes: r.notes.clone(),
            prefix_groups: Vec::new(),
        },
        (None, Some(plan)) => PromptSet {
            notes: plan.notes.clone(),
            ..PromptSet::default()
        },
        (None, None) => match carried.filter(|c| c.count == count && c.workload == *workload) {
            Some(c) => c.set,
            None => PromptSet::load_with(
                workload,
                inp.tokens,
                inp.ctx.dataset_path.as_deref(),
                count,
                idx as u64,
            )
            .map_err(RunError::from)?,
        },
    })
}

/// The request bodies, consumed from the prompts as they are built: a soak's pool of a
/// million prompts would otherwise hold every prompt's text twice until the rung starts. A
/// model mix: request `i` names the model drawn for index `i` (a timed rung's pool entry
/// `i`, which it cycles).
fn bodies(
    client: &Client,
    mix: &super::models::Mix,
    prompts: Vec<workload::Prompt>,
) -> Vec<PreparedRequest> {
    prompts
        .into_iter()
        .enumerate()
        .map(|(i, p)| match p.images.is_empty() {
            true => client.prepare_batch_as(
                mix.pick(i),
                &p.text,
                &p.batch,
                p.input_tokens,
                p.output_tokens,
            ),
            false => client.prepare_images(
                mix.pick(i),
                &p.text,
                &p.images,
                p.input_tokens,
                p.output_tokens,
            ),
        })
        .collect()
}

/// An open-loop rung's arrivals, drawn as the rung goes, up to `until`.
fn arrivals(
    scenario: &Scenario,
    rate: f64,
    idx: usize,
    until: Duration,
) -> Result<workload::Arrivals, RunError> {
    workload::Arrivals::new(
        scenario.load.arrival,
        rate,
        scenario.load.burstiness,
        rung_seed(scenario.workload.seed, idx),
        until,
    )
    .map_err(RunError::from)
}

/// How a rung run for `duration` sends (its arrivals, unless it is closed-loop) and reports.
fn timed_send(
    scenario: &Scenario,
    rate: f64,
    idx: usize,
    duration: Duration,
    closed: bool,
) -> Result<rung::Timed, RunError> {
    Ok(rung::Timed {
        duration,
        interval: scenario
            .load
            .interval
            .map_or(crate::scenario::DEFAULT_SOAK_INTERVAL, |i| i.0),
        arrivals: match closed {
            true => None,
            false => Some(arrivals(scenario, rate, idx, duration)?),
        },
    })
}

/// The rung's send offsets: none for closed-loop users, a trace's or a ramp's, only the
/// first measured one of a timed rung (the rest are drawn as it goes), else the arrival
/// schedule of its warmup and measured requests.
fn send_times(
    scenario: &Scenario,
    RungAt { idx, rate, .. }: RungAt,
    (warmup, n): (usize, usize),
    closed: bool,
    timed: Option<Duration>,
    shaped: Option<Vec<Duration>>,
) -> Result<Vec<Duration>, RunError> {
    Ok(match (closed, shaped) {
        (true, _) => Vec::new(),
        (false, Some(s)) => s,
        // Drawn as the rung goes; only the first measured send is needed here.
        (false, None) if timed.is_some() => arrivals(scenario, rate, idx, Duration::MAX)?
            .nth(warmup)
            .into_iter()
            .collect(),
        (false, None) => workload::schedule(
            scenario.load.arrival,
            rate,
            scenario.load.burstiness,
            warmup + n,
            rung_seed(scenario.workload.seed, idx),
        )
        .map_err(RunError::from)?,
    })
}

/// A session rung's conversations: started by closed-loop users, or at `starts` (with at most
/// `max_concurrency` in flight).
fn session_rung(
    plan: Arc<SessionPlan>,
    models: Vec<Arc<str>>,
    warmup: usize,
    closed: Option<super::dispatch::Users>,
    starts: Vec<Duration>,
    max_concurrency: Option<u32>,
) -> super::sessions::SessionRung {
    super::sessions::SessionRung {
        models,
        plan,
        warmup,
        starts: match closed {
            Some(users) => super::sessions::SessionStarts::Users(users),
            None => super::sessions::SessionStarts::Scheduled {
                at: starts,
                max_concurrency,
            },
        },
    }
}

/// A shard's agreed start of the rung, `planned` on its timeline: it waits for it here.
async fn shard_start(
    scenario: &Scenario,
    at: RungAt,
    planned: chrono::DateTime<chrono::Utc>,
    stop: &watch::Receiver<bool>,
    writer: &mut RunWriter,
) -> Result<Instant, RunError> {
    let repeat = if scenario.load.repeats.max(1) > 1 {
        at.repeat + 1
    } else {
        0
    };
    shard::wait_for_start(planned, at.rate, repeat, stop, writer).await
}

/// A shard's share of a rung: the requests and send times it owns, with their rung indices.
pub(super) fn shard_share<R>(
    requests: Vec<R>,
    schedule: Vec<Duration>,
    owned: impl Fn(usize) -> bool,
) -> (Vec<R>, Vec<Duration>, Option<Vec<u32>>) {
    let mut keep = (Vec::new(), Vec::new(), Vec::new());
    let mut at = schedule.into_iter();
    for (i, r) in requests.into_iter().enumerate() {
        let t = at.next();
        if owned(i) {
            keep.0.push(r);
            keep.1.extend(t);
            keep.2.push(i as u32);
        }
    }
    (keep.0, keep.1, Some(keep.2))
}
