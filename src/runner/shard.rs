//! Shards: one machine's share of a run too big for one client (`ladder run --shard i/N`).
//!
//! Every shard computes the whole single-machine schedule from the scenario seed (the same
//! prompts, the same send times) and keeps the requests it owns, so the union of the shards
//! is exactly the one-machine schedule. Ownership is by request index (`index % N == i`), so
//! each shard offers `1/N` of every rung's rate with the same arrival process thinned evenly.
//! A concurrency rung splits its users instead (`users / N`, the first `users % N` shards
//! one more), and `load.max_concurrency` is split the same way.
//!
//! All shards start each rung at the same wall-clock instant: the first at `--start-at`,
//! each next one a fixed time later ([`Timeline`]): the rung's whole-schedule span, then
//! `--drain`, then the cooldown. Waiting is on the monotonic clock once the instant is
//! known. A shard that reaches a rung's start too late to keep it (still busy, or the
//! instant already past) stops the run rather than skew it: its folder says `failed`, and
//! `ladder merge` refuses it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use tokio::sync::watch;
use tokio::time::Instant;

use super::RunError;
use crate::results::{ClockSync, RunWriter, RungStart};

/// What `ladder run --shard` adds to a run.
#[derive(Debug, Clone)]
pub struct ShardRun {
    /// This process's share.
    pub shard: Shard,
    /// The shared start of the first rung.
    pub start_at: DateTime<Utc>,
    /// Time after a rung's last scheduled send before its cooldown starts; `None`: the
    /// scenario's `request_timeout` (by then every request has ended).
    pub drain: Option<Duration>,
}

impl ShardRun {
    /// The note said once the scenario is known to shard: when this shard starts.
    pub fn start_note(&self, now: DateTime<Utc>) -> String {
        format!(
            "note: shard {} starts its first rung at {} (in {}, after preflight)",
            self.shard.label(),
            self.start_at
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            super::prepare::show_length((self.start_at - now).to_std().unwrap_or_default())
        )
    }
}

/// Which share of the run this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based index, below `count`.
    pub index: u32,
    /// Number of shards, at least 1.
    pub count: u32,
}

/// Environment variables `--shard auto` reads, in order of preference.
pub const AUTO_HELP: &str = "--shard auto reads SLURM_PROCID and SLURM_NTASKS (srun), or \
     JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) with LADDER_SHARDS for the count";

/// Most shards a run may have.
pub const MAX_SHARDS: u32 = 4096;

/// Why `--shard` or `--start-at` cannot be used (the messages name the flag and say what
/// to give instead).
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error(
        "--shard {0:?}: give INDEX/COUNT with a 0-based index, e.g. --shard 0/4, or --shard auto"
    )]
    Form(String),
    #[error("--shard {text:?}: the {what} {value:?} is not a whole number, e.g. --shard 0/4")]
    NotANumber {
        text: String,
        what: &'static str,
        value: String,
    },
    /// A count or index out of bounds; `flag` is how it was given (`--shard 4/4`,
    /// `--shard auto (SLURM_PROCID/SLURM_NTASKS)`).
    #[error("{flag}: {bounds}")]
    Bounds { flag: String, bounds: Bounds },
    #[error("--shard auto: ${key} is {value:?}, not a whole number")]
    EnvNumber { key: String, value: String },
    #[error("--shard auto: JOB_COMPLETION_INDEX is set but LADDER_SHARDS (the number of shards, the Job's completions) is not; set it in the pod's env")]
    NoLadderShards,
    #[error("--shard auto: no shard in the environment; {AUTO_HELP}, or give --shard INDEX/COUNT")]
    NoEnv,
    #[error("--start-at {0:?}: after `@` give Unix seconds (a finite number, not below 0), e.g. --start-at @$(( $(date +%s) + 60 ))")]
    StartAtSeconds(String),
    #[error("--start-at {0:?}: not a time")]
    StartAtNotATime(String),
    #[error("--start-at {text:?}: {source}; give an RFC 3339 time (2026-12-04T15:00:00Z) or @UNIX_SECONDS")]
    StartAtFormat {
        text: String,
        source: chrono::ParseError,
    },
    /// `at` (RFC 3339) is `wait` from now, past [`MAX_START_WAIT`] (both as lengths for people).
    #[error(
        "--start-at {at} is {wait} from now, more than the limit of {limit}: is it a typo (milliseconds \
         for seconds, a wrong year)? Give the instant every shard starts, a minute or so \
         ahead, e.g. --start-at @$(( $(date +%s) + 60 ))"
    )]
    TooFar {
        at: String,
        wait: String,
        limit: String,
    },
}

