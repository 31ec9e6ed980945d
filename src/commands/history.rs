//! `ladder history`: analyze many result folders of one scenario (`history::analyze`), show
//! the tables and change points, write the Markdown summary and HTML page it is asked for
//! (`report::history`).

use std::path::PathBuf;

use crate::history::{History, HistoryOptions};
use crate::notes::Notes;
use crate::report::history::{HistoryExporter, Html, Markdown, Terminal};

/// Why `ladder history` has no answer (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The folders or options are unusable (the analysis says why).
    #[error("{0}")]
    Analyze(#[from] crate::history::AnalyzeError),
    /// The terminal tables could not be drawn.
    #[error("{0}")]
    Render(crate::report::ReportError),
    /// `--summary` or `--html` could not be written.
    #[error("{}: cannot write: {cause}; choose a writable path", path.display())]
    Write { path: PathBuf, cause: OutputError },
}

/// Why an output file of `ladder history` was not written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Its text could not be rendered.
    #[error("{0}")]
    Render(crate::report::ReportError),
    /// The file could not be written.
    #[error("{0}")]
    Write(crate::results::WriteError),
}

impl HistoryError {
    /// The message of the `--json` error document (without the advice of the stderr line).
    pub fn json_message(&self) -> String {
        match self {
            HistoryError::Write { path, cause } => {
                format!("{}: cannot write: {cause}", path.display())
            }
            e => e.to_string(),
        }
    }

    /// True when the `--json` error document goes with it: not for a table that could not
    /// be drawn (there are no tables with `--json`).
    pub fn has_document(&self) -> bool {
        !matches!(self, HistoryError::Render(_))
    }
}

/// `ladder history`: analyze; skipped folders and notes on the error stream; unless `json`,
/// the tables and change points on the output stream; then write `--summary` / `--html`.
/// Returns the history: the caller prints its verdict line or JSON document, and its
/// `exit_code` is the command's (0 no regression step at the newest folder, 1 one).
pub fn history(opts: &HistoryOptions, notes: &Notes) -> Result<History, HistoryError> {
    let h = crate::history::analyze(opts)?;
    for s in &h.skipped {
        notes.err(&format!("note: skipped {}: {}", s.path.display(), s.reason));
    }
    for n in &h.notes {
        notes.err(&format!("note: {n}"));
    }
    if !opts.json {
        let text = Terminal.render(&h).map_err(HistoryError::Render)?;
        notes.out(&crate::escape::terminal::line(&text));
    }
    let mut outputs: Vec<(&PathBuf, Result<String, OutputError>)> = Vec::new();
    if let Some(p) = &opts.summary {
        outputs.push((p, Markdown.render(&h).map_err(OutputError::Render)));
    }
    if let Some(p) = &opts.html {
        outputs.push((p, Html.render(&h).map_err(OutputError::Render)));
    }
    for (path, text) in outputs {
        text.and_then(|t| {
            crate::results::atomic_write(path, t.as_bytes()).map_err(OutputError::Write)
        })
        .map_err(|cause| HistoryError::Write {
            path: path.clone(),
            cause,
        })?;
        notes.err(&format!("wrote {}", path.display()));
    }
    Ok(h)
}
