//! Comparing two result folders: rungs matched by rate, noise-aware verdicts per gated
//! metric, a config diff and the saturation shift. The CI gate built on it (run, then
//! compare) is a command: `commands::gate`.
//!
//! The statistics and every parameter are documented in docs/gate.md.

pub(crate) mod bless_check;
mod cache;
pub(crate) mod capacity;
pub(crate) mod components;
pub(crate) mod config_diff;
pub mod evidence;
pub(crate) mod explain;
#[cfg(test)]
mod family_tests;
pub(crate) mod groups;
pub(crate) mod hier;
pub(crate) mod large;
mod mixed;
pub(crate) mod models;
pub(crate) mod rules;
mod samples;
pub(crate) mod settle;
pub mod size;
pub(crate) mod small;
pub mod stats;
pub(crate) mod threshold;
pub mod verdict;
pub(crate) mod verdict_types;

use crate::scenario::LoadKind;
use std::path::Path;

pub use rules::checks_for;
pub use stats::Interval;
pub use threshold::{parse_override, validate_metric, Bound, Check, ThresholdError};
pub use verdict::{Decision, Method, Scale, Verdict};

use crate::results::{LoadError, ResultDir, RunStatus};
use evidence::{Side, Slo};
use std::collections::BTreeMap;
use verdict::Evidence;

/// How to compare.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// `--threshold` overrides (already parsed); they replace other checks on their metric.
    pub overrides: Vec<Check>,
    /// Compare even when the model, workload or tokenizer differ.
    pub allow_config_change: bool,
    /// Take the checks from the candidate's `gate:` list first: `ladder gate`, whose
    /// candidate is a fresh run of the scenario file in hand. Two folders given to
    /// `ladder compare` take the baseline's (the blessed side): a candidate folder from a
    /// pull request must not be able to loosen its own thresholds.
    pub candidate_rules_first: bool,
    /// `--only`: apply the overrides alone, not the scenario's `gate:` rules or the defaults.
    pub only: bool,
    /// `--drift`: the run-to-run spread (e.g. 0.05 for 5 %) assumed when neither side has
    /// two runs to measure it; [`DEFAULT_DRIFT`] unless given, `None` (`--drift 0`) for none.
    pub drift: Option<f64>,
    /// `--judge-saturated`: judge latency checks on rungs past saturation too.
    pub judge_saturated: bool,
}

/// The run-to-run drift assumed when neither side has two runs to measure it (`--drift`'s
/// default): 5 % per run, the spread of the simulator's calibration (`sim.drift: 0.05`).
/// The real llama.cpp server's medians moved about 1 % between back-to-back runs and up to
/// 40 % near capacity in later runs (docs/gate.md, "Calibration on the real llama.cpp
/// server"): no single number fits every server, so it is a default, not a measurement. One
/// run per side cannot tell a drift from a change, so a one-run baseline is judged as if
/// its runs drifted this much; `ladder bless --add` measures it.
pub const DEFAULT_DRIFT: f64 = 0.05;

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            overrides: Vec::new(),
            allow_config_change: false,
            candidate_rules_first: false,
            only: false,
            drift: Some(DEFAULT_DRIFT),
            judge_saturated: false,
        }
    }
}

/// Why two folders could not be compared (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{which}: {source}")]
    Load {
        which: &'static str,
        source: LoadError,
    },
    #[error("{0}")]
    Threshold(#[from] ThresholdError),
    #[error(
        "cannot compare a {} ladder (baseline) with a {} ladder (candidate): the baseline's rungs \
         are {} and the candidate's are {}, so no rung of one matches a rung of the other; compare \
         runs of the same kind of ladder (--allow-config-change does not apply)",
        base.name(), cand.name(), base.axis(), cand.axis()
    )]
    LoadKinds { base: LoadKind, cand: LoadKind },
    #[error("the {which} run ({dir}) {how} before any rung completed (status `{status}` in its run.json{detail}); nothing to compare: re-run it to the end (a soak: until load.duration has passed) and compare that folder")]
    NoCompleteRung {
        which: &'static str,
        dir: std::path::PathBuf,
        how: &'static str,
        status: RunStatus,
        detail: String,
    },
    #[error("the two runs have no rung rate in common (baseline {base:?}, candidate {cand:?}); compare runs of the same ladder")]
    NoCommonRungs { base: Vec<f64>, cand: Vec<f64> },
    #[error("refusing to compare runs of different configurations:\n  {}\npass --allow-config-change to compare anyway", .0.join("\n  "))]
    ConfigChange(Vec<String>),
    #[error(
        "rung {rate}: the {side} has 0 successful requests ({detail}); cannot compare {metric}"
    )]
    NoSuccesses {
        rate: f64,
        side: &'static str,
        metric: String,
        detail: String,
    },
    #[error(
        "no rung can be compared: rungs {rates:?} req/s hit a client-side resource limit \
         (requests failed on the client, not the server) and the others are not in both runs; \
         to rerun, {}",
        crate::record::CLIENT_RESOURCE_FIX
    )]
    ClientLimited { rates: Vec<f64> },
    /// A gate rule names a model one side's rung does not break down by.
    #[error(
        "rung {rate}: a gate rule judges model `{model}`, but the {side}'s rung has no \
         requests of it (its models: [{}]); rerun with the same `model` mix, or drop the \
         rule's `model:`",
        listed.join(", ")
    )]
    ModelMissing {
        rate: f64,
        side: &'static str,
        model: String,
        listed: Vec<String>,
    },
    /// A capacity.json that cannot be read.
    #[error("{which}: {source}")]
    Capacity {
        which: &'static str,
        source: crate::results::CapacityReadError,
    },
    #[error("{path}: scenario `gate:` list is malformed: {message}")]
    BadGate { path: String, message: String },
    /// One shard's folder of a sharded run, given as a whole run.
    #[error("{which}: {message}")]
    Shard {
        which: &'static str,
        message: String,
    },
}

