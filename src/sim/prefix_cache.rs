//! The simulator's prefix cache (`sim.prefix_caching`), block-granular like vLLM's
//! automatic prefix caching: a prompt's tokens are cut into blocks of
//! `prefix_cache_block_size`, each identified by a hash chained over every token before it,
//! so a block matches only when the whole prompt up to its end matches. A request's leading
//! blocks found in the cache are not prefilled again; its blocks enter the cache once its
//! prefill is done. Capacity is bounded (`prefix_cache_tokens`), least recently used blocks
//! are evicted first.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// A bounded LRU set of block hashes.
pub(crate) struct PrefixCache {
    block: u32,
    capacity: usize,
    /// Block hash → the tick of its last use.
    used: HashMap<u64, u64>,
    /// Tick of last use → block hash, oldest first.
    order: BTreeMap<u64, u64>,
    tick: u64,
}

impl PrefixCache {
    /// A cache of `capacity_tokens / block` blocks of `block` tokens (at least one).
    pub(crate) fn new(block: u32, capacity_tokens: u32) -> PrefixCache {
        let block = block.max(1);
        PrefixCache {
            block,
            capacity: (capacity_tokens / block).max(1) as usize,
            used: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    fn touch(&mut self, h: u64) {
        self.tick += 1;
        if let Some(old) = self.used.insert(h, self.tick) {
            self.order.remove(&old);
        }
        self.order.insert(self.tick, h);
    }

    /// Tokens of a prompt of `prompt_tokens` tokens (with block hashes `blocks`) the cache
    /// already holds: its leading cached blocks, as vLLM counts them, at most the whole
    /// blocks before the prompt's last token (that one is always computed). The blocks hit
    /// become the most recently used.
    pub(crate) fn lookup(&mut self, blocks: &[u64], prompt_tokens: u32) -> u32 {
        let most = (prompt_tokens.saturating_sub(1) / self.block) as usize;
        let hits = blocks
            .iter()
            .take(most)
            .take_while(|h| self.used.contains_key(h))
            .count();
        for &h in blocks[..hits].iter().rev() {
            self.touch(h);
        }
        hits as u32 * self.block
    }

    /// Store a prefilled prompt's blocks, evicting the least recently used beyond capacity.
    /// Blocks are touched last to first, so a prompt's leading blocks are evicted last (as
    /// vLLM frees a request's blocks tail first): a prompt longer than the cache keeps its
    /// head, the part later prompts can share.
    pub(crate) fn insert(&mut self, blocks: &[u64]) {
        for &h in blocks.iter().rev() {
            self.touch(h);
        }
        while self.used.len() > self.capacity {
            let Some((_, h)) = self.order.pop_first() else {
                break;
            };
            self.used.remove(&h);
        }
    }

    /// Blocks held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.used.len()
    }
}

/// The chained hashes of the whole blocks of a prompt's tokens (the simulator's tokens:
/// whitespace-separated words, or token ids).
pub(crate) fn block_hashes<'a>(tokens: impl Iterator<Item = Token<'a>>, block: u32) -> Vec<u64> {
    let block = block.max(1) as usize;
    let mut out = Vec::new();
    let mut h = DefaultHasher::new();
    let mut n = 0;
    for t in tokens {
        t.hash(&mut h);
        n += 1;
        if n == block {
            let id = h.finish();
            out.push(id);
            // The next block's hash starts from this one: a chain over the whole prefix.
            h = DefaultHasher::new();
            id.hash(&mut h);
            n = 0;
        }
    }
    out
}

/// One prompt token as the simulator sees it.
#[derive(Hash)]
pub(crate) enum Token<'a> {
    /// A whitespace-separated word.
    Word(&'a str),
    /// A token id of a pre-tokenized prompt.
    Id(u64),
}

