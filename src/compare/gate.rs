//! `ladder gate` (run, then compare against the golden baseline) and `ladder bless`
//! (promote a result folder to the golden baseline).

use std::fs;
use std::path::{Path, PathBuf};

use super::{compare, junit, markdown, render, CompareError, CompareOptions, Comparison};
use crate::results::{ResultDir, RunStatus};
use crate::runner::{self, RunOptions, RunOutcome};

/// Options of `ladder gate`.
#[derive(Debug, Clone, Default)]
pub struct GateOptions {
    pub scenario: PathBuf,
    /// Golden root; the baseline is `<golden>/<scenario name>/`. Default `golden`.
    pub golden: Option<PathBuf>,
    /// Results root for the fresh run (runner default when `None`).
    pub out: Option<PathBuf>,
    /// Markdown summary file.
    pub summary: Option<PathBuf>,
    /// JUnit XML file.
    pub junit: Option<PathBuf>,
    pub strict: bool,
    pub compare: CompareOptions,
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
    #[error("{0}")]
    Compare(#[from] CompareError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Load {
        path: PathBuf,
        source: crate::results::LoadError,
    },
    #[error(
        "refusing to bless {path}: rungs {rates:?} req/s hit a client-side resource limit \
         (requests failed on the client, so compare and gate cannot use them); to rerun, {}; \
         or pass --force",
        crate::record::CLIENT_RESOURCE_FIX
    )]
    ClientLimited { path: PathBuf, rates: Vec<f64> },
    #[error("refusing to bless {path}: run status is {status:?}{detail}; bless a complete run, or pass --force")]
    NotComplete {
        path: PathBuf,
        status: RunStatus,
        detail: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> GateError + '_ {
    move |source| GateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Write the outputs a gate asks for (Markdown summary, JUnit XML).
pub fn write_outputs(c: &Comparison, opts: &GateOptions) -> Result<(), GateError> {
    if let Some(p) = &opts.summary {
        fs::write(p, markdown::markdown(c, opts.strict)).map_err(io(p))?;
    }
    if let Some(p) = &opts.junit {
        fs::write(p, junit::junit(c, opts.strict)).map_err(io(p))?;
    }
    Ok(())
}

/// Run the scenario, compare with `<golden>/<scenario name>/`, print the verdict table and
/// write the requested files. Returns the comparison; its `exit_code` is the gate's.
pub fn gate(opts: &GateOptions) -> Result<Comparison, GateError> {
    let outcome = runner::run(&RunOptions {
        scenario_path: opts.scenario.clone(),
        out_dir: opts.out.clone(),
        ..Default::default()
    })
    .map_err(|e| GateError::Run(e.to_string()))?;
    let c = gate_outcome(opts, &outcome)?;
    print!("{}", render::terminal(&c, opts.strict));
    write_outputs(&c, opts)?;
    Ok(c)
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
            "{}: run status is {:?}{}",
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
    if !base_dir.join("run.json").is_file() {
        return Err(GateError::NoBaseline(base_dir));
    }
    let base = ResultDir::open(&base_dir).map_err(|e| CompareError::Load {
        which: "baseline",
        source: e,
    })?;
    let cand = ResultDir::open(&outcome.dir).map_err(|e| CompareError::Load {
        which: "candidate",
        source: e,
    })?;
    Ok(compare(&base, &cand, &opts.compare)?)
}

/// Options of `ladder bless`.
#[derive(Debug, Clone, Default)]
pub struct BlessOptions {
    pub result_dir: PathBuf,
    /// Golden root. Default `golden`.
    pub golden: Option<PathBuf>,
    /// Bless an interrupted, failed or running run anyway.
    pub force: bool,
}

/// Copy a result folder to `<golden>/<scenario name>/`, replacing the old baseline: the copy
/// is made in a temporary sibling folder first and renamed into place, so a failed copy
/// never leaves a half-written baseline. Returns the new baseline folder.
pub fn bless(opts: &BlessOptions) -> Result<PathBuf, GateError> {
    let src = &opts.result_dir;
    let d = ResultDir::open(src).map_err(|source| GateError::Load {
        path: src.clone(),
        source,
    })?;
    let incomplete = d.rungs.iter().any(|r| !r.entry.complete);
    if (d.info.status != RunStatus::Complete || incomplete) && !opts.force {
        return Err(GateError::NotComplete {
            path: src.clone(),
            status: d.info.status,
            detail: match (&d.info.status_detail, incomplete) {
                (Some(x), _) => format!(" ({x})"),
                (None, true) => " (a rung is incomplete)".into(),
                (None, false) => String::new(),
            },
        });
    }
    // A rung that measured the client (requests failed on its own resource limits) could
    // never be compared: such a baseline would silently gate nothing there.
    let limited: Vec<f64> = d
        .rungs
        .iter()
        .filter(|r| r.summary.client_failures() > 0)
        .map(|r| r.entry.rate)
        .collect();
    if !limited.is_empty() && !opts.force {
        return Err(GateError::ClientLimited {
            path: src.clone(),
            rates: limited,
        });
    }
    // Every rung's request lines must load too: a baseline that cannot be compared is useless.
    for r in &d.rungs {
        d.requests(r).map_err(|source| GateError::Load {
            path: src.clone(),
            source,
        })?;
    }
    let golden = opts
        .golden
        .clone()
        .unwrap_or_else(|| PathBuf::from("golden"));
    fs::create_dir_all(&golden).map_err(io(&golden))?;
    let name = &d.info.scenario_name;
    let dest = golden.join(name);
    let pid = std::process::id();
    let tmp = golden.join(format!(".{name}.bless-{pid}"));
    let old = golden.join(format!(".{name}.old-{pid}"));
    let _ = fs::remove_dir_all(&tmp);
    copy_dir(src, &tmp)?;
    if dest.exists() {
        fs::rename(&dest, &old).map_err(io(&dest))?;
    }
    if let Err(e) = fs::rename(&tmp, &dest) {
        // Put the previous baseline back before reporting.
        let _ = fs::rename(&old, &dest);
        return Err(GateError::Io {
            path: dest,
            source: e,
        });
    }
    if old.exists() {
        fs::remove_dir_all(&old).map_err(io(&old))?;
    }
    Ok(dest)
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), GateError> {
    fs::create_dir_all(to).map_err(io(to))?;
    for entry in fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let p = entry.path();
        let target = to.join(entry.file_name());
        if p.is_dir() {
            copy_dir(&p, &target)?;
        } else {
            fs::copy(&p, &target).map_err(io(&p))?;
        }
    }
    Ok(())
}
