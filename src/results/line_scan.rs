//! The fast reader of one line of `requests_rate_<rate>.jsonl`, for the lines ladder writes.
//!
//! A big run is millions of these lines, and serde_json spent about half of `compare`'s
//! time on them. This scanner reads the shape ladder's writer emits (one compact object, no
//! whitespace, keys without escapes, numbers in plain JSON grammar) in one pass and builds
//! the [`RequestLine`] directly. It gives up (`None`) on anything it is not sure of (a key
//! it does not know, a key seen twice, whitespace inside the object, a string with an
//! escape or a control byte, a number beyond the exact fast path, `null` where a value is
//! required, a missing required key), and the caller then reads the line with serde_json,
//! which decides: its value or its error message. So whatever it answers, serde_json
//! answers the same (`tests` below check it on written lines and on mutated ones), and
//! correctness never rests on the scanner being complete.
//!
//! Numbers: a JSON number whose digits fit 2^53 and whose decimal exponent is within ±22 is
//! `digits × 10^e` or `digits ÷ 10^-e` in one IEEE operation on two exact values, which is
//! the correctly rounded value (Clinger's fast path): what serde_json gives with or without
//! `float_roundtrip`, and what `str::parse` gives. Every number ladder writes (whole
//! nanoseconds as milliseconds, six decimals at most) is on that path; others give up.

use serde::de::value::{Error as ValueError, StrDeserializer};
use serde::de::{Deserialize, IntoDeserializer};

use super::types::RequestLine;
use crate::record::ErrorClass;

/// 10^0 ..= 10^22: every one exact in an f64.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];
/// Digits beyond this are not exact in an f64.
const EXACT_DIGITS: u64 = 1 << 53;

/// One line (a trailing newline allowed) as a [`RequestLine`], or `None` to let serde_json
/// decide. `gaps` is scratch room for `itl_ms`, reused line after line.
pub(super) fn scan(line: &[u8], gaps: &mut Vec<f64>) -> Option<RequestLine> {
    let mut c = Cursor::new(line);
    let mut l = RequestLine::default();
    let mut seen = 0u64;
    c.eat(b'{')?;
    if c.peek() == Some(b'}') {
        return None; // required keys missing: serde_json names them
    }
    // Keys come in the writer's order: each is looked for first after the last one.
    let mut at = 0;
    loop {
        let key = c.key()?;
        at = (at..KEYS.len()).chain(0..at).find(|&k| KEYS[k] == key)?;
        let bit = 1u64 << at;
        if seen & bit != 0 {
            return None; // a duplicate key is an error serde_json words
        }
        seen |= bit;
        match at {
            0 => l.index = c.u32()?,
            1 => l.repeat = c.u32()?,
            2 => l.warmup = c.boolean()?,
            3 => l.scheduled_ms = c.f64()?,
            4 => l.sent_ms = c.f64()?,
            5 => l.first_token_ms = c.or_null(Cursor::f64)?,
            6 => l.end_ms = c.f64()?,
            7 => l.ttft_ms = c.or_null(Cursor::f64)?,
            8 => l.tpot_ms = c.or_null(Cursor::f64)?,
            9 => l.e2e_ms = c.f64()?,
            10 => l.input_tokens = c.u32()?,
            11 => l.output_tokens = c.u32()?,
            12 => l.token_source = named(c.string()?)?,
            13 => l.itl_ms = c.gaps(gaps)?,
            14 => l.ok = c.boolean()?,
            15 => l.error_class = c.or_null(|c| named::<ErrorClass>(c.string()?))?,
            16 => l.status = c.or_null(|c| u16::try_from(c.uint()?).ok())?,
            17 => l.error_detail = c.or_null(|c| Some(c.string()?.to_string()))?,
            18 => l.server_prompt_tokens = c.or_null(Cursor::u32)?,
            19 => l.server_completion_tokens = c.or_null(Cursor::u32)?,
            20 => l.requested_output_tokens = c.or_null(Cursor::u32)?,
            21 => l.usage_rejected = c.or_null(|c| Some(c.string()?.to_string()))?,
            22 => l.resent = c.boolean()?,
            23 => l.reasoning_tokens = c.or_null(Cursor::u32)?,
            24 => l.ttfc_ms = c.or_null(Cursor::f64)?,
            25 => l.prefix_group = c.or_null(Cursor::u32)?,
            26 => l.prefix_first = c.boolean()?,
            27 => l.session = c.or_null(Cursor::u32)?,
            28 => l.turn = c.or_null(Cursor::u32)?,
            29 => l.session_turns = c.or_null(Cursor::u32)?,
            30 => l.model = c.or_null(|c| Some(c.string()?.to_string()))?,
            31 => l.images = c.or_null(Cursor::u32)?,
            32 => l.image_bytes = c.or_null(|c| c.uint())?,
            _ => return None,
        }
        match c.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    // Only whitespace may follow the object.
    if !c.b[c.i..]
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return None;
    }
    (seen & REQUIRED == REQUIRED).then_some(l)
}