/// One check on one rung.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub rate: f64,
    pub check: Check,
    pub base: f64,
    pub cand: f64,
    pub method: Method,
    pub decision: Decision,
    /// For an error_rate check of one run per side: (failed, measured) of the baseline and
    /// the candidate (the pooled test of small rungs reads them).
    pub errors: Option<small::Stratum>,
    /// A throughput on an open-loop rung below both runs' knees: the server served what
    /// arrived, on the arrival schedule both runs share, so its value is the offered rate
    /// whatever the server's speed. Its pass says the server kept up, not that it is as
    /// fast: it does not, alone, make a comparison a PASS ([`Comparison::no_verdict`]).
    pub schedule_bound: bool,
}

impl Row {
    /// Candidate − baseline.
    pub fn delta(&self) -> f64 {
        self.cand - self.base
    }
    /// Relative change in percent, `None` for a zero baseline.
    pub fn pct(&self) -> Option<f64> {
        (self.base != 0.0)
            .then(|| 100.0 * (self.cand - self.base) / self.base.abs())
            .filter(|p| p.is_finite())
    }
}

/// Knee of each run.
#[derive(Debug, Clone, PartialEq)]
pub struct KneeShift {
    /// What a rung's level counts (both runs are of the same kind).
    pub load: LoadKind,
    pub base: Option<(f64, String)>,
    pub cand: Option<(f64, String)>,
}

impl KneeShift {
    /// One line for humans.
    pub fn describe(&self) -> String {
        let k = |v: &Option<(f64, String)>| match v {
            Some((r, _)) => self.load.level(*r),
            None => "not reached".to_string(),
        };
        let moved = match (&self.base, &self.cand) {
            (Some((a, _)), Some((b, _))) if a == b => "unchanged".to_string(),
            (None, None) => "unchanged".to_string(),
            (Some((a, _)), Some((b, _))) if b < a => "moved DOWN (saturates earlier)".to_string(),
            (Some(_), Some(_)) => "moved up (saturates later)".to_string(),
            (None, Some(_)) => "moved DOWN (now saturates within the ladder)".to_string(),
            (Some(_), None) => "moved up (no longer saturates within the ladder)".to_string(),
        };
        format!(
            "knee: baseline {}, candidate {} — {moved}",
            k(&self.base),
            k(&self.cand)
        )
    }
}

/// A finished comparison, ready to render.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// How the two folders are named in output (their paths, unless a caller renames them).
    pub base_label: String,
    pub cand_label: String,
    /// Scenario name (of the candidate).
    pub scenario: String,
    /// What the rungs' levels count (req/s or users); the same on both sides.
    pub load: LoadKind,
    /// Unified diff of configurations; `None` when equal.
    pub config_diff: Option<String>,
    /// Model / workload / tokenizer differences (compared anyway under --allow-config-change).
    pub config_changes: Vec<String>,
    /// Rungs only one side has, status problems, etc.
    pub warnings: Vec<String>,
    /// Where the checks came from: `scenario gate:`, `defaults`, plus overrides.
    pub checks_source: String,
    pub knee: KneeShift,
    /// The false-alarm budget shared by the checks.
    pub family: Family,
    /// How many runs each side's intervals rest on: whether run-to-run noise is in them.
    pub run_noise: RunNoise,
    pub rows: Vec<Row>,
    /// Per common rung, the server-side changes (from scraped `/metrics`) that go with the
    /// verdicts; only rungs where something moved.
    pub server_notes: Vec<(f64, String)>,
    /// Per common rung whose two sides mix the same models: each model's main metrics on
    /// both sides (shown, not judged; a gate rule with `model:` judges one).
    pub model_rows: Vec<ModelRow>,
    /// What each side ran (baseline, candidate): model, lengths, load, server, endpoint.
    pub what_ran: [Vec<crate::results::facts::Fact>; 2],
}

/// One model's value of one metric on both sides of a rung ([`Comparison::model_rows`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRow {
    pub rate: f64,
    pub model: String,
    pub metric: &'static str,
    pub base: f64,
    pub cand: f64,
}

/// The family of statistical checks one comparison runs, and the Bonferroni level each
/// check's interval is computed at so that the whole comparison has the stated level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Family {
    /// Family-wise confidence (0.95): the chance that an unchanged configuration gets no
    /// regression (nor improvement) verdict at all.
    pub level: f64,
    /// Checks with a noise model (rung × check, plain comparisons left out).
    pub size: usize,
    /// Two-sided level of each check's interval: 1 − (1 − level) / size.
    pub per_check: f64,
    /// True when the intervals include the runs' drift (a side has repeats, or `--drift`):
    /// the budget is then split between the requests' noise and one drift bound.
    pub drift: bool,
}

impl Family {
    /// The family of `size` checks at the default family-wise level.
    pub fn of(size: usize) -> Self {
        Family {
            level: stats::CONFIDENCE,
            size,
            per_check: stats::family_level(stats::CONFIDENCE, size),
            drift: false,
        }
    }

    /// `95 % family-wise over 18 checks: each interval at 99.72 % (Bonferroni)`, or with
    /// drift in the intervals the two halves of the budget.
    pub fn describe(&self) -> String {
        let checks = format!(
            "{} family-wise over {} check{}",
            stats::level_text(self.level),
            self.size,
            if self.size == 1 { "" } else { "s" },
        );
        if self.drift {
            let (within, drift) = components::split_levels(self.per_check, self.level);
            return format!(
                "{checks}: each interval at {} for the noise between requests (half the budget, \
                 Bonferroni) plus one bound at {} for the runs' drift (the other half: a run's \
                 drift is shared by every check)",
                stats::level_text(within),
                stats::level_text(drift)
            );
        }
        format!(
            "{checks}: each interval at {} (Bonferroni)",
            stats::level_text(self.per_check)
        )
    }
}

/// Runs (repeats) behind each side of a comparison: the most of any compared rung.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunNoise {
    pub base: usize,
    pub cand: usize,
    /// The run-to-run spread assumed with `--drift` when no side has two runs.
    pub assumed: Option<f64>,
}

impl RunNoise {
    /// True when a side has two or more runs (the intervals include measured drift).
    pub fn measured(&self) -> bool {
        self.base >= 2 || self.cand >= 2
    }

