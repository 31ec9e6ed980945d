//! `ladder merge`: find the shards of a sharded run (waiting for them when asked), merge
//! them into one result folder and give it its reports.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::notes::Notes;
use crate::results::shard_merge::{self, MergeError, Merged};

/// Merge `shards` (their folders, or the one folder holding them) into `out`, after waiting
/// up to `wait` for every shard to appear and finish; then write `out`'s reports.
pub fn merge(
    shards: &[PathBuf],
    out: &Path,
    wait: Option<Duration>,
    notes: &Notes,
) -> Result<Merged, MergeError> {
    let dirs = shard_merge::shard_dirs(shards, wait, notes)?;
    let m = shard_merge::merge(&dirs, out)?;
    notes.err(&m.describe());
    super::report::write_reports(out, false, notes);
    Ok(m)
}
