//! One escaper per output format, so text from outside (server answers, result folders,
//! scenario and command-line values) cannot change the structure of what ladder writes:
//! [`markdown`] (summary.md, gate and history Markdown), [`shell`] (the Slurm batch script),
//! [`yaml`] (comments in a written scenario), [`terminal`] (ladder's stderr lines), [`html`]
//! (report.html, the history page), [`xml`] (the JUnit report); JSON is written by
//! serde_json and made terminal-safe by [`json`] (the `--json` documents on stdout).
//! RELIABILITY.md's channel table names which one each channel goes through.

pub(crate) mod html;
pub mod json;
pub mod markdown;
pub(crate) mod shell;
pub mod terminal;
pub(crate) mod xml;
pub(crate) mod yaml;