    /// One line for humans: what the intervals cover, and how to measure what they miss.
    pub fn describe(&self) -> String {
        let runs = |n: usize| format!("{n} run{}", if n == 1 { "" } else { "s" });
        if !self.measured() {
            let measure = "measure it with `load.repeats: 3` (or `--repeats 3`), or add blessed \
                runs to the baseline with `ladder bless --add`";
            return match self.assumed {
                Some(a) => format!(
                    "run-to-run noise: assumed {:.1} % per run (--drift, {:.0} % unless given; \
                     one run per side cannot measure it): each latency interval (and throughput \
                     where it measures the server) adds that drift to the noise between \
                     requests; {measure}",
                    a * 100.0,
                    DEFAULT_DRIFT * 100.0
                ),
                None => format!(
                    "run-to-run noise: unknown (one run per side): the intervals cover the noise \
                     between requests of one run, not between runs (machine load, another server \
                     build or restart, a warm cache): --drift 0 took the default assumption \
                     away; {measure}"
                ),
            };
        }
        let borrowed = match (self.base >= 2, self.cand >= 2) {
            (true, false) => "; the candidate's single run borrows the baseline's drift",
            (false, true) => "; the baseline's single run borrows the candidate's drift",
            _ => "",
        };
        format!(
            "run-to-run noise: measured (baseline {}, candidate {}): each interval is the \
             noise between requests (resampled within each run) widened by the runs' drift \
             (the spread of the runs' values beyond what their requests explain, pooled over \
             each metric's rungs below saturation, bounded once for the whole family by \
             Student's t){borrowed}",
            runs(self.base),
            runs(self.cand)
        )
    }
}

impl Comparison {
    /// Count of rows with a verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.decision.verdict == v).count()
    }

    /// The overall verdict: regression if any check regressed (or, with `strict`, was
    /// inconclusive), else pass.
    pub fn failed(&self, strict: bool) -> bool {
        self.count(Verdict::Regression) > 0 || (strict && self.count(Verdict::Inconclusive) > 0)
    }

    /// True when no check was decided (every one inconclusive, or none at all): the
    /// comparison has no verdict, pass or fail. A throughput pass below saturation
    /// ([`Row::schedule_bound`]) is not a decision about the server's speed: a comparison
    /// whose only decided checks are such passes has no verdict either (a candidate whose
    /// latency checks were all inconclusive or past saturation passed on them before).
    pub fn no_verdict(&self) -> bool {
        // Inconclusive and past-saturation checks judge nothing: a PASS needs a decided check.
        !self.rows.iter().any(|r| {
            matches!(
                r.decision.verdict,
                Verdict::Pass | Verdict::Improvement | Verdict::Regression
            ) && !(r.decision.verdict == Verdict::Pass && r.schedule_bound)
        })
    }

    /// Throughput passes on rungs below saturation ([`Row::schedule_bound`]).
    pub fn schedule_passes(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.decision.verdict == Verdict::Pass && r.schedule_bound)
            .count()
    }

    /// Exit code: 1 on a failed comparison; 2 when nothing could be judged (no verdict: an
    /// empty PASS would let any candidate through), unless `strict` made it a failure;
    /// else 0.
    pub fn exit_code(&self, strict: bool) -> i32 {
        if self.failed(strict) {
            crate::exit::REGRESSION
        } else if self.no_verdict() {
            crate::exit::BAD_INPUT
        } else {
            crate::exit::OK
        }
    }
}

/// Load and compare two result folders.
pub fn compare_dirs(
    base: &Path,
    cand: &Path,
    opts: &CompareOptions,
) -> Result<Comparison, CompareError> {
    let b = ResultDir::open_ended(base).map_err(|source| CompareError::Load {
        which: "baseline",
        source,
    })?;
    let c = ResultDir::open_ended(cand).map_err(|source| CompareError::Load {
        which: "candidate",
        source,
    })?;
    compare(&b, &c, opts)
}

/// What the candidate's rung is sized in, for the advice of an inconclusive check.
fn unit_of(d: &ResultDir, rung: &crate::results::LoadedRung) -> settle::Unit {
    let duration = d.info.scenario["load"]["duration"]
        .as_str()
        .and_then(|t| crate::scenario::DurationStr::parse(t).ok());
    if let Some(t) = duration {
        return settle::Unit::Duration(t.0);
    }
    match &rung.summary.sessions {
        Some(s) if s.sessions > 0 => {
            settle::Unit::Sessions(rung.summary.num_prompts as f64 / s.sessions as f64)
        }
        _ => settle::Unit::Requests,
    }
}

fn status_warning(which: &str, d: &ResultDir) -> Option<String> {
    match d.info.status {
        RunStatus::Complete => None,
        s => Some(format!(
            "{which} run status is `{s}`{}; only its complete rungs are compared",
            d.info
                .status_detail
                .as_deref()
                .map(|x| format!(" ({x})"))
                .unwrap_or_default()
        )),
    }
}