/// The tokens of a request body's prompt: the words of `prompt` (strings or token-id lists)
/// or of every message's `content`, in order. Bodies the handler refuses yield what they can.
pub(crate) fn prompt_tokens(body: &Value, chat: bool) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    if chat {
        if let Some(Value::Array(msgs)) = body.get("messages") {
            for m in msgs {
                match m.get("content") {
                    Some(Value::String(s)) => out.extend(s.split_whitespace().map(Token::Word)),
                    Some(Value::Array(parts)) => {
                        for p in parts {
                            if let Some(Value::String(s)) = p.get("text") {
                                out.extend(s.split_whitespace().map(Token::Word));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        return out;
    }
    fn item<'a>(it: &'a Value, out: &mut Vec<Token<'a>>) {
        match it {
            Value::String(s) => out.extend(s.split_whitespace().map(Token::Word)),
            Value::Number(n) => out.push(Token::Id(n.as_u64().unwrap_or(0))),
            Value::Array(ids) => out.extend(ids.iter().map(|i| Token::Id(i.as_u64().unwrap_or(0)))),
            _ => {}
        }
    }
    match body.get("prompt") {
        Some(Value::Array(items)) => {
            for it in items {
                item(it, &mut out);
            }
        }
        Some(v) => item(v, &mut out),
        None => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(text: &str, block: u32) -> Vec<u64> {
        block_hashes(text.split_whitespace().map(Token::Word), block)
    }

    #[test]
    fn blocks_chain_over_the_whole_prefix() {
        let a = blocks("a b c d e f g", 2);
        assert_eq!(a.len(), 3, "the last, partial block is not hashed");
        let b = blocks("a b c d x y", 2);
        assert_eq!(a[..2], b[..2]);
        assert_ne!(a[2], b[2]);
        // The same words in a block after a different prefix are a different block.
        let c = blocks("z z c d", 2);
        assert_ne!(a[1], c[1]);
    }

    #[test]
    fn a_hit_covers_leading_cached_blocks_and_never_the_last_token() {
        let mut c = PrefixCache::new(2, 100);
        let a = blocks("a b c d e f", 2);
        assert_eq!(c.lookup(&a, 6), 0, "cold");
        c.insert(&a);
        // The same prompt again: blocks before the last token only (4 of 6 tokens).
        assert_eq!(c.lookup(&a, 6), 4);
        // A prompt sharing the first two blocks.
        let b = blocks("a b c d x y z", 2);
        assert_eq!(c.lookup(&b, 7), 4);
        // One differing in the first block shares nothing, even where later words match.
        let d = blocks("q b c d e f", 2);
        assert_eq!(c.lookup(&d, 6), 0);
    }

    #[test]
    fn least_recently_used_blocks_are_evicted_first() {
        // Room for 4 blocks of 2 tokens.
        let mut c = PrefixCache::new(2, 8);
        let a = blocks("a1 a2 a3 a4 a5", 2);
        let b = blocks("b1 b2 b3 b4 b5", 2);
        c.insert(&a);
        c.insert(&b);
        assert_eq!(c.len(), 4);
        // Using `a` makes `b` the oldest; a third prompt then evicts `b`.
        assert_eq!(c.lookup(&a, 5), 4);
        let d = blocks("d1 d2 d3 d4 d5", 2);
        c.insert(&d);
        assert_eq!(c.len(), 4);
        assert_eq!(c.lookup(&a, 5), 4, "a was used last, so kept");
        assert_eq!(c.lookup(&b, 5), 0, "b was evicted");
        assert_eq!(c.lookup(&d, 5), 4);
        // A prompt longer than the cache keeps its head.
        let long = blocks("l1 l2 l3 l4 l5 l6 l7 l8 l9 l10 l11", 2);
        c.insert(&long);
        assert_eq!(c.len(), 4);
        assert_eq!(c.lookup(&long, 11), 8);
    }

    #[test]
    fn prompts_of_both_apis_give_their_words_or_ids() {
        let chat: Value = serde_json::json!({"messages": [
            {"role": "system", "content": "one two"},
            {"role": "user", "content": [{"type": "text", "text": "three"}]}]});
        assert_eq!(prompt_tokens(&chat, true).len(), 3);
        let ids: Value = serde_json::json!({"prompt": [[1, 2, 3], "four five"]});
        assert_eq!(prompt_tokens(&ids, false).len(), 5);
        let text: Value = serde_json::json!({"prompt": "a b c"});
        assert_eq!(
            block_hashes(prompt_tokens(&text, false).into_iter(), 3),
            blocks("a b c", 3)
        );
    }
}
