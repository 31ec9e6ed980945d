//! `ladder history`: chosen metrics across many result folders of one scenario, in time
//! order, with the change points where a metric stepped and the configuration diff there.
//!
//! [`series`] loads the folders (checked as `compare` checks them), [`changepoint`] finds
//! the steps of one series, [`capacity`] follows capacity searches' answers
//! (`capacity.json`), and [`analyze`] builds the [`History`] that `report::history` renders
//! (terminal table, Markdown summary, HTML page, JSON); `commands::history` is the command.
//! History stands on `compare`: it reuses its config diff and metric checks.

pub(crate) mod capacity;
pub(crate) mod changepoint;
pub mod series;

use std::path::PathBuf;

use crate::compare::config_diff;
use crate::results::rate_label;
pub use changepoint::{ChangePoint, Config, Test};
pub use series::{Folder, Skipped};

/// Metrics shown when none is chosen.
pub const DEFAULT_METRICS: [&str; 4] = [
    "request_throughput",
    "median_ttft_ms",
    "median_tpot_ms",
    "error_rate",
];

/// What `ladder history` was asked for.
#[derive(Debug, Clone)]
pub struct HistoryOptions {
    /// Result folders, or folders of them.
    pub dirs: Vec<PathBuf>,
    /// Metric keys of result_rate_<rate>.json, or `capacity` (each folder's capacity.json
    /// answer); empty means `capacity` when the newest folder is a capacity search, else
    /// [`DEFAULT_METRICS`].
    pub metrics: Vec<String>,
    /// Rungs to follow; empty means every rate common to the folders.
    pub rates: Vec<f64>,
    pub detect: Config,
    /// Markdown summary to write.
    pub summary: Option<PathBuf>,
    /// HTML page to write.
    pub html: Option<PathBuf>,
    /// `--json`: one JSON document on stdout (docs/json.md) instead of the tables.
    pub json: bool,
}

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    Higher,
    Lower,
}

/// Which way `metric` regresses; `None` for counts and settings that are neither.
pub fn worse_direction(metric: &str) -> Option<Worse> {
    match metric {
        "error_rate" | "failed" => Some(Worse::Higher),
        crate::capacity::CAPACITY_METRIC
        | "request_throughput"
        | "qps"
        | "request_goodput"
        | "output_throughput"
        | "total_token_throughput"
        | "achieved_rate"
        | "max_output_tokens_per_s"
        | "completed" => Some(Worse::Lower),
        m if m.ends_with("_ms") => Some(Worse::Higher),
        _ => None,
    }
}

/// A change point of one series, placed among the folders.
#[derive(Debug, Clone)]
pub struct Step {
    /// The rung of the series; `None` for the capacity series (a search's answer, no rung).
    pub rate: Option<f64>,
    pub metric: String,
    /// Folder position (0-based, time order) where the step happened.
    pub folder: usize,
    /// The folder before it in this series.
    pub previous: usize,
    pub change: ChangePoint,
    /// True when the step goes the metric's bad way.
    pub regression: bool,
    /// Unified config diff between `previous` and `folder`; `None` when they are equal.
    pub config_diff: Option<String>,
}

/// Everything found.
#[derive(Debug)]
pub struct History {
    pub folders: Vec<Folder>,
    pub skipped: Vec<Skipped>,
    /// Rungs followed: empty when only `capacity` is.
    pub rates: Vec<f64>,
    /// What the rungs' levels count (every folder's, the same): req/s or users.
    pub load: crate::scenario::LoadKind,
    /// Rung metrics followed (`capacity` is [`History::capacity`]).
    pub metrics: Vec<String>,
    /// The capacity searches' answers, when `capacity` is followed.
    pub capacity: Option<capacity::CapacitySeries>,
    pub detect: Config,
    /// Every change point, by rate, metric, then folder; the capacity series' last.
    pub steps: Vec<Step>,
    /// Notes for the user (scenarios that differ, rates missing in some folders).
    pub notes: Vec<String>,
}

impl History {
    /// Change points at the newest folder that go a metric's bad way.
    pub fn latest_regressions(&self) -> Vec<&Step> {
        let last = self.folders.len().saturating_sub(1);
        self.steps
            .iter()
            .filter(|s| s.folder == last && s.regression)
            .collect()
    }

    /// When only the capacity series is followed and the newest folder has no point in it
    /// (no capacity.json, a damaged one, or a one-sided answer; a note says which): there is
    /// nothing at the newest folder to judge, so no "ok" either.
    pub fn newest_unjudged(&self) -> bool {
        let last = self.folders.len().saturating_sub(1);
        self.metrics.is_empty()
            && self
                .capacity
                .as_ref()
                .is_some_and(|c| c.points().iter().all(|(f, _)| *f != last))
    }

