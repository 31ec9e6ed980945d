//! The simulated continuously-batching engine: one task running steps.
//!
//! Each step admits waiting requests FCFS while the batch has room (`max_num_seqs`) and the
//! KV budget allows, spends the step's token budget on decode (one token per running,
//! prefilled sequence) and chunked prefill, sleeps the modelled step time, then emits one
//! token per sequence in the step. The HTTP layer turns token counts into text.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::prefix_cache::PrefixCache;
use super::SimConfig;

/// How far the step clock may fall behind wall time before it is reset (catch-up bound).
const MAX_LAG: Duration = Duration::from_millis(50);

/// The speed factor of the current run (`sim.drift`), shared between the engine and whoever
/// starts runs (the runner's repeats): the engine divides every step time by it.
#[derive(Debug, Clone)]
pub struct RunFactor(Arc<AtomicU64>);

impl RunFactor {
    pub(crate) fn new(v: f64) -> Self {
        RunFactor(Arc::new(AtomicU64::new(v.to_bits())))
    }
    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Relaxed))
    }
    /// Use `factor` from the next step on.
    pub fn set(&self, factor: f64) {
        self.0.store(factor.to_bits(), Relaxed);
    }
}

/// What the engine tells one request's HTTP handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// Admitted into the running batch.
    Scheduled,
    /// `n` more output tokens; `finished` on the last chunk.
    Tokens { n: u32, finished: bool },
    /// Waited longer than `max_queue_wait_ms`.
    Rejected,
}

/// A request handed to the engine.
pub(crate) struct Job {
    pub prompt_tokens: u32,
    /// Tokens this request will produce (≤ max_tokens).
    pub output_tokens: u32,
    /// KV reservation: prompt + max_tokens.
    pub kv_tokens: u32,
    /// Prefix-cache block hashes of the prompt (empty without `prefix_caching`).
    pub blocks: Vec<u64>,
    pub arrived: Instant,
    pub tx: mpsc::UnboundedSender<Event>,
    /// Decode speed of the request's model (`sim.models`), in (0, 1]: after its first token
    /// it emits `speed` tokens a step on average (an adapter at 0.5 takes two steps a token).
    pub speed: f64,
}

struct Seq {
    job: Job,
    prefilled: u32,
    generated: u32,
    pending: u32,
    /// When the engine produced this sequence's last token.
    last_token: Option<Instant>,
    /// Decode progress of a slower model short of its next token (see [`Job::speed`]).
    credit: f64,
}

/// Counters shared with the HTTP layer and `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Requests handed to the engine and not yet admitted or rejected.
    pub waiting: AtomicU64,
    pub running: AtomicU64,
    pub kv_used: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub success_length: AtomicU64,
    pub success_stop: AtomicU64,
    pub rejected: AtomicU64,
    /// Prompt tokens looked up in the prefix cache (vLLM's `prefix_cache_queries`).
    pub prefix_queries: AtomicU64,
    /// Prompt tokens found there, so not prefilled (vLLM's `prefix_cache_hits`).
    pub prefix_hits: AtomicU64,
    /// Prompt tokens the engine actually prefilled (prompt tokens minus cache hits), each
    /// costing `prefill_per_token_us` of its step.
    pub prefill_tokens: AtomicU64,
    /// Time to first token of streamed requests, as the server sees it.
    pub ttft: Histogram,
    /// Time from hand-off to the engine until admission into the batch.
    pub queue_time: Histogram,
    /// Time from hand-off to the engine until the last token (requests the engine ran).
    pub e2e: Histogram,
    /// Time between two output tokens of one sequence, in the engine (as vLLM measures it:
    /// per generated token, not per streamed chunk).
    pub itl: ItlHistogram,
}

/// vLLM's `time_to_first_token_seconds` bucket bounds, in seconds (also used for the
/// simulator's queue-time and e2e histograms: beyond 10 s the `+Inf` bucket takes them).
pub(crate) const TTFT_BUCKETS: [f64; 16] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// vLLM v1's `inter_token_latency_seconds` bucket bounds, in seconds.
pub(crate) const ITL_BUCKETS: [f64; 19] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];

/// A Prometheus histogram over `bounds` (non-cumulative counts; `+Inf` last); the default
/// has [`TTFT_BUCKETS`].
#[derive(Debug)]
pub(crate) struct Histogram {
    pub bounds: &'static [f64],
    pub buckets: Vec<AtomicU64>,
    pub sum_ns: AtomicU64,
    pub count: AtomicU64,
}

impl Histogram {
    pub(crate) fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub(crate) fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = self
            .bounds
            .iter()
            .position(|&le| secs <= le)
            .unwrap_or(self.bounds.len());
        self.buckets[i].fetch_add(1, Relaxed);
        self.sum_ns
            .fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Relaxed);
        self.count.fetch_add(1, Relaxed);
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new(&TTFT_BUCKETS)
    }
}

