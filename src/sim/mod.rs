//! The built-in OpenAI-compatible serving simulator.

mod config;

pub use config::SimConfig;
