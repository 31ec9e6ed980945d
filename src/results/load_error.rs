//! Why a folder could not be read as a result folder: one error for every reader of one
//! (the loader, the vLLM import, the checks, the merges), each naming the file at fault.

use std::path::PathBuf;

/// Why a folder could not be loaded as a result folder.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}: not a result folder (no run.json, and no vLLM result files); give a folder written by `ladder run` (e.g. results/<scenario>/<timestamp>) or a folder of vLLM benchmark result JSON files")]
    NotAResultDir(PathBuf),
    #[error("{0}: no such file or folder; give a folder written by `ladder run` (e.g. results/<scenario>/<timestamp>) or a folder of vLLM benchmark result JSON files")]
    Missing(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not valid ladder JSON: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: written by a newer ladder (results format {found}, this build reads up to {supported}); upgrade ladder")]
    FutureFormat {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// Something ladder never writes: a path out of the folder, a count or time that does
    /// not add up. The folder was edited or damaged.
    #[error("{path}: {problem}; ladder never writes this, so the folder was edited or damaged: use the folder as ladder wrote it, or re-run the scenario")]
    Tampered { path: PathBuf, problem: String },
    /// A rung file that run.json lists is not in the folder.
    #[error("{path}: missing: {dir}/run.json lists this rung's file, but the folder does not hold it (a folder copied in part, or a file deleted); copy the whole result folder, or re-run the scenario")]
    MissingFile { path: PathBuf, dir: PathBuf },
    /// run.json still says `running`.
    #[error("{0}: run status is `running`: the run never finished (its process was killed, or is still running), so its numbers are not final; re-run the scenario and use that folder")]
    NeverFinished(PathBuf),
}
