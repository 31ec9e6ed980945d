//! Per-request records → latency distributions and rung summaries.

pub mod summary;

pub use summary::{Latency, RungSummary, Stats};
