//! Prompt building against the shipped word-level fixture and a byte-level BPE tokenizer
//! trained here in-process (no downloads).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rand::{Rng, SeedableRng};

use super::*;
use testkit::BPE_SPECIALS as SPECIALS;

fn fixture() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json");
        tokens::load(&p).unwrap()
    })
}

fn bpe() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(testkit::byte_level_bpe)
}

fn wl(input: u32, output: u32, range_ratio: f64, seed: u64) -> Workload {
    Workload {
        dataset: Dataset::Random,
        path: None,
        input_tokens: input,
        output_tokens: output,
        range_ratio,
        batch_size: None,
        query_tokens: None,
        images: None,
        ignore_eos: true,
        requests_per_rung: 200,
        seed,
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

fn tokenizers() -> [(&'static str, &'static Tokenizer); 2] {
    [("word-level fixture", fixture()), ("byte-level BPE", bpe())]
}

#[test]
fn trained_bpe_really_is_byte_level_with_specials() {
    let t = bpe();
    assert!(t.get_vocab_size(false) > 1000);
    let ids = t.encode("hello <|endoftext|>", false).unwrap();
    assert!(ids
        .get_ids()
        .contains(&t.token_to_id("<|endoftext|>").unwrap()));
    // Decoding a lone continuation byte of a multibyte char gives a replacement char: the
    // case vLLM-style id sampling trips on.
    assert!(synth::WordPool::new(t).unwrap().len() > 200);
}

#[test]
fn random_prompts_have_exact_lengths() {
    for (name, tok) in tokenizers() {
        for len in [1, 7, 128, 512, 2048] {
            let n = if len >= 512 { 10 } else { 40 };
            let set = PromptSet::load(&wl(len, 64, 0.0, 1), tok, None, n, 0).unwrap();
            assert!(set.notes.is_empty(), "{name}: {:?}", set.notes);
            assert_eq!(set.prompts.len(), n);
            for p in &set.prompts {
                assert!(p.exact, "{name} len {len}: {} tokens", p.input_tokens);
                assert_eq!(p.input_tokens, len);
                assert_eq!(tokens::count(tok, &p.text), len, "{name}: {:?}", p.text);
                assert_eq!(p.output_tokens, 64);
                assert_eq!(p.text.trim(), p.text, "{name}: no stray whitespace");
            }
        }
    }
}

#[test]
fn range_ratio_bounds_and_mean() {
    for (name, tok) in tokenizers() {
        let ps = PromptSet::build(&wl(128, 200, 0.5, 5), tok, None, 600, 2).unwrap();
        let (mut sum_in, mut sum_out) = (0.0, 0.0);
        for p in &ps {
            assert!(
                (64..=192).contains(&p.input_tokens),
                "{name}: {}",
                p.input_tokens
            );
            assert!(
                (100..=300).contains(&p.output_tokens),
                "{name}: {}",
                p.output_tokens
            );
            assert!(p.exact);
            assert_eq!(tokens::count(tok, &p.text), p.input_tokens);
            sum_in += p.input_tokens as f64;
            sum_out += p.output_tokens as f64;
        }
        let (mi, mo) = (sum_in / 600.0, sum_out / 600.0);
        assert!((mi / 128.0 - 1.0).abs() < 0.05, "{name}: mean input {mi}");
        assert!((mo / 200.0 - 1.0).abs() < 0.05, "{name}: mean output {mo}");
        let distinct: HashSet<u32> = ps.iter().map(|p| p.input_tokens).collect();
        assert!(distinct.len() > 50, "lengths actually vary");
    }
}

#[test]
fn deterministic_per_seed_and_different_across_seeds() {
    for (name, tok) in tokenizers() {
        let a = PromptSet::build(&wl(32, 8, 0.3, 7), tok, None, 50, 1).unwrap();
        let b = PromptSet::build(&wl(32, 8, 0.3, 7), tok, None, 50, 1).unwrap();
        let c = PromptSet::build(&wl(32, 8, 0.3, 8), tok, None, 50, 1).unwrap();
        let d = PromptSet::build(&wl(32, 8, 0.3, 7), tok, None, 50, 2).unwrap();
        assert_eq!(a, b, "{name}");
        assert_ne!(a, c, "{name}: workload seed matters");
        assert_ne!(a, d, "{name}: rung seed matters");
        assert!(a.iter().zip(&c).all(|(x, y)| x.text != y.text));
    }
}

#[test]
fn prompts_are_distinct_and_free_of_special_tokens() {
    let bpe_special: HashSet<u32> = SPECIALS
        .iter()
        .map(|s| bpe().token_to_id(s).unwrap())
        .collect();
    let unk = fixture().token_to_id("[UNK]").unwrap();
    for (name, tok, forbidden) in [
        ("fixture", fixture(), HashSet::from([unk])),
        ("bpe", bpe(), bpe_special),
    ] {
        for len in [3, 64] {
            let ps = PromptSet::build(&wl(len, 8, 0.0, 3), tok, None, 500, 0).unwrap();
            let texts: HashSet<&str> = ps.iter().map(|p| p.text.as_str()).collect();
            assert_eq!(texts.len(), ps.len(), "{name} len {len}: duplicates");
            for p in &ps {
                let enc = tok.encode(p.text.as_str(), false).unwrap();
                assert!(
                    enc.get_ids().iter().all(|i| !forbidden.contains(i)),
                    "{name}: special token in {:?}",
                    p.text
                );
                assert!(!p.text.contains("<|") && !p.text.contains("[UNK]"));
            }
        }
    }
}

#[test]
fn template_tokens_are_subtracted() {
    let cases = [
        (fixture(), "baba babe {{ prompt }} babi"),
        (bpe(), "### Instruction:\n{{ prompt }}\n### Response:\n"),
        (bpe(), "Q: {{ prompt }}"),
    ];
    for (tok, tpl) in cases {
        let mut w = wl(80, 8, 0.25, 4);
        w.prompt_template = Some(tpl.into());
        let ps = PromptSet::build(&w, tok, None, 100, 0).unwrap();
        let (head, tail) = tpl.split_once("{{ prompt }}").unwrap();
        for p in &ps {
            assert!(
                p.text.starts_with(head) && p.text.ends_with(tail),
                "{:?}",
                p.text
            );
            assert!(p.exact, "{tpl:?}: {} tokens", p.input_tokens);
            assert_eq!(tokens::count(tok, &p.text), p.input_tokens);
            assert!((60..=100).contains(&p.input_tokens));
        }
    }
}

#[test]
fn template_errors_name_the_setting() {
    let mut w = wl(16, 8, 0.0, 0);
    for (tpl, want) in [
        ("no prompt here", "never uses"),
        ("{{ promt }}", "undefined"),
        ("{% if %}", "prompt_template"),
        ("{{ prompt }} babi babi babi babi babi babi babi babi babi babi babi babi babi babi babi babi babi", "no room"),
    ] {
        w.prompt_template = Some(tpl.into());
        let e = PromptSet::build(&w, fixture(), None, 3, 0).unwrap_err().to_string();
        assert!(e.contains("workload.prompt_template"), "{e}");
        assert!(e.contains(want), "{tpl:?}: {e}");
    }
}

#[test]
fn bad_settings_are_refused() {
    let e = PromptSet::build(&wl(16, 8, 1.0, 0), fixture(), None, 3, 0).unwrap_err();
    assert!(e.to_string().contains("workload.range_ratio"), "{e}");
    let e = PromptSet::build(&wl(0, 8, 0.0, 0), fixture(), None, 3, 0).unwrap_err();
    assert!(e.to_string().contains("workload.input_tokens"), "{e}");
    let mut w = wl(16, 8, 0.0, 0);
    w.dataset = Dataset::Jsonl;
    let e = PromptSet::build(&w, fixture(), None, 3, 0).unwrap_err();
    assert!(e.to_string().contains("workload.path"), "{e}");
}

fn file(dir: &tempfile::TempDir, name: &str, body: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, body).unwrap();
    p
}

#[test]
fn jsonl_prompts_cycle_and_take_line_output_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let p = file(
        &dir,
        "p.jsonl",
        "{\"prompt\": \"baba babe\", \"output_tokens\": 5}\n{\"prompt\": \"\"}\n{\"prompt\": \"babi babo babu\"}\n",
    );
    let mut w = wl(16, 33, 0.0, 0);
    w.dataset = Dataset::Jsonl;
    w.prompt_template = Some("bache {{ prompt }}".into());
    let set = PromptSet::load(&w, fixture(), Some(&p), 5, 0).unwrap();
    let got: Vec<(&str, u32, u32)> = set
        .prompts
        .iter()
        .map(|p| (p.text.as_str(), p.input_tokens, p.output_tokens))
        .collect();
    assert_eq!(
        got,
        vec![
            ("bache baba babe", 3, 5),
            ("bache babi babo babu", 4, 33),
            ("bache baba babe", 3, 5),
            ("bache babi babo babu", 4, 33),
            ("bache baba babe", 3, 5),
        ]
    );
    assert!(set.prompts.iter().all(|p| p.exact));
    let notes = set.notes.join("\n");
    assert!(
        notes.contains("has 2 prompts but the rung needs 5"),
        "{notes}"
    );
    assert!(notes.contains("skipped 1"), "{notes}");
    // Enough prompts: no cycling note.
    let set = PromptSet::load(&w, fixture(), Some(&p), 2, 0).unwrap();
    assert!(!set.notes.join(" ").contains("cycled"));
}