/// Compare two loaded result folders: refuse what cannot be compared, match the rungs, size
/// the family of checks, judge every check on every common rung (each rung's files read
/// once), then the checks pooled over rungs and those on the capacity searches' answers.
pub fn compare(
    b: &ResultDir,
    c: &ResultDir,
    opts: &CompareOptions,
) -> Result<Comparison, CompareError> {
    refuse_unlike_runs(b, c)?;
    let checks = Checks::of(b, c, opts)?;
    let config_changes = config_diff::imported_changes(b, c)
        .unwrap_or_else(|| config_diff::fundamental_changes(&b.info, &c.info));
    if !config_changes.is_empty() && !opts.allow_config_change {
        return Err(CompareError::ConfigChange(config_changes));
    }
    let mut warnings = side_warnings(b, c, checks.rules_differ.clone());
    warnings.extend(bless_check::candidate_held(b, c));
    let common = common_rungs(b, c, checks.searches(), &mut warnings)?;
    let (mut family, pooled_errors) = family_of(b, c, &common, &checks.rung);
    let judge = RungJudge {
        b,
        c,
        opts,
        checks: &checks.rung,
        slo: [
            Slo::from_scenario(&b.info.scenario),
            Slo::from_scenario(&c.info.scenario),
        ],
        saturated: [saturated_from(b), saturated_from(c)],
        levels: evidence::Levels {
            per_check: family.per_check,
            family: family.level,
            assumed_drift: opts.drift,
        },
    };
    let mut judged = Judged {
        rows: Vec::new(),
        poolable: Vec::new(),
        run_noise: RunNoise {
            base: 1,
            cand: 1,
            assumed: opts.drift,
        },
        server_notes: Vec::new(),
        model_rows: Vec::new(),
    };
    for &rate in &common {
        judge.rung(rate, &mut judged, &mut warnings)?;
    }
    let Judged {
        mut rows,
        poolable,
        run_noise,
        server_notes,
        model_rows,
    } = judged;
    pool_drift(&mut rows, poolable);
    for check in pooled_errors {
        pooled_error_rate(check, &mut rows, family.per_check);
    }
    for check in &checks.capacity {
        rows.push(capacity::row(
            check,
            checks.capacities.0.as_ref(),
            checks.capacities.1.as_ref(),
        ));
    }
    // A vLLM side's rung is sized by its benchmark's --num-prompts: the advice names both.
    if b.imported.is_some() || c.imported.is_some() {
        for r in &mut rows {
            r.decision.note = settle::name_vllm_knob(&r.decision.note);
        }
    }
    check_rungs_not_compared(b, c, &common)?;
    let knee = KneeShift {
        load: c.info.load,
        base: knee_of(b),
        cand: knee_of(c),
    };
    family.drift = run_noise.measured() || opts.drift.is_some();
    Ok(Comparison {
        base_label: b.path.display().to_string(),
        cand_label: c.path.display().to_string(),
        scenario: c.info.scenario_name.clone(),
        load: c.info.load,
        config_diff: config_diff::unified(&b.info, &c.info),
        config_changes,
        warnings,
        checks_source: checks.source,
        knee,
        family,
        run_noise,
        rows,
        server_notes,
        model_rows,
        what_ran: [b, c]
            .map(|d| crate::results::facts::of(&d.info, d.rungs.iter().map(|r| &r.summary))),
    })
}

/// Refuse two folders that are not two whole runs of one kind of load.
fn refuse_unlike_runs(b: &ResultDir, c: &ResultDir) -> Result<(), CompareError> {
    // One shard's folder holds 1/N of every rung: its throughputs are 1/N of the run's.
    for (which, d) in [("baseline", b), ("candidate", c)] {
        if let Some(s) = &d.info.shard {
            return Err(CompareError::Shard {
                which,
                message: s.not_a_whole_run(&d.path),
            });
        }
    }
    // A rate rung and a concurrency rung with the same number are different experiments.
    if b.info.load != c.info.load {
        return Err(CompareError::LoadKinds {
            base: b.info.load,
            cand: c.info.load,
        });
    }
    Ok(())
}

/// The checks of a comparison: those judged on every common rung and those on the two
/// capacity searches' answers, where they came from, and the two answers.
struct Checks {
    rung: Vec<Check>,
    capacity: Vec<Check>,
    /// Where the checks came from (`Comparison::checks_source`).
    source: String,
    /// A warning when the two sides' `gate:` rules differ.
    rules_differ: Option<String>,
    capacities: (
        Option<crate::capacity::CapacityFile>,
        Option<crate::capacity::CapacityFile>,
    ),
}

impl Checks {
    fn of(b: &ResultDir, c: &ResultDir, opts: &CompareOptions) -> Result<Checks, CompareError> {
        let (checks, mut source, rules_differ) =
            checks_for(b, c, &opts.overrides, opts.candidate_rules_first, opts.only)?;
        // A capacity check judges the two searches' answers, not a rung: it is set apart.
        let (mut capacity, rung): (Vec<Check>, Vec<Check>) = checks
            .into_iter()
            .partition(|ch| ch.metric == crate::capacity::CAPACITY_METRIC);
        let read_capacity = |which: &'static str, d: &ResultDir| {
            crate::results::read_capacity(d)
                .map_err(|source| CompareError::Capacity { which, source })
        };
        let capacities = (
            read_capacity("baseline", b)?,
            read_capacity("candidate", c)?,
        );
        let searches = capacities.0.is_some() && capacities.1.is_some();
        if searches && capacity.is_empty() && !opts.only {
            capacity.push(Check::new(
                crate::capacity::CAPACITY_METRIC,
                Bound::Decrease(crate::scenario::Threshold::Relative(0.05)),
            ));
            source.push_str(" + capacity -5% (both runs are capacity searches)");
        }
        Ok(Checks {
            rung,
            capacity,
            source,
            rules_differ,
            capacities,
        })
    }

    /// True when both runs are capacity searches.
    fn searches(&self) -> bool {
        self.capacities.0.is_some() && self.capacities.1.is_some()
    }
}

/// The warnings about the two folders as wholes: a run that did not complete, rules that
/// differ, a side imported from vLLM's files.
fn side_warnings(b: &ResultDir, c: &ResultDir, rules_differ: Option<String>) -> Vec<String> {
    let mut warnings: Vec<String> = [
        status_warning("baseline", b),
        status_warning("candidate", c),
    ]
    .into_iter()
    .flatten()
    .collect();
    warnings.extend(rules_differ);
    for (which, d) in [("baseline", b), ("candidate", c)] {
        if d.imported.is_some() {
            warnings.push(format!(
                "the {which} is a folder of vLLM result files: it records no scenario, so only the prompt and output lengths per request were checked for a configuration change, and the settings it does not record are left out of the configuration diff"
            ));
            warnings.extend(d.info.warnings.iter().map(|w| format!("{which}: {w}")));
        }
    }
    warnings
}

/// The rungs of either side whose requests failed on the client (out of open files, local
/// ports): they measured the client, not the server, so they are not compared, and a
/// warning says so.
fn client_limited_rungs(b: &ResultDir, c: &ResultDir, warnings: &mut Vec<String>) -> Vec<f64> {
    let kind = c.info.load;
    let mut client_limited = Vec::new();
    for (which, d) in [("baseline", b), ("candidate", c)] {
        for r in d.rungs.iter().filter(|r| r.entry.complete) {
            let n = r.summary.client_failures();
            if n > 0 {
                client_limited.push(r.entry.rate);
                warnings.push(format!(
                    "rung {} of the {which} is unusable: {n} of {} requests failed on the \
                     client (client_resource: out of open files, local ports or socket memory), \
                     not the server; not compared. To rerun it, {}",
                    kind.level(r.entry.rate),
                    r.summary.num_prompts,
                    crate::record::CLIENT_RESOURCE_FIX
                ));
            }
        }
    }
    client_limited
}

