//! What `ladder bless` does with the baseline it replaces: it is moved, whole, to
//! `<golden>/.replaced/<scenario>/<time of replacement>/` (restore it by moving it back),
//! and described from its run.json (date, git commit, ladder version) so the user sees
//! what was replaced. `.replaced/` gets a `.gitignore` that ignores everything in it, so
//! `git add golden/` does not commit the backups. No scenario may be named `.replaced`
//! ([`crate::scenario::REPLACED_DIR`]), so gate and history never take this folder, or
//! anything in it, for a baseline.

use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::gate::GateError;
use crate::results::write::timestamp_dir_name;
use crate::results::RunInfo;
use crate::scenario::REPLACED_DIR;

/// A baseline that a bless moved aside.
#[derive(Debug, Clone, PartialEq)]
pub struct Replaced {
    /// Where it is now: `<golden>/.replaced/<scenario>/<time>/`.
    pub archive: PathBuf,
    /// From its run.json; `None` when it has none (a folder of vLLM result files) or it
    /// cannot be read.
    pub started_at: Option<DateTime<Utc>>,
    pub git_commit: Option<String>,
    pub tool_version: Option<String>,
}

impl Replaced {
    /// `the baseline of 2026-01-02 03:04:05 UTC (git 0123456789ab, ladder 0.1.0)`.
    pub fn describe(&self) -> String {
        let date = self.started_at.map_or("unknown date".to_string(), |t| {
            t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
        });
        let commit = self
            .git_commit
            .as_deref()
            .map_or("no git commit recorded".to_string(), |c| {
                format!("git {}", crate::format::first_chars(c, 12))
            });
        let version = self
            .tool_version
            .as_deref()
            .map_or("ladder version unknown".to_string(), |v| {
                format!("ladder {v}")
            });
        format!("the baseline of {date} ({commit}, {version})")
    }
}

/// What `<golden>/.replaced/.gitignore` holds: everything under `.replaced/` (itself
/// included) is ignored, so `git add golden/` commits the baselines and not their backups.
pub const GITIGNORE: &str =
    "# Baselines replaced by `ladder bless`, kept here to restore one by moving it back.\n\
# Ignored by git, so `git add golden/` commits the baselines, not these backups.\n*\n";

/// Write `<dir>/.gitignore` ([`GITIGNORE`]) unless something is there already (the user's
/// own file, kept as it is).
fn keep_out_of_git(dir: &Path) -> Result<(), GateError> {
    let path = dir.join(".gitignore");
    if fs::symlink_metadata(&path).is_ok() {
        return Ok(());
    }
    fs::write(&path, GITIGNORE).map_err(|source| GateError::Io { path, source })
}

/// Text from a folder that may come from a pull request, fit for a terminal: printable
/// characters only, at most 64 of them.
fn plain(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(64).collect()
}

/// Plan the move of the baseline at `dest`: describe it and pick a fresh folder under
/// `<golden>/.replaced/<name>/` (created up to `<name>`; every level must be a real folder,
/// never a symlink, as golden/ arrives in pull requests). Nothing is moved yet.
pub(super) fn plan(
    golden: &Path,
    name: &str,
    dest: &Path,
    now: DateTime<Utc>,
) -> Result<Replaced, GateError> {
    let mut dir = golden.to_path_buf();
    for part in [REPLACED_DIR, name] {
        dir.push(part);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(GateError::Unsafe(format!(
                    "{} is not a folder (a symlink or a file); it is where replaced baselines are kept: remove it by hand if it is yours",
                    dir.display()
                )))
            }
            Err(_) => fs::create_dir(&dir).map_err(|source| GateError::Io {
                path: dir.clone(),
                source,
            })?,
        }
        if part == REPLACED_DIR {
            keep_out_of_git(&dir)?;
        }
    }
    let stamp = timestamp_dir_name(now);
    let archive = (0..1000)
        .map(|i| match i {
            0 => dir.join(&stamp),
            i => dir.join(format!("{stamp}-{i}")),
        })
        .find(|p| fs::symlink_metadata(p).is_err())
        .ok_or_else(|| GateError::Unsafe(format!("{}: no free folder name", dir.display())))?;
    let info: Option<RunInfo> = crate::results::read_result_json(&dest.join("run.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    Ok(Replaced {
        archive,
        started_at: info.as_ref().map(|i| i.started_at),
        git_commit: info
            .as_ref()
            .and_then(|i| i.git_commit.as_deref())
            .map(plain),
        tool_version: info.as_ref().map(|i| plain(&i.tool_version)),
    })
}