/// The inter-token latency histogram (over [`ITL_BUCKETS`]).
#[derive(Debug)]
pub(crate) struct ItlHistogram(pub Histogram);

impl Default for ItlHistogram {
    fn default() -> Self {
        ItlHistogram(Histogram::new(&ITL_BUCKETS))
    }
}

impl Stats {
    pub(crate) fn record_success(&self, reached_max: bool) {
        if reached_max {
            self.success_length.fetch_add(1, Relaxed);
        } else {
            self.success_stop.fetch_add(1, Relaxed);
        }
    }
}

/// The engine's state between steps: the queue, the running batch and its KV use, the step
/// clock and the prefix cache.
struct Engine {
    cfg: SimConfig,
    drift: RunFactor,
    stats: Arc<Stats>,
    max_wait: Duration,
    waiting: VecDeque<Job>,
    running: Vec<Seq>,
    kv_used: u64,
    /// When the last step ended on the step clock; `None` while idle.
    clock: Option<Instant>,
    /// Whether each running sequence emits a token in the planned step.
    in_step: Vec<bool>,
    steps: u64,
    cache: Option<PrefixCache>,
}

/// What one step does: sequences in the batch and prompt tokens prefilled.
struct Step {
    batch: u32,
    prefill_tokens: u64,
}

/// The engine loop; returns when `jobs` closes or `shutdown` turns true. Dropping the
/// remaining jobs closes their event channels, which ends their streams.
pub(crate) async fn run(
    cfg: SimConfig,
    drift: RunFactor,
    stats: Arc<Stats>,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut e = Engine::new(cfg, drift, stats);
    loop {
        if e.running.is_empty() && e.waiting.is_empty() {
            e.clock = None;
            tokio::select! {
                job = jobs.recv() => match job {
                    Some(j) => e.waiting.push_back(j),
                    None => break,
                },
                _ = shutdown.wait_for(|s| *s) => break,
            }
        }
        while let Ok(j) = jobs.try_recv() {
            e.waiting.push_back(j);
        }
        e.expire();
        e.admit();
        if e.running.is_empty() {
            // Everything waiting was expired or abandoned; wait for new work.
            continue;
        }
        let step = e.plan();
        let (now, deadline) = e.step_deadline(&step);
        if deadline > now {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {}
                _ = shutdown.wait_for(|s| *s) => break,
            }
        }
        e.emit();
    }
    e.stats.running.store(0, Relaxed);
    e.stats.waiting.store(0, Relaxed);
    e.stats.kv_used.store(0, Relaxed);
}

impl Engine {
    fn new(cfg: SimConfig, drift: RunFactor, stats: Arc<Stats>) -> Engine {
        let seqs = (cfg.max_num_seqs as usize).min(4096);
        Engine {
            max_wait: cfg.wall(cfg.max_queue_wait_ms as f64),
            waiting: VecDeque::new(),
            running: Vec::with_capacity(seqs),
            kv_used: 0,
            clock: None,
            in_step: Vec::with_capacity(seqs),
            steps: 0,
            cache: cfg
                .prefix_caching
                .then(|| PrefixCache::new(cfg.prefix_cache_block_size, cfg.prefix_cache_tokens)),
            cfg,
            drift,
            stats,
        }
    }

    /// Expire requests that waited too long, and forget clients that left.
    fn expire(&mut self) {
        let now = Instant::now();
        let (stats, max_wait) = (&self.stats, self.max_wait);
        self.waiting.retain(|j| {
            if j.tx.is_closed() {
                stats.waiting.fetch_sub(1, Relaxed);
                return false;
            }
            if now.duration_since(j.arrived) > max_wait {
                let _ = j.tx.send(Event::Rejected);
                stats.waiting.fetch_sub(1, Relaxed);
                stats.rejected.fetch_add(1, Relaxed);
                return false;
            }
            true
        });
    }

    /// Admit FCFS while the batch and the KV budget have room.
    fn admit(&mut self) {
        let stats = &self.stats;
        while self.running.len() < self.cfg.max_num_seqs as usize {
            let Some(front) = self.waiting.front() else {
                break;
            };
            if self.kv_used + u64::from(front.kv_tokens) > u64::from(self.cfg.kv_cache_tokens) {
                break;
            }
            let job = self.waiting.pop_front().expect("front exists");
            stats.waiting.fetch_sub(1, Relaxed);
            stats.queue_time.observe(job.arrived.elapsed());
            if job.tx.send(Event::Scheduled).is_err() {
                continue;
            }
            self.kv_used += u64::from(job.kv_tokens);
            stats
                .prompt_tokens
                .fetch_add(u64::from(job.prompt_tokens), Relaxed);
            // Leading blocks an earlier prompt computed are not prefilled again.
            let cached = match &mut self.cache {
                Some(c) => {
                    let hit = c.lookup(&job.blocks, job.prompt_tokens);
                    stats
                        .prefix_queries
                        .fetch_add(u64::from(job.prompt_tokens), Relaxed);
                    stats.prefix_hits.fetch_add(u64::from(hit), Relaxed);
                    hit
                }
                None => 0,
            };
            self.running.push(Seq {
                job,
                prefilled: cached,
                generated: 0,
                pending: 0,
                last_token: None,
                credit: 0.0,
            });
        }
        stats.running.store(self.running.len() as u64, Relaxed);
        stats.kv_used.store(self.kv_used, Relaxed);
    }