/// The levels of the rungs both sides completed and can be compared on, sorted, with a
/// warning for each rung of one side only; refused when there is none to compare (unless
/// both runs are capacity searches, whose answers are compared anyway).
fn common_rungs(
    b: &ResultDir,
    c: &ResultDir,
    searches: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<f64>, CompareError> {
    let kind = c.info.load;
    let mut client_limited = client_limited_rungs(b, c, warnings);
    let usable = |d: &ResultDir| -> Vec<f64> {
        d.rungs
            .iter()
            .filter(|r| r.entry.complete && !client_limited.contains(&r.entry.rate))
            .map(|r| r.entry.rate)
            .collect()
    };
    let (brates, crates) = (usable(b), usable(c));
    let mut common: Vec<f64> = brates
        .iter()
        .copied()
        .filter(|r| crates.contains(r))
        .collect();
    common.sort_by(f64::total_cmp);
    common.dedup();
    warnings.extend(cache::cache_warnings(b, c, &common, kind));
    for r in &brates {
        if !crates.contains(r) {
            warnings.push(format!(
                "rung {} is only in the baseline (missing from the candidate)",
                kind.level(*r)
            ));
        }
    }
    for r in &crates {
        if !brates.contains(r) {
            warnings.push(format!(
                "rung {} is only in the candidate (not in the baseline)",
                kind.level(*r)
            ));
        }
    }
    if common.is_empty() && !client_limited.is_empty() {
        client_limited.sort_by(f64::total_cmp);
        client_limited.dedup();
        return Err(CompareError::ClientLimited {
            rates: client_limited,
        });
    }
    // A side that finished no rung was stopped (or failed) too early: say so, rather than
    // list its empty rates.
    for (which, d, rates) in [("baseline", b, &brates), ("candidate", c, &crates)] {
        let finished_none = d.rungs.iter().all(|r| !r.entry.complete);
        if rates.is_empty() && finished_none && d.info.status != RunStatus::Complete {
            return Err(CompareError::NoCompleteRung {
                which,
                dir: d.path.clone(),
                how: match d.info.status {
                    RunStatus::Failed => "failed",
                    _ => "was interrupted",
                },
                status: d.info.status,
                detail: d.info.status_suffix(),
            });
        }
    }
    // Two searches probe where their verdicts lead them: their answers are compared even
    // when no probe's level is in both.
    if common.is_empty() && !searches {
        return Err(CompareError::NoCommonRungs {
            base: brates,
            cand: crates,
        });
    }
    Ok(common)
}

/// The family of tests the checks make (its size sets each check's level), and the
/// error-rate checks pooled over small rungs.
fn family_of<'c>(
    b: &ResultDir,
    c: &ResultDir,
    common: &[f64],
    checks: &'c [Check],
) -> (Family, Vec<&'c Check>) {
    // The family: every rung × check with a noise model; a summary-only rung compares
    // latencies and throughputs plainly, so only its error_rate checks count.
    let mut size = 0;
    for &rate in common {
        let (br, cr) = (b.rung(rate).expect("common"), c.rung(rate).expect("common"));
        let summary_only = !b.has_requests(br) || !c.has_requests(cr);
        let untimed = !b.has_send_times(br) || !c.has_send_times(cr);
        size += checks
            .iter()
            .filter(|ch| match evidence::Model::of(&ch.metric) {
                evidence::Model::Plain => false,
                evidence::Model::ErrorRate => true,
                evidence::Model::Throughput(_) => !summary_only && !untimed,
                _ => !summary_only,
            })
            .count();
    }
    // Small rungs: each error_rate change check adds one test pooled over the rungs.
    let small_rungs = common.iter().any(|&rate| {
        let n = |d: &ResultDir| {
            d.rung(rate)
                .map_or(0, |r| r.summary.completed.saturating_add(r.summary.failed))
        };
        n(b).min(n(c)) < stats::MIN_REQUESTS as u64
    });
    let pooled_errors: Vec<&Check> = checks
        .iter()
        .filter(|ch| {
            small_rungs
                && evidence::Model::of(&ch.metric) == evidence::Model::ErrorRate
                && matches!(ch.bound, Bound::Increase(_))
        })
        .collect();
    size += pooled_errors.len();
    (Family::of(size), pooled_errors)
}

/// Every rung's lines were checked as they were compared; the rungs not compared (one side
/// only, incomplete, client-limited) are checked now, so a folder is refused whole as
/// `ResultDir::open_finished` would, with each file read once.
fn check_rungs_not_compared(
    b: &ResultDir,
    c: &ResultDir,
    common: &[f64],
) -> Result<(), CompareError> {
    for (which, d) in [("baseline", b), ("candidate", c)] {
        for r in d.rungs.iter().filter(|r| !common.contains(&r.entry.rate)) {
            d.requests(r)
                .map_err(|source| CompareError::Load { which, source })?;
        }
    }
    Ok(())
}

/// One side's rung at `rate` and its request lines (read and checked).
fn load_rung<'a>(
    d: &'a ResultDir,
    which: &'static str,
    rate: f64,
) -> Result<
    (
        &'a crate::results::LoadedRung,
        Vec<crate::results::RequestLine>,
    ),
    CompareError,
> {
    let rung = d.rung(rate).expect("rate listed above");
    d.requests(rung)
        .map(|lines| (rung, lines))
        .map_err(|source| CompareError::Load { which, source })
}

/// A rung of each side (the two read and checked at once: a big rung takes seconds each).
#[allow(clippy::type_complexity)]
fn load_both<'a>(
    b: &'a ResultDir,
    c: &'a ResultDir,
    rate: f64,
) -> Result<
    (
        (
            &'a crate::results::LoadedRung,
            Vec<crate::results::RequestLine>,
        ),
        (
            &'a crate::results::LoadedRung,
            Vec<crate::results::RequestLine>,
        ),
    ),
    CompareError,
> {
    let (bres, cres) = std::thread::scope(|s| {
        let cand = s.spawn(|| load_rung(c, "candidate", rate));
        let base = load_rung(b, "baseline", rate);
        (
            base,
            cand.join().expect("loading the candidate's rung panicked"),
        )
    });
    Ok((bres?, cres?))
}

