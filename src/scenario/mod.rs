//! Scenario files: types (v1), loading, validation, migration, JSON Schema.
//!
//! Entry points: [`load`] (for `run` / `gate`), [`validate_file`] (for `ladder validate`),
//! [`schema_json`] (for `ladder schema`).

mod base_url;
pub(crate) mod bounded;
pub(crate) mod defaults;
pub(crate) mod diagnostic;
pub mod endpoints;
mod env_name;
pub(crate) mod extends;
pub(crate) mod extra_body;
pub mod from_vllm;
pub(crate) mod hub_id;
pub(crate) mod identity;
pub(crate) mod images;
mod incompatible;
pub mod init;
pub mod limits;
pub(crate) mod load;
pub(crate) mod load_kind;
pub mod metric_keys;
pub(crate) mod migrate;
pub(crate) mod models;
pub(crate) mod schema;
pub(crate) mod search;
mod server_metrics;
pub(crate) mod sessions;
pub(crate) mod shapes;
pub mod sim;
pub(crate) mod soak;
pub(crate) mod template;
pub mod types;
pub(crate) mod validate;
pub(crate) mod values;
mod yaml;

pub use defaults::{DEFAULT_PROMPT_POOL, DEFAULT_SOAK_INTERVAL};
pub use diagnostic::{Diagnostic, Diagnostics};
pub use extends::{Extends, MAX_EXTENDS_CHAIN};
pub use extra_body::{MAX_EXTRA_BODY_BYTES, RESERVED_BODY_FIELDS};
pub use identity::{is_scenario_name, label_clash, rate_label, REPLACED_DIR};
pub use load::{check_file, check_text, load, validate_file, Finding, Loaded, MAX_SCENARIO_BYTES};
pub use load_kind::LoadKind;
pub use models::{ModelSpec, WeightedModel};
pub use schema::schema_json;
pub use search::{SearchBudget, SearchLoad, SearchOver, SloBound};
pub use sessions::{Sessions, Turns};
pub use shapes::{RampLoad, RampShape, TraceLoad};
pub use template::EnvSecret;
pub use types::*;
pub use yaml::Seg as KeySeg;
