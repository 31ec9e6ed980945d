//! The redactor: built once from every secret of a run (the API key, secret header values,
//! credentials in the URL), it scrubs them from any text a server may have echoed, in every
//! encoding a server or gateway plausibly uses: literal; JSON escapes (`\/`, `\uXXXX` in
//! either case, surrogate pairs, doubled backslashes), `\xHH`, `\u{H}`; URL encoding (`%XX`
//! in either case, `%25XX` double encoding, `+` for space); HTML entities; any mix of these
//! with literal characters; and base64 (standard and URL-safe, padded or not) of the secret
//! anywhere inside the encoded text.
//!
//! Matching decodes the text one unit at a time against each precomputed form, so mixed
//! encodings need no list of variants. Base64 is precomputed: for each of the three byte
//! alignments the characters that depend only on the secret's bits (the "core") are a form.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::Value;

/// Secrets shorter than this (in characters) are too short to scrub reliably: they are
/// still removed from server replies, but their base64 is not searched for (a handful of
/// characters would match by chance) and they are never applied to the scenario's own text.
pub const MIN_SECRET_CHARS: usize = 8;

/// Levels of nested escaping recognised (`%25` repeated, backslashes doubled): bounds the
/// work per text position.
const MAX_NESTING: usize = 4;

/// Bytes of a long secret that, ending the text, count as the secret cut short.
const PARTIAL_MIN: usize = 6;

/// What replaces a secret.
pub const MASK: &str = "***";

/// One secret, named for messages (the value is never shown).
#[derive(Clone)]
struct Secret {
    label: String,
    value: String,
    /// `false` for a credential as sent (`Bearer <key>`): only its base64 is searched for,
    /// so a literal echo keeps its scheme word (`Bearer ***`).
    literal: bool,
}

impl Secret {
    fn short(&self) -> bool {
        self.value.chars().count() < MIN_SECRET_CHARS
    }
}

/// A byte string searched for in text: a secret, or one of its base64 forms.
#[derive(Clone)]
struct Form {
    bytes: Vec<u8>,
}

/// Scrubs a fixed set of secrets from text and JSON values. Cheap to share behind an `Arc`.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
    forms: Vec<Form>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let labels: Vec<&str> = self.secrets.iter().map(|s| s.label.as_str()).collect();
        f.debug_struct("Redactor")
            .field("secrets", &labels)
            .finish()
    }
}

impl Redactor {
    /// A redactor for `(label, value)` pairs; empty values are ignored, duplicates merged.
    pub fn new(secrets: impl IntoIterator<Item = (String, String)>) -> Redactor {
        let mut r = Redactor::default();
        for (label, value) in secrets {
            r.push(label, value, true);
        }
        r
    }

    /// Adds a credential as it is sent (e.g. `Bearer <key>`): its base64 forms are searched
    /// for, even when the key inside it is short; literal echoes are left to the key itself.
    pub fn with_sent_credential(mut self, label: String, value: String) -> Redactor {
        self.push(label, value, false);
        self
    }

    fn push(&mut self, label: String, value: String, literal: bool) {
        if value.is_empty() || self.secrets.iter().any(|s| s.value == value) {
            return;
        }
        let s = Secret {
            label,
            value,
            literal,
        };
        let bytes = s.value.as_bytes();
        let mut add = |b: Vec<u8>| {
            if !b.is_empty() && !self.forms.iter().any(|f| f.bytes == b) {
                self.forms.push(Form { bytes: b });
            }
        };
        if literal {
            add(bytes.to_vec());
        }
        for alphabet in [STD, URL_SAFE] {
            // The whole secret encoded on its own, padded: covers the tail characters too.
            add(base64(bytes, alphabet, true));
            if !s.short() {
                for align in 0..3 {
                    add(base64_core(bytes, align, alphabet));
                }
            }
        }
        self.secrets.push(s);
    }

