//! The folders of a history, in time order, and the series of one metric at one rung.
//!
//! Each folder is checked as `compare` checks it, its request lines included (a folder
//! that fails is skipped with the reason), and only its summaries are kept.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::results::{rate_label, LoadError, ResultDir, RunStatus};

/// One usable folder.
#[derive(Debug, Clone)]
pub struct Folder {
    /// The folder as loaded.
    pub dir: ResultDir,
    /// Its name (the timestamp for a dated folder).
    pub name: String,
}

impl Folder {
    /// The summary value of `metric` at the rung of `rate`, if the rung finished and the
    /// value is a number.
    pub fn value(&self, rate: f64, metric: &str) -> Option<f64> {
        let rung = self
            .dir
            .rungs
            .iter()
            .find(|r| rate_label(r.entry.rate) == rate_label(rate))?;
        if !rung.entry.complete || rung.summary.interrupted {
            return None;
        }
        rung.summary.metric(metric).filter(|v| v.is_finite())
    }

    /// Rates of its finished rungs.
    pub fn rates(&self) -> Vec<f64> {
        self.dir
            .rungs
            .iter()
            .filter(|r| r.entry.complete && !r.summary.interrupted)
            .map(|r| r.entry.rate)
            .collect()
    }
}

/// A folder left out, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// What the arguments held.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Usable folders, oldest first (by run.json `started_at`, then argument order).
    pub folders: Vec<Folder>,
    pub skipped: Vec<Skipped>,
}

/// Most sub-folders read from one scenario folder (a guard against a mistaken argument
/// such as `/`): the newest by name are kept.
pub const MAX_FOLDERS: usize = 10_000;

/// Load every folder named by `args`: each is a result folder (ladder's, or vLLM result
/// files) or a folder of them (`results/<scenario>/`). `Err` names an argument that is
/// not a folder at all.
pub fn load(args: &[PathBuf]) -> Result<Loaded, super::AnalyzeError> {
    let mut out = Loaded::default();
    let mut seen = BTreeSet::new();
    for arg in args {
        let not_a_folder = |reason: String| super::AnalyzeError::NotAFolder {
            path: arg.clone(),
            reason,
        };
        let meta = fs::metadata(arg).map_err(|e| not_a_folder(e.to_string()))?;
        if !meta.is_dir() {
            return Err(not_a_folder("not a folder".into()));
        }
        match open(arg) {
            Ok(d) => push(&mut out, &mut seen, arg, d),
            Err(LoadError::NotAResultDir(_)) => {
                let subs = match sub_folders(arg) {
                    Ok(s) => s,
                    Err(e) => {
                        out.skipped.push(Skipped {
                            path: arg.clone(),
                            reason: e.to_string(),
                        });
                        continue;
                    }
                };
                if subs.is_empty() {
                    out.skipped.push(Skipped {
                        path: arg.clone(),
                        reason: "neither a result folder nor a folder of result folders".into(),
                    });
                }
                for sub in subs {
                    match open(&sub) {
                        Ok(d) => push(&mut out, &mut seen, &sub, d),
                        Err(e) => out.skipped.push(Skipped {
                            path: sub,
                            reason: reason(&e),
                        }),
                    }
                }
            }
            Err(e) => out.skipped.push(Skipped {
                path: arg.clone(),
                reason: reason(&e),
            }),
        }
    }
    // A blessed golden folder is a copy of a dated one: the same run, counted once (the
    // first given is kept). The sort is stable, so ties keep argument order.
    out.folders.sort_by_key(|f| f.dir.info.started_at);
    let mut kept: Vec<Folder> = Vec::with_capacity(out.folders.len());
    for f in std::mem::take(&mut out.folders) {
        let twin = kept.iter().find(|k| {
            k.dir.info.started_at == f.dir.info.started_at
                && k.dir.info.scenario_name == f.dir.info.scenario_name
                && k.dir.imported.is_none()
                && f.dir.imported.is_none()
        });
        match twin {
            Some(k) => out.skipped.push(Skipped {
                path: f.dir.path.clone(),
                reason: format!(
                    "the same run as {} (same scenario and start time, e.g. a blessed copy); counted once",
                    k.dir.path.display()
                ),
            }),
            None => kept.push(f),
        }
    }
    out.folders = kept;
    Ok(out)
}

