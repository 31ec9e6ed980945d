//! Simulator settings: command-line flags of `ladder sim` and the scenario's `sim:` section.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Settings of the simulated engine. Every field has a default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of the simulator's random choices.
    #[serde(default)]
    pub seed: u64,
}
