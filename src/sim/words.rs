//! Output vocabulary: the first 4096 sorted syllable words of `ladder-tiny.json`.
//!
//! Those are exactly the words starting with `b`, `ch`, `d` or `f`, so they are generated here
//! instead of loading the tokenizer; a test checks every one is in the shipped vocabulary.

use std::sync::OnceLock;

const FIRST_ONSETS: [&str; 4] = ["b", "ch", "d", "f"];
const ONSETS: [&str; 16] = [
    "b", "ch", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "sh", "t", "v", "z",
];
const VOWELS: [&str; 8] = ["a", "ai", "e", "ei", "i", "o", "ou", "u"];

/// Number of distinct output words.
pub const WORD_COUNT: usize = 4096;

/// Every output word followed by one space, so a re-tokenizer counts one token per word.
pub fn words() -> &'static [Box<str>] {
    static WORDS: OnceLock<Vec<Box<str>>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut out = Vec::with_capacity(WORD_COUNT);
        for o1 in FIRST_ONSETS {
            for v1 in VOWELS {
                for o2 in ONSETS {
                    for v2 in VOWELS {
                        out.push(format!("{o1}{v1}{o2}{v2} ").into_boxed_str());
                    }
                }
            }
        }
        out.sort();
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_first_4096_sorted_vocabulary_words() {
        let w = words();
        assert_eq!(w.len(), WORD_COUNT);
        assert!(w.windows(2).all(|p| p[0] < p[1]), "sorted and distinct");
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/tokenizers/ladder-tiny.json"
        ))
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let vocab = v["model"]["vocab"].as_object().unwrap();
        for word in w {
            let word = word.trim_end();
            assert!(
                vocab.contains_key(word),
                "`{word}` not in ladder-tiny vocab"
            );
        }
    }
}
