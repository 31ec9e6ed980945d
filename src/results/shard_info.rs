//! The `run.json` records of a sharded run: what a shard folder says about its shard
//! ([`ShardInfo`]) and what a merged folder says about the shards it was merged from
//! ([`MergedShards`]). See docs/scale-out.md.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The local clock's synchronisation as the kernel reports it (`adjtimex`): the offset the
/// NTP discipline (chrony, ntpd, systemd-timesyncd) is still correcting and its error bounds.
/// This is the clock's own account; it is only as good as the time daemon feeding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockSync {
    /// False when the kernel says the clock is not synchronised (no time daemon, or it has
    /// not converged): then the offsets below mean nothing and shard starts may be skewed.
    pub synchronized: bool,
    /// The offset being slewed away, milliseconds (positive: the clock is behind).
    pub offset_ms: f64,
    /// Estimated error of the clock, milliseconds.
    pub est_error_ms: f64,
    /// Maximum error of the clock, milliseconds.
    pub max_error_ms: f64,
}

/// When one rung (one repeat of it) started on this shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungStart {
    /// The rung's rate (or users).
    pub rate: f64,
    /// 1-based repeat; 0 in a run of one repeat.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
    /// The wall-clock instant every shard starts this rung at.
    pub planned: DateTime<Utc>,
    /// Wall-clock time at the rung's start minus `planned`, milliseconds: how far this
    /// shard's start missed the shared instant by its own clock.
    pub start_error_ms: f64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// In a shard's `run.json`: which share of the schedule the folder holds and when it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// 0-based shard index.
    pub index: u32,
    /// Number of shards of the run.
    pub count: u32,
    /// The shared start of the first rung (every shard was given the same).
    pub start_at: DateTime<Utc>,
    /// Time each rung gets after its last scheduled send before the cooldown begins,
    /// milliseconds (the rung boundaries of all shards follow from it).
    pub drain_ms: f64,
    /// The clock's synchronisation at the start; absent where it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockSync>,
    /// Every rung's start, in run order.
    #[serde(default)]
    pub rung_starts: Vec<RungStart>,
}

/// One shard's client-side figures for one rung, kept in the merged folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRungLag {
    /// The rung's rate (or users).
    pub rate: f64,
    /// Requests this shard measured in the rung (warmup excluded).
    pub requests: u64,
    /// Dispatch lag (sent − scheduled) on this shard: median, p99 and max, milliseconds.
    pub dispatch_lag_median_ms: f64,
    pub dispatch_lag_p99_ms: f64,
    pub dispatch_lag_max_ms: f64,
}

/// One shard as the merged folder remembers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// Its shard record (index, start, clock, rung starts).
    pub shard: ShardInfo,
    /// The folder it was merged from, as given to `ladder merge`.
    pub folder: String,
    /// The machine that ran it.
    pub host: super::HostInfo,
    /// Its own start and end.
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    /// Its dispatch lag per rung.
    pub rungs: Vec<ShardRungLag>,
}

/// In a merged folder's `run.json`: the shards it holds, in index order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedShards {
    /// Number of shards merged (all of the run's).
    pub count: u32,
    /// Every shard, index 0 first.
    pub shards: Vec<MergedShard>,
    /// Largest |start error| of any shard at any rung, milliseconds.
    pub max_start_error_ms: f64,
}

impl ShardInfo {
    /// Why the folder `dir` of this shard is not a whole run, for every command that would
    /// take it as one (bless, compare, gate): it holds `1/count` of every rung's requests,
    /// so its rates and throughputs are a fraction of the run's.
    pub fn not_a_whole_run(&self, dir: &std::path::Path) -> String {
        let holder = dir.parent().map_or_else(
            || "<scenario>.shards/<start>".into(),
            |p| p.display().to_string(),
        );
        format!(
            "{} is shard {} of {}: it holds 1/{} of every rung's requests, not the whole run: \
             merge the shards first (ladder merge {holder} --out <merged folder>) and use the \
             merged folder",
            dir.display(),
            self.index,
            self.count,
            self.count
        )
    }
}
