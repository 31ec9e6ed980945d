//! What `ladder bless` checks of the runs it makes a baseline of, beyond the folder's own
//! integrity: `--add` of a run the baseline already holds (or of the baseline itself), of a
//! run the gate fails against the baseline, and a run far from the others on some rung
//! ([`crate::metrics::outliers`]).

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

/// The regressions of `add` against the baseline `base` it would be added to, one line each
/// (`rung 4 users: median_ttft_ms 1864.8 -> 2829.5 (+51.7%)`): `ladder compare`'s default
/// judgement (the baseline's `gate:` rules, or the default checks). Empty when none
/// regressed, or when the two cannot be compared (the checks that follow say why).
pub fn regressions_if_added(base: &ResultDir, add: &ResultDir) -> Vec<String> {
    let Ok(c) = super::compare(base, add, &super::CompareOptions::default()) else {
        return Vec::new();
    };
    c.rows
        .iter()
        .filter(|r| r.decision.verdict == super::Verdict::Regression)
        .map(|r| {
            let at = if r.rate.is_nan() {
                "the search".to_string()
            } else {
                format!("rung {}", c.load.level(r.rate))
            };
            let pct = r.pct().map(|p| format!(" ({p:+.1}%)")).unwrap_or_default();
            format!(
                "{at}: {} {} -> {}{pct}",
                r.check.metric,
                crate::format::trimmed(r.base, 4),
                crate::format::trimmed(r.cand, 4)
            )
        })
        .collect()
}

/// A warning when the candidate `c` is one of the runs the baseline `b` holds (the same
/// scenario and start: the folder blessed, or a run added with `bless --add`): it is then
/// judged against a pool that contains it, so the two agree whatever the server did.
pub fn candidate_held(b: &ResultDir, c: &ResultDir) -> Option<String> {
    if b.info.scenario_name != c.info.scenario_name {
        return None;
    }
    let held = run_starts(&b.info);
    let starts = run_starts(&c.info);
    // The same start, and every rung's runs measured exactly as one of the baseline's runs
    // of that rung (a copy keeps every number; two fixtures sharing a date do not).
    let same_numbers = |x: &crate::metrics::RungSummary, y: &crate::metrics::RungSummary| {
        x.completed == y.completed
            && x.failed == y.failed
            && x.duration_s.to_bits() == y.duration_s.to_bits()
    };
    let measured_there = c.rungs.iter().all(|r| {
        let base_runs = b
            .rung(r.entry.rate)
            .map(|br| outliers::runs_of(&br.summary))
            .unwrap_or_default();
        outliers::runs_of(&r.summary)
            .iter()
            .all(|run| base_runs.iter().any(|br| same_numbers(run, br)))
    });
    (starts.iter().all(|t| held.contains(t)) && measured_there).then(|| {
        format!(
            "the candidate is one of the baseline's runs (scenario `{}`, started {}): it is \
             judged against a baseline that holds it, so the two agree whatever the server \
             did; compare a new run of the scenario",
            c.info.scenario_name,
            c.info.started_at.to_rfc3339()
        )
    })
}
