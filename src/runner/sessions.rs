//! Dispatch of a session rung (`workload.sessions`): conversations of several turns, each
//! turn sent when the previous one's answer has arrived (plus the think time), carrying
//! every earlier user message and the answer the server actually gave as its history.
//!
//! - A rate rung starts sessions at the rung's rate (sessions per second) on the arrival
//!   process; with `load.max_concurrency` a session holds its slot from its first turn to
//!   its last, so no turn ever waits for a slot mid-conversation (such a wait would be the
//!   client's, and would read as the server's slowness in the turns after it).
//! - A concurrency rung has `N` users, each running one session at a time (taking the next
//!   from the rung's queue) and pausing `load.think_time` between sessions. Warmup sessions
//!   go first, and no measured session starts before all of them ended, as with requests
//!   (see [`super::closed_loop`]).
//!
//! A turn's `scheduled` time is when it became ready: its session's start for the first
//! turn, else the previous answer's end plus the think time, so dispatch lag is the client's
//! own delay. Waits use tokio's timer (millisecond ticks), not the rate rung's
//! high-resolution one: a turn can go out up to a tick late, and that shows as dispatch lag.
//! A failed turn ends its session: the turns after it are never sent (they are counted as
//! not sent, never as errors).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::dispatch::{ready_after, AbortAll, Dispatch, Users};
use crate::client::{ChatMessage, ChatRole};
use crate::record::{SessionTurn, TokenSource};
use crate::workload::SessionPlan;

/// How a session rung's sessions start.
#[derive(Debug, Clone)]
pub enum SessionStarts {
    /// Open loop: each session's start offset from the rung start (warmup first), and an
    /// optional cap on sessions in progress.
    Scheduled {
        /// One offset per session, same order as the plan.
        at: Vec<Duration>,
        /// Most sessions in progress at once.
        max_concurrency: Option<u32>,
    },
    /// Closed loop: users running one session at a time.
    Users(Users),
}

/// A session rung's plan, handed to `rung::run_rung`.
pub struct SessionRung {
    /// Turn counts and user messages.
    pub plan: Arc<SessionPlan>,
    /// How many of the first sessions are warmup (all their turns are).
    pub warmup: usize,
    /// When sessions start.
    pub starts: SessionStarts,
    /// With a model mix: session `s`'s model, for all its turns (empty without a mix).
    pub models: Vec<Arc<str>>,
}

/// What every session of a rung shares.
struct Shared {
    ctx: Dispatch,
    plan: Arc<SessionPlan>,
    warmup: usize,
    models: Vec<Arc<str>>,
}

/// Start the rung's sessions; the returned task ends when every session has ended (or
/// stop / halt), dropping the last record sender so the collector sees the end. Aborting it
/// aborts the sessions too.
pub(super) fn spawn(
    rung: SessionRung,
    d: Dispatch,
    warmed: Option<watch::Sender<Option<Instant>>>,
) -> JoinHandle<()> {
    let shared = Arc::new(Shared {
        ctx: d,
        plan: rung.plan,
        warmup: rung.warmup,
        models: rung.models,
    });
    match rung.starts {
        SessionStarts::Scheduled {
            at,
            max_concurrency,
        } => {
            if let Some(w) = warmed {
                w.send_replace(Some(shared.ctx.start));
            }
            tokio::spawn(open_loop(shared, at, max_concurrency))
        }
        SessionStarts::Users(users) => tokio::spawn(closed_loop(shared, users, warmed)),
    }
}

/// Wait until `t`; false when stop or halt came first.
async fn wait_until(
    t: Instant,
    stop: &mut watch::Receiver<bool>,
    halt: &mut watch::Receiver<bool>,
) -> bool {
    if t > Instant::now() {
        tokio::select! {
            biased;
            _ = stop.changed() => return false,
            _ = halt.changed() => return false,
            _ = tokio::time::sleep_until(t) => {}
        }
    }
    !*stop.borrow() && !*halt.borrow()
}