/// A shard count or index out of bounds.
#[derive(Debug, thiserror::Error)]
pub enum Bounds {
    #[error("the shard count must be from 1 to {MAX_SHARDS}")]
    Count,
    #[error(
        "shard index {index} is not below the count {count}: indices are 0-based (0 to {last})"
    )]
    Index { index: u32, count: u32, last: u32 },
}

impl Shard {
    /// Parse `i/N` (0-based `i`) or `auto` (see [`AUTO_HELP`]) from the process environment.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        Shard::parse_with(text, |k| std::env::var(k).ok())
    }

    /// [`Shard::parse`] with the environment given.
    pub fn parse_with(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Shard, ShardError> {
        let text = text.trim();
        if text == "auto" {
            return Shard::from_env(env);
        }
        let Some((i, n)) = text.split_once('/') else {
            return Err(ShardError::Form(text.to_string()));
        };
        let num = |s: &str, what: &'static str| {
            s.trim().parse::<u32>().map_err(|_| ShardError::NotANumber {
                text: text.to_string(),
                what,
                value: s.to_string(),
            })
        };
        Shard::new(num(i, "index")?, num(n, "count")?).map_err(|bounds| ShardError::Bounds {
            flag: format!("--shard {text}"),
            bounds,
        })
    }

    fn new(index: u32, count: u32) -> Result<Shard, Bounds> {
        if count == 0 || count > MAX_SHARDS {
            return Err(Bounds::Count);
        }
        if index >= count {
            return Err(Bounds::Index {
                index,
                count,
                last: count - 1,
            });
        }
        Ok(Shard { index, count })
    }

    fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let num = |k: &str| -> Result<Option<u32>, ShardError> {
            match env(k) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u32>()
                    .map(Some)
                    .map_err(|_| ShardError::EnvNumber {
                        key: k.to_string(),
                        value: v.clone(),
                    }),
            }
        };
        let (i, n, from) = if let (Some(i), Some(n)) = (num("SLURM_PROCID")?, num("SLURM_NTASKS")?)
        {
            (i, n, "SLURM_PROCID/SLURM_NTASKS")
        } else if let Some(i) = num("JOB_COMPLETION_INDEX")? {
            let Some(n) = num("LADDER_SHARDS")? else {
                return Err(ShardError::NoLadderShards);
            };
            (i, n, "JOB_COMPLETION_INDEX/LADDER_SHARDS")
        } else {
            return Err(ShardError::NoEnv);
        };
        Shard::new(i, n).map_err(|bounds| ShardError::Bounds {
            flag: format!("--shard auto ({from})"),
            bounds,
        })
    }

    /// True when request number `key` of a rung belongs to this shard.
    pub fn owns(&self, key: u64) -> bool {
        key % u64::from(self.count) == u64::from(self.index)
    }

    /// This shard's part of `total` (users or a concurrency cap): `total / N`, the first
    /// `total % N` shards one more, so the parts add up to `total`.
    pub fn part(&self, total: u32) -> u32 {
        total / self.count + u32::from(self.index < total % self.count)
    }

    /// `i/N`, as the command line takes it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

/// Parse `--start-at`: an RFC 3339 time (`2026-12-04T15:00:00Z`) or `@` and Unix seconds
/// (`@1796396400`, as `date +%s` prints).
pub fn parse_start_at(text: &str) -> Result<DateTime<Utc>, ShardError> {
    let t = text.trim();
    if let Some(secs) = t.strip_prefix('@') {
        let s: f64 = secs
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| ShardError::StartAtSeconds(t.to_string()))?;
        let whole = s.floor();
        let nanos = ((s - whole) * 1e9).round() as u32;
        return Utc
            .timestamp_opt(whole as i64, nanos.min(999_999_999))
            .single()
            .ok_or_else(|| ShardError::StartAtNotATime(t.to_string()));
    }
    DateTime::parse_from_rfc3339(t)
        .map(|d| d.with_timezone(&Utc))
        .map_err(|source| ShardError::StartAtFormat {
            text: t.to_string(),
            source,
        })
}

