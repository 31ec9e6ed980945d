//! `ladder run`: run a scenario (every ladder of a sweep), then give every folder it wrote
//! its reports, the folders of a stopped or failed run included.

use crate::runner::{RunError, RunOptions, RunOutcome};

use super::report::write_reports;

/// Run `opts`' scenario. Every ladder that finished gets its reports, also when a later one
/// of a sweep did not; a stopped or failed run's folder gets the reports of the rungs it
/// finished. Returns the finished ladders, or why the run stopped.
pub fn run(opts: &RunOptions) -> Result<Vec<RunOutcome>, RunError> {
    let (finished, result) = crate::runner::run_all_keeping(opts);
    for o in &finished {
        write_reports(&o.dir, opts.quiet, &opts.notes);
    }
    match result {
        Ok(()) => Ok(finished),
        Err(e) => {
            if let RunError::Interrupted { dir, .. } | RunError::Failed { dir, .. } = &e {
                write_reports(dir, opts.quiet, &opts.notes);
            }
            Err(e)
        }
    }
}
