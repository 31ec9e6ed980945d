//! Random prompts that re-tokenize to an exact length.
//!
//! vLLM samples random token ids, decodes them and re-encodes, which drifts because decoded
//! ids merge differently. We instead sample whole *words*: vocabulary entries whose decoded
//! text, written with a leading space, encodes back to exactly one token. With a
//! whitespace-splitting pre-tokenizer (word-level, byte-level BPE, SentencePiece / Metaspace)
//! each space-separated word is then tokenized on its own, so `n` words give `n` tokens and
//! the first draft is usually exact after a single batched encode. Drafts are re-encoded, and
//! any mismatch (template boundaries, unusual tokenizers) is fixed by a short trim / append /
//! swap loop that keeps the closest text when it cannot be made exact.
//!
//! Re-encoding is nearly all of the cost (tokenizers' pipeline allocates per byte and per
//! split), so it is skipped where one token per word is provable: see [`WordPool::composes`].

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use rand::seq::SliceRandom;
use rand::Rng;
use tokenizers::models::ModelWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::Tokenizer;

use super::WorkloadError;
use crate::tokens::Counter;

/// Trim/append rounds before switching to swapping the last word.
const ADJUST_ROUNDS: usize = 8;
/// Last-word swaps tried before keeping the closest text.
const SWAP_TRIES: usize = 32;
/// Fresh drafts tried when a prompt duplicates an earlier one.
const DEDUP_TRIES: usize = 8;
/// Prompts drafted and batch-encoded together.
const CHUNK: usize = 256;
/// Leading prompts always re-encoded, even when [`WordPool::composes`] holds: a cheap check
/// that the proof's premises match what the tokenizer really does.
const SPOT_CHECK: usize = 16;

/// Words that are one token each in context, split by where they may appear.
pub(crate) struct WordPool {
    /// Single-token words after a space (` word` is one token).
    rest: Vec<String>,
    /// Subset of `rest` that is also one token at the very start of a text.
    first: Vec<String>,
    /// Token ids a prompt must never contain (added/special tokens and the unknown token).
    forbidden: HashSet<u32>,
    /// `first` was checked bare (not a fallback copy of `rest`).
    first_checked: bool,
}

fn tok_err(e: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::Tokenizer {
        message: e.to_string(),
    }
}

/// `<s>`, `</s>`, `<|endoftext|>`, `[CLS]`, `<unk>`: names that are special by convention even
/// when a tokenizer.json forgets to list them as added tokens.
fn looks_special(token: &str) -> bool {
    let n = token.chars().count();
    if n < 3 {
        return false;
    }
    if token.starts_with('<') && token.ends_with('>') {
        return true;
    }
    token.starts_with('[')
        && token.ends_with(']')
        && token[1..token.len() - 1]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_')
}

fn unk_token(tok: &Tokenizer) -> Option<String> {
    match tok.get_model() {
        ModelWrapper::BPE(m) => m.unk_token.clone(),
        ModelWrapper::WordPiece(m) => Some(m.unk_token.clone()),
        ModelWrapper::WordLevel(m) => Some(m.unk_token.clone()),
        ModelWrapper::Unigram(_) => None,
    }
}

impl WordPool {
    /// Scan the vocabulary once (in id order, so the pool is deterministic).
    pub(crate) fn new(tok: &Tokenizer) -> Result<Self, WorkloadError> {
        let added = tok.get_added_tokens_decoder();
        let mut forbidden: HashSet<u32> = added.keys().copied().collect();
        if let Some(id) = unk_token(tok).and_then(|u| tok.token_to_id(&u)) {
            forbidden.insert(id);
        }
        let added_texts: Vec<String> = added
            .values()
            .map(|t| t.content.clone())
            .filter(|c| !c.is_empty())
            .collect();

        let mut seen = HashSet::new();
        let mut cands: Vec<String> = Vec::new();
        for id in 0..tok.get_vocab_size(false) as u32 {
            if forbidden.contains(&id) {
                continue;
            }
            match tok.id_to_token(id) {
                Some(raw) if !looks_special(&raw) => {}
                _ => continue,
            }
            let Ok(piece) = tok.decode(&[id], false) else {
                continue;
            };
            let w = piece.trim();
            if w.is_empty()
                || looks_special(w)
                || w.chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '\u{FFFD}')
                || added_texts.iter().any(|a| w.contains(a.as_str()))
            {
                continue;
            }
            if seen.insert(w.to_string()) {
                cands.push(w.to_string());
            }
        }