/// Longest wait for `--start-at` (and `--lead`): a start further ahead is a typo (seconds
/// taken for milliseconds, a year off), not a plan.
pub const MAX_START_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// How long a shard started `now` waits for `at` (zero when `at` has passed: the first rung
/// then reports the shard late); an error past [`MAX_START_WAIT`].
pub fn start_wait(at: DateTime<Utc>, now: DateTime<Utc>) -> Result<Duration, ShardError> {
    let wait = (at - now).to_std().unwrap_or_default();
    if wait > MAX_START_WAIT {
        return Err(ShardError::TooFar {
            at: at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            wait: super::prepare::show_length(wait),
            limit: super::prepare::show_length(MAX_START_WAIT),
        });
    }
    Ok(wait)
}

/// The shared rung boundaries: rung `k + 1` starts `span_k + drain + cooldown` after rung
/// `k`, where `span_k` is the last send offset of rung `k`'s whole (unsharded) schedule, so
/// every shard computes the same instants without talking to the others.
#[derive(Debug, Clone)]
pub struct Timeline {
    next: DateTime<Utc>,
    drain: Duration,
    cooldown: Duration,
}

impl Timeline {
    /// A timeline whose first rung starts at `start_at`.
    pub fn new(start_at: DateTime<Utc>, drain: Duration, cooldown: Duration) -> Timeline {
        Timeline {
            next: start_at,
            drain,
            cooldown,
        }
    }

    /// The start of the next rung, and move past it: that rung's schedule spans `span`.
    pub fn take(&mut self, span: Duration) -> DateTime<Utc> {
        let this = self.next;
        let step = span + self.drain + self.cooldown;
        self.next = this + chrono::Duration::from_std(step).unwrap_or(chrono::Duration::MAX);
        this
    }
}

/// How long before a rung's start a shard must be ready (prompts built, previous rung done):
/// a shard later than this stops the run.
pub const READY_MARGIN: Duration = Duration::from_millis(50);

/// A shard's folder: `<root>/<scenario>.shards/<start-at>/shard-<i>-of-<N>`, so the shards
/// of one run sit side by side (the argument list of `ladder merge` is one glob) and never
/// among the dated folders `ladder history` reads.
pub fn folder(root: &Path, scenario: &str, run: &ShardRun) -> PathBuf {
    root.join(format!("{scenario}.shards"))
        .join(crate::results::write::timestamp_dir_name(run.start_at))
        .join(format!("shard-{}-of-{}", run.shard.index, run.shard.count))
}

/// What a sharded run cannot do, said before anything is sent.
pub fn check(run: &ShardRun, scenario: &crate::scenario::Scenario) -> Result<(), ShardRefusal> {
    let n = run.shard.count;
    if scenario.sweep.is_some() {
        return Err(ShardRefusal::Sweep);
    }
    if scenario.load.search.is_some() {
        return Err(ShardRefusal::Search);
    }
    if scenario.load.duration.is_some() {
        return Err(ShardRefusal::Soak);
    }
    // `ladder merge` recomputes summaries with the rate and concurrency rules only: a trace's
    // offered rate and a ramp's window table would not survive it.
    match scenario.load_kind() {
        kind @ (crate::scenario::LoadKind::Trace | crate::scenario::LoadKind::Ramp) => {
            return Err(ShardRefusal::Shape { kind: kind.name() })
        }
        crate::scenario::LoadKind::Rate | crate::scenario::LoadKind::Concurrency => {}
    }
    // A session must stay whole on one shard, and its turns' ids and history with it.
    if scenario.workload.sessions.is_some() {
        return Err(ShardRefusal::Sessions);
    }
    if let Some(&users) = scenario.load.concurrency.iter().min() {
        if users < n {
            return Err(ShardRefusal::FewerUsers { users, shards: n });
        }
    }
    if let Some(c) = scenario.load.max_concurrency.filter(|c| *c < n) {
        return Err(ShardRefusal::CapBelowShards { cap: c, shards: n });
    }
    Ok(())
}

