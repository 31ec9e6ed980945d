//! Shared prefixes, checked on token ids: the shipped word-level fixture and a byte-level BPE
//! tokenizer trained in-process (no downloads), with and without a prompt template.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use super::*;
use crate::scenario::types::SharedPrefix;

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

fn wl(input: u32, range_ratio: f64, sp: SharedPrefix) -> Workload {
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
        shared_prefix: Some(sp),
        sessions: None,
        prompt_pool: None,
    }
}

fn sp(prefix_tokens: u32, groups: u32, prompts_per_group: u32) -> SharedPrefix {
    SharedPrefix {
        prefix_tokens,
        groups,
        prompts_per_group,
        input_tokens_include_prefix: true,
        repeat: 0,
    }
}

fn ids(tok: &Tokenizer, text: &str) -> Vec<u32> {
    tok.encode(text, false).unwrap().get_ids().to_vec()
}

fn common(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Every prompt of a group starts with the same `prefix` token ids, prompts of different
/// groups do not share those ids, each prompt is exactly `total` tokens long, and every
/// prompt differs from the others of its group right after the prefix region ends.
fn check_groups(name: &str, tok: &Tokenizer, set: &PromptSet, prefix: usize, groups: u32) {
    assert_eq!(set.prefix_groups.len(), set.prompts.len(), "{name}");
    let mut by_group: BTreeMap<u32, Vec<Vec<u32>>> = BTreeMap::new();
    for (p, &g) in set.prompts.iter().zip(&set.prefix_groups) {
        let t = ids(tok, &p.text);
        assert_eq!(t.len() as u32, p.input_tokens, "{name}: counted length");
        assert!(p.exact, "{name}: {} tokens", p.input_tokens);
        by_group.entry(g).or_default().push(t);
    }
    assert_eq!(by_group.len() as u32, groups, "{name}: every group is used");
    let mut heads = HashSet::new();
    for (g, members) in &by_group {
        let head = &members[0][..prefix];
        for m in members {
            assert_eq!(
                &m[..prefix],
                head,
                "{name}: group {g} shares its prefix ids"
            );
        }
        let distinct: HashSet<&Vec<u32>> = members.iter().collect();
        assert_eq!(distinct.len(), members.len(), "{name}: suffixes differ");
        assert!(
            heads.insert(head.to_vec()),
            "{name}: group {g}'s prefix is its own"
        );
    }
    // Across groups the shared leading run is far shorter than a prefix.
    let firsts: Vec<&Vec<u32>> = by_group.values().map(|m| &m[0]).collect();
    for a in &firsts {
        for b in &firsts {
            if !std::ptr::eq(*a, *b) {
                assert!(
                    common(a, b) < prefix / 2,
                    "{name}: groups share {}",
                    common(a, b)
                );
            }
        }
    }
}

#[test]
fn groups_share_exactly_their_prefix_token_ids() {
    for (name, tok) in [("word-level fixture", fixture()), ("byte-level BPE", bpe())] {
        let w = wl(96, 0.0, sp(64, 4, 10));
        let set = PromptSet::load(&w, tok, None, 40, 0).unwrap();
        assert!(set.notes.is_empty(), "{name}: {:?}", set.notes);
        check_groups(name, tok, &set, 64, 4);
        // The requested share: 64 of 96 tokens of every prompt are its group's.
        for p in &set.prompts {
            assert_eq!(p.input_tokens, 96);
        }
        // With a range, lengths vary and the prefix stays whole.
        let w = wl(128, 0.25, sp(64, 3, 20));
        let set = PromptSet::load(&w, tok, None, 60, 1).unwrap();
        check_groups(name, tok, &set, 64, 3);
        let lens: HashSet<u32> = set.prompts.iter().map(|p| p.input_tokens).collect();
        assert!(lens.len() > 5, "{name}: lengths vary");
        assert!(set.prompts.iter().all(|p| p.input_tokens > 64));
    }
}

#[test]
fn a_template_keeps_the_shared_prefix_after_its_own_text() {
    for (name, tok) in [("word-level fixture", fixture()), ("byte-level BPE", bpe())] {
        let mut w = wl(80, 0.0, sp(32, 2, 8));
        w.prompt_template = Some("bache {{ prompt }}".into());
        let set = PromptSet::load(&w, tok, None, 16, 0).unwrap();
        for p in &set.prompts {
            assert!(p.text.starts_with("bache "), "{name}");
        }
        // The template's own tokens come first, then the group's 32 tokens.
        let own = ids(tok, "bache").len();
        check_groups(name, tok, &set, 32 + own, 2);
    }
}

#[test]
fn per_request_groups_interleave_and_cycle_in_send_order() {
    let tok = fixture();
    let w = wl(40, 0.0, sp(16, 5, 4));
    let set = PromptSet::load(&w, tok, None, 50, 0).unwrap();
    // 20 distinct prompts, each group 4 times, then the same order again.
    let first: Vec<u32> = set.prefix_groups[..20].to_vec();
    for g in 0..5 {
        assert_eq!(first.iter().filter(|&&x| x == g).count(), 4, "group {g}");
    }
    assert_eq!(&set.prefix_groups[20..40], &first[..]);
    assert_eq!(set.prompts[3], set.prompts[23]);
    assert_ne!(
        first,
        (0..20).map(|i| i / 4).collect::<Vec<_>>(),
        "groups interleave"
    );
    assert!(set.notes.iter().any(|n| n.contains("sent again")));
    // Deterministic, and every rung gets fresh prefixes.
    let again = PromptSet::load(&w, tok, None, 50, 0).unwrap();
    assert_eq!(again.prompts, set.prompts);
    assert_eq!(again.prefix_groups, set.prefix_groups);
    let other = PromptSet::load(&w, tok, None, 50, 1).unwrap();
    let a = ids(tok, &set.prompts[0].text);
    assert!(other
        .prompts
        .iter()
        .all(|p| common(&ids(tok, &p.text), &a) < 16));
    // A repeat gets prefixes of its own, in the same shape.
    let mut r = w.clone();
    r.shared_prefix.as_mut().unwrap().repeat = 1;
    let rep = PromptSet::load(&r, tok, None, 50, 0).unwrap();
    assert_eq!(rep.prefix_groups, set.prefix_groups);
    for (x, y) in rep.prompts.iter().zip(&set.prompts) {
        assert_eq!(x.input_tokens, y.input_tokens);
        assert!(common(&ids(tok, &x.text), &ids(tok, &y.text)) < 16);
    }
    // A rung with fewer requests than prompts builds only those it sends.
    let few = PromptSet::load(&w, tok, None, 3, 0).unwrap();
    assert_eq!(few.prompts.len(), 3);
    assert_eq!(few.prefix_groups, set.prefix_groups[..3]);
}

#[test]
fn input_tokens_can_count_the_suffix_only() {
    let tok = fixture();
    let mut s = sp(50, 2, 3);
    s.input_tokens_include_prefix = false;
    let set = PromptSet::load(&wl(10, 0.0, s), tok, None, 6, 0).unwrap();
    for p in &set.prompts {
        assert_eq!(p.input_tokens, 60);
        assert_eq!(tokens::count(tok, &p.text), 60);
    }
    check_groups("suffix", tok, &set, 50, 2);
}

#[test]
fn settings_without_room_or_groups_are_refused_with_their_key() {
    let tok = fixture();
    let err = PromptSet::load(&wl(64, 0.0, sp(64, 2, 2)), tok, None, 4, 0).unwrap_err();
    match err {
        WorkloadError::Setting { setting, message } => {
            assert_eq!(setting, "workload.shared_prefix.prefix_tokens");
            assert!(message.contains("input_tokens_include_prefix"), "{message}");
        }
        other => panic!("{other}"),
    }
    let err = PromptSet::load(&wl(64, 0.0, sp(8, 0, 2)), tok, None, 4, 0).unwrap_err();
    assert!(
        matches!(err, WorkloadError::Setting { setting, .. } if setting == "workload.shared_prefix.groups")
    );
    let mut w = wl(64, 0.0, sp(8, 2, 2));
    w.dataset = Dataset::Jsonl;
    let err = PromptSet::load(&w, tok, Some(Path::new("x.jsonl")), 4, 0).unwrap_err();
    assert!(err.to_string().contains("random"), "{err}");
}

/// `cache: cold`: a run's nonce makes new prefixes and suffixes (groups still share their
/// prefix within the run), with the same groups, order and lengths as without it.
#[test]
fn a_nonce_makes_new_prefixes_that_groups_still_share() {
    for (name, tok) in [("fixture", fixture()), ("bpe", bpe())] {
        let build = |nonce: Option<u64>| {
            let mut w = wl(48, 0.0, sp(32, 3, 4));
            w.cache_nonce = nonce;
            PromptSet::load(&w, tok, None, 12, 1).unwrap()
        };
        let (plain, a, b) = (build(None), build(Some(11)), build(Some(12)));
        for set in [&plain, &a, &b] {
            check_groups(name, tok, set, 32, 3);
            assert_eq!(set.prefix_groups, plain.prefix_groups, "{name}: same order");
            let lens: Vec<u32> = set.prompts.iter().map(|p| p.input_tokens).collect();
            assert!(lens.iter().all(|&l| l == 48), "{name}: {lens:?}");
        }
        for (x, y) in a.prompts.iter().zip(&b.prompts) {
            let shared = common(&ids(tok, &x.text), &ids(tok, &y.text));
            assert!(shared < 2, "{name}: two runs share {shared} leading tokens");
        }
        for (x, y) in a.prompts.iter().zip(&plain.prompts) {
            assert!(common(&ids(tok, &x.text), &ids(tok, &y.text)) < 2, "{name}");
        }
    }
}
