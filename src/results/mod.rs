//! Result folders: layout, atomic writes, loading.

pub(crate) mod capacity;
mod check;
pub(crate) mod facts;
mod line_scan;
pub(crate) mod load;
pub(crate) mod load_error;
pub(crate) mod merge;
pub(crate) mod names;
pub(crate) mod shard_info;
pub mod shard_merge;
pub(crate) mod stream;
pub(crate) mod types;
pub mod vllm;
pub(crate) mod write;

pub use capacity::{read_capacity, read_capacity_in, CapacityReadError};
pub use load::{read_result_json, MAX_RESULT_JSON_BYTES};
pub use load::{LoadedRung, ResultDir};
pub use load_error::LoadError;
pub use names::{rate_label, requests_file_name, result_file_name, server_metrics_file_name};
pub use shard_info::{ClockSync, MergedShards, RungStart, ShardInfo};
pub use stream::RequestStream;
pub use types::*;
pub use write::{atomic_write, RunWriter, WriteError};