/// Why a scenario cannot run as shards ([`check`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardRefusal {
    /// A sweep.
    #[error(
        "a sweep runs one ladder after another, and shards share one timeline: \
         run each sweep value as its own scenario (or without --shard)"
    )]
    Sweep,
    /// A capacity search.
    #[error(
        "a capacity search (`load.search`) chooses each probe from the verdict of the one \
         before, and shards run a plan fixed in advance on separate machines: run the search \
         on one machine (a probe's load is still one machine's), or shard a `rates` ladder"
    )]
    Search,
    /// A rung run for a duration.
    #[error(
        "a rung run for a duration (`load.duration`) cannot be sharded yet: shards share a \
         request count, and `ladder merge` reads every request line back; run the soak on \
         one machine"
    )]
    Soak,
    /// A trace replay or a ramp (`kind` its name).
    #[error(
        "a {kind} ladder cannot be sharded yet (`ladder merge` would lose its offered rate \
         and windows): run it on one machine, or shard a `rates` ladder"
    )]
    Shape { kind: &'static str },
    /// A session ladder.
    #[error(
        "a session ladder (`workload.sessions`) cannot be sharded yet: a session's turns \
         carry its history and must stay whole on one machine; run it on one machine, \
         without --shard, `ladder slurm` or `ladder kube`"
    )]
    Sessions,
    /// A concurrency level with fewer users than shards.
    #[error(
        "the concurrency level {users} has fewer users than the {shards} shards: each shard runs \
         users/{shards} of them; use at most {users} shards or more users"
    )]
    FewerUsers { users: u32, shards: u32 },
    /// `load.max_concurrency` below the number of shards.
    #[error(
        "load.max_concurrency {cap} is below the {shards} shards: each shard gets a part of the cap; \
         use at most {cap} shards or a higher cap"
    )]
    CapBelowShards { cap: u32, shards: u32 },
}

/// A shard not ready at a rung's shared start ([`wait_for_start`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "this shard was not ready for rung {rate} at its shared start {} (now {:.3} s past it, \
     {margin_ms} ms of margin needed): stopping rather than skewing the run; every shard's folder \
     must be complete for `ladder merge`. Give a later --start-at (time for every shard to \
     start and preflight), or a longer --drain when rungs run past their slot",
    planned.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    *late_ms as f64 / 1000.0
)]
pub struct ShardLate {
    /// The rung's rate (or users).
    pub rate: f64,
    /// Its shared start.
    pub planned: DateTime<Utc>,
    /// How far past it this shard was, in milliseconds.
    pub late_ms: i64,
    /// The margin a shard needs before the start ([`READY_MARGIN`]).
    pub margin_ms: u128,
}

/// Wait for a rung's shared start `planned` and return it on the monotonic clock, recording
/// the start and its error in the shard's run.json. A shard not ready [`READY_MARGIN`]
/// before `planned` stops the run ([`RunError::ShardLate`]); a stop signal while waiting
/// gives the instant anyway, and the rung then sends nothing.
pub(super) async fn wait_for_start(
    planned: DateTime<Utc>,
    rate: f64,
    repeat: u32,
    stop: &watch::Receiver<bool>,
    writer: &mut RunWriter,
) -> Result<Instant, RunError> {
    let lead = (planned - Utc::now()).to_std().unwrap_or_default();
    if lead < READY_MARGIN {
        let late = Utc::now() - planned;
        return Err(ShardLate {
            rate,
            planned,
            late_ms: late.num_milliseconds(),
            margin_ms: READY_MARGIN.as_millis(),
        }
        .into());
    }
    let target = Instant::now() + lead;
    let mut s = stop.clone();
    tokio::select! {
        _ = tokio::time::sleep_until(target - READY_MARGIN / 2) => {}
        _ = s.changed() => {}
    }
    // The wall-clock time the monotonic target falls on now: any step or slew of the clock
    // since `planned` was converted shows here.
    let (mono, wall) = (Instant::now(), Utc::now());
    let at_target = wall
        + chrono::Duration::from_std(target.saturating_duration_since(mono)).unwrap_or_default();
    let error = (at_target - planned).num_nanoseconds().unwrap_or(i64::MAX) as f64 / 1e6;
    if let Some(info) = writer.shard_mut() {
        info.rung_starts.push(RungStart {
            rate,
            repeat,
            planned,
            start_error_ms: error,
        });
    }
    Ok(target)
}

