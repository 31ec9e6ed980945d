use super::*;
use serde_json::json;

const KEY: &str = "sk-test/Fake+Key=0042";

fn r(secrets: &[&str]) -> Redactor {
    Redactor::new(
        secrets
            .iter()
            .map(|s| ("a secret".to_string(), s.to_string())),
    )
}

fn scrubbed(red: &Redactor, text: &str) -> String {
    red.redact(text).into_owned()
}

/// `\uXXXX` for every UTF-16 unit, in the given case.
fn json_u(s: &str, upper: bool) -> String {
    let mut out = String::new();
    for unit in s.encode_utf16() {
        if upper {
            out.push_str(&format!("\\u{unit:04X}"));
        } else {
            out.push_str(&format!("\\u{unit:04x}"));
        }
    }
    out
}

fn pct_all(s: &str, upper: bool) -> String {
    s.bytes()
        .map(|b| {
            if upper {
                format!("%{b:02X}")
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

fn b64(s: &str, alphabet: &[u8; 64], pad: bool) -> String {
    String::from_utf8(base64(s.as_bytes(), alphabet, pad)).unwrap()
}

#[test]
fn literal_occurrences_at_the_ends_and_overlapping() {
    let red = r(&[KEY]);
    assert_eq!(scrubbed(&red, KEY), "***");
    assert_eq!(
        scrubbed(&red, &format!("{KEY} middle {KEY}")),
        "*** middle ***"
    );
    assert_eq!(
        scrubbed(&red, &format!("Bearer {KEY}")),
        "Bearer ***",
        "the scheme word is kept"
    );
    // Overlapping occurrences collapse into one mask, leaving nothing of either.
    let red = r(&["abab-abab"]);
    assert_eq!(scrubbed(&red, "x abab-abab-abab y"), "x *** y");
    let red = r(&["aaaaaaaaa"]);
    assert_eq!(scrubbed(&red, "aaaaaaaaaaaaa!"), "***!");
    // Untouched text is borrowed, not copied.
    assert!(matches!(red.redact("nothing here"), Cow::Borrowed(_)));
}

#[test]
fn a_secret_cut_short_at_the_end_of_the_text_is_still_masked() {
    let red = r(&[KEY]);
    assert_eq!(scrubbed(&red, &format!("echo: {}", &KEY[..9])), "echo: ***");
    assert_eq!(scrubbed(&red, "echo: sk-te\\u0073t/F"), "echo: ***");
    // A few characters are not enough to say it is the key.
    assert_eq!(scrubbed(&red, "echo: sk-t"), "echo: sk-t");
    // Only at the end: inside the text a prefix is just text.
    assert_eq!(scrubbed(&red, "sk-test/ more"), "sk-test/ more");
}

#[test]
fn json_escapes_in_any_case_and_mixed_with_literals() {
    let red = r(&[KEY]);
    for text in [
        KEY.replace('/', "\\/"),
        json_u(KEY, true),
        json_u(KEY, false),
        // mixed: some characters escaped, in both cases, the rest literal
        "sk\\u002dtest\\/F\\u0061ke+Key\\u003D0042".to_string(),
        // JSON inside a JSON string: the backslashes doubled
        "sk-test\\\\/Fake+Key\\\\u003d0042".to_string(),
        "sk-test\\u002FFake\\u002bKey=0042".to_string(),
        // Python / C style, Rust / JS style
        "sk-test\\x2fFake+Key\\u{3d}0042".to_string(),
    ] {
        let body = format!("{{\"error\":\"bad key Bearer {text}\"}}");
        let out = scrubbed(&red, &body);
        assert_eq!(out, "{\"error\":\"bad key Bearer ***\"}", "{text}");
    }
}

#[test]
fn url_encoding_upper_lower_plus_and_double() {
    let red = r(&["my secret/key-123"]);
    for text in [
        "my+secret%2Fkey-123",
        "my%20secret%2fkey-123",
        "my+secret%252Fkey-123",
        &pct_all("my secret/key-123", true),
        &pct_all("my secret/key-123", false),
    ] {
        assert_eq!(
            scrubbed(&red, &format!("?k={text}&x=1")),
            "?k=***&x=1",
            "{text}"
        );
    }
}

#[test]
fn html_entities() {
    let red = r(&[KEY]);
    let text = "sk-test&#47;Fake&#x2B;Key&#x3d;0042";
    assert_eq!(scrubbed(&red, &format!("<p>{text}</p>")), "<p>***</p>");
}

#[test]
fn base64_of_the_credential_and_of_the_bare_key_anywhere() {
    let red = r(&[KEY]).with_sent_credential("the key".into(), format!("Bearer {KEY}"));
    assert_eq!(scrubbed(&red, &format!("Bearer {KEY}")), "Bearer ***");
    for alphabet in [STD, URL_SAFE] {
        for pad in [true, false] {
            for plain in [
                format!("Bearer {KEY}"),
                KEY.to_string(),
                format!("x{KEY}"),
                format!("xy{KEY}yz"),
                format!("{{\"auth\":\"Bearer {KEY}\",\"n\":1}}"),
            ] {
                let enc = b64(&plain, alphabet, pad);
                let out = scrubbed(&red, &format!("echo: {enc} end"));
                // What is left of the encoding decodes to nothing that holds the key.
                assert!(!out.contains(&enc), "{plain} {enc} -> {out}");
                let left: String = out
                    .trim_start_matches("echo: ")
                    .trim_end_matches(" end")
                    .split("***")
                    .collect();
                // At most the encoding of the text around the key, plus a boundary character
                // (and padding) on each side.
                let around = (plain.len() - KEY.len()).div_ceil(3) * 4;
                assert!(left.len() <= around + 6, "{plain}: too much kept: {out}");
            }
        }
    }
    // base64 escaped in JSON (`\/`) or URL-encoded is still found.
    let enc = b64(&format!("Bearer {KEY}"), STD, true);
    let red = r(&[KEY]);
    for text in [
        enc.replace('/', "\\/"),
        enc.replace('/', "%2F").replace('+', "%2B"),
    ] {
        assert!(!scrubbed(&red, &text).contains(&text[4..16]), "{text}");
    }
}

#[test]
fn basic_credentials_encoded_whole() {
    let red = r(&["alice:hunter2-pass", "hunter2-pass"]);
    let enc = b64("alice:hunter2-pass", STD, true);
    assert_eq!(scrubbed(&red, &format!("Basic {enc}")), "Basic ***");
}

#[test]
fn utf8_keys_literal_escaped_and_percent_encoded() {
    let key = "clé-секрет-🔑-x";
    let red = r(&[key]);
    for text in [
        key.to_string(),
        json_u(key, true),
        json_u(key, false),
        pct_all(key, true),
        "cl\\u00e9-секрет-\\ud83d\\udd11-x".to_string(),
    ] {
        assert_eq!(scrubbed(&red, &format!("«{text}»")), "«***»", "{text}");
    }
    // A mask never splits a character.
    let red = r(&["é-secret-é"]);
    assert_eq!(scrubbed(&red, "aé-secret-éb"), "a***b");
}

#[test]
fn values_are_redacted_structurally_and_stay_json() {
    let red = r(&[KEY]);
    let mut v = json!({
        "detail": format!("Bearer {KEY}"),
        KEY: [1, 10, format!("x{}", KEY.replace('/', "\\/"))],
        "n": 42,
        "ok": true,
    });
    red.redact_value(&mut v);
    assert_eq!(
        v,
        json!({"detail": "Bearer ***", "***": [1, 10, "x***"], "n": 42, "ok": true})
    );
}

#[test]
fn short_secrets_are_scrubbed_literally_but_not_searched_in_base64() {
    let red = r(&["10"]);
    assert_eq!(red.short_labels(), vec!["a secret".to_string()]);
    assert_eq!(scrubbed(&red, "code 10: bad"), "code ***: bad");
    // The two characters' base64 core would match by chance; it is not a form.
    assert_eq!(scrubbed(&red, "MTAx MTBh"), "MTAx MTBh");
    let long = r(&["sk-long-enough"]);
    assert!(long.short_labels().is_empty());
}

#[test]
fn a_short_key_sent_as_a_credential_is_found_in_base64_of_the_credential() {
    let red = r(&["10"]).with_sent_credential("k".into(), "Bearer 10".into());
    let enc = b64("Bearer 10", STD, true);
    assert_eq!(scrubbed(&red, &format!("got {enc}")), "got ***");
    assert_eq!(scrubbed(&red, "Bearer 10"), "Bearer ***");
}

#[test]
fn own_text_keeps_what_the_user_wrote() {
    let red = Redactor::new([
        ("the API key".to_string(), "10".to_string()),
        (
            "header `X-Token`".to_string(),
            "llama-3-8b-model".to_string(),
        ),
        (
            "header `X-Api-Key`".to_string(),
            "sk-really-secret-1".to_string(),
        ),
    ]);
    let texts = vec!["llama-3-8b-model".to_string(), "10s".to_string()];
    let (own, dropped) = red.for_own_text(&texts);
    assert_eq!(dropped, vec!["the API key", "header `X-Token`"]);
    assert_eq!(
        scrubbed(&own, "10s llama-3-8b-model"),
        "10s llama-3-8b-model"
    );
    assert_eq!(scrubbed(&own, "sk-really-secret-1"), "***");
}

#[test]
fn ambiguous_encodings_stay_fast() {
    let red = r(&[
        "%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%",
        "\\\\\\\\\\\\\\\\\\\\\\\\",
    ]);
    let text = "%25".repeat(2000) + &"\\".repeat(3000);
    let t = std::time::Instant::now();
    let out = red.redact(&text);
    assert!(out.contains("***"));
    assert!(
        t.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn base64_round_trip() {
    for s in ["", "a", "ab", "abc", "user:pass", "Bearer sk-1/+"] {
        for alphabet in [STD, URL_SAFE] {
            let enc = b64(s, alphabet, true);
            assert_eq!(base64_decode(&enc).unwrap(), s.as_bytes(), "{s}");
        }
    }
    assert_eq!(b64("ab", STD, true), "YWI=");
    assert_eq!(b64("ab", STD, false), "YWI");
    assert!(base64_decode("not base64!").is_none());
}
