//! Prompts and arrivals: tokenizer, datasets, prompt synthesis, arrival schedules.

pub mod tokenizer;