        let spaced: Vec<String> = cands.iter().map(|w| format!(" {w}")).collect();
        let spaced = tok.encode_batch_fast(spaced, false).map_err(tok_err)?;
        let bare = tok
            .encode_batch_fast(cands.clone(), false)
            .map_err(tok_err)?;
        let single = |ids: &[u32]| ids.len() == 1 && !forbidden.contains(&ids[0]);
        let mut rest = Vec::new();
        let mut first = Vec::new();
        for ((w, s), b) in cands.into_iter().zip(&spaced).zip(&bare) {
            if single(s.get_ids()) {
                if single(b.get_ids()) {
                    first.push(w.clone());
                }
                rest.push(w);
            }
        }
        if rest.is_empty() {
            return Err(WorkloadError::Tokenizer {
                message: "no vocabulary entry encodes to a single token after a space, so \
                          random prompts cannot be synthesised with this tokenizer; use a \
                          jsonl or sharegpt dataset instead"
                    .into(),
            });
        }
        let first_checked = !first.is_empty();
        if !first_checked {
            first = rest.clone();
        }
        Ok(WordPool {
            rest,
            first,
            forbidden,
            first_checked,
        })
    }

    /// A pool of words already known to be one token after a space (`rest`), of which
    /// `first` are also one token at the start of a text (when empty, `rest` stands in).
    pub(crate) fn from_words(rest: Vec<String>, first: Vec<String>) -> WordPool {
        let first_checked = !first.is_empty();
        WordPool {
            first: if first_checked { first } else { rest.clone() },
            rest,
            forbidden: HashSet::new(),
            first_checked,
        }
    }

    /// Whether `w1 w2 … wn` (pool words joined by single spaces, no template) provably encodes
    /// to exactly `n` tokens with `tok`, so drafts need no re-encode.
    ///
    /// The proof: (1) no normalizer, and no added token contains whitespace (pool words contain
    /// none of them), so the text reaches the pre-tokenizer whole. (2) The pre-tokenizer splits
    /// the joined text into the concatenation of each word's own pieces: `WhitespaceSplit`
    /// and `Whitespace` (`\w+|[^\w\s]+`) never match across a space; byte-level's fixed
    /// GPT-2 regex, matching leftmost-first from the space before a word, cannot consume the
    /// space after it (no branch takes whitespace after its optional leading space, and its
    /// `\s+` branches cannot match a space followed by a word), so its pieces are `w1`,
    /// ` w2`, …, ` wn`, the very strings the pool checked in isolation. (3) The model tokenizes
    /// each piece on its own as a pure function (word-level, word-piece, BPE without dropout),
    /// and the pool checked each piece gives one allowed token. (4) With special tokens off,
    /// no post-processor (or byte-level's, which only trims offsets) adds tokens. Anything
    /// else (templates, Metaspace, custom split regexes, normalizers) is re-encoded. A
    /// `Sequence` of one such splitter and `Digits` counts as the splitter alone (see
    /// [`WordPool::sequence_splits_by_word`]).
    pub(crate) fn composes(&self, tok: &Tokenizer) -> bool {
        let pre = match tok.get_pre_tokenizer() {
            Some(PreTokenizerWrapper::Sequence(seq)) => self.sequence_splits_by_word(seq),
            Some(p) => splits_by_word(p),
            None => false,
        };
        let model = match tok.get_model() {
            ModelWrapper::WordLevel(_) | ModelWrapper::WordPiece(_) => true,
            ModelWrapper::BPE(m) => m.dropout.is_none(),
            ModelWrapper::Unigram(_) => false,
        };
        let post = matches!(
            tok.get_post_processor(),
            None | Some(PostProcessorWrapper::ByteLevel(_))
        );
        let added_ok = tok
            .get_added_tokens_decoder()
            .values()
            .all(|t| !t.content.chars().any(char::is_whitespace));
        self.first_checked
            && pre
            && model
            && post
            && added_ok
            && tok.get_normalizer().is_none()
            && tok.get_truncation().is_none()
            && tok.get_padding().is_none()
    }

    /// A `Sequence` pre-tokenizer splits pool words joined by spaces as its one word
    /// splitter alone does when its other members are `Digits` and no pool word has a
    /// numeric character: `Digits` splits at numeric characters only (`char::is_numeric`,
    /// either mode), so on such a text it leaves every piece whole. SmolLM2's and other
    /// StarCoder-family tokenizers are `Digits` then byte-level. A tokenizer built with
    /// `Digits` keeps numeric words out of the pool anyway (` 7` is two pieces, ` ` and `7`);
    /// the check makes the proof not depend on which tokenizer built the pool.
    fn sequence_splits_by_word(
        &self,
        seq: &tokenizers::pre_tokenizers::sequence::Sequence,
    ) -> bool {
        let members: &[PreTokenizerWrapper] = seq.as_ref();
        let (digits, splitters): (Vec<_>, Vec<_>) = members
            .iter()
            .partition(|p| matches!(p, PreTokenizerWrapper::Digits(_)));
        let numeric = || {
            self.rest
                .iter()
                .chain(&self.first)
                .any(|w| w.chars().any(char::is_numeric))
        };
        splitters.len() == 1 && splits_by_word(splitters[0]) && (digits.is_empty() || !numeric())
    }

    /// Token ids a synthesised prompt must not contain.
    pub(crate) fn forbidden(&self) -> &HashSet<u32> {
        &self.forbidden
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rest.len()
    }

    /// `n` words that may stand anywhere in a text, the first one too (a trace's prefix
    /// block, which may start a prompt or follow another block).
    pub(crate) fn block_words(&self, n: usize, rng: &mut impl Rng) -> Vec<&str> {
        let mut words = Vec::with_capacity(n);
        self.push_words(&mut words, n, rng);
        words
    }

    fn push_words<'p>(&'p self, words: &mut Vec<&'p str>, n: usize, rng: &mut impl Rng) {
        for _ in 0..n {
            let pool = if words.is_empty() {
                &self.first
            } else {
                &self.rest
            };
            words.push(pool.choose(rng).expect("pool is not empty"));
        }
    }
}

