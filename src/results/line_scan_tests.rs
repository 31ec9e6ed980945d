//! The scanner against serde_json, the reference: on lines as ladder writes them (it must
//! answer, and answer the same), and on lines mutated at random (whatever it answers,
//! serde_json must answer the same; everything else it leaves to serde_json).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::record::TokenSource;

/// A line as the writer makes it: times in whole nanoseconds as milliseconds, optional
/// keys present or not, strings without escapes.
fn written(rng: &mut ChaCha8Rng) -> RequestLine {
    let ms = |rng: &mut ChaCha8Rng| rng.gen_range(0u64..3_600_000_000_000) as f64 / 1e6;
    let opt_ms = |rng: &mut ChaCha8Rng| rng.gen_bool(0.8).then(|| ms(rng));
    let opt_u32 = |rng: &mut ChaCha8Rng| rng.gen_bool(0.5).then(|| rng.gen::<u32>());
    let ok = rng.gen_bool(0.9);
    let n_gaps = rng.gen_range(0..40);
    RequestLine {
        index: rng.gen(),
        repeat: if rng.gen_bool(0.3) { rng.gen() } else { 0 },
        warmup: rng.gen_bool(0.1),
        scheduled_ms: ms(rng),
        sent_ms: ms(rng),
        first_token_ms: opt_ms(rng),
        end_ms: ms(rng),
        ttft_ms: opt_ms(rng),
        tpot_ms: opt_ms(rng),
        e2e_ms: ms(rng),
        input_tokens: rng.gen(),
        output_tokens: rng.gen(),
        token_source: [
            TokenSource::Usage,
            TokenSource::Retokenized,
            TokenSource::ChunkCount,
        ][rng.gen_range(0..3)],
        itl_ms: (0..n_gaps)
            .map(|_| rng.gen_range(0u64..10_000_000) as f64 / 1e3)
            .collect(),
        ok,
        error_class: (!ok).then_some(ErrorClass::Timeout),
        status: (!ok && rng.gen_bool(0.5)).then(|| rng.gen_range(100..600)),
        error_detail: (!ok).then(|| "no first token within the ttft_timeout of 5s".into()),
        server_prompt_tokens: opt_u32(rng),
        server_completion_tokens: opt_u32(rng),
        requested_output_tokens: opt_u32(rng),
        usage_rejected: rng
            .gen_bool(0.1)
            .then(|| "more tokens than asked for".into()),
        resent: rng.gen_bool(0.1),
        reasoning_tokens: opt_u32(rng),
        ttfc_ms: opt_ms(rng),
        prefix_group: opt_u32(rng),
        prefix_first: rng.gen_bool(0.1),
        session: opt_u32(rng),
        turn: opt_u32(rng),
        session_turns: opt_u32(rng),
        model: rng
            .gen_bool(0.3)
            .then(|| ["base", "sql-lora", "org/Model-7B:v2"][rng.gen_range(0..3)].into()),
        images: opt_u32(rng),
        image_bytes: opt_u32(rng).map(|n| u64::from(n) << rng.gen_range(0..30)),
    }
}

/// serde_json's reading, re-written: two readings agree when these strings do (which tells
/// -0.0 from 0.0, where `==` would not).
fn reference(line: &str) -> Option<String> {
    serde_json::from_str::<RequestLine>(line)
        .ok()
        .map(|l| serde_json::to_string(&l).unwrap())
}

#[test]
fn lines_as_written_are_read_fast_and_exactly_as_serde_reads_them() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut gaps = Vec::new();
    for _ in 0..5_000 {
        let l = written(&mut rng);
        let text = serde_json::to_string(&l).unwrap() + "\n";
        let fast = scan(text.as_bytes(), &mut gaps).unwrap_or_else(|| panic!("gave up on {text}"));
        assert_eq!(
            Some(serde_json::to_string(&fast).unwrap()),
            reference(&text),
            "{text}"
        );
        assert_eq!(fast, l);
    }
}

#[test]
fn mutated_lines_are_read_as_serde_reads_them_or_left_to_it() {
    // Every mutation a byte at a time: replaced by a JSON-significant byte, deleted, or
    // inserted. Whatever the scanner reads, serde_json reads the same; a line serde_json
    // refuses, the scanner never reads.
    const BYTES: &[u8] = b"{}[]\":,.-+eE0123456789 \t\\nultrfase_x\x01";
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut gaps = Vec::new();
    let (mut read, mut refused_by_both) = (0, 0);
    for _ in 0..20_000 {
        let mut b = serde_json::to_string(&written(&mut rng))
            .unwrap()
            .into_bytes();
        for _ in 0..rng.gen_range(1..=3) {
            let at = rng.gen_range(0..b.len());
            let with = BYTES[rng.gen_range(0..BYTES.len())];
            match rng.gen_range(0..3) {
                0 => b[at] = with,
                1 => {
                    b.remove(at);
                }
                _ => b.insert(at, with),
            }
        }
        let Ok(text) = String::from_utf8(b) else {
            continue;
        };
        let serde = reference(&text);
        match scan(text.as_bytes(), &mut gaps) {
            Some(fast) => {
                read += 1;
                assert_eq!(Some(serde_json::to_string(&fast).unwrap()), serde, "{text}");
            }
            None if serde.is_none() => refused_by_both += 1,
            None => {}
        }
    }
    // Both sides of the property were exercised.
    assert!(read > 1_000, "{read}");
    assert!(refused_by_both > 1_000, "{refused_by_both}");
}

