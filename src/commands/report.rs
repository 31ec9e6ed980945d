//! `ladder report` (the reports of one folder, or the overlay of two), and the one place a
//! run's folder gets its reports after `ladder run`, `ladder gate` and `ladder merge`.

use std::path::{Path, PathBuf};

use crate::notes::Notes;
use crate::report::ReportError;

/// The one place a run's folder gets its reports (summary.md, summary.csv, report.html,
/// analysis.json): after `ladder run`, the run of `ladder gate` and `ladder merge`, partial
/// runs included. A report that cannot be written is a warning, never a failed run.
pub fn write_reports(dir: &Path, quiet: bool, notes: &Notes) {
    match crate::report::write_all(dir) {
        Ok(()) if !quiet => notes.err(&format!("report: {}", dir.join("report.html").display())),
        Ok(()) => {}
        Err(e) => notes.err(&format!("warning: no report for {}: {e}", dir.display())),
    }
}

/// `ladder report DIR` or `ladder report BASE CANDIDATE`: check the folders as compare would,
/// then write the reports into `out` (default: the folder; for two, `CANDIDATE/compare`).
/// Returns the paths written.
pub fn report(
    dirs: &[PathBuf],
    out: Option<PathBuf>,
    rung: Option<f64>,
    notes: &Notes,
) -> Result<Vec<PathBuf>, ReportError> {
    // A folder compare would refuse (edited, damaged) is refused here too, before any drawing.
    dirs.iter().try_for_each(|d| crate::report::check(d))?;
    match dirs {
        [dir] => crate::report::write_run_at(dir, out.as_deref().unwrap_or(dir), rung),
        [base, candidate] => {
            let out = out.unwrap_or_else(|| candidate.join("compare"));
            let verdicts = overlay_verdicts(base, candidate, notes);
            crate::report::write_comparison_at(base, candidate, &out, Some(verdicts), rung)
        }
        _ => Err(ReportError::Folders(dirs.len())),
    }
}

/// The verdicts of `ladder compare BASE CANDIDATE` (default checks, or the baseline's
/// `gate:` rules); runs that cannot be compared are still overlaid, with a headline that
/// says why.
fn overlay_verdicts(base: &Path, candidate: &Path, notes: &Notes) -> crate::report::Verdicts {
    let compared =
        crate::compare::compare_dirs(base, candidate, &crate::compare::CompareOptions::default());
    match compared {
        Ok(c) => crate::report::comparison::verdicts(&c),
        Err(e) => {
            notes.err(&format!("note: the overlay has no verdict table: {e}"));
            crate::report::Verdicts {
                // One line: the error's own lines (a list of differences) joined.
                headline: format!(
                    "NO VERDICT: the runs were not compared: {}",
                    e.to_string()
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .collect::<Vec<_>>()
                        .join("; ")
                        .replace(":; ", ": ")
                ),
                rows: Vec::new(),
            }
        }
    }
}
