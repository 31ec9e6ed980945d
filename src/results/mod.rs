//! Result folders: layout, atomic writes, loading.

mod check;
pub mod facts;
mod line_scan;
pub mod load;
pub mod merge;
pub mod shard_info;
pub mod shard_merge;
pub mod stream;
pub mod types;
pub mod vllm;
pub mod write;

pub use load::{
    rate_label, requests_file_name, result_file_name, server_metrics_file_name, LoadError,
    LoadedRung, ResultDir,
};
pub use load::{read_result_json, MAX_RESULT_JSON_BYTES};
pub use shard_info::{ClockSync, MergedShards, RungStart, ShardInfo};
pub use stream::RequestStream;
pub use types::*;
pub use write::{atomic_write, RunWriter, WriteError};
