//! `ladder gate`: run, then compare against the golden baseline ([`GateError`] is also
//! `ladder bless`'s and `ladder compare`'s error: [`super::bless`], [`super::compare`]).

use std::fs;
use std::path::{Path, PathBuf};

use crate::compare::{compare, CompareError, CompareOptions, Comparison};
use crate::notes::Notes;
use crate::report::comparison::{json, ComparisonExporter, Junit, Markdown, Terminal};
use crate::results::{ResultDir, RunStatus};
use crate::runner::{self, RunError, RunOptions, RunOutcome};

/// Options of `ladder gate`.
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    pub scenario: PathBuf,
    /// Golden root; the baseline is `<golden>/<scenario name>/`. Default `golden`.
    pub golden: Option<PathBuf>,
    /// Results root for the fresh run (runner default when `None`).
    pub out: Option<PathBuf>,
    /// `--repeats`: replaces the scenario's `load.repeats`.
    pub repeats: Option<u32>,
    /// Markdown summary file.
    pub summary: Option<PathBuf>,
    /// JUnit XML file.
    pub junit: Option<PathBuf>,
    pub strict: bool,
    /// `--json`: the comparison as one JSON document on stdout (docs/json.md) instead of
    /// the verdict table, and nothing else on stdout (the run's table is left out).
    pub json: bool,
    pub compare: CompareOptions,
    /// Called with the fresh run's folder as soon as the run ends (a stopped or failed run
    /// that left a folder included) and its reports are written, before the comparison
    /// (the CLI's: a signal then ends the comparison).
    pub on_run_dir: Option<fn(&Path)>,
    /// Prints the verdict table (the CLI's, which colours it); `None`: the plain table,
    /// through `notes`. Not called with `json`.
    pub show: Option<fn(&Comparison, bool)>,
    /// Where the run's progress and notes, the verdict table and the JSON document go.
    pub notes: Notes,
}

/// Why a gate or bless could not produce a verdict (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("the run did not produce a usable result: {0}")]
    Run(String),
    #[error(
        "no golden baseline at {0}; make one with `ladder bless <result folder>` and commit it"
    )]
    NoBaseline(PathBuf),
    /// `ladder gate` found no baseline before running anything.
    #[error(
        "no golden baseline at {}; nothing was run. To make one: `ladder run {}`, then \
         `ladder bless <the folder it wrote>` (e.g. {}/{}/<start time>), and commit {}",
        dir.display(), scenario.display(), out.display(), name, dir.display()
    )]
    NoBaselineYet {
        dir: PathBuf,
        scenario: PathBuf,
        out: PathBuf,
        name: String,
    },
    /// A refusal about the baseline after the fresh run was written: say where the run is.
    #[error(
        "{source}\nthe fresh run is in {}: if it should become the baseline, `ladder bless {}`",
        dir.display(), dir.display()
    )]
    AfterRun {
        source: Box<GateError>,
        dir: PathBuf,
    },
    #[error("{0}")]
    Compare(#[from] CompareError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The loader's message names the file at fault.
    #[error("{source}")]
    Load {
        path: PathBuf,
        source: crate::results::LoadError,
    },
    #[error("refusing to bless {0}: run status is `running`: the run never finished (its process was killed, or is still running), so it is no baseline, not even with --force; re-run the scenario and bless that folder")]
    Running(PathBuf),
    #[error("refusing to bless: {0}")]
    Unsafe(String),
    #[error(
        "refusing to bless {path}: rungs {rates:?} req/s hit a client-side resource limit \
         (requests failed on the client, so compare and gate cannot use them); to rerun, {}; \
         or pass --force",
        crate::record::CLIENT_RESOURCE_FIX
    )]
    ClientLimited { path: PathBuf, rates: Vec<f64> },
    #[error("refusing to bless {path}: run status is `{status}`{detail}; bless a complete run, or pass --force")]
    NotComplete {
        path: PathBuf,
        status: RunStatus,
        detail: String,
    },
    #[error(
        "refusing to bless {path}: a run is far from the others (the rule: docs/gate.md, \
         \"Outlier runs\"):\n  {}\nsuch a run widens the baseline's run-to-run spread on its \
         rung for as long as the baseline lives, so the gate there decides nothing; find out \
         why (a cold or restarted server, a busy machine, a rung at capacity), run it again \
         and bless that run, or pass --force to keep it",
        lines.join("\n  ")
    )]
    Outliers { path: PathBuf, lines: Vec<String> },
    #[error(
        "refusing to add {path} to the baseline {baseline}: it regresses against it (as \
         `ladder compare {baseline} {path}` judges):\n  {}\nadding it would widen the \
         baseline's intervals to hold the regression, and the same regression would then \
         pass the gate; add runs of the server the baseline measures (if the server changed \
         on purpose, bless this run alone, without --add; --force adds it anyway)",
        lines.join("\n  ")
    )]
    AddRegresses {
        path: PathBuf,
        baseline: PathBuf,
        lines: Vec<String>,
    },
    #[error("refusing to bless {path}: no rung completed (run status `{status}`{detail}), so a gate against it would have nothing to compare, not even with --force; re-run the scenario to the end (a soak: until load.duration has passed) and bless that folder")]
    NothingComplete {
        path: PathBuf,
        status: RunStatus,
        detail: String,
    },
}

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> GateError + '_ {
    move |source| GateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Write the outputs a gate asks for (Markdown summary, JUnit XML).
