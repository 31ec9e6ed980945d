//! The few fields of an OpenAI-compatible completion chunk the client needs.
//!
//! Only `choices[0]`'s generated text, `usage` and `error` are read; everything else is
//! skipped without being built. Text borrows from the input when it has no escapes.
//!
//! Two implementations give the same answer: a single-pass byte scanner for the common
//! shapes (the hot path: one call per streamed token), and the serde reference
//! ([`parse_serde`]). The scanner gives up on anything it is not sure of (duplicate keys,
//! escaped keys, `error` objects, odd nesting, invalid JSON) and the serde path then decides,
//! so correctness never rests on the scanner being complete.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

/// What one `data:` payload (or a whole non-streaming body) said.
#[derive(Debug, PartialEq)]
pub enum Chunk<'a> {
    /// The end-of-stream marker `[DONE]`.
    Done,
    /// A completion chunk: generated text (possibly empty) and, when present, usage.
    Data {
        /// Generated text of `choices[0]` (`text`, `delta.content`, `message.content`, or
        /// reasoning text); empty for role-only or usage-only chunks.
        text: Cow<'a, str>,
        /// `text` came from `reasoning_content` / `reasoning` (a reasoning model's thinking),
        /// not from the answer's content.
        reasoning: bool,
        /// `usage`, usually only on the last chunk.
        usage: Option<Usage>,
    },
    /// An `{"error": ...}` object: the message (or the error JSON when it has none).
    Error(String),
    /// Not a completion chunk: why.
    Malformed(&'static str),
}

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(from = "UsageWire")]
pub struct Usage {
    /// Prompt tokens as the server counted them.
    pub prompt_tokens: Option<u32>,
    /// Generated tokens (reasoning included, as OpenAI-compatible servers count them).
    pub completion_tokens: Option<u32>,
    /// `completion_tokens_details.reasoning_tokens`: the part of `completion_tokens` spent
    /// thinking, where the server reports it (OpenAI does; vLLM does not, and then the
    /// reasoning chunks' share of `completion_tokens` stands in).
    pub reasoning_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct UsageWire {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    reasoning_tokens: Option<u32>,
}

impl From<UsageWire> for Usage {
    fn from(w: UsageWire) -> Usage {
        Usage {
            prompt_tokens: w.prompt_tokens,
            completion_tokens: w.completion_tokens,
            reasoning_tokens: w.completion_tokens_details.and_then(|d| d.reasoning_tokens),
        }
    }
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow)]
    choices: Option<FirstChoice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// vLLM's older error shape: `{"object": "error", "message": ...}`.
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

/// `choices` reduced to its first element, without allocating a `Vec`.
struct FirstChoice<'a>(Option<Choice<'a>>);

/// A string that borrows from the input when it has no escapes (`#[serde(borrow)]` on a bare
/// `Cow` does this; on `Option<Cow>` it does not, hence the newtype).
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize, Default)]
struct Choice<'a> {
    #[serde(default, borrow)]
    text: Option<Text<'a>>,
    #[serde(default, borrow)]
    delta: Option<Message<'a>>,
    #[serde(default, borrow)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize, Default)]
struct Message<'a> {
    #[serde(default, borrow)]
    content: Option<Text<'a>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Text<'a>>,
    #[serde(default, borrow)]
    reasoning: Option<Text<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first: Option<Choice<'a>> = seq.next_element()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(FirstChoice(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The first non-empty of content, `reasoning_content`, `reasoning`; `true` for reasoning.
fn take_text<'a>(m: Message<'a>) -> Option<(Cow<'a, str>, bool)> {
    [
        (m.content, false),
        (m.reasoning_content, true),
        (m.reasoning, true),
    ]
    .into_iter()
    .filter_map(|(t, r)| Some((t?.0, r)))
    .find(|(s, _)| !s.is_empty())
}

/// Interprets one event's `data` (or a non-streaming JSON body).
pub fn parse(data: &[u8]) -> Chunk<'_> {
    let trimmed = data.trim_ascii();
    if trimmed == b"[DONE]" {
        return Chunk::Done;
    }
    scan::chunk(trimmed).unwrap_or_else(|_| parse_json(trimmed))
}

/// The serde reference implementation of [`parse`]: same result for every input, slower.
/// Public only for the differential tests and the benchmarks.
#[doc(hidden)]
pub fn parse_serde(data: &[u8]) -> Chunk<'_> {
    let trimmed = data.trim_ascii();
    if trimmed == b"[DONE]" {
        return Chunk::Done;
    }
    parse_json(trimmed)
}