#[test]
fn what_it_is_unsure_of_is_left_to_serde() {
    let mut l = written(&mut ChaCha8Rng::seed_from_u64(3));
    (l.ok, l.error_class, l.status, l.error_detail) = (true, None, None, None);
    l.e2e_ms = 150.0;
    let base = serde_json::to_string(&l).unwrap();
    l.e2e_ms = 25.629994999999997; // an older file's `as_secs_f64() * 1e3`: 17 digits
    let old = serde_json::to_string(&l).unwrap();
    let sub = |from: &str, to: &str| {
        assert!(base.contains(from), "{from}");
        base.replacen(from, to, 1)
    };
    // (line, serde_json reads it, the scanner reads it)
    let cases = [
        (base.clone(), true, true),
        // An exponent within the exact path is read.
        (sub("\"e2e_ms\":150.0", "\"e2e_ms\":1.5e2"), true, true),
        // Valid JSON left to serde_json: an escape, whitespace, an unknown key, digits
        // beyond the exact path.
        (
            sub(
                "\"error_detail\":null",
                "\"error_detail\":\"said \\\"no\\\"\"",
            ),
            true,
            false,
        ),
        (sub(",", " , "), true, false),
        (sub("{", "{\"extra\":[1,{\"a\":2}],"), true, false),
        (old, true, false),
        // Lines serde_json refuses: a duplicate key, a missing required key, null where a
        // value is required, a trailing comma, text after the object.
        (sub("{", "{\"ok\":true,"), false, false),
        (sub("\"warmup\":", "\"warmed\":"), false, false),
        (sub("\"ok\":true", "\"ok\":null"), false, false),
        (base.replacen('}', ",}", 1), false, false),
        (base.clone() + "x", false, false),
    ];
    let mut gaps = Vec::new();
    for (text, serde_reads, scanner_reads) in cases {
        let serde = reference(&text);
        assert_eq!(serde.is_some(), serde_reads, "{text}");
        let fast = scan(text.as_bytes(), &mut gaps);
        assert_eq!(fast.is_some(), scanner_reads, "{text}");
        if let Some(fast) = fast {
            assert_eq!(Some(serde_json::to_string(&fast).unwrap()), serde);
        }
    }
    // Lines are read as bytes: a string's non-ASCII text is read when it is UTF-8, and a
    // byte that is not leaves the line to serde_json, which refuses it.
    let utf8 = sub(
        "\"error_detail\":null",
        "\"error_detail\":\"délai dépassé\"",
    );
    let fast = scan(utf8.as_bytes(), &mut gaps).expect("UTF-8 text is read");
    assert_eq!(fast.error_detail.as_deref(), Some("délai dépassé"));
    let mut bad = sub("\"error_detail\":null", "\"error_detail\":\"x\"").into_bytes();
    let at = b"\"error_detail\":\"x";
    let x = bad.windows(at.len()).position(|w| w == at).unwrap() + at.len() - 1;
    bad[x] = 0xff;
    assert!(scan(&bad, &mut gaps).is_none());
    assert!(serde_json::from_slice::<RequestLine>(&bad).is_err());
}

#[test]
fn numbers_on_the_fast_path_are_correctly_rounded() {
    // digits × 10^e within the exact bounds, against the standard library's correctly
    // rounded parse, bit for bit; beyond them the cursor gives up.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for _ in 0..100_000 {
        let sig = rng.gen_range(0..=EXACT_DIGITS);
        let e = rng.gen_range(-22i32..=22);
        let neg = rng.gen_bool(0.2);
        let text = match rng.gen_range(0..3) {
            0 => format!("{}{sig}e{e}", if neg { "-" } else { "" }),
            // The same number with a decimal point: the digits shifted.
            _ if e < 0 && sig.to_string().len() > e.unsigned_abs() as usize => {
                let s = sig.to_string();
                let (int, frac) = s.split_at(s.len() - e.unsigned_abs() as usize);
                format!("{}{int}.{frac}", if neg { "-" } else { "" })
            }
            _ => format!("{}{sig}E+{e}", if neg { "-" } else { "" }).replace("+-", "-"),
        };
        let want: f64 = text.parse().unwrap();
        let mut c = Cursor::new(text.as_bytes());
        let got = c.f64().unwrap_or_else(|| panic!("{text}"));
        assert_eq!(got.to_bits(), want.to_bits(), "{text}");
        assert_eq!(c.i, text.len(), "{text}");
    }
    // JSON's grammar, which `str::parse` is laxer than.
    for (text, want) in [
        ("0", Some(0.0)),
        ("-0", Some(-0.0)),
        ("0.5", Some(0.5)),
        ("0e0", Some(0.0)),
        ("10.25E-1", Some(1.025)),
        ("05", None),
        ("00.5", None),
        ("0.", None),
        (".5", None),
        ("-", None),
        ("+1", None),
        ("1.e5", None),
        ("1e", None),
        ("1e+", None),
        ("1.5.2", None),
    ] {
        let mut c = Cursor::new(text.as_bytes());
        let got = c.f64().filter(|_| c.i == text.len());
        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{text}");
    }
    for beyond in ["9007199254740993", "1e23", "1e-23", "0.12345678901234567"] {
        let mut c = Cursor::new(beyond.as_bytes());
        assert_eq!(c.f64(), None, "{beyond}");
    }
}
