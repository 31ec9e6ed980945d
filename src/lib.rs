//! ladder: versioned, reproducible load-test ladders for LLM inference servers.
//!
//! Data flows one way: [`scenario`] → [`workload`] → [`runner`]/[`client`] → [`record`] →
//! [`metrics`] → [`results`] → [`compare`]/[`history`]/[`report`]. [`sim`] is the built-in server.
//! Imports go the other way, floor by floor: docs/architecture.md (checked by
//! tests/architecture.rs).
//! [`capacity`] is the SLO search the runner drives and `compare` gates on.

pub mod capacity;
pub mod client;
pub mod commands;
pub mod compare;
pub mod deploy;
pub mod escape;
pub mod fileread;
mod format;
pub mod history;
pub mod metrics;
pub mod notes;
pub mod record;
pub mod report;
pub mod results;
mod rlimit;
pub mod runner;
pub mod scenario;
pub mod servermetrics;
pub mod sim;
mod stats;
pub mod stdio;
pub mod tokens;
pub mod values;
pub mod workload;

/// Process exit codes shared by every subcommand.
pub mod exit {
    /// Success; for `compare`/`gate`, no regression.
    pub const OK: i32 = 0;
    /// A regression or a failed gate.
    pub const REGRESSION: i32 = 1;
    /// Bad input or an unusable run (invalid scenario, server unreachable, key missing).
    pub const BAD_INPUT: i32 = 2;
}
