//! What `ladder bless` checks of the runs it makes a baseline of, beyond the folder's own
//! integrity: `--add` of a run the baseline already holds (or of the baseline itself), and
//! a run far from the others on some rung ([`crate::metrics::outliers`]).

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::metrics::outliers::{self, Outlier};
use crate::results::{ResultDir, RunInfo};

/// The start times of the runs a folder holds: its own, and those `bless --add` recorded
/// in its run.json warnings (`… added the run of <dir> (started <time>, …`). A run's start
/// (to the nanosecond, same scenario) is its identity: a copy of a folder keeps it.
pub fn run_starts(info: &RunInfo) -> Vec<DateTime<Utc>> {
    let mut v = vec![info.started_at];
    for w in &info.warnings {
        let Some(rest) = w.strip_prefix(ADDED) else {
            continue;
        };
        let Some((_, after)) = rest.rsplit_once(" (started ") else {
            continue;
        };
        let time = after.split(',').next().unwrap_or_default();
        if let Ok(t) = DateTime::parse_from_rfc3339(time) {
            v.push(t.with_timezone(&Utc));
        }
    }
    v
}

/// The start of the warning `results::merge::add_run` writes.
const ADDED: &str = "`ladder bless --add` added the run of ";

/// Refuse adding `add` to the baseline `base` (at `dest`) when it is the baseline folder
/// itself, or a run the baseline already holds: a copy counted again would pass for
/// run-to-run agreement and narrow every interval of every gate.
pub fn refuse_duplicate(base: &ResultDir, dest: &Path, add: &ResultDir) -> Result<(), Duplicate> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(&add.path, dest) {
        return Err(Duplicate::TheBaseline {
            path: add.path.clone(),
        });
    }
    let held = run_starts(&base.info);
    let dup: Vec<String> = run_starts(&add.info)
        .into_iter()
        .filter(|t| held.contains(t))
        .map(|t| t.to_rfc3339())
        .collect();
    if !dup.is_empty() {
        return Err(Duplicate::HeldRun {
            path: add.path.clone(),
            baseline: dest.to_path_buf(),
            scenario: add.info.scenario_name.clone(),
            started: dup,
        });
    }
    Ok(())
}

/// Why `ladder bless --add` refuses a folder: it would count runs the baseline holds again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Duplicate {
    /// The folder is the baseline itself.
    #[error(
        "{} is the baseline itself: adding it would count its runs twice; add a new run \
         of the scenario (`ladder run …`, then `ladder bless --add <its folder>`)",
        path.display()
    )]
    TheBaseline { path: std::path::PathBuf },
    /// The folder holds runs (by their start, RFC 3339) the baseline already holds.
    #[error(
        "{} holds a run the baseline {} already holds (scenario `{scenario}`, started {}): a \
         run added twice (or a copy of one) would pass for run-to-run agreement and make \
         every interval too narrow; add a new run of the scenario (`ladder run …`, then \
         `ladder bless --add <its folder>`)",
        path.display(),
        baseline.display(),
        started.join(", ")
    )]
    HeldRun {
        path: std::path::PathBuf,
        baseline: std::path::PathBuf,
        scenario: String,
        started: Vec<String>,
    },
}

/// The outlier runs among `runs` per rung (rate, the rung's runs in order), each line
/// naming the rung, the run, the metric and the values.
pub fn outlier_lines(
    load: crate::scenario::LoadKind,
    rungs: &[(f64, Vec<crate::metrics::RungSummary>)],
) -> Vec<String> {
    rungs
        .iter()
        .flat_map(|(rate, runs)| outliers::of_rung(*rate, runs))
        .map(|o: Outlier| format!("rung {}: {}", load.level(o.rate), o.describe()))
        .collect()
}

/// Every rung's runs of a folder (its repeats, or the one run).
pub fn runs_per_rung(d: &ResultDir) -> Vec<(f64, Vec<crate::metrics::RungSummary>)> {
    d.rungs
        .iter()
        .map(|r| (r.entry.rate, outliers::runs_of(&r.summary)))
        .collect()
}
