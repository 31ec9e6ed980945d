//! Prompts counted by a tokenizer ladder cannot read (`tokenizer: server`) and by none at all
//! (`tokenizer: none`), with stand-in counters: a BPE trained on English behind the [`CountTokens`]
//! interface, and word counters that split chosen words the way a server's tokenizer might.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A byte-level BPE trained on English, seen only through [`CountTokens`] (as the server's
/// would be).
struct Remote {
    tok: Tokenizer,
    texts: AtomicUsize,
}

impl CountTokens for Remote {
    fn count(&self, texts: &[String]) -> Result<Vec<u32>, CountError> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts.iter().map(|t| tokens::count(&self.tok, t)).collect())
    }
}

/// One token per whitespace-separated word, `split` words counting three.
struct Words {
    split: &'static [&'static str],
}

impl CountTokens for Words {
    fn count(&self, texts: &[String]) -> Result<Vec<u32>, CountError> {
        Ok(texts
            .iter()
            .map(|t| {
                t.split_whitespace()
                    .map(|w| if self.split.contains(&w) { 3 } else { 1 })
                    .sum()
            })
            .collect())
    }
}

struct Failing;

impl CountTokens for Failing {
    fn count(&self, _: &[String]) -> Result<Vec<u32>, CountError> {
        Err(crate::client::TokenizeError(
            "http://127.0.0.1:9/tokenize answered 404 Not Found".into(),
        )
        .into())
    }
}

fn wl(input: u32, range_ratio: f64) -> Workload {
    Workload {
        dataset: Dataset::Random,
        path: None,
        input_tokens: input,
        output_tokens: 8,
        range_ratio,
        batch_size: None,
        query_tokens: None,
        images: None,
        ignore_eos: true,
        requests_per_rung: 200,
        seed: 3,
        prompt_template: None,
        input_length: Default::default(),
        server_overhead: 0,
        cache: Default::default(),
        cache_nonce: None,
        shared_prefix: None,
        sessions: None,
        prompt_pool: None,
    }
}

#[test]
fn server_counts_make_every_random_prompt_exact_at_a_bounded_cost() {
    let remote = Remote {
        tok: testkit::english_byte_level_bpe(),
        texts: AtomicUsize::new(0),
    };
    let n = 300;
    let set = PromptSet::load_with(&wl(64, 0.5), Tokens::Server(&remote), None, n, 7).unwrap();
    assert_eq!(set.prompts.len(), n);
    for p in &set.prompts {
        assert!(p.exact, "{p:?}");
        assert!((32..=96).contains(&p.input_tokens), "{p:?}");
        assert_eq!(tokens::count(&remote.tok, &p.text), p.input_tokens, "{p:?}");
    }
    let distinct: std::collections::HashSet<&str> =
        set.prompts.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(distinct.len(), n);
    // Every prompt is counted once; finding the pool and the rare repair cost little more.
    let counted = remote.texts.load(Ordering::SeqCst);
    assert!(counted >= n && counted < n + 200, "{counted} texts counted");
}

#[test]
fn words_the_server_splits_stay_out_of_the_pool_and_lengths_stay_exact() {
    let words = Words {
        split: &["people", "government", "time", "year", "way"],
    };
    let set = PromptSet::load_with(&wl(40, 0.0), Tokens::Server(&words), None, 100, 0).unwrap();
    for p in &set.prompts {
        assert!(p.exact && p.input_tokens == 40, "{p:?}");
        assert_eq!(
            words.count(std::slice::from_ref(&p.text)).unwrap(),
            vec![40]
        );
        for w in words.split {
            assert!(!p.text.split(' ').any(|x| x == *w), "{w} in {:?}", p.text);
        }
    }
}

#[test]
fn a_template_is_counted_by_the_server_too() {
    let words = Words { split: &[] };
    let mut w = wl(30, 0.0);
    w.prompt_template = Some("System: be brief.\nUser: {{ prompt }}".into());
    let set = PromptSet::load_with(&w, Tokens::Server(&words), None, 20, 0).unwrap();
    for p in &set.prompts {
        assert!(p.text.starts_with("System: be brief.\nUser: "), "{p:?}");
        assert_eq!((p.input_tokens, p.exact), (30, true), "{p:?}");
    }
}

#[test]
fn server_failures_and_unusable_tokenizers_say_what_to_do() {
    let e = PromptSet::load_with(&wl(16, 0.0), Tokens::Server(&Failing), None, 4, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("/tokenize answered 404"), "{e}");
    // A tokenizer that splits every common word in three leaves no pool.
    struct Thirds;
    impl CountTokens for Thirds {
        fn count(&self, texts: &[String]) -> Result<Vec<u32>, CountError> {
            Ok(texts
                .iter()
                .map(|t| 3 * t.split_whitespace().count() as u32)
                .collect())
        }
    }
    let e = PromptSet::load_with(&wl(16, 0.0), Tokens::Server(&Thirds), None, 4, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("too few"), "{e}");
    assert!(e.contains("local tokenizer"), "{e}");
}

#[test]
fn without_a_tokenizer_random_is_refused_and_files_go_out_uncounted() {
    let e = PromptSet::load_with(&wl(16, 0.0), Tokens::Absent, None, 4, 0).unwrap_err();
    match e {
        WorkloadError::Setting { setting, message } => {
            assert_eq!(setting, "tokenizer");
            assert!(message.contains("`server`"), "{message}");
        }
        other => panic!("{other}"),
    }
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("p.jsonl");
    std::fs::write(
        &jsonl,
        "{\"prompt\": \"one two\", \"output_tokens\": 5}\n{\"prompt\": \"three\"}\n",
    )
    .unwrap();
    let mut w = wl(16, 0.0);
    w.dataset = Dataset::Jsonl;
    let set = PromptSet::load_with(&w, Tokens::Absent, Some(&jsonl), 3, 0).unwrap();
    let got: Vec<(&str, u32, u32)> = set
        .prompts
        .iter()
        .map(|p| (p.text.as_str(), p.input_tokens, p.output_tokens))
        .collect();
    assert_eq!(
        got,
        vec![("one two", 0, 5), ("three", 0, 8), ("one two", 0, 5)]
    );
    // A ShareGPT reply cannot be counted: the workload's output length, said in a note.
    let sg = dir.path().join("sg.json");
    std::fs::write(
        &sg,
        r#"[{"conversations": [{"from": "human", "value": "hi there"},
                               {"from": "gpt", "value": "a reply of six words here"}]}]"#,
    )
    .unwrap();
    w.dataset = Dataset::Sharegpt;
    let set = PromptSet::load_with(&w, Tokens::Absent, Some(Path::new(&sg)), 1, 0).unwrap();
    assert_eq!(set.prompts[0].output_tokens, 8);
    assert!(
        set.notes.iter().any(|n| n.contains("tokenizer: none")),
        "{:?}",
        set.notes
    );
    // The server counts the reply when it counts the prompts.
    let words = Words { split: &[] };
    let set = PromptSet::load_with(&w, Tokens::Server(&words), Some(&sg), 1, 0).unwrap();
    assert_eq!(
        (set.prompts[0].input_tokens, set.prompts[0].output_tokens),
        (2, 6)
    );
}
