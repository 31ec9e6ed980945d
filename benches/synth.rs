//! Prompt synthesis time: `PromptSet::build` for 10,000 prompts of 512 tokens, with the shipped
//! word-level tokenizer and with a byte-level BPE tokenizer trained here in-process (no
//! downloads). A timed release run, not criterion: one build takes seconds, so criterion's
//! minimum of 10 samples plus warm-up would take minutes on a shared 2-core machine.
//!
//! Both tokenizers meet the one-token-per-word proof (`WordPool::composes` in
//! `src/workload/synth.rs`), so the plain cases time drafting plus a 16-prompt re-encode spot
//! check. A `prompt_template` takes the proof away: every draft is rendered and re-encoded,
//! which the `+ template` cases time in the same run, so the ratio between the two paths is
//! measured side by side.
//!
//! Run: `cargo bench --bench synth` (optional args: `-- PROMPTS TOKENS REPEATS`).
//! Prints the median wall time of REPEATS builds (default 3) per case.

use std::path::Path;
use std::time::Instant;

use ladder::scenario::types::{Dataset, Workload};
use ladder::tokens;
use ladder::workload::{testkit, PromptSet};

fn main() {
    // cargo bench passes `--bench`; keep only numeric arguments.
    let nums: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let prompts = nums.first().copied().unwrap_or(10_000);
    let tokens = nums.get(1).copied().unwrap_or(512) as u32;
    let repeats = nums.get(2).copied().unwrap_or(3).max(1);

    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json");
    let word = tokens::load(&fixture).expect("shipped tokenizer loads");
    let t0 = Instant::now();
    let bpe = testkit::byte_level_bpe();
    eprintln!("trained the BPE tokenizer in {:.2?}", t0.elapsed());

    let workload = Workload {
        dataset: Dataset::Random,
        path: None,
        input_tokens: tokens,
        output_tokens: 256,
        range_ratio: 0.0,
        batch_size: None,
        query_tokens: None,
        images: None,
        ignore_eos: true,
        requests_per_rung: prompts as u32,
        seed: 0,
        prompt_template: None,
        input_length: Default::default(),
        server_overhead: 0,
        cache: Default::default(),
        cache_nonce: None,
        shared_prefix: None,
        sessions: None,
        prompt_pool: None,
    };
    let template = Some("bache {{ prompt }}".to_string());
    for (name, tok, prompt_template) in [
        ("word-level (ladder-tiny.json)", &word, None),
        ("byte-level BPE", &bpe, None),
        ("word-level + template", &word, template.clone()),
        ("byte-level BPE + template", &bpe, template),
    ] {
        let workload = Workload {
            prompt_template,
            ..workload.clone()
        };
        let mut times = Vec::new();
        let mut exact = 0;
        for rep in 0..repeats {
            let t = Instant::now();
            let set =
                PromptSet::build(&workload, tok, None, prompts, rep as u64).expect("prompts build");
            times.push(t.elapsed().as_secs_f64());
            exact = set.iter().filter(|p| p.exact).count();
            assert_eq!(set.len(), prompts);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "synth {name}: {prompts} prompts x {tokens} tokens: median {median:.3} s of {repeats} \
             ({:.0} prompts/s, {:.2} M tokens/s; {exact} exact); all: {times:.3?}",
            prompts as f64 / median,
            prompts as f64 * tokens as f64 / median / 1e6,
        );
    }
}