    /// Plan the step: decode tokens first, then chunked prefill in admission order; marks
    /// in `in_step` which sequences emit a token.
    fn plan(&mut self) -> Step {
        let decoding = self
            .running
            .iter()
            .filter(|s| s.prefilled >= s.job.prompt_tokens)
            .count() as u32;
        let mut budget = self.cfg.max_num_batched_tokens.saturating_sub(decoding);
        let mut prefill_tokens: u64 = 0;
        let mut batch: u32 = 0;
        self.in_step.clear();
        for s in self.running.iter_mut() {
            let left = s.job.prompt_tokens - s.prefilled.min(s.job.prompt_tokens);
            if left == 0 {
                batch += 1;
                self.in_step.push(true);
            } else if budget > 0 {
                let take = left.min(budget);
                budget -= take;
                s.prefilled += take;
                prefill_tokens += u64::from(take);
                if s.prefilled >= s.job.prompt_tokens {
                    if let Some(c) = &mut self.cache {
                        c.insert(&s.job.blocks);
                    }
                }
                batch += 1;
                // A sequence whose prefill completes this step emits its first token.
                self.in_step.push(s.prefilled >= s.job.prompt_tokens);
            } else {
                self.in_step.push(false);
            }
        }
        self.stats.prefill_tokens.fetch_add(prefill_tokens, Relaxed);
        Step {
            batch,
            prefill_tokens,
        }
    }

    /// When `step` ends on the step clock (which it moves on), and the time now: the
    /// modelled step time, with run-to-run drift (one factor per run) and background noise
    /// (one per step).
    fn step_deadline(&mut self, step: &Step) -> (Instant, Instant) {
        let cfg = &self.cfg;
        let step_ms = cfg.decode_scale
            * (cfg.step_base_ms + cfg.step_per_seq_ms * f64::from(step.batch))
            + step.prefill_tokens as f64 * cfg.prefill_per_token_us / 1000.0;
        self.steps = self.steps.wrapping_add(1);
        let jitter = crate::scenario::sim::lognormal_factor(
            cfg.step_jitter,
            cfg.seed ^ self.steps.wrapping_mul(0xD1B5_4A32_D192_ED03),
        );
        let step_ms = step_ms * jitter / self.drift.get();
        let now = Instant::now();
        let start = match self.clock {
            Some(c) if c + MAX_LAG >= now => c,
            _ => now,
        };
        let deadline = start + cfg.wall(step_ms);
        self.clock = Some(deadline);
        (now, deadline)
    }

    /// Emit one token per sequence in the step; retire finished and abandoned ones.
    fn emit(&mut self) {
        let Engine {
            cfg,
            stats,
            running,
            kv_used,
            in_step,
            ..
        } = self;
        let mut emitted = 0u64;
        let mut idx = 0;
        let step_end = Instant::now();
        running.retain_mut(|s| {
            let emits = in_step[idx];
            idx += 1;
            if !emits {
                return true;
            }
            // A slower model's decode step yields a token only once its credit reaches one
            // (it still took its place in the batch); its first token is never held back.
            if s.generated > 0 && s.job.speed < 1.0 {
                s.credit += s.job.speed;
                if s.credit < 1.0 {
                    return true;
                }
                s.credit -= 1.0;
            }
            if let Some(t) = s.last_token.replace(step_end) {
                stats.itl.0.observe(step_end.duration_since(t));
            }
            s.generated += 1;
            s.pending += 1;
            emitted += 1;
            let finished = s.generated >= s.job.output_tokens;
            let mut keep = !finished;
            // The first token goes out at once (TTFT); later ones in chunks of chunk_tokens.
            if finished || s.generated == 1 || s.pending >= cfg.chunk_tokens {
                let n = std::mem::take(&mut s.pending);
                if s.job.tx.send(Event::Tokens { n, finished }).is_err() {
                    keep = false;
                } else if finished {
                    stats.e2e.observe(s.job.arrived.elapsed());
                    stats.record_success(
                        s.job.output_tokens >= s.job.kv_tokens - s.job.prompt_tokens,
                    );
                }
            }
            if !keep {
                *kv_used -= u64::from(s.job.kv_tokens);
            }
            keep
        });
        stats.generation_tokens.fetch_add(emitted, Relaxed);
        stats.running.store(running.len() as u64, Relaxed);
        stats.kv_used.store(*kv_used, Relaxed);
    }
}
