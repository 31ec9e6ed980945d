//! A byte-level BPE tokenizer trained in-process, shared by the workload tests and
//! `benches/synth.rs` (no downloads). Not part of the public API.

use rand::{Rng, SeedableRng};
use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{AddedToken, TokenizerBuilder, TokenizerImpl};

use crate::tokens::Tokenizer;

/// The special tokens [`byte_level_bpe`] carries.
pub const BPE_SPECIALS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<unk>"];

/// GPT-2-style byte-level BPE (no prefix space) with a 1,500-token vocabulary, trained on
/// generated text with some accents, CJK and punctuation, so decoded ids can be partial UTF-8
/// and merge across boundaries; round-tripped through JSON as a real tokenizer.json would be
/// loaded. Deterministic; about 0.5 s to train.
pub fn byte_level_bpe() -> Tokenizer {
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
    train(&corpus, 1500)
}

/// [`byte_level_bpe`]'s recipe trained on English: sentences of the common words
/// `tokenizer: server` builds prompts from, with made-up words mixed in: the common words
/// end up whole, as in a real LLM vocabulary, and the made-up ones split.
pub fn english_byte_level_bpe() -> Tokenizer {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let words = crate::tokens::server_words::WORDS;
    let odd = ["zq", "xv", "kj", "qw"];
    let corpus: Vec<String> = (0..3000)
        .map(|_| {
            let mut s = String::new();
            for w in 0..rng.gen_range(4..20) {
                if w > 0 {
                    s.push(' ');
                }
                if rng.gen_bool(0.1) {
                    s.push_str(odd[rng.gen_range(0..odd.len())]);
                    s.push_str(odd[rng.gen_range(0..odd.len())]);
                } else {
                    s.push_str(words[rng.gen_range(0..words.len())]);
                }
            }
            s
        })
        .collect();
    train(&corpus, 1500)
}

fn train(corpus: &[String], vocab: usize) -> Tokenizer {
    let mut trainer = BpeTrainerBuilder::new()
        .show_progress(false)
        .vocab_size(vocab)
        .min_frequency(2)
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .special_tokens(
            BPE_SPECIALS
                .iter()
                .map(|s| AddedToken::from(*s, true))
                .collect(),
        )
        .build();
    let mut t: TokenizerImpl<BPE, NormalizerWrapper, ByteLevel, ByteLevel, ByteLevel> =
        TokenizerBuilder::new()
            .with_model(BPE::default())
            .with_normalizer(None)
            .with_pre_tokenizer(Some(ByteLevel::new(false, true, true)))
            .with_post_processor(Some(ByteLevel::new(false, true, true)))
            .with_decoder(Some(ByteLevel::new(false, true, true)))
            .build()
            .expect("the tokenizer builds");
    t.train(&mut trainer, corpus.iter())
        .expect("training on generated text works");
    t.to_string(false)
        .expect("the tokenizer serialises")
        .parse()
        .expect("the serialised tokenizer parses")
}