#[test]
fn jsonl_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = wl(16, 8, 0.0, 0);
    w.dataset = Dataset::Jsonl;
    let p = file(&dir, "bad.jsonl", "{\"prompt\": \"baba\"}\nnot json\n");
    let e = PromptSet::build(&w, fixture(), Some(&p), 3, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.jsonl:2:"), "{e}");
    let p = file(&dir, "empty.jsonl", "{\"prompt\": \" \"}\n\n");
    let e = PromptSet::build(&w, fixture(), Some(&p), 3, 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("empty.jsonl") && e.contains("no non-empty prompts"),
        "{e}"
    );
}

#[test]
fn sharegpt_uses_reply_length_for_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = file(
        &dir,
        "sg.json",
        r#"[{"conversations": [{"from": "human", "value": "baba babe"},
                              {"from": "gpt", "value": "babi babo babu bacha"}]},
            {"conversations": [{"from": "human", "value": "bade"}]}]"#,
    );
    let mut w = wl(16, 77, 0.0, 0);
    w.dataset = Dataset::Sharegpt;
    let ps = PromptSet::build(&w, fixture(), Some(&p), 3, 0).unwrap();
    assert_eq!(ps[0].text, "baba babe");
    assert_eq!((ps[0].input_tokens, ps[0].output_tokens), (2, 4));
    assert_eq!((ps[1].input_tokens, ps[1].output_tokens), (1, 77));
    assert_eq!(ps[2], ps[0]);
    let bad = file(&dir, "bad.json", "[\n{\"conversations\": 3}\n]");
    let e = PromptSet::build(&w, fixture(), Some(&bad), 3, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.json:2:"), "{e}");
}