/// What judging the common rungs gathers, rung by rung.
struct Judged {
    rows: Vec<Row>,
    /// Checks whose drift their runs measured, below saturation on both sides: their τ² is
    /// pooled over the rungs of each metric once every rung is in ([`pool_drift`]).
    poolable: Vec<(usize, Evidence, settle::Unit)>,
    run_noise: RunNoise,
    server_notes: Vec<(f64, String)>,
    model_rows: Vec<ModelRow>,
}

/// What judging one rung needs, the same for every rung.
struct RungJudge<'a> {
    b: &'a ResultDir,
    c: &'a ResultDir,
    opts: &'a CompareOptions,
    checks: &'a [Check],
    /// The baseline's and the candidate's SLO.
    slo: [Slo; 2],
    /// The level each side saturated at, if it did.
    saturated: [Option<f64>; 2],
    levels: evidence::Levels,
}

/// The two sides of a rung: whole, and for each model a rule names, that model's share.
struct RungSides<'a> {
    base: Side<'a>,
    cand: Side<'a>,
    models: Vec<(&'a str, Side<'a>, Side<'a>)>,
}

impl<'a> RungSides<'a> {
    /// The two sides a check judges.
    fn of(&self, check: &Check) -> (&Side<'a>, &Side<'a>) {
        match check.model.as_deref() {
            None => (&self.base, &self.cand),
            Some(m) => self
                .models
                .iter()
                .find(|(n, _, _)| *n == m)
                .map(|(_, b, c)| (b, c))
                .expect("a view for every rule's model"),
        }
    }
}

/// What a rung's checks are decided with besides their evidence.
struct RungShape {
    /// A side has no requests to resample: latencies and throughputs are compared plainly.
    summary_only: bool,
    /// The error rate judges an outage (every candidate request failed).
    errors_judge: bool,
    unit: settle::Unit,
}

/// One model's rung summary and request lines, on both sides.
type ModelView = (
    String,
    [(
        crate::metrics::RungSummary,
        Vec<crate::results::RequestLine>,
    ); 2],
);