/// The kernel's view of the local clock's synchronisation (`adjtimex` read-only); `None`
/// where it cannot be read.
pub fn clock_sync() -> Option<ClockSync> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `timex` is plain data, zeroed is a valid value; modes 0 only reads.
        let mut tx: libc::timex = unsafe { std::mem::zeroed() };
        let state = unsafe { libc::adjtimex(&mut tx) };
        if state < 0 {
            return None;
        }
        // STA_NANO: `offset` is in nanoseconds, else microseconds.
        let offset_ms = if tx.status & libc::STA_NANO != 0 {
            tx.offset as f64 / 1e6
        } else {
            tx.offset as f64 / 1e3
        };
        Some(ClockSync {
            synchronized: state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
            offset_ms,
            est_error_ms: tx.esterror as f64 / 1e3,
            max_error_ms: tx.maxerror as f64 / 1e3,
        })
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn parses_index_over_count_and_refuses_nonsense() {
        assert_eq!(
            Shard::parse_with("2/4", env(&[])).unwrap(),
            Shard { index: 2, count: 4 }
        );
        for bad in ["4/4", "1/0", "x/4", "3", "-1/4"] {
            assert!(Shard::parse_with(bad, env(&[])).is_err(), "{bad}");
        }
        let e = Shard::parse_with("4/4", env(&[])).unwrap_err().to_string();
        assert!(e.contains("0-based"), "{e}");
    }

    #[test]
    fn auto_reads_slurm_then_an_indexed_job() {
        let slurm = [
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("JOB_COMPLETION_INDEX", "0"),
        ];
        assert_eq!(
            Shard::parse_with("auto", env(&slurm)).unwrap(),
            Shard { index: 3, count: 4 }
        );
        let kube = [("JOB_COMPLETION_INDEX", "1"), ("LADDER_SHARDS", "2")];
        assert_eq!(
            Shard::parse_with("auto", env(&kube)).unwrap(),
            Shard { index: 1, count: 2 }
        );
        let e = Shard::parse_with("auto", env(&[("JOB_COMPLETION_INDEX", "1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("LADDER_SHARDS"), "{e}");
        let e = Shard::parse_with("auto", env(&[])).unwrap_err().to_string();
        assert!(e.contains("SLURM_PROCID"), "{e}");
        let e = Shard::parse_with("auto", env(&[("SLURM_PROCID", "4"), ("SLURM_NTASKS", "4")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("SLURM_PROCID/SLURM_NTASKS"), "{e}");
    }

    #[test]
    fn shards_own_every_index_once_and_parts_add_up() {
        for n in 1..=5u32 {
            let shards: Vec<Shard> = (0..n).map(|i| Shard { index: i, count: n }).collect();
            for key in 0..100u64 {
                assert_eq!(shards.iter().filter(|s| s.owns(key)).count(), 1);
            }
            for users in [1u32, 7, 64] {
                let parts: Vec<u32> = shards.iter().map(|s| s.part(users)).collect();
                assert_eq!(parts.iter().sum::<u32>(), users);
                assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
            }
        }
    }

    #[test]
    fn start_times_parse_both_ways_and_the_timeline_steps() {
        let a = parse_start_at("2026-12-04T15:00:00Z").unwrap();
        assert_eq!(parse_start_at("@1796396400").unwrap(), a);
        assert_eq!(
            parse_start_at("@1796396400.25").unwrap(),
            a + chrono::Duration::milliseconds(250)
        );
        assert!(parse_start_at("tomorrow")
            .unwrap_err()
            .to_string()
            .contains("RFC 3339"));
        for bad in ["@nan", "@NaN", "@inf", "@-inf", "@-5", "@1e300"] {
            let e = parse_start_at(bad).unwrap_err().to_string();
            assert!(e.contains("--start-at"), "{bad}: {e}");
        }
        assert_eq!(
            start_wait(a, a + chrono::Duration::seconds(5)).unwrap(),
            Duration::ZERO
        );
        assert_eq!(
            start_wait(a + chrono::Duration::seconds(90), a).unwrap(),
            Duration::from_secs(90)
        );
        let far = parse_start_at("@32503680000").unwrap(); // the year 3000
        let e = start_wait(far, a).unwrap_err().to_string();
        assert!(
            e.contains("more than the limit of 7days") && e.contains("typo"),
            "{e}"
        );
        let mut t = Timeline::new(a, Duration::from_secs(5), Duration::from_secs(2));
        assert_eq!(t.take(Duration::from_secs(10)), a);
        assert_eq!(
            t.take(Duration::from_secs(1)),
            a + chrono::Duration::seconds(17)
        );
        assert_eq!(t.take(Duration::ZERO), a + chrono::Duration::seconds(25));
    }

    #[test]
    fn the_clock_reads_on_linux() {
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            let c = clock_sync().expect("adjtimex reads");
            assert!(c.max_error_ms >= 0.0 && c.est_error_ms >= 0.0, "{c:?}");
        }
    }
}