#[test]
fn truncation_in_tokenizer_json_does_not_cap_counts() {
    let mut t = fixture().clone();
    t.with_truncation(Some(tokenizers::TruncationParams {
        max_length: 8,
        ..Default::default()
    }))
    .unwrap();
    let ps = PromptSet::build(&wl(64, 8, 0.0, 0), &t, None, 5, 0).unwrap();
    assert!(ps.iter().all(|p| p.exact && p.input_tokens == 64));
    assert_eq!(
        tokens::count(&tokens::without_truncation(t), &ps[0].text),
        64
    );
}

/// Timing, not a check: `cargo test --release --lib workload::tests::speed -- --ignored --nocapture`.
#[test]
#[ignore]
fn speed_10k_prompts_of_512() {
    for (name, tok) in tokenizers() {
        let t0 = std::time::Instant::now();
        let set = PromptSet::load(&wl(512, 256, 0.0, 0), tok, None, 10_000, 0).unwrap();
        let dt = t0.elapsed();
        let exact = set.prompts.iter().filter(|p| p.exact).count();
        let texts: Vec<&str> = set.prompts.iter().map(|p| p.text.as_str()).collect();
        let t1 = std::time::Instant::now();
        tok.encode_batch_fast(texts, false).unwrap();
        let enc = t1.elapsed();
        let t2 = std::time::Instant::now();
        synth::WordPool::new(tok).unwrap();
        let pool = t2.elapsed();
        println!(
            "{name}: 10000 prompts x 512 tokens in {dt:.2?} ({exact} exact); one batch \
             re-encode of the result alone takes {enc:.2?}, the vocabulary scan {pool:.2?}"
        );
        assert_eq!(exact, 10_000);
    }
}

