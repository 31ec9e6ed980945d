//! Capacity at an SLO: the highest offered rate (or number of users) at which every SLO
//! term still holds, found by an adaptive search over probes, with an interval.
//!
//! Pure: no I/O. [`slo`] judges one probe's requests against the SLO with confidence
//! intervals ([`interval`]), [`search`] decides the next probe from the verdicts and gives
//! the answer, [`file`] is `capacity.json`. The runner (`runner::search`) measures the
//! probes; `compare` gates on two answers. docs/capacity.md says what the interval means.

pub(crate) mod file;
pub(crate) mod interval;
pub(crate) mod looks;
pub(crate) mod search;
pub(crate) mod slo;

pub use file::{CapacityFile, CAPACITY_FILE};

/// The gate's name for a search's answer: `{ metric: capacity, max_decrease: 5% }`.
pub const CAPACITY_METRIC: &str = "capacity";
pub use search::{Answer, Over, Precision, Search, SearchConfig, Step, Stop};
pub use slo::{Obs, PerRequest, ProbeVerdict, SloMetric, SloMetricError, SloTerm};