/// The keys of a [`RequestLine`], in the writer's order; a key's bit is its position, and
/// `scan` reads its value by that position.
const KEYS: [&[u8]; 33] = [
    b"index",
    b"repeat",
    b"warmup",
    b"scheduled_ms",
    b"sent_ms",
    b"first_token_ms",
    b"end_ms",
    b"ttft_ms",
    b"tpot_ms",
    b"e2e_ms",
    b"input_tokens",
    b"output_tokens",
    b"token_source",
    b"itl_ms",
    b"ok",
    b"error_class",
    b"status",
    b"error_detail",
    b"server_prompt_tokens",
    b"server_completion_tokens",
    b"requested_output_tokens",
    b"usage_rejected",
    b"resent",
    b"reasoning_tokens",
    b"ttfc_ms",
    b"prefix_group",
    b"prefix_first",
    b"session",
    b"turn",
    b"session_turns",
    b"model",
    b"images",
    b"image_bytes",
];

/// The keys serde_json requires (neither `Option` nor `#[serde(default)]`).
const REQUIRED: u64 = bits(&[
    b"index",
    b"warmup",
    b"scheduled_ms",
    b"sent_ms",
    b"end_ms",
    b"e2e_ms",
    b"input_tokens",
    b"output_tokens",
    b"token_source",
    b"itl_ms",
    b"ok",
]);

