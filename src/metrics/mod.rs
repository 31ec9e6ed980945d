//! Per-request records → latency distributions and rung summaries.

pub mod compute;
pub mod counts;
pub mod flow;
pub mod fold;
pub mod live;
pub mod models;
pub mod outliers;
pub mod prefix;
pub mod ramp;
pub mod reasoning;
pub mod repeats;
pub mod sessions;
pub mod summary;
pub mod tokens;

pub use compute::{summarize, RungContext};
pub use fold::RungFold;
pub use live::LiveStats;
pub use summary::{Latency, RungSummary, Stats};
pub use tokens::TokenAccounting;

// --- analysis (issue 6) ---
pub mod analysis;
pub use analysis::{analyze, Analysis, KneeReason};