/// Whether `p` on its own splits a text of words joined by single spaces into the words'
/// own pieces (step (2) of [`WordPool::composes`]'s proof).
fn splits_by_word(p: &PreTokenizerWrapper) -> bool {
    match p {
        PreTokenizerWrapper::WhitespaceSplit(_) | PreTokenizerWrapper::Whitespace(_) => true,
        PreTokenizerWrapper::ByteLevel(b) => b.use_regex,
        _ => false,
    }
}

/// Wraps the synthesised body into the final text and counts tokens.
pub(crate) struct Shaper<'a> {
    pub counter: Counter<'a>,
    pub render: &'a dyn Fn(&str) -> Result<String, WorkloadError>,
    /// [`WordPool::composes`] holds and `render` only puts `fixed` tokens of pool words
    /// before the draft (nothing for the identity, a group's prefix for a shared prefix): a
    /// draft of `n` words has `fixed + n` tokens without re-encoding (after the spot check).
    pub proven: bool,
    /// Tokens `render` puts before a proven draft (see `proven`).
    pub fixed: u32,
}

impl Shaper<'_> {
    fn count(&self, text: &str) -> Result<u32, WorkloadError> {
        Ok(self.counter.count(text)?)
    }

    fn counts(&self, texts: &[String]) -> Result<Vec<u32>, WorkloadError> {
        Ok(self.counter.counts(texts)?)
    }
}

/// One finished random prompt.
pub(crate) struct Synthesised {
    pub text: String,
    pub tokens: u32,
}