/// The serde pass over a trimmed payload that is not `[DONE]`.
fn parse_json(trimmed: &[u8]) -> Chunk<'_> {
    let wire: Wire<'_> = match serde_json::from_slice(trimmed) {
        Ok(w) => w,
        Err(_) => return Chunk::Malformed("a data line is not a JSON object"),
    };
    if let Some(err) = wire.error.filter(|e| !e.is_null()) {
        let msg = match &err {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Object(o) => match o.get("message") {
                Some(serde_json::Value::String(s)) => s.clone(),
                _ => err.to_string(),
            },
            other => other.to_string(),
        };
        return Chunk::Error(msg);
    }
    if wire.object.as_deref() == Some("error") {
        return Chunk::Error(wire.message.map(Cow::into_owned).unwrap_or_default());
    }
    match wire.choices {
        None if wire.usage.is_none() => Chunk::Malformed("a chunk has neither choices nor usage"),
        None | Some(FirstChoice(None)) => Chunk::Data {
            text: Cow::Borrowed(""),
            reasoning: false,
            usage: wire.usage,
        },
        Some(FirstChoice(Some(c))) => {
            let (text, reasoning) = c
                .text
                .map(|t| (t.0, false))
                .filter(|(t, _)| !t.is_empty())
                .or_else(|| c.delta.and_then(take_text))
                .or_else(|| c.message.and_then(take_text))
                .unwrap_or((Cow::Borrowed(""), false));
            Chunk::Data {
                text,
                reasoning,
                usage: wire.usage,
            }
        }
    }
}

/// The hot-path scanner: one pass over the bytes of a top-level object, reading only the
/// fields [`Wire`] reads and skipping every other value after checking its grammar.
///
/// It mirrors serde_json + the derived `Wire` exactly where it answers, and returns
/// `Err(GiveUp)` wherever matching serde would take more than a few lines (an `error` field,
/// `object: "error"`, duplicate or escaped keys, structs written as arrays, non-integer or
/// out-of-range usage counts, nesting deeper than 64, any grammar error). Skipped strings with
/// escapes or non-ASCII bytes are checked by serde_json itself (as `IgnoredAny`, which is how
/// the derived code skips them), and text with escapes is decoded by serde_json, so those
/// rules are serde's by construction.
mod scan {
    use std::borrow::Cow;

    use serde::de::IgnoredAny;

    use super::{Chunk, Usage};

    /// The scanner is unsure; the serde path decides.
    pub(super) struct GiveUp;

    type Scan<T> = Result<T, GiveUp>;

    /// Marks the key `bit` of an object as seen; a second sight is a duplicate key, which
    /// serde resolves by its own rules, so the scanner gives up.
    fn first_sight(seen: &mut u8, bit: u8) -> Scan<()> {
        if *seen & bit != 0 {
            return Err(GiveUp);
        }
        *seen |= bit;
        Ok(())
    }

    /// Bytes that may appear unescaped in a string without a closer look: printable ASCII
    /// other than `"` and `\`.
    pub(super) const PLAIN: [bool; 256] = {
        let mut t = [false; 256];
        let mut i = 0x20;
        while i < 0x80 {
            t[i] = i != b'"' as usize && i != b'\\' as usize;
            i += 1;
        }
        t
    };

    /// Whether any of eight bytes may be non-[`PLAIN`] (never a false "no"; a false "yes"
    /// only sends those bytes through the table).
    pub(super) fn maybe_special(w: u64) -> bool {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let has_zero = |v: u64| v.wrapping_sub(ONES) & !v;
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        // Bytes ≥ 0x80 | bytes < 0x20 (exact when no high bit is set) | `"` | `\`.
        (w | w.wrapping_sub(ONES * 0x20) | has_zero(quote) | has_zero(backslash)) & HIGH != 0
    }

    /// A string literal's content (without quotes) and what it holds.
    struct Lit {
        start: usize,
        end: usize,
        escaped: bool,
        non_ascii: bool,
    }

    /// `choices` as `Option<FirstChoice>` sees it.
    enum Choices<'a> {
        /// Absent or `null`.
        None,
        /// `[]`.
        Empty,
        /// The first element's text (already chosen; possibly empty) and whether it is
        /// reasoning.
        First(Cow<'a, str>, bool),
    }

