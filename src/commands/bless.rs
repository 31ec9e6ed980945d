//! `ladder bless`: promote a result folder to the golden baseline (or add it to the
//! baseline as more repeats), moving the baseline it replaces aside ([`super::replaced`]).

use std::fs;
use std::path::{Path, PathBuf};

use super::gate::{io, GateError};
use super::replaced::{self, Replaced};
use crate::results::{LoadError, ResultDir, RunStatus};

/// Options of `ladder bless`.
#[derive(Debug, Clone, Default)]
pub struct BlessOptions {
    pub result_dir: PathBuf,
    /// Golden root. Default `golden`.
    pub golden: Option<PathBuf>,
    /// Bless an interrupted or failed run anyway (never a `running` one: it never finished).
    pub force: bool,
    /// `--add`: add the run to the existing baseline as more repeats instead of replacing it.
    pub add: bool,
}

/// What a bless did: the new baseline, and the old one it moved aside.
#[derive(Debug, Clone, PartialEq)]
pub struct Blessed {
    pub dest: PathBuf,
    pub replaced: Option<Replaced>,
}

/// Copy a result folder to `<golden>/<scenario name>/`, replacing the old baseline: the copy
/// is made in a temporary sibling folder first and renamed into place, so a failed copy
/// never leaves a half-written baseline. The old baseline is moved to
/// `<golden>/.replaced/<scenario>/<time>/` ([`super::replaced`]), not deleted.
pub fn bless(opts: &BlessOptions) -> Result<Blessed, GateError> {
    let src = &opts.result_dir;
    // Checks every name, path and number bless will use, request lines included, and
    // refuses a `running` folder even with --force: its process died before the end.
    let d = ResultDir::open_finished(src).map_err(|source| match source {
        LoadError::NeverFinished(p) => GateError::Running(p),
        source => GateError::Load {
            path: src.clone(),
            source,
        },
    })?;
    if let Some(s) = &d.info.shard {
        return Err(GateError::Unsafe(s.not_a_whole_run(src)));
    }
    // A search's answer is what a capacity gate reads: checked before it becomes a baseline,
    // as compare will read it (bounded, its numbers against its probes).
    crate::results::read_capacity(&d).map_err(|e| GateError::Unsafe(e.to_string()))?;
    let incomplete = d.rungs.iter().any(|r| !r.entry.complete);
    // An interrupted run (or soak) with no finished rung is no baseline at all.
    if d.rungs.iter().all(|r| !r.entry.complete) {
        return Err(GateError::NothingComplete {
            path: src.clone(),
            status: d.info.status,
            detail: d.info.status_suffix(),
        });
    }
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
    if !opts.add && !opts.force {
        let lines = crate::compare::bless_check::outlier_lines(
            d.info.load,
            &crate::compare::bless_check::runs_per_rung(&d),
        );
        if !lines.is_empty() {
            return Err(GateError::Outliers {
                path: src.clone(),
                lines,
            });
        }
    }
    let golden = opts
        .golden
        .clone()
        .unwrap_or_else(|| PathBuf::from("golden"));
    fs::create_dir_all(&golden).map_err(io(&golden))?;
    let name = &d.info.scenario_name;
    let dest = golden.join(name);
    // The loader allows only plain names; this keeps bless to golden/'s own children
    // whatever the loader ever lets through.
    if dest.parent() != Some(golden.as_path())
        || dest.file_name().map(|n| n.to_string_lossy()) != Some(name.as_str().into())
    {
        return Err(GateError::Unsafe(format!(
            "{}: scenario name {name:?} does not name a folder directly under {}",
            src.join("run.json").display(),
            golden.display()
        )));
    }
    if fs::symlink_metadata(&dest).is_ok_and(|m| !m.is_dir()) {
        return Err(GateError::Unsafe(format!(
            "{} is not a folder (a symlink or a file); refusing to replace it: remove it by hand if it is yours",
            dest.display()
        )));
    }
    let pid = std::process::id();
    let tmp = golden.join(format!(".{name}.bless-{pid}"));
    let _ = fs::remove_dir_all(&tmp);
    let made = if opts.add {
        add_to_baseline(&dest, &d, &tmp, opts.force)
    } else {
        copy_dir(src, &tmp)
    };
    if let Err(e) = made {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let replaced = match dest
        .exists()
        .then(|| replaced::plan(&golden, name, &dest, chrono::Utc::now()))
        .transpose()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if let Some(r) = &replaced {
        if let Err(e) = fs::rename(&dest, &r.archive) {
            let _ = fs::remove_dir_all(&tmp);
            return Err(GateError::Io {
                path: dest,
                source: e,
            });
        }
    }
    if let Err(e) = fs::rename(&tmp, &dest) {
        // Put the previous baseline back before reporting.
        if let Some(r) = &replaced {
            let _ = fs::rename(&r.archive, &dest);
        }
        return Err(GateError::Io {
            path: dest,
            source: e,
        });
    }
    Ok(Blessed { dest, replaced })
}

/// `bless --add`: write into `tmp` the baseline at `dest` with the run `d` added as more
/// repeats (results::merge), after checking they measure the same thing.
fn add_to_baseline(dest: &Path, d: &ResultDir, tmp: &Path, force: bool) -> Result<(), GateError> {
    if !dest.is_dir() {
        return Err(GateError::NoBaseline(dest.to_path_buf()));
    }
    let base = ResultDir::open_finished(dest).map_err(|source| GateError::Load {
        path: dest.to_path_buf(),
        source,
    })?;
    let changes = crate::compare::config_diff::fundamental_changes(&base.info, &d.info);
    if !changes.is_empty() {
        return Err(GateError::Unsafe(format!(
            "{} measures something else than the baseline {}, so it cannot be one more run of it:\n  {}",
            d.path.display(),
            dest.display(),
            changes.join("\n  ")
        )));
    }
    crate::compare::bless_check::refuse_duplicate(&base, dest, d)
        .map_err(|e| GateError::Unsafe(e.to_string()))?;
    if !force {
        // The runs the baseline would hold: its own, then the added run's, per rung.
        let mut rungs = crate::compare::bless_check::runs_per_rung(&base);
        for (rate, runs) in &mut rungs {
            if let Some(r) = d.rung(*rate) {
                runs.extend(crate::metrics::outliers::runs_of(&r.summary));
            }
        }
        let lines = crate::compare::bless_check::outlier_lines(base.info.load, &rungs);
        if !lines.is_empty() {
            return Err(GateError::Outliers {
                path: d.path.clone(),
                lines,
            });
        }
        // A run the gate fails against the baseline would widen every interval of the
        // baseline to hold its regression: the next gate of the same regression passes.
        let lines = crate::compare::bless_check::regressions_if_added(&base, d);
        if !lines.is_empty() {
            return Err(GateError::AddRegresses {
                path: d.path.clone(),
                baseline: dest.to_path_buf(),
                lines,
            });
        }
    }
    crate::results::merge::add_run(&base, d, tmp).map_err(|e| GateError::Unsafe(e.to_string()))
}

/// Copy regular files and folders only: a symlink is never followed (it could point
/// anywhere on the machine), and a FIFO or device is refused, each with its name.
fn copy_dir(from: &Path, to: &Path) -> Result<(), GateError> {
    fs::create_dir_all(to).map_err(io(to))?;
    for entry in fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let p = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().map_err(io(&p))?;
        if kind.is_dir() {
            copy_dir(&p, &target)?;
        } else if kind.is_file() {
            fs::copy(&p, &target).map_err(io(&p))?;
        } else {
            let what = if kind.is_symlink() {
                "a symlink"
            } else {
                "not a regular file"
            };
            return Err(GateError::Unsafe(format!(
                "{} is {what}; a result folder holds only files ladder wrote, so it is not copied into the baseline: remove it and bless again",
                p.display()
            )));
        }
    }
    Ok(())
}
