//! `ladder compare`: two result folders, their verdicts, the verdict table (or the JSON
//! document) and the files asked for (Markdown summary, JUnit XML).

use std::path::Path;

use crate::compare::{compare_dirs, Comparison};

use super::gate::{deliver, GateError, GateOptions};

/// Compare `candidate` with `base` under `opts.compare`, show the verdicts and write the
/// requested files. Returns the comparison; its `exit_code` is the command's.
pub fn compare(base: &Path, candidate: &Path, opts: &GateOptions) -> Result<Comparison, GateError> {
    let c = compare_dirs(base, candidate, &opts.compare)?;
    deliver(&c, opts, "compare")?;
    Ok(c)
}