impl RungJudge<'_> {
    /// Judge every check on the rung at `rate`, adding its rows to `out`.
    fn rung(
        &self,
        rate: f64,
        out: &mut Judged,
        warnings: &mut Vec<String>,
    ) -> Result<(), CompareError> {
        let (b, c) = (self.b, self.c);
        let ((br, bl), (cr, cl)) = load_both(b, c, rate)?;
        out.run_noise.base = out.run_noise.base.max(evidence::runs_in(&bl));
        out.run_noise.cand = out.run_noise.cand.max(evidence::runs_in(&cl));
        if let Some(n) =
            crate::servermetrics::describe_change(&br.summary.server, &cr.summary.server)
        {
            out.server_notes.push((rate, n));
        }
        match models::rows(&br.summary, &cr.summary) {
            Ok(list) => {
                out.model_rows
                    .extend(
                        list.into_iter()
                            .map(|(model, metric, base, cand)| ModelRow {
                                rate,
                                model,
                                metric,
                                base,
                                cand,
                            }),
                    )
            }
            Err(mixed) => {
                let w = mixed.to_string();
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        }
        // Rules on one model of a mix judge that model's share of the rung alone.
        let mut wanted: Vec<&str> = self
            .checks
            .iter()
            .filter_map(|c| c.model.as_deref())
            .collect();
        wanted.dedup();
        let views = wanted
            .iter()
            .map(|m| {
                models::views(rate, m, (&br.summary, &bl), (&cr.summary, &cl))
                    .map(|v| (m.to_string(), v))
            })
            .collect::<Result<Vec<ModelView>, _>>()?;
        let sides = self.sides((&br.summary, &bl), (&cr.summary, &cl), &views);
        // A vLLM file saved without --save-detailed has no requests to resample: such rungs
        // are compared on their summary values (the error rate keeps its count-based test).
        // Without send times (older benchmark_serving.py files) the requests' latencies are
        // resampled but throughputs are their files' summary values.
        let summary_only = !b.has_requests(br) || !c.has_requests(cr);
        let untimed = !b.has_send_times(br) || !c.has_send_times(cr);
        let evidences = self.evidences(rate, &sides, summary_only, untimed);
        // An outage (every candidate request failed) is a regression the error rate judges,
        // not unusable input: its latency checks say "no successes" instead of refusing.
        let measured = |s: &crate::metrics::RungSummary| s.completed.saturating_add(s.failed) > 0;
        let shape = RungShape {
            summary_only,
            errors_judge: self
                .checks
                .iter()
                .any(|c| evidence::Model::of(&c.metric) == evidence::Model::ErrorRate)
                && measured(&br.summary)
                && measured(&cr.summary),
            unit: unit_of(c, cr),
        };
        for (check, evidence) in self.checks.iter().zip(evidences) {
            let (row, pool) = self.decide(rate, check, sides.of(check), evidence, &shape)?;
            if let Some(e) = pool {
                out.poolable.push((out.rows.len(), e, shape.unit));
            }
            out.rows.push(row);
        }
        Ok(())
    }

    /// The rung's sides, whole and per model of `views`.
    fn sides<'s>(
        &self,
        (bsum, blines): (
            &'s crate::metrics::RungSummary,
            &'s [crate::results::RequestLine],
        ),
        (csum, clines): (
            &'s crate::metrics::RungSummary,
            &'s [crate::results::RequestLine],
        ),
        views: &'s [ModelView],
    ) -> RungSides<'s> {
        let [bslo, cslo] = self.slo;
        let side = |summary, lines, slo| Side {
            summary,
            lines,
            slo,
        };
        RungSides {
            base: side(bsum, blines, bslo),
            cand: side(csum, clines, cslo),
            models: views
                .iter()
                .map(|(m, [(bsum, blines), (csum, clines)])| {
                    (
                        m.as_str(),
                        side(bsum, blines, bslo),
                        side(csum, clines, cslo),
                    )
                })
                .collect(),
        }
    }

    /// Each check's evidence on the rung, and whether it compares summary values plainly.
    /// Each stands alone: computed on every core, then used in order.
    fn evidences(
        &self,
        rate: f64,
        sides: &RungSides,
        summary_only: bool,
        untimed: bool,
    ) -> Vec<(bool, Result<Evidence, evidence::NoSuccesses>)> {
        let past_knee = self.saturated.iter().any(|k| k.is_some_and(|k| rate >= k));
        evidence::par_map(self.checks, |check| {
            let model = evidence::Model::of(&check.metric);
            let levels = evidence::Levels {
                assumed_drift: self
                    .levels
                    .assumed_drift
                    .filter(|_| speed_moves(model, self.b.info.load, past_knee)),
                ..self.levels
            };
            let plain = (summary_only
                || (untimed && matches!(model, evidence::Model::Throughput(_))))
                && !matches!(model, evidence::Model::ErrorRate | evidence::Model::Plain);
            let (bs, cs) = sides.of(check);
            let e = if plain && bs.summary.completed > 0 && cs.summary.completed > 0 {
                Ok(evidence::summary_only(&check.metric, bs, cs))
            } else {
                evidence::evidence(&check.metric, bs, cs, levels)
            };
            (plain, e)
        })
    }

    /// One check's row on one rung from its evidence, and the evidence again when its drift
    /// is to be pooled over the rungs.
    fn decide(
        &self,
        rate: f64,
        check: &Check,
        (bs, cs): (&Side, &Side),
        (plain, e): (bool, Result<Evidence, evidence::NoSuccesses>),
        shape: &RungShape,
    ) -> Result<(Row, Option<Evidence>), CompareError> {
        let e = match e {
            Err(ns) if ns.side == "candidate" && shape.errors_judge => {
                Ok(no_successes(&check.metric, bs, cs.summary))
            }
            e => e,
        };
        let e = e.map_err(|ns| {
            let s = if ns.side == "baseline" {
                bs.summary
            } else {
                cs.summary
            };
            let classes: Vec<String> = s
                .errors_by_class
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            CompareError::NoSuccesses {
                rate,
                side: ns.side,
                metric: check.label(),
                detail: format!("{} failed: {}", s.failed, classes.join(", ")),
            }
        })?;
        let mut decision = verdict::decide_in(check.bound, check.floor, &e, shape.unit);
        let mut method = e.method;
        if !plain {
            if let Some(d) = self.rank_test(check, &decision, &e, (bs, cs)) {
                decision = d;
                method = Method::Rank;
            }
        }
        let latency = matches!(
            evidence::Model::of(&check.metric),
            evidence::Model::Latency(..)
        );
        let past = |s: Option<f64>| s.is_some_and(|k| rate >= k);
        let past_either = past(self.saturated[0]) || past(self.saturated[1]);
        if latency && !self.opts.judge_saturated && past_either {
            decision = past_saturation(rate, self.saturated[0], self.saturated[1]);
        }
        if plain && decision.note.is_empty() {
            decision.note = match shape.summary_only {
                true => evidence::SUMMARY_ONLY.into(),
                false => evidence::SUMMARY_ONLY_UNTIMED.into(),
            };
        }
        let pool = !plain
            && method != Method::Rank
            && !past_either
            && e.drift.is_some_and(|d| d.pool.is_some());
        let pooled = pool.then(|| e.clone());
        let row = Row {
            rate,
            check: check.clone(),
            base: e.base,
            cand: e.cand,
            method,
            decision,
            errors: e.counts.filter(|c| !c.overdispersed()).map(|c| c.sides),
            schedule_bound: matches!(
                evidence::Model::of(&check.metric),
                evidence::Model::Throughput(_)
            ) && self.b.info.load != LoadKind::Concurrency
                && !past_either,
        };
        Ok((row, pooled))
    }

    /// Too few requests (or sessions) for the bootstrap on a latency check left undecided:
    /// a cruder test (ranks) rather than none, when it decides.
    fn rank_test(
        &self,
        check: &Check,
        decision: &Decision,
        e: &Evidence,
        (bs, cs): (&Side, &Side),
    ) -> Option<Decision> {
        let evidence::Model::Latency(stat, which) = evidence::Model::of(&check.metric) else {
            return None;
        };
        if decision.verdict != Verdict::Inconclusive || e.too_few.is_none() {
            return None;
        }
        let (bg, cg) = (
            evidence::latency_groups(bs.lines, which),
            evidence::latency_groups(cs.lines, which),
        );
        if bg.len().min(cg.len()) >= stats::MIN_REQUESTS {
            return None;
        }
        small::decide(
            check.bound,
            check.floor,
            stat,
            &bg,
            &cg,
            self.levels.per_check,
        )
    }
}

/// Borrow strength across rungs: each metric's checks below saturation (`poolable`: row
/// index, evidence, unit) are widened again by the τ² pooled over them
/// ([`components::pool`]) with the pooled degrees of freedom, and decided again. A run's
/// drift is the run's (a restart, a neighbour on the machine), shared by its rungs: three
/// runs measure it with 2 degrees of freedom on one rung, with 2·k over k rungs, and the
/// Student-t bound shrinks accordingly (t at 98.75 %: 6.2 at 2 df, 3.3 at 6, 2.6 at 16).
/// Rungs at or past either side's saturation keep their own estimate: there a small change
/// of capacity moves the statistic far more than below it, so their drift is not the same
/// quantity. A metric measured on a single rung is left as it was.
fn pool_drift(rows: &mut [Row], poolable: Vec<(usize, Evidence, settle::Unit)>) {
    // One metric of one model's requests (a `model:` rule judges only that model's).
    let mut by_metric: BTreeMap<(&str, Option<&str>), Vec<usize>> = BTreeMap::new();
    for (k, (i, _, _)) in poolable.iter().enumerate() {
        let check = &rows[*i].check;
        by_metric
            .entry((&check.metric, check.model.as_deref()))
            .or_default()
            .push(k);
    }
    let mut redo = Vec::new();
    for members in by_metric.values().filter(|m| m.len() >= 2) {
        let inputs = members
            .iter()
            .filter_map(|&k| poolable[k].1.drift.and_then(|d| d.pool));
        let inputs: Vec<components::PoolInput> = inputs.collect();
        let Some((tau2, df)) = components::pool(&inputs) else {
            continue;
        };
        for &k in members {
            redo.push((k, tau2, df));
        }
    }
    for (k, tau2, df) in redo {
        let (i, e, unit) = &poolable[k];
        let Some((r, d)) = e.drift.and_then(|d| components::rewiden(&d, tau2, df)) else {
            continue;
        };
        let pooled = Evidence {
            ratio: Some(r.ratio),
            diff: Some(r.diff),
            cand_ci: Some(r.cand_ci),
            drift: Some(d),
            ..e.clone()
        };
        let row = &mut rows[*i];
        row.decision = verdict::decide_in(row.check.bound, row.check.floor, &pooled, *unit);
    }
}