    /// 1 when the newest folder is a regression change point, 2 when it has nothing to judge
    /// ([`History::newest_unjudged`]), else 0.
    pub fn exit_code(&self) -> i32 {
        if !self.latest_regressions().is_empty() {
            crate::exit::REGRESSION
        } else if self.newest_unjudged() {
            crate::exit::BAD_INPUT
        } else {
            crate::exit::OK
        }
    }
}

/// Why a history cannot be analysed: the options or the folders are unusable (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("--alpha {0} is not a probability between 0 and 1 (e.g. 0.01)")]
    Alpha(f64),
    #[error(
        "--permutations {permutations} cannot reach --alpha {alpha}: the smallest p-value is \
         1/(permutations+1); use at least {least}"
    )]
    Permutations {
        permutations: usize,
        alpha: f64,
        least: usize,
    },
    #[error("--metric: {0}")]
    Metric(crate::compare::ThresholdError),
    /// An argument is not a folder (`reason`: the system's error, or "not a folder").
    #[error(
        "{}: {reason}; give result folders (results/<scenario>/<timestamp>) or a scenario's \
         results folder (results/<scenario>/)",
        path.display()
    )]
    NotAFolder { path: PathBuf, reason: String },
    /// Every argument was skipped: `why` holds one line per skipped folder.
    #[error(
        "no usable result folder among the arguments{}{}",
        if why.is_empty() { "" } else { ":\n" },
        why.join("\n")
    )]
    NoFolders { why: Vec<String> },
    #[error(
        "the folders mix {kind} ladders ({}) and {other_kind} ladders ({}): a history follows \
         one kind of ladder; give the folders of one scenario",
        first.display(),
        other.display()
    )]
    MixedLadders {
        kind: &'static str,
        first: PathBuf,
        other_kind: &'static str,
        other: PathBuf,
    },
    #[error(
        "--metric capacity: none of the {0} folders holds a capacity.json (the answer of a \
         capacity search, load.search; docs/capacity.md)"
    )]
    NoCapacity(usize),
    #[error(
        "no rung rate is common to every folder; choose rungs with --rate R (missing values are \
         left out of that rung's series)"
    )]
    NoCommonRate,
    /// `--rate` names a rung no folder finished (the rate as labelled).
    #[error("--rate {0}: no folder has a finished rung at that rate")]
    NoSuchRate(String),
}

/// Load, build every (rate, metric) series, find its change points.
pub fn analyze(opts: &HistoryOptions) -> Result<History, AnalyzeError> {
    let cfg = opts.detect;
    check_detect(&cfg)?;
    let is_capacity = |m: &String| m == crate::capacity::CAPACITY_METRIC;
    let mut follow_capacity = opts.metrics.iter().any(is_capacity);
    let mut metrics: Vec<String> = if opts.metrics.is_empty() {
        DEFAULT_METRICS.iter().map(|m| m.to_string()).collect()
    } else {
        opts.metrics
            .iter()
            .filter(|m| !is_capacity(m))
            .cloned()
            .collect()
    };
    for m in &metrics {
        crate::compare::validate_metric(m).map_err(AnalyzeError::Metric)?;
    }
    let loaded = series::load(&opts.dirs)?;
    let folders = loaded.folders;
    if folders.is_empty() {
        let why: Vec<String> = loaded
            .skipped
            .iter()
            .map(|s| format!("  {}: {}", s.path.display(), s.reason))
            .collect();
        return Err(AnalyzeError::NoFolders { why });
    }
    // A rate rung and a concurrency rung with the same number are different experiments.
    let load = folders[0].dir.info.load;
    if let Some(other) = folders.iter().find(|f| f.dir.info.load != load) {
        return Err(AnalyzeError::MixedLadders {
            kind: load.name(),
            first: folders[0].dir.path.clone(),
            other_kind: other.dir.info.load.name(),
            other: other.dir.path.clone(),
        });
    }
    let mut notes = Vec::new();
    // Capacity searches rarely share a probe rate: with no metric chosen, a history whose
    // newest folder is one follows the searches' answers. A damaged capacity.json still
    // makes it one: its series then says why the newest has no answer, rather than judging
    // the rung tables in silence.
    let newest_searched = folders
        .last()
        .is_some_and(|f| !matches!(crate::results::read_capacity(&f.dir), Ok(None)));
    if opts.metrics.is_empty() && newest_searched {
        follow_capacity = true;
        metrics.clear();
        notes.push(
            "the newest folder is a capacity search: following each folder's capacity.json \
             answer (--metric capacity); --metric NAME follows a rung metric instead"
                .into(),
        );
    }
    if metrics.is_empty() && !opts.rates.is_empty() {
        notes.push(
            "--rate chooses the rungs of rung metrics; only capacity is followed, so it is not used"
                .into(),
        );
    }
    let rates = if metrics.is_empty() {
        Vec::new()
    } else {
        rung_rates(&folders, &opts.rates, &mut notes)?
    };
    let mut names: Vec<&str> = folders
        .iter()
        .filter(|f| f.dir.imported.is_none())
        .map(|f| f.dir.info.scenario_name.as_str())
        .collect();
    names.sort();
    names.dedup();
    if names.len() > 1 {
        notes.push(format!(
            "the folders are of {} scenarios ({}): a step may be a change of scenario",
            names.len(),
            names.join(", ")
        ));
    }
    let mut steps = Vec::new();
    for &rate in &rates {
        for metric in &metrics {
            let points = series::series(&folders, rate, metric);
            steps.extend(steps_of(&folders, &points, Some(rate), metric, &cfg));
        }
    }
    let capacity = if follow_capacity {
        let c = capacity::load(&folders, &mut notes);
        if c.answers.is_empty() {
            return Err(AnalyzeError::NoCapacity(folders.len()));
        }
        let metric = crate::capacity::CAPACITY_METRIC;
        steps.extend(steps_of(&folders, &c.points(), None, metric, &cfg));
        Some(c)
    } else {
        None
    };
    Ok(History {
        folders,
        skipped: loaded.skipped,
        rates,
        load,
        metrics,
        capacity,
        detect: cfg,
        steps,
        notes,
    })
}

