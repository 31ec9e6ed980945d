//! Result folders: layout, atomic writes, loading.

pub mod types;

pub use types::*;
