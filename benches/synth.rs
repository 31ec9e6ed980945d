//! Prompt synthesis time: `PromptSet::build` for 10,000 prompts of 512 tokens, with the shipped
//! word-level tokenizer and with a byte-level BPE tokenizer trained here in-process (no
//! downloads). A timed release run, not criterion: one build takes seconds, so criterion's
//! minimum of 10 samples plus warm-up would take minutes on a shared 2-core machine.
//!
//! Run: `cargo bench --bench synth` (optional args: `-- PROMPTS TOKENS REPEATS`).
//! Prints the median wall time of REPEATS builds (default 3) per tokenizer.

use std::path::Path;
use std::time::Instant;

use ladder::scenario::types::{Dataset, Workload};
use ladder::workload::{tokenizer, PromptSet, Tokenizer};
use rand::{Rng, SeedableRng};
use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{AddedToken, TokenizerBuilder, TokenizerImpl};

/// GPT-2-style byte-level BPE with a 1,500-token vocabulary, trained on generated text (the
/// same recipe as the workload tests), round-tripped through JSON like a real tokenizer.json.
fn bpe() -> Tokenizer {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    let syll = [
        "ka", "to", "ri", "men", "sa", "lo", "qu", "é", "ün", "th", "ing", "er", "中", "文", "ß",
        "ay", "str", "o", "a", "ne",
    ];
    let punct = [
        ",", ".", "!", "?", ";", "'s", " -", ":", "(", ")", "123", "42",
    ];
    let corpus: Vec<String> = (0..4000)
        .map(|_| {
            let mut s = String::new();
            for w in 0..rng.gen_range(4..20) {
                if w > 0 {
                    s.push(' ');
                }
                for _ in 0..rng.gen_range(1..4) {
                    s.push_str(syll[rng.gen_range(0..syll.len())]);
                }
                if rng.gen_bool(0.15) {
                    s.push_str(punct[rng.gen_range(0..punct.len())]);
                }
            }
            s
        })
        .collect();
    let mut trainer = BpeTrainerBuilder::new()
        .show_progress(false)
        .vocab_size(1500)
        .min_frequency(2)
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .special_tokens(vec![AddedToken::from("<|endoftext|>", true)])
        .build();
    let mut t: TokenizerImpl<BPE, NormalizerWrapper, ByteLevel, ByteLevel, ByteLevel> =
        TokenizerBuilder::new()
            .with_model(BPE::default())
            .with_normalizer(None)
            .with_pre_tokenizer(Some(ByteLevel::new(false, true, true)))
            .with_post_processor(Some(ByteLevel::new(false, true, true)))
            .with_decoder(Some(ByteLevel::new(false, true, true)))
            .build()
            .expect("tokenizer builds");
    t.train(&mut trainer, corpus.iter())
        .expect("training works");
    t.to_string(false)
        .expect("serialises")
        .parse()
        .expect("parses")
}

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
    let word = tokenizer::load(&fixture).expect("shipped tokenizer loads");
    let t0 = Instant::now();
    let bpe = bpe();
    eprintln!("trained the BPE tokenizer in {:.2?}", t0.elapsed());

    let workload = Workload {
        dataset: Dataset::Random,
        path: None,
        input_tokens: tokens,
        output_tokens: 256,
        range_ratio: 0.0,
        ignore_eos: true,
        requests_per_rung: prompts as u32,
        seed: 0,
        prompt_template: None,
    };
    for (name, tok) in [
        ("word-level (ladder-tiny.json)", &word),
        ("byte-level BPE", &bpe),
    ] {
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