/// `--alpha` is a probability the permutation test can reach.
fn check_detect(cfg: &Config) -> Result<(), AnalyzeError> {
    if !(cfg.alpha > 0.0 && cfg.alpha < 1.0) {
        return Err(AnalyzeError::Alpha(cfg.alpha));
    }
    if (cfg.permutations as f64 + 1.0) * cfg.alpha < 1.0 {
        return Err(AnalyzeError::Permutations {
            permutations: cfg.permutations,
            alpha: cfg.alpha,
            least: (1.0 / cfg.alpha).ceil() as usize - 1,
        });
    }
    Ok(())
}

/// The rungs a history of rung metrics follows: `chosen` (each in some folder), or every
/// rate common to the folders; with a note for each rung some folders lack, and why (an
/// interrupted run's unfinished rung).
fn rung_rates(
    folders: &[Folder],
    chosen: &[f64],
    notes: &mut Vec<String>,
) -> Result<Vec<f64>, AnalyzeError> {
    let rates = if chosen.is_empty() {
        let common = series::common_rates(folders);
        if common.is_empty() {
            return Err(AnalyzeError::NoCommonRate);
        }
        common
    } else {
        for r in chosen {
            if series::left_out(folders, *r).len() == folders.len() {
                return Err(AnalyzeError::NoSuchRate(rate_label(*r)));
            }
        }
        chosen.to_vec()
    };
    for &r in &rates {
        let out = series::left_out(folders, r);
        if !out.is_empty() {
            let which: Vec<String> = out.iter().map(|(n, why)| format!("{n} ({why})")).collect();
            notes.push(format!(
                "rate {}: {} of {} folders have no finished rung there; left out of its series: {}",
                rate_label(r),
                out.len(),
                folders.len(),
                which.join(", ")
            ));
        }
    }
    Ok(rates)
}

/// The change points of one series, `points` its (folder position, value) in time order,
/// placed among the folders with the configuration diff at each.
fn steps_of(
    folders: &[Folder],
    points: &[(usize, f64)],
    rate: Option<f64>,
    metric: &str,
    cfg: &Config,
) -> Vec<Step> {
    let values: Vec<f64> = points.iter().map(|p| p.1).collect();
    changepoint::detect(&values, cfg)
        .into_iter()
        .map(|cp| {
            let (folder, previous) = (points[cp.index].0, points[cp.index - 1].0);
            let regression = match worse_direction(metric) {
                Some(Worse::Higher) => cp.after > cp.before,
                Some(Worse::Lower) => cp.after < cp.before,
                None => false,
            };
            Step {
                rate,
                metric: metric.to_string(),
                folder,
                previous,
                change: cp,
                regression,
                config_diff: config_diff::unified(
                    &folders[previous].dir.info,
                    &folders[folder].dir.info,
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_directions_follow_the_metric() {
        for m in ["median_ttft_ms", "p99_tpot_ms", "error_rate", "failed"] {
            assert_eq!(worse_direction(m), Some(Worse::Higher), "{m}");
        }
        for m in [
            "request_throughput",
            "qps",
            "request_goodput",
            "output_throughput",
            "capacity",
        ] {
            assert_eq!(worse_direction(m), Some(Worse::Lower), "{m}");
        }
        for m in ["total_input_tokens", "num_prompts", "burstiness"] {
            assert_eq!(worse_direction(m), None, "{m}");
        }
        // Every key with a direction is a real metric key.
        let keys = crate::metrics::RungSummary::metric_keys();
        for m in [
            "failed",
            "qps",
            "achieved_rate",
            "max_output_tokens_per_s",
            "completed",
        ] {
            assert!(keys.iter().any(|k| k == m), "{m}");
        }
    }
}