/// An error_rate change check on rungs too small to judge one by one: the exact stratified
/// test over every compared rung ([`small::stratified_tail`]); when it shows the candidate
/// failing more often at the per-check level, each inconclusive rung whose candidate rate
/// is past the check's limit becomes a regression, with the pooled test in its note.
fn pooled_error_rate(check: &Check, rows: &mut [Row], level: f64) {
    let mine = |r: &Row| r.check == *check && r.method == Method::Proportion;
    let strata: Vec<small::Stratum> = rows
        .iter()
        .filter(|r| mine(r))
        .filter_map(|r| r.errors)
        .collect();
    if strata.is_empty() {
        return;
    }
    let p = small::stratified_tail(&strata);
    let alpha = (1.0 - level) / 2.0;
    if p > alpha {
        return;
    }
    let (failed, measured) = strata
        .iter()
        .fold((0, 0), |(f, n), [_, (fc, nc)]| (f + fc, n + nc));
    let (bf, bn) = strata
        .iter()
        .fold((0, 0), |(f, n), [(fb, nb), _]| (f + fb, n + nb));
    for r in rows.iter_mut().filter(|r| mine(r)) {
        let limit = match check.bound {
            Bound::Increase(t) => match t {
                crate::scenario::Threshold::Relative(x) => x * r.base.abs(),
                crate::scenario::Threshold::Absolute(a) => a,
            }
            .max(check.floor),
            _ => continue,
        };
        if r.decision.verdict == Verdict::Inconclusive && r.cand - r.base > limit {
            r.decision = Decision {
                verdict: Verdict::Regression,
                interval: r.decision.interval,
                note: format!(
                    "too few requests to judge this rung alone; over all {} rungs the candidate \
                     failed {failed} of {measured} against {bf} of {bn} (exact stratified test, \
                     one-sided p = {} ≤ {} at the per-check level), and this rung's rate is \
                     past the limit +{}",
                    strata.len(),
                    small::sci(p),
                    small::sci(alpha),
                    crate::format::num(limit)
                ),
            };
        }
    }
}

/// The evidence of a latency check on a rung where no candidate request succeeded: no
/// value, no verdict of its own (the error rate check judges the outage).
fn no_successes(
    metric: &str,
    base: &Side,
    cand: &crate::metrics::RungSummary,
) -> verdict::Evidence {
    let mut e = verdict::Evidence::plain(base.summary.metric(metric).unwrap_or(f64::NAN), f64::NAN);
    let classes: Vec<String> = cand
        .errors_by_class
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    e.too_few = Some(format!(
        "no successes: all {} candidate requests failed ({}), so {metric} was not measured; \
         the error_rate check judges this rung",
        cand.failed,
        classes.join(", ")
    ));
    e
}

/// The knee of a run as `ladder run` and `ladder report` name it (metrics::analysis), with
/// the run's own SLO and baseline rung from its resolved scenario.
fn knee_of(d: &ResultDir) -> Option<(f64, String)> {
    analysis_of(d).knee.map(|k| (k.rate, k.detail.join("; ")))
}

/// The offered rate from which an open-loop run is past saturation: its knee, when the knee
/// is overload (a throughput plateau, a TTFT jump, errors), not requests the server rejects.
/// None for a closed-loop ladder, whose queue cannot outgrow its users.
fn saturated_from(d: &ResultDir) -> Option<f64> {
    if d.info.load != LoadKind::Rate {
        return None;
    }
    let knee = analysis_of(d).knee?;
    let overload = knee
        .reasons
        .iter()
        .any(|r| !matches!(r, crate::metrics::KneeReason::Rejected));
    overload.then_some(knee.rate)
}

/// Whether a check's statistic moves with the server's speed, so that an assumed run-to-run
/// drift (`--drift`, a speed factor per run) belongs in its interval: latencies always;
/// throughputs where they measure the server (a closed loop, or an open-loop rung at or past
/// a run's knee), not where they are the offered rate (an open-loop rung below saturation
/// serves what arrives, on the schedule both runs share); the error rate and plain values
/// never (their own tests hold them).
fn speed_moves(model: evidence::Model, load: LoadKind, past_knee: bool) -> bool {
    match model {
        evidence::Model::Latency(..) => true,
        evidence::Model::Throughput(_) => load == LoadKind::Concurrency || past_knee,
        evidence::Model::ErrorRate | evidence::Model::Plain => false,
    }
}

/// The decision of a latency check on a rung past saturation in either run.
fn past_saturation(rate: f64, base: Option<f64>, cand: Option<f64>) -> Decision {
    let at = |s: Option<f64>| s.is_some_and(|k| rate >= k);
    let which = match (at(base), at(cand)) {
        (true, true) => "in both runs",
        (true, false) => "in the baseline",
        _ => "in the candidate (the baseline is not: see its throughput check and the knee shift)",
    };
    Decision {
        verdict: Verdict::PastSaturation,
        interval: None,
        note: format!(
            "past saturation {which}: latency here grows with how long the queue built up during \
             the rung, not with the server's speed, and swings with small changes of capacity; \
             the rung is judged by its throughput and error rate (--judge-saturated judges its \
             latency too)"
        ),
    }
}

fn analysis_of(d: &ResultDir) -> crate::metrics::Analysis {
    let slo: crate::scenario::Slo = d
        .info
        .scenario
        .get("slo")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let baseline = d
        .info
        .scenario
        .pointer("/load/baseline_rate")
        .and_then(serde_json::Value::as_f64);
    let rungs: Vec<_> = d.rungs.iter().map(|r| r.summary.clone()).collect();
    crate::metrics::analyze(&rungs, &slo, baseline)
}