/// Build `targets.len()` distinct prompts whose final (templated) text has `targets[i]` tokens.
/// `overhead` is the template's estimated own token count.
pub(crate) fn synthesise(
    pool: &WordPool,
    shaper: &Shaper<'_>,
    targets: &[u32],
    overhead: u32,
    rng: &mut impl Rng,
) -> Result<Vec<Synthesised>, WorkloadError> {
    let body_len = |t: u32| t.saturating_sub(overhead) as usize;
    let mut seen = HashSet::with_capacity(targets.len());
    let mut out = Vec::with_capacity(targets.len());
    let mut proven = shaper.proven && overhead == shaper.fixed;
    // Chunks bound the memory held in drafts while keeping batch encodes large enough to use
    // every core; the RNG is consumed in the same order whatever the chunk sizes, and whether
    // counts are proven or encoded (they agree), so prompts depend on the seed only.
    let mut start = 0;
    while start < targets.len() {
        let spot_check = start == 0;
        let size = if spot_check { SPOT_CHECK } else { CHUNK };
        let chunk = &targets[start..(start + size).min(targets.len())];
        start += chunk.len();
        let mut drafts: Vec<Vec<&str>> = Vec::with_capacity(chunk.len());
        let mut texts = Vec::with_capacity(chunk.len());
        for &t in chunk {
            let mut words = Vec::with_capacity(body_len(t) + 4);
            pool.push_words(&mut words, body_len(t), rng);
            texts.push((shaper.render)(&words.join(" "))?);
            drafts.push(words);
        }
        let counts = if proven && !spot_check {
            drafts
                .iter()
                .map(|w| w.len() as u32 + shaper.fixed)
                .collect()
        } else {
            let counts = shaper.counts(&texts)?;
            // A premise of the proof does not hold after all: verify everything.
            proven &= counts
                .iter()
                .zip(&drafts)
                .all(|(&n, w)| n as usize == w.len() + shaper.fixed as usize);
            counts
        };
        for (((mut words, text), n), &target) in
            drafts.into_iter().zip(texts).zip(counts).zip(chunk)
        {
            let mut best = if n == target {
                Synthesised { text, tokens: n }
            } else {
                adjust(pool, shaper, &mut words, target, rng)?
            };
            let mut tries = 0;
            while !seen.insert(hash(&best.text)) && tries < DEDUP_TRIES {
                // Tiny lengths over a small vocabulary can collide; draw again a few times.
                tries += 1;
                words.clear();
                pool.push_words(&mut words, body_len(target), rng);
                let again = adjust(pool, shaper, &mut words, target, rng)?;
                if again.tokens.abs_diff(target) <= best.tokens.abs_diff(target) {
                    best = again;
                }
            }
            out.push(best);
        }
    }
    Ok(out)
}

fn hash(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// Trim or append words until the final text has `target` tokens, then try swapping the last
/// word; returns the closest text seen.
fn adjust<'p>(
    pool: &'p WordPool,
    shaper: &Shaper<'_>,
    words: &mut Vec<&'p str>,
    target: u32,
    rng: &mut impl Rng,
) -> Result<Synthesised, WorkloadError> {
    let mut best: Option<Synthesised> = None;
    let consider = |text: String, n: u32, best: &mut Option<Synthesised>| {
        if best
            .as_ref()
            .is_none_or(|b| n.abs_diff(target) < b.tokens.abs_diff(target))
        {
            *best = Some(Synthesised { text, tokens: n });
        }
        n == target
    };
    for _ in 0..ADJUST_ROUNDS {
        let text = (shaper.render)(&words.join(" "))?;
        let n = shaper.count(&text)?;
        if consider(text, n, &mut best) {
            return Ok(best.expect("just set"));
        }
        if n > target {
            if words.is_empty() {
                break;
            }
            let drop = ((n - target) as usize).min(words.len());
            words.truncate(words.len() - drop);
        } else {
            pool.push_words(words, (target - n) as usize, rng);
        }
    }
    for _ in 0..SWAP_TRIES {
        words.pop();
        pool.push_words(words, 1, rng);
        let text = (shaper.render)(&words.join(" "))?;
        let n = shaper.count(&text)?;
        if consider(text, n, &mut best) {
            break;
        }
    }
    Ok(best.expect("at least one candidate"))
}