const fn bits(names: &[&[u8]]) -> u64 {
    let mut out = 0;
    let mut n = 0;
    while n < names.len() {
        let mut k = 0;
        while k < KEYS.len() {
            if eq(KEYS[k], names[n]) {
                out |= 1 << k;
            }
            k += 1;
        }
        n += 1;
    }
    out
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A unit enum by its serde name (`token_source`, `error_class`).
fn named<'a, T: Deserialize<'a>>(s: &'a str) -> Option<T> {
    let d: StrDeserializer<'a, ValueError> = s.into_deserializer();
    T::deserialize(d).ok()
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8]) -> Cursor<'a> {
        Cursor { b, i: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn word(&mut self, w: &[u8]) -> bool {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            true
        } else {
            false
        }
    }

    /// `"key":`, as bytes (a key is only ever compared with [`KEYS`]).
    fn key(&mut self) -> Option<&'a [u8]> {
        let s = self.raw_string()?;
        self.eat(b':')?;
        Some(s)
    }

    /// A string with no escape and no control byte (serde_json decides the others), in
    /// UTF-8 (a line is read as bytes; serde_json words the error of one that is not).
    fn string(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.raw_string()?).ok()
    }

    /// The bytes of a string with no escape and no control byte.
    fn raw_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let from = self.i;
        let end = self.b[from..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if self.b[from + end] != b'"' {
            return None;
        }
        self.i = from + end + 1;
        Some(&self.b[from..from + end])
    }

    fn boolean(&mut self) -> Option<bool> {
        if self.word(b"true") {
            Some(true)
        } else if self.word(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// `null`, or what `value` reads.
    fn or_null<T>(&mut self, value: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.word(b"null") {
            Some(None)
        } else {
            value(self).map(Some)
        }
    }

    /// Digits `0` or `[1-9][0-9]*`, as a u64 (`None` on overflow).
    fn digits(&mut self) -> Option<u64> {
        let first = self.next()?;
        if !first.is_ascii_digit() {
            return None;
        }
        let mut v = u64::from(first - b'0');
        if first == b'0' {
            return match self.peek() {
                Some(b'0'..=b'9') => None,
                _ => Some(0),
            };
        }
        while let Some(d @ b'0'..=b'9') = self.peek() {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        Some(v)
    }

    /// A non-negative JSON integer with nothing fractional after it.
    fn uint(&mut self) -> Option<u64> {
        let v = self.digits()?;
        match self.peek() {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(v),
        }
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.uint()?).ok()
    }

    /// The run of ASCII digits from here.
    fn run(&mut self) -> &'a [u8] {
        let from = self.i;
        let n = self.b[from..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(self.b.len() - from);
        self.i += n;
        &self.b[from..from + n]
    }

    /// A JSON number on the exact fast path (module docs).
    fn f64(&mut self) -> Option<f64> {
        let negative = self.word(b"-");
        // `0` or `[1-9][0-9]*`, then an optional `.` and at least one digit; one pass.
        let (mut sig, mut digits, mut exp) = (0u64, 0usize, 0i64);
        let first = self.peek()?;
        if !first.is_ascii_digit() {
            return None;
        }
        let mut fraction = false;
        while let Some(&b) = self.b.get(self.i) {
            match b {
                b'0'..=b'9' => {
                    // 19 digits always fit a u64; more are beyond the exact path anyway.
                    digits += 1;
                    if digits > 19 {
                        return None;
                    }
                    sig = sig * 10 + u64::from(b - b'0');
                    exp -= i64::from(fraction);
                }
                b'.' if !fraction => {
                    if first == b'0' && digits != 1 || !self.digit_at(self.i + 1) {
                        return None;
                    }
                    fraction = true;
                }
                _ => break,
            }
            self.i += 1;
        }
        // A leading zero stands alone.
        if first == b'0' && !fraction && digits != 1 {
            return None;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            let minus = match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    true
                }
                Some(b'+') => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let e = self.run();
            if e.is_empty() || e.len() > 4 {
                return None;
            }
            let e = e.iter().fold(0i64, |v, d| v * 10 + i64::from(d - b'0'));
            exp += if minus { -e } else { e };
        }
        if sig > EXACT_DIGITS {
            return None;
        }
        let pow = *POW10.get(usize::try_from(exp.unsigned_abs()).ok()?)?;
        let f = if exp >= 0 {
            sig as f64 * pow
        } else {
            sig as f64 / pow
        };
        Some(if negative { -f } else { f })
    }

    fn digit_at(&self, i: usize) -> bool {
        self.b.get(i).is_some_and(u8::is_ascii_digit)
    }

    /// `itl_ms`: a list of numbers, read into `scratch` and copied out at its exact length.
    fn gaps(&mut self, scratch: &mut Vec<f64>) -> Option<Vec<f64>> {
        self.eat(b'[')?;
        scratch.clear();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Some(Vec::new());
        }
        loop {
            scratch.push(self.f64()?);
            match self.next()? {
                b',' => continue,
                b']' => break,
                _ => return None,
            }
        }
        let out = scratch.as_slice().to_vec();
        // One freak line (a million gaps) must not pin its room for the rest.
        scratch.shrink_to(1 << 16);
        Some(out)
    }
}

#[cfg(test)]
#[path = "line_scan_tests.rs"]
mod tests;
