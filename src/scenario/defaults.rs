//! Defaults of the load that more than one of the scenario's files reads: the `load`
//! section's types (`types`), its families (`load_kind`, `search`, `sessions`) and the soak's
//! checks (`soak`) agree on them here.

use std::time::Duration;

/// `load.requests_per_rung` when unset.
pub(crate) fn default_requests_per_rung() -> u32 {
    200
}

/// Default `load.interval` of a duration rung.
pub const DEFAULT_SOAK_INTERVAL: Duration = Duration::from_secs(10);

/// Default `workload.prompt_pool` of a duration rung.
pub const DEFAULT_PROMPT_POOL: u32 = 1000;