    /// The text fields of a `delta` or `message` object.
    #[derive(Default)]
    struct Message<'a> {
        content: Option<Cow<'a, str>>,
        reasoning_content: Option<Cow<'a, str>>,
        reasoning: Option<Cow<'a, str>>,
    }

    impl<'a> Message<'a> {
        /// Same order as `super::take_text`.
        fn text(self) -> Option<(Cow<'a, str>, bool)> {
            [
                (self.content, false),
                (self.reasoning_content, true),
                (self.reasoning, true),
            ]
            .into_iter()
            .filter_map(|(t, r)| Some((t?, r)))
            .find(|(s, _)| !s.is_empty())
        }
    }

    struct Scanner<'a> {
        b: &'a [u8],
        i: usize,
    }

    /// Scans a trimmed payload that is not `[DONE]`.
    pub(super) fn chunk(b: &[u8]) -> Scan<Chunk<'_>> {
        let mut s = Scanner { b, i: 0 };
        if s.peek() != Some(b'{') {
            // Top-level arrays are structs-as-sequences to serde: rare, left to it.
            return Err(GiveUp);
        }
        let mut choices = Choices::None;
        let mut usage = None;
        let mut seen = 0u8;
        s.object(|s, key| {
            let bit = match key {
                b"choices" => 1,
                b"usage" => 2,
                b"error" => 4,
                b"object" => 8,
                b"message" => 16,
                _ => return s.skip_value(),
            };
            first_sight(&mut seen, bit)?;
            match (bit, s.peek()) {
                (_, Some(b'n')) => s.null(),
                (1, Some(b'[')) => {
                    choices = s.choices()?;
                    Ok(())
                }
                (2, Some(b'{')) => {
                    usage = Some(s.usage()?);
                    Ok(())
                }
                (8, Some(b'"')) => {
                    // Only `object: "error"` changes the outcome; serde decides that one.
                    let lit = s.string()?;
                    if lit.escaped || &s.b[lit.start..lit.end] == b"error" {
                        return Err(GiveUp);
                    }
                    s.text_of(lit).map(drop)
                }
                (16, Some(b'"')) => {
                    let lit = s.string()?;
                    s.text_of(lit).map(drop)
                }
                // A non-null `error`, or a type serde would refuse or read differently.
                _ => Err(GiveUp),
            }
        })?;
        if s.i != b.len() {
            return Err(GiveUp);
        }
        Ok(match choices {
            Choices::None if usage.is_none() => {
                Chunk::Malformed("a chunk has neither choices nor usage")
            }
            Choices::None | Choices::Empty => Chunk::Data {
                text: Cow::Borrowed(""),
                reasoning: false,
                usage,
            },
            Choices::First(text, reasoning) => Chunk::Data {
                text,
                reasoning,
                usage,
            },
        })
    }

    impl<'a> Scanner<'a> {
        fn peek(&self) -> Option<u8> {
            self.b.get(self.i).copied()
        }

        /// JSON whitespace (serde_json's set: not form feed).
        fn ws(&mut self) {
            while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
                self.i += 1;
            }
        }

        fn eat(&mut self, c: u8) -> Scan<()> {
            if self.peek() == Some(c) {
                self.i += 1;
                Ok(())
            } else {
                Err(GiveUp)
            }
        }

        fn literal(&mut self, word: &[u8]) -> Scan<()> {
            if self.b[self.i..].starts_with(word) {
                self.i += word.len();
                Ok(())
            } else {
                Err(GiveUp)
            }
        }

        fn null(&mut self) -> Scan<()> {
            self.literal(b"null")
        }

        /// At `{`: calls `field` with each key, positioned at the value (whitespace skipped);
        /// `field` must consume the value. Ends after `}`.
        fn object(&mut self, mut field: impl FnMut(&mut Self, &'a [u8]) -> Scan<()>) -> Scan<()> {
            self.i += 1;
            self.ws();
            if self.peek() == Some(b'}') {
                self.i += 1;
                return Ok(());
            }
            loop {
                let key = self.key()?;
                self.ws();
                self.eat(b':')?;
                self.ws();
                field(self, key)?;
                self.ws();
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        self.ws();
                    }
                    Some(b'}') => {
                        self.i += 1;
                        return Ok(());
                    }
                    _ => return Err(GiveUp),
                }
            }
        }

        /// A struct key: plain ASCII only (an escaped key may spell a known field).
        fn key(&mut self) -> Scan<&'a [u8]> {
            if self.peek() != Some(b'"') {
                return Err(GiveUp);
            }
            let lit = self.string()?;
            if lit.escaped || lit.non_ascii {
                return Err(GiveUp);
            }
            Ok(&self.b[lit.start..lit.end])
        }

        /// At `"`: finds the closing quote. Control characters give up (serde refuses them).
        fn string(&mut self) -> Scan<Lit> {
            let b = self.b;
            let start = self.i + 1;
            let mut i = start;
            let (mut escaped, mut non_ascii) = (false, false);
            loop {
                // Eight plain bytes at a time, then byte by byte up to the next special one.
                while let Some(w) = b.get(i..i + 8) {
                    if maybe_special(u64::from_le_bytes(w.try_into().unwrap_or_default())) {
                        break;
                    }
                    i += 8;
                }
                while i < b.len() && PLAIN[b[i] as usize] {
                    i += 1;
                }
                match b.get(i) {
                    Some(b'"') => break,
                    Some(b'\\') => {
                        escaped = true;
                        i += 2;
                    }
                    Some(&c) if c >= 0x80 => {
                        non_ascii = true;
                        i += 1;
                    }
                    _ => return Err(GiveUp),
                }
            }
            self.i = i + 1;
            Ok(Lit {
                start,
                end: i,
                escaped,
                non_ascii,
            })
        }

        /// A string whose value is used: borrowed when unescaped, else decoded by serde_json.
        fn text_of(&self, lit: Lit) -> Scan<Cow<'a, str>> {
            if lit.escaped {
                serde_json::from_slice::<String>(&self.b[lit.start - 1..=lit.end])
                    .map(Cow::Owned)
                    .map_err(|_| GiveUp)
            } else {
                std::str::from_utf8(&self.b[lit.start..lit.end])
                    .map(Cow::Borrowed)
                    .map_err(|_| GiveUp)
            }
        }

        /// `Option<Text>`: `null` or a string.
        fn opt_text(&mut self) -> Scan<Option<Cow<'a, str>>> {
            match self.peek() {
                Some(b'n') => self.null().map(|_| None),
                Some(b'"') => {
                    let lit = self.string()?;
                    self.text_of(lit).map(Some)
                }
                _ => Err(GiveUp),
            }
        }

        /// At `[`: `FirstChoice` — the first element read, the rest skipped.
        fn choices(&mut self) -> Scan<Choices<'a>> {
            self.i += 1;
            self.ws();
            if self.peek() == Some(b']') {
                self.i += 1;
                return Ok(Choices::Empty);
            }
            if self.peek() != Some(b'{') {
                return Err(GiveUp);
            }
            let first = self.choice()?;
            loop {
                self.ws();
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        self.ws();
                        self.skip_value()?;
                    }
                    Some(b']') => {
                        self.i += 1;
                        return Ok(Choices::First(first.0, first.1));
                    }
                    _ => return Err(GiveUp),
                }
            }
        }

        /// At `{`: one choice, reduced to the text `parse` would pick.
        fn choice(&mut self) -> Scan<(Cow<'a, str>, bool)> {
            let mut text = None;
            let mut delta = None;
            let mut message = None;
            let mut seen = 0u8;
            self.object(|s, key| {
                let (bit, is_text) = match key {
                    b"text" => (1, true),
                    b"delta" => (2, false),
                    b"message" => (4, false),
                    _ => return s.skip_value(),
                };
                first_sight(&mut seen, bit)?;
                if is_text {
                    text = s.opt_text()?;
                    return Ok(());
                }
                let m = match s.peek() {
                    Some(b'n') => s.null().map(|_| None)?,
                    Some(b'{') => Some(s.message()?),
                    _ => return Err(GiveUp),
                };
                if bit == 2 {
                    delta = m;
                } else {
                    message = m;
                }
                Ok(())
            })?;
            Ok(text
                .map(|t| (t, false))
                .filter(|(t, _)| !t.is_empty())
                .or_else(|| delta.and_then(Message::text))
                .or_else(|| message.and_then(Message::text))
                .unwrap_or((Cow::Borrowed(""), false)))
        }

        /// At `{`: a `delta` or `message`.
        fn message(&mut self) -> Scan<Message<'a>> {
            let mut m = Message::default();
            let mut seen = 0u8;
            self.object(|s, key| {
                let (bit, slot) = match key {
                    b"content" => (1, &mut m.content),
                    b"reasoning_content" => (2, &mut m.reasoning_content),
                    b"reasoning" => (4, &mut m.reasoning),
                    _ => return s.skip_value(),
                };
                first_sight(&mut seen, bit)?;
                *slot = s.opt_text()?;
                Ok(())
            })?;
            Ok(m)
        }

        /// At `{`: `Usage` with integer counts that fit `u32`.
        fn usage(&mut self) -> Scan<Usage> {
            let mut u = Usage {
                prompt_tokens: None,
                completion_tokens: None,
                reasoning_tokens: None,
            };
            let mut seen = 0u8;
            self.object(|s, key| {
                let (bit, slot) = match key {
                    b"prompt_tokens" => (1, &mut u.prompt_tokens),
                    b"completion_tokens" => (2, &mut u.completion_tokens),
                    b"completion_tokens_details" => {
                        first_sight(&mut seen, 4)?;
                        u.reasoning_tokens = match s.peek() {
                            Some(b'n') => s.null().map(|_| None)?,
                            Some(b'{') => s.details()?,
                            _ => return Err(GiveUp),
                        };
                        return Ok(());
                    }
                    _ => return s.skip_value(),
                };
                first_sight(&mut seen, bit)?;
                *slot = s.opt_count()?;
                Ok(())
            })?;
            Ok(u)
        }

        /// At `{`: `completion_tokens_details`, reduced to `reasoning_tokens`.
        fn details(&mut self) -> Scan<Option<u32>> {
            let mut reasoning = None;
            let mut seen = 0u8;
            self.object(|s, key| {
                if key != b"reasoning_tokens" {
                    return s.skip_value();
                }
                first_sight(&mut seen, 1)?;
                reasoning = s.opt_count()?;
                Ok(())
            })?;
            Ok(reasoning)
        }

        /// `Option<u32>`: `null` or a count.
        fn opt_count(&mut self) -> Scan<Option<u32>> {
            match self.peek() {
                Some(b'n') => self.null().map(|_| None),
                _ => self.count().map(Some),
            }
        }

        /// A non-negative integer without leading zeros, fraction or exponent, ≤ `u32::MAX`.
        fn count(&mut self) -> Scan<u32> {
            let start = self.i;
            let mut n: u64 = 0;
            while let Some(c @ b'0'..=b'9') = self.peek() {
                n = n * 10 + u64::from(c - b'0');
                if n > u64::from(u32::MAX) {
                    return Err(GiveUp);
                }
                self.i += 1;
            }
            let digits = self.i - start;
            if digits == 0 || (digits > 1 && self.b[start] == b'0') {
                return Err(GiveUp);
            }
            if let Some(b'.' | b'e' | b'E') = self.peek() {
                return Err(GiveUp);
            }
            Ok(n as u32)
        }

        /// A string that is only skipped: plain ones are checked here, others by serde_json
        /// the way the derived code skips them (`IgnoredAny`).
        fn skip_string(&mut self) -> Scan<()> {
            let lit = self.string()?;
            if lit.escaped || lit.non_ascii {
                serde_json::from_slice::<IgnoredAny>(&self.b[lit.start - 1..=lit.end])
                    .map_err(|_| GiveUp)?;
            }
            Ok(())
        }

        /// A JSON number, grammar only.
        fn skip_number(&mut self) -> Scan<()> {
            if self.peek() == Some(b'-') {
                self.i += 1;
            }
            match self.peek() {
                Some(b'0') => self.i += 1,
                Some(b'1'..=b'9') => self.digits(),
                _ => return Err(GiveUp),
            }
            if self.peek() == Some(b'.') {
                self.i += 1;
                self.some_digits()?;
            }
            if let Some(b'e' | b'E') = self.peek() {
                self.i += 1;
                if let Some(b'+' | b'-') = self.peek() {
                    self.i += 1;
                }
                self.some_digits()?;
            }
            Ok(())
        }

        fn digits(&mut self) {
            while let Some(b'0'..=b'9') = self.peek() {
                self.i += 1;
            }
        }

        fn some_digits(&mut self) -> Scan<()> {
            let start = self.i;
            self.digits();
            if self.i == start {
                Err(GiveUp)
            } else {
                Ok(())
            }
        }

        /// Any JSON value, checked and skipped without recursion. Open containers are a bit
        /// stack (1 = object); deeper than 64 gives up.
        fn skip_value(&mut self) -> Scan<()> {
            let mut stack: u64 = 0;
            let mut depth = 0u32;
            loop {
                // At a value.
                match self.peek() {
                    Some(b'"') => self.skip_string()?,
                    Some(b'-' | b'0'..=b'9') => self.skip_number()?,
                    Some(b't') => self.literal(b"true")?,
                    Some(b'f') => self.literal(b"false")?,
                    Some(b'n') => self.null()?,
                    Some(c @ (b'{' | b'[')) => {
                        if depth == 64 {
                            return Err(GiveUp);
                        }
                        let is_object = c == b'{';
                        self.i += 1;
                        self.ws();
                        let close = if is_object { b'}' } else { b']' };
                        if self.peek() == Some(close) {
                            self.i += 1;
                        } else {
                            stack = stack << 1 | u64::from(is_object);
                            depth += 1;
                            if is_object {
                                self.skip_key()?;
                            }
                            continue;
                        }
                    }
                    _ => return Err(GiveUp),
                }
                // After a value: close containers until one continues with a comma.
                loop {
                    if depth == 0 {
                        return Ok(());
                    }
                    let in_object = stack & 1 == 1;
                    self.ws();
                    match self.peek() {
                        Some(b',') => {
                            self.i += 1;
                            self.ws();
                            if in_object {
                                self.skip_key()?;
                            }
                            break;
                        }
                        Some(b'}') if in_object => {}
                        Some(b']') if !in_object => {}
                        _ => return Err(GiveUp),
                    }
                    self.i += 1;
                    stack >>= 1;
                    depth -= 1;
                }
            }
        }

        /// In a skipped object: `"key"` `:`, leaving the position at the value.
        fn skip_key(&mut self) -> Scan<()> {
            if self.peek() != Some(b'"') {
                return Err(GiveUp);
            }
            self.skip_string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(c: Chunk<'_>) -> String {
        match c {
            Chunk::Data { text, .. } => text.into_owned(),
            other => panic!("not data: {other:?}"),
        }
    }

    #[test]
    fn completions_and_chat_text() {
        assert_eq!(
            text(parse(br#"{"choices":[{"index":0,"text":"hi"}]}"#)),
            "hi"
        );
        assert_eq!(
            text(parse(
                br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#
            )),
            ""
        );
        assert_eq!(
            text(parse(br#"{"choices":[{"delta":{"content":"a\"b"}}]}"#)),
            "a\"b"
        );
        assert_eq!(
            text(parse(
                br#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#
            )),
            "think"
        );
        assert_eq!(
            text(parse(
                br#"{"choices":[{"message":{"content":"whole"}},{"message":{}}]}"#
            )),
            "whole"
        );
    }

    #[test]
    fn text_borrows_when_unescaped() {
        let data = br#"{"choices":[{"text":"plain"}]}"#;
        match parse(data) {
            Chunk::Data { text, .. } => assert!(matches!(text, Cow::Borrowed("plain"))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn usage_only_chunk() {
        let c = parse(br#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#);
        assert_eq!(
            c,
            Chunk::Data {
                text: Cow::Borrowed(""),
                reasoning: false,
                usage: Some(Usage {
                    prompt_tokens: Some(5),
                    completion_tokens: Some(7),
                    reasoning_tokens: None,
                })
            }
        );
        assert!(matches!(
            parse(br#"{"usage":{"completion_tokens":1}}"#),
            Chunk::Data { .. }
        ));
    }

    #[test]
    fn reasoning_text_and_tokens_are_told_apart() {
        let kind = |d: &[u8]| match parse(d) {
            Chunk::Data {
                text, reasoning, ..
            } => (text.into_owned(), reasoning),
            other => panic!("{other:?}"),
        };
        for d in [
            br#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#.as_slice(),
            br#"{"choices":[{"delta":{"content":null,"reasoning":"think"}}]}"#,
            br#"{"choices":[{"delta":{"content":"","reasoning_content":"think"}}]}"#,
        ] {
            assert_eq!(
                kind(d),
                ("think".into(), true),
                "{}",
                String::from_utf8_lossy(d)
            );
        }
        assert_eq!(
            kind(br#"{"choices":[{"delta":{"content":"answer","reasoning_content":"x"}}]}"#),
            ("answer".into(), false)
        );
        assert_eq!(kind(br#"{"choices":[{"text":"t"}]}"#), ("t".into(), false));
        let usage = |d: &[u8]| match parse(d) {
            Chunk::Data { usage, .. } => usage.map(|u| u.reasoning_tokens),
            other => panic!("{other:?}"),
        };
        let vllm = br#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":30,"completion_tokens_details":{"reasoning_tokens":21,"accepted_prediction_tokens":0}}}"#;
        assert_eq!(usage(vllm), Some(Some(21)));
        assert_eq!(
            usage(br#"{"usage":{"completion_tokens":3,"completion_tokens_details":null}}"#),
            Some(None)
        );
        // A count that is not a u32 makes the chunk malformed, on both paths.
        let bad = br#"{"usage":{"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":-1}}}"#;
        assert!(matches!(parse(bad), Chunk::Malformed(_)));
        assert_eq!(parse(bad), parse_serde(bad));
    }

    #[test]
    fn done_errors_and_malformed() {
        assert_eq!(parse(b" [DONE] "), Chunk::Done);
        assert_eq!(
            parse(br#"{"error":{"message":"overloaded","code":503}}"#),
            Chunk::Error("overloaded".into())
        );
        assert_eq!(parse(br#"{"error":"boom"}"#), Chunk::Error("boom".into()));
        assert_eq!(
            parse(br#"{"object":"error","message":"bad","code":400}"#),
            Chunk::Error("bad".into())
        );
        assert!(matches!(parse(b"not json"), Chunk::Malformed(_)));
        assert!(matches!(parse(br#"{"id":"x"}"#), Chunk::Malformed(_)));
        assert!(matches!(parse(br#"[1,2]"#), Chunk::Malformed(_)));
    }

    /// Realistic payloads from the servers ladder talks to, plus the error shapes.
    fn realistic() -> Vec<String> {
        let words = [
            "hi",
            " the",
            "",
            "a\\\"b",
            "line\\n",
            "caf\\u00e9",
            "café",
            "日本",
            "\\ud83d\\ude00",
            "tab\\t",
            "x/y",
            "\\\\",
        ];
        let mut out = Vec::new();
        for (i, w) in words.iter().enumerate() {
            // vLLM / simulator completions.
            out.push(format!(
                r#"{{"id":"cmpl-{i}","object":"text_completion","created":1764680000,"model":"m","choices":[{{"index":0,"text":"{w}","logprobs":null,"finish_reason":null,"stop_reason":null}}],"usage":null}}"#
            ));
            // vLLM chat: role chunk, content, reasoning, finish.
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","created":1764680000,"model":"m","choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]}}"#
            ));
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","created":1764680000,"model":"m","choices":[{{"index":0,"delta":{{"content":"{w}"}},"logprobs":null,"finish_reason":null}}]}}"#
            ));
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"reasoning_content":"{w}","content":null}},"logprobs":null,"finish_reason":null}}]}}"#
            ));
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","choices":[{{"index":0,"delta":{{"reasoning":"{w}"}},"finish_reason":"stop","stop_reason":null}}],"usage":{{"prompt_tokens":{i},"total_tokens":{},"completion_tokens":17}}}}"#,
                i + 17
            ));
            // SGLang: pretty much vLLM's shape, with matched_stop and usage null.
            out.push(format!(
                r#"{{"id":"{i}a","object":"chat.completion.chunk","created":1764680000,"model":"default","choices":[{{"index":0,"delta":{{"role":null,"content":"{w}","reasoning_content":null,"tool_calls":null}},"logprobs":null,"finish_reason":null,"matched_stop":null}}],"usage":null}}"#
            ));
            // llama.cpp server: `content` at top level plus timings; chat shape with timings.
            out.push(format!(
                r#"{{"choices":[{{"finish_reason":null,"index":0,"delta":{{"content":"{w}"}}}}],"created":1764680000,"id":"chatcmpl-x","model":"gpt-3.5-turbo","system_fingerprint":"b5000-abc","object":"chat.completion.chunk","timings":{{"prompt_n":5,"prompt_ms":1.25,"prompt_per_token_ms":0.25,"predicted_per_second":1.5e2,"cache_n":-1}}}}"#
            ));
            out.push(format!(
                r#"{{"content":"{w}","stop":false,"id_slot":0,"multimodal":false,"index":0,"timings":{{"predicted_n":3,"predicted_ms":12.5}}}}"#
            ));
            // OpenAI with system_fingerprint, usage-only tail, obfuscation.
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","created":1764680000,"model":"gpt-4o","service_tier":"default","system_fingerprint":"fp_{i}","choices":[{{"index":0,"delta":{{"content":"{w}","refusal":null}},"logprobs":null,"finish_reason":null}}],"usage":null,"obfuscation":"q{i}"}}"#
            ));
            out.push(format!(
                r#"{{"id":"chatcmpl-{i}","object":"chat.completion.chunk","choices":[],"usage":{{"prompt_tokens":512,"completion_tokens":{i},"total_tokens":1536,"prompt_tokens_details":{{"cached_tokens":0,"audio_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":{i},"accepted_prediction_tokens":null}}}}}}"#
            ));
            // Non-streaming body with logprobs and two choices.
            out.push(format!(
                r#"{{"id":"x","choices":[{{"index":0,"message":{{"role":"assistant","content":"{w}","tool_calls":[]}},"logprobs":{{"content":[{{"token":"{w}","logprob":-0.25,"bytes":[104,105],"top_logprobs":[]}}]}},"finish_reason":"length"}},{{"message":{{"content":"other"}}}}],"usage":{{"prompt_tokens":3,"completion_tokens":1}}}}"#
            ));
            // Error shapes.
            out.push(format!(
                r#"{{"error":{{"message":"{w}","type":"x","code":503}}}}"#
            ));
            out.push(format!(r#"{{"error":"{w}"}}"#));
            out.push(format!(r#"{{"object":"error","message":"{w}","type":"BadRequestError","param":null,"code":400}}"#));
            out.push(format!(r#"{{"error":null,"choices":[{{"text":"{w}"}}]}}"#));
        }
        out
    }

    /// Inputs chosen to sit on the scanner's edges: each must match serde exactly.
    const EDGES: &[&str] = &[
        "",
        " ",
        "{}",
        "[]",
        "[null]",
        r#"[null,{"completion_tokens":1}]"#,
        r#"{"choices":null}"#,
        r#"{"choices":null,"usage":{}}"#,
        r#"{"choices":[]}"#,
        r#"{"choices":[null]}"#,
        r#"{"choices":[[]]}"#,
        r#"{"choices":[["a"]]}"#,
        r#"{"choices":[{"text":"a"},]}"#,
        r#"{"choices":[{"text":"a"}],}"#,
        r#"{"choices":[{"text":"a"}] }x"#,
        r#"{"choices":{}}"#,
        r#"{"choices":"x"}"#,
        r#"{"choices":[{"text":1}]}"#,
        r#"{"choices":[{"text":null,"delta":null,"message":null}]}"#,
        r#"{"choices":[{"text":"","delta":{"content":"","reasoning":"r"}}]}"#,
        r#"{"choices":[{"text":"a","text":"b"}]}"#,
        r#"{"choices":[{"delta":{"content":null,"content":"b"}}]}"#,
        r#"{"choices":[{"t\u0065xt":"esc key"}]}"#,
        r#"{"choices":[{"tëxt":"x"}]}"#,
        r#"{"choices":[],"choices":[]}"#,
        r#"{"usage":{"prompt_tokens":-0}}"#,
        r#"{"usage":{"prompt_tokens":1.0}}"#,
        r#"{"usage":{"prompt_tokens":1e2}}"#,
        r#"{"usage":{"prompt_tokens":01}}"#,
        r#"{"usage":{"prompt_tokens":0}}"#,
        r#"{"usage":{"prompt_tokens":4294967295}}"#,
        r#"{"usage":{"prompt_tokens":4294967296}}"#,
        r#"{"usage":{"prompt_tokens":99999999999999999999999}}"#,
        r#"{"usage":{"prompt_tokens":"5"}}"#,
        r#"{"usage":{"prompt_tokens":null,"completion_tokens":null}}"#,
        r#"{"usage":{"prompt_tokens":1,"prompt_tokens":2}}"#,
        r#"{"usage":[1,2]}"#,
        r#"{"usage":null}"#,
        r#"{"usage":{},"x":-}"#,
        r#"{"usage":{},"x":-1.}"#,
        r#"{"usage":{},"x":1.5e}"#,
        r#"{"usage":{},"x":1.5E+3}"#,
        r#"{"usage":{},"x":[1,[2,{"a":[]}],{}]}"#,
        r#"{"usage":{},"x":[1,]}"#,
        r#"{"usage":{},"x":{"a":1,}}"#,
        r#"{"usage":{},"x":{1:2}}"#,
        r#"{"usage":{},"x":tru}"#,
        r#"{"usage":{},"x":nulll}"#,
        r#"{"usage":{},"x":"\x"}"#,
        r#"{"usage":{},"x":"\u12"}"#,
        r#"{"usage":{},"x":"\ud800"}"#,
        r#"{"usage":{},"x":"\udc00\ud800"}"#,
        r#"{"choices":[{"text":"\ud800"}]}"#,
        r#"{"choices":[{"text":"\ud83d\ude00"}]}"#,
        r#"{"choices":[{"text":"a\/b"}]}"#,
        r#"{"object":"error"}"#,
        r#"{"object":"\u0065rror","message":"m"}"#,
        r#"{"object":"chat","message":5,"usage":{}}"#,
        r#"{"object":5,"usage":{}}"#,
        r#"{"object":null,"message":null,"usage":{}}"#,
        r#"{"error":{},"usage":{}}"#,
        r#"{"error":[1,{"b":2,"a":1.5}]}"#,
        r#"{"error":{"message":7}}"#,
        r#"{"error":null,"error":null,"usage":{}}"#,
        "{\"usage\":{}\u{c}}",
        "{\"usage\":{},\"x\":\"a\u{1}b\"}",
        "{\"choices\":[{\"text\":\"a\tb\"}]}",
        "{\r\n\t\"choices\" : [ { \"text\" : \"spaced\" } ] \n}",
    ];

    fn mutate(rng: &mut rand_chacha::ChaCha8Rng, input: &[u8]) -> Vec<u8> {
        use rand::Rng;
        const BYTES: &[u8] = b"\"\\{}[],: 0-.eE\tn\x00\x1f\x7f\x80\xc3\xa9\xff";
        const SNIPPETS: &[&str] = &[
            "\\n",
            "\\\"",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\\ud800",
            "\\u",
            "é",
            "日",
            " ",
            "\t\r\n",
            "null",
            ",",
            "\"x\":1,",
            "\"text\":\"t\",",
            "\"usage\":{},",
            "[",
            "}",
            "1e5",
            "-",
        ];
        let mut m = input.to_vec();
        for _ in 0..rng.gen_range(1..=3) {
            let at = rng.gen_range(0..=m.len());
            match rng.gen_range(0..6) {
                0 if at < m.len() => m[at] = BYTES[rng.gen_range(0..BYTES.len())],
                1 if at < m.len() => m[at] = rng.gen(),
                2 => m.truncate(at),
                3 if at < m.len() => {
                    let end = rng.gen_range(at..=m.len().min(at + 8));
                    m.drain(at..end);
                }
                _ => {
                    let s = SNIPPETS[rng.gen_range(0..SNIPPETS.len())];
                    m.splice(at..at, s.bytes());
                }
            }
        }
        m
    }

    fn same(input: &[u8]) {
        assert_eq!(
            parse(input),
            parse_serde(input),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }

    #[test]
    fn eight_byte_check_never_misses_a_special_byte() {
        for pos in 0..8 {
            for byte in 0..=255u8 {
                let mut w = *b"abcdefgh";
                w[pos] = byte;
                let special = !w.iter().all(|&c| scan::PLAIN[c as usize]);
                if special {
                    assert!(scan::maybe_special(u64::from_le_bytes(w)), "{w:?}");
                }
            }
        }
        assert!(!scan::maybe_special(u64::from_le_bytes(*b"cmpl-sim")));
    }

    #[test]
    fn scanner_takes_the_common_shapes_itself() {
        // The differential test below would pass vacuously if the scanner always gave up.
        for doc in realistic() {
            let is_error = doc.contains(r#""error":{"#)
                || doc.contains(r#""error":""#)
                || doc.contains(r#""object":"error""#);
            let fast = scan::chunk(doc.as_bytes());
            assert_eq!(fast.is_ok(), !is_error, "{doc}");
            if let Ok(c) = fast {
                assert_eq!(c, parse_serde(doc.as_bytes()), "{doc}");
                // llama.cpp's native shape (top-level `content`) has neither choices nor usage.
                if !doc.contains(r#""choices""#) {
                    assert!(matches!(c, Chunk::Malformed(_)), "{doc}");
                }
            }
        }
        let deep = format!(
            r#"{{"usage":{{}},"x":{}1{}}}"#,
            "[".repeat(64),
            "]".repeat(64)
        );
        assert!(scan::chunk(deep.as_bytes()).is_ok());
        let deeper = format!(
            r#"{{"usage":{{}},"x":{}1{}}}"#,
            "[".repeat(65),
            "]".repeat(65)
        );
        assert!(scan::chunk(deeper.as_bytes()).is_err());
        same(deeper.as_bytes());
    }

    #[test]
    fn scanner_matches_serde_on_edges_and_mutations() {
        use rand::SeedableRng;
        for e in EDGES {
            same(e.as_bytes());
        }
        same(b"{\"choices\":[{\"text\":\"\xff\"}]}");
        same(b"{\"usage\":{},\"x\":\"\xff\"}");
        same(b"{\"usage\":{},\"x\\u00e9\xff\":1}");
        same(b"{\"usage\":{},\"x\":[\"\xc3\"]}");
        let docs = realistic();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut n = 0;
        for doc in &docs {
            same(doc.as_bytes());
            for _ in 0..40 {
                same(&mutate(&mut rng, doc.as_bytes()));
                n += 1;
            }
        }
        for e in EDGES {
            for _ in 0..20 {
                same(&mutate(&mut rng, e.as_bytes()));
                n += 1;
            }
        }
        assert!(n > 5000, "{n} mutations");
    }
}