pub fn write_outputs(c: &Comparison, opts: &GateOptions) -> Result<(), GateError> {
    if let Some(p) = &opts.summary {
        fs::write(p, Markdown.render(c, opts.strict)).map_err(io(p))?;
    }
    if let Some(p) = &opts.junit {
        fs::write(p, Junit.render(c, opts.strict)).map_err(io(p))?;
    }
    Ok(())
}

/// The run a gate makes: the scenario, `--out` and `--repeats`.
fn run_options(opts: &GateOptions) -> RunOptions {
    RunOptions {
        scenario_path: opts.scenario.clone(),
        out_dir: opts.out.clone(),
        repeats: opts.repeats,
        no_stdout: opts.json,
        notes: opts.notes.clone(),
        ..Default::default()
    }
}

/// Run the scenario, compare with `<golden>/<scenario name>/`, print the verdict table and
/// write the requested files. Returns the comparison; its `exit_code` is the gate's.
pub fn gate(opts: &GateOptions) -> Result<Comparison, GateError> {
    precheck(opts)?;
    let ran = |dir: &Path| {
        // The same reports as `ladder run`'s (quiet: the path is printed after the verdict).
        super::report::write_reports(dir, true, &opts.notes);
        if let Some(f) = opts.on_run_dir {
            f(dir);
        }
    };
    let outcome = runner::run(&run_options(opts)).map_err(|e| {
        if let RunError::Interrupted { dir, .. } | RunError::Failed { dir, .. } = &e {
            ran(dir);
        }
        GateError::Run(e.to_string())
    })?;
    ran(&outcome.dir);
    let c = gate_outcome(opts, &outcome).map_err(|e| {
        if e.about_baseline() {
            GateError::AfterRun {
                source: Box::new(e),
                dir: outcome.dir.clone(),
            }
        } else {
            e
        }
    })?;
    deliver(&c, opts, "gate")?;
    Ok(c)
}

/// A comparison's verdict table (unless `--json`), its files, then (with `--json`) its
/// document: after the files are written, so that a write error is then the one document on
/// stdout (the CLI prints it).
pub(super) fn deliver(c: &Comparison, opts: &GateOptions, command: &str) -> Result<(), GateError> {
    match (opts.json, opts.show) {
        (true, _) => {}
        (false, Some(show)) => show(c, opts.strict),
        (false, None) => opts.notes.out(&crate::escape::terminal::line(
            &Terminal.render(c, opts.strict),
        )),
    }
    write_outputs(c, opts)?;
    if opts.json {
        opts.notes
            .out_line(&crate::escape::json::document(&json::document(
                c,
                opts.strict,
                command,
            )));
    }
    Ok(())
}

impl GateError {
    /// True for a refusal that comes from the baseline or from how it differs from the
    /// fresh run (not from the fresh run itself): blessing the fresh run is then a way out.
    fn about_baseline(&self) -> bool {
        match self {
            GateError::NoBaseline(_) | GateError::NoBaselineYet { .. } => true,
            GateError::Compare(c) => match c {
                CompareError::Load { which, .. }
                | CompareError::Shard { which, .. }
                | CompareError::NoCompleteRung { which, .. } => *which == "baseline",
                CompareError::NoSuccesses { side, .. } => *side == "baseline",
                CompareError::ConfigChange(_)
                | CompareError::NoCommonRungs { .. }
                | CompareError::LoadKinds { .. } => true,
                _ => false,
            },
            _ => false,
        }
    }
}