#[test]
fn adjust_loop_repairs_a_wrong_overhead_and_keeps_the_closest_when_impossible() {
    let render = |b: &str| -> Result<String, WorkloadError> { Ok(format!("baba babe {b} babi")) };
    let shaper = synth::Shaper {
        counter: Counter::Local(fixture()),
        render: &render,
        proven: false,
        fixed: 0,
    };
    let pool = synth::WordPool::new(fixture()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    // Claiming the template costs nothing forces every draft 3 tokens long: all repaired.
    let made = synth::synthesise(&pool, &shaper, &[10, 50, 4], 0, &mut rng).unwrap();
    let got: Vec<u32> = made.iter().map(|s| s.tokens).collect();
    assert_eq!(got, vec![10, 50, 4]);
    for s in &made {
        assert_eq!(tokens::count(fixture(), &s.text), s.tokens);
    }
    // 2 tokens cannot be reached (the template alone is 3): the 3-token text is kept.
    let made = synth::synthesise(&pool, &shaper, &[2], 0, &mut rng).unwrap();
    assert_eq!(made[0].tokens, 3);
    assert_eq!(made[0].text, "baba babe  babi");
}

fn plain(b: &str) -> Result<String, WorkloadError> {
    Ok(b.to_string())
}

#[test]
fn proven_counts_match_a_full_re_encode_and_give_identical_prompts() {
    for (name, tok) in tokenizers() {
        let pool = synth::WordPool::new(tok).unwrap();
        assert!(
            pool.composes(tok),
            "{name}: the proof covers the test tokenizers"
        );
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let targets: Vec<u32> = (0..700).map(|_| rng.gen_range(1..=300)).collect();
        let build = |proven: bool| {
            let shaper = synth::Shaper {
                counter: Counter::Local(tok),
                render: &plain,
                proven,
                fixed: 0,
            };
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
            synth::synthesise(&pool, &shaper, &targets, 0, &mut rng).unwrap()
        };
        let (fast, verified, again) = (build(true), build(false), build(true));
        let texts: Vec<&str> = fast.iter().map(|s| s.text.as_str()).collect();
        let counts: Vec<u32> = tok
            .encode_batch(texts.clone(), false)
            .unwrap()
            .iter()
            .map(|e| e.len() as u32)
            .collect();
        assert_eq!(counts, targets, "{name}: an independent re-encode agrees");
        let tokens: Vec<u32> = fast.iter().map(|s| s.tokens).collect();
        assert_eq!(tokens, targets, "{name}");
        for other in [&verified, &again] {
            let t: Vec<&str> = other.iter().map(|s| s.text.as_str()).collect();
            assert_eq!(
                t, texts,
                "{name}: same prompts for the same seed either way"
            );
        }
    }
}

#[test]
fn proof_is_refused_where_its_premises_fail() {
    use tokenizers::normalizers::{Lowercase, NormalizerWrapper};
    use tokenizers::pre_tokenizers::metaspace::Metaspace;
    use tokenizers::pre_tokenizers::PreTokenizerWrapper;
    use tokenizers::AddedToken;

    let pool = synth::WordPool::new(fixture()).unwrap();
    let mut t = fixture().clone();
    t.with_normalizer(Some(NormalizerWrapper::Lowercase(Lowercase)));
    assert!(!pool.composes(&t), "normalizer");
    let mut t = fixture().clone();
    t.with_pre_tokenizer(Some(PreTokenizerWrapper::Metaspace(Metaspace::default())));
    assert!(!pool.composes(&t), "metaspace");
    let mut t = fixture().clone();
    t.add_tokens(&[AddedToken::from("baba babe", false)]);
    assert!(!pool.composes(&t), "an added token spanning a space");

    let mut t = bpe().clone();
    let tokenizers::models::ModelWrapper::BPE(mut m) = t.get_model().clone() else {
        panic!("bpe model");
    };
    m.dropout = Some(0.1);
    t.with_model(tokenizers::models::ModelWrapper::BPE(m));
    let bpe_pool = synth::WordPool::new(bpe()).unwrap();
    assert!(bpe_pool.composes(bpe()));
    assert!(!bpe_pool.composes(&t), "bpe dropout");
}

/// [`bpe`] behind SmolLM2's pre-tokenizer: `Digits` (one digit a piece), then byte-level.
fn digits_bpe() -> &'static Tokenizer {
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::pre_tokenizers::digits::Digits;
    use tokenizers::pre_tokenizers::sequence::Sequence;
    use tokenizers::pre_tokenizers::PreTokenizerWrapper;
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = bpe().clone();
        t.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
            PreTokenizerWrapper::Digits(Digits::new(true)),
            PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
        ]))));
        t
    })
}