    /// The same redactor with more secrets.
    pub fn with(mut self, secrets: impl IntoIterator<Item = (String, String)>) -> Redactor {
        for (label, value) in secrets {
            self.push(label, value, true);
        }
        self
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Labels of the secrets too short to scrub reliably (never their values).
    pub fn short_labels(&self) -> Vec<String> {
        self.secrets
            .iter()
            .filter(|s| s.literal && s.short())
            .map(|s| s.label.clone())
            .collect()
    }

    /// A redactor without the secrets `skip` picks (by value), and the labels it dropped.
    pub fn without(&self, skip: &dyn Fn(&str) -> bool) -> (Redactor, Vec<String>) {
        let mut kept = Redactor::default();
        let mut dropped = Vec::new();
        for s in &self.secrets {
            if skip(&s.value) {
                if !dropped.contains(&s.label) {
                    dropped.push(s.label.clone());
                }
            } else {
                kept.push(s.label.clone(), s.value.clone(), s.literal);
            }
        }
        (kept, dropped)
    }

    /// The redactor to apply to the user's own text (the scenario): without the secrets
    /// that are short or occur literally in any of `texts`, since scrubbing those would
    /// change what the text means. Also returns the labels of the secrets left out.
    pub fn for_own_text(&self, texts: &[String]) -> (Redactor, Vec<String>) {
        self.without(&|v| {
            v.chars().count() < MIN_SECRET_CHARS || texts.iter().any(|t| t.contains(v))
        })
    }

    /// `text` with every occurrence of every secret, in any encoding, replaced by `***`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.forms.is_empty() || text.is_empty() {
            return Cow::Borrowed(text);
        }
        let t = text.as_bytes();
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for form in &self.forms {
            let mut failed = HashSet::new();
            let f = &form.bytes;
            for start in 0..t.len() {
                let c = t[start];
                if c != f[0] && !matches!(c, b'\\' | b'%' | b'+' | b'&') {
                    continue;
                }
                if let Some(end) = match_at(t, start, f, 0, &mut failed) {
                    ranges.push((start, end));
                }
            }
        }
        if ranges.is_empty() {
            return Cow::Borrowed(text);
        }
        ranges.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut i = 0;
        while i < ranges.len() {
            let (mut s, mut e) = ranges[i];
            i += 1;
            while i < ranges.len() && ranges[i].0 <= e {
                e = e.max(ranges[i].1);
                i += 1;
            }
            s = s.max(at);
            while !text.is_char_boundary(s) {
                s -= 1;
            }
            while !text.is_char_boundary(e) {
                e += 1;
            }
            out.push_str(&text[at..s]);
            out.push_str(MASK);
            at = e;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Redacts every string and object key of a JSON value in place (never its serialized
    /// text, so the value stays valid JSON with its shape and types).
    pub fn redact_value(&self, v: &mut Value) {
        if self.forms.is_empty() {
            return;
        }
        match v {
            Value::String(s) => {
                if let Cow::Owned(n) = self.redact(s) {
                    *s = n;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|x| self.redact_value(x)),
            Value::Object(map) => {
                for (k, mut x) in std::mem::take(map) {
                    self.redact_value(&mut x);
                    map.insert(self.redact(&k).into_owned(), x);
                }
            }
            _ => {}
        }
    }
}

/// Every string and object key of a JSON value.
pub fn strings_of(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|x| strings_of(x, out)),
        Value::Object(map) => {
            for (k, x) in map {
                out.push(k.clone());
                strings_of(x, out);
            }
        }
        _ => {}
    }
}

/// Whether `form[fj..]` matches `text` from `ti`; returns where the match ends. Failed
/// states are remembered, so ambiguous encodings cannot make this exponential.
fn match_at(
    t: &[u8],
    ti: usize,
    f: &[u8],
    fj: usize,
    failed: &mut HashSet<(usize, usize)>,
) -> Option<usize> {
    if fj == f.len() {
        return Some(ti);
    }
    if ti >= t.len() {
        // The text was cut inside the secret (a server or a cap truncated it): what is there
        // is still part of a secret.
        return (fj >= PARTIAL_MIN && f.len() >= MIN_SECRET_CHARS).then_some(ti);
    }
    if failed.contains(&(ti, fj)) {
        return None;
    }
    let mut units = [([0u8; 4], 0usize, 0usize); 4];
    let n = decode_units(t, ti, &mut units);
    for &(bytes, len, used) in &units[..n] {
        let b = &bytes[..len];
        if f[fj..].starts_with(b) {
            if let Some(end) = match_at(t, ti + used, f, fj + len, failed) {
                return Some(end);
            }
        }
    }
    failed.insert((ti, fj));
    None
}

/// The ways the text at `i` may decode: (bytes, byte count, text bytes consumed).
fn decode_units(t: &[u8], i: usize, out: &mut [([u8; 4], usize, usize); 4]) -> usize {
    let mut n = 0;
    let mut push = |bytes: &[u8], used: usize| {
        if n < out.len() {
            let mut b = [0u8; 4];
            b[..bytes.len()].copy_from_slice(bytes);
            out[n] = (b, bytes.len(), used);
            n += 1;
        }
    };
    let c = t[i];
    push(&[c], 1);
    match c {
        b'+' => push(b" ", 1),
        b'%' => {
            // `%XX`, or doubly encoded `%25XX` (any depth).
            let mut j = i + 1;
            while j < i + 1 + 2 * MAX_NESTING
                && t.get(j..j + 2) == Some(b"25")
                && t.get(j + 2..j + 4).is_some_and(is_hex2)
            {
                j += 2;
            }
            if let Some(h) = t.get(i + 1..i + 3).filter(|h| is_hex2(h)) {
                push(&[hex_val(h) as u8], 3);
            }
            if j > i + 1 {
                if let Some(h) = t.get(j..j + 2).filter(|h| is_hex2(h)) {
                    push(&[hex_val(h) as u8], j + 2 - i);
                }
            }
        }
        b'\\' => {
            // One or more backslashes (JSON inside JSON doubles them), then the escape.
            let mut j = i;
            while j < i + (1 << MAX_NESTING) && t.get(j) == Some(&b'\\') {
                j += 1;
            }
            if j - i >= 2 {
                push(b"\\", 2);
            }
            if t.get(j) == Some(&b'x') {
                // `\xHH` (Python byte reprs): one raw byte.
                if let Some(h) = t.get(j + 1..j + 3).filter(|h| is_hex2(h)) {
                    push(&[hex_val(h) as u8], j - i + 3);
                }
            } else if let Some((cp, used)) = backslash_escape(t, j) {
                let mut buf = [0u8; 4];
                push(char_bytes(cp, &mut buf), j - i + used);
            }
        }
        b'&' => {
            if let Some((cp, used)) = html_entity(t, i) {
                let mut buf = [0u8; 4];
                push(char_bytes(cp, &mut buf), used);
            }
        }
        _ => {}
    }
    n
}

fn char_bytes(cp: char, buf: &mut [u8; 4]) -> &[u8] {
    cp.encode_utf8(buf).as_bytes()
}

/// The escape starting at `t[j]` (just after the backslashes): its char and length.
fn backslash_escape(t: &[u8], j: usize) -> Option<(char, usize)> {
    let simple = |c: char| Some((c, 1));
    match *t.get(j)? {
        b'/' => simple('/'),
        b'"' => simple('"'),
        b'\'' => simple('\''),
        b'n' => simple('\n'),
        b'r' => simple('\r'),
        b't' => simple('\t'),
        b'b' => simple('\u{8}'),
        b'f' => simple('\u{c}'),
        b'u' if t.get(j + 1) == Some(&b'{') => {
            let close = t[j + 2..].iter().take(7).position(|b| *b == b'}')?;
            let h = &t[j + 2..j + 2 + close];
            if h.is_empty() || !h.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            Some((char::from_u32(hex_val(h))?, close + 3))
        }
        b'u' => {
            let h = t
                .get(j + 1..j + 5)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            let hi = hex_val(h);
            if (0xD800..0xDC00).contains(&hi) {
                // A surrogate pair: `\uD83D\uDE00` (the low half with its own backslashes).
                let mut k = j + 5;
                while k < j + 5 + (1 << MAX_NESTING) && t.get(k) == Some(&b'\\') {
                    k += 1;
                }
                if k == j + 5 || t.get(k) != Some(&b'u') {
                    return None;
                }
                let l = t
                    .get(k + 1..k + 5)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
                let lo = hex_val(l);
                if !(0xDC00..0xE000).contains(&lo) {
                    return None;
                }
                let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return Some((char::from_u32(cp)?, k + 5 - j));
            }
            Some((char::from_u32(hi)?, 5))
        }
        _ => None,
    }
}

/// An HTML entity at `t[i]` (`&amp;`, `&#47;`, `&#x2F;`, …): its char and length.
fn html_entity(t: &[u8], i: usize) -> Option<(char, usize)> {
    let end = t[i..].iter().take(12).position(|b| *b == b';')?;
    let body = &t[i + 1..i + end];
    let cp = match body {
        b"amp" => '&',
        b"lt" => '<',
        b"gt" => '>',
        b"quot" => '"',
        b"apos" => '\'',
        b"sol" => '/',
        b"equals" => '=',
        b"plus" => '+',
        _ => {
            let num = body.strip_prefix(b"#")?;
            let v = match num.first()? {
                b'x' | b'X' if num.len() > 1 && num[1..].iter().all(u8::is_ascii_hexdigit) => {
                    hex_val(&num[1..])
                }
                _ if num.iter().all(u8::is_ascii_digit) => {
                    std::str::from_utf8(num).ok()?.parse().ok()?
                }
                _ => return None,
            };
            char::from_u32(v)?
        }
    };
    Some((cp, end + 1))
}

fn is_hex2(h: &[u8]) -> bool {
    h.len() == 2 && h.iter().all(u8::is_ascii_hexdigit)
}

fn hex_val(h: &[u8]) -> u32 {
    h.iter().fold(0u32, |acc, b| {
        acc.saturating_mul(16)
            .saturating_add((*b as char).to_digit(16).unwrap_or(0))
    })
}

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 of `bytes` (a dozen lines here rather than a dependency for it).
pub(crate) fn base64(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for k in 0..4 {
            if k < chars {
                out.push(alphabet[((n >> (18 - 6 * k)) & 63) as usize]);
            } else if pad {
                out.push(b'=');
            }
        }
    }
    out
}

/// The base64 characters of `bytes` preceded by `align` unknown bytes that depend on
/// `bytes` alone: whatever surrounds the secret in the encoded text, these appear.
fn base64_core(bytes: &[u8], align: usize, alphabet: &[u8; 64]) -> Vec<u8> {
    let mut stream = vec![0u8; align];
    stream.extend_from_slice(bytes);
    let enc = base64(&stream, alphabet, false);
    let first = (8 * align).div_ceil(6);
    let last = (8 * (align + bytes.len())) / 6;
    enc.get(first..last).map(<[u8]>::to_vec).unwrap_or_default()
}

/// Decodes standard or URL-safe base64 (padding optional); `None` if it is not base64.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let t = text.trim().trim_end_matches('=');
    let mut bits: u32 = 0;
    let mut nbits = 0;
    let mut out = Vec::new();
    for c in t.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(v);
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
