//! Result folders: layout, atomic writes, loading.

pub mod load;
pub mod types;

pub use load::{
    rate_label, requests_file_name, result_file_name, LoadError, LoadedRung, ResultDir,
};
pub use types::*;