/// The error text without the path (the caller prints the path first).
fn reason(e: &LoadError) -> String {
    e.to_string()
}

fn push(out: &mut Loaded, seen: &mut BTreeSet<PathBuf>, path: &Path, dir: ResultDir) {
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if !seen.insert(key) {
        return;
    }
    if dir.rungs.iter().all(|r| !r.entry.complete) {
        out.skipped.push(Skipped {
            path: path.to_path_buf(),
            reason: "no finished rung".into(),
        });
        return;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    // A baseline says so: golden/<scenario>.
    let in_golden = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|p| p == "golden");
    let name = if in_golden {
        format!("golden/{name}")
    } else {
        name
    };
    out.folders.push(Folder { dir, name });
}

/// A finished result folder that passes the checks `compare` runs: a run still `running`
/// is refused, and every rung's request lines are read and checked against its summary
/// (an edited summary, a missing or emptied requests file), as `ResultDir::open_finished`
/// does.
fn open(dir: &Path) -> Result<ResultDir, LoadError> {
    ResultDir::open_finished(dir)
}

/// A folder whose entries cannot be listed ([`sub_folders`]): the system's error.
#[derive(Debug, thiserror::Error)]
#[error("cannot list: {0}")]
struct ListError(#[source] std::io::Error);

/// The sub-folders of `dir`, sorted by name, at most [`MAX_FOLDERS`] (the newest by name).
fn sub_folders(dir: &Path) -> Result<Vec<PathBuf>, ListError> {
    let entries = fs::read_dir(dir).map_err(ListError)?;
    let mut subs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subs.sort();
    if subs.len() > MAX_FOLDERS {
        subs.drain(..subs.len() - MAX_FOLDERS);
    }
    Ok(subs)
}

/// Rates of finished rungs present in every folder whose run finished (a run interrupted
/// or failed may lack its last rungs: it then contributes the rungs it finished, and is left
/// out of the others' series, which [`left_out`] says), ascending. When no run finished,
/// every folder counts.
pub fn common_rates(folders: &[Folder]) -> Vec<f64> {
    let finished: Vec<&Folder> = folders
        .iter()
        .filter(|f| f.dir.info.status == RunStatus::Complete)
        .collect();
    let judges: Vec<&Folder> = if finished.is_empty() {
        folders.iter().collect()
    } else {
        finished
    };
    let Some(first) = judges.first() else {
        return vec![];
    };
    let mut rates: Vec<f64> = first
        .rates()
        .into_iter()
        .filter(|r| {
            judges[1..]
                .iter()
                .all(|f| f.rates().iter().any(|x| rate_label(*x) == rate_label(*r)))
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup_by(|a, b| rate_label(*a) == rate_label(*b));
    rates
}

/// The folders with no finished rung at `rate`, each with why: (name, reason).
pub fn left_out(folders: &[Folder], rate: f64) -> Vec<(String, String)> {
    folders
        .iter()
        .filter_map(|f| {
            let rung = f
                .dir
                .rungs
                .iter()
                .find(|r| rate_label(r.entry.rate) == rate_label(rate));
            let status = format!("{:?}", f.dir.info.status).to_lowercase();
            let why = match rung {
                Some(r) if r.entry.complete && !r.summary.interrupted => return None,
                Some(_) => format!("its rung was cut short (run {status})"),
                None if f.dir.info.status != RunStatus::Complete => {
                    format!("the run ended ({status}) before this rung")
                }
                None => "no rung at this rate".to_string(),
            };
            Some((f.name.clone(), why))
        })
        .collect()
}

/// The values of `metric` at `rate`: (folder position, value) for folders that have it.
pub fn series(folders: &[Folder], rate: f64, metric: &str) -> Vec<(usize, f64)> {
    folders
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.value(rate, metric).map(|v| (i, v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_cannot_be_listed_says_why() {
        let tmp = tempfile::tempdir().unwrap();
        let e = sub_folders(&tmp.path().join("gone")).unwrap_err();
        let ListError(io) = &e;
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(e.to_string(), format!("cannot list: {io}"));
        assert!(
            e.to_string().starts_with("cannot list: No such file"),
            "{e}"
        );
    }
}
