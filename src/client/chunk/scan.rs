//! The hot-path scanner: one pass over the bytes of a top-level object, reading only the
//! fields `Wire` (in `chunk.rs`) reads and skipping every other value after checking its grammar.
//!
//! It mirrors serde_json + the derived `Wire` exactly where it answers, and returns
//! `Err(GiveUp)` wherever matching serde would take more than a few lines (an `error` field,
//! `object: "error"`, duplicate or escaped keys, structs written as arrays, non-integer or
//! out-of-range usage counts, nesting deeper than 64, any grammar error). Skipped strings with
//! escapes or non-ASCII bytes are checked by serde_json itself (as `IgnoredAny`, which is how
//! the derived code skips them), and text with escapes is decoded by serde_json, so those
//! rules are serde's by construction.

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
