//! Running a scenario as shards on existing engines: a Slurm batch script ([`slurm`]) and
//! Kubernetes manifests ([`kube`]). Both only write text; the engines run it. See
//! docs/scale-out.md.

pub mod kube;
pub mod slurm;

use std::path::Path;
use std::time::Duration;

use crate::runner::shard::{self, Shard, ShardError, ShardRun};
use crate::scenario::Loaded;

/// The scenario at `path`, checked for a run of `shards` shards.
fn sharded_scenario(path: &Path, shards: u32) -> Result<Loaded, Refusal> {
    let loaded = crate::scenario::load(path).map_err(Refusal::Scenario)?;
    let s = &loaded.scenario;
    let run = ShardRun {
        shard: Shard::parse_with(&format!("0/{shards}"), |_| None)?,
        start_at: chrono::Utc::now(),
        drain: None,
    };
    shard::check(&run, s).map_err(|why| Refusal::NotShardable {
        path: path.to_path_buf(),
        shards,
        why,
    })?;
    Ok(loaded)
}

/// Every environment variable a run of `loaded` reads: its `{{ env.NAME }}` templates (the
/// file's and its bases'), `endpoint.api_key_env` and `server_metrics.api_key_env`.
fn env_vars_read(loaded: &Loaded) -> Vec<String> {
    let s = &loaded.scenario;
    let mut out: Vec<String> = vec![];
    let keys = [
        s.endpoint.api_key_env.as_deref(),
        s.server_metrics
            .as_ref()
            .and_then(|m| m.api_key_env.as_deref()),
    ];
    for v in loaded
        .env_vars
        .iter()
        .map(String::as_str)
        .chain(keys.into_iter().flatten())
    {
        if !out.iter().any(|o| o == v) {
            out.push(v.to_string());
        }
    }
    out
}

/// Parse a duration flag (`60s`, `5m`).
fn duration(flag: &'static str, text: &str) -> Result<Duration, Refusal> {
    humantime::parse_duration(text).map_err(|reason| Refusal::Duration {
        flag,
        text: text.into(),
        reason,
    })
}

/// `--lead`: the time from now to the shared start, within the start's limit.
fn lead(text: &str) -> Result<Duration, Refusal> {
    let d = duration("--lead", text)?;
    let max = crate::runner::shard::MAX_START_WAIT;
    if d > max {
        return Err(Refusal::LeadTooLong {
            text: text.into(),
            max,
        });
    }
    Ok(d)
}

/// Why the scenario or a flag cannot make a sharded run: nothing is written.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The scenario does not load (every problem with its location).
    #[error("{0}")]
    Scenario(crate::scenario::Diagnostics),
    /// `--shards`, `--start-at` or the start they give.
    #[error(transparent)]
    Shard(#[from] ShardError),
    /// The scenario cannot be split into shards.
    #[error("{} cannot run as {shards} shards: {why}", path.display())]
    NotShardable {
        path: std::path::PathBuf,
        shards: u32,
        why: shard::ShardRefusal,
    },
    /// A duration flag humantime cannot read.
    #[error("{flag} {text:?}: {reason}; e.g. {flag} 60s")]
    Duration {
        flag: &'static str,
        text: String,
        reason: humantime::DurationError,
    },
    /// `--lead` beyond the longest wait for a start.
    #[error(
        "--lead {text:?} is more than the limit of {}: the shards would wait that long for \
         their first rung; give the time they need to start, e.g. --lead 60s",
        humantime::format_duration(*max)
    )]
    LeadTooLong { text: String, max: Duration },
    /// The start is beyond what a timestamp holds.
    #[error("{0}")]
    StartOutOfRange(#[from] chrono::OutOfRangeError),
    /// A value that cannot go on an `#SBATCH` line.
    #[error(transparent)]
    Directive(#[from] crate::escape::shell::DirectiveError),
    /// A file the ConfigMap holds could not be read.
    #[error(transparent)]
    Read(#[from] crate::fileread::ReadError),
}

/// Why `ladder slurm` or `ladder kube` wrote nothing (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The scenario or a flag cannot make a sharded run (the message says which and why).
    #[error("{0}")]
    Refused(#[from] Refusal),
    /// The output file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// Write `text` to `out` (saying so on the error stream), or to the output stream without one.
pub fn emit(
    text: &str,
    out: Option<&Path>,
    notes: &crate::notes::Notes,
) -> Result<(), DeployError> {
    match out {
        Some(p) => {
            std::fs::write(p, text).map_err(|source| DeployError::Write {
                path: p.to_path_buf(),
                source,
            })?;
            notes.err(&format!("wrote {}", p.display()));
        }
        None => notes.out(text),
    }
    Ok(())
}