async fn open_loop(shared: Arc<Shared>, at: Vec<Duration>, cap: Option<u32>) {
    let sem = cap.map(|c| Arc::new(Semaphore::new(c.max(1) as usize)));
    let mut stop = shared.ctx.stop.clone();
    let mut halt = shared.ctx.halt.clone();
    let mut running = AbortAll(Vec::with_capacity(at.len()));
    let mut handles = Vec::with_capacity(at.len());
    for (s, offset) in at.into_iter().enumerate() {
        let due = shared.ctx.start + offset;
        if !wait_until(due, &mut stop, &mut halt).await {
            break;
        }
        let permit = match &sem {
            Some(sem) => tokio::select! {
                p = sem.clone().acquire_owned() => p.ok(),
                _ = stop.changed() => break,
                _ = halt.changed() => break,
            },
            None => None,
        };
        let shared = shared.clone();
        let h = tokio::spawn(async move {
            run_session(&shared, s, due).await;
            drop(permit);
        });
        running.0.push(h.abort_handle());
        handles.push(h);
    }
    for h in handles {
        let _ = h.await;
    }
    drop(running);
}

async fn closed_loop(
    shared: Arc<Shared>,
    users: Users,
    warmed: Option<watch::Sender<Option<Instant>>>,
) {
    let next = Arc::new(AtomicUsize::new(0));
    let warm = shared.warmup.min(shared.plan.len());
    let phase = Arc::new(Phase {
        warm,
        finished: AtomicUsize::new(0),
        over: warmed.unwrap_or_else(|| watch::channel(None).0),
    });
    if warm == 0 {
        phase.over.send_replace(Some(shared.ctx.start));
    }
    let n = users.count.max(1) as usize;
    let mut handles = Vec::with_capacity(n);
    for _ in 0..n {
        let (shared, next, phase) = (shared.clone(), next.clone(), phase.clone());
        handles.push(tokio::spawn(user(shared, next, phase, users.think_time)));
    }
    let _abort = AbortAll(handles.iter().map(JoinHandle::abort_handle).collect());
    for h in handles {
        let _ = h.await;
    }
}

/// The warmup sessions of a concurrency rung: measured sessions start once all have ended.
struct Phase {
    warm: usize,
    finished: AtomicUsize,
    over: watch::Sender<Option<Instant>>,
}

/// One closed-loop user: the next session from the queue, one at a time.
async fn user(shared: Arc<Shared>, next: Arc<AtomicUsize>, phase: Arc<Phase>, think: Duration) {
    let mut stop = shared.ctx.stop.clone();
    let mut halt = shared.ctx.halt.clone();
    let mut warmed = phase.over.subscribe();
    let mut ready = shared.ctx.start;
    loop {
        if !wait_until(ready, &mut stop, &mut halt).await {
            return;
        }
        let s = next.fetch_add(1, Ordering::Relaxed);
        if s >= shared.plan.len() {
            return;
        }
        let warmup = s < shared.warmup;
        if !warmup {
            let over = loop {
                if let Some(t) = *warmed.borrow_and_update() {
                    break t;
                }
                tokio::select! {
                    biased;
                    _ = stop.changed() => return,
                    _ = halt.changed() => return,
                    _ = warmed.changed() => {}
                }
            };
            ready = ready.max(over);
        }
        run_session(&shared, s, ready).await;
        if warmup && phase.finished.fetch_add(1, Ordering::AcqRel) + 1 == phase.warm {
            phase.over.send_replace(Some(Instant::now()));
        }
        ready = ready_after(if warmup { Duration::ZERO } else { think });
    }
}

