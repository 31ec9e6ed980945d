//! Running a scenario as shards on existing engines: a Slurm batch script ([`slurm`]) and
//! Kubernetes manifests ([`kube`]). Both only write text; the engines run it. See
//! docs/scale-out.md.

pub mod kube;
pub mod slurm;

use std::path::Path;
use std::time::Duration;

use crate::runner::shard::{self, Shard, ShardRun};
use crate::scenario::Loaded;

/// The scenario at `path`, checked for a run of `shards` shards.
fn sharded_scenario(path: &Path, shards: u32) -> Result<Loaded, String> {
    let loaded = crate::scenario::load(path).map_err(|d| d.to_string())?;
    let s = &loaded.scenario;
    let run = ShardRun {
        shard: Shard::parse_with(&format!("0/{shards}"), |_| None).map_err(|e| e.to_string())?,
        start_at: chrono::Utc::now(),
        drain: None,
    };
    shard::check(&run, s)
        .map_err(|m| format!("{} cannot run as {shards} shards: {m}", path.display()))?;
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
fn duration(flag: &str, text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{flag} {text:?}: {e}; e.g. {flag} 60s"))
}

/// `--lead`: the time from now to the shared start, within the start's limit.
fn lead(text: &str) -> Result<Duration, String> {
    let d = duration("--lead", text)?;
    let max = crate::runner::shard::MAX_START_WAIT;
    if d > max {
        return Err(format!(
            "--lead {text:?} is more than the limit of {}: the shards would wait that long for \
             their first rung; give the time they need to start, e.g. --lead 60s",
            humantime::format_duration(max)
        ));
    }
    Ok(d)
}

/// Why `ladder slurm` or `ladder kube` wrote nothing (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The scenario or a flag cannot make a sharded run (the message says which and why).
    #[error("{0}")]
    Refused(String),
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
