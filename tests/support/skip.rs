//! A test that cannot run on this machine (no real server, no Slurm cluster, no matplotlib,
//! no right to mount) says so twice: on stderr, and as a line in `ladder-skips.log` under
//! cargo's target tmp folder, which `scripts/test.sh` (README's test command) prints and
//! counts after `cargo test`. libtest has no "skipped" status, so without this a run that
//! tested nothing real would read as all passed.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

/// The file `scripts/test.sh` empties before `cargo test` and counts after it.
pub fn log_path() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ladder-skips.log")
}

/// Record that `test` did not run, and why.
pub fn skip(test: &str, why: &str) {
    eprintln!("skipped: {test}: {why}");
    let line = format!("{test}: {}\n", why.replace('\n', " "));
    if let Ok(mut f) = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path())
    {
        // One write of one line: concurrent tests append whole lines.
        let _ = f.write_all(line.as_bytes());
    }
}
