//! The word pool for `tokenizer: server`: common English words that the server's tokenizer
//! encodes as one token after a space, found through its `/tokenize` with a few batched
//! calls (never one call per word), since ladder cannot read that tokenizer's vocabulary.
//!
//! A segment of words is counted as `ANCHOR w1 w2 … wk` minus the anchor's own count, so the
//! start-of-text effects of SentencePiece-style tokenizers (a prefix space, a merged first
//! word) fall on the anchor, not on a candidate. With a whitespace-splitting pre-tokenizer a
//! segment counts `k` exactly when each of its words is one token; a segment that counts more
//! is split in halves and counted again, so `m` multi-token words cost about `m log2 n`
//! counts. Every prompt built from the pool is still counted by the server before it is
//! sent: the pool only makes the first draft exact.

use super::{CountError, Counter};

/// Counted before each segment (see the module doc).
const ANCHOR: &str = "The";
/// Fewest single-token words a usable pool has.
const MIN_WORDS: usize = 32;
/// Words checked bare, for a prompt's first word.
const FIRST_CHECKED: usize = 48;

/// Candidates: frequent, plain, lower-case English words (most vocabularies have them whole).
#[rustfmt::skip]
pub(crate) const WORDS: &[&str] = &[
    "time", "year", "people", "way", "day", "man", "thing", "woman", "life", "child", "world",
    "school", "state", "family", "student", "group", "country", "problem", "hand", "part",
    "place", "case", "week", "company", "system", "program", "question", "work", "government",
    "number", "night", "point", "home", "water", "room", "mother", "area", "money", "story",
    "fact", "month", "lot", "right", "study", "book", "eye", "job", "word", "business", "issue",
    "side", "kind", "head", "house", "service", "friend", "father", "power", "hour", "game",
    "line", "end", "member", "law", "car", "city", "community", "name", "president", "team",
    "minute", "idea", "kid", "body", "information", "back", "parent", "face", "others", "level",
    "office", "door", "health", "person", "art", "war", "history", "party", "result", "change",
    "morning", "reason", "research", "girl", "guy", "moment", "air", "teacher", "force",
    "education", "foot", "boy", "age", "policy", "music", "market", "sense", "nation", "plan",
    "college", "interest", "death", "experience", "effect", "use", "class", "control", "care",
    "field", "development", "role", "effort", "rate", "heart", "drug", "show", "leader",
    "light", "voice", "wife", "police", "mind", "price", "report", "decision", "son", "view",
    "relationship", "town", "road", "arm", "difference", "value", "building", "action", "model",
    "season", "society", "tax", "director", "position", "player", "record", "paper", "space",
    "ground", "form", "event", "official", "matter", "center", "couple", "site", "project",
    "activity", "star", "table", "need", "court", "oil", "situation", "cost", "industry",
    "figure", "street", "image", "phone", "data", "picture", "practice", "piece", "land",
    "product", "doctor", "wall", "patient", "worker", "news", "test", "movie", "north", "love",
    "support", "technology", "step", "baby", "computer", "type", "attention", "film", "tree",
    "source", "organization", "hair", "window", "evidence", "population", "bank", "summer",
    "network", "answer", "hospital", "garden", "river", "stone", "energy", "color", "island",
    "train", "bridge", "forest", "mountain", "ocean", "animal", "letter", "science", "kitchen",
    "village", "memory", "signal", "engine", "winter", "language", "simple", "large", "small",
    "great", "little", "good", "new", "old", "long", "high", "young", "open", "early", "public",
    "strong", "clear", "free", "full", "whole", "real", "best", "make", "take", "give", "find",
    "tell", "call", "keep", "turn", "start", "hear", "play", "run", "move", "live", "hold",
    "bring", "write", "stand", "learn", "lead", "read",
];

/// The words the server's tokenizer keeps whole, in candidate order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerWords {
    /// One token after a space.
    pub rest: Vec<String>,
    /// Of the first of `rest`, those that are one token at the very start of a text too.
    pub first: Vec<String>,
}

/// Find the words through `counter` (the server's tokenizer).
pub(crate) fn discover(counter: Counter<'_>) -> Result<ServerWords, CountError> {
    let words = WORDS;
    let anchor = counter.count(ANCHOR)?;
    let mut single: Vec<&str> = Vec::new();
    let mut pending: Vec<&[&str]> = words.chunks(32).collect();
    while !pending.is_empty() {
        let texts: Vec<String> = pending
            .iter()
            .map(|seg| {
                let mut t = String::from(ANCHOR);
                for w in *seg {
                    t.push(' ');
                    t.push_str(w);
                }
                t
            })
            .collect();
        let counts = counter.counts(&texts)?;
        let mut next = Vec::new();
        for (seg, n) in pending.into_iter().zip(counts) {
            if n.saturating_sub(anchor) as usize == seg.len() {
                single.extend_from_slice(seg);
            } else if seg.len() > 1 {
                let (a, b) = seg.split_at(seg.len() / 2);
                next.push(a);
                next.push(b);
            }
        }
        pending = next;
    }
    // Back in candidate order, so the pool does not depend on how segments split.
    let rest: Vec<String> = words
        .iter()
        .filter(|w| single.contains(w))
        .map(|w| w.to_string())
        .collect();
    if rest.len() < MIN_WORDS {
        return Err(CountError::FewWords {
            kept: rest.len(),
            of: words.len(),
        });
    }
    let bare: Vec<String> = rest.iter().take(FIRST_CHECKED).cloned().collect();
    let counts = counter.counts(&bare)?;
    let first: Vec<String> = bare
        .into_iter()
        .zip(counts)
        .filter(|(_, n)| *n == 1)
        .map(|(w, _)| w)
        .collect();
    Ok(ServerWords { rest, first })
}