#[test]
fn a_digits_then_byte_level_sequence_is_proven_and_gives_the_prompts_a_re_encode_gives() {
    let tok = digits_bpe();
    let pool = synth::WordPool::new(tok).unwrap();
    assert!(pool.composes(tok), "Digits + ByteLevel, as SmolLM2's");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let targets: Vec<u32> = (0..700).map(|_| rng.gen_range(1..=300)).collect();
    let build = |proven: bool| {
        let shaper = synth::Shaper {
            counter: Counter::Local(tok),
            render: &plain,
            proven,
            fixed: 0,
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
        synth::synthesise(&pool, &shaper, &targets, 0, &mut rng).unwrap()
    };
    let (fast, verified) = (build(true), build(false));
    let texts: Vec<&str> = fast.iter().map(|s| s.text.as_str()).collect();
    let counts: Vec<u32> = tok
        .encode_batch(texts.clone(), false)
        .unwrap()
        .iter()
        .map(|e| e.len() as u32)
        .collect();
    assert_eq!(counts, targets, "an independent re-encode agrees");
    let v: Vec<&str> = verified.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(v, texts, "same prompts whether proven or re-encoded");
    // Through the prompt set too: the same prompts as with the proof off (a template that
    // renders the body unchanged turns it off).
    let w = wl(64, 8, 0.5, 5);
    let mut templated = w.clone();
    templated.prompt_template = Some("{{ prompt }}".into());
    let a = PromptSet::load(&w, tok, None, 300, 2).unwrap();
    let b = PromptSet::load(&templated, tok, None, 300, 2).unwrap();
    assert_eq!(a.prompts, b.prompts);
    assert!(a.prompts.iter().all(|p| p.exact));
}

#[test]
fn a_sequence_is_refused_unless_digits_beside_one_word_splitter_and_no_numeric_word() {
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::pre_tokenizers::digits::Digits;
    use tokenizers::pre_tokenizers::metaspace::Metaspace;
    use tokenizers::pre_tokenizers::sequence::Sequence;
    use tokenizers::pre_tokenizers::PreTokenizerWrapper as P;
    let with = |members: Vec<P>| {
        let mut t = bpe().clone();
        t.with_pre_tokenizer(Some(P::Sequence(Sequence::new(members))));
        t
    };
    let bl = || P::ByteLevel(ByteLevel::new(false, true, true));
    let pool = synth::WordPool::new(bpe()).unwrap();
    let own = |t: &Tokenizer| pool.composes(t);
    assert!(own(&with(vec![bl()])), "a sequence of the splitter alone");
    assert!(
        own(&with(vec![bl(), P::Digits(Digits::new(false))])),
        "digits after"
    );
    assert!(!own(&with(vec![bl(), bl()])), "two splitters");
    assert!(
        !own(&with(vec![P::Digits(Digits::new(true))])),
        "no splitter"
    );
    assert!(
        !own(&with(vec![
            P::Digits(Digits::new(true)),
            P::Metaspace(Metaspace::default())
        ])),
        "metaspace"
    );
    // A pool with a numeric word (one a tokenizer without `Digits` could have found):
    // `Digits` would split it, so the proof is refused for that pool, and only that.
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let numeric = synth::WordPool::from_words(words(&["ka", "x7"]), words(&["ka"]));
    assert!(numeric.composes(bpe()));
    assert!(!numeric.composes(digits_bpe()), "a numeric pool word");
    let letters = synth::WordPool::from_words(words(&["ka", "xy"]), words(&["ka"]));
    assert!(letters.composes(digits_bpe()));
}

#[test]
fn a_wrong_proof_is_caught_by_the_spot_check() {
    // Claiming proof for a template that adds tokens: the spot check sees every draft is
    // off, falls back to encoding, and the adjust loop makes all prompts exact.
    let render = |b: &str| -> Result<String, WorkloadError> { Ok(format!("baba {b}")) };
    let shaper = synth::Shaper {
        counter: Counter::Local(fixture()),
        render: &render,
        proven: true,
        fixed: 0,
    };
    let pool = synth::WordPool::new(fixture()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let targets = vec![20; 300];
    let made = synth::synthesise(&pool, &shaper, &targets, 0, &mut rng).unwrap();
    for s in &made {
        assert_eq!(s.tokens, 20);
        assert_eq!(tokens::count(fixture(), &s.text), 20, "{:?}", s.text);
    }
}

#[test]
fn input_length_server_shortens_the_text_by_the_servers_overhead() {
    use crate::scenario::types::InputLength;
    for (name, tok) in tokenizers() {
        let mut w = wl(64, 8, 0.25, 3);
        w.input_length = InputLength::Server;
        w.server_overhead = 7;
        let set = PromptSet::load(&w, tok, None, 40, 1).unwrap();
        let plain = PromptSet::load(&wl(64, 8, 0.25, 3), tok, None, 40, 1).unwrap();
        for (p, q) in set.prompts.iter().zip(&plain.prompts) {
            // The same drawn length is the server's prompt: text 7 tokens shorter.
            assert_eq!(p.input_tokens, q.input_tokens, "{name}");
            assert_eq!(tokens::count(tok, &p.text) + 7, p.input_tokens, "{name}");
            assert!(p.exact, "{name}");
        }
        // `text` ignores a measured overhead.
        let mut t = wl(64, 8, 0.25, 3);
        t.server_overhead = 7;
        assert_eq!(
            PromptSet::load(&t, tok, None, 40, 1).unwrap().prompts,
            plain.prompts
        );
        // No room left for text.
        w.server_overhead = 48;
        let e = PromptSet::load(&w, tok, None, 40, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("adds 48 tokens"), "{e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    std::fs::write(&path, "{\"prompt\": \"hello there\"}\n").unwrap();
    let mut w = wl(64, 8, 0.0, 0);
    w.dataset = Dataset::Jsonl;
    w.input_length = InputLength::Server;
    let e = PromptSet::load(&w, fixture(), Some(&path), 2, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("random dataset only"), "{e}");
}

/// `cache: cold`: a nonce changes every prompt's words, from the first token on (so no
/// prefix cache can match them), and nothing else: lengths, output lengths, the count.
/// Without a nonce the text is the seed's, the same on every build.
#[test]
fn a_nonce_changes_the_words_and_keeps_every_length() {
    for (name, tok) in tokenizers() {
        let base = wl(64, 32, 0.5, 9);
        let build = |nonce: Option<u64>| {
            let mut w = base.clone();
            w.cache_nonce = nonce;
            PromptSet::build(&w, tok, None, 120, 3).unwrap()
        };
        let (seedy, again) = (build(None), build(None));
        assert_eq!(seedy, again, "{name}: no nonce, the seed's text every time");
        let (a, b) = (build(Some(1)), build(Some(2)));
        assert_eq!(a, build(Some(1)), "{name}: a nonce is reproducible");
        for other in [&a, &b] {
            assert_eq!(other.len(), seedy.len());
            for (x, y) in other.iter().zip(&seedy) {
                assert_eq!(
                    (x.input_tokens, x.output_tokens, x.exact),
                    (y.input_tokens, y.output_tokens, y.exact),
                    "{name}"
                );
                assert_eq!(tokens::count(tok, &x.text), x.input_tokens, "{name}");
            }
        }
        // New words from the first token on: no prompt of one run shares its first two
        // tokens with the same prompt of another (a prefix cache matches from the start).
        let first2 = |t: &str| ids_of(tok, t).into_iter().take(2).collect::<Vec<u32>>();
        for (x, (y, z)) in a.iter().zip(b.iter().zip(&seedy)) {
            assert_ne!(first2(&x.text), first2(&y.text), "{name}");
            assert_ne!(first2(&x.text), first2(&z.text), "{name}");
        }
    }
}

fn ids_of(tok: &Tokenizer, text: &str) -> Vec<u32> {
    tok.encode(text, false).unwrap().get_ids().to_vec()
}

#[test]
fn repeat_nonces_differ_and_the_first_is_the_runs() {
    assert_eq!(repeat_nonce(7, 0), 7);
    let all: HashSet<u64> = (0..50).map(|r| repeat_nonce(7, r)).collect();
    assert_eq!(all.len(), 50);
    let w = |n: Option<u64>| Workload {
        cache_nonce: n,
        ..wl(8, 8, 0.0, 1)
    };
    assert_eq!(text_seed(&w(None)), 1, "no nonce: the scenario's seed");
    assert_ne!(text_seed(&w(Some(0))), text_seed(&w(Some(1))));
}

#[test]
fn batches_group_prompts_in_order_and_sum_their_tokens() {
    let p = |t: &str, n: u32, exact: bool| Prompt {
        text: t.into(),
        input_tokens: n,
        output_tokens: 7,
        exact,
        batch: Vec::new(),
        images: Vec::new(),
    };
    let all = vec![
        p("a", 3, true),
        p("b", 4, true),
        p("c", 5, false),
        p("d", 6, true),
        p("e", 1, true),
    ];
    let b = batched(all.clone(), 2);
    assert_eq!(b.len(), 3);
    assert_eq!(
        (
            b[0].text.as_str(),
            &b[0].batch[..],
            b[0].input_tokens,
            b[0].exact
        ),
        ("a", &["b".to_string()][..], 7, true)
    );
    assert_eq!((b[1].input_tokens, b[1].exact), (11, false));
    // A short last batch keeps what is left.
    assert_eq!(
        (b[2].text.as_str(), b[2].batch.len(), b[2].input_tokens),
        ("e", 0, 1)
    );
    assert_eq!(batched(all.clone(), 1), all);
    assert_eq!(batched(all.clone(), 0), all);
}

/// A set built through the run's [`WordPools`] is the set built without them, on the first
/// use (which builds the pool) and on the next ones (which reuse it), truncation included.
#[test]
fn pooled_sets_are_the_sets_built_without_the_pool() {
    let mut truncating = fixture().clone();
    truncating
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: 8,
            ..Default::default()
        }))
        .unwrap();
    for (name, tok) in [
        ("fixture", fixture()),
        ("bpe", bpe()),
        ("truncating", &truncating),
    ] {
        let pools = WordPools::default();
        assert!(format!("{pools:?}").contains("built: false"));
        for (len, rung) in [(16, 0), (40, 1), (7, 2)] {
            let w = wl(len, 8, 0.3, 9);
            let plain = PromptSet::load_with(&w, Tokens::Local(tok), None, 50, rung).unwrap();
            let pooled =
                PromptSet::load_with(&w, Tokens::Pooled(tok, &pools), None, 50, rung).unwrap();
            assert_eq!(plain.prompts, pooled.prompts, "{name} len {len}");
            assert_eq!(plain.notes, pooled.notes, "{name} len {len}");
            assert!(format!("{pools:?}").contains("built: true"), "{name}");
        }
    }
}

/// A real tokenizer's proof against a full re-encode, at a rung's size: the tokenizer.json in
/// `LADDER_PROOF_TOKENIZER` (e.g. SmolLM2's), 50,000 prompts of 256 tokens built with the
/// proof and without it (every draft re-encoded) must be the same texts, and an independent
/// re-encode must give 256 for each. Needs the file, so run by hand:
/// `LADDER_PROOF_TOKENIZER=~/.cache/ladder/smollm2-0.1.2/tokenizer.json cargo test --release --lib workload::tests::real_tokenizer -- --ignored --nocapture`.
#[test]
#[ignore]
fn real_tokenizer_proof_matches_a_re_encode() {
    let path = std::env::var("LADDER_PROOF_TOKENIZER").expect("set LADDER_PROOF_TOKENIZER");
    let tok = tokens::load(Path::new(&path)).unwrap();
    let pool = synth::WordPool::new(&tok).unwrap();
    assert!(pool.composes(&tok), "the proof covers {path}");
    let targets = vec![256u32; 50_000];
    let build = |proven: bool| {
        let shaper = synth::Shaper {
            counter: Counter::Local(&tok),
            render: &plain,
            proven,
            fixed: 0,
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let t0 = std::time::Instant::now();
        let made = synth::synthesise(&pool, &shaper, &targets, 0, &mut rng).unwrap();
        (made, t0.elapsed())
    };
    let ((fast, t_fast), (slow, t_slow)) = (build(true), build(false));
    println!("proven {t_fast:.2?}, re-encoded {t_slow:.2?}");
    assert!(fast
        .iter()
        .zip(&slow)
        .all(|(a, b)| a.text == b.text && a.tokens == b.tokens));
    let texts: Vec<&str> = fast.iter().map(|s| s.text.as_str()).collect();
    let counts = tok.encode_batch_fast(texts, false).unwrap();
    assert!(counts.iter().all(|e| e.len() == 256));
}