/// Everything `ladder gate` can refuse before sending any load: the scenario (as `run`
/// reads it), a sweep, the `gate:` rules and `--only`, and the golden baseline (there,
/// readable, a whole run with a complete rung, the same kind of ladder, model and
/// workload unless `--allow-config-change`). A soak or a long ladder against a paid GPU
/// must not run to the end to learn that it could never be compared.
pub fn precheck(opts: &GateOptions) -> Result<(), GateError> {
    let loaded =
        crate::scenario::load(&opts.scenario).map_err(|d| GateError::Run(d.to_string()))?;
    // The flags as `run` will apply them (`--repeats` with a soak is refused here).
    let scenario = runner::with_overrides(&loaded.scenario, &run_options(opts))
        .map_err(|e| GateError::Run(e.to_string()))?;
    let sc = &scenario;
    if let Some(sweep) = &sc.sweep {
        return Err(GateError::Run(format!(
            "{} has a sweep ({} ladders); gate each value with its own scenario (nothing was run)",
            opts.scenario.display(),
            sweep.values.len()
        )));
    }
    crate::compare::threshold::from_gate_rules(&sc.gate).map_err(CompareError::Threshold)?;
    if opts.compare.only && opts.compare.overrides.is_empty() {
        return Err(CompareError::Threshold(crate::compare::ThresholdError(
            "--only applies the --threshold rules alone, and none was given: add \
             --threshold METRIC=+10% (or drop --only)"
                .into(),
        ))
        .into());
    }
    let golden = opts
        .golden
        .clone()
        .unwrap_or_else(|| PathBuf::from("golden"));
    let base_dir = golden.join(&sc.name);
    if !base_dir.is_dir() {
        return Err(GateError::NoBaselineYet {
            dir: base_dir,
            scenario: opts.scenario.clone(),
            out: opts.out.clone().unwrap_or_else(|| PathBuf::from("results")),
            name: sc.name.clone(),
        });
    }
    let base = ResultDir::open_ended(&base_dir).map_err(|e| CompareError::Load {
        which: "baseline",
        source: e,
    })?;
    if let Some(s) = &base.info.shard {
        return Err(CompareError::Shard {
            which: "baseline",
            message: s.not_a_whole_run(&base.path),
        }
        .into());
    }
    if base.rungs.iter().all(|r| !r.entry.complete) {
        return Err(CompareError::NoCompleteRung {
            which: "baseline",
            dir: base.path.clone(),
            how: match base.info.status {
                RunStatus::Failed => "failed",
                _ => "was interrupted",
            },
            status: base.info.status,
            detail: base.info.status_suffix(),
        }
        .into());
    }
    if base.info.load != sc.load_kind() {
        return Err(CompareError::LoadKinds {
            base: base.info.load,
            cand: sc.load_kind(),
        }
        .into());
    }
    if !opts.compare.allow_config_change && base.imported.is_none() {
        let changes = knowable_changes(&base.info.scenario, sc);
        if !changes.is_empty() {
            return Err(CompareError::ConfigChange(changes).into());
        }
    }
    Ok(())
}

/// The model and workload differences between a baseline's resolved scenario and the
/// scenario about to run, as far as they are known before the run (the prompt shortening
/// measured in preflight, `workload.server_overhead`, is left out).
fn knowable_changes(base: &serde_json::Value, sc: &crate::scenario::Scenario) -> Vec<String> {
    let Ok(mut cand) = serde_json::to_value(sc) else {
        return Vec::new();
    };
    let mut base = base.clone();
    let timed = |v: &serde_json::Value| !v["load"]["duration"].is_null();
    let soak = timed(&base) || timed(&cand);
    for v in [&mut base, &mut cand] {
        if let Some(w) = v.get_mut("workload").and_then(|w| w.as_object_mut()) {
            w.remove("server_overhead");
            if soak {
                w.remove("requests_per_rung");
            }
        }
    }
    ["model", "workload"]
        .into_iter()
        .filter(|k| base.get(*k) != cand.get(*k))
        .map(|k| {
            format!(
                "different {k}: baseline {}, the scenario to run {} (nothing was run)",
                base.get(k).cloned().unwrap_or_default(),
                cand.get(k).cloned().unwrap_or_default()
            )
        })
        .collect()
}

/// The part of [`gate`] after the run: check the run is usable, find and load the golden
/// baseline, compare.
pub fn gate_outcome(opts: &GateOptions, outcome: &RunOutcome) -> Result<Comparison, GateError> {
    let golden = opts
        .golden
        .clone()
        .unwrap_or_else(|| PathBuf::from("golden"));
    if outcome.info.status != RunStatus::Complete {
        return Err(GateError::Run(format!(
            "{}: run status is `{}`{}",
            outcome.dir.display(),
            outcome.info.status,
            outcome
                .info
                .status_detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )));
    }
    let base_dir = golden.join(&outcome.info.scenario_name);
    // A folder of vLLM result files (no run.json) is a baseline too.
    if !base_dir.is_dir() {
        return Err(GateError::NoBaseline(base_dir));
    }
    let base = ResultDir::open_ended(&base_dir).map_err(|e| CompareError::Load {
        which: "baseline",
        source: e,
    })?;
    let cand = ResultDir::open_ended(&outcome.dir).map_err(|e| CompareError::Load {
        which: "candidate",
        source: e,
    })?;
    // The fresh run carries the scenario file's own `gate:` rules: they decide.
    let compare_opts = CompareOptions {
        candidate_rules_first: true,
        ..opts.compare.clone()
    };
    Ok(compare(&base, &cand, &compare_opts)?)
}