/// Run session `s` from `ready` (its first turn's scheduled time): turn after turn, each
/// carrying the conversation so far, until its last turn, a failed turn, stop or halt.
async fn run_session(shared: &Shared, s: usize, mut ready: Instant) {
    let mut stop = shared.ctx.stop.clone();
    let mut halt = shared.ctx.halt.clone();
    let turns = shared.plan.turns(s);
    let first = shared.plan.first_index(s);
    let warmup = s < shared.warmup;
    let think = shared.plan.think_time;
    let mut answers: Vec<String> = Vec::with_capacity(turns.len());
    // Tokens of the conversation so far as ladder counted them (user messages and answers'
    // content); 0 stays 0 when nothing is counted (`tokenizer: none`).
    let mut history_tokens: u32 = 0;
    for (k, user) in turns.iter().enumerate() {
        if !wait_until(ready, &mut stop, &mut halt).await {
            return;
        }
        let mut messages = Vec::with_capacity(2 * k + 1);
        for (asked, answer) in turns[..k].iter().zip(&answers) {
            messages.push(ChatMessage {
                role: ChatRole::User,
                content: &asked.text,
            });
            messages.push(ChatMessage {
                role: ChatRole::Assistant,
                content: answer,
            });
        }
        messages.push(ChatMessage {
            role: ChatRole::User,
            content: &user.text,
        });
        let input = match user.input_tokens {
            0 => 0,
            n => history_tokens.saturating_add(n),
        };
        let req = shared.ctx.client.prepare_chat(
            shared.models.get(s),
            &messages,
            input,
            user.output_tokens,
        );
        drop(messages);
        let at = ready.saturating_duration_since(shared.ctx.start);
        let index = first + k as u32;
        shared.ctx.sent.fetch_add(1, Ordering::Relaxed);
        shared
            .ctx
            .in_flight
            .sent(index, shared.ctx.start, at, warmup);
        let mut measured = shared
            .ctx
            .client
            .measure_turn(&req, shared.ctx.start, at, index, warmup)
            .await;
        // Timing is final: the next turn is ready after the think time, whatever counting
        // the output takes (that time overlaps the pause, or shows as dispatch lag).
        ready = ready_after(think);
        let answer = measured.take_answer().unwrap_or_default();
        let record = {
            let _turn = match measured.needs_counting() {
                true => shared.ctx.counting.acquire().await.ok(),
                false => None,
            };
            measured.counted().await
        };
        let ok = record.ok();
        let mut record = record;
        // The history sends the answer's text back, so it is counted as text (the server's
        // usage may say anything: 2.4 MB of answer reported as 56 tokens).
        let answer_tokens = match (
            shared.ctx.client.token_counter(),
            ok && user.input_tokens > 0,
        ) {
            (Some(count), true) => {
                let _turn = shared.ctx.counting.acquire().await.ok();
                let (count, text) = (count.clone(), answer.clone());
                let n = tokio::task::spawn_blocking(move || count(&text))
                    .await
                    .unwrap_or(0);
                let said = record
                    .output_tokens
                    .saturating_sub(record.reasoning_tokens.unwrap_or(0));
                if record.token_source == TokenSource::Usage && disagrees(said, n) {
                    record.usage_rejected =
                        Some("completion_tokens disagrees with the answer's text, counted");
                    record.output_tokens = n.saturating_add(record.reasoning_tokens.unwrap_or(0));
                    record.token_source = TokenSource::Retokenized;
                }
                n
            }
            _ => record
                .output_tokens
                .saturating_sub(record.reasoning_tokens.unwrap_or(0)),
        };
        record.session = Some(SessionTurn {
            session: s as u32,
            turn: k as u32,
            turns: turns.len() as u32,
        });
        let _ = shared.ctx.tx.send(record).await;
        if !ok {
            return;
        }
        if user.input_tokens > 0 {
            history_tokens = history_tokens
                .saturating_add(user.input_tokens)
                .saturating_add(answer_tokens);
        }
        answers.push(answer);
    }
}

/// The server's count of an answer and ladder's count of its text disagree beyond what a
/// tokenizer difference explains: more than twice the other, and 16 tokens apart.
fn disagrees(server: u32, text: u32) -> bool {
    let (a, b) = (u64::from(server.min(text)), u64::from(server.max(text)));
    b > 2 * a && b - a > 16
}

/// Turns of the measured sessions whose user message missed its requested length.
pub(super) fn inexact_measured(plan: &SessionPlan, warmup: usize) -> u64 {
    (warmup.min(plan.len())..plan.len())
        .map(|s| plan.turns(s).iter().filter(|p| !p.exact).count() as u64)
        .sum()
}
