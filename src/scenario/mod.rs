//! Scenario files: types (v1), loading, validation, migration, JSON Schema.

pub mod types;

pub use types::*;
