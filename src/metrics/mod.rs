//! Per-request records → latency distributions and rung summaries.

pub mod compute;
pub(crate) mod counts;
pub(crate) mod flow;
pub(crate) mod fold;
pub(crate) mod latency;
pub(crate) mod live;
pub mod models;
pub(crate) mod outliers;
pub(crate) mod prefix;
pub(crate) mod ramp;
pub(crate) mod ramp_report;
pub(crate) mod read_error;
pub(crate) mod reasoning;
pub(crate) mod repeats;
pub(crate) mod sessions;
pub(crate) mod summary;
pub(crate) mod tokens;

pub use compute::{summarize, RungContext};
pub use fold::RungFold;
pub use latency::{Latency, Stats};
pub use live::LiveStats;
pub use read_error::ReadError;
pub use summary::RungSummary;
pub use tokens::TokenAccounting;

// --- analysis (issue 6) ---
pub mod analysis;
pub use analysis::{analyze, Analysis, KneeReason};
